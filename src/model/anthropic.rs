//! `--model anthropic:MODEL`: the Messages API — system, text / tool_use / tool_result blocks,
//! tools with their JSON schemas, streaming over server-sent events, the stable prefix (tools,
//! the role's system text, the first message) marked for prompt caching, and a handoff asked
//! for through a `submit_handoff` tool whose input schema is the contract's.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::http::{self, Answer, Endpoint, EndpointError, HttpOptions};
use super::sse::Event;
use super::{
    handoff_schema, ApiKey, ErrorKind, Message, Model, ModelConfig, ModelError, ModelRequest,
    ModelResponse, Price, StopReason, ToolChoice, Usage, HANDOFF_TOOL,
};
use crate::transcript::ToolCall;

/// The Messages API version sent with every request.
const VERSION: &str = "2023-06-01";

/// A model behind Anthropic's Messages API.
#[derive(Debug)]
pub struct AnthropicModel {
    endpoint: Endpoint,
}

impl AnthropicModel {
    /// `model` at `base_url` (default `https://api.anthropic.com`), authenticated by `key`.
    pub fn new(
        model: &str,
        key: ApiKey,
        base_url: Option<&str>,
        options: HttpOptions,
    ) -> Result<AnthropicModel, EndpointError> {
        let endpoint = Endpoint::new(
            "anthropic",
            model,
            base_url,
            "https://api.anthropic.com",
            Some(key),
            options,
        )?;
        Ok(AnthropicModel { endpoint })
    }

    /// The same model with this context window.
    pub fn with_window(mut self, tokens: usize) -> AnthropicModel {
        self.endpoint.window = tokens;
        self
    }

    /// The same model at this price (none: unknown).
    pub fn with_price(mut self, price: Option<Price>) -> AnthropicModel {
        self.endpoint.price = price;
        self
    }

    async fn attempt(&self, body: &Value, stream: bool) -> Result<ModelResponse, ModelError> {
        let key = self
            .endpoint
            .http
            .key
            .as_ref()
            .map(|k| k.expose().to_string());
        let headers = [
            ("x-api-key", key.unwrap_or_default()),
            ("anthropic-version", VERSION.to_string()),
        ];
        let url = format!("{}/v1/messages", self.endpoint.base);
        match self
            .endpoint
            .http
            .post(&url, &headers, body, stream)
            .await?
        {
            Answer::Json(value) => parse_message(&value).map_err(|e| self.endpoint.malformed(e)),
            Answer::Stream(mut events) => {
                let mut state = Streamed::default();
                while let Some(event) = events.next(&self.endpoint.http).await? {
                    state.on(&event).map_err(|e| match e {
                        Fault::Provider(kind, message) => {
                            let mut err = self.endpoint.http.error(kind, message);
                            err.request_id = events.request_id.clone();
                            err
                        }
                        Fault::Malformed(m) => self.endpoint.malformed(m),
                    })?;
                    if state.stopped {
                        break;
                    }
                }
                if !state.stopped {
                    let mut err = self.endpoint.http.error(
                        ErrorKind::Connection,
                        if state.started {
                            "the stream ended before the message did".to_string()
                        } else {
                            "the stream ended with no message".to_string()
                        },
                    );
                    err.request_id = events.request_id.clone();
                    return Err(err);
                }
                Ok(state.finish())
            }
        }
    }
}

#[async_trait]
impl Model for AnthropicModel {
    fn name(&self) -> String {
        self.endpoint.name()
    }

    fn context_window(&self) -> usize {
        self.endpoint.window
    }

    fn price(&self) -> Option<Price> {
        self.endpoint.price
    }

