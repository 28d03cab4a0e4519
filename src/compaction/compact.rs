//! One compaction of a window, in order: trigger on occupancy; clear old tool results first;
//! if that is not enough, fold all but the last turns — compact, split or refuse as the floor
//! decides before any summarising; insert the ledger, verbatim, after the summaries and before
//! the kept turns; check what survived. A failed check leaves the window as it was.

use serde::{Deserialize, Serialize};

use super::clear::{clear_tool_results, should_compact};
use super::cut::{split_cuts, split_point};
use super::floor::{decide, floor, FloorDecision};
use super::ledger::{Ledger, Pin};
use super::summary::{message_text, summarise, survival, Survival, LONG_SENTENCE};
use crate::context::Tokenizer;
use crate::model::Message;

/// The knobs of a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// The model's window, in tokens.
    pub window: usize,
    /// Occupancy that triggers compaction.
    pub threshold: f64,
    /// Turns kept verbatim at the end.
    pub keep_last: usize,
    /// Tool results kept whole when clearing.
    pub keep_tool_results: usize,
    /// Least tokens a clearing pass must free.
    pub min_cleared: usize,
    /// The summary slot, in tokens.
    pub slot: usize,
    /// Margin over the irreducible tokens, in percent.
    pub margin_percent: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            window: 16_000,
            threshold: super::clear::DEFAULT_THRESHOLD,
            keep_last: 6,
            keep_tool_results: super::clear::DEFAULT_KEEP_TOOL_RESULTS,
            min_cleared: super::clear::DEFAULT_MIN_CLEARED,
            slot: 4_000,
            margin_percent: super::floor::DEFAULT_MARGIN_PERCENT,
        }
    }
}

/// What was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Under the threshold: nothing done.
    None,
    /// Compacted (by clearing tool results, or with one summary).
    Compact,
    /// The span was split into parts, each summarised within the slot.
    Split,
    /// Nothing could be folded safely: the window is unchanged.
    Refuse,
}

/// The result of one compaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compacted {
    /// What was decided.
    pub decision: Decision,
    /// Tokens before.
    pub tokens_before: usize,
    /// Tokens after.
    pub tokens_after: usize,
    /// Tokens freed by clearing tool results.
    pub cleared_tokens: usize,
    /// The new window (the old one when refused or not needed).
    pub window: Vec<Message>,
    /// The pinned ledger.
    pub ledger: Vec<Pin>,
    /// What survived (all true/empty when nothing was folded).
    pub survival: Survival,
    /// Why, in one line, when refused.
    pub reason: Option<String>,
}

const LEDGER_MARK: &str = "=== PINNED";
const SUMMARY_MARK: &str = "[compacted:";

fn tokens(messages: &[Message], tokenizer: &dyn Tokenizer) -> usize {
    messages
        .iter()
        .map(|m| tokenizer.count(&message_text(m)))
        .sum()
}

/// The ledger of a window, classified turn by turn in arrival order; an earlier ledger's pins
/// carry over verbatim; earlier summaries are not turns.
pub fn ledger_of(messages: &[Message]) -> Ledger {
    let mut ledger = Ledger::new();
    for (turn, m) in messages.iter().enumerate() {
        match m {
            // An earlier compaction's ledger: its pins carry over, verbatim.
            Message::User { text } if text.starts_with(LEDGER_MARK) => {
                ledger.carry(Ledger::parse(text));
            }
            Message::User { text }
                if !text.starts_with(LEDGER_MARK) && !text.starts_with(SUMMARY_MARK) =>
            {
                ledger.observe(turn, text, true)
            }
            Message::Assistant { text, .. } => ledger.observe(turn, text, false),
            _ => {}
        }
    }
    ledger
}

fn is_summary(m: &Message) -> bool {
    matches!(m, Message::User { text } if text.starts_with(SUMMARY_MARK))
}

fn is_ledger(m: &Message) -> bool {
    matches!(m, Message::User { text } if text.starts_with(LEDGER_MARK))
}

