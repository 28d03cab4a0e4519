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

message_error! {
    /// Why a small model's answer about a turn is not kept: its text is not a verbatim part of the
    /// turn, or it does not say what the rule pass asked.
    ModelPassError
}

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
    /// The pins retired since [`Ledger::take_retired`] last took them (the log records them
    /// with the next compaction, so an audit tells a retired pin from a lost one).
    retired: Vec<String>,
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

/// The revision of the ledger model's instructions, recorded with every answer it gives.
pub const LEDGER_PROMPT_REVISION: &str = "ledger-1";

/// Words that may bind though the rule pass does not pin them: a sentence holding one that no
/// rule pinned flags its turn for the ledger model.
const SOFT_CUES: &[&str] = &[
    "avoid",
    "careful",
    "ensure",
    "going forward",
    "have to",
    "keep",
    "leave",
    "limit",
    "make sure",
    "need to",
    "no more than",
    "at most",
    "prefer",
    "refrain",
    "remember",
    "should",
    "shouldn't",
    "stay",
    "stick to",
    "until further notice",
    "without",
];

/// Whether the rule pass flags a turn for the ledger model: one of its sentences holds a word
/// that may bind ("keep", "avoid", "make sure", …) and no rule pinned that sentence. A turn
/// whose every such sentence is pinned already, or that holds none, is not flagged.
pub fn flagged(text: &str, from_user: bool) -> bool {
    static SOFT: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let soft = SOFT.get_or_init(|| {
        let alternation = SOFT_CUES
            .iter()
            .map(|c| {
                regex::escape(c)
                    .replace('\'', "['\u{2019}]")
                    .replace(' ', r"\s+")
            })
            .collect::<Vec<_>>()
            .join("|");
        regex::Regex::new(&format!(r"(?i)\b(?:{alternation})\b")).expect("static regex")
    });
    let pinned: Vec<String> = classify(0, text, from_user)
        .into_iter()
        .map(|p| p.text)
        .collect();
    sentences(text)
        .into_iter()
        .any(|s| soft.is_match(s) && !pinned.contains(&one_line(s)))
}

/// What the ledger model is asked about one turn: its instructions and the turn, quoted.
pub fn ledger_prompt(text: &str, from_user: bool) -> (String, String) {
    let system = "You classify one turn of a conversation for a pinned ledger of what binds \
        later turns. Answer with JSON only: an array of objects {\"binding\": true|false, \
        \"class\": \"constraint\"|\"commitment\"|\"open_question\"|\"tool_state\", \
        \"text\": the exact words of the turn that bind, copied character for character}. \
        A constraint is a rule the user sets for the rest of the work; a commitment is \
        something the assistant promises to do; an open question is one asked and not yet \
        answered; a tool state is a working directory, branch, cursor or uploaded file. \
        Answer [] when nothing binds. Never reword the text."
        .to_string();
    let who = if from_user {
        "the user"
    } else {
        "the assistant"
    };
    let user = format!("The turn, from {who}, between the markers:\n<<<\n{text}\n>>>");
    (system, user)
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
    ) -> Result<ModelPass, ModelPassError> {
        let value: serde_json::Value = serde_json::from_str(unfenced(answer))
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
                self.retired.push(text.to_string());
                retired = true;
            }
        }
        retired
    }

    /// The pins retired since the last call, in order.
    pub fn take_retired(&mut self) -> Vec<String> {
        std::mem::take(&mut self.retired)
    }

    /// The pins in force, in order.
    pub fn pins(&self) -> Vec<Pin> {
        self.slots.iter().flatten().cloned().collect()
    }

    /// The ledger as the window shows it: labelled standing conditions, each pin verbatim with
    /// its class, the turn it came from and, for tool state, what it is the state of.
    pub fn render(&self) -> String {
        let mut out = format!("{}\n", crate::transcript::LEDGER_TITLE);
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

/// An answer without the code fence a model may put around its JSON (```json … ```).
fn unfenced(answer: &str) -> &str {
    let trimmed = answer.trim();
    match trimmed.strip_prefix("```") {
        Some(rest) => {
            let body = rest.split_once('\n').map_or("", |(_, b)| b);
            body.trim_end().strip_suffix("```").unwrap_or(body)
        }
        None => trimmed,
    }
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
mod tests;
