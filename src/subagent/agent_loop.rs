//! The subagent's loop as a sans-IO state machine: it says what to do next (call the model,
//! run tools, hand off, give up) and is told what came back — including the lead's verdict on
//! a handoff, which may send it back for a repair turn. No async, no actor: it can be tested,
//! serialised between steps and resumed.

use serde::{Deserialize, Serialize};

use crate::compaction::{
    flagged, message_text, should_compact, validate, Compactor, Decision, Folded, Ledger,
    ModelPass, ModelPassError, Options, RawTurns, Skeleton, NARRATIVE_PROMPT_REVISION,
};
use crate::context::Orientation;
use crate::transcript::CallId;

use crate::handoff::{repair_prompt, Violation};
use crate::model::price::dollars;
use crate::model::{ModelError, ModelRequest, ModelResponse, Price, StopReason};
use crate::tokens::{Estimate, Tokenizer};

use crate::policy::{Budget, Spent};
use crate::source::ObservationLog;
use crate::tools::ToolResult;
use crate::transcript::{Compaction, Message};

use crate::transcript::{ToolCall, ToolSpec};

/// Most tokens a subagent's answer may take.
pub(crate) const ANSWER_TOKENS: u32 = 4096;

/// The fewest answer tokens a handoff is asked in: with less room left under a budget, the
/// subagent is stopped instead.
pub(crate) const MIN_HANDOFF_TOKENS: u32 = 256;

/// The summary slot of a window whose turns have `room` tokens.
fn summary_slot(room: usize) -> usize {
    (room / 4).max(256)
}

/// What the loop wants done next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Send this request to the model.
    CallModel(ModelRequest),
    /// Run these tool calls (ids already unique in the run).
    CallTools(Vec<ToolCall>),
    /// Hand this text to the lead, which checks it against the contract.
    HandOff(String),
    /// The loop cannot go on: the model failed, or the budget ran out without a handoff.
    Failed(String),
}

/// The loop's state: the window, what was spent, what was seen.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct AgentLoop {
    id: String,
    system: String,
    messages: Vec<Message>,
    tools: std::sync::Arc<[ToolSpec]>,
    budget: Budget,
    spent: Spent,
    observations: ObservationLog,
    /// The answer last handed off, kept until the lead's verdict.
    handed_off: Option<String>,
    calls_made: u32,
    /// Set once the subagent has been told to hand off: it gets no tools after that.
    handoff_demanded: bool,
    /// After a resume: what it must restate before its first tool call.
    orientation: Option<Orientation>,
    /// True until the orientation answer is in: no tools are offered.
    orienting: bool,
    /// The model's context window: the window is compacted before a request would fill it.
    window: Option<usize>,
    /// Compactions done and not yet reported.
    compactions: Vec<CompactionNote>,
    /// The pinned ledger, fed each message as it arrives.
    ledger: Ledger,
    /// Messages arrived so far (a pin's turn is its arrival number).
    arrivals: usize,
    /// Set when no compaction can bring the next request under the model's window.
    window_full: Option<String>,
    /// How often each consequence was denied to this subagent (from its earlier attempts
    /// too, on a resume).
    denied: std::collections::HashMap<crate::policy::Consequence, u32>,
    /// The model's price: what each call cost, and what the next may cost.
    #[serde(default)]
    price: Option<Price>,
    /// Most this subagent's model calls may cost, in millionths of a dollar.
    #[serde(default)]
    cost_cap: Option<u64>,
    /// Which helper models the window has.
    #[serde(default)]
    helpers: HelperModes,
    /// Work queued for the helper models, taken by the actor (not kept across a resume: the
    /// rule pass's pins and the templates stand).
    #[serde(skip)]
    asks: Vec<HelperAsk>,
}

/// Which helper models a window has: with a ledger model, the turns the rule pass flags are
/// queued for it; with a summary model, every new summary is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HelperModes {
    pub(crate) ledger: bool,
    pub(crate) narrate: bool,
}

