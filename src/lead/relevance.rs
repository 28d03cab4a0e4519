//! Relevance, pure: how much a conclusion says about what the run searched for. Every pattern
//! the subagents searched weighs by how rare it was across the whole tree (their observation
//! logs hold each search's match count); a conclusion scores the weights of the patterns its
//! text matches. The lead orders its settled conclusions by this, most telling first.

use std::collections::BTreeMap;

use regex::{Regex, RegexBuilder};

#[cfg(test)]
use crate::source::{Observation, ObservationLog};

/// The pattern that counts every line (what a search for it matched is the tree's size).
const EVERY_LINE: &str = "^";

/// Searched patterns with their weights.
pub(crate) struct Rarity {
    patterns: Vec<(Regex, f64)>,
}

impl Rarity {
    /// Weighs every pattern searched in `logs`: BM25's idf with lines as documents, the line
    /// count taken from searches for `^` when there are any.
    #[cfg(test)]
    pub(crate) fn from_logs(logs: &[&ObservationLog]) -> Rarity {
        Rarity::from_counts(logs.iter().flat_map(|log| {
            log.entries().iter().filter_map(|o| match o {
                Observation::Searched {
                    pattern, matches, ..
                } => Some((pattern.as_str(), *matches)),
                _ => None,
            })
        }))
    }

    /// Weighs every pattern of `searches` (a pattern and how many lines it matched, per
    /// search) the same way.
    pub(crate) fn from_counts<'a>(searches: impl IntoIterator<Item = (&'a str, usize)>) -> Rarity {
        let mut matches: BTreeMap<&str, usize> = BTreeMap::new();
        for (pattern, m) in searches {
            *matches.entry(pattern).or_default() += m;
        }
        let lines = matches
            .get(EVERY_LINE)
            .copied()
            .unwrap_or_else(|| matches.values().sum::<usize>())
            .max(1) as f64;
        let patterns = matches
            .into_iter()
            .filter(|(p, m)| *m > 0 && *p != EVERY_LINE && !p.starts_with("glob:"))
            .filter_map(|(p, m)| {
                let re = RegexBuilder::new(p)
                    .case_insensitive(true)
                    .size_limit(1 << 20)
                    .build()
                    .ok()?;
                let m = m as f64;
                let weight = (1.0 + (lines - m + 0.5).max(0.5) / (m + 0.5)).ln();
                Some((re, weight))
            })
            .collect();
        Rarity { patterns }
    }

    /// The weight of the searched patterns `text` matches.
    ///
    /// The rarest match counts fully, the next half, the rest a quarter: a claim is not more
    /// telling for repeating common words.
    pub(crate) fn score(&self, text: &str) -> f64 {
        let mut weights: Vec<f64> = self
            .patterns
            .iter()
            .filter(|(re, _)| re.is_match(text))
            .map(|(_, w)| *w)
            .collect();
        weights.sort_by(|a, b| b.total_cmp(a));
        weights
            .iter()
            .enumerate()
            .map(|(i, w)| match i {
                0 => *w,
                1 => w / 2.0,
                _ => w / 4.0,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn searched(pattern: &str, matches: usize) -> Observation {
        Observation::Searched {
            call_id: "c".into(),
            pattern: pattern.into(),
            scope: vec![".".into()],
            matches,
            files_searched: 1,
            files_skipped: 0,
            case_insensitive: false,
            fixed_string: false,
            not_searched: 0,
            not_searched_names: Vec::new(),
        }
    }

    #[test]
    fn rare_patterns_weigh_more() {
        let mut a = ObservationLog::default();
        let mut b = ObservationLog::default();
        a.record([
            searched("^", 5000),
            searched("header", 900),
            searched("sensitive", 3),
        ]);
        b.record([
            searched("^", 5000),
            searched("header", 100),
            searched("sensitive", 0),
        ]);
        let rarity = Rarity::from_logs(&[&a, &b]);
        let rare = rarity.score("set_sensitive marks the value");
        let common = rarity.score("the header map");
        assert!(rare > 2.0 * common, "{rare} vs {common}");
        assert_eq!(rarity.score("nothing searched"), 0.0);
    }
}
