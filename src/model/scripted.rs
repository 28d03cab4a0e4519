//! The scripted model, for tests and examples: it plays one scripted turn per call, records
//! every request it was sent, and fails once the script runs out.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;

use super::{ErrorKind, Model, ModelError, ModelRequest, ModelResponse, StopReason, Usage};
use crate::tokens::estimate_tokens;
use crate::transcript::ToolCall;

/// One scripted turn.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedTurn {
    /// Answer with this text (a handoff, when there are no tool calls).
    Text(String),
    /// Call these tools: (name, arguments).
    Tools(Vec<(String, Value)>),
    /// Fail the call with this provider message.
    Fail(String),
    /// Answer with this text, cut at the answer's token limit (`max_tokens`).
    Cut(String),
}

impl ScriptedTurn {
    /// A turn calling one tool.
    pub fn tool(name: &str, arguments: Value) -> ScriptedTurn {
        ScriptedTurn::Tools(vec![(name.to_string(), arguments)])
    }

    /// A turn answering with text.
    pub fn text(text: impl Into<String>) -> ScriptedTurn {
        ScriptedTurn::Text(text.into())
    }
}

/// A model that plays a script, shared by every subagent that calls it.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    turns: Mutex<VecDeque<ScriptedTurn>>,
    requests: Mutex<Vec<ModelRequest>>,
    window: Option<usize>,
}

impl ScriptedModel {
    /// A model that will play `turns` in order.
    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> ScriptedModel {
        ScriptedModel {
            turns: Mutex::new(turns.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
            window: None,
        }
    }

    /// The same model with a context window of `tokens` (to exercise compaction).
    pub fn with_window(mut self, tokens: usize) -> ScriptedModel {
        self.window = Some(tokens);
        self
    }

    /// Every request sent so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Turns not played yet.
    pub fn remaining(&self) -> usize {
        self.turns.lock().map(|t| t.len()).unwrap_or(0)
    }
}

#[async_trait]
impl Model for ScriptedModel {
    fn name(&self) -> String {
        "scripted".to_string()
    }

    fn context_window(&self) -> usize {
        self.window.unwrap_or(128_000)
    }

    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let input_tokens = request.estimated_tokens();
        let next = {
            if let Ok(mut log) = self.requests.lock() {
                log.push(request);
            }
            self.turns.lock().ok().and_then(|mut t| t.pop_front())
        };
        let (text, tool_calls) = match next {
            None => return Err(ModelError::new(ErrorKind::Other, "the script has run out")),
            Some(ScriptedTurn::Fail(message)) => {
                return Err(ModelError::new(ErrorKind::Other, message))
            }
            Some(ScriptedTurn::Text(text)) => (text, Vec::new()),
            Some(ScriptedTurn::Cut(text)) => {
                let output_tokens = estimate_tokens(&text);
                return Ok(ModelResponse {
                    text,
                    tool_calls: Vec::new(),
                    usage: Usage {
                        input_tokens,
                        output_tokens,
                        ..Usage::default()
                    },
                    stop: StopReason::MaxTokens,
                });
            }
            Some(ScriptedTurn::Tools(calls)) => (
                String::new(),
                calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, (name, arguments))| ToolCall {
                        id: format!("scripted-{i}"),
                        name,
                        arguments,
                    })
                    .collect(),
            ),
        };
        let usage = Usage {
            input_tokens,
            output_tokens: estimate_tokens(&text),
            ..Usage::default()
        };
        Ok(ModelResponse::new(text, tool_calls, usage))
    }
}
