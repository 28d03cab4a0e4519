//! `--model openai:MODEL`: chat completions, as OpenAI and the compatible servers (llama.cpp,
//! vLLM, Ollama, LM Studio) speak them — tools and tool_calls, streamed chunks with argument
//! deltas and usage in the last chunk, a handoff asked for as `response_format: json_schema`
//! — and the dialects those servers differ in, each detected, fallen back from once, and
//! remembered for the rest of the run (`Dialect`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::http::{self, Answer, Endpoint, EndpointError, HttpOptions};
use super::{
    handoff_schema, ApiKey, ErrorKind, Fallback, Model, ModelConfig, ModelError, ModelRequest,
    ModelResponse, Price, StopReason, ToolChoice, Usage,
};
use crate::transcript::ToolCall;

/// How a handoff's JSON form is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `response_format: {type: json_schema}` with the contract's schema.
    Schema,
    /// `response_format: {type: json_object}`.
    Object,
    /// Nothing: the markdown form the role's text describes.
    Markdown,
}

/// What this server has been found to accept.
#[derive(Debug, Clone)]
struct Dialect {
    format: Format,
    stream: bool,
    stream_options: bool,
    /// `max_completion_tokens` instead of `max_tokens`.
    completion_tokens: bool,
    fallbacks: Vec<Fallback>,
    /// Fallbacks not yet given to a caller to log.
    unannounced: bool,
}

/// A model behind an OpenAI-compatible chat completions endpoint.
#[derive(Debug)]
pub struct OpenAiModel {
    endpoint: Endpoint,
    dialect: Mutex<Dialect>,
}

impl OpenAiModel {
    /// `model` at `base_url` (default `https://api.openai.com/v1`); the key is optional (a
    /// local server takes none).
    pub fn new(
        model: &str,
        key: Option<ApiKey>,
        base_url: Option<&str>,
        options: HttpOptions,
    ) -> Result<OpenAiModel, EndpointError> {
        let stream = options.stream;
        let endpoint = Endpoint::new(
            "openai",
            model,
            base_url,
            "https://api.openai.com/v1",
            key,
            options,
        )?;
        Ok(OpenAiModel {
            endpoint,
            dialect: Mutex::new(Dialect {
                format: Format::Schema,
                stream,
                stream_options: true,
                completion_tokens: false,
                fallbacks: Vec::new(),
                unannounced: false,
            }),
        })
    }

    /// The same model with this context window.
    pub fn with_window(mut self, tokens: usize) -> OpenAiModel {
        self.endpoint.window = tokens;
        self
    }

    /// The same model at this price (none: unknown).
    pub fn with_price(mut self, price: Option<Price>) -> OpenAiModel {
        self.endpoint.price = price;
        self
    }