/// Work a helper model may do for the window, off the loop's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HelperAsk {
    /// Classify a turn the rule pass flagged.
    Ledger {
        turn: usize,
        text: String,
        from_user: bool,
    },
    /// Write a narrative of a summary (the whole message, its marker line first).
    Narrate {
        template: String,
        folded_digest: String,
    },
}

/// One compaction of the window, for the run's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CompactionNote {
    pub(crate) decision: Decision,
    pub(crate) tokens_before: usize,
    pub(crate) tokens_after: usize,
    pub(crate) cleared_tokens: usize,
    pub(crate) pinned: Vec<String>,
    /// The pinned constraints (which never retire), verbatim.
    pub(crate) constraints: Vec<String>,
    /// The pins retired since the last compaction (settled by a later turn).
    pub(crate) retired: Vec<String>,
    pub(crate) reason: Option<String>,
    /// The raw turns folded into summaries, for the event log.
    pub(crate) folded: Option<Folded>,
}

impl AgentLoop {
    pub(crate) fn new(
        id: &str,
        system: String,
        brief: String,
        tools: std::sync::Arc<[ToolSpec]>,
        budget: Budget,
    ) -> AgentLoop {
        AgentLoop {
            id: id.to_string(),
            system,
            // The brief is never folded: its binding sentences stay where they are, so the
            // ledger takes the turns that come after it.
            messages: vec![Message::User { text: brief }],
            tools,
            budget,
            spent: Spent::default(),
            observations: ObservationLog::default(),
            handed_off: None,
            calls_made: 0,
            handoff_demanded: false,
            orientation: None,
            orienting: false,
            window: None,
            compactions: Vec::new(),
            ledger: Ledger::new(),
            arrivals: 1,
            window_full: None,
            denied: std::collections::HashMap::new(),
            price: None,
            cost_cap: None,
            helpers: HelperModes::default(),
            asks: Vec::new(),
        }
    }

    /// Queues flagged turns and new summaries for the helper models `modes` names.
    pub(crate) fn with_helpers(mut self, modes: HelperModes) -> AgentLoop {
        self.helpers = modes;
        self
    }

    /// The work queued for the helper models since the last call.
    pub(crate) fn take_asks(&mut self) -> Vec<HelperAsk> {
        std::mem::take(&mut self.asks)
    }

    /// The ledger model's answer about a flagged turn: its verbatim pins are added; nothing
    /// else changes.
    pub(crate) fn on_ledger_answer(
        &mut self,
        turn: usize,
        text: &str,
        from_user: bool,
        answer: &str,
    ) -> Result<ModelPass, ModelPassError> {
        self.ledger
            .observe_model_answer(turn, text, from_user, answer)
    }

    /// The summary model's narrative of `template`: promoted into the window in the
    /// template's place when it passes the skeleton's checks, fits the summary slot and the
    /// template is still in the window; otherwise what is wrong, one line each (the template
    /// stands).
    pub(crate) fn on_narrative(
        &mut self,
        template: &str,
        narrative: &str,
        by: &str,
    ) -> Vec<String> {
        let Some((marker, body)) = template.split_once('\n') else {
            return vec!["the summary has no marker line".to_string()];
        };
        let narrative = narrative.trim();
        let mut problems = validate(narrative, &Skeleton::of(body));
        let slot = summary_slot(self.room());
        let tokens = Estimate.count(narrative);
        if tokens > slot {
            problems.push(format!(
                "it takes {tokens} tokens, over the {slot}-token summary slot"
            ));
        }
        let at = self.messages.iter().position(|m| {
            matches!(m, Message::Compacted { kind: Compaction::Summary, text } if text == template)
        });
        let Some(at) = at else {
            problems.push("the summary is no longer in the window".to_string());
            return problems;
        };
        if problems.is_empty() {
            let by: String = by
                .chars()
                .map(|c| {
                    if matches!(c, ';' | ']' | '\n' | '\r') {
                        ' '
                    } else {
                        c
                    }
                })
                .collect();
            let marker = marker.replacen(
                "; raw turns: ",
                &format!(", narrated by {by} ({NARRATIVE_PROMPT_REVISION}); raw turns: "),
                1,
            );
            self.messages[at] = Message::Compacted {
                kind: Compaction::Summary,
                text: format!("{marker}\n{narrative}\n"),
            };
        }
        problems
    }

