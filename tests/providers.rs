//! The providers against a loopback server replaying the documented response shapes: what
//! the client sent (headers, body) and what it made of the answer — plain and streamed, tool
//! calls split across chunks, retries on 429 (retry-after honoured) and 500, a stream cut
//! mid-message, invalid JSON in tool arguments, a handoff cut by max_tokens, and each
//! OpenAI-compatible dialect quirk with its fallback remembered.

use std::time::{Duration, Instant};

use baton::model::{
    AnthropicModel, ApiKey, ErrorKind, HttpOptions, Model, OpenAiModel, Retry, StopReason,
};
use baton::{Message, ModelRequest, ToolSpec};
use serde_json::{json, Value};

use crate::support::http::{data, event, Reply, Server};

fn options(stream: bool) -> HttpOptions {
    HttpOptions {
        retry: Retry {
            attempts: 3,
            base: Duration::from_millis(10),
            max_delay: Duration::from_secs(5),
        },
        idle_timeout: Duration::from_secs(5),
        stream,
        ..HttpOptions::default()
    }
}

fn request(handoff: bool) -> ModelRequest {
    let mut r = ModelRequest::new(
        "You explore.".into(),
        vec![Message::User {
            text: "Where is the retry policy?".into(),
        }],
        vec![ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            parameters: json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}),
        }]
        .into(),
        256,
    );
    r.handoff = handoff;
    r
}

fn anthropic(server: &Server, stream: bool) -> AnthropicModel {
    AnthropicModel::new(
        "claude-sonnet-4-5",
        ApiKey::new("sk-ant-test-key").unwrap(),
        Some(&server.url),
        options(stream),
    )
    .unwrap()
}

fn openai(server: &Server, stream: bool) -> OpenAiModel {
    OpenAiModel::new(
        "gpt-4o",
        ApiKey::new("sk-openai-test-key"),
        Some(&format!("{}/v1", server.url)),
        options(stream),
    )
    .unwrap()
}

fn anthropic_message(content: Value, stop: &str) -> Reply {
    Reply::Json(
        200,
        vec![("request-id", "req_1".into())],
        json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content,
               "stop_reason": stop,
               "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 50, "cache_creation_input_tokens": 10}}),
    )
}

/// A streamed Anthropic answer: some text, then a tool call whose input arrives in pieces.
fn anthropic_stream(pieces: &[&str], stop: &str) -> Vec<String> {
    let mut events = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 120, "output_tokens": 1, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 0}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", json!({"type": "ping"})),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "read it."}}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {}}}),
        ),
    ];
    for p in pieces {
        events.push(event("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": p}})));
    }
    events.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 1}),
    ));
    events.push(event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 42}})));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    events
}

#[tokio::test]
async fn anthropic_plain_sends_the_messages_api_shape_and_reads_tool_use() {
    let server = Server::start(|_, _| {
        anthropic_message(
            json!([{"type": "text", "text": "Reading."},
                   {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "src/a.rs"}}]),
            "tool_use",
        )
    });
    let model = anthropic(&server, false);
    let mut req = request(false);
    req.messages.push(Message::Assistant {
        text: String::new(),
        tool_calls: vec![baton::ToolCall {
            id: "sa1.1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "x"}),
        }],
    });
    req.messages.push(Message::Tool {
        call_id: "sa1.1".into(),
        name: "read_file".into(),
        content: "1: fn x() {}".into(),
        is_error: false,
    });
    let r = model.complete(req).await.unwrap();
    assert_eq!(r.text, "Reading.");
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.tool_calls[0].arguments, json!({"path": "src/a.rs"}));
    assert_eq!(
        (
            r.usage.input_tokens,
            r.usage.cache_read_tokens,
            r.usage.cache_write_tokens
        ),
        (100, 50, 10)
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test-key"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    let b = &sent.body;
    assert_eq!(b["model"], "claude-sonnet-4-5");
    assert_eq!(b["max_tokens"], 256);
    assert!(b.get("stream").is_none());
    assert_eq!(b["system"][0]["text"], "You explore.");
    assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(b["tools"][0]["input_schema"]["required"][0], "path");
    // The call and its result under one provider-safe id.
    assert_eq!(b["messages"][1]["content"][0]["type"], "tool_use");
    assert_eq!(b["messages"][1]["content"][0]["id"], "sa1_2e_1");
    assert_eq!(b["messages"][2]["content"][0]["tool_use_id"], "sa1_2e_1");
}

