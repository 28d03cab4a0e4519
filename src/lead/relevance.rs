//! Relevance, pure: how much a conclusion says about what the run searched for. Every pattern
//! the subagents searched weighs by how rare it was across the whole tree (their observation
//! logs hold each search's match count); a conclusion scores the weights of the patterns its
//! text matches. The lead orders its settled conclusions by this, most telling first.

use crate::source::SearchKind;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use regex::{Regex, RegexBuilder};
use regex_syntax::hir::{Hir, HirKind};

#[cfg(test)]
use crate::source::{Observation, ObservationLog};

/// The pattern that counts every line (what a search for it matched is the tree's size).
const EVERY_LINE: &str = "^";

/// Searched patterns with their weights. Each pattern is compiled only when a text holds one
/// of its needles (literals every match of it holds): a run whose subagents each searched a
/// name of their own (`\bload_config_17\s*\(`) scores every claim against the few patterns
/// it could match, not against every pattern of the run.
pub(crate) struct Rarity {
    patterns: Vec<Weighed>,
    /// The patterns with no needle: tried on every text.
    always: Vec<usize>,
    /// Every needle, and the patterns each belongs to.
    needles: Option<AhoCorasick>,
    owners: Vec<Vec<usize>>,
}

/// A searched pattern, its weight, and its regex once one is needed — kept only for a
/// pattern more than one search used (a compiled regex holds tens of KB; a subagent's own
/// name, searched once, is compiled for the claims that may hold it and dropped).
struct Weighed {
    pattern: String,
    weight: f64,
    shared: bool,
    regex: OnceLock<Option<Regex>>,
}

impl Weighed {
    fn compile(&self) -> Option<Regex> {
        RegexBuilder::new(&self.pattern)
            .case_insensitive(true)
            .size_limit(1 << 20)
            .build()
            .ok()
    }

    fn is_match(&self, text: &str) -> bool {
        if !self.shared {
            return self.compile().is_some_and(|re| re.is_match(text));
        }
        self.regex
            .get_or_init(|| self.compile())
            .as_ref()
            .is_some_and(|re| re.is_match(text))
    }
}

/// The shortest needle worth a prefilter; a pattern whose needles are shorter is always tried.
const MIN_NEEDLE: usize = 3;