    /// Takes a message into the window; the ledger classifies it as it arrives.
    fn push(&mut self, message: Message) {
        self.arrive(&message);
        self.messages.push(message);
    }

    fn arrive(&mut self, message: &Message) {
        self.ledger.arrive(self.arrivals, message);
        if self.helpers.ledger {
            let said = match message {
                Message::User { text } => Some((text, true)),
                Message::Assistant { text, .. } => Some((text, false)),
                _ => None,
            };
            if let Some((text, from_user)) = said.filter(|(t, u)| flagged(t, *u)) {
                self.asks.push(HelperAsk::Ledger {
                    turn: self.arrivals,
                    text: text.clone(),
                    from_user,
                });
            }
        }
        self.arrivals += 1;
    }

    /// The tokens the window's turns have (all but the system text, the brief, the tools and
    /// the answer's room); 0 when those alone fill the model's window.
    fn room(&self) -> usize {
        match self.window {
            Some(window) => window.saturating_sub(self.fixed_tokens()),
            None => usize::MAX,
        }
    }

    /// The tokens every request takes whatever the turns: the system text, the brief, the
    /// tools and the answer's room.
    fn fixed_tokens(&self) -> usize {
        let tools: usize = self
            .tools
            .iter()
            .map(|t| Estimate.count(&t.description) + t.parameters_len().div_ceil(4))
            .sum();
        Estimate.count(&self.system)
            + self
                .messages
                .first()
                .map(|m| Estimate.count(&message_text(m)))
                .unwrap_or(0)
            + tools
            + ANSWER_TOKENS as usize
    }

