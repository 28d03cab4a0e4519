//! Summarisers. [`Summariser`] is the seam: anything that folds a span of messages into the
//! three sections can be plugged in, and what it produced is checked afterwards against facts
//! taken from the raw span on a path of their own (`survival`). [`Extractive`], the default,
//! is deterministic: it keeps verbatim every sentence that carries an irreducible item or a
//! must-keep fact (or the item alone when its sentence is long), the questions asked and the
//! binding sentences.

use std::fmt::Write as _;

use aho_corasick::AhoCorasick;

use super::floor::irreducible;
use crate::text::sentences;
use crate::transcript::Message;

/// The default summariser's name and version, recorded in every summary's provenance.
pub const SUMMARISER: &str = "extractive-2";

/// Longest sentence kept whole by default; a longer one contributes its items alone.
pub const LONG_SENTENCE: usize = 120;

/// The text of one message, as a summariser reads it.
pub fn message_text(m: &Message) -> String {
    match m {
        Message::User { text } | Message::Compacted { text, .. } => text.clone(),
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

/// Folds a span of a window into the three sections (`## Settled conclusions`, `## Open
/// items`, `## Hard constraints`). It is given the span's own turns (never an earlier
/// summary), the facts it must keep verbatim, and how long a sentence it may keep whole
/// (`long` 0: items only, the most compact form). What it returns is checked, not trusted.
pub trait Summariser: Send + Sync {
    /// Its name and version, for the summary's provenance.
    fn name(&self) -> &str;
    /// The three sections for `span`.
    fn summarise(&self, span: &[Message], must_keep: &[String], long: usize) -> String;
}

/// The deterministic extractive summariser (the default, and the oracle for any other).
#[derive(Debug, Clone, Copy, Default)]
pub struct Extractive;

impl Summariser for Extractive {
    fn name(&self) -> &str {
        SUMMARISER
    }

    fn summarise(&self, span: &[Message], must_keep: &[String], long: usize) -> String {
        let text: String = span.iter().map(message_text).collect::<Vec<_>>().join("\n");
        let mut items = irreducible(&text);
        items.extend(must_keep.iter().filter(|m| !m.is_empty()).cloned());
        // Binding sentences go under Hard constraints, questions under Open items, each once.
        let constraints = crate::text::binding_sentences(&text);
        let mut questions: Vec<String> = Vec::new();
        let mut covered: Vec<bool> = items.iter().map(|i| constraints.contains(i)).collect();
        let finder = AhoCorasick::new(&items).ok();
        let mut settled: Vec<String> = Vec::new();
        for s in sentences(&text) {
            let question = s.ends_with('?') && !crate::text::binds(s);
            if question && !questions.iter().any(|q| q == s) {
                questions.push(s.to_string());
            }
            let mut here: Vec<usize> = finder
                .as_ref()
                .map(|f| {
                    f.find_overlapping_iter(s)
                        .map(|m| m.pattern().as_usize())
                        .collect()
                })
                .unwrap_or_default();
            here.sort_unstable();
            here.dedup();
            if question {
                // Kept whole among the open items: what it holds is kept with it.
                for i in here {
                    covered[i] = true;
                }
                continue;
            }
            if !here.iter().any(|i| !covered[*i]) {
                continue;
            }
            if s.len() <= long {
                settled.push(s.to_string());
                for i in here {
                    covered[i] = true;
                }
            } else {
                for i in here {
                    if !covered[i] {
                        settled.push(items[i].clone());
                        covered[i] = true;
                    }
                }
            }
        }
        // A must-keep fact that spans sentences is kept as it was given.
        for (i, item) in items.iter().enumerate() {
            if !covered[i] {
                settled.push(item.clone());
            }
        }
        let mut out = String::from("## Settled conclusions\n");
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
}
