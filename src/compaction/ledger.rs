//! The pinned ledger: items of a conversation that bind, classified when each turn arrives
//! (never at compaction time) by a deterministic rule pass, and carried verbatim across every
//! compaction. Classes and when they retire: constraints never; commitments when fulfilled;
//! open questions when answered; active tool state (working directory, branch, cursor, uploaded
//! file) when superseded.

use serde::{Deserialize, Serialize};

use crate::context::{binds, sentences};

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
    /// Verbatim, a substring of its turn.
    pub text: String,
    /// The turn (0-based message index) it came from.
    pub turn: usize,
    /// For tool state: what it is the state of (`cwd`, `branch`, `cursor`, `file`), so a later
    /// one supersedes it.
    pub key: Option<String>,
}

/// The ledger: pins in the order they arrived; retired ones are dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    pins: Vec<Pin>,
}

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
                text: s.to_string(),
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
            if self
                .pins
                .iter()
                .any(|p| p.class == pin.class && p.text == pin.text)
            {
                continue;
            }
            if let (PinClass::ToolState, Some(key)) = (pin.class, &pin.key) {
                self.pins
                    .retain(|p| !(p.class == PinClass::ToolState && p.key.as_ref() == Some(key)));
            }
            self.pins.push(pin);
        }
    }

    /// Retires a commitment (fulfilled) or an open question (answered) by its exact text.
    /// Constraints never retire: asking to retire one is refused (false).
    pub fn retire(&mut self, text: &str) -> bool {
        let before = self.pins.len();
        self.pins.retain(|p| {
            p.text != text || !matches!(p.class, PinClass::Commitment | PinClass::OpenQuestion)
        });
        self.pins.len() < before
    }

    /// The pins in force, in order.
    pub fn pins(&self) -> &[Pin] {
        &self.pins
    }

    /// The ledger as the window shows it: labelled standing conditions, each pin verbatim with
    /// its class, the turn it came from and, for tool state, what it is the state of.
    pub fn render(&self) -> String {
        let mut out = String::from("=== PINNED (standing conditions, verbatim) ===\n");
        for p in &self.pins {
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
        let pins = rendered
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
        Ledger { pins }
    }

    /// Adds pins carried over from an earlier ledger (skipping any already held).
    pub fn carry(&mut self, earlier: Ledger) {
        for pin in earlier.pins {
            if !self
                .pins
                .iter()
                .any(|p| p.class == pin.class && p.text == pin.text)
            {
                self.pins.push(pin);
            }
        }
    }
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