#[tokio::test]
async fn anthropic_streamed_joins_text_and_tool_input_split_across_chunks() {
    let server = Server::start(|_, _| {
        Reply::Sse(
            anthropic_stream(&["{\"pa", "th\": \"src/", "net/retry.rs\"}"], "tool_use"),
            None,
        )
    });
    let r = anthropic(&server, true)
        .complete(request(false))
        .await
        .unwrap();
    assert_eq!(r.text, "Let me read it.");
    assert_eq!(r.tool_calls[0].name, "read_file");
    assert_eq!(
        r.tool_calls[0].arguments,
        json!({"path": "src/net/retry.rs"})
    );
    assert_eq!(r.usage.output_tokens, 42);
    assert_eq!(r.usage.cache_read_tokens, 900);
    assert_eq!(server.requests()[0].body["stream"], true);
}

#[tokio::test]
async fn anthropic_429_waits_its_retry_after_then_succeeds() {
    let server = Server::start(|_, n| {
        if n == 0 {
            Reply::Json(
                429,
                vec![
                    ("retry-after", "1".into()),
                    ("request-id", "req_429".into()),
                ],
                json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
            )
        } else {
            anthropic_message(json!([{"type": "text", "text": "ok"}]), "end_turn")
        }
    });
    let start = Instant::now();
    let r = anthropic(&server, false)
        .complete(request(false))
        .await
        .unwrap();
    assert_eq!(r.text, "ok");
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "retry-after was not honoured"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn anthropic_500_then_success_and_an_overloaded_event_mid_stream_are_retried() {
    let server = Server::start(|_, n| match n {
        0 => Reply::Json(
            500,
            vec![],
            json!({"type": "error", "error": {"type": "api_error", "message": "boom"}}),
        ),
        1 => Reply::Sse(
            vec![event(
                "error",
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            )],
            None,
        ),
        _ => Reply::Sse(anthropic_stream(&["{}"], "tool_use"), None),
    });
    let r = anthropic(&server, true)
        .complete(request(false))
        .await
        .unwrap();
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn anthropic_a_stream_cut_mid_message_is_retried_not_taken() {
    let full = anthropic_stream(&["{\"path\": \"a\"}"], "tool_use");
    let cut_at = full.iter().take(5).map(|e| e.len() + 2).sum::<usize>() + 7;
    let server = Server::start(move |_, n| {
        if n == 0 {
            Reply::Sse(
                anthropic_stream(&["{\"path\": \"a\"}"], "tool_use"),
                Some(cut_at),
            )
        } else {
            Reply::Sse(anthropic_stream(&["{\"path\": \"b\"}"], "tool_use"), None)
        }
    });
    let r = anthropic(&server, true)
        .complete(request(false))
        .await
        .unwrap();
    assert_eq!(r.tool_calls[0].arguments, json!({"path": "b"}));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn anthropic_invalid_tool_json_and_a_cut_handoff_come_back_as_such() {
    let server = Server::start(|_, n| {
        if n == 0 {
            // A path with a trailing comma: not JSON.
            Reply::Sse(
                anthropic_stream(&["{\"path\": \"src/a.rs\",}"], "tool_use"),
                None,
            )
        } else {
            // submit_handoff cut by max_tokens.
            Reply::Sse(
                vec![
                    event(
                        "message_start",
                        json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
                    ),
                    event(
                        "content_block_start",
                        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_9", "name": "submit_handoff", "input": {}}}),
                    ),
                    event(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"settled_conclusions\": [{\"claim\": \"The re"}}),
                    ),
                    event(
                        "content_block_stop",
                        json!({"type": "content_block_stop", "index": 0}),
                    ),
                    event(
                        "message_delta",
                        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 256}}),
                    ),
                    event("message_stop", json!({"type": "message_stop"})),
                ],
                None,
            )
        }
    });
    let model = anthropic(&server, true);
    let r = model.complete(request(true)).await.unwrap();
    assert_eq!(
        r.tool_calls[0].arguments,
        json!("{\"path\": \"src/a.rs\",}")
    );
    let r = model.complete(request(true)).await.unwrap();
    assert_eq!(r.stop, StopReason::MaxTokens);
    assert!(r.tool_calls.is_empty());
    assert!(
        baton::Handoff::parse(&r.text).is_err(),
        "a cut handoff must not parse"
    );
    // The handoff tool was offered with the contract's schema.
    let tools = &server.requests()[1].body["tools"];
    assert_eq!(tools[1]["name"], "submit_handoff");
    assert!(tools[1]["input_schema"]["required"]
        .as_array()
        .unwrap()
        .contains(&json!("hard_constraints")));
}

