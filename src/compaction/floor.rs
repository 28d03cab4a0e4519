//! The floor of a span: the items a summary of it may never drop — quoted strings, numbers and
//! versions, paths, identifiers, error literals, binding sentences — and the tokens they need
//! plus a margin. A summary slot below the floor means split or refuse, never a shorter summary.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use regex::Regex;

use crate::text::{binds, sentences};
use crate::tokens::Tokenizer;

/// Margin over the irreducible tokens, in percent.
pub const DEFAULT_MARGIN_PERCENT: usize = 20;

/// The irreducible items of `text`, verbatim, in order of first appearance, without repeats:
/// its binding sentences and its questions whole, then every other item that does not stand
/// inside one of them. Linear in the text.
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
    let mut seen: HashSet<&str> = HashSet::new();
    // Byte ranges of the binding sentences (slices of `text`), in order.
    let mut binding: Vec<(usize, usize)> = Vec::new();
    for sentence in sentences(text)
        .into_iter()
        .filter(|s| binds(s) || s.ends_with('?'))
    {
        let start = sentence.as_ptr() as usize - text.as_ptr() as usize;
        binding.push((start, start + sentence.len()));
        if seen.insert(sentence) {
            out.push(sentence.to_string());
        }
    }
    for m in re.find_iter(text) {
        let first_ending_after = binding.partition_point(|(_, end)| *end <= m.start());
        let inside = binding
            .get(first_ending_after)
            .is_some_and(|(start, end)| *start <= m.start() && m.end() <= *end);
        if !inside && seen.insert(m.as_str()) {
            out.push(m.as_str().to_string());
        }
    }
    out
}

/// What one item costs in a summary: its tokens, its bullet and its line end.
fn item_tokens(item: &str, tokenizer: &dyn Tokenizer) -> usize {
    tokenizer.count(item) + 2
}

/// The floor of a span: the tokens of its irreducible items as a summary lists them, plus
/// `margin_percent`.
pub fn floor(text: &str, tokenizer: &dyn Tokenizer, margin_percent: usize) -> usize {
    let items = irreducible(text);
    let tokens: usize = items.iter().map(|i| item_tokens(i, tokenizer)).sum();
    with_margin(tokens, margin_percent)
}

fn with_margin(tokens: usize, margin_percent: usize) -> usize {
    tokens + tokens * margin_percent / 100
}

/// Floors of ranges of a span's messages, from each message's items counted once: the floor
/// of `a..b` is that of the messages' text joined (items never cross a message), so a split
/// can grow a part one message at a time at the cost of that message's items.
pub(crate) struct Floors {
    /// Each message's items, with their tokens (plus one).
    items: Vec<Vec<(String, usize)>>,
    margin_percent: usize,
}

impl Floors {
    /// The items of each text (a message's, or empty for one that does not count).
    pub(crate) fn new(
        texts: &[Option<String>],
        tokenizer: &dyn Tokenizer,
        margin_percent: usize,
    ) -> Floors {
        let mut tokens: HashMap<String, usize> = HashMap::new();
        let items = texts
            .iter()
            .map(|t| {
                t.as_deref()
                    .map(irreducible)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|item| {
                        let n = *tokens
                            .entry(item.clone())
                            .or_insert_with(|| item_tokens(&item, tokenizer));
                        (item, n)
                    })
                    .collect()
            })
            .collect();
        Floors {
            items,
            margin_percent,
        }
    }

    /// The floor of messages `a..b`.
    pub(crate) fn of(&self, a: usize, b: usize) -> usize {
        let mut part = Part::default();
        for i in a..b {
            part.add(self, i);
        }
        part.floor(self)
    }

    /// The items of messages `a..b`, each once, in order.
    pub(crate) fn items(&self, a: usize, b: usize) -> Vec<String> {
        let mut seen = HashSet::new();
        self.items[a..b]
            .iter()
            .flatten()
            .filter(|(item, _)| seen.insert(item.as_str()))
            .map(|(item, _)| item.clone())
            .collect()
    }
}

/// A part of a span being grown message by message, its floor kept as it grows.
#[derive(Default)]
pub(crate) struct Part<'f> {
    seen: HashSet<&'f str>,
    tokens: usize,
}

impl<'f> Part<'f> {
    /// Adds message `i`'s items not already in the part.
    pub(crate) fn add(&mut self, floors: &'f Floors, i: usize) {
        for (item, n) in &floors.items[i] {
            if self.seen.insert(item.as_str()) {
                self.tokens += n;
            }
        }
    }

    /// The part's floor so far.
    pub(crate) fn floor(&self, floors: &Floors) -> usize {
        with_margin(self.tokens, floors.margin_percent)
    }
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
    use crate::tokens::Estimate;

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
