//! The offline model: a deterministic local explorer that plays a real model's part with the
//! same tools. Each turn is a pure function of the request: it turns the question into search
//! terms, counts them (grep, count mode), greps the most promising files, ranks hit lines
//! (definitions above mentions, several terms above one, source above tests and docs), reads
//! around the best ones, and hands off citing exactly the lines it read.

mod asking;
mod conclude;
mod follow;
mod rank;
mod research;
mod survey;
mod terms;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::handoff::{Handoff, OpenItem};
use crate::model::{Model, ModelError, ModelRequest, ModelResponse, Usage};
use crate::source::SourceId;
use crate::tokens::estimate_tokens;
use crate::transcript::Message;
use crate::transcript::ToolCall;
use follow::CallSite;
use rank::{Candidate, Hit};
use survey::{Survey, EVERY_LINE};

/// Most terms searched for one question.
pub(super) const MAX_TERMS: usize = 16;
/// Most files the content grep looks at.
pub(super) const TOP_FILES: usize = 6;
/// Most matching lines the content grep asks for.
pub(super) const CONTENT_MATCHES: usize = 2000;
/// Most places read and cited by one subagent.
const MOST_PLACES: usize = 4;
/// Two places in one file are at least this many lines apart.
const PICK_GAP: u32 = 12;
/// A place must cover this share of the question's term weight to be a conclusion.
const MIN_COVERAGE: f64 = 0.30;
/// ... and score at least this share of the best place.
const RELATIVE_SCORE: f64 = 0.45;

/// The deterministic local explorer. Needs no key and no network.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use baton::Model;
/// let model = std::sync::Arc::new(baton::OfflineModel::new());
/// assert_eq!(model.name(), "offline");
/// let dir = baton::testing::fixture_tree();
/// let report = baton::Coordinator::builder().model(model).build()
///     .run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
/// assert!(report.handoff.settled_conclusions[0].claim.contains("next_delay"));
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct OfflineModel {
    latency: Duration,
    /// The context window it reports (none: 200,000 tokens).
    window: Option<usize>,
}

impl OfflineModel {
    /// An offline model answering at once.
    pub fn new() -> OfflineModel {
        OfflineModel::default()
    }

    /// An offline model that waits `latency` before every answer (demos, tests, benchmarks).
    pub fn with_latency(latency: Duration) -> OfflineModel {
        OfflineModel {
            latency,
            window: None,
        }
    }

    /// The same model reporting `window` tokens as its context window (`--context-window`):
    /// a subagent's window is compacted against it.
    pub fn with_window(self, window: Option<usize>) -> OfflineModel {
        OfflineModel { window, ..self }
    }
}

#[async_trait]
impl Model for OfflineModel {
    fn name(&self) -> String {
        "offline".to_string()
    }

    fn context_window(&self) -> usize {
        self.window.unwrap_or(200_000)
    }

    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        let (text, tool_calls) = next_turn(&request);
        let output_tokens = estimate_tokens(&text)
            + tool_calls
                .iter()
                .map(|c| estimate_tokens(&c.arguments.to_string()))
                .sum::<u64>();
        let usage = Usage {
            input_tokens: request.estimated_tokens(),
            output_tokens,
            ..Usage::default()
        };
        Ok(ModelResponse::new(text, tool_calls, usage))
    }
}

/// The task as the lead wrote it in the first user message.
#[derive(Clone)]
pub(super) struct Task {
    pub(super) question: String,
    /// The whole question, when this subagent answers a subtask of it.
    pub(super) whole: Option<String>,
    /// The sub-questions other subagents cover, as its brief lists them.
    pub(super) others: Vec<String>,
    pub(super) scope: Vec<String>,
    /// The lead asked for an orientation first (a resumed run).
    pub(super) orienting: bool,
    /// A verifier's task: (sources, claim) to reread and confirm.
    pub(super) verify: Vec<(Vec<SourceId>, String)>,
}

