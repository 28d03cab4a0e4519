//! The default summariser: deterministic and extractive, the test oracle for any other. It
//! folds a span of messages into the three sections, keeping verbatim every sentence that
//! carries an irreducible item (or the item alone when its sentence is long), the questions
//! asked, and the binding sentences; then the survival check says what, if anything, it lost.

use std::fmt::Write as _;

use super::floor::irreducible;
use super::ledger::Ledger;
use crate::model::Message;

/// The summariser's name and version, recorded in every summary's provenance.
pub const SUMMARISER: &str = "extractive-1";

/// Longest sentence kept whole by default; a longer one contributes its items alone.
pub const LONG_SENTENCE: usize = 120;

/// The text of one message, as the summariser reads it.
pub fn message_text(m: &Message) -> String {
    match m {
        Message::User { text } => text.clone(),
        Message::Assistant { text, tool_calls } => {
            let mut out = text.clone();
            for c in tool_calls {
                let _ = write!(out, "\n{}({})", c.name, c.arguments);
            }
            out
        }
        Message::Tool { content, .. } => content.clone(),
    }
}

fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split(['\n'])
        .flat_map(|line| line.split_inclusive(". "))
        .map(str::trim)
        .filter(|s| s.chars().any(char::is_alphanumeric))
}

/// Summarises `span` (messages `first..=last` of the window) into the three sections,
/// keeping whole the sentences of at most `long` bytes that carry an irreducible item, and
/// the items alone of longer ones (`long` 0: items only, the most compact form).
pub fn summarise(span: &[Message], first: usize, last: usize, long: usize) -> String {
    let text: String = span.iter().map(message_text).collect::<Vec<_>>().join("\n");
    let items = irreducible(&text);
    let mut covered: Vec<bool> = vec![false; items.len()];
    let mut settled: Vec<String> = Vec::new();
    let mut questions: Vec<String> = Vec::new();
    for s in sentences(&text) {
        if s.ends_with('?') && !questions.iter().any(|q| q == s) {
            questions.push(s.to_string());
        }
        let fresh: Vec<usize> = (0..items.len())
            .filter(|i| !covered[*i] && s.contains(items[*i].as_str()))
            .collect();
        if fresh.is_empty() {
            continue;
        }
        if s.len() <= long {
            settled.push(s.to_string());
            for (i, item) in items.iter().enumerate() {
                if s.contains(item.as_str()) {
                    covered[i] = true;
                }
            }
        } else {
            for i in fresh {
                settled.push(items[i].clone());
                covered[i] = true;
            }
        }
    }
    let constraints = crate::context::binding_sentences(&text);
    let mut out = format!(
        "[compacted: messages {first}..={last} folded by {SUMMARISER}; the raw turns stay in the run's event log]\n## Settled conclusions\n"
    );
    for s in &settled {
        let _ = writeln!(out, "- {s}");
    }
    out.push_str("## Open items\n");
    for q in &questions {
        let _ = writeln!(out, "- {q}");
    }
    out.push_str("## Hard constraints\n");
    if constraints.is_empty() {
        out.push_str("- none\n");
    }
    for c in &constraints {
        let _ = writeln!(out, "- {c}");
    }
    out
}

/// What a compaction kept, checked after the fact; failures are reported, never silent.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Survival {
    /// The ledger appears verbatim in the new window.
    pub ledger_verbatim: bool,
    /// Irreducible items of the folded span found neither in a summary nor in the ledger.
    pub missing: Vec<String>,
    /// Effect states (`outcome_unknown`, …) of the span, each still present.
    pub effect_states_kept: bool,
}

impl Survival {
    /// Whether every check passed.
    pub fn ok(&self) -> bool {
        self.ledger_verbatim && self.missing.is_empty() && self.effect_states_kept
    }
}

/// Checks a compacted window against the span it folded and the ledger: every pin verbatim,
/// every irreducible item of the span somewhere, every effect state of the span still there.
pub fn survival(span: &[Message], window: &[Message], ledger: &Ledger) -> Survival {
    let after: String = window
        .iter()
        .map(message_text)
        .collect::<Vec<_>>()
        .join("\n");
    let before: String = span.iter().map(message_text).collect::<Vec<_>>().join("\n");
    let missing = irreducible(&before)
        .into_iter()
        .filter(|item| !after.contains(item.as_str()))
        .collect();
    let states = [
        "proposed",
        "awaiting_approval",
        "executing",
        "outcome_unknown",
        "reconciled",
    ];
    Survival {
        ledger_verbatim: ledger
            .pins()
            .iter()
            .all(|p| after.contains(p.text.as_str())),
        missing,
        effect_states_kept: states
            .iter()
            .filter(|s| before.contains(*s))
            .all(|s| after.contains(s)),
    }
}
