//! A scripted model for fan-out measurements and tests: it reads its shard's one file
//! (`DIR/lib.rs`, lines 1-3) and hands off a valid handoff citing what it read. Shared by
//! `examples/bench_fanout.rs` and `tests/fanout.rs` (included with `#[path]`).

use std::time::Duration;

use async_trait::async_trait;
use baton::{Message, Model, ModelError, ModelRequest, ModelResponse, ToolCall, Usage};
use serde_json::json;

/// Two calls, each taking half of `latency`, so a subagent's model work takes `latency` in
/// all.
pub(crate) struct OneCall {
    pub(crate) latency: Duration,
}

/// The shard directory a brief names (`Scope: ["d00042"]`).
pub(crate) fn scope_of(request: &ModelRequest) -> String {
    let brief = request
        .messages
        .iter()
        .find_map(|m| match m {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or("");
    brief
        .split("Scope: [\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or(".")
        .to_string()
}

/// The text of shard `dir`'s one file.
pub(crate) fn file_text(dir: &str) -> String {
    format!("pub fn item_{dir}() -> u64 {{\n    42\n}}\n")
}

/// The handoff citing it.
pub(crate) fn handoff(dir: &str) -> String {
    format!(
        "## Settled conclusions\n- `item_{dir}` is defined here: `pub fn item_{dir}() -> u64 {{` [{dir}/lib.rs:1-3]\n## Open items\n## Hard constraints\n- none\n"
    )
}

/// A tree of one-file shards `DIR/lib.rs`, named by `name(i)` for `i` in `0..n`.
pub(crate) fn tree(n: usize, name: impl Fn(usize) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for i in 0..n {
        let shard = name(i);
        let path = dir.path().join(&shard);
        std::fs::create_dir(&path).expect("shard dir");
        std::fs::write(path.join("lib.rs"), file_text(&shard)).expect("shard file");
    }
    dir
}

#[async_trait]
impl Model for OneCall {
    fn name(&self) -> String {
        "one-call".into()
    }

    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency / 2).await;
        }
        let dir = scope_of(&request);
        let read = request
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool { .. }));
        let (text, tool_calls) = if read {
            (handoff(&dir), Vec::new())
        } else {
            let call = ToolCall {
                id: "read".into(),
                name: "read_file".into(),
                arguments: json!({"path": format!("{dir}/lib.rs"), "start_line": 1, "end_line": 3}),
            };
            (String::new(), vec![call])
        };
        let usage = Usage {
            input_tokens: request.estimated_tokens(),
            output_tokens: 20,
            ..Usage::default()
        };
        Ok(ModelResponse::new(text, tool_calls, usage))
    }
}
