//! The offline model: a deterministic local explorer that plays a real model's part with the
//! same tools. Each turn is a pure function of the request: it turns the question into search
//! terms, counts them (grep, count mode), greps the most promising files, ranks hit lines
//! (definitions above mentions, several terms above one, source above tests and docs), reads
//! around the best ones, and hands off citing exactly the lines it read.

mod rank;
mod terms;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use async_trait::async_trait;
use regex::{Regex, RegexBuilder};
use serde_json::{json, Value};

use super::{estimate_tokens, Message, Model, ModelError, ModelRequest, ModelResponse, Usage};
use crate::handoff::{Conclusion, ConclusionKind, Handoff, OpenItem};
use crate::source::SourceId;
use crate::tools::ToolCall;
use rank::{Candidate, Hit};
use terms::Term;

/// Most terms searched for one question.
const MAX_TERMS: usize = 16;
/// Most files the content grep looks at.
const TOP_FILES: usize = 6;
/// Most matching lines the content grep asks for.
const CONTENT_MATCHES: usize = 2000;
/// Most places read and cited by one subagent.
const MOST_PLACES: usize = 4;
/// Two places in one file are at least this many lines apart.
const PICK_GAP: u32 = 12;
/// A place must cover this share of the question's term weight to be a conclusion.
const MIN_COVERAGE: f64 = 0.35;
/// ... and score at least this share of the best place.
const RELATIVE_SCORE: f64 = 0.45;

/// The deterministic local explorer. Needs no key and no network.
#[derive(Debug, Clone, Default)]
pub struct OfflineModel {
    latency: Duration,
}

impl OfflineModel {
    /// An offline model answering at once.
    pub fn new() -> OfflineModel {
        OfflineModel::default()
    }

    /// An offline model that waits `latency` before every answer (demos, tests, benchmarks).
    pub fn with_latency(latency: Duration) -> OfflineModel {
        OfflineModel { latency }
    }
}

#[async_trait]
impl Model for OfflineModel {
    fn name(&self) -> String {
        "offline".to_string()
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
        Ok(ModelResponse {
            text,
            tool_calls,
            usage: Usage {
                input_tokens: request.estimated_tokens(),
                output_tokens,
            },
        })
    }
}

/// The task as the lead wrote it in the first user message.
struct Task {
    question: String,
    scope: Vec<String>,
}

fn read_task(messages: &[Message]) -> Option<Task> {
    let first = messages.iter().find_map(|m| match m {
        Message::User { text } => Some(text),
        _ => None,
    })?;
    let mut question = None;
    let mut scope = vec![".".to_string()];
    for line in first.lines() {
        if let Some(q) = line.strip_prefix("Question:") {
            question = Some(q.trim().to_string());
        } else if let Some(s) = line.strip_prefix("Scope:") {
            if let Ok(list) = serde_json::from_str::<Vec<String>>(s.trim()) {
                if !list.is_empty() {
                    scope = list;
                }
            }
        }
    }
    Some(Task {
        question: question.filter(|q| !q.is_empty())?,
        scope,
    })
}

/// One tool call of the transcript and its result.
struct Exchange<'a> {
    id: &'a str,
    name: &'a str,
    arguments: &'a Value,
    content: &'a str,
    is_error: bool,
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
            Message::User { .. } => {}
        }
    }
    out
}

fn grep_output_mode(arguments: &Value) -> &str {
    arguments
        .get("output")
        .and_then(Value::as_str)
        .unwrap_or("content")
}

/// What the explorer knows after its count greps: each term's weight and hit files.
struct Survey {
    terms: Vec<Term>,
    compiled: Vec<Regex>,
    weights: Vec<f64>,
    /// Per term: file -> count.
    counts: Vec<BTreeMap<String, usize>>,
    /// Per term: the call that counted it.
    count_calls: Vec<Option<String>>,
    files_searched: usize,
    /// Lines in the scope (from counting `^`), the collection each term's rarity is
    /// measured against: every line is a document.
    lines: usize,
}

/// Counting this pattern counts the lines of every file.
const EVERY_LINE: &str = "^";