/// The doubted claims of a verifier's context: the `## doubts` entries of its data section,
/// read line by line between the data markers (data can neither close the section nor open a
/// field: its inner lines are indented and its marker text escaped), each entry one JSON
/// conclusion.
fn doubted_claims(system: &str) -> Vec<(Vec<SourceId>, String)> {
    use crate::contracts::{DATA_BEGIN, DATA_END};
    let mut in_doubts = false;
    let mut out = Vec::new();
    for line in system
        .lines()
        .skip_while(|l| *l != DATA_BEGIN)
        .skip(1)
        .take_while(|l| *l != DATA_END)
    {
        if line.starts_with("## ") {
            in_doubts = line == "## doubts";
        } else if let Some(entry) = line.strip_prefix("- ").filter(|_| in_doubts) {
            if let Ok(c) = serde_json::from_str::<crate::handoff::Conclusion>(entry) {
                if !c.sources.is_empty() {
                    out.push((c.sources, c.claim));
                }
            }
        }
    }
    out
}

/// The read that rereads one cited source: a file's lines with `read_file`, a corpus passage
/// with `read`; none for another kind of source.
fn reread_call(source: &SourceId) -> Option<(&'static str, serde_json::Value)> {
    if let Some((path, a, b)) = source.file_lines() {
        return Some((
            "read_file",
            json!({"path": path, "start_line": a, "end_line": b}),
        ));
    }
    match source {
        SourceId::Doc { .. } => Some(("read", json!({"id": source.to_string()}))),
        _ => None,
    }
}

