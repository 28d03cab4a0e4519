//! The wire format against servers that validate as real ones do, and what leaves a provider:
//! an assistant message beside its tool calls is sent as llama-cpp-python takes it; a
//! validation failure is not retried whatever its status; an HTML error page over 64 KiB is
//! read to its text; a refused redirect says so and where to; a key is taken out of request
//! ids, of error bodies in every common encoding, and of what a model answers.

use std::time::Duration;

use baton::model::{ApiKey, ErrorKind, HttpOptions, Model, OpenAiModel, Retry};
use baton::{Message, ModelRequest, ToolCall, ToolSpec};
use serde_json::json;

use crate::support::http::{strict_openai, Reply, Server};

const KEY: &str = "sk-wire-Secret/Key+0042";

fn options() -> HttpOptions {
    HttpOptions {
        retry: Retry {
            attempts: 4,
            base: Duration::from_millis(5),
            max_delay: Duration::from_millis(50),
        },
        idle_timeout: Duration::from_secs(5),
        stream: false,
        ..HttpOptions::default()
    }
}

fn openai(server: &Server) -> OpenAiModel {
    OpenAiModel::new(
        "smollm",
        ApiKey::new(KEY),
        Some(&format!("{}/v1", server.url)),
        options(),
    )
    .unwrap()
}

/// A second turn: the model called a tool with no text beside it, and the result came back.
fn second_turn() -> ModelRequest {
    ModelRequest::new(
        "You explore.".into(),
        vec![
            Message::User {
                text: "Where is the retry policy?".into(),
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "sa1.1".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "src/a.rs"}),
                }],
            },
            Message::Tool {
                call_id: "sa1.1".into(),
                name: "read_file".into(),
                content: "1\tfn a() {}".into(),
                is_error: false,
            },
        ],
        vec![ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }]
        .into(),
        64,
    )
}

fn answer(message: serde_json::Value) -> Reply {
    Reply::Json(
        200,
        vec![],
        json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 2}}),
    )
}

#[tokio::test]
async fn an_assistant_turn_with_tool_calls_is_sent_as_llama_cpp_python_takes_it() {
    let server = Server::start(|r, _| {
        strict_openai(&r.body)
            .unwrap_or_else(|| answer(json!({"role": "assistant", "content": "done"})))
    });
    let r = openai(&server).complete(second_turn()).await.unwrap();
    assert_eq!(r.text, "done");
    let sent = &server.requests()[0].body["messages"][2];
    assert_eq!(
        sent["content"], "",
        "a string beside the tool calls, not null"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_validation_failure_is_not_retried_even_when_answered_500() {
    // The server rejects every request as llama-cpp-python rejects `content: null`.
    let server = Server::start(|_, _| {
        strict_openai(&json!({"messages": [{"role": "assistant", "content": null}]})).unwrap()
    });
    let e = openai(&server).complete(second_turn()).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadRequest, "{e}");
    assert_eq!(e.status, Some(500));
    assert!(e.message.contains("Input should be a valid string"), "{e}");
    assert_eq!(
        server.requests().len(),
        1,
        "a deterministic 500 is sent once"
    );
}

#[tokio::test]
async fn an_html_error_page_over_64_kib_is_read_to_its_text() {
    let mut page = String::from(
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title><style>h1{color:red}</style>\
         <script>var x = '<b>';</script></head><body><h1>Bad gateway</h1><p>The upstream &amp; \
         its model did not answer.</p>",
    );
    page.push_str(&"<p>padding</p>".repeat(6000));
    page.push_str("</body></html>");
    assert!(page.len() > 64 * 1024);
    let server = Server::start(move |_, _| {
        Reply::Raw(
            502,
            vec![("content-type", "text/html; charset=utf-8".into())],
            page.clone().into_bytes(),
        )
    });
    let e = openai(&server).complete(second_turn()).await.unwrap_err();
    assert_eq!(e.status, Some(502));
    assert!(
        e.message
            .starts_with("502 Bad Gateway Bad gateway The upstream & its model did not answer."),
        "{e}"
    );
    assert!(
        !e.message.contains('<') && !e.message.contains("color"),
        "{e}"
    );
    assert_eq!(
        e.kind,
        ErrorKind::Server,
        "a gateway's 502 may pass: retried"
    );
    assert_eq!(server.requests().len(), 4);
    // A page whose text lies past the cap (a long script first) is named, not left empty;
    // a JSON body cut at the cap still gives its message.
    let script = format!(
        "<html><head><script>{}</script></head><body>late</body></html>",
        "x".repeat(70_000)
    );
    let cut = format!(
        r#"{{"error":{{"message":"the schema is invalid","type":"invalid_request_error","trace":"{}"}}}}"#,
        "y".repeat(70_000)
    );
    for (body, kind, want) in [
        (
            script,
            "text/html",
            "an HTML page with no text in its first 64 KiB",
        ),
        (cut, "application/json", "the schema is invalid"),
    ] {
        let server = Server::start(move |_, _| {
            Reply::Raw(
                400,
                vec![("content-type", kind.into())],
                body.clone().into_bytes(),
            )
        });
        let e = openai(&server).complete(second_turn()).await.unwrap_err();
        assert_eq!(e.message, want, "{e}");
    }
}

#[tokio::test]
async fn a_refused_redirect_says_it_was_refused_and_where_to() {
    let server = Server::start(|_, _| {
        Reply::Raw(
            302,
            vec![(
                "location",
                "https://user:pw@elsewhere.example/v2/chat?token=abc".into(),
            )],
            Vec::new(),
        )
    });
    let e = openai(&server).complete(second_turn()).await.unwrap_err();
    assert_eq!(e.status, Some(302));
    assert!(
        e.message
            .contains("redirected to https://elsewhere.example/v2/chat"),
        "{e}"
    );
    assert!(e.message.contains("not followed"), "{e}");
    assert!(
        !e.message.contains("pw") && !e.message.contains("token"),
        "{e}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_key_in_a_request_id_or_an_error_body_in_any_encoding_is_redacted() {
    let encoded = "sk-wire-Secret%2FKey%2B0042";
    let server = Server::start(move |_, n| {
        let id = if n % 2 == 0 {
            "request-id"
        } else {
            "x-request-id"
        };
        Reply::Json(
            401,
            vec![(id, format!("req-{KEY}"))],
            json!({"error": {"message": format!("bad key {} or {encoded} or {}", KEY.to_uppercase(), KEY.to_lowercase()), "type": "invalid_request_error"}}),
        )
    });
    for _ in 0..2 {
        let e = openai(&server).complete(second_turn()).await.unwrap_err();
        let shown = format!("{e} {e:?}").to_lowercase();
        assert!(!shown.contains("secret"), "{shown}");
        assert_eq!(e.request_id.as_deref(), Some("req-[redacted]"));
        assert_eq!(
            e.message, "bad key [redacted] or [redacted] or [redacted]",
            "{e}"
        );
    }
}

/// A key longer than the 128 characters a request id is cut to, or standing past them, is
/// redacted before the cut (a cut key would not be found).
#[tokio::test]
async fn a_long_key_in_a_long_request_id_is_redacted_before_it_is_cut() {
    let long_key: String = format!("sk-proj-{}", "Ab3xZ9".repeat(26));
    for (key, id) in [
        (long_key.clone(), format!("req-{long_key}")),
        (KEY.to_string(), format!("{}-{KEY}", "p".repeat(110))),
    ] {
        let echoed = id.clone();
        let server = Server::start(move |_, _| {
            Reply::Json(
                401,
                vec![("request-id", echoed.clone())],
                json!({"error": {"message": "no"}}),
            )
        });
        let model = OpenAiModel::new(
            "smollm",
            ApiKey::new(key.clone()),
            Some(&format!("{}/v1", server.url)),
            options(),
        )
        .unwrap();
        let e = model.complete(second_turn()).await.unwrap_err();
        let shown = format!("{e} {e:?} {:?}", e.request_id);
        assert!(!shown.contains(&key[..20]), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }
}

/// A key a model echoes is taken out of its text (the handoff, a plan, a report); its tool
/// calls run as it wrote them (the event log and every output are scrubbed of the key).
#[tokio::test]
async fn a_key_a_model_echoes_is_taken_out_of_its_answer() {
    let server = Server::start(|_, _| {
        answer(
            json!({"role": "assistant", "content": format!("The key is {}.", KEY.to_uppercase()),
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file",
                "arguments": json!({"path": KEY, "nested": [{"k": format!("x{KEY}")}]}).to_string()}}]}),
        )
    });
    let r = openai(&server).complete(second_turn()).await.unwrap();
    assert_eq!(r.text, "The key is [redacted].");
    assert_eq!(
        r.tool_calls[0].arguments,
        json!({"path": KEY, "nested": [{"k": format!("x{KEY}")}]})
    );
}