    fn dialect(&self) -> Dialect {
        self.dialect
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Takes a fallback for the rest of the run (once: a sibling may have taken it first).
    fn fall_back(&self, change: &str, why: String, apply: impl FnOnce(&mut Dialect) -> bool) {
        let mut d = self.dialect.lock().unwrap_or_else(|e| e.into_inner());
        if apply(&mut d) {
            tracing::info!(provider = "openai", model = %self.endpoint.model, change, why = %why, "dialect fallback");
            d.fallbacks.push(Fallback {
                change: change.to_string(),
                why,
            });
            d.unannounced = true;
        }
    }

    /// One request as the dialect stands, falling back (and sending again at once) when the
    /// server says it does not take a field, or answers a stream with nothing.
    async fn attempt(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        // Each fallback is taken at most once, so this ends.
        for _ in 0..6 {
            let dialect = self.dialect();
            let body = body(&self.endpoint.model, request, &dialect);
            match self.send(&body, dialect.stream, request).await {
                Ok(Some(mut response)) => {
                    if !response.tool_calls.is_empty() || request.tools.is_empty() {
                        return Ok(response);
                    }
                    if let Some((calls, rest)) = calls_in_text(&response.text, request) {
                        self.fall_back(
                            "tool calls: read from the answer's text",
                            "the server put tool calls in the message text".into(),
                            |d| {
                                !d.fallbacks
                                    .iter()
                                    .any(|f| f.change.starts_with("tool calls"))
                            },
                        );
                        response.text = rest;
                        response.tool_calls = calls;
                        response.stop = StopReason::ToolUse;
                    }
                    return Ok(response);
                }
                Ok(None) => self.fall_back(
                    "stream: off",
                    "a streamed request was answered with an empty stream".into(),
                    |d| std::mem::replace(&mut d.stream, false),
                ),
                Err(e)
                    if dialect.format == Format::Schema
                        && request.handoff
                        && (unsupported(&e, "json_schema")
                            || unsupported(&e, "response_format")) =>
                {
                    self.fall_back(
                        "response_format: json_schema -> json_object",
                        e.message.clone(),
                        |d| {
                            let was = d.format == Format::Schema;
                            d.format = Format::Object;
                            was
                        },
                    )
                }
                Err(e)
                    if dialect.format != Format::Markdown
                        && request.handoff
                        && unsupported(&e, "response_format") =>
                {
                    self.fall_back(
                        "response_format: none (the markdown form)",
                        e.message.clone(),
                        |d| std::mem::replace(&mut d.format, Format::Markdown) != Format::Markdown,
                    )
                }
                Err(e) if dialect.stream_options && unsupported(&e, "stream_options") => self
                    .fall_back("stream_options: none", e.message.clone(), |d| {
                        std::mem::replace(&mut d.stream_options, false)
                    }),
                Err(e)
                    if !dialect.completion_tokens
                        && unsupported(&e, "max_tokens")
                        && e.message.contains("max_completion_tokens") =>
                {
                    self.fall_back(
                        "max_tokens -> max_completion_tokens",
                        e.message.clone(),
                        |d| !std::mem::replace(&mut d.completion_tokens, true),
                    )
                }
                Err(e) => return Err(e),
            }
        }
        Err(ModelError {
            provider: "openai".into(),
            ..ModelError::new(ErrorKind::Other, "no dialect of the request was accepted")
        })
    }

    /// One POST; `None` is an empty stream (no data, no `[DONE]`).
    async fn send(
        &self,
        body: &Value,
        stream: bool,
        request: &ModelRequest,
    ) -> Result<Option<ModelResponse>, ModelError> {
        let mut headers = Vec::new();
        if let Some(key) = &self.endpoint.http.key {
            headers.push(("authorization", format!("Bearer {}", key.expose())));
        }
        let url = format!("{}/chat/completions", self.endpoint.base);
        let response = match self
            .endpoint
            .http
            .post(&url, &headers, body, stream)
            .await?
        {
            Answer::Json(value) => {
                let mut s = Streamed::default();
                s.whole(&value).map_err(|m| self.endpoint.malformed(m))?;
                s
            }
            Answer::Stream(mut events) => {
                let mut s = Streamed::default();
                let mut done = false;
                while let Some(event) = events.next(&self.endpoint.http).await? {
                    if event.data.trim() == "[DONE]" {
                        done = true;
                        break;
                    }
                    s.chunk(&event.data).map_err(|fault| match fault {
                        Fault::Provider(kind, message) => {
                            let mut e = self.endpoint.http.error(kind, message);
                            e.request_id = events.request_id.clone();
                            e
                        }
                        Fault::Malformed(m) => self.endpoint.malformed(m),
                    })?;
                }
                if !s.started && !done {
                    // Nothing at all is the dialect that cannot stream; bytes that hold no
                    // event are a broken answer, and say so.
                    if events.bytes_read() == 0 {
                        return Ok(None);
                    }
                    let mut e = self
                        .endpoint
                        .malformed("the stream held no event (not server-sent events)".to_string());
                    e.request_id = events.request_id.clone();
                    return Err(e);
                }
                if s.finish.is_none() && !done {
                    let mut e = self.endpoint.http.error(
                        ErrorKind::Connection,
                        "the stream ended before the message did",
                    );
                    e.request_id = events.request_id.clone();
                    return Err(e);
                }
                s
            }
        };
        let (response, estimated) = response.finish(request);
        if estimated {
            self.fall_back(
                "usage: estimated",
                "the server reported no usage".into(),
                |d| !d.fallbacks.iter().any(|f| f.change.starts_with("usage")),
            );
        }
        Ok(Some(response))
    }
}

/// Whether a refused request names `field` as what the server does not take: a 400 or 422
/// whose message names it. Anything else is a genuine error and is not hidden.
fn unsupported(e: &ModelError, field: &str) -> bool {
    // Some servers choke on a field they do not know with a 500 that names it.
    matches!(e.status, Some(400 | 404 | 422 | 500 | 501)) && e.message.contains(field)
}

#[async_trait]
impl Model for OpenAiModel {
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
        self.endpoint.config(self.dialect().fallbacks)
    }

