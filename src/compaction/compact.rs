//! One compaction of a window, in order: trigger on occupancy; clear old tool results first;
//! if that is not enough, fold all but the last turns — compact, split or refuse as the floor
//! decides before any summarising; insert the ledger, verbatim, after the summaries and before
//! the kept turns; check what survived against facts taken from the raw window; check that the
//! result fits the window, folding more turns if it does not. Whatever fails leaves the window
//! as it was (refuse). Messages not folded or cleared come back as they were, each with the
//! index it had (`Compacted::kept`).

use serde::{Deserialize, Serialize};

use super::clear::{clear_counted, is_pure_read, kept_items, should_compact};
use super::cut::{split_cuts, split_point};
use super::floor::{decide, FloorDecision, Floors, Part};
use super::ledger::{Ledger, Pin};
use super::summary::{message_text, Extractive, Summariser, LONG_SENTENCE};
use super::survival::{survival, Facts, Survival};
use crate::digest::sha256_hex;
use crate::tokens::Tokenizer;
use crate::transcript::{Compaction, Message, SUMMARY_MARK};

/// Most bytes of a folded span's raw text carried in [`Folded::text`].
pub const FOLDED_TEXT_MAX: usize = 256 * 1024;

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

/// Where a summary's marker says the raw turns of its span are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RawTurns {
    /// Nowhere but in the transcript given (`baton compact` prints only the new window).
    #[default]
    Input,
    /// In the run's event log: the caller logs [`Compacted::folded`] with the compaction.
    EventLog,
}

/// The raw text of a folded span, for the event log: bounded, with the digest of the whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Folded {
    /// First message folded (index in the window given).
    pub first: usize,
    /// Last message folded.
    pub last: usize,
    /// Bytes of the whole raw text.
    pub bytes: usize,
    /// SHA-256 of the whole raw text, hex.
    pub digest: String,
    /// The raw text, at most [`FOLDED_TEXT_MAX`] bytes of it (cut at a character boundary).
    pub text: String,
    /// Whether `text` was cut.
    pub truncated: bool,
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
    /// For each message of `window`, the index of the message of the input it is (a cleared
    /// tool result keeps its index; its content is the placeholder); none for a new summary
    /// or ledger. A message with an index is the input's message, unchanged unless cleared.
    pub kept: Vec<Option<usize>>,
    /// The pinned ledger.
    pub ledger: Vec<Pin>,
    /// What survived (all true/empty when nothing was folded).
    pub survival: Survival,
    /// Why, in one line, when refused.
    pub reason: Option<String>,
    /// The raw text of the span folded into summaries, when one was.
    pub folded: Option<Folded>,
}

impl Compacted {
    /// `messages` left as they are (`tokens` of them, `ledger` their pins): nothing to do —
    /// or, with a reason set, refused.
    pub fn unchanged(messages: &[Message], ledger: &Ledger, tokens: usize) -> Compacted {
        Compacted {
            decision: Decision::None,
            tokens_before: tokens,
            tokens_after: tokens,
            cleared_tokens: 0,
            window: messages.to_vec(),
            kept: (0..messages.len()).map(Some).collect(),
            ledger: ledger.pins(),
            survival: Survival::intact(),
            reason: None,
            folded: None,
        }
    }
}

/// Why a compaction whose survival check failed was refused.
fn survival_failed(checked: &Survival) -> String {
    format!(
        "survival check failed: {} item(s) missing",
        checked.missing.len()
    )
}

fn is_summary(m: &Message) -> bool {
    matches!(
        m,
        Message::Compacted {
            kind: Compaction::Summary,
            ..
        }
    )
}

fn is_ledger(m: &Message) -> bool {
    matches!(
        m,
        Message::Compacted {
            kind: Compaction::Ledger,
            ..
        }
    )
}

/// The ledger of a transcript, built as if its messages arrived one by one, in order: pins
/// classified on arrival, retired as later turns settle them; an earlier ledger carried over.
pub fn ledger_of(messages: &[Message]) -> Ledger {
    let mut ledger = Ledger::new();
    for (turn, m) in messages.iter().enumerate() {
        ledger.arrive(turn, m);
    }
    ledger
}