/// The text a reread showed, if it succeeded: a file's lines, or a passage's text (its
/// `[doc:…]` header lines dropped).
fn reread_text(done: &[Exchange<'_>], tool: &str, args: &serde_json::Value) -> Option<String> {
    let exchange = issued(done, tool, args).filter(|e| !e.is_error)?;
    if tool == "read" {
        let text: Vec<&str> = exchange
            .content
            .lines()
            .filter(|l| !l.starts_with("[doc:") && !l.starts_with("(cut at "))
            .collect();
        return Some(text.join("\n"));
    }
    let (_, lines) = rank::parse_read(exchange.content)?;
    Some(
        lines
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The verifier's turns: reread every cited range (a file's lines, a corpus passage), then
/// hand back the claims whose reread text holds what they state (quotes and symbols), citing
/// the same sources; the others are open items saying what the text lacks.
fn verify_turn(
    task: &Task,
    done: &[Exchange<'_>],
    may_read: &dyn Fn(&str) -> bool,
) -> (String, Vec<ToolCall>) {
    let reads: Vec<ToolCall> = task
        .verify
        .iter()
        .flat_map(|(sources, _)| sources.iter())
        .filter_map(reread_call)
        .enumerate()
        .map(|(i, (tool, args))| call(500 + i, tool, args))
        .collect();
    let pending: Vec<ToolCall> = not_issued(done, &reads)
        .into_iter()
        .filter(|c| may_read(&c.name))
        .collect();
    if !pending.is_empty() {
        return ("Rereading the cited lines.".into(), pending);
    }
    let mut handoff = Handoff::default();
    for (sources, claim) in &task.verify {
        let texts: Option<Vec<String>> = sources
            .iter()
            .filter_map(reread_call)
            .map(|(tool, args)| reread_text(done, tool, &args))
            .collect();
        let missing = match texts {
            Some(texts) if !texts.is_empty() => {
                crate::handoff::unsupported(claim, &texts.join("\n"))
            }
            _ => {
                handoff.open_items.push(OpenItem {
                    item: format!("Could not reread the lines of: {claim}"),
                    stuck_on: "a cited range could not be read".into(),
                });
                continue;
            }
        };
        if missing.is_empty() {
            handoff
                .settled_conclusions
                .push(crate::handoff::Conclusion {
                    claim: claim.clone(),
                    sources: sources.clone(),
                    kind: crate::handoff::ConclusionKind::Finding,
                });
        } else {
            handoff.open_items.push(OpenItem {
                item: format!("Not supported by the reread lines: {claim}"),
                stuck_on: format!("the cited lines do not hold {}", missing.join(", ")),
            });
        }
    }
    (handoff.to_markdown(), Vec::new())
}

/// The restatement a resumed subagent gives before acting: goal, standing conditions and the
/// effects cut off by the crash, read back from its own context.
fn orientation_answer(system: &str) -> String {
    use crate::contracts::{CONDITIONS_BEGIN, CONDITIONS_END};
    let goal = system
        .lines()
        .find_map(|l| l.strip_prefix("Goal: "))
        .unwrap_or("")
        .to_string();
    // The standing conditions, read line by line between their markers (data cannot fake
    // them: a marker inside data is escaped).
    let constraints: Vec<&str> = system
        .lines()
        .skip_while(|l| *l != CONDITIONS_BEGIN)
        .skip(1)
        .take_while(|l| *l != CONDITIONS_END)
        .filter_map(|l| l.strip_prefix("- "))
        .collect();
    let effects: Vec<String> = system
        .lines()
        .filter_map(|l| {
            let rest = l.split_once("effect_changed ")?.1;
            let (call, change) = rest.split_once(": ")?;
            let to = change.split(" -> ").nth(1)?.split_whitespace().next()?;
            Some(format!("- {call}: {to}"))
        })
        .collect();
    let list = |items: Vec<String>| {
        if items.is_empty() {
            "- none".to_string()
        } else {
            items.join("\n")
        }
    };
    format!(
        "## Goal\n{goal}\n## Constraints\n{}\n## Unresolved effects\n{}\n## Next action\nSearch my scope for the question's terms again.\n",
        list(constraints.iter().map(|c| format!("- {c}")).collect()),
        list(effects)
    )
}

fn read_task(request: &ModelRequest) -> Option<Task> {
    let first = request.messages.iter().find_map(|m| match m {
        Message::User { text } | Message::Compacted { text, .. } => Some(text),
        _ => None,
    })?;
    let mut question = None;
    let mut subtask = None;
    let mut scope = vec![".".to_string()];
    let mut others = Vec::new();
    let mut in_others = false;
    for line in first.lines() {
        if line.starts_with(crate::contracts::OTHERS_COVER) {
            in_others = true;
            continue;
        }
        match line.strip_prefix("- ") {
            Some(other) if in_others => {
                others.push(other.to_string());
                continue;
            }
            _ => in_others = false,
        }
        if let Some(q) = line.strip_prefix("Question:") {
            question = Some(q.trim().to_string());
        } else if let Some(q) = line.strip_prefix("Subtask:") {
            // A subtask of its own is what this subagent answers.
            subtask = Some(q.trim().to_string()).filter(|q| !q.is_empty());
        } else if let Some(s) = line.strip_prefix("Scope:") {
            if let Ok(list) = serde_json::from_str::<Vec<String>>(s.trim()) {
                if !list.is_empty() {
                    scope = list;
                }
            }
        }
    }
    let whole = subtask.as_ref().and(question.clone());
    question = subtask.or(question);
    Some(Task {
        whole,
        others,
        question: question.filter(|q| !q.is_empty())?,
        scope,
        orienting: first.contains("Orientation: this run was resumed"),
        verify: if first
            .lines()
            .any(|l| l.starts_with(crate::contracts::VERIFY_TASK))
        {
            doubted_claims(&request.system)
        } else {
            Vec::new()
        },
    })
}

/// One tool call of the transcript and its result.
pub(super) struct Exchange<'a> {
    pub(super) id: &'a str,
    pub(super) name: &'a str,
    pub(super) arguments: &'a Value,
    pub(super) content: &'a str,
    pub(super) is_error: bool,
}

fn exchanges(messages: &[Message]) -> Vec<Exchange<'_>> {
    let mut calls: HashMap<&str, &ToolCall> = HashMap::new();
    let mut out = Vec::new();
    for message in messages {
        match message {
            Message::Assistant { tool_calls, .. } => {
                for call in tool_calls {
                    calls.insert(call.id.as_str(), call);
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                if let Some(call) = calls.get(call_id.as_str()) {
                    out.push(Exchange {
                        id: &call.id,
                        name: &call.name,
                        arguments: &call.arguments,
                        content,
                        is_error: *is_error,
                    });
                }
            }
            Message::User { .. } | Message::Compacted { .. } => {}
        }
    }
    out
}

pub(super) fn grep_output_mode(arguments: &Value) -> &str {
    arguments
        .get("output")
        .and_then(Value::as_str)
        .unwrap_or("content")
}

fn call(id: usize, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: format!("offline-{id}"),
        name: name.to_string(),
        arguments,
    }
}

/// The exchange of a call with exactly these arguments, if it was made (even if it failed).
fn issued<'a, 'b>(
    done: &'b [Exchange<'a>],
    name: &str,
    arguments: &Value,
) -> Option<&'b Exchange<'a>> {
    done.iter()
        .find(|e| e.name == name && e.arguments == arguments)
}