    fn take_config_change(&self) -> Option<ModelConfig> {
        let changed = {
            let mut d = self.dialect.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut d.unannounced, false)
        };
        changed.then(|| self.config())
    }

    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let tokens = request.estimated_tokens() + u64::from(request.max_tokens);
        self.endpoint
            .http
            .with_retries(&self.endpoint.model, tokens, |_| self.attempt(&request))
            .await
    }
}

/// The request body for `request` in `dialect`.
fn body(model: &str, request: &ModelRequest, dialect: &Dialect) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for m in &request.messages {
        messages.push(crate::transcript::chat::write_message_with(
            m,
            &http::safe_id,
        ));
    }
    let mut body = json!({"model": model, "messages": messages});
    let tokens_key = if dialect.completion_tokens {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[tokens_key] = json!(request.max_tokens);
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        body["tool_choice"] = match &request.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        };
    }
    if request.handoff {
        match dialect.format {
            Format::Schema => {
                body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "handoff", "schema": handoff_schema()}});
            }
            Format::Object => body["response_format"] = json!({"type": "json_object"}),
            Format::Markdown => {}
        }
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if dialect.stream {
        body["stream"] = json!(true);
        if dialect.stream_options {
            body["stream_options"] = json!({"include_usage": true});
        }
    }
    body
}

/// Why a streamed chunk could not be taken.
#[derive(Debug)]
enum Fault {
    /// The provider sent an error of this kind.
    Provider(ErrorKind, String),
    /// The chunk is not what the format says.
    Malformed(String),
}

/// The kind of an error sent inside a stream, from its `type` or `code`: only a transient one
/// is retried.
fn stream_error_kind(kind: &str) -> ErrorKind {
    let k = kind.to_lowercase();
    if k.contains("rate_limit") || k == "requests" || k == "tokens" {
        ErrorKind::RateLimited
    } else if k.contains("context_length") {
        ErrorKind::ContextTooLong
    } else if k.contains("invalid_request") || k.contains("invalid_argument") {
        ErrorKind::BadRequest
    } else if k.contains("auth") || k.contains("api_key") || k.contains("permission") {
        ErrorKind::Auth
    } else {
        ErrorKind::Server
    }
}

/// One tool call as its pieces arrive.
#[derive(Debug, Default)]
struct Call {
    id: String,
    name: String,
    arguments: String,
    /// Arguments sent as an object, not a string.
    object: Option<Value>,
}

/// The answer, whole or chunk by chunk.
#[derive(Debug, Default)]
struct Streamed {
    text: String,
    /// The calls in the order they began.
    calls: BTreeMap<u64, Call>,
    /// Which call a streamed `index` adds to now: a new id at an index already taken starts
    /// a new call (Ollama numbers every parallel call 0).
    slots: std::collections::HashMap<u64, u64>,
    finish: Option<String>,
    usage: Option<Usage>,
    started: bool,
    /// What a model said in refusing (OpenAI's `refusal` field, sent instead of content).
    refusal: String,
}