#[tokio::test]
async fn anthropic_a_submitted_handoff_is_its_json_form() {
    let handoff = json!({"settled_conclusions": [{"claim": "RetryPolicy doubles the delay.", "sources": ["src/net/retry.rs:18-21"]}],
                         "open_items": [], "hard_constraints": []});
    let h = handoff.clone();
    let server = Server::start(move |_, _| {
        anthropic_message(
            json!([{"type": "tool_use", "id": "toolu_2", "name": "submit_handoff", "input": h}]),
            "tool_use",
        )
    });
    let mut req = request(true);
    req.tools = Vec::new().into();
    let r = anthropic(&server, false).complete(req).await.unwrap();
    assert_eq!(r.stop, StopReason::End);
    let parsed = baton::Handoff::parse(&r.text).unwrap();
    assert_eq!(parsed.settled_conclusions.len(), 1);
    // With no other tool, the handoff was forced.
    assert_eq!(
        server.requests()[0].body["tool_choice"],
        json!({"type": "tool", "name": "submit_handoff"})
    );
}

#[tokio::test]
async fn a_persistent_429_fails_with_provider_status_and_request_id_after_bounded_attempts() {
    let server = Server::start(|_, _| {
        Reply::Json(
            429,
            vec![
                ("retry-after", "0".into()),
                ("request-id", "req_limit".into()),
            ],
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "rate limited"}}),
        )
    });
    let e = anthropic(&server, false)
        .complete(request(false))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::RateLimited);
    assert_eq!(e.status, Some(429));
    assert_eq!(server.requests().len(), 3);
    let text = e.to_string();
    assert!(
        text.contains("anthropic")
            && text.contains("429")
            && text.contains("req_limit")
            && text.contains("after 3 attempts"),
        "{text}"
    );
    assert!(!text.contains("sk-ant-test-key"));
}

#[tokio::test]
async fn a_bad_request_is_not_retried() {
    let server = Server::start(|_, _| {
        Reply::Json(
            400,
            vec![],
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}),
        )
    });
    let e = anthropic(&server, false)
        .complete(request(false))
        .await
        .unwrap_err();
    assert_eq!(
        (e.kind, server.requests().len()),
        (ErrorKind::BadRequest, 1)
    );
}

fn openai_message(message: Value, finish: &str, usage: Option<Value>) -> Reply {
    let mut body = json!({"id": "chatcmpl-1", "choices": [{"index": 0, "message": message, "finish_reason": finish}]});
    if let Some(u) = usage {
        body["usage"] = u;
    }
    Reply::Json(200, vec![("x-request-id", "req_oa".into())], body)
}

/// A streamed OpenAI answer: a tool call whose arguments arrive in pieces, then usage.
fn openai_stream(pieces: &[&str], finish: &str, usage: bool, done: bool) -> Vec<String> {
    let mut events = vec![data(
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}, "finish_reason": null}]}),
    )];
    for p in pieces {
        events.push(data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}, "finish_reason": null}]})));
    }
    events.push(data(
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
    ));
    if usage {
        events.push(data(json!({"choices": [], "usage": {"prompt_tokens": 300, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 200}}})));
    }
    if done {
        events.push("data: [DONE]".into());
    }
    events
}

#[tokio::test]
async fn openai_plain_sends_chat_completions_and_reads_tool_calls() {
    let server = Server::start(|_, _| {
        openai_message(
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/a.rs\"}"}}]}),
            "tool_calls",
            Some(json!({"prompt_tokens": 50, "completion_tokens": 7})),
        )
    });
    let r = openai(&server, false)
        .complete(request(false))
        .await
        .unwrap();
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.tool_calls[0].arguments, json!({"path": "src/a.rs"}));
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (50, 7));
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer sk-openai-test-key")
    );
    assert_eq!(
        sent.body["messages"][0],
        json!({"role": "system", "content": "You explore."})
    );
    assert_eq!(sent.body["tools"][0]["function"]["name"], "read_file");
    assert_eq!(sent.body["tool_choice"], "auto");
    assert!(sent.body.get("stream").is_none());
}