impl Survey {
    fn new(question: &str, done: &[Exchange<'_>]) -> Survey {
        let mut terms = terms::terms(question);
        terms.truncate(MAX_TERMS);
        let compiled = terms
            .iter()
            .map(|t| {
                RegexBuilder::new(&t.pattern)
                    .case_insensitive(true)
                    .build()
                    .unwrap_or_else(|_| Regex::new(&regex::escape(&t.label)).expect("escaped"))
            })
            .collect();
        let mut counts = vec![BTreeMap::new(); terms.len()];
        let mut count_calls = vec![None; terms.len()];
        let mut files_searched = 0;
        let mut lines = 0;
        for ex in done
            .iter()
            .filter(|e| e.name == "grep" && grep_output_mode(e.arguments) == "count" && !e.is_error)
        {
            let pattern = ex.arguments.get("pattern").and_then(Value::as_str);
            if pattern == Some(EVERY_LINE) {
                lines = rank::parse_counts(ex.content).iter().map(|(_, n)| n).sum();
                continue;
            }
            let Some(index) = terms
                .iter()
                .position(|t| Some(t.pattern.as_str()) == pattern)
            else {
                continue;
            };
            counts[index] = rank::parse_counts(ex.content).into_iter().collect();
            count_calls[index] = Some(ex.id.to_string());
            files_searched = files_searched.max(rank::files_searched(ex.content));
        }
        let n = lines.max(files_searched).max(1) as f64;
        let weights = terms
            .iter()
            .zip(&counts)
            .map(|(t, c)| {
                // A compound that never occurs was only a guess at a spelling: its words
                // still count on their own.
                if c.is_empty()
                    && matches!(t.kind, terms::TermKind::Compound | terms::TermKind::Literal)
                {
                    0.0
                } else {
                    // BM25's idf with lines as documents: a term on few lines says much.
                    let matching = c.values().sum::<usize>() as f64;
                    t.prior * (1.0 + (n - matching + 0.5).max(0.5) / (matching + 0.5)).ln()
                }
            })
            .collect();
        Survey {
            terms,
            compiled,
            weights,
            counts,
            count_calls,
            files_searched,
            lines,
        }
    }

    fn counted(&self) -> bool {
        self.count_calls.iter().any(Option::is_some)
    }

    /// Files ranked by the weight of the terms they hold.
    fn top_files(&self) -> Vec<String> {
        let mut score: BTreeMap<&str, f64> = BTreeMap::new();
        for (t, counts) in self.counts.iter().enumerate() {
            for (file, count) in counts {
                *score.entry(file).or_default() +=
                    self.weights[t] * (1.0 + 0.25 * (*count as f64).ln());
            }
        }
        let mut ranked: Vec<(&str, f64)> = score
            .into_iter()
            .map(|(file, s)| {
                let lower = file.to_ascii_lowercase();
                let in_path: f64 = self
                    .compiled
                    .iter()
                    .zip(&self.weights)
                    .filter(|(re, _)| re.is_match(&lower))
                    .map(|(_, w)| *w)
                    .sum();
                (file, (s + in_path) * rank::path_factor(file))
            })
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        ranked
            .into_iter()
            .take(TOP_FILES)
            .map(|(f, _)| f.to_string())
            .collect()
    }

    /// The terms worth reading line by line in `files`: the heaviest first, as many as fit in
    /// the content grep's output; the commonest are left out (they say least).
    fn grep_terms(&self, files: &[String]) -> Vec<usize> {
        let mut present = self.present_terms();
        present.sort_by(|a, b| self.weights[*b].total_cmp(&self.weights[*a]).then(a.cmp(b)));
        let mut chosen = Vec::new();
        let mut lines = 0usize;
        for t in present {
            let in_files: usize = files.iter().filter_map(|f| self.counts[t].get(f)).sum();
            if in_files == 0 {
                continue;
            }
            if !chosen.is_empty() && lines + in_files > CONTENT_MATCHES {
                continue;
            }
            lines += in_files;
            chosen.push(t);
        }
        chosen.sort_unstable();
        chosen
    }

    fn present_terms(&self) -> Vec<usize> {
        (0..self.terms.len())
            .filter(|t| !self.counts[*t].is_empty())
            .collect()
    }
}

fn call(id: usize, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: format!("offline-{id}"),
        name: name.to_string(),
        arguments,
    }
}

