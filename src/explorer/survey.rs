//! The survey: after the count greps, what the explorer knows of its scope — each term's
//! weight (rarer on fewer lines weighs more), where it occurs, which files to read.

use std::collections::BTreeMap;

use regex::{Regex, RegexBuilder};
use serde_json::Value;

use super::rank;
use super::terms::{self, Term, TermKind};
use super::{grep_output_mode, Exchange, CONTENT_MATCHES, MAX_TERMS, TOP_FILES};

/// What the explorer knows after its count greps: each term's weight and hit files.
pub(super) struct Survey {
    pub(super) terms: Vec<Term>,
    pub(super) compiled: Vec<Regex>,
    pub(super) weights: Vec<f64>,
    /// Per term: file -> count.
    pub(super) counts: Vec<BTreeMap<String, usize>>,
    /// Per term: the call that counted it.
    pub(super) count_calls: Vec<Option<String>>,
    pub(super) files_searched: usize,
    /// Files of the scope the counting searches could not read (binary, too large).
    pub(super) files_skipped: usize,
    /// Entries of the scope the counting greps left out (hidden, ignored, links).
    pub(super) not_searched: usize,
    /// Lines in the scope (from counting `^`), the collection each term's rarity is
    /// measured against: every line is a document.
    pub(super) lines: usize,
}

/// Counting this pattern counts the lines of every file.
pub(super) const EVERY_LINE: &str = "^";

impl Survey {
    pub(super) fn new(question: &str, done: &[Exchange<'_>]) -> Survey {
        let mut terms = terms::terms(question);
        terms.truncate(MAX_TERMS);
        // On a line, a term is recognised where a word or an identifier part starts.
        let compiled = terms
            .iter()
            .map(|t| {
                RegexBuilder::new(&terms::mention_pattern(t))
                    .case_insensitive(true)
                    .build()
                    .unwrap_or_else(|_| Regex::new(&regex::escape(&t.label)).expect("escaped"))
            })
            .collect();
        let mut counts = vec![BTreeMap::new(); terms.len()];
        let mut count_calls = vec![None; terms.len()];
        let mut files_searched = 0;
        let mut files_skipped = 0;
        let mut not_searched = 0;
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
            files_skipped = files_skipped.max(rank::files_skipped(ex.content));
            not_searched = not_searched.max(rank::not_searched(ex.content));
        }
        let n = lines.max(files_searched).max(1) as f64;
        let weights = terms
            .iter()
            .zip(&counts)
            .map(|(t, c)| {
                // A compound that never occurs was only a guess at a spelling: its words
                // still count on their own.
                if c.is_empty() && matches!(t.kind, TermKind::Compound | TermKind::Literal) {
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
            files_skipped,
            not_searched,
            lines,
        }
    }

    pub(super) fn counted(&self) -> bool {
        self.count_calls.iter().any(Option::is_some)
    }

    /// Files ranked by the weight of the terms they hold.
    pub(super) fn top_files(&self) -> Vec<String> {
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
    pub(super) fn grep_terms(&self, files: &[String]) -> Vec<usize> {
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

    /// When the question gives examples and not one of their terms occurs in the scope: their
    /// labels. Such a scope does not hold what the question asks about.
    pub(super) fn examples_absent(&self) -> Option<Vec<usize>> {
        let examples: Vec<usize> = (0..self.terms.len())
            .filter(|t| self.terms[*t].example)
            .collect();
        let none_found = examples.iter().all(|t| self.counts[*t].is_empty());
        (!examples.is_empty() && none_found && self.counted()).then_some(examples)
    }

    pub(super) fn present_terms(&self) -> Vec<usize> {
        (0..self.terms.len())
            .filter(|t| !self.counts[*t].is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A term's weight is BM25's idf with the scope's lines as documents: the term's prior
    /// times ln(1 + (N − n + ½)/(n + ½)), N the lines (from counting `^`), n the lines it is on.
    #[test]
    fn a_term_weighs_its_rarity_over_lines() {
        let question = "where is the retry delay?";
        let terms = terms::terms(question);
        let count = |pattern: &str, content: &'static str| (pattern.to_string(), content);
        let mut greps = vec![count(
            EVERY_LINE,
            "a.rs:900\nb.rs:100\n[1000 matching lines]",
        )];
        for t in &terms {
            let content = match t.label.as_str() {
                "retry" => "a.rs:9\nb.rs:1",
                "delay" => "a.rs:1",
                _ => "no matches",
            };
            greps.push(count(&t.pattern, content));
        }
        let args: Vec<Value> = greps
            .iter()
            .map(|(p, _)| serde_json::json!({"pattern": p, "output": "count"}))
            .collect();
        let done: Vec<Exchange<'_>> = greps
            .iter()
            .zip(&args)
            .enumerate()
            .map(|(i, ((_, content), arguments))| Exchange {
                id: ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"][i.min(7)],
                name: "grep",
                arguments,
                content,
                is_error: false,
            })
            .collect();
        let survey = Survey::new(question, &done);
        assert_eq!(survey.lines, 1000);
        let weight = |label: &str| {
            let t = survey.terms.iter().position(|t| t.label == label).unwrap();
            (survey.weights[t], survey.terms[t].prior)
        };
        let idf = |n: f64| (1.0 + (1000.0 - n + 0.5) / (n + 0.5)).ln();
        let (retry, prior) = weight("retry");
        assert!((retry - prior * idf(10.0)).abs() < 1e-9, "{retry}");
        let (delay, prior) = weight("delay");
        assert!((delay - prior * idf(1.0)).abs() < 1e-9, "{delay}");
        assert!(delay > retry, "the rarer term weighs more");
    }
}
