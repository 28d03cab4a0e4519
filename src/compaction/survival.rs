//! Survival checks. Before anything is summarised, the facts a compaction must keep are taken
//! from the raw window on a path of their own — the ledger's pins, the effect states the span
//! names, the irreducible items of the span's turns and of cleared results that cannot be
//! reread, earlier summaries (carried verbatim), and the must-keep facts a caller passes.
//! After the compaction the new window is searched for each (one pass, Aho-Corasick); a
//! summariser that drops one fails the check, and the window is left as it was.

use aho_corasick::AhoCorasick;
use serde::{Deserialize, Serialize};

use super::ledger::Ledger;
use super::summary::message_text;
use crate::text::one_line;
use crate::transcript::Message;

/// Effect states a window may name; each one named before must be named after.
const EFFECT_STATES: [&str; 5] = [
    "proposed",
    "awaiting_approval",
    "executing",
    "outcome_unknown",
    "reconciled",
];

/// What a compaction must keep, taken from the raw window before it is compacted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// The ledger's pins, verbatim.
    pub pins: Vec<String>,
    /// Irreducible items, earlier summaries and must-keep facts, verbatim.
    pub items: Vec<String>,
    /// Effect states the folded span names.
    pub states: Vec<&'static str>,
}

impl Facts {
    /// Facts of a compaction: `ledger`'s pins; `items` (taken by the caller from the raw
    /// span and from the results it cleared); the effect states `span_text` names.
    pub fn new(ledger: &Ledger, items: Vec<String>, span_text: &str) -> Facts {
        Facts {
            pins: ledger.pins().iter().map(|p| p.text.clone()).collect(),
            items,
            states: EFFECT_STATES
                .iter()
                .copied()
                .filter(|s| span_text.contains(s))
                .collect(),
        }
    }
}

/// What a compaction kept, checked after the fact; failures are reported, never silent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Survival {
    /// The ledger appears verbatim in the new window.
    pub ledger_verbatim: bool,
    /// Facts of the folded span (its irreducible items, what cleared results showed that
    /// cannot be reread, earlier summaries, must-keep facts) found nowhere in the new window.
    pub missing: Vec<String>,
    /// Effect states (`outcome_unknown`, …) of the span, each still present.
    pub effect_states_kept: bool,
}

impl Survival {
    /// Whether every check passed.
    pub fn ok(&self) -> bool {
        self.ledger_verbatim && self.missing.is_empty() && self.effect_states_kept
    }

    /// Nothing was folded: nothing could be lost.
    pub(crate) fn intact() -> Survival {
        Survival {
            ledger_verbatim: true,
            missing: Vec::new(),
            effect_states_kept: true,
        }
    }
}

/// Which of `needles` occur in `haystack`, in one pass.
fn found(needles: &[String], haystack: &str) -> Vec<bool> {
    let mut seen = vec![false; needles.len()];
    if let Ok(finder) = AhoCorasick::new(needles) {
        for m in finder.find_overlapping_iter(haystack) {
            seen[m.pattern().as_usize()] = true;
        }
    }
    for (i, n) in needles.iter().enumerate() {
        if n.is_empty() {
            seen[i] = true;
        }
    }
    seen
}

/// Checks a compacted window (and `outside`, text the caller keeps beside it verbatim) against
/// the facts taken before compacting. Whitespace runs count as one space on both sides.
pub fn survival(facts: &Facts, window: &[Message], outside: &str) -> Survival {
    let mut after: String = window
        .iter()
        .map(message_text)
        .collect::<Vec<_>>()
        .join("\n");
    after.push('\n');
    after.push_str(outside);
    // A fact survives however its line breaks fall (a pin is its sentence, a wrapped line
    // joined): whitespace runs count as one space on both sides.
    let after = one_line(&after);
    let fold_all = |texts: &[String]| texts.iter().map(|t| one_line(t)).collect::<Vec<_>>();
    let items = found(&fold_all(&facts.items), &after);
    let pins = found(&fold_all(&facts.pins), &after);
    Survival {
        ledger_verbatim: pins.iter().all(|p| *p),
        missing: facts
            .items
            .iter()
            .zip(items)
            .filter(|(_, kept)| !kept)
            .map(|(item, _)| item.clone())
            .collect(),
        effect_states_kept: facts.states.iter().all(|s| after.contains(s)),
    }
}