/// Compacts `messages` for a model window with the defaults: the ledger built from the
/// messages in order, the extractive summariser, no must-keep facts, baton's workspace reads
/// as the rereadable tools.
pub fn compact(messages: &[Message], opts: &Options, tokenizer: &dyn Tokenizer) -> Compacted {
    Compactor::new(*opts, tokenizer).compact(messages, &ledger_of(messages))
}

/// A compaction's settings and parts: options, tokenizer, summariser, the facts a caller needs
/// kept, which tools can be reread, where the raw turns will be, and what the caller keeps
/// beside the messages.
pub struct Compactor<'a> {
    options: Options,
    tokenizer: &'a dyn Tokenizer,
    summariser: &'a dyn Summariser,
    must_keep: &'a [String],
    rereadable: &'a dyn Fn(&str) -> bool,
    raw_turns: RawTurns,
    outside: &'a str,
    offset: usize,
}

static EXTRACTIVE: Extractive = Extractive;

/// A refused attempt: why, what the checks found, and whether folding more turns could help
/// (it cannot when the summaries alone are over the window: more turns only add to them).
struct Refusal {
    reason: String,
    survival: Survival,
    hopeless: bool,
}

impl<'a> Compactor<'a> {
    /// The defaults for `options`, counting with `tokenizer`.
    pub fn new(options: Options, tokenizer: &'a dyn Tokenizer) -> Compactor<'a> {
        Compactor {
            options,
            tokenizer,
            summariser: &EXTRACTIVE,
            must_keep: &[],
            rereadable: &is_pure_read,
            raw_turns: RawTurns::Input,
            outside: "",
            offset: 0,
        }
    }

    /// How many messages come before the ones passed (kept apart by the caller, such as
    /// leading system messages or a brief): markers and [`Folded`] number messages from the
    /// start of the whole window.
    pub fn offset(mut self, before: usize) -> Compactor<'a> {
        self.offset = before;
        self
    }

