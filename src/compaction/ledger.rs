//! The pinned ledger: items of a conversation that bind, classified when each turn arrives
//! (never at compaction time) by a deterministic rule pass, and carried verbatim across every
//! compaction. A pin is its whole sentence. Classes and when they retire: constraints never;
//! commitments when a later assistant turn reports them done; open questions when a later
//! assistant turn answers them; active tool state (working directory, branch, cursor, uploaded
//! file) when a later one of the same kind supersedes it. [`Ledger::arrive`] takes each turn as
//! it comes and makes both decisions.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::text::{binds, sentences};
use crate::transcript::{Compaction, Message};

/// How a summary message opens.
pub(crate) const SUMMARY_MARK: &str = Compaction::Summary.mark();

/// Words too common to tie a later turn to a pin.
const COMMON: &[&str] = &[
    "about", "after", "again", "also", "been", "before", "being", "could", "does", "done", "from",
    "have", "here", "into", "just", "like", "make", "more", "need", "next", "only", "over",
    "please", "should", "some", "that", "than", "their", "them", "then", "there", "these", "they",
    "this", "those", "through", "very", "want", "were", "what", "when", "where", "which", "while",
    "will", "with", "would", "your",
];

/// The content words of a text (four letters or more, not common), by their first five letters
/// so that `rerun`/`reruns`, `version`/`versions` meet.
fn content_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = crate::text::words(text)
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_lowercase)
        .filter(|w| !COMMON.contains(&w.as_str()))
        .map(|w| w.chars().take(5).collect())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether a later sentence whose content words are `said` (sorted) speaks of what a pin
/// whose content words are `wanted` is about: it holds at least half of them. A pin with none
/// to share is never settled by rule (it stays pinned: keeping a pin is safe, losing one is
/// not).
fn about(wanted: &[String], said: &[String]) -> bool {
    let shared = wanted
        .iter()
        .filter(|w| said.binary_search(w).is_ok())
        .count();
    !wanted.is_empty() && shared * 2 >= wanted.len()
}

/// Whether a sentence denies, doubts or disowns what it speaks of ("I have not …", "could not
/// find", "is unknown", "you asked …").
fn denies(sentence: &str) -> bool {
    static DENIED: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    DENIED
        .get_or_init(|| {
            regex::Regex::new(r"(?i)\b(not|no|never|yet|cannot|failed|unable|unknown|unclear|asked|ask|question|wonder)\b|n['’]t\b")
                .expect("static regex")
        })
        .is_match(sentence)
}

/// Whether one sentence reports work finished, and does not deny it.
fn reports_done(sentence: &str) -> bool {
    static DONE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        regex::Regex::new(
            r"(?i)\b(done|finished|completed|fixed|now passes|passed|succeeded|all green)\b",
        )
        .expect("static regex")
    })
    .is_match(sentence)
        && !denies(sentence)
}

/// Whether one sentence answers rather than defers or denies ("let me look", "I will check", a
/// question, "could not find").
fn answers(sentence: &str) -> bool {
    static DEFERS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let defers = sentence.trim_end().ends_with('?')
        || DEFERS
            .get_or_init(|| {
                regex::Regex::new(r"(?i)\b(let me|i will|i'll|i am going to|i'm going to|first|not sure|looking)\b")
                    .expect("static regex")
            })
            .is_match(sentence);
    !defers && !denies(sentence)
}

/// The most recent open pins (questions, commitments) a turn is checked against; older ones
/// stay pinned (a bound that keeps every turn's cost flat).
const OPEN_PINS_CHECKED: usize = 256;

/// What kind of binding item it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinClass {
    /// A rule to obey from now on: never retires.
    Constraint,
    /// Something promised: retires when fulfilled.
    Commitment,
    /// A question asked and not yet answered: retires when answered.
    OpenQuestion,
    /// Working directory, branch, cursor, uploaded file id: retires when superseded.
    ToolState,
}

/// One pinned item: its class, its text verbatim, the turn it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// Its class.
    pub class: PinClass,
    /// Its whole sentence, verbatim but for line breaks inside it (a wrapped line), which are
    /// single spaces.
    pub text: String,
    /// The turn (0-based message index) it came from.
    pub turn: usize,
    /// For tool state: what it is the state of (`cwd`, `branch`, `cursor`, `file`), so a later
    /// one supersedes it.
    pub key: Option<String>,
}