#[tokio::test]
async fn openai_streamed_joins_argument_deltas_and_reads_usage_from_the_last_chunk() {
    let server = Server::start(|_, _| {
        Reply::Sse(
            openai_stream(
                &["{\"path\":", " \"src/net/", "retry.rs\"}"],
                "tool_calls",
                true,
                true,
            ),
            None,
        )
    });
    let model = openai(&server, true);
    let r = model.complete(request(false)).await.unwrap();
    assert_eq!(
        r.tool_calls[0].arguments,
        json!({"path": "src/net/retry.rs"})
    );
    assert_eq!(
        (
            r.usage.input_tokens,
            r.usage.cache_read_tokens,
            r.usage.output_tokens
        ),
        (100, 200, 12)
    );
    let b = &server.requests()[0].body;
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
    assert!(
        model.take_config_change().is_none(),
        "no fallback was taken"
    );
}

#[tokio::test]
async fn openai_429_with_retry_after_and_500_are_retried_and_a_cut_stream_too() {
    let server = Server::start(|_, n| match n {
        0 => Reply::Json(
            429,
            vec![("retry-after-ms", "300".into())],
            json!({"error": {"message": "Rate limit", "type": "requests"}}),
        ),
        1 => Reply::Json(500, vec![], json!({"error": {"message": "server error"}})),
        2 => Reply::Sse(
            openai_stream(&["{\"pa"], "tool_calls", false, false)[..2].to_vec(),
            None,
        ),
        _ => Reply::Sse(openai_stream(&["{}"], "tool_calls", true, true), None),
    });
    let model = OpenAiModel::new(
        "gpt-4o",
        None,
        Some(&server.url),
        HttpOptions {
            retry: Retry {
                attempts: 4,
                base: Duration::from_millis(5),
                max_delay: Duration::from_secs(1),
            },
            ..options(true)
        },
    )
    .unwrap();
    let start = Instant::now();
    let r = model.complete(request(false)).await.unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "retry-after-ms was not honoured"
    );
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(server.requests().len(), 4);
    // No key: no authorization header (a local server).
    assert!(server.requests()[0].header("authorization").is_none());
}

#[tokio::test]
async fn openai_json_schema_rejected_falls_back_to_json_object_then_markdown_and_remembers() {
    let server = Server::start(|r, _| match r.body["response_format"]["type"].as_str() {
        Some("json_schema") => Reply::Json(
            400,
            vec![],
            json!({"error": {"message": "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", "type": "invalid_request_error", "param": "response_format"}}),
        ),
        Some("json_object") => Reply::Json(
            400,
            vec![],
            json!({"error": "response_format json_object is not supported"}),
        ),
        _ => openai_message(
            json!({"role": "assistant", "content": "## Settled conclusions\n"}),
            "stop",
            Some(json!({"prompt_tokens": 1, "completion_tokens": 1})),
        ),
    });
    let model = openai(&server, false);
    let r = model.complete(request(true)).await.unwrap();
    assert_eq!(r.text, "## Settled conclusions\n");
    let formats: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.body["response_format"]["type"].clone())
        .collect();
    assert_eq!(
        formats,
        vec![json!("json_schema"), json!("json_object"), Value::Null]
    );
    // The schema sent was the contract's.
    assert!(
        server.requests()[0].body["response_format"]["json_schema"]["schema"]["properties"]
            ["open_items"]
            .is_object()
    );
    let config = model
        .take_config_change()
        .expect("the fallbacks are announced once");
    let changes: Vec<&str> = config.fallbacks.iter().map(|f| f.change.as_str()).collect();
    assert_eq!(
        changes,
        vec![
            "response_format: json_schema -> json_object",
            "response_format: none (the markdown form)"
        ]
    );
    assert!(model.take_config_change().is_none());
    // Remembered: the next call goes straight to the markdown form.
    model.complete(request(true)).await.unwrap();
    assert_eq!(server.requests().len(), 4);
    assert!(server.requests()[3].body.get("response_format").is_none());
}

