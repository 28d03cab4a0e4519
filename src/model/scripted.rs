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
/// ```
/// use baton::testing::ScriptedTurn;
/// let grep = ScriptedTurn::tool("grep", baton::json!({"pattern": "fn main"}));
/// assert_eq!(grep, ScriptedTurn::Tools(vec![("grep".into(), baton::json!({"pattern": "fn main"}))]));
/// ```
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
    /// Say this text and call these tools in the same turn.
    /// ```
    /// let turn = baton::testing::ScriptedTurn::Said(
    ///     "Next I read the manifest.".into(),
    ///     vec![("read_file".into(), baton::json!({"path": "Cargo.toml"}))],
    /// );
    /// assert!(matches!(turn, baton::testing::ScriptedTurn::Said(text, calls) if !text.is_empty() && calls.len() == 1));
    /// ```
    Said(String, Vec<(String, Value)>),
}

impl ScriptedTurn {
    /// A turn calling one tool.
    /// ```
    /// let turn = baton::testing::ScriptedTurn::tool("read_file", baton::json!({"path": "a.rs"}));
    /// assert!(matches!(turn, baton::testing::ScriptedTurn::Tools(calls) if calls.len() == 1));
    /// ```
    pub fn tool(name: &str, arguments: Value) -> ScriptedTurn {
        ScriptedTurn::Tools(vec![(name.to_string(), arguments)])
    }

    /// A turn answering with text.
    /// ```
    /// let turn = baton::testing::ScriptedTurn::text("done");
    /// assert_eq!(turn, baton::testing::ScriptedTurn::Text("done".into()));
    /// ```
    pub fn text(text: impl Into<String>) -> ScriptedTurn {
        ScriptedTurn::Text(text.into())
    }
}

/// A model that plays a script, shared by every subagent that calls it: a test of one's own
/// roles and tools runs offline with it.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::sync::Arc;
/// use baton::testing::{ScriptedModel, ScriptedTurn};
/// let handoff = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";
/// let model = Arc::new(ScriptedModel::new([ScriptedTurn::text(handoff)]));
/// let report = baton::Coordinator::builder()
///     .model(Arc::clone(&model) as Arc<dyn baton::Model>)
///     .role(baton::Role::new("worker"))
///     .build()
///     .run(baton::Task::job("Say nothing.").subtask("worker", "Nothing."))
///     .await
///     .unwrap();
/// assert_eq!(report.subagents[0].state, baton::SubagentState::HandedOff);
/// assert_eq!(model.requests().len(), 1);
/// # });
/// ```
#[derive(Debug, Default)]
pub struct ScriptedModel {
    turns: Mutex<VecDeque<ScriptedTurn>>,
    requests: Mutex<Vec<ModelRequest>>,
    window: Option<usize>,
}

impl ScriptedModel {
    /// A model that will play `turns` in order.
    /// ```
    /// let model = baton::testing::ScriptedModel::new([baton::testing::ScriptedTurn::text("a")]);
    /// assert_eq!(model.remaining(), 1);
    /// ```
    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> ScriptedModel {
        ScriptedModel {
            turns: Mutex::new(turns.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
            window: None,
        }
    }

    /// The same model with a context window of `tokens` (to exercise compaction).
    /// ```
    /// use baton::Model;
    /// let model = baton::testing::ScriptedModel::new([]).with_window(4096);
    /// assert_eq!(model.context_window(), 4096);
    /// ```
    pub fn with_window(mut self, tokens: usize) -> ScriptedModel {
        self.window = Some(tokens);
        self
    }

    /// Every request sent so far, in order.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use baton::Model;
    /// let model = baton::testing::ScriptedModel::new([baton::testing::ScriptedTurn::text("hi")]);
    /// let request = baton::ModelRequest::new("Be brief.".into(), vec![], Vec::new().into(), 64);
    /// model.complete(request.clone()).await.unwrap();
    /// assert_eq!(model.requests(), vec![request]);
    /// # });
    /// ```
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Turns not played yet.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use baton::Model;
    /// let model = baton::testing::ScriptedModel::new([baton::testing::ScriptedTurn::text("hi")]);
    /// let request = baton::ModelRequest::new(String::new(), vec![], Vec::new().into(), 64);
    /// assert_eq!(model.complete(request.clone()).await.unwrap().text, "hi");
    /// assert_eq!(model.remaining(), 0);
    /// assert!(model.complete(request).await.is_err(), "the script ran out");
    /// # });
    /// ```
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
            Some(ScriptedTurn::Text(text)) => (text, Vec::<(String, Value)>::new()),
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
            Some(ScriptedTurn::Tools(calls)) => (String::new(), calls),
            Some(ScriptedTurn::Said(text, calls)) => (text, calls),
        };
        let tool_calls = tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, arguments))| ToolCall {
                id: format!("scripted-{i}"),
                name,
                arguments,
            })
            .collect();
        let usage = Usage {
            input_tokens,
            output_tokens: estimate_tokens(&text),
            ..Usage::default()
        };
        Ok(ModelResponse::new(text, tool_calls, usage))
    }
}