/// Literals at least one of which every match of `hir` holds, or None when no such set is
/// known: a literal; a concatenation's best set (its shortest needle longest); every branch's
/// set of an alternation; a group's or a repetition's (of at least one) set.
fn needles(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    match hir.kind() {
        HirKind::Literal(lit) => Some(vec![lit.0.to_vec()]),
        HirKind::Capture(c) => needles(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => needles(&r.sub),
        HirKind::Concat(parts) => parts
            .iter()
            .filter_map(needles)
            .max_by_key(|set| set.iter().map(Vec::len).min().unwrap_or(0)),
        HirKind::Alternation(branches) => {
            let mut all = Vec::new();
            for branch in branches {
                all.extend(needles(branch)?);
            }
            Some(all)
        }
        _ => None,
    }
}

/// A pattern's needles when a prefilter may use them: each ASCII (matched in either case, as
/// the pattern is) and at least [`MIN_NEEDLE`] bytes long.
fn usable_needles(pattern: &str) -> Option<Vec<Vec<u8>>> {
    let set = needles(&regex_syntax::parse(pattern).ok()?)?;
    set.iter()
        .all(|n| n.len() >= MIN_NEEDLE && n.is_ascii())
        .then_some(set)
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
        // Per pattern: the lines it matched, and how many searches used it.
        let mut matches: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (pattern, m) in searches {
            let entry = matches.entry(pattern).or_default();
            entry.0 += m;
            entry.1 += 1;
        }
        let lines = matches
            .get(EVERY_LINE)
            .map(|(m, _)| *m)
            .unwrap_or_else(|| matches.values().map(|(m, _)| m).sum::<usize>())
            .max(1) as f64;
        let patterns: Vec<Weighed> = matches
            .into_iter()
            .filter(|(p, (m, _))| {
                *m > 0 && *p != EVERY_LINE && SearchKind::of(p).0 == SearchKind::Lines
            })
            .map(|(p, (m, searches))| {
                let m = m as f64;
                Weighed {
                    pattern: p.to_string(),
                    weight: (1.0 + (lines - m + 0.5).max(0.5) / (m + 0.5)).ln(),
                    shared: searches > 1,
                    regex: OnceLock::new(),
                }
            })
            .collect();
        let mut always = Vec::new();
        let mut by_needle: BTreeMap<Vec<u8>, Vec<usize>> = BTreeMap::new();
        for (i, p) in patterns.iter().enumerate() {
            match usable_needles(&p.pattern) {
                Some(set) => {
                    for needle in set {
                        let owners = by_needle.entry(needle.to_ascii_lowercase()).or_default();
                        if owners.last() != Some(&i) {
                            owners.push(i);
                        }
                    }
                }
                None => always.push(i),
            }
        }
        let (keys, owners): (Vec<Vec<u8>>, Vec<Vec<usize>>) = by_needle.into_iter().unzip();
        let needles = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .build(&keys)
            .ok();
        if needles.is_none() {
            // No prefilter: every pattern is tried.
            always = (0..patterns.len()).collect();
        }
        Rarity {
            patterns,
            always,
            needles,
            owners,
        }
    }

    /// The weight of the searched patterns `text` matches.
    ///
    /// The rarest match counts fully, the next half, the rest a quarter: a claim is not more
    /// telling for repeating common words.
    #[cfg(test)]
    pub(crate) fn score(&self, text: &str) -> f64 {
        Rarity::sum(&self.weights(text))
    }

    /// [`Rarity::score`] of weights already found (heaviest first).
    pub(crate) fn sum(weights: &[f64]) -> f64 {
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

    /// The same weights, every pattern outside `own` (a follow-up's names) weighing at most
    /// what the heaviest of `own` (the question's own terms) weighs: a follow-up's rare name
    /// does not make the question's own subject look common.
    pub(crate) fn capped(mut self, own: &std::collections::BTreeSet<&str>) -> Rarity {
        let cap = self
            .patterns
            .iter()
            .filter(|p| own.contains(p.pattern.as_str()))
            .map(|p| p.weight)
            .fold(0.0, f64::max);
        if cap > 0.0 {
            for p in self.patterns.iter_mut() {
                if !own.contains(p.pattern.as_str()) {
                    p.weight = p.weight.min(cap);
                }
            }
        }
        self
    }

    /// The weights of the searched patterns `text` matches, heaviest first.
    pub(crate) fn weights(&self, text: &str) -> Vec<f64> {
        let mut weights: Vec<f64> = self
            .candidates(text)
            .into_iter()
            .filter_map(|i| self.patterns.get(i))
            .filter(|p| p.is_match(text))
            .map(|p| p.weight)
            .collect();
        weights.sort_by(|a, b| b.total_cmp(a));
        weights
    }

    /// The patterns each line of `text` matches: every pattern that may match is compiled
    /// once for the whole text, not once a line (nor once a word of a line).
    pub(crate) fn lines_matched(&self, text: &str) -> LineMatches<'_> {
        let lines: Vec<&str> = text.lines().collect();
        let mut per_line: Vec<Vec<usize>> = vec![Vec::new(); lines.len()];
        let mut compiled: Vec<(usize, Regex)> = Vec::new();
        for i in self.candidates(text) {
            let Some(p) = self.patterns.get(i) else {
                continue;
            };
            let re = if p.shared {
                p.regex.get_or_init(|| p.compile()).clone()
            } else {
                p.compile()
            };
            let Some(re) = re else { continue };
            for (hits, line) in per_line.iter_mut().zip(&lines) {
                if re.is_match(line) {
                    hits.push(i);
                }
            }
            compiled.push((i, re));
        }
        LineMatches {
            rarity: self,
            per_line,
            compiled,
        }
    }

    /// The patterns that may match `text`: those without needles, and the owners of every
    /// needle it holds.
    fn candidates(&self, text: &str) -> Vec<usize> {
        let mut candidates: Vec<usize> = self.always.clone();
        if let Some(needles) = &self.needles {
            for m in needles.find_overlapping_iter(text) {
                if let Some(owners) = self.owners.get(m.pattern().as_usize()) {
                    candidates.extend(owners);
                }
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        candidates
    }
}

/// What [`Rarity::lines_matched`] found: the patterns each line matches, compiled.
pub(crate) struct LineMatches<'a> {
    rarity: &'a Rarity,
    per_line: Vec<Vec<usize>>,
    compiled: Vec<(usize, Regex)>,
}

impl LineMatches<'_> {
    /// The heaviest weight line `n` matches (0: none, or no such line).
    pub(crate) fn weight(&self, n: usize) -> f64 {
        self.per_line.get(n).map_or(0.0, |hits| {
            hits.iter()
                .filter_map(|i| self.rarity.patterns.get(*i))
                .map(|p| p.weight)
                .fold(0.0, f64::max)
        })
    }

    /// Whether `word`, a piece of line `n`, holds a pattern that line matches: a word can
    /// hold no searched pattern its line does not.
    pub(crate) fn holds(&self, n: usize, word: &str) -> bool {
        self.holding(n, word).is_some()
    }

    /// The first pattern line `n` matches that `word`, a piece of it, holds.
    pub(crate) fn holding(&self, n: usize, word: &str) -> Option<usize> {
        self.per_line.get(n)?.iter().copied().find(|i| {
            self.compiled
                .iter()
                .find(|(j, _)| j == i)
                .is_some_and(|(_, re)| re.is_match(word))
        })
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

    /// The prefilter changes no score: every claim scores as if every pattern were tried
    /// (the reference here tries them all, one regex at a time).
    #[test]
    fn needles_only_skip_patterns_that_cannot_match() {
        let patterns = [
            r"\bload_config_17\s*\(",
            r"config[_\-\s./:]{0,2}load|load[_\-\s./:]{0,2}config",
            r"(?:(?:\b|_)retr(?:y|ie)|(?-i:[a-z0-9]R)etr(?:y|ie))",
            r"x?y*",
            r"ab|abcdef",
            r"(?i)MiXeD",
            r"[0-9]+ms",
            r"(?:config)|(?:\b|_)cfg(?:\b|_|(?-i:[A-Z]))",
        ];
        let rarity = Rarity::from_counts(patterns.iter().enumerate().map(|(i, p)| (*p, i + 1)));
        let texts = [
            "`pub fn load_config_17(path)` loads it",
            "LOAD_CONFIG_17 (",
            "the Config is loaded by load-config",
            "MAX_RETRIES and maxRetries",
            "retro",
            "abc mixed 30ms CFG_x",
            "",
        ];
        for text in texts {
            let want: f64 = {
                let mut weights: Vec<f64> = rarity
                    .patterns
                    .iter()
                    .filter(|p| {
                        RegexBuilder::new(&p.pattern)
                            .case_insensitive(true)
                            .build()
                            .unwrap()
                            .is_match(text)
                    })
                    .map(|p| p.weight)
                    .collect();
                weights.sort_by(|a, b| b.total_cmp(a));
                weights
                    .iter()
                    .enumerate()
                    .map(|(i, w)| w / [1.0, 2.0, 4.0][i.min(2)])
                    .sum()
            };
            assert_eq!(rarity.score(text), want, "{text}");
        }
        // Only the patterns with no needle of three letters are tried on every text.
        let mut always: Vec<&str> = rarity
            .always
            .iter()
            .map(|i| rarity.patterns[*i].pattern.as_str())
            .collect();
        always.sort_unstable();
        assert_eq!(always, ["(?i)MiXeD", "[0-9]+ms", "ab|abcdef", "x?y*"]);
    }

    #[test]
    fn each_line_gets_the_heaviest_weight_it_matches_and_its_words_are_checked() {
        let rarity = Rarity::from_counts([("^", 1000), ("retr", 2), ("config", 400)]);
        let m = rarity.lines_matched("fn retry_config()\nconfig only\nnothing\n");
        let w: Vec<f64> = (0..3).map(|n| m.weight(n)).collect();
        assert!(w[0] > w[1] && w[1] > 0.0 && w[2] == 0.0, "{w:?}");
        assert_eq!(w[0], rarity.weights("fn retry_config()")[0]);
        assert!(m.holds(0, "retry_config") && !m.holds(0, "fn"));
        assert!(
            !m.holds(2, "retry"),
            "a line that matched nothing holds nothing"
        );
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