#[tokio::test]
async fn openai_a_genuine_bad_request_is_not_hidden_behind_a_fallback() {
    let server = Server::start(|_, _| {
        Reply::Json(
            400,
            vec![],
            json!({"error": {"message": "model `gpt-4o` does not exist", "type": "invalid_request_error"}}),
        )
    });
    let model = openai(&server, false);
    let e = model.complete(request(true)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadRequest);
    assert!(e.to_string().contains("does not exist"));
    assert_eq!(server.requests().len(), 1);
    assert!(model.take_config_change().is_none());
}

#[tokio::test]
async fn openai_an_empty_stream_falls_back_to_whole_answers_for_the_rest_of_the_run() {
    let server = Server::start(|r, _| {
        if r.body["stream"] == true {
            Reply::Sse(Vec::new(), None)
        } else {
            openai_message(
                json!({"role": "assistant", "content": "done"}),
                "stop",
                Some(json!({"prompt_tokens": 3, "completion_tokens": 1})),
            )
        }
    });
    let model = openai(&server, true);
    assert_eq!(model.complete(request(false)).await.unwrap().text, "done");
    assert_eq!(model.complete(request(false)).await.unwrap().text, "done");
    let streamed: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| r.body["stream"] == true)
        .collect();
    assert_eq!(streamed, vec![true, false, false]);
    assert_eq!(model.config().fallbacks[0].change, "stream: off");
}

#[tokio::test]
async fn openai_empty_finish_reason_missing_usage_calls_in_text_and_object_arguments() {
    let server = Server::start(|_, n| match n {
        // finish_reason "" and no usage: the calls decide the stop, usage is estimated.
        0 => Reply::Sse(openai_stream(&["{\"path\": \"a\"}"], "", false, true), None),
        // A tool call written in the text.
        1 => Reply::Sse(
            vec![
                data(
                    json!({"choices": [{"index": 0, "delta": {"content": "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}</tool_call>"}, "finish_reason": "stop"}]}),
                ),
                "data: [DONE]".into(),
            ],
            None,
        ),
        // Arguments as an object, not a string.
        _ => Reply::Sse(
            vec![
                data(
                    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "type": "function", "function": {"name": "read_file", "arguments": {"path": "c"}}}]}, "finish_reason": "tool_calls"}]}),
                ),
                "data: [DONE]".into(),
            ],
            None,
        ),
    });
    let model = openai(&server, true);
    let r = model.complete(request(false)).await.unwrap();
    assert_eq!(r.stop, StopReason::ToolUse);
    assert!(
        r.usage.input_tokens > 0,
        "usage is estimated when none is sent"
    );
    let r = model.complete(request(false)).await.unwrap();
    assert_eq!(r.tool_calls[0].arguments, json!({"path": "b"}));
    assert_eq!(r.text, "");
    let r = model.complete(request(false)).await.unwrap();
    assert_eq!(r.tool_calls[0].arguments, json!({"path": "c"}));
    let changes: Vec<String> = model
        .config()
        .fallbacks
        .into_iter()
        .map(|f| f.change)
        .collect();
    assert_eq!(
        changes,
        vec![
            "usage: estimated",
            "tool calls: read from the answer's text"
        ]
    );
}

#[tokio::test]
async fn openai_invalid_arguments_and_a_handoff_cut_by_length() {
    let server = Server::start(|_, n| match n {
        0 => openai_message(
            json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"src/a.rs\",}"}}]}),
            "tool_calls",
            None,
        ),
        _ => openai_message(
            json!({"role": "assistant", "content": "{\"settled_conclusions\": [{\"claim\": \"The"}),
            "length",
            None,
        ),
    });
    let model = openai(&server, false);
    let r = model.complete(request(true)).await.unwrap();
    assert_eq!(
        r.tool_calls[0].arguments,
        json!("{\"path\": \"src/a.rs\",}")
    );
    let r = model.complete(request(true)).await.unwrap();
    assert_eq!(r.stop, StopReason::MaxTokens);
    assert!(baton::Handoff::parse(&r.text).is_err());
}