/// Decides the next turn from the transcript alone.
fn next_turn(request: &ModelRequest) -> (String, Vec<ToolCall>) {
    let Some(task) = read_task(&request.messages) else {
        let handoff = Handoff {
            open_items: vec![OpenItem {
                item: "No question was given to explore".into(),
                stuck_on: "the task message has no `Question:` line".into(),
            }],
            ..Handoff::default()
        };
        return (handoff.to_markdown(), Vec::new());
    };
    let done = exchanges(&request.messages);
    let survey = Survey::new(&task.question, &done);
    let may_call = |name: &str| request.tools.iter().any(|t| t.name == name);
    if !survey.counted() && may_call("grep") {
        let count = |i: usize, pattern: &str| {
            call(
                i,
                "grep",
                json!({"pattern": pattern, "paths": task.scope, "case_insensitive": true, "output": "count"}),
            )
        };
        let mut calls: Vec<ToolCall> = vec![count(99, EVERY_LINE)];
        calls.extend(
            survey
                .terms
                .iter()
                .enumerate()
                .map(|(i, term)| count(i, &term.pattern)),
        );
        return (
            "Counting where each term of the question occurs.".into(),
            calls,
        );
    }
    let content = done
        .iter()
        .find(|e| e.name == "grep" && grep_output_mode(e.arguments) == "content" && !e.is_error);
    let files = survey.top_files();
    let grepped = survey.grep_terms(&files);
    if content.is_none() && !grepped.is_empty() && may_call("grep") {
        let pattern = grepped
            .iter()
            .map(|t| format!("(?:{})", survey.terms[*t].pattern))
            .collect::<Vec<_>>()
            .join("|");
        return (
            "Reading the matching lines of the most promising files.".into(),
            vec![call(
                100,
                "grep",
                json!({"pattern": pattern, "paths": files, "case_insensitive": true, "max_matches": CONTENT_MATCHES}),
            )],
        );
    }
    let picks = content
        .map(|c| choose_places(&survey, &grepped, c.content))
        .unwrap_or_default();
    let reads: Vec<&Exchange<'_>> = done
        .iter()
        .filter(|e| e.name == "read_file" && !e.is_error)
        .collect();
    if reads.is_empty() && !picks.is_empty() && may_call("read_file") {
        let calls = picks
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (start, end) = read_range(p);
                call(
                    200 + i,
                    "read_file",
                    json!({"path": p.path, "start_line": start, "end_line": end}),
                )
            })
            .collect();
        return ("Reading around the best-ranked places.".into(), calls);
    }
    let handoff = write_handoff(&task, &survey, &picks, &reads);
    (handoff.to_markdown(), Vec::new())
}