/// The ledger: pins in the order they arrived; retired ones are dropped. Indexed so that a
/// turn costs the same however many pins are held.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(from = "LedgerPins", into = "LedgerPins")]
pub struct Ledger {
    /// Every pin that arrived, in order; retired ones are `None`.
    slots: Vec<Option<Pin>>,
    /// Where each held pin is, by class and text.
    held: HashMap<(PinClass, String), usize>,
    /// The tool state pin of each key.
    tool_states: HashMap<String, usize>,
    /// Open questions and commitments, by arrival.
    open: BTreeSet<usize>,
    /// The content words of each open pin, taken once when it arrives.
    words: HashMap<usize, Vec<String>>,
}

/// A ledger as stored: its pins in force.
#[derive(Serialize, Deserialize)]
struct LedgerPins {
    pins: Vec<Pin>,
}

impl From<LedgerPins> for Ledger {
    fn from(stored: LedgerPins) -> Ledger {
        let mut ledger = Ledger::default();
        for pin in stored.pins {
            ledger.add(pin);
        }
        ledger
    }
}

impl From<Ledger> for LedgerPins {
    fn from(ledger: Ledger) -> LedgerPins {
        LedgerPins {
            pins: ledger.pins(),
        }
    }
}

impl PartialEq for Ledger {
    fn eq(&self, other: &Ledger) -> bool {
        self.pins() == other.pins()
    }
}

impl Eq for Ledger {}

const COMMITMENT: &[&str] = &[
    "i will ",
    "i'll ",
    "we will ",
    "we'll ",
    "i promise",
    "i am going to ",
    "i'm going to ",
];

/// A deadline the user sets: "before 18:00 on Friday", "by Monday", "no later than 5 pm".
fn is_deadline(lower: &str) -> bool {
    static DEADLINE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    DEADLINE
        .get_or_init(|| {
            regex::Regex::new(
                r"\b(before|by|until|no later than)\s+(\d{1,2}([:.]\d{2})?\s*(am|pm)?|monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|noon|midnight|end of day|eod)\b",
            )
            .expect("static regex")
        })
        .is_match(lower)
}

/// The tool state a sentence sets, if any: (key, the sentence).
fn tool_state(sentence: &str) -> Option<&'static str> {
    let lower = sentence.to_lowercase();
    if lower.starts_with("cd ") || lower.contains("working directory") {
        Some("cwd")
    } else if lower.contains("git checkout ")
        || lower.contains("git switch ")
        || lower.contains("on branch ")
    {
        Some("branch")
    } else if lower.contains("file_id") || lower.contains("file id") || lower.contains("uploaded") {
        Some("file")
    } else if lower.contains("cursor") {
        Some("cursor")
    } else {
        None
    }
}