#[tokio::test]
async fn keys_never_show_in_debug_output() {
    let server = Server::start(|_, _| {
        Reply::Json(
            401,
            vec![],
            json!({"error": {"message": "bad key sk-ant-test-key"}}),
        )
    });
    let model = anthropic(&server, false);
    assert!(!format!("{model:?}").contains("sk-ant-test-key"));
    let e = model.complete(request(false)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(
        !format!("{e:?} {e}").contains("sk-ant-test-key"),
        "an echoed key is redacted"
    );
}

/// Cancelling a run aborts the model calls in flight: a server that would answer in a minute
/// holds nobody up.
#[tokio::test]
async fn cancelling_a_run_aborts_requests_in_flight() {
    let server = Server::start(|_, _| {
        std::thread::sleep(Duration::from_secs(60));
        Reply::Json(500, vec![], json!({}))
    });
    let dir = crate::support::rust_tree();
    let model = std::sync::Arc::new(openai(&server, true));
    let handle = baton::Coordinator::builder()
        .model(model)
        .build()
        .start(baton::Task::explore(
            "where is the retry policy?",
            dir.path(),
        ))
        .await
        .unwrap();
    // Wait until requests are out, then cancel.
    let start = Instant::now();
    while server.requests().is_empty() && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!server.requests().is_empty());
    handle.canceller().cancel();
    let report = tokio::time::timeout(Duration::from_secs(10), handle.report())
        .await
        .expect("the run ends without waiting for the model")
        .unwrap();
    assert!(report.cancelled);
    assert!(start.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn openai_stream_options_and_max_tokens_refusals_fall_back_and_json_to_a_stream_is_read_whole(
) {
    let server = Server::start(|r, _| {
        if r.body.get("stream_options").is_some() {
            return Reply::Json(
                400,
                vec![],
                json!({"error": {"message": "Unrecognized request argument supplied: stream_options"}}),
            );
        }
        if r.body.get("max_tokens").is_some() {
            return Reply::Json(
                400,
                vec![],
                json!({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "param": "max_tokens"}}),
            );
        }
        // A JSON body, though a stream was asked for.
        openai_message(
            json!({"role": "assistant", "content": "whole"}),
            "stop",
            Some(json!({"prompt_tokens": 2, "completion_tokens": 1})),
        )
    });
    let model = openai(&server, true);
    assert_eq!(model.complete(request(false)).await.unwrap().text, "whole");
    let last = &server.requests()[2].body;
    assert_eq!(last["max_completion_tokens"], 256);
    assert_eq!(
        last["stream"], true,
        "still streamed: the JSON answer was read whole"
    );
    let changes: Vec<String> = model
        .config()
        .fallbacks
        .into_iter()
        .map(|f| f.change)
        .collect();
    assert_eq!(
        changes,
        vec![
            "stream_options: none",
            "max_tokens -> max_completion_tokens"
        ]
    );
}

/// The live progress events carry each subagent's cost when the model's price is known.
#[tokio::test]
async fn progress_events_carry_the_cost() {
    let server = Server::start(|_, _| {
        openai_message(
            json!({"role": "assistant", "content": "## Settled conclusions\n## Open items\n- nothing found — stuck: nothing\n## Hard constraints\n- none\n"}),
            "stop",
            Some(json!({"prompt_tokens": 1000, "completion_tokens": 100})),
        )
    });
    let dir = crate::support::rust_tree();
    let model = std::sync::Arc::new(openai(&server, false));
    let handle = baton::Coordinator::builder()
        .model(model)
        .shards(1)
        .build()
        .start(baton::Task::explore(
            "where is the retry policy?",
            dir.path(),
        ))
        .await
        .unwrap();
    let mut events = handle.events();
    let report = handle.report().await.unwrap();
    // gpt-4o: $2.50 in and $10 out per million tokens.
    assert_eq!(report.usage.cost_usd, Some(0.0035));
    let mut costs = Vec::new();
    while let Some(e) = events.next().await {
        if let baton::RunEvent::ModelReturned { spent, .. }
        | baton::RunEvent::BudgetSpent { spent, .. } = e.unwrap().event
        {
            costs.push(spent.cost_micros);
        }
    }
    assert_eq!(costs.last(), Some(&3500), "{costs:?}");
}

#[tokio::test]
async fn a_stream_whose_headers_never_come_times_out_and_is_retried() {
    let server = Server::start(|_, _| {
        std::thread::sleep(Duration::from_secs(5));
        Reply::Sse(Vec::new(), None)
    });
    let model = AnthropicModel::new(
        "claude-sonnet-4-5",
        ApiKey::new("k").unwrap(),
        Some(&server.url),
        HttpOptions {
            idle_timeout: Duration::from_millis(200),
            retry: Retry {
                attempts: 2,
                base: Duration::from_millis(10),
                max_delay: Duration::from_secs(1),
            },
            ..options(true)
        },
    )
    .unwrap();
    let start = Instant::now();
    let e = model.complete(request(false)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn no_redirect_is_followed_so_the_key_stays_with_its_origin() {
    let elsewhere =
        Server::start(|_, _| anthropic_message(json!([{"type": "text", "text": "x"}]), "end_turn"));
    let target = format!("{}/v1/messages", elsewhere.url);
    let server =
        Server::start(move |_, _| Reply::Json(307, vec![("location", target.clone())], json!({})));
    let e = anthropic(&server, false)
        .complete(request(false))
        .await
        .unwrap_err();
    assert_eq!(e.status, Some(307));
    assert!(
        elsewhere.requests().is_empty(),
        "the key followed a redirect"
    );
}

#[tokio::test]
async fn a_key_echoed_on_any_error_path_is_redacted() {
    let key = "sk-ant-test-key";
    let server = Server::start(move |_, n| match n {
        // A 200 that is not a message; an error event mid-stream.
        0 => Reply::Json(
            200,
            vec![],
            json!({"type": "error", "error": {"message": format!("bad key {key}")}}),
        ),
        _ => Reply::Sse(
            vec![event(
                "error",
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": format!("bad key {key}")}}),
            )],
            None,
        ),
    });
    let e = anthropic(&server, false)
        .complete(request(false))
        .await
        .unwrap_err();
    assert!(!format!("{e:?} {e}").contains(key), "{e}");
    assert!(e.to_string().contains("[redacted]"), "{e}");
    let e = anthropic(&server, true)
        .complete(request(false))
        .await
        .unwrap_err();
    assert!(
        !format!("{e:?} {e}").contains(key) && e.to_string().contains("[redacted]"),
        "{e}"
    );
    let openai_key = "sk-openai-test-key";
    let server = Server::start(move |_, _| {
        Reply::Sse(
            vec![data(
                json!({"error": {"message": format!("Incorrect API key: Bearer {openai_key}")}}),
            )],
            None,
        )
    });
    let e = openai(&server, true)
        .complete(request(false))
        .await
        .unwrap_err();
    assert!(!format!("{e:?} {e}").contains(openai_key), "{e}");
}

#[tokio::test]
async fn bytes_that_are_not_server_sent_events_are_an_error_not_a_fallback() {
    let server = Server::start(|_, _| Reply::Sse(vec!["hello, not SSE".into()], None));
    let model = openai(&server, true);
    let e = model.complete(request(false)).await.unwrap_err();
    assert!(e.to_string().contains("held no event"), "{e}");
    assert!(model.config().fallbacks.is_empty());
}

/// Cancelling aborts the lead model's planning call: planning that would take a minute ends
/// at once.
#[tokio::test]
async fn cancelling_aborts_the_lead_model_s_calls() {
    let server = Server::start(|_, _| {
        std::thread::sleep(Duration::from_secs(60));
        Reply::Json(500, vec![], json!({}))
    });
    let dir = crate::support::rust_tree();
    let handle = baton::Coordinator::builder()
        .lead_model(std::sync::Arc::new(openai(&server, true)))
        .build()
        .start(baton::Task::explore(
            "where is the retry policy?",
            dir.path(),
        ))
        .await
        .unwrap();
    let start = Instant::now();
    while server.requests().is_empty() && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.requests().len(), 1, "the lead is planning");
    handle.canceller().cancel();
    let report = tokio::time::timeout(Duration::from_secs(10), handle.report())
        .await
        .expect("the run ends without waiting for the lead model")
        .unwrap();
    assert!(report.cancelled);
    assert!(report.subagents.is_empty());
    assert!(report
        .handoff
        .open_items
        .iter()
        .any(|o| o.stuck_on.contains("cancelled before it was planned")));
}

/// Cancelling while the lead model writes the report aborts that call: the run ends at once
/// with what the subagents handed off.
#[tokio::test]
async fn cancelling_aborts_the_lead_model_writing_the_report() {
    // The lead's plan is junk (the shards stand); its report never comes.
    let server = Server::start(|r, _| {
        if r.body.get("response_format").is_some() {
            std::thread::sleep(Duration::from_secs(60));
        }
        openai_message(
            json!({"role": "assistant", "content": "not a plan"}),
            "stop",
            None,
        )
    });
    let dir = crate::support::rust_tree();
    let handle = baton::Coordinator::builder()
        .lead_model(std::sync::Arc::new(openai(&server, false)))
        .build()
        .start(baton::Task::explore(
            "where is the retry policy?",
            dir.path(),
        ))
        .await
        .unwrap();
    let start = Instant::now();
    let writing = || {
        server
            .requests()
            .iter()
            .any(|r| r.body.get("response_format").is_some())
    };
    while !writing() && start.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(writing(), "the lead is writing the report");
    handle.canceller().cancel();
    let report = tokio::time::timeout(Duration::from_secs(10), handle.report())
        .await
        .expect("the run ends without waiting for the lead model")
        .unwrap();
    assert!(report.cancelled);
    assert!(report.subagents.iter().any(|s| s.state.accepted()));
    assert!(
        !report.handoff.settled_conclusions.is_empty(),
        "the merged handoffs are reported"
    );
}

#[tokio::test]
async fn a_refusal_comes_back_as_one_with_the_model_s_words() {
    let server = Server::start(|_, n| match n {
        0 => openai_message(
            json!({"role": "assistant", "content": null, "refusal": "I can't help with that."}),
            "stop",
            None,
        ),
        1 => Reply::Sse(
            vec![
                data(
                    json!({"choices": [{"index": 0, "delta": {"refusal": "I can't "}, "finish_reason": null}]}),
                ),
                data(
                    json!({"choices": [{"index": 0, "delta": {"refusal": "do that."}, "finish_reason": "stop"}]}),
                ),
                "data: [DONE]".into(),
            ],
            None,
        ),
        _ => anthropic_message(json!([{"type": "text", "text": "No."}]), "refusal"),
    });
    let r = openai(&server, false)
        .complete(request(true))
        .await
        .unwrap();
    assert_eq!(
        (r.stop, r.text.as_str()),
        (StopReason::Refusal, "I can't help with that.")
    );
    let r = openai(&server, true).complete(request(true)).await.unwrap();
    assert_eq!(
        (r.stop, r.text.as_str()),
        (StopReason::Refusal, "I can't do that.")
    );
    let r = anthropic(&server, false)
        .complete(request(true))
        .await
        .unwrap();
    assert_eq!((r.stop, r.text.as_str()), (StopReason::Refusal, "No."));
}

#[tokio::test]
async fn an_error_inside_a_stream_is_retried_only_when_it_may_pass() {
    let server = Server::start(|r, _| {
        let kind = if r.body["model"] == "gpt-4o" {
            "invalid_request_error"
        } else {
            "server_error"
        };
        Reply::Sse(
            vec![data(json!({"error": {"message": "no", "type": kind}}))],
            None,
        )
    });
    let e = openai(&server, true)
        .complete(request(false))
        .await
        .unwrap_err();
    assert_eq!(
        (e.kind, server.requests().len()),
        (ErrorKind::BadRequest, 1)
    );
    let other = OpenAiModel::new(
        "other",
        None,
        Some(&format!("{}/v1", server.url)),
        options(true),
    )
    .unwrap();
    let e = other.complete(request(false)).await.unwrap_err();
    assert_eq!(
        (e.kind, server.requests().len()),
        (ErrorKind::Server, 4),
        "retried: 3 attempts"
    );
}

#[tokio::test]
async fn a_stream_that_stalls_mid_message_times_out() {
    let server = Server::start(|_, _| {
        let start = anthropic_stream(&["{}"], "tool_use")[..3].to_vec();
        Reply::SseThenStall(start, Duration::from_secs(5))
    });
    let model = AnthropicModel::new(
        "claude-sonnet-4-5",
        ApiKey::new("k").unwrap(),
        Some(&server.url),
        HttpOptions {
            idle_timeout: Duration::from_millis(300),
            retry: Retry {
                attempts: 1,
                ..Retry::default()
            },
            ..options(true)
        },
    )
    .unwrap();
    let start = Instant::now();
    let e = model.complete(request(false)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert!(e.message.contains("idle"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(3));
}