/// The calls of `calls` not made yet.
fn not_issued(done: &[Exchange<'_>], calls: &[ToolCall]) -> Vec<ToolCall> {
    calls
        .iter()
        .filter(|c| issued(done, &c.name, &c.arguments).is_none())
        .cloned()
        .collect()
}

/// The exchanges of the calls of `calls` that were made and succeeded, in their order.
fn succeeded<'a, 'b>(done: &'b [Exchange<'a>], calls: &[ToolCall]) -> Vec<&'b Exchange<'a>> {
    calls
        .iter()
        .filter_map(|c| issued(done, &c.name, &c.arguments))
        .filter(|e| !e.is_error)
        .collect()
}

/// Decides the next turn from the transcript alone. The phases, each done once its calls were
/// made: count every term (and every line) in the scope; grep the best files for the terms
/// worth reading; read around the best places; grep for the callers of the functions found;
/// read the best call sites; hand off. With no tools offered, hand off at once.
fn next_turn(request: &ModelRequest) -> (String, Vec<ToolCall>) {
    let task = match early_turn(request) {
        Ok(task) => task,
        Err(turn) => return turn,
    };
    let done = exchanges(&request.messages);
    let may_call = |name: &str| request.tools.iter().any(|t| t.name == name);
    let survey = Survey::new(&task.question, &done);
    let pending = |calls: Vec<ToolCall>| -> Vec<ToolCall> {
        calls
            .into_iter()
            .filter(|c| may_call(&c.name) && issued(&done, &c.name, &c.arguments).is_none())
            .collect()
    };

    if !survey.counted() {
        let count = |i: usize, pattern: &str| {
            call(
                i,
                "grep",
                json!({"pattern": pattern, "paths": task.scope, "case_insensitive": true, "output": "count"}),
            )
        };
        let mut calls = vec![count(99, EVERY_LINE)];
        calls.extend(
            survey
                .terms
                .iter()
                .enumerate()
                .map(|(i, term)| count(i, &term.pattern)),
        );
        let calls = pending(calls);
        if !calls.is_empty() {
            return (
                "Counting where each term of the question occurs.".into(),
                calls,
            );
        }
    }

    if survey.examples_absent().is_some() {
        let handoff = conclude::write_handoff(&task, &survey, &[], &[], &[]);
        return (handoff.to_markdown(), Vec::new());
    }
    let files = survey.top_files();
    let grepped = survey.grep_terms(&files);
    let content_call = (!grepped.is_empty()).then(|| {
        let pattern = grepped
            .iter()
            .map(|t| format!("(?:{})", survey.terms[*t].pattern))
            .collect::<Vec<_>>()
            .join("|");
        call(
            100,
            "grep",
            json!({"pattern": pattern, "paths": files, "case_insensitive": true, "max_matches": CONTENT_MATCHES}),
        )
    });
    let calls = pending(content_call.iter().cloned().collect());
    if !calls.is_empty() {
        return (
            "Reading the matching lines of the most promising files.".into(),
            calls,
        );
    }
    let content = content_call
        .as_ref()
        .and_then(|c| issued(&done, &c.name, &c.arguments))
        .filter(|e| !e.is_error)
        .map(|e| e.content)
        .unwrap_or("");
    let hits = term_hits(&survey, &grepped, content);
    let picks = choose_places(&survey, &grepped, &hits);

    let read_calls = picks
        .iter()
        .enumerate()
        .map(|(i, p)| read_call(200 + i, &p.path, p.line, p.definition.is_some()))
        .collect();
    let calls = pending(read_calls);
    if !calls.is_empty() {
        return ("Reading around the best-ranked places.".into(), calls);
    }
    follow_and_conclude(&task, &survey, &done, &picks, &hits, &pending)
}