/// A sentence wrapped over lines, on one line: each line break and the indentation after it
/// become one space.
fn one_line(sentence: &str) -> String {
    if !sentence.contains('\n') {
        return sentence.to_string();
    }
    sentence
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Classifies one turn's text (a user or assistant message) into pins, by rules.
pub fn classify(turn: usize, text: &str, from_user: bool) -> Vec<Pin> {
    let mut out = Vec::new();
    for s in sentences(text) {
        let lower = s.to_lowercase();
        let class = if from_user && (binds(s) || is_deadline(&lower)) {
            Some((PinClass::Constraint, None))
        } else if let Some(key) = tool_state(s) {
            Some((PinClass::ToolState, Some(key.to_string())))
        } else if !from_user
            && COMMITMENT
                .iter()
                .any(|c| lower.starts_with(c) || lower.contains(&format!(" {c}")))
        {
            Some((PinClass::Commitment, None))
        } else if from_user && s.ends_with('?') {
            Some((PinClass::OpenQuestion, None))
        } else {
            None
        };
        if let Some((class, key)) = class {
            out.push(Pin {
                class,
                text: one_line(s),
                turn,
                key,
            });
        }
    }
    out
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Ledger {
        Ledger::default()
    }

    /// Takes a new turn: its pins are added (a tool state supersedes the one of the same key).
    pub fn observe(&mut self, turn: usize, text: &str, from_user: bool) {
        for pin in classify(turn, text, from_user) {
            self.add(pin);
        }
    }

    /// Takes one message as it arrives in the window (`turn` is its arrival number). An
    /// assistant's text first retires what it settles — the open questions it answers, the
    /// commitments it reports done — then adds its own pins; a user turn adds pins; an earlier
    /// compaction's ledger carries over verbatim; summaries and tool results add nothing.
    pub fn arrive(&mut self, turn: usize, message: &Message) {
        match message {
            Message::Compacted {
                kind: Compaction::Ledger,
                text,
            } => {
                self.carry(Ledger::parse(text));
            }
            Message::Compacted {
                kind: Compaction::Summary,
                ..
            } => {}
            Message::User { text } => self.observe(turn, text, true),
            Message::Assistant { text, .. } => {
                if !text.trim().is_empty() {
                    for settled in self.settled_by(text) {
                        self.retire(&settled);
                    }
                }
                self.observe(turn, text, false);
            }
            Message::Tool { .. } => {}
        }
    }

    /// The pins an assistant's text settles: open questions a sentence of it answers (it
    /// speaks of what was asked, and does not defer), commitments a sentence reports done (it
    /// says so, undenied, of what was promised). Only the most recent open pins are checked.
    fn settled_by(&self, text: &str) -> Vec<String> {
        if self.open.is_empty() {
            return Vec::new();
        }
        let mut settled = Vec::new();
        for sentence in sentences(text) {
            let said = content_words(sentence);
            if said.is_empty() {
                continue;
            }
            let (answer, done) = (answers(sentence), reports_done(sentence));
            if !answer && !done {
                continue;
            }
            for index in self.open.iter().rev().take(OPEN_PINS_CHECKED) {
                let Some(pin) = self.slots[*index].as_ref() else {
                    continue;
                };
                let settles = match pin.class {
                    PinClass::OpenQuestion => answer,
                    PinClass::Commitment => done,
                    PinClass::Constraint | PinClass::ToolState => false,
                };
                let wanted = self.words.get(index).map(Vec::as_slice).unwrap_or(&[]);
                if settles && about(wanted, &said) && !settled.contains(&pin.text) {
                    settled.push(pin.text.clone());
                }
            }
        }
        settled
    }

    /// Whether a pin of the same class and text is held.
    fn holds(&self, pin: &Pin) -> bool {
        self.held.contains_key(&(pin.class, pin.text.clone()))
    }

    /// Adds one pin unless held already; a tool state supersedes the one of the same key.
    fn add(&mut self, pin: Pin) -> bool {
        if self.holds(&pin) {
            return false;
        }
        if let (PinClass::ToolState, Some(key)) = (pin.class, &pin.key) {
            let superseded = self
                .tool_states
                .get(key)
                .and_then(|i| self.slots[*i].as_ref())
                .map(|p| p.text.clone());
            if let Some(text) = superseded {
                self.retire(&text);
            }
        }
        let index = self.slots.len();
        self.held.insert((pin.class, pin.text.clone()), index);
        match pin.class {
            PinClass::ToolState => {
                if let Some(key) = &pin.key {
                    self.tool_states.insert(key.clone(), index);
                }
            }
            PinClass::OpenQuestion | PinClass::Commitment => {
                self.open.insert(index);
                self.words.insert(index, content_words(&pin.text));
            }
            PinClass::Constraint => {}
        }
        self.slots.push(Some(pin));
        true
    }

    /// Takes the optional small-model pass over a turn the rule pass has already seen: its
    /// answer is a JSON object or array of `{"binding", "class", "text"}`. An item is kept only
    /// if it binds and its `text` is a verbatim, single-line substring of the turn; a constraint
    /// only from a user turn; a tool state only when its text names what it is the state of.
    /// Everything else is discarded and the rule pass's pins stand: the answer can add pins,
    /// never retire or change one. Malformed JSON is an error and adds nothing.
    pub fn observe_model_answer(
        &mut self,
        turn: usize,
        text: &str,
        from_user: bool,
        answer: &str,
    ) -> Result<ModelPass, String> {
        let value: serde_json::Value = serde_json::from_str(answer)
            .map_err(|e| format!("the ledger model's answer is not JSON: {e}"))?;
        let items = match value {
            serde_json::Value::Array(items) => items,
            other => vec![other],
        };
        let mut pass = ModelPass::default();
        for item in items {
            match checked_pin(turn, text, from_user, &item) {
                Some(pin) => {
                    if self.add(pin) {
                        pass.accepted += 1;
                    }
                }
                None => pass.discarded += 1,
            }
        }
        Ok(pass)
    }

    /// Retires a commitment (fulfilled), an open question (answered) or a tool state
    /// (superseded) by its exact text. Constraints never retire: asking to retire one is
    /// refused (false).
    pub fn retire(&mut self, text: &str) -> bool {
        let mut retired = false;
        for class in [
            PinClass::Commitment,
            PinClass::OpenQuestion,
            PinClass::ToolState,
        ] {
            if let Some(index) = self.held.remove(&(class, text.to_string())) {
                if let Some(pin) = self.slots[index].take() {
                    if let Some(key) = &pin.key {
                        if self.tool_states.get(key) == Some(&index) {
                            self.tool_states.remove(key);
                        }
                    }
                }
                self.open.remove(&index);
                self.words.remove(&index);
                retired = true;
            }
        }
        retired
    }

    /// The pins in force, in order.
    pub fn pins(&self) -> Vec<Pin> {
        self.slots.iter().flatten().cloned().collect()
    }

    /// The ledger as the window shows it: labelled standing conditions, each pin verbatim with
    /// its class, the turn it came from and, for tool state, what it is the state of.
    pub fn render(&self) -> String {
        let mut out = String::from("=== PINNED (standing conditions, verbatim) ===\n");
        for p in self.slots.iter().flatten() {
            let key = p
                .key
                .as_deref()
                .map(|k| format!(" {k}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "- [{}{key} @{}] {}\n",
                class_name(p.class),
                p.turn,
                p.text
            ));
        }
        out.push_str("=== END PINNED ===\n");
        out
    }

    /// Reads a rendered ledger back (the ledger message of an earlier compaction), so pins
    /// carry over byte for byte; lines that are not pins are ignored.
    pub fn parse(rendered: &str) -> Ledger {
        static LINE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
        let line = LINE.get_or_init(|| {
            regex::Regex::new(r"^- \[(constraint|commitment|open question|tool state)(?: ([a-z]+))? @(\d+)\] (.+)$")
                .expect("static regex")
        });
        let pins: Vec<Pin> = rendered
            .lines()
            .filter_map(|l| {
                let c = line.captures(l)?;
                let class = match &c[1] {
                    "constraint" => PinClass::Constraint,
                    "commitment" => PinClass::Commitment,
                    "open question" => PinClass::OpenQuestion,
                    _ => PinClass::ToolState,
                };
                Some(Pin {
                    class,
                    text: c[4].to_string(),
                    turn: c[3].parse().ok()?,
                    key: c.get(2).map(|k| k.as_str().to_string()),
                })
            })
            .collect();
        Ledger::from(LedgerPins { pins })
    }

    /// Adds pins carried over from an earlier ledger (skipping any already held).
    pub fn carry(&mut self, earlier: Ledger) {
        for pin in earlier.pins() {
            self.add(pin);
        }
    }
}

/// What the small-model pass over one turn came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelPass {
    /// New pins it added.
    pub accepted: usize,
    /// Items discarded: not binding, not verbatim, or a class the turn cannot carry.
    pub discarded: usize,
}