    /// The pinned ledger as it stands.
    #[cfg(test)]
    pub(crate) fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Compacts the window before a request would fill `tokens` (the model's window).
    pub(crate) fn with_window(mut self, tokens: usize) -> AgentLoop {
        self.window = Some(tokens);
        self
    }

    /// Prices its calls at `price`; with a cap, no call is sent that could take its cost past
    /// `cap` (millionths of a dollar): it is asked to hand off first, then stopped.
    pub(crate) fn with_price(mut self, price: Option<Price>, cap: Option<u64>) -> AgentLoop {
        self.price = price;
        self.cost_cap = cap;
        self
    }

    /// Compactions done since the last call.
    pub(crate) fn take_compactions(&mut self) -> Vec<CompactionNote> {
        std::mem::take(&mut self.compactions)
    }

    /// Compacts the window (all but the brief) when the next request would fill the model's
    /// window past the threshold; the brief and the system text are never folded. The request
    /// never goes out over the window: when a compaction cannot bring it under (refused, or
    /// still too big with all but the last turn folded), the loop ends with the reason.
    fn compact_if_needed(&mut self) {
        let Some(window) = self.window else { return };
        let count = |m: &Message| Estimate.count(&message_text(m));
        let room = self.room();
        let rest_tokens = |messages: &[Message]| messages.iter().skip(1).map(count).sum::<usize>();
        let before = rest_tokens(&self.messages);
        if room == 0 {
            self.window_full = Some(format!(
                "the window is full: the system text, brief and tools need {} of the model's {window} tokens",
                self.fixed_tokens()
            ));
            return;
        }
        let defaults = Options {
            window: room,
            slot: summary_slot(room),
            ..Options::default()
        };
        if !should_compact(before, defaults.window, defaults.threshold) {
            return;
        }
        // Folding more, clearing every old result, before giving up.
        let harder = Options {
            keep_last: 1,
            keep_tool_results: 0,
            ..defaults
        };
        let brief = self.messages.first().map(message_text).unwrap_or_default();
        for opts in [defaults, harder] {
            let rest = &self.messages[1..];
            let out = Compactor::new(opts, &Estimate)
                .raw_turns(RawTurns::EventLog)
                .outside(&brief)
                .offset(1)
                .compact(rest, &self.ledger);
            let compacted = matches!(out.decision, Decision::Compact | Decision::Split);
            self.compactions.push(CompactionNote {
                decision: out.decision,
                tokens_before: out.tokens_before,
                tokens_after: out.tokens_after,
                cleared_tokens: out.cleared_tokens,
                pinned: out.ledger.iter().map(|p| p.text.clone()).collect(),
                constraints: out
                    .ledger
                    .iter()
                    .filter(|p| p.class == crate::compaction::PinClass::Constraint)
                    .map(|p| p.text.clone())
                    .collect(),
                reason: out.reason.clone(),
                folded: out.folded.clone(),
                retired: self.ledger.take_retired(),
            });
            if compacted {
                if self.helpers.narrate {
                    self.queue_narratives(&out.window, &out.kept, out.folded.as_ref());
                }
                let brief = self.messages.first().cloned();
                self.messages = brief.into_iter().chain(out.window).collect();
                return;
            }
        }
        let now = rest_tokens(&self.messages);
        if now > room {
            let why = self
                .compactions
                .last()
                .and_then(|c| c.reason.clone())
                .unwrap_or_default();
            self.window_full = Some(format!(
                "the window is full: {now} tokens of turns with room for {room}, and compaction refused ({why})"
            ));
        }
    }

    /// Queues each summary a compaction made for the summary model.
    fn queue_narratives(
        &mut self,
        window: &[Message],
        kept: &[Option<usize>],
        folded: Option<&Folded>,
    ) {
        for (m, k) in window.iter().zip(kept) {
            if let (
                None,
                Message::Compacted {
                    kind: Compaction::Summary,
                    text,
                },
            ) = (k, m)
            {
                self.asks.push(HelperAsk::Narrate {
                    template: text.clone(),
                    folded_digest: folded.map(|f| f.digest.clone()).unwrap_or_default(),
                });
            }
        }
    }

    /// A restarted subagent: its first turn is an orientation (no tools), compared with
    /// `orientation`; what it leaves out is sent again before any tool call.
    pub(crate) fn with_orientation(mut self, orientation: Option<Orientation>) -> AgentLoop {
        if let Some(o) = orientation {
            if let Some(Message::User { text }) = self.messages.first_mut() {
                text.push_str("\n\n");
                text.push_str(&o.prompt());
            }
            self.orienting = true;
            self.orientation = Some(o);
        }
        self
    }

    pub(crate) fn spent(&self) -> Spent {
        self.spent
    }

    pub(crate) fn observations(&self) -> &ObservationLog {
        &self.observations
    }

    /// The first step.
    pub(crate) fn start(&mut self) -> Step {
        self.model_step()
    }

    /// The next model call, or a demand to hand off when a budget is used up. Budgets are
    /// reserved before a call: a call whose input estimate and answer could pass what is left
    /// of the subagent's tokens or cost, or one that would be its last turn, is not sent as
    /// it is — the subagent is asked for its handoff in what is left, the answer's token limit
    /// lowered to fit, and stopped when not even that fits.
    fn model_step(&mut self) -> Step {
        if let Some(limit) = self.budget.exhausted(&self.spent) {
            if self.handoff_demanded {
                return Step::Failed(format!("over budget ({limit}) and did not hand off"));
            }
            self.demand_handoff(&format!(
                "Budget used up ({limit}). Hand off now with what you have, in the three sections \
                 of the contract; no more tool calls."
            ));
        }
        self.compact_if_needed();
        if let Some(reason) = self.window_full.take() {
            return Step::Failed(reason);
        }
        let mut request = self.request();
        let last_turn = self.spent.model_turns.saturating_add(1) >= self.budget.model_turns;
        let near = match self.answer_room(&request) {
            Ok(room) if room >= u64::from(request.max_tokens) && !last_turn => {
                return Step::CallModel(request)
            }
            Ok(_) if last_turn => format!(
                "this is your last model turn of {}",
                self.budget.model_turns
            ),
            Ok(room) => format!("{room} answer tokens are left under your budget"),
            Err(why) => why,
        };
        if !self.handoff_demanded {
            self.demand_handoff(&format!(
                "Budget near: {near}. Hand off now with what you have, in the three sections \
                 of the contract; no more tool calls."
            ));
            request = self.request();
        }
        match self.answer_room(&request) {
            Ok(room) if room >= u64::from(MIN_HANDOFF_TOKENS) => {
                request.max_tokens = request.max_tokens.min(room.min(u64::from(u32::MAX)) as u32);
                Step::CallModel(request)
            }
            Ok(room) => Step::Failed(format!(
                "over budget: {room} answer tokens are left, too few for a handoff ({MIN_HANDOFF_TOKENS})"
            )),
            Err(why) => Step::Failed(format!("over budget: {why}")),
        }
    }

    /// The most answer tokens `request` may be given under the subagent's token budget and
    /// cost cap, its input reserved first (about four bytes a token and a quarter more); why
    /// none, when its input alone could pass one of them.
    fn answer_room(&self, request: &ModelRequest) -> Result<u64, String> {
        let input = request.reserved_input_tokens();
        let left = self.budget.tokens.saturating_sub(self.spent.tokens());
        if input >= left {
            return Err(format!(
                "the token budget ({}) would be passed: {} spent, and the next call's input may take {input}",
                self.budget.tokens,
                self.spent.tokens()
            ));
        }
        let mut room = left - input;
        if let (Some(price), Some(cap)) = (self.price, self.cost_cap) {
            let left = cap.saturating_sub(self.spent.cost_micros) as f64;
            let input = price.input_estimate_micros(request);
            if input >= left {
                return Err(format!(
                    "the subagent's cost limit (${:.4}) would be passed: ${:.4} spent and the next call's input may cost ${:.4}",
                    dollars(cap),
                    dollars(self.spent.cost_micros),
                    input / 1e6
                ));
            }
            if price.output > 0.0 {
                room = room.min(((left - input) / price.output).floor() as u64);
            }
        }
        Ok(room)
    }

    fn request(&self) -> ModelRequest {
        let mut request = ModelRequest::new(
            self.system.clone(),
            self.messages.clone(),
            if self.handoff_demanded || self.orienting {
                Vec::new().into()
            } else {
                self.tools.clone()
            },
            ANSWER_TOKENS,
        );
        // A text answer is a handoff, except the restatement a resume asks for.
        request.handoff = !self.orienting;
        request
    }

    fn demand_handoff(&mut self, text: &str) {
        self.handoff_demanded = true;
        self.push(Message::User {
            text: text.to_string(),
        });
    }

    /// The model answered (or failed). An answer without tool calls is a handoff.
    pub(crate) fn on_model(&mut self, result: Result<ModelResponse, ModelError>) -> Step {
        let response = match result {
            Ok(r) => r,
            Err(e) => return Step::Failed(e.to_string()),
        };
        crate::model::charge(&mut self.spent, &response.usage, self.price);
        if response.stop == StopReason::Refusal {
            return Step::Failed(format!(
                "the model refused: {}",
                crate::text::one_line(&response.text)
            ));
        }
        if self.orienting {
            return self.on_orientation(response.text);
        }
        if !response.tool_calls.is_empty() {
            return self.on_tool_calls(response);
        }
        if response.stop == StopReason::MaxTokens {
            // A cut answer is never taken for a finished handoff.
            self.push(Message::Assistant {
                text: response.text,
                tool_calls: Vec::new(),
            });
            self.push(Message::User {
                text: format!(
                    "Your answer was cut off at the {ANSWER_TOKENS}-token limit, so it was not \
                     handed off. Hand off again, shorter: the three sections of the contract, \
                     one line per item."
                ),
            });
            return self.model_step();
        }
        self.handed_off = Some(response.text.clone());
        Step::HandOff(response.text)
    }

    /// The orientation answer: compared with what the checkpoint says; the next turn re-sends
    /// what it left out, and only then are tools offered.
    fn on_orientation(&mut self, answer: String) -> Step {
        self.orienting = false;
        let missing = self
            .orientation
            .as_ref()
            .map(|o| o.missing(&answer))
            .unwrap_or_default();
        self.push(Message::Assistant {
            text: answer,
            tool_calls: Vec::new(),
        });
        let text = if missing.is_empty() {
            "Your restatement matches the checkpoint. Carry on with the task.".to_string()
        } else {
            Orientation::resend(&missing)
        };
        self.push(Message::User { text });
        self.model_step()
    }

    /// The lead found violations in the handoff: one repair turn quoting them.
    pub(crate) fn on_repair(&mut self, violations: &[Violation]) -> Step {
        if let Some(text) = self.handed_off.take() {
            self.push(Message::Assistant {
                text,
                tool_calls: Vec::new(),
            });
        }
        if let Some(limit) = self.budget.exhausted(&self.spent) {
            return Step::Failed(format!(
                "over budget ({limit}): no turn left to repair the handoff"
            ));
        }
        self.push(Message::User {
            text: repair_prompt(violations),
        });
        self.model_step()
    }

    fn on_tool_calls(&mut self, response: ModelResponse) -> Step {
        let mut calls = response.tool_calls;
        for call in &mut calls {
            self.calls_made += 1;
            call.id = CallId {
                subagent: &self.id,
                n: self.calls_made,
            }
            .to_string();
        }
        self.push(Message::Assistant {
            text: response.text,
            tool_calls: calls.clone(),
        });
        let left = self.budget.tool_calls_left(&self.spent) as usize;
        if self.handoff_demanded || calls.len() > left {
            // Calls that will not run still get a result, so no call is left unanswered.
            let run: Vec<ToolCall> = if self.handoff_demanded {
                Vec::new()
            } else {
                calls.iter().take(left).cloned().collect()
            };
            for call in calls.iter().skip(run.len()) {
                self.push(Message::Tool {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: "error: not run: the tool-call budget is used up".into(),
                    is_error: true,
                });
            }
            if self.handoff_demanded {
                return Step::Failed("called tools after being told to hand off".into());
            }
            if run.is_empty() {
                return self.model_step();
            }
            return Step::CallTools(run);
        }
        Step::CallTools(calls)
    }

    /// The tools ran.
    /// Consequences denied to this subagent before (its earlier attempts, on a resume): they
    /// count toward the bound on repeated denials.
    pub(crate) fn with_denied(mut self, earlier: &[crate::policy::Consequence]) -> AgentLoop {
        for c in earlier {
            *self.denied.entry(c.clone()).or_default() += 1;
        }
        self
    }

    pub(crate) fn on_tools(&mut self, results: Vec<ToolResult>) -> Step {
        self.spent.tool_calls += results.len() as u32;
        // The same consequence denied again and again ends the subagent, the denial its
        // reason.
        let denials: Vec<&crate::policy::Denial> =
            results.iter().filter_map(|r| r.denial.as_deref()).collect();
        for denial in &denials {
            *self.denied.entry(denial.consequence.clone()).or_default() += 1;
        }
        // Counted once the whole batch is in, so the reason gives the true count.
        let stop = denials.iter().find_map(|denial| {
            let count = self.denied.get(&denial.consequence).copied().unwrap_or(0);
            crate::policy::denied_too_often(count).then(|| {
                format!(
                    "stopped after {count} denials of the same call: {}",
                    denial.message()
                )
            })
        });
        // Results go right after their call, before any "not run" placeholders.
        let insert_at = self
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
            .map(|i| i + 1)
            .unwrap_or(self.messages.len());
        for (position, result) in (insert_at..).zip(results) {
            self.observations.record(result.observations);
            let message = Message::Tool {
                call_id: result.call_id,
                name: result.name,
                content: result.content,
                is_error: result.is_error,
            };
            self.arrive(&message);
            self.messages.insert(position, message);
        }
        if let Some(reason) = stop {
            return Step::Failed(reason);
        }
        self.model_step()
    }
}

#[cfg(test)]
mod tests;