    fn config(&self) -> ModelConfig {
        self.endpoint.config(Vec::new())
    }

    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let stream = self.endpoint.http.options.stream;
        let body = body(&self.endpoint.model, &request, stream);
        let tokens = request.estimated_tokens() + u64::from(request.max_tokens);
        let mut response = self
            .endpoint
            .http
            .with_retries(&self.endpoint.model, tokens, |_| {
                self.attempt(&body, stream)
            })
            .await?;
        // No input counted (usage missing, zero, or not numbers): the call's is estimated.
        if response.usage.all_input() == 0 {
            response.usage = super::estimated_usage(&request, &response.text, &response.tool_calls);
            tracing::info!(provider = "anthropic", model = %self.endpoint.model, "usage estimated: the server reported none");
        }
        Ok(response)
    }
}

/// The request body for `request`.
pub(crate) fn body(model: &str, request: &ModelRequest, stream: bool) -> Value {
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    let mut tool_choice = match &request.tool_choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    };
    if request.handoff {
        tools.push(json!({
            "name": HANDOFF_TOOL,
            "description": "Hand off your report to the lead: the three sections of the contract as JSON. Call it alone, once you are done.",
            "input_schema": handoff_schema(),
        }));
        // With nothing else to call, the handoff is forced.
        if request.tools.is_empty() && request.tool_choice == ToolChoice::Auto {
            tool_choice = json!({"type": "tool", "name": HANDOFF_TOOL});
        }
    }
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    let mut messages = messages(&request.messages);
    // The first message (the compiled context) and the latest one are cache breakpoints.
    for i in [0, messages.len().saturating_sub(1)] {
        if let Some(block) = messages
            .get_mut(i)
            .and_then(|m| m["content"].as_array_mut())
            .and_then(|c| c.last_mut())
        {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
    }
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens,
        "system": system(&request.system),
        "messages": messages,
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = tool_choice;
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if stream {
        body["stream"] = json!(true);
    }
    body
}

/// The system text as blocks: the role's own text — the same for every subagent of a role —
/// is one block ending the cached prefix that the tools begin; the compiled checkpoint data
/// after it, which differs from subagent to subagent, is a block of its own.
fn system(text: &str) -> Value {
    let cached =
        |t: &str| json!({"type": "text", "text": t, "cache_control": {"type": "ephemeral"}});
    match text.find(crate::contracts::DATA_BEGIN) {
        Some(at) if at > 0 => json!([cached(&text[..at]), {"type": "text", "text": &text[at..]}]),
        _ => json!([cached(text)]),
    }
}