impl Streamed {
    /// Takes a usage the server reported, when it reads as one: its prompt tokens a positive
    /// number (every request has input), its completion tokens a number. Anything else —
    /// `{}`, zeros, negative numbers, strings — is no usage, and the call's is estimated.
    fn usage(&mut self, v: &Value) {
        let (Some(prompt), Some(_)) = (
            v["prompt_tokens"].as_u64().filter(|p| *p > 0),
            v["completion_tokens"].as_u64(),
        ) else {
            return;
        };
        let cached = v["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0)
            .min(prompt);
        self.usage = Some(Usage {
            input_tokens: prompt - cached,
            output_tokens: v["completion_tokens"].as_u64().unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        });
    }

    fn call(&mut self, index: u64, c: &Value) {
        let id = c["id"].as_str().filter(|id| !id.is_empty());
        let next = self.calls.len() as u64;
        let key = match self.slots.get(&index) {
            Some(&key)
                if id.is_none_or(|id| {
                    self.calls
                        .get(&key)
                        .is_some_and(|c| c.id.is_empty() || c.id == id)
                }) =>
            {
                key
            }
            _ => {
                self.slots.insert(index, next);
                next
            }
        };
        let call = self.calls.entry(key).or_default();
        if let Some(id) = id {
            call.id = id.to_string();
        }
        let f = &c["function"];
        if let Some(name) = f["name"].as_str() {
            call.name.push_str(name);
        }
        match &f["arguments"] {
            Value::String(piece) => call.arguments.push_str(piece),
            Value::Null => {}
            other => call.object = Some(other.clone()),
        }
    }

    fn finish_reason(&mut self, choice: &Value) {
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish = Some(reason.to_string());
        }
    }