/// The text a span's floor is measured on: its own turns, not earlier summaries or ledgers.
fn span_text(span: &[Message]) -> String {
    span.iter()
        .filter(|m| !is_summary(m) && !is_ledger(m))
        .map(message_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Compacts `messages` for a model window.
pub fn compact(messages: &[Message], opts: &Options, tokenizer: &dyn Tokenizer) -> Compacted {
    let ledger = ledger_of(messages);
    let tokens_before = tokens(messages, tokenizer);
    let unchanged = |decision, reason: Option<String>, survival| Compacted {
        decision,
        tokens_before,
        tokens_after: tokens_before,
        cleared_tokens: 0,
        window: messages.to_vec(),
        ledger: ledger.pins().to_vec(),
        survival,
        reason,
    };
    let intact = Survival {
        ledger_verbatim: true,
        missing: Vec::new(),
        effect_states_kept: true,
    };
    if !should_compact(tokens_before, opts.window, opts.threshold) {
        return unchanged(Decision::None, None, intact);
    }
    // Light compaction first.
    // Clear as much as gets under the threshold, and never less than the minimum per pass.
    let limit = (opts.threshold * opts.window as f64) as usize;
    let excess = tokens_before.saturating_sub(limit.saturating_sub(1));
    let cleared = clear_tool_results(
        messages,
        opts.keep_tool_results,
        opts.min_cleared.max(excess),
        tokenizer,
    );
    let cleared = cleared.or_else(|| {
        // Not enough to get under: still clear, if the minimum is met, before summarising.
        clear_tool_results(
            messages,
            opts.keep_tool_results,
            opts.min_cleared,
            tokenizer,
        )
    });
    let (working, cleared_tokens) = match &cleared {
        Some(c) => (c.window.clone(), c.saved),
        None => (messages.to_vec(), 0),
    };
    let after_clearing = tokens(&working, tokenizer);
    if cleared.is_some() && !should_compact(after_clearing, opts.window, opts.threshold) {
        // Cleared results can be reread: the checks cover the conversation's own turns.
        let turns: Vec<Message> = messages
            .iter()
            .filter(|m| !matches!(m, Message::Tool { .. }))
            .cloned()
            .collect();
        let survived = survival(&turns, &working, &ledger);
        return Compacted {
            decision: Decision::Compact,
            tokens_before,
            tokens_after: after_clearing,
            cleared_tokens,
            window: working,
            ledger: ledger.pins().to_vec(),
            survival: survived,
            reason: None,
        };
    }
    // Fold all but the last turns, at a cut that keeps every call with its result.
    let Some(cut) = split_point(&working, opts.keep_last) else {
        return unchanged(
            Decision::Refuse,
            Some("no safe cut leaves the last turns whole".into()),
            intact,
        );
    };
    let span = &messages[..cut];
    let span_floor = floor(&span_text(span), tokenizer, opts.margin_percent);
    // The parts a split would make: consecutive safe cuts that keep an error with its fix,
    // each part's floor within the slot.
    let mut parts: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    let cuts: Vec<usize> = split_cuts(span).into_iter().filter(|c| *c > 0).collect();
    let mut previous = 0;
    for c in cuts {
        let f = floor(&span_text(&span[start..c]), tokenizer, opts.margin_percent);
        if f > opts.slot && previous > start {
            parts.push((start, previous));
            start = previous;
        }
        previous = c;
    }
    if start < span.len() {
        parts.push((start, span.len()));
    }
    let part_floors: Vec<usize> = parts
        .iter()
        .map(|(a, b)| floor(&span_text(&span[*a..*b]), tokenizer, opts.margin_percent))
        .collect();
    let decision = decide(span_floor, &part_floors, opts.slot);
    let pieces: Vec<(usize, usize)> = match decision {
        FloorDecision::Compact => vec![(0, span.len())],
        FloorDecision::Split => parts,
        FloorDecision::Refuse => {
            return unchanged(
                Decision::Refuse,
                Some(format!(
                    "the span's floor is {span_floor} tokens, over the {}-token slot, and it does not split into parts that fit",
                    opts.slot
                )),
                intact,
            )
        }
    };
    // Earlier summaries are carried as they are: a summary is built from the turns of its
    // span, never from an earlier summary (nor from an earlier ledger, which is re-rendered).
    let mut window: Vec<Message> = span.iter().filter(|m| is_summary(m)).cloned().collect();
    for (a, b) in &pieces {
        let raw: Vec<Message> = span[*a..*b]
            .iter()
            .filter(|m| !is_summary(m) && !is_ledger(m))
            .cloned()
            .collect();
        if raw.is_empty() {
            continue;
        }
        // Whole sentences where they fit, the items alone where they do not.
        let mut summary = summarise(&raw, *a, b - 1, LONG_SENTENCE);
        if tokenizer.count(&summary) > opts.slot {
            summary = summarise(&raw, *a, b - 1, 0);
        }
        if tokenizer.count(&summary) > opts.slot {
            return unchanged(
                Decision::Refuse,
                Some(format!(
                    "a summary came out over the {}-token slot",
                    opts.slot
                )),
                intact,
            );
        }
        window.push(Message::User { text: summary });
    }
    window.push(Message::User {
        text: ledger.render(),
    });
    window.extend(working[cut..].iter().cloned());
    let checked = survival(span, &window, &ledger);
    if checked.ok() {
        // Provenance completes once the checks passed: when, and what was checked.
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        for m in window.iter_mut() {
            if let Message::User { text } = m {
                if text.starts_with(SUMMARY_MARK) && !text.contains("; checked:") {
                    *text = text.replacen(
                        "]\n",
                        &format!("; checked: ledger, items, effect states; at {at} ms]\n"),
                        1,
                    );
                }
            }
        }
    }
    if !checked.ok() {
        let reason = format!(
            "survival check failed: {} item(s) missing",
            checked.missing.len()
        );
        return unchanged(Decision::Refuse, Some(reason), checked);
    }
    Compacted {
        decision: if decision == FloorDecision::Split {
            Decision::Split
        } else {
            Decision::Compact
        },
        tokens_before,
        tokens_after: tokens(&window, tokenizer),
        cleared_tokens,
        window,
        ledger: ledger.pins().to_vec(),
        survival: checked,
        reason: None,
    }
}