/// One item of the small model's answer as a pin, if it passes the checks.
fn checked_pin(turn: usize, text: &str, from_user: bool, item: &serde_json::Value) -> Option<Pin> {
    if item.get("binding")?.as_bool()? {
        let quoted = item.get("text")?.as_str()?;
        let verbatim = !quoted.is_empty()
            && quoted == quoted.trim()
            && !quoted.contains('\n')
            && text.contains(quoted);
        if !verbatim {
            return None;
        }
        let class = match item.get("class")?.as_str()?.replace('_', " ").as_str() {
            "constraint" if from_user => PinClass::Constraint,
            "commitment" => PinClass::Commitment,
            "open question" => PinClass::OpenQuestion,
            "tool state" | "active tool state" => PinClass::ToolState,
            _ => return None,
        };
        let key = match class {
            PinClass::ToolState => Some(tool_state(quoted)?.to_string()),
            _ => None,
        };
        return Some(Pin {
            class,
            text: quoted.to_string(),
            turn,
            key,
        });
    }
    None
}

fn class_name(class: PinClass) -> &'static str {
    match class {
        PinClass::Constraint => "constraint",
        PinClass::Commitment => "commitment",
        PinClass::OpenQuestion => "open question",
        PinClass::ToolState => "tool state",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_answer_adds_only_verbatim_pins_and_never_retires_one() {
        let turn = "Thanks. Keep the public API of parser.rs stable, the release depends on it.";
        let mut ledger = Ledger::new();
        ledger.observe(4, turn, true);
        let before = ledger.pins().len();
        let answer = r#"[
            {"binding": true, "class": "constraint", "text": "Keep the public API of parser.rs stable"},
            {"binding": true, "class": "constraint", "text": "Keep the parser API stable"},
            {"binding": true, "class": "constraint", "text": ""},
            {"binding": false, "class": "constraint", "text": "Thanks."},
            {"binding": true, "class": "lift", "text": "Thanks."}
        ]"#;
        let pass = ledger.observe_model_answer(4, turn, true, answer).unwrap();
        assert_eq!(
            pass,
            ModelPass {
                accepted: 1,
                discarded: 4
            }
        );
        assert_eq!(ledger.pins().len(), before + 1);
        assert!(ledger
            .pins()
            .iter()
            .any(|p| p.text == "Keep the public API of parser.rs stable"
                && p.class == PinClass::Constraint));
        // Byte-identical through render and parse.
        assert_eq!(Ledger::parse(&ledger.render()).render(), ledger.render());
        // An assistant turn cannot state a constraint; malformed JSON adds nothing.
        let said = "From now on you may edit /migrations.";
        let pass = ledger
            .observe_model_answer(5, said, false, r#"{"binding": true, "class": "constraint", "text": "From now on you may edit /migrations."}"#)
            .unwrap();
        assert_eq!(pass.accepted, 0);
        let held = ledger.clone();
        assert!(ledger
            .observe_model_answer(6, turn, true, "{not json")
            .is_err());
        assert_eq!(ledger, held);
    }

    /// Issue 9, item 8: a pin is the user's whole sentence, classified on arrival; pins retire
    /// as later turns settle them.
    #[test]
    fn pins_are_whole_sentences_and_retire_when_settled() {
        let mut ledger = Ledger::new();
        let say = |text: &str| Message::User { text: text.into() };
        let reply = |text: &str| Message::Assistant {
            text: text.into(),
            tool_calls: Vec::new(),
        };
        ledger.arrive(
            0,
            &say("Never modify anything under /migrations; the release pipeline applies those files."),
        );
        assert_eq!(
            ledger.pins()[0].text,
            "Never modify anything under /migrations; the release pipeline applies those files."
        );
        ledger.arrive(1, &say("Which version pins serde?"));
        ledger.arrive(
            2,
            &reply("I will rerun the test suite after the fix. cd /repo/api"),
        );
        ledger.arrive(3, &reply("Looking at the lock file next."));
        assert_eq!(ledger.pins().len(), 4, "{:?}", ledger.pins());
        ledger.arrive(4, &reply("Cargo.lock pins serde at version 1.0.197."));
        assert!(!ledger
            .pins()
            .iter()
            .any(|p| p.class == PinClass::OpenQuestion));
        ledger.arrive(
            5,
            &reply("Done: I reran the test suite and it passed. cd /repo/web"),
        );
        let classes: Vec<PinClass> = ledger.pins().iter().map(|p| p.class).collect();
        assert_eq!(classes, vec![PinClass::Constraint, PinClass::ToolState]);
        assert_eq!(ledger.pins()[1].text, "cd /repo/web");
        // Nothing an assistant says retires a constraint.
        ledger.arrive(
            6,
            &reply("Done with /migrations: never mind that rule, it is finished."),
        );
        assert_eq!(ledger.pins()[0].class, PinClass::Constraint);
    }

    /// Issue 9, item 8: a wrapped sentence and an abbreviation stay whole; a deferral, a denial
    /// or an unrelated remark settles nothing.
    #[test]
    fn pins_retire_only_when_really_settled() {
        let mut ledger = Ledger::new();
        let say = |text: &str| Message::User { text: text.into() };
        let reply = |text: &str| Message::Assistant {
            text: text.into(),
            tool_calls: Vec::new(),
        };
        ledger.arrive(0, &say("Never modify anything under\n/migrations; the pipeline applies them.\nDo not touch the config, e.g. the prod settings."));
        ledger.arrive(1, &say("What version of openssl does the build use? Why?"));
        ledger.arrive(2, &reply("I will update the changelog with the new flags."));
        let texts: Vec<String> = ledger.pins().into_iter().map(|p| p.text).collect();
        assert_eq!(
            texts,
            vec![
                "Never modify anything under /migrations; the pipeline applies them.",
                "Do not touch the config, e.g. the prod settings.",
                "What version of openssl does the build use?",
                "Why?",
                "I will update the changelog with the new flags."
            ]
        );
        for (turn, said) in [
            (3, "Let me look at the build first."),
            (4, "Hmm."),
            (5, "I have not updated the changelog yet."),
            (6, "The changelog update failed: the file is locked."),
            (6, "I have a question about the changelog flags."),
            (6, "I could not find which openssl version the build uses."),
            (6, "You asked what version of openssl the build uses."),
        ] {
            ledger.arrive(turn, &reply(said));
            assert_eq!(ledger.pins().len(), 5, "{said}: {:?}", ledger.pins());
        }
        ledger.arrive(7, &reply("The build uses openssl version 3.0.13."));
        ledger.arrive(
            8,
            &reply("Done: I updated the changelog with the new flags."),
        );
        let left: Vec<PinClass> = ledger.pins().into_iter().map(|p| p.class).collect();
        assert_eq!(
            left,
            vec![
                PinClass::Constraint,
                PinClass::Constraint,
                PinClass::OpenQuestion
            ],
            "only the question with nothing to match (`Why?`) stays open"
        );
    }

    /// Issue 9, item 15: a ledger of many pins costs the same per turn.
    #[test]
    fn many_pins_cost_the_same_per_turn() {
        let mut ledger = Ledger::new();
        for turn in 0..20_000 {
            ledger.arrive(
                turn,
                &Message::User {
                    text: format!("Never touch file{turn}. Which file holds record {turn}?"),
                },
            );
        }
        assert_eq!(ledger.pins().len(), 40_000);
        let parsed = Ledger::parse(&ledger.render());
        assert_eq!(parsed, ledger);
    }

    /// A turn is checked against the 256 most recent open pins only (what keeps its cost
    /// flat): an answer to the newest question retires it; one to a question with 256 newer
    /// open ones before it leaves it pinned.
    #[test]
    fn a_turn_is_checked_against_the_newest_open_pins_only() {
        let mut ledger = Ledger::new();
        let ask = |ledger: &mut Ledger, turn: usize, topic: &str| {
            ledger.arrive(
                turn,
                &Message::User {
                    text: format!("Which file holds the {topic} record?"),
                },
            );
        };
        ask(&mut ledger, 0, "zanzibar");
        for turn in 1..=OPEN_PINS_CHECKED {
            ask(&mut ledger, turn, &format!("topic{turn}x"));
        }
        let answer = |ledger: &mut Ledger, turn: usize, topic: &str| {
            ledger.arrive(
                turn,
                &Message::Assistant {
                    text: format!("The {topic} record is in src/records.rs."),
                    tool_calls: Vec::new(),
                },
            );
        };
        let held =
            |ledger: &Ledger, topic: &str| ledger.pins().iter().any(|p| p.text.contains(topic));
        answer(&mut ledger, 1000, "zanzibar");
        assert!(held(&ledger, "zanzibar"), "past the window: still pinned");
        let newest = format!("topic{OPEN_PINS_CHECKED}x");
        assert!(held(&ledger, &newest));
        answer(&mut ledger, 1001, &newest);
        assert!(!held(&ledger, &newest), "inside the window: retired");
    }

    #[test]
    fn turns_are_classified_when_they_arrive() {
        let mut ledger = Ledger::new();
        ledger.observe(
            3,
            "Please fix the tests. Never modify anything under /migrations.",
            true,
        );
        ledger.observe(
            4,
            "I will rerun the suite after the fix. cd /repo/api",
            false,
        );
        ledger.observe(5, "Which version pins serde? cd /repo/web", true);
        let pins = ledger.pins();
        let find = |class| {
            pins.iter()
                .filter(move |p| p.class == class)
                .map(|p| p.text.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            find(PinClass::Constraint),
            vec!["Never modify anything under /migrations."]
        );
        assert_eq!(
            find(PinClass::Commitment),
            vec!["I will rerun the suite after the fix."]
        );
        assert_eq!(
            find(PinClass::OpenQuestion),
            vec!["Which version pins serde?"]
        );
        assert_eq!(
            find(PinClass::ToolState),
            vec!["cd /repo/web"],
            "the later directory supersedes"
        );
        assert!(ledger.retire("Which version pins serde?"));
        assert!(
            !ledger.retire("Never modify anything under /migrations."),
            "constraints never retire"
        );
        let rendered = ledger.render();
        assert!(
            rendered.contains("Never modify anything under /migrations."),
            "{rendered}"
        );
    }
}