/// Our messages as alternating user and assistant turns of blocks: tool results go in the
/// user turn that follows their calls, consecutive user texts join one turn.
fn messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    let mut add = |role: &str, block: Value| match out.last_mut() {
        Some((r, blocks)) if r == role => blocks.push(block),
        _ => out.push((role.to_string(), vec![block])),
    };
    for m in messages {
        match m {
            Message::User { text } | Message::Compacted { text, .. } => {
                add("user", json!({"type": "text", "text": non_empty(text)}))
            }
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() || tool_calls.is_empty() {
                    add(
                        "assistant",
                        json!({"type": "text", "text": non_empty(text)}),
                    );
                }
                for call in tool_calls {
                    let input = if call.arguments.is_object() {
                        call.arguments.clone()
                    } else {
                        json!({"unparsed": call.arguments})
                    };
                    add(
                        "assistant",
                        json!({"type": "tool_use", "id": http::safe_id(&call.id), "name": call.name, "input": input}),
                    );
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => add(
                "user",
                json!({"type": "tool_result", "tool_use_id": http::safe_id(call_id), "content": non_empty(content), "is_error": is_error}),
            ),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn non_empty(text: &str) -> &str {
    if text.trim().is_empty() {
        "(empty)"
    } else {
        text
    }
}

fn stop_reason(text: &str) -> StopReason {
    match text {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        _ => StopReason::End,
    }
}

fn usage_of(value: &Value, usage: &mut Usage) {
    let n = |k: &str| value.get(k).and_then(Value::as_u64);
    if let Some(v) = n("input_tokens") {
        usage.input_tokens = v;
    }
    if let Some(v) = n("output_tokens") {
        usage.output_tokens = v;
    }
    if let Some(v) = n("cache_read_input_tokens") {
        usage.cache_read_tokens = v;
    }
    if let Some(v) = n("cache_creation_input_tokens") {
        usage.cache_write_tokens = v;
    }
}

/// One content block as it arrives.
#[derive(Debug, Default)]
struct Block {
    kind: String,
    text: String,
    id: String,
    name: String,
    json: String,
    input: Option<Value>,
}

/// The answer from its blocks: a `submit_handoff` call becomes the handoff's JSON text (the
/// other calls of that turn are dropped: the handoff ends the work).
fn finish(blocks: Vec<Block>, stop: StopReason, usage: Usage) -> ModelResponse {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut handoff = None;
    for b in blocks {
        match b.kind.as_str() {
            "text" => text.push_str(&b.text),
            "tool_use" => {
                let arguments = match b.input {
                    Some(v) if b.json.is_empty() => v,
                    _ => http::arguments(&b.json),
                };
                if b.name == HANDOFF_TOOL {
                    handoff = Some(match arguments {
                        Value::String(raw) => raw,
                        v => v.to_string(),
                    });
                } else {
                    calls.push(ToolCall {
                        id: b.id,
                        name: b.name,
                        arguments,
                    });
                }
            }
            _ => {}
        }
    }
    if let Some(h) = handoff {
        return ModelResponse {
            text: h,
            tool_calls: Vec::new(),
            usage,
            stop: if stop == StopReason::ToolUse {
                StopReason::End
            } else {
                stop
            },
        };
    }
    ModelResponse {
        text,
        tool_calls: calls,
        usage,
        stop,
    }
}

/// A whole (not streamed) message.
fn parse_message(v: &Value) -> Result<ModelResponse, String> {
    let content = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("no content array: {}", v))?;
    let blocks = content
        .iter()
        .map(|b| Block {
            kind: b["type"].as_str().unwrap_or_default().to_string(),
            text: b["text"].as_str().unwrap_or_default().to_string(),
            id: b["id"].as_str().unwrap_or_default().to_string(),
            name: b["name"].as_str().unwrap_or_default().to_string(),
            json: String::new(),
            input: Some(b.get("input").cloned().unwrap_or_else(|| json!({}))),
        })
        .collect();
    let mut usage = Usage::default();
    if let Some(u) = v.get("usage") {
        usage_of(u, &mut usage);
    }
    let stop = stop_reason(v["stop_reason"].as_str().unwrap_or_default());
    Ok(finish(blocks, stop, usage))
}

enum Fault {
    Provider(ErrorKind, String),
    Malformed(String),
}

/// A streamed message, event by event.
#[derive(Debug, Default)]
struct Streamed {
    blocks: BTreeMap<u64, Block>,
    usage: Usage,
    stop: StopReason,
    started: bool,
    stopped: bool,
}

impl Streamed {
    fn on(&mut self, event: &Event) -> Result<(), Fault> {
        let v: Value = serde_json::from_str(&event.data)
            .map_err(|e| Fault::Malformed(format!("an event is not JSON ({e})")))?;
        let kind = v["type"].as_str().unwrap_or(event.event.as_str());
        let index = v["index"].as_u64().unwrap_or(0);
        match kind {
            "message_start" => {
                self.started = true;
                usage_of(&v["message"]["usage"], &mut self.usage);
            }
            "content_block_start" => {
                let b = &v["content_block"];
                self.blocks.insert(
                    index,
                    Block {
                        kind: b["type"].as_str().unwrap_or_default().to_string(),
                        text: b["text"].as_str().unwrap_or_default().to_string(),
                        id: b["id"].as_str().unwrap_or_default().to_string(),
                        name: b["name"].as_str().unwrap_or_default().to_string(),
                        json: String::new(),
                        input: None,
                    },
                );
            }
            "content_block_delta" => {
                let d = &v["delta"];
                let block = self.blocks.entry(index).or_default();
                match d["type"].as_str().unwrap_or_default() {
                    "text_delta" => block.text.push_str(d["text"].as_str().unwrap_or_default()),
                    "input_json_delta" => block
                        .json
                        .push_str(d["partial_json"].as_str().unwrap_or_default()),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = v["delta"]["stop_reason"].as_str() {
                    self.stop = stop_reason(reason);
                }
                usage_of(&v["usage"], &mut self.usage);
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let e = &v["error"];
                let message = e["message"]
                    .as_str()
                    .unwrap_or("an error event")
                    .to_string();
                let k = match e["type"].as_str().unwrap_or_default() {
                    "overloaded_error" => ErrorKind::Overloaded,
                    "rate_limit_error" => ErrorKind::RateLimited,
                    "api_error" => ErrorKind::Server,
                    "authentication_error" | "permission_error" => ErrorKind::Auth,
                    "request_too_large" => ErrorKind::ContextTooLong,
                    "invalid_request_error" => ErrorKind::BadRequest,
                    _ => ErrorKind::Server,
                };
                return Err(Fault::Provider(k, message));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(self) -> ModelResponse {
        finish(self.blocks.into_values().collect(), self.stop, self.usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::ToolSpec;

    fn request(handoff: bool, tools: bool) -> ModelRequest {
        let spec = ToolSpec {
            name: "grep".into(),
            description: "search".into(),
            parameters: json!({"type": "object"}),
        };
        let mut r = ModelRequest::new(
            "sys".into(),
            vec![
                Message::User {
                    text: "brief".into(),
                },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "sa1.1".into(),
                        name: "grep".into(),
                        arguments: json!({"pattern": "x"}),
                    }],
                },
                Message::Tool {
                    call_id: "sa1.1".into(),
                    name: "grep".into(),
                    content: "a.rs:1: x".into(),
                    is_error: false,
                },
                Message::User {
                    text: "go on".into(),
                },
            ],
            if tools {
                vec![spec].into()
            } else {
                Vec::new().into()
            },
            100,
        );
        r.handoff = handoff;
        r
    }

    #[test]
    fn tool_results_follow_their_call_in_one_user_turn_with_safe_ids() {
        let b = body("m", &request(false, true), true);
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[1]["content"][0]["id"], "sa1_2e_1");
        assert_eq!(m[2]["role"], "user");
        assert_eq!(m[2]["content"][0]["tool_use_id"], "sa1_2e_1");
        assert_eq!(m[2]["content"][1]["text"], "go on");
        assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(b["tools"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(b["stream"], true);
        // The first message and the latest end the other breakpoints; nothing between.
        let marked: Vec<bool> = m
            .iter()
            .flat_map(|turn| turn["content"].as_array().unwrap().iter())
            .map(|block| block.get("cache_control").is_some())
            .collect();
        assert_eq!(marked, vec![true, false, false, true]);
        // The role's text and the checkpoint data are two blocks: only the first is cached.
        let mut r = request(false, true);
        r.system = format!(
            "Role text.\n{}\n- sa2 [b]: Active\n",
            crate::contracts::DATA_BEGIN
        );
        let b = body("m", &r, false);
        assert_eq!(b["system"][0]["text"], "Role text.\n");
        assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
        assert!(b["system"][1]["text"].as_str().unwrap().contains("sa2"));
        assert!(b["system"][1].get("cache_control").is_none());
    }

    #[test]
    fn the_handoff_tool_is_offered_and_forced_when_nothing_else_is() {
        let b = body("m", &request(true, true), false);
        assert_eq!(b["tools"][1]["name"], HANDOFF_TOOL);
        assert_eq!(b["tool_choice"]["type"], "auto");
        let b = body("m", &request(true, false), false);
        assert_eq!(
            b["tool_choice"],
            json!({"type": "tool", "name": HANDOFF_TOOL})
        );
        assert!(b["tools"][0]["input_schema"]["properties"]["settled_conclusions"].is_object());
    }
}