/// An Anthropic answer with no usage, or usage that is not numbers, has its tokens estimated:
/// a budget binds on the estimate, not on zero.
#[tokio::test]
async fn an_anthropic_answer_without_usage_is_estimated() {
    for usage in [
        None,
        Some(json!({"input_tokens": "many", "output_tokens": null})),
    ] {
        let server = Server::start(move |_, _| {
            let mut message = json!({"id": "m", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"});
            if let Some(u) = &usage {
                message["usage"] = u.clone();
            }
            Reply::Json(200, vec![], message)
        });
        let model = baton::model::AnthropicModel::new(
            "claude-sonnet-4-5",
            ApiKey::new("sk-ant-wire").unwrap(),
            Some(&server.url),
            HttpOptions {
                stream: false,
                ..options()
            },
        )
        .unwrap();
        let r = model.complete(second_turn()).await.unwrap();
        assert!(r.usage.input_tokens > 10, "{:?}", r.usage);
        assert!(r.usage.output_tokens >= 1, "{:?}", r.usage);
    }
}

/// A failed attempt's tokens are not counted: a stream that reported its input, then was
/// cut, is retried, and the call's usage is the attempt that answered.
#[tokio::test]
async fn a_failed_attempt_s_tokens_are_not_counted() {
    use crate::support::http::event;
    let server = Server::start(|_, n| {
        let start = event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": if n == 0 { 9000 } else { 120 }, "output_tokens": 1}}}),
        );
        let mut events = vec![
            start,
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}}),
            ),
        ];
        if n > 0 {
            events.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ));
            events.push(event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
            ));
            events.push(event("message_stop", json!({"type": "message_stop"})));
        }
        Reply::Sse(events, None)
    });
    let model = baton::model::AnthropicModel::new(
        "claude-sonnet-4-5",
        ApiKey::new("sk-ant-wire").unwrap(),
        Some(&server.url),
        HttpOptions {
            stream: true,
            ..options()
        },
    )
    .unwrap();
    let r = model.complete(second_turn()).await.unwrap();
    assert_eq!(r.text, "done");
    assert_eq!(server.requests().len(), 2, "the cut stream was retried");
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (120, 5));
}
