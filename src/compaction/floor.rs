//! The floor of a span: the items a summary of it may never drop — quoted strings, numbers and
//! versions, paths, identifiers, error literals, binding sentences — and the tokens they need
//! plus a margin. A summary slot below the floor means split or refuse, never a shorter summary.

use std::sync::OnceLock;

use regex::Regex;

use crate::context::{binding_sentences, Tokenizer};

/// Margin over the irreducible tokens, in percent.
pub const DEFAULT_MARGIN_PERCENT: usize = 20;

/// The irreducible items of `text`, verbatim, in order of first appearance, without repeats.
pub fn irreducible(text: &str) -> Vec<String> {
    static ITEMS: OnceLock<Regex> = OnceLock::new();
    let re = ITEMS.get_or_init(|| {
        Regex::new(concat!(
            r#""[^"\n]{1,200}"|`[^`\n]{1,200}`"#,          // quoted strings
            r"|\b[A-Z][A-Z0-9_]{2,}\b",                    // error literals, CONSTANTS, ENOENT
            r"|(?:[A-Za-z0-9_.\-]+)?/[A-Za-z0-9_.\-/]+",   // paths
            r"|\bv?\d+(?:\.\d+)+(?:[-+][A-Za-z0-9.]+)?\b", // versions
            r"|[$€£]?\b\d+(?:[.,]\d+)*\b%?",               // numbers, amounts
            r"|\b[a-z]+(?:_[a-z0-9]+)+\b|\b[a-z]+(?:[A-Z][a-z0-9]+)+\b|\b(?:[A-Z][a-z0-9]+){2,}\b", // identifiers
        ))
        .expect("static regex")
    });
    let mut out: Vec<String> = Vec::new();
    for sentence in binding_sentences(text) {
        if !out.contains(&sentence) {
            out.push(sentence);
        }
    }
    for m in re.find_iter(text) {
        let item = m.as_str().to_string();
        if !out.iter().any(|o| o == &item || o.contains(&item)) {
            out.push(item);
        }
    }
    out
}

/// The floor of a span: the tokens of its irreducible items plus `margin_percent`.
pub fn floor(text: &str, tokenizer: &dyn Tokenizer, margin_percent: usize) -> usize {
    let items = irreducible(text);
    let tokens: usize = items.iter().map(|i| tokenizer.count(i) + 1).sum();
    tokens + tokens * margin_percent / 100
}

/// What a summary slot allows, decided before any summarising.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloorDecision {
    /// The slot holds the floor: compact.
    Compact,
    /// The span is too big for one slot but splits into parts whose floors fit.
    Split,
    /// Not even a part fits: refuse, leaving the window as it was.
    Refuse,
}

/// Decides from the span's floor and the parts' floors (each part's floor, in order) against
/// the slot.
pub fn decide(span_floor: usize, part_floors: &[usize], slot: usize) -> FloorDecision {
    if span_floor <= slot {
        FloorDecision::Compact
    } else if part_floors.len() > 1 && part_floors.iter().all(|f| *f <= slot) {
        FloorDecision::Split
    } else {
        FloorDecision::Refuse
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Estimate;

    #[test]
    fn irreducible_items_are_found_verbatim() {
        let text = "Never touch /migrations. The regex `^v[0-9]+$` must match; open failed with ENOENT on /etc/app.conf; pinned serde 1.0.197 then reverted; refund $42.50 on order A-1234 via refund_order.";
        let items = irreducible(text);
        for want in [
            "Never touch /migrations.",
            "`^v[0-9]+$`",
            "ENOENT",
            "/etc/app.conf",
            "1.0.197",
            "refund_order",
            "42.50",
        ] {
            assert!(
                items.iter().any(|i| i.contains(want)),
                "{want} in {items:?}"
            );
        }
        assert!(floor(text, &Estimate, 20) > floor(text, &Estimate, 0));
    }

    #[test]
    fn the_decision_is_made_from_floors_alone() {
        assert_eq!(decide(100, &[60, 40], 120), FloorDecision::Compact);
        assert_eq!(decide(200, &[90, 110], 120), FloorDecision::Split);
        assert_eq!(decide(200, &[190, 10], 120), FloorDecision::Refuse);
        assert_eq!(decide(200, &[200], 120), FloorDecision::Refuse);
    }
}