fn choose_places(survey: &Survey, grepped: &[usize], content: &str) -> Vec<Candidate> {
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
    let hits: Vec<Hit> = rank::parse_hits(content)
        .into_iter()
        .map(|(path, line, text)| {
            let terms = survey
                .compiled
                .iter()
                .enumerate()
                .filter(|(t, re)| weights[*t] > 0.0 && re.is_match(&text))
                .map(|(i, _)| i)
                .collect();
            Hit {
                path,
                line,
                text,
                terms,
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
    let candidates = rank::score_hits(
        &hits,
        &weights,
        &strength,
        question_weight,
        &survey.compiled,
    );
    if std::env::var_os("BATON_DEBUG_OFFLINE").is_some() {
        debug_dump(survey, &weights, &candidates);
    }
    rank::pick(
        &candidates,
        MOST_PLACES,
        PICK_GAP,
        RELATIVE_SCORE,
        MIN_COVERAGE,
    )
}

/// Developer aid (`BATON_DEBUG_OFFLINE=1`): the terms, weights and best places, on stderr.
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
    eprintln!(
        "[offline] {} lines; terms: {}",
        survey.lines,
        terms.join(" ")
    );
    eprintln!(
        "[offline] raw: {}",
        survey
            .terms
            .iter()
            .enumerate()
            .map(|(t, term)| format!("{}={:.2}", term.label, survey.weights[t]))
            .collect::<Vec<_>>()
            .join(" ")
    );
    for c in candidates.iter().take(40) {
        eprintln!(
            "[offline]   {:.2} cov {:.2} {}:{} {:?}",
            c.score,
            c.coverage,
            c.path,
            c.line,
            c.definition.as_ref().map(|d| &d.name)
        );
    }
}

fn read_range(place: &Candidate) -> (u32, u32) {
    if place.definition.is_some() {
        (place.line.saturating_sub(3).max(1), place.line + 80)
    } else {
        (place.line.saturating_sub(40).max(1), place.line + 15)
    }
}

fn term_labels(survey: &Survey, indices: &[usize]) -> String {
    indices
        .iter()
        .map(|t| survey.terms[*t].label.clone())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A verbatim piece of a line to quote in backticks: the line itself, or where it holds
/// backticks of its own, its longest backtick-free piece. At most 100 characters.
fn short(text: &str) -> String {
    let piece = text
        .split('`')
        .map(str::trim)
        .max_by_key(|p| p.len())
        .unwrap_or("");
    let mut out: String = piece.chars().take(100).collect();
    while out.ends_with('\\') {
        out.pop();
    }
    out.trim_end().to_string()
}

/// One conclusion about one place, citing only lines that were read (or the grep hit line).
fn conclude(survey: &Survey, place: &Candidate, reads: &[&Exchange<'_>]) -> Option<Conclusion> {
    let lines = reads.iter().find_map(|r| {
        let (path, lines) = rank::parse_read(r.content)?;
        let covers = lines.first()?.0 <= place.line && lines.last()?.0 >= place.line;
        (path == place.path && covers).then_some(lines)
    });
    let matched = term_labels(survey, &place.terms);
    let Some(lines) = lines else {
        // Never read: cite the one line grep showed.
        return Some(Conclusion {
            claim: format!("{} line {} matches {matched}", place.path, place.line),
            sources: vec![file_source(&place.path, place.line, place.line)],
            kind: ConclusionKind::Finding,
        });
    };
    let hit_index = lines.iter().position(|l| l.0 == place.line)?;
    // The definition at the hit, or the nearest one above that encloses it.
    let enclosing = (0..=hit_index).rev().find_map(|i| {
        let def = rank::definition(&lines[i].1)?;
        let end = rank::block_end(&lines, i);
        (end >= place.line).then_some((i, def, end))
    });
    let hit_text = short(&lines[hit_index].1);
    let (claim, sources) = match enclosing {
        Some((i, def, end)) if i == hit_index => (
            format!(
                "{} defines `{}` ({}) at line {}: `{}` — matches {matched}",
                place.path, def.name, def.keyword, lines[i].0, hit_text
            ),
            vec![file_source(&place.path, lines[i].0, end)],
        ),
        Some((i, def, end)) => {
            let start = lines[i].0;
            let mut sources = vec![file_source(&place.path, start, end)];
            if end - start > 120 {
                sources = vec![
                    file_source(&place.path, start, start),
                    file_source(
                        &place.path,
                        place.line.saturating_sub(3).max(start),
                        (place.line + 3).min(end),
                    ),
                ];
            }
            (
                format!(
                    "In `{}` ({} {}), line {} matches {matched}: `{}`",
                    def.name, def.keyword, place.path, place.line, hit_text
                ),
                sources,
            )
        }
        None => {
            let first = lines.first()?.0;
            let last = lines.last()?.0;
            (
                format!(
                    "{} line {} matches {matched}: `{}`",
                    place.path, place.line, hit_text
                ),
                vec![file_source(
                    &place.path,
                    place.line.saturating_sub(3).max(first),
                    (place.line + 3).min(last),
                )],
            )
        }
    };
    Some(Conclusion {
        claim,
        sources,
        kind: ConclusionKind::Finding,
    })
}

fn file_source(path: &str, start: u32, end: u32) -> SourceId {
    SourceId::File {
        path: path.to_string(),
        lines: Some((start, end.max(start))),
    }
}

fn write_handoff(
    task: &Task,
    survey: &Survey,
    picks: &[Candidate],
    reads: &[&Exchange<'_>],
) -> Handoff {
    let scope = task.scope.join(", ");
    let mut handoff = Handoff::default();
    for place in picks {
        if let Some(c) = conclude(survey, place, reads) {
            if !handoff
                .settled_conclusions
                .iter()
                .any(|h| h.sources == c.sources)
            {
                handoff.settled_conclusions.push(c);
            }
        }
    }
    let absent: Vec<usize> = (0..survey.terms.len())
        .filter(|t| survey.counts[*t].is_empty() && survey.count_calls[*t].is_some())
        .collect();
    if !absent.is_empty() {
        let sources = absent
            .iter()
            .filter_map(|t| survey.count_calls[*t].clone())
            .map(|id| SourceId::Record {
                kind: "call".into(),
                id,
            })
            .collect();
        handoff.settled_conclusions.push(Conclusion {
            claim: format!(
                "no line in {scope} matches {} (case-insensitive grep over {} files)",
                term_labels(survey, &absent),
                survey.files_searched
            ),
            sources,
            kind: ConclusionKind::NegativeEvidence,
        });
    }
    if picks.is_empty() {
        handoff.open_items.push(OpenItem {
            item: format!("No place in {scope} was found that answers: {}", task.question),
            stuck_on: if survey.present_terms().is_empty() {
                "none of the question's terms occur in this scope".into()
            } else {
                format!(
                    "the lines found hold only part of the question ({} occur here), too little to settle a location",
                    term_labels(survey, &survey.present_terms())
                )
            },
        });
    } else {
        handoff.open_items.push(OpenItem {
            item: format!("Callers and uses beyond the places read in {scope} were not traced"),
            stuck_on: "the offline explorer reads only its best-ranked places".into(),
        });
    }
    handoff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_question_hands_off_an_open_item() {
        let request = ModelRequest {
            system: String::new(),
            messages: vec![Message::User {
                text: "hello".into(),
            }],
            tools: Vec::new(),
            max_tokens: 100,
        };
        let (text, calls) = next_turn(&request);
        assert!(calls.is_empty());
        let h = Handoff::parse(&text).unwrap();
        assert_eq!(h.open_items.len(), 1);
    }
}
