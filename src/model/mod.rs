//! The `Model` trait — messages and tool specs in; text and/or tool calls plus usage out — and
//! its implementations. Nothing outside this module knows a provider's wire format.

mod offline;
mod scripted;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::tools::{ToolCall, ToolSpec};
pub(crate) use offline::is_stop_word;
pub use offline::OfflineModel;
pub use scripted::{ScriptedModel, ScriptedTurn};

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

/// What is sent to a model for one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// System text for the role.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call this turn; empty means it must answer in text. Shared:
    /// a request clones a pointer, not every schema.
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// Most tokens the answer may take.
    pub max_tokens: u32,
}

impl ModelRequest {
    /// An estimate of the request's input tokens (about four bytes a token).
    pub fn estimated_tokens(&self) -> u64 {
        let bytes = self.system.len()
            + self.messages.iter().map(Message::text_len).sum::<usize>()
            + self.tools.iter().map(ToolSpec::text_len).sum::<usize>();
        estimate_tokens_of_len(bytes)
    }
}

/// Tokens used by one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// A model's answer for one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Text, possibly empty.
    pub text: String,
    /// Tool calls, possibly none.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used.
    pub usage: Usage,
}

/// A failed model call: the provider's message, never hidden, and whether to retry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model error: {message}")]
pub struct ModelError {
    /// What the provider (or the model implementation) said.
    pub message: String,
    /// Whether the same call may succeed later.
    pub retryable: bool,
}

/// A language model, local or remote. One call is one turn.
#[async_trait]
pub trait Model: Send + Sync {
    /// A short name for reports, e.g. `offline`.
    fn name(&self) -> String;
    /// The model's context window, in tokens: a subagent's window is compacted before a
    /// request would fill it.
    fn context_window(&self) -> usize {
        128_000
    }
    /// Plays one turn.
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError>;
}

/// About four bytes a token: the estimate used where no tokenizer is given.
pub fn estimate_tokens(text: &str) -> u64 {
    estimate_tokens_of_len(text.len())
}

fn estimate_tokens_of_len(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}