/// The last phase: the callers of what was found, read where they call it, then the handoff.
fn follow_and_conclude(
    task: &Task,
    survey: &Survey,
    done: &[Exchange<'_>],
    picks: &[Candidate],
    hits: &[Hit],
    pending: &dyn Fn(Vec<ToolCall>) -> Vec<ToolCall>,
) -> (String, Vec<ToolCall>) {
    let reads: Vec<&Exchange<'_>> = done
        .iter()
        .filter(|e| e.name == "read_file" && !e.is_error)
        .collect();

    let callees = follow::callees(picks, &reads);
    let caller_calls: Vec<ToolCall> = callees
        .iter()
        .enumerate()
        .map(|(i, c)| {
            call(
                300 + i,
                "grep",
                json!({"pattern": follow::caller_pattern(&c.name), "paths": task.scope, "max_matches": 100}),
            )
        })
        .collect();
    let calls = pending(caller_calls.clone());
    if !calls.is_empty() {
        return ("Looking for the callers of what was found.".into(), calls);
    }
    let near = |path: &str, line: u32| -> usize {
        let mut terms: Vec<usize> = hits
            .iter()
            .filter(|h| h.path == path && h.line.abs_diff(line) <= 12)
            .flat_map(|h| h.terms.iter().copied())
            .collect();
        terms.sort_unstable();
        terms.dedup();
        terms.len()
    };
    let sites: Vec<CallSite> = callees
        .iter()
        .zip(&caller_calls)
        .filter_map(|(callee, c)| {
            let result = issued(done, &c.name, &c.arguments).filter(|e| !e.is_error)?;
            follow::best_site(callee, result.content, &near)
        })
        .collect();
    let site_reads = sites
        .iter()
        .filter(|s| conclude::read_lines(&reads, &s.path, s.line).is_none())
        .enumerate()
        .map(|(i, s)| read_call(400 + i, &s.path, s.line, false))
        .collect();
    let calls = pending(site_reads);
    if !calls.is_empty() {
        return ("Reading where they are called.".into(), calls);
    }
    let handoff = conclude::write_handoff(task, survey, picks, &sites, &reads);
    (handoff.to_markdown(), Vec::new())
}

/// The turns that need no search: no task, an orientation, a verifier's, or no grep to search
/// with; otherwise the task.
fn early_turn(request: &ModelRequest) -> Result<Task, (String, Vec<ToolCall>)> {
    let Some(task) = read_task(request) else {
        let handoff = Handoff {
            open_items: vec![OpenItem {
                item: "No question was given to explore".into(),
                stuck_on: "the task message has no `Question:` line".into(),
            }],
            ..Handoff::default()
        };
        return Err((handoff.to_markdown(), Vec::new()));
    };
    let answered = request
        .messages
        .iter()
        .any(|m| matches!(m, Message::Assistant { .. }));
    if !answered && request.tools.is_empty() && task.orienting {
        return Err((orientation_answer(&request.system), Vec::new()));
    }
    if !task.verify.is_empty() {
        let done = exchanges(&request.messages);
        let may_read = |name: &str| request.tools.iter().any(|t| t.name == name);
        return Err(verify_turn(&task, &done, &may_read));
    }
    let may_call = |name: &str| request.tools.iter().any(|t| t.name == name);
    // A researcher: a corpus tool and no workspace search (a constraint may take one), or —
    // its tools taken by constraints or a spent budget — one told it is a researcher, or that
    // searched the corpus.
    let done = exchanges(&request.messages);
    let researcher =
        request.system.contains("You are a researcher") || done.iter().any(|e| e.name == "search");
    if !may_call("grep") && (may_call("search") || may_call("read") || researcher) {
        return Err(research::turn(&task, &done, &may_call));
    }
    // The explorer finds its places by searching: without grep (a constraint took it) it
    // settles nothing, and says why, rather than guess.
    if !may_call("grep") {
        let handoff = Handoff {
            open_items: vec![OpenItem {
                item: format!("Nothing was explored in {}", task.scope.join(", ")),
                stuck_on: "the offline explorer finds places by searching, and the run's constraints leave it no grep".into(),
            }],
            ..Handoff::default()
        };
        return Err((handoff.to_markdown(), Vec::new()));
    }
    Ok(task)
}

/// The content grep's lines, each with the grepped terms it holds.
fn term_hits(survey: &Survey, grepped: &[usize], content: &str) -> Vec<Hit> {
    rank::parse_hits(content)
        .into_iter()
        .map(|(path, line, text)| {
            let terms = grepped
                .iter()
                .copied()
                .filter(|t| survey.compiled[*t].is_match(&text))
                .collect();
            Hit {
                path,
                line,
                text,
                terms,
            }
        })
        .collect()
}

fn choose_places(survey: &Survey, grepped: &[usize], hits: &[Hit]) -> Vec<Candidate> {
    // Terms left out of the grep cannot be seen on its lines: they neither score nor count.
    let weights: Vec<f64> = (0..survey.terms.len())
        .map(|t| {
            if grepped.contains(&t) {
                survey.weights[t]
            } else {
                0.0
            }
        })
        .collect();
    // The question's weight: every term, but those too common to grep. A term that occurs
    // nowhere in the scope keeps its weight, so a question about something absent covers little.
    let question_weight: f64 = (0..survey.terms.len())
        .filter(|t| grepped.contains(t) || survey.counts[*t].is_empty())
        .map(|t| survey.weights[t])
        .sum();
    let strength: Vec<usize> = survey
        .terms
        .iter()
        .map(|t| match t.kind {
            terms::TermKind::Identifier | terms::TermKind::Literal => 2,
            _ => 1,
        })
        .collect();
    let candidates = rank::score_hits(hits, &weights, &strength, question_weight, &survey.compiled);
    if tracing::enabled!(target: "baton::offline", tracing::Level::DEBUG) {
        debug_dump(survey, &weights, &candidates);
    }
    // Two of the question's terms together, or one where only one occurs here at all.
    let close_needed = grepped.iter().map(|t| strength[*t]).sum::<usize>().min(2);
    rank::pick(
        &candidates,
        MOST_PLACES,
        PICK_GAP,
        RELATIVE_SCORE,
        MIN_COVERAGE,
        close_needed,
    )
}

/// Developer aid (`BATON_LOG=baton::offline=debug`): the terms, weights and best places.
fn debug_dump(survey: &Survey, weights: &[f64], candidates: &[Candidate]) {
    let terms: Vec<String> = survey
        .terms
        .iter()
        .enumerate()
        .map(|(t, term)| {
            format!(
                "{}={:.2}/{}",
                term.label,
                weights[t],
                survey.counts[t].len()
            )
        })
        .collect();
    tracing::debug!(
        target: "baton::offline",
        "{} lines; terms: {}",
        survey.lines,
        terms.join(" ")
    );
    tracing::debug!(
        target: "baton::offline",
        "raw: {}",
        survey
            .terms
            .iter()
            .enumerate()
            .map(|(t, term)| format!("{}={:.2}", term.label, survey.weights[t]))
            .collect::<Vec<_>>()
            .join(" ")
    );
    for c in candidates.iter().take(40) {
        tracing::debug!(
            target: "baton::offline",
            "{:.2} cov {:.2} {}:{} {:?}",
            c.score,
            c.coverage,
            c.path,
            c.line,
            c.definition.as_ref().map(|d| &d.name)
        );
    }
}

/// A read around a place: a definition and its body, or a mention with enough above it to
/// find its enclosing definition.
fn read_call(id: usize, path: &str, line: u32, is_definition: bool) -> ToolCall {
    let (start, end) = if is_definition {
        (line.saturating_sub(3).max(1), line + 80)
    } else {
        (line.saturating_sub(40).max(1), line + 15)
    };
    call(
        id,
        "read_file",
        json!({"path": path, "start_line": start, "end_line": end}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_question_hands_off_an_open_item() {
        let request = ModelRequest::new(
            String::new(),
            vec![Message::User {
                text: "hello".into(),
            }],
            Vec::new().into(),
            100,
        );
        let (text, calls) = next_turn(&request);
        assert!(calls.is_empty());
        let h = Handoff::parse(&text).unwrap();
        assert_eq!(h.open_items.len(), 1);
    }
}