    /// A whole answer.
    fn whole(&mut self, v: &Value) -> Result<(), String> {
        let choice = v["choices"]
            .get(0)
            .ok_or_else(|| format!("no choices: {v}"))?;
        self.started = true;
        let m = &choice["message"];
        self.text = m["content"].as_str().unwrap_or_default().to_string();
        if let Some(r) = m["refusal"].as_str().filter(|r| !r.is_empty()) {
            self.refusal.push_str(r);
        }
        for (i, c) in m["tool_calls"].as_array().into_iter().flatten().enumerate() {
            self.call(i as u64, c);
        }
        self.finish = Some(
            choice["finish_reason"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
        self.usage(&v["usage"]);
        Ok(())
    }

    /// One streamed chunk.
    fn chunk(&mut self, data: &str) -> Result<(), Fault> {
        let v: Value = serde_json::from_str(data)
            .map_err(|e| Fault::Malformed(format!("a chunk is not JSON ({e})")))?;
        if let Some(e) = v.get("error") {
            // An error sent inside the stream, of the kind its type or code names.
            let (message, kind) = http::error_message(&e.to_string());
            return Err(Fault::Provider(stream_error_kind(&kind), message));
        }
        self.started = true;
        self.usage(&v["usage"]);
        for choice in v["choices"].as_array().into_iter().flatten() {
            let d = &choice["delta"];
            if let Some(r) = d["refusal"].as_str() {
                self.refusal.push_str(r);
            }
            if let Some(t) = d["content"].as_str() {
                self.text.push_str(t);
            }
            for (i, c) in d["tool_calls"].as_array().into_iter().flatten().enumerate() {
                let index = c["index"].as_u64().unwrap_or(i as u64);
                self.call(index, c);
            }
            self.finish_reason(choice);
        }
        Ok(())
    }

    /// The response, and whether its usage had to be estimated.
    fn finish(self, request: &ModelRequest) -> (ModelResponse, bool) {
        let calls: Vec<ToolCall> = self
            .calls
            .into_values()
            .filter(|c| !c.name.is_empty())
            .map(|c| ToolCall {
                id: c.id,
                name: c.name,
                arguments: c.object.unwrap_or_else(|| http::arguments(&c.arguments)),
            })
            .collect();
        let refused = !self.refusal.is_empty();
        let stop = match self.finish.as_deref().unwrap_or_default() {
            _ if refused => StopReason::Refusal,
            "length" => StopReason::MaxTokens,
            "content_filter" => StopReason::Refusal,
            // `stop`, `tool_calls`, `function_call`, and the empty string some servers send.
            _ if !calls.is_empty() => StopReason::ToolUse,
            _ => StopReason::End,
        };
        let estimated = self.usage.is_none();
        let usage = self
            .usage
            .unwrap_or_else(|| super::estimated_usage(request, &self.text, &calls));
        (
            ModelResponse {
                // A refusal's words are its text: the subagent ends with them.
                text: if refused { self.refusal } else { self.text },
                tool_calls: calls,
                usage,
                stop,
            },
            estimated,
        )
    }
}

/// Tool calls a server put in the message text — `<tool_call>{"name": …, "arguments":
/// …}</tool_call>` blocks, or a text that is only such an object (or an array of them) naming
/// an offered tool — and the text left over.
fn calls_in_text(text: &str, request: &ModelRequest) -> Option<(Vec<ToolCall>, String)> {
    let offered = |name: &str| request.tools.iter().any(|t| t.name == name);
    let call_of = |v: &Value, i: usize| -> Option<ToolCall> {
        let name = v["name"].as_str().filter(|n| offered(n))?;
        let args = v.get("arguments").or_else(|| v.get("parameters"))?;
        Some(ToolCall {
            id: format!("text-{i}"),
            name: name.to_string(),
            arguments: match args {
                Value::String(s) => http::arguments(s),
                v => v.clone(),
            },
        })
    };
    let mut calls = Vec::new();
    let mut rest = String::new();
    let mut left = text;
    while let Some(start) = left.find("<tool_call>") {
        let after = &left[start + "<tool_call>".len()..];
        let Some(end) = after.find("</tool_call>") else {
            break;
        };
        let v: Value = serde_json::from_str(after[..end].trim()).ok()?;
        calls.push(call_of(&v, calls.len())?);
        rest.push_str(&left[..start]);
        left = &after[end + "</tool_call>".len()..];
    }
    rest.push_str(left);
    if !calls.is_empty() {
        return Some((calls, rest.trim().to_string()));
    }
    let body = crate::text::strip_fence(text);
    let v: Value = serde_json::from_str(body).ok()?;
    let items = match &v {
        Value::Array(items) => items.clone(),
        one => vec![one.clone()],
    };
    let calls: Option<Vec<ToolCall>> = items
        .iter()
        .enumerate()
        .map(|(i, v)| call_of(v, i))
        .collect();
    calls.filter(|c| !c.is_empty()).map(|c| (c, String::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Message, ToolSpec};

    fn request() -> ModelRequest {
        ModelRequest::new(
            "sys".into(),
            vec![Message::User {
                text: "brief".into(),
            }],
            vec![ToolSpec {
                name: "read_file".into(),
                description: "read".into(),
                parameters: json!({"type": "object"}),
            }]
            .into(),
            100,
        )
    }

    #[test]
    fn calls_in_the_text_are_read_only_for_offered_tools() {
        let r = request();
        let (calls, rest) = calls_in_text(
            "Let me look.\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}</tool_call>",
            &r,
        )
        .unwrap();
        assert_eq!(calls[0].arguments, json!({"path": "a.rs"}));
        assert_eq!(rest, "Let me look.");
        let (calls, _) = calls_in_text(
            "```json\n{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"b\\\"}\"}\n```",
            &r,
        )
        .unwrap();
        assert_eq!(calls[0].arguments, json!({"path": "b"}));
        assert!(calls_in_text("{\"name\":\"rm\",\"arguments\":{}}", &r).is_none());
        assert!(calls_in_text("{\"settled_conclusions\":[]}", &r).is_none());
    }

    #[test]
    fn parallel_calls_all_numbered_zero_stay_apart() {
        let mut s = Streamed::default();
        for chunk in [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"y\"}"}}]},"finish_reason":"tool_calls"}]}"#,
        ] {
            s.chunk(chunk).unwrap();
        }
        let (r, _) = s.finish(&request());
        let paths: Vec<&Value> = r.tool_calls.iter().map(|c| &c.arguments["path"]).collect();
        assert_eq!(paths, vec![&json!("x"), &json!("y")]);
        assert!(r.tool_calls.iter().all(|c| c.name == "read_file"));
    }

    #[test]
    fn argument_pieces_join_and_an_empty_finish_reason_is_read_from_the_calls() {
        let mut s = Streamed::default();
        for chunk in [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"a.rs\"}"}}]},"finish_reason":""}]}"#,
        ] {
            s.chunk(chunk).unwrap();
        }
        let (r, estimated) = s.finish(&request());
        assert!(estimated);
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "a.rs"}));
    }
}