    /// Text the caller keeps verbatim beside the messages it passes (a brief it never folds):
    /// a pin that came from there survives there.
    pub fn outside(mut self, text: &'a str) -> Compactor<'a> {
        self.outside = text;
        self
    }

    /// Summarises with `summariser` (its output is checked, not trusted).
    pub fn summariser(mut self, summariser: &'a dyn Summariser) -> Compactor<'a> {
        self.summariser = summariser;
        self
    }

    /// Facts that must survive verbatim, besides the span's own items.
    pub fn must_keep(mut self, facts: &'a [String]) -> Compactor<'a> {
        self.must_keep = facts;
        self
    }

    /// Which tools' results can be reread by calling them again.
    pub fn rereadable(mut self, rereadable: &'a dyn Fn(&str) -> bool) -> Compactor<'a> {
        self.rereadable = rereadable;
        self
    }

    /// Where the markers say the raw turns are.
    pub fn raw_turns(mut self, raw_turns: RawTurns) -> Compactor<'a> {
        self.raw_turns = raw_turns;
        self
    }

    fn count(&self, m: &Message) -> usize {
        self.tokenizer.count(&message_text(m))
    }

    /// Compacts `messages`, whose pins `ledger` holds (classified as they arrived).
    pub fn compact(&self, messages: &[Message], ledger: &Ledger) -> Compacted {
        let opts = &self.options;
        let counts: Vec<usize> = messages.iter().map(|m| self.count(m)).collect();
        let tokens_before: usize = counts.iter().sum();
        let unchanged = |decision, reason: Option<String>, survival| Compacted {
            decision,
            reason,
            survival,
            ..Compacted::unchanged(messages, ledger, tokens_before)
        };
        if !should_compact(tokens_before, opts.window, opts.threshold) {
            return unchanged(Decision::None, None, Survival::intact());
        }
        // Light compaction first: clear as much as gets under the threshold, and never less
        // than the minimum per pass; if that is not enough, still clear before summarising.
        let limit = (opts.threshold * opts.window as f64) as usize;
        let excess = tokens_before.saturating_sub(limit.saturating_sub(1));
        let clear = |least| {
            clear_counted(
                messages,
                Some(&counts),
                opts.keep_tool_results,
                least,
                self.tokenizer,
                self.rereadable,
            )
        };
        let cleared = clear(opts.min_cleared.max(excess)).or_else(|| clear(opts.min_cleared));
        let (working, cleared_tokens, unrereadable) = match cleared {
            Some(c) => (c.window, c.saved, c.unrereadable),
            None => (messages.to_vec(), 0, Vec::new()),
        };
        let working_counts: Vec<usize> = working
            .iter()
            .zip(messages)
            .zip(&counts)
            .map(|((w, m), n)| if w == m { *n } else { self.count(w) })
            .collect();
        // What cleared results showed that cannot be reread: it must survive.
        let cleared_items: Vec<(usize, Vec<String>)> = unrereadable
            .iter()
            .map(|&i| (i, kept_items(&message_text(&messages[i]))))
            .collect();
        let after_clearing: usize = working_counts.iter().sum();
        if cleared_tokens > 0 && !should_compact(after_clearing, opts.window, opts.threshold) {
            let items: Vec<String> = cleared_items
                .iter()
                .flat_map(|(_, items)| items.iter().cloned())
                .chain(self.must_keep.iter().cloned())
                .collect();
            let facts = Facts::new(ledger, items, "");
            let survived = survival(&facts, &working, self.outside);
            if !survived.ok() {
                return unchanged(Decision::Refuse, Some(survival_failed(&survived)), survived);
            }
            return Compacted {
                decision: Decision::Compact,
                tokens_before,
                tokens_after: after_clearing,
                cleared_tokens,
                window: working,
                kept: (0..messages.len()).map(Some).collect(),
                ledger: ledger.pins(),
                survival: survived,
                reason: None,
                folded: None,
            };
        }
        // Fold all but the last turns; if the result does not fit, fold more of them. The
        // floors of every turn are taken once, for every attempt.
        let texts: Vec<Option<String>> = messages
            .iter()
            .map(|m| (!is_summary(m) && !is_ledger(m)).then(|| message_text(m)))
            .collect();
        let floors = Floors::new(&texts, self.tokenizer, opts.margin_percent);
        let mut keeps = vec![opts.keep_last, opts.keep_last / 2, 1, 0];
        keeps.dedup();
        let mut first_refusal: Option<Refusal> = None;
        for keep in keeps {
            let attempt = self.fold(
                messages,
                (&texts, &floors),
                &counts,
                &working,
                &working_counts,
                &cleared_items,
                ledger,
                keep,
            );
            match attempt {
                Ok(mut done) => {
                    done.tokens_before = tokens_before;
                    done.cleared_tokens = cleared_tokens;
                    return done;
                }
                Err(refusal) => {
                    let hopeless = refusal.hopeless;
                    first_refusal.get_or_insert(refusal);
                    if hopeless {
                        break;
                    }
                }
            }
        }
        let refusal = first_refusal.unwrap_or(Refusal {
            reason: "nothing could be folded".into(),
            survival: Survival::intact(),
            hopeless: true,
        });
        unchanged(Decision::Refuse, Some(refusal.reason), refusal.survival)
    }

    /// Folds all but the last `keep` messages (at a safe cut) into summaries.
    #[allow(clippy::too_many_arguments)]
    fn fold(
        &self,
        messages: &[Message],
        (texts, floors): (&[Option<String>], &Floors),
        counts: &[usize],
        working: &[Message],
        working_counts: &[usize],
        cleared_items: &[(usize, Vec<String>)],
        ledger: &Ledger,
        keep: usize,
    ) -> Result<Compacted, Refusal> {
        let opts = &self.options;
        let refuse = |reason: String| Refusal {
            reason,
            survival: Survival::intact(),
            hopeless: false,
        };
        let cut = split_point(working, keep)
            .ok_or_else(|| refuse("no safe cut leaves the last turns whole".into()))?;
        let span = &messages[..cut];
        let texts = &texts[..cut];
        let span_floor = floors.of(0, cut);
        let parts = split_parts(span, floors, opts.slot);
        let part_floors: Vec<usize> = parts.iter().map(|(a, b)| floors.of(*a, *b)).collect();
        let pieces: Vec<(usize, usize)> = match decide(span_floor, &part_floors, opts.slot) {
            FloorDecision::Compact => vec![(0, span.len())],
            FloorDecision::Split => parts,
            FloorDecision::Refuse => {
                return Err(refuse(format!(
                    "the span's floor is {span_floor} tokens, over the {}-token slot, and it does not split into parts that fit",
                    opts.slot
                )))
            }
        };
        let split = pieces.len() > 1;
        // The raw text of the span, for the event log and the marker.
        let raw: String = texts
            .iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        let folded = bounded(self.offset, self.offset + cut.saturating_sub(1), &raw);
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        // Earlier summaries are carried as they are: a summary is built from the turns of its
        // span, never from an earlier summary (nor from an earlier ledger, re-rendered below).
        let mut window: Vec<Message> = Vec::new();
        let mut kept: Vec<Option<usize>> = Vec::new();
        let mut tokens_after = 0;
        for (i, m) in span.iter().enumerate().filter(|(_, m)| is_summary(m)) {
            window.push(m.clone());
            kept.push(Some(i));
            tokens_after += counts[i];
        }
        tokens_after += self.summaries(span, &pieces, &folded, at, &mut window, &mut kept)?;
        let ledger_text = ledger.render();
        tokens_after += self.tokenizer.count(&ledger_text);
        window.push(Message::Compacted {
            kind: Compaction::Ledger,
            text: ledger_text,
        });
        kept.push(None);
        window.extend(working[cut..].iter().cloned());
        kept.extend((cut..working.len()).map(Some));
        tokens_after += working_counts[cut..].iter().sum::<usize>();
        // The facts, from the raw window on their own path: the span's items, earlier
        // summaries verbatim, what cleared results that cannot be reread showed, must-keeps.
        let mut items = floors.items(0, cut);
        items.extend(span.iter().filter(|m| is_summary(m)).map(message_text));
        items.extend(
            cleared_items
                .iter()
                .filter(|(i, _)| *i >= cut)
                .flat_map(|(_, items)| items.iter().cloned()),
        );
        items.extend(self.must_keep.iter().cloned());
        let facts = Facts::new(ledger, items, &raw);
        let checked = survival(&facts, &window, self.outside);
        if !checked.ok() {
            return Err(Refusal {
                reason: survival_failed(&checked),
                survival: checked,
                hopeless: false,
            });
        }
        if tokens_after > opts.window {
            let kept_turns: usize = working_counts[cut..].iter().sum();
            return Err(Refusal {
                hopeless: tokens_after - kept_turns > opts.window,
                ..refuse(format!(
                    "the compacted window would be {tokens_after} tokens, over the {}-token window",
                    opts.window
                ))
            });
        }
        Ok(Compacted {
            decision: if split {
                Decision::Split
            } else {
                Decision::Compact
            },
            tokens_before: 0,
            tokens_after,
            cleared_tokens: 0,
            window,
            kept,
            ledger: ledger.pins(),
            survival: checked,
            reason: None,
            folded: Some(folded),
        })
    }

    /// A summary of each piece of the span, pushed onto the window; the tokens they take, or
    /// a refusal when one will not fit the slot even as items alone.
    fn summaries(
        &self,
        span: &[Message],
        pieces: &[(usize, usize)],
        folded: &Folded,
        at: u128,
        window: &mut Vec<Message>,
        kept: &mut Vec<Option<usize>>,
    ) -> Result<usize, Refusal> {
        let refuse = |reason: String| Refusal {
            reason,
            survival: Survival::intact(),
            hopeless: false,
        };
        let mut tokens = 0;
        for (a, b) in pieces {
            let turns: Vec<Message> = span[*a..*b]
                .iter()
                .filter(|m| !is_summary(m) && !is_ledger(m))
                .cloned()
                .collect();
            if turns.is_empty() {
                continue;
            }
            // Whole sentences where they fit, the items alone where they do not.
            let mut body = self
                .summariser
                .summarise(&turns, self.must_keep, LONG_SENTENCE);
            if self.tokenizer.count(&body) > self.options.slot {
                body = self.summariser.summarise(&turns, self.must_keep, 0);
            }
            if self.tokenizer.count(&body) > self.options.slot {
                return Err(refuse(format!(
                    "a summary came out over the {}-token slot",
                    self.options.slot
                )));
            }
            let (first, last) = (a + self.offset, b - 1 + self.offset);
            let text = format!(
                "{SUMMARY_MARK} messages {first}..={last} folded by {}; raw turns: {}; checked: ledger, items, effect states; at {at} ms]\n{body}",
                self.summariser.name(),
                self.raw_location(first, last, folded)
            );
            tokens += self.tokenizer.count(&text);
            window.push(Message::Compacted {
                kind: Compaction::Summary,
                text,
            });
            kept.push(None);
        }
        Ok(tokens)
    }

    /// What a marker says about where the raw turns of `first..=last` are.
    fn raw_location(&self, first: usize, last: usize, folded: &Folded) -> String {
        match self.raw_turns {
            RawTurns::Input => {
                format!("not stored, messages {first}..={last} of the transcript compacted")
            }
            RawTurns::EventLog => format!(
                "in the run's event log (window_compacted, sha256 {}{})",
                &folded.digest[..16],
                if folded.truncated {
                    format!(", its first {FOLDED_TEXT_MAX} bytes")
                } else {
                    String::new()
                }
            ),
        }
    }
}

/// A folded span's raw text, bounded to [`FOLDED_TEXT_MAX`] bytes at a character boundary.
fn bounded(first: usize, last: usize, raw: &str) -> Folded {
    let mut end = raw.len().min(FOLDED_TEXT_MAX);
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    Folded {
        first,
        last,
        bytes: raw.len(),
        digest: sha256_hex(raw.as_bytes()),
        text: raw[..end].to_string(),
        truncated: end < raw.len(),
    }
}

/// The parts a split would make: consecutive safe cuts that keep an error with its fix, each
/// part's floor within the slot, grown one message at a time.
fn split_parts(span: &[Message], floors: &Floors, slot: usize) -> Vec<(usize, usize)> {
    let mut parts: Vec<(usize, usize)> = Vec::new();
    let (mut start, mut previous, mut position) = (0, 0, 0);
    let mut part = Part::default();
    for c in split_cuts(span).into_iter().filter(|c| *c > 0) {
        while position < c {
            part.add(floors, position);
            position += 1;
        }
        if part.floor(floors) > slot && previous > start {
            parts.push((start, previous));
            start = previous;
            part = Part::default();
            for i in start..c {
                part.add(floors, i);
            }
        }
        previous = c;
    }
    if start < span.len() {
        parts.push((start, span.len()));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folded span's raw text is carried up to 256 KiB, cut at a character boundary, with
    /// its digest over all of it.
    #[test]
    fn a_folded_span_carries_at_most_256_kib_of_its_text() {
        let raw = "é".repeat(FOLDED_TEXT_MAX);
        let folded = bounded(1, 9, &raw);
        assert!(folded.truncated);
        assert!(folded.text.len() <= FOLDED_TEXT_MAX && folded.text.len() >= FOLDED_TEXT_MAX - 1);
        assert_eq!(folded.bytes, raw.len());
        assert_eq!(folded.digest, sha256_hex(raw.as_bytes()));
        let small = bounded(1, 2, "short");
        assert!(!small.truncated && small.text == "short");
    }
}
