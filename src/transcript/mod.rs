//! The conversation: messages, tool calls and tool specs as models and tools exchange them,
//! and the chat JSONL format users bring and take (`transcript::chat`).

pub mod chat;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation.
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
            Message::User { text } => text.len(),
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

/// What a model is told about a tool: its name, what it does and its JSON Schema parameters.
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Unique within its run; cited by negative evidence as `call:ID`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments object.
    pub arguments: Value,
}
