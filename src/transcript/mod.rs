//! The conversation: messages, tool calls and tool specs as models and tools exchange them,
//! and the chat JSONL format users bring and take (`transcript::chat`).

pub mod chat;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation.
/// ```
/// let message = baton::Message::User { text: "Where is main?".into() };
/// let json = baton::serde_json::to_value(&message).unwrap();
/// assert_eq!(json, baton::json!({"role": "user", "text": "Where is main?"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Text from the user side (the lead's task, a repair request, a budget notice).
    User {
        /// The text.
        text: String,
    },
    /// What the model said: text and/or tool calls.
    Assistant {
        /// The text, possibly empty.
        text: String,
        /// Tool calls, possibly none.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// What compaction put in the window in place of the turns it folded: a summary of
    /// them, or the pinned ledger. Sent to a model as user text; told apart by its kind, not by
    /// its words.
    Compacted {
        /// A summary or the ledger.
        kind: Compaction,
        /// The text a model reads.
        text: String,
    },
    /// The result of one tool call.
    Tool {
        /// The call this answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// Output or error text.
        content: String,
        /// Whether the call failed.
        is_error: bool,
    },
}

impl Message {
    /// The message's text, for token estimates.
    pub fn text_len(&self) -> usize {
        match self {
            Message::User { text } | Message::Compacted { text, .. } => text.len(),
            Message::Assistant { text, tool_calls } => {
                text.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.to_string().len())
                        .sum::<usize>()
            }
            Message::Tool { content, .. } => content.len(),
        }
    }
}

/// How a summary's first line opens, as compaction writes it.
pub const SUMMARY_MARK: &str = "[compacted:";

/// The first line of the ledger as compaction renders it.
pub const LEDGER_TITLE: &str = "=== PINNED (standing conditions, verbatim) ===";

/// What a compaction message holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compaction {
    /// A summary of folded turns (its first line opens with [`SUMMARY_MARK`]).
    Summary,
    /// The pinned ledger (its first line is [`LEDGER_TITLE`]).
    Ledger,
}

impl Compaction {
    /// The kind of compaction message a text read from a transcript file is, if it is one:
    /// only a text that opens as compaction writes it — a summary's whole header line
    /// (`[compacted: messages A..=B folded by …; raw turns: …`), the ledger's whole title line —
    /// so a user's message that merely starts with a mark stays a user's message.
    pub fn of_text(text: &str) -> Option<Compaction> {
        static SUMMARY: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
        let summary = SUMMARY.get_or_init(|| {
            let mark = regex::escape(SUMMARY_MARK);
            regex::Regex::new(&format!(
                r"^{mark} messages \d+\.\.=\d+ folded by [^;\n]+; raw turns: "
            ))
            .expect("static regex")
        });
        let first = text.lines().next().unwrap_or("");
        if summary.is_match(first) {
            Some(Compaction::Summary)
        } else if first == LEDGER_TITLE {
            Some(Compaction::Ledger)
        } else {
            None
        }
    }
}

/// What a model is told about a tool: its name, what it does and its JSON Schema parameters.
/// ```
/// let spec = baton::ToolSpec {
///     name: "lookup_ticket".into(),
///     description: "Look a ticket up by id.".into(),
///     parameters: baton::json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
/// };
/// assert_eq!(spec.parameters["required"][0], "id");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// One paragraph for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

impl ToolSpec {
    /// Bytes of the parameters' schema as compact JSON, counted without building the text.
    pub fn parameters_len(&self) -> usize {
        struct Count(usize);
        impl std::io::Write for Count {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0 += buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut count = Count(0);
        let _ = serde_json::to_writer(&mut count, &self.parameters);
        count.0
    }

    /// Bytes of the description and the parameters' schema.
    pub fn text_len(&self) -> usize {
        self.description.len() + self.parameters_len()
    }
}

/// One call a model asked for.
/// ```
/// let call = baton::ToolCall { id: "sa1.1".into(), name: "grep".into(), arguments: baton::json!({"pattern": "fn main"}) };
/// assert_eq!(call.arguments["pattern"], "fn main");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Unique within its run; cited by negative evidence as `call:ID`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments object.
    pub arguments: Value,
}

/// A tool call's id within a run, `SUBAGENT.N`: the N-th call its subagent made (ids a model
/// gave are replaced by these, so a call names its subagent wherever it is cited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallId<'a> {
    /// The subagent that made it.
    pub(crate) subagent: &'a str,
    /// Its number among the subagent's calls, from 1.
    pub(crate) n: u32,
}

impl<'a> CallId<'a> {
    /// The subagent an id (or an effect's intent id, `SUBAGENT.N#ATTEMPT`) names.
    #[inline]
    pub(crate) fn subagent_of(id: &str) -> &str {
        id.split('.').next().unwrap_or(id)
    }
}

impl std::fmt::Display for CallId<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.subagent, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only what compaction writes reads back as its own: a user's text that merely opens
    /// with a mark is a user's text (its pins are taken, nothing of it is dropped).
    #[test]
    fn a_compaction_message_is_known_by_its_whole_header_only() {
        let summary =
            "[compacted: messages 0..=4 folded by extractive; raw turns: not stored]\nbody";
        assert_eq!(Compaction::of_text(summary), Some(Compaction::Summary));
        let ledger = format!("{LEDGER_TITLE}\n- [constraint @1] Never touch x.");
        assert_eq!(Compaction::of_text(&ledger), Some(Compaction::Ledger));
        for user in [
            "=== PINNED\nNever modify anything under /migrations.",
            "[compacted: hello",
            "=== PINNED (standing conditions, verbatim) === and more",
            "",
        ] {
            assert_eq!(Compaction::of_text(user), None, "{user}");
        }
    }
}
