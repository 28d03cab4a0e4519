//! A loopback HTTP/1.1 server for the provider tests: it records every request (method, path,
//! headers, JSON body) and answers each with what the test's handler returns — JSON, a
//! server-sent-event stream (cut short when asked), or raw bytes — then closes the connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) path: String,
    /// Header names in lower case.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answers.
pub(crate) enum Reply {
    /// A status, extra headers and a JSON body.
    Json(u16, Vec<(&'static str, String)>, Value),
    /// A 200 event stream: each item is one whole event's text (`event: x\ndata: {...}`);
    /// `cut` closes the connection after that many bytes of the stream.
    Sse(Vec<String>, Option<usize>),
    /// A 200 event stream that sends these events, then nothing for this long.
    SseThenStall(Vec<String>, std::time::Duration),
    /// A status, headers (the content type among them) and a body of any bytes.
    Raw(u16, Vec<(&'static str, String)>, Vec<u8>),
}

/// The running server; it stops with the test process.
pub(crate) struct Server {
    pub(crate) url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

type Handler = dyn Fn(&Recorded, usize) -> Reply + Send + Sync;

impl Server {
    /// Starts a server whose `handler` answers request number `n` (from 0).
    pub(crate) fn start(
        handler: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (seen, handler) = (Arc::clone(&seen), Arc::clone(&handler));
                std::thread::spawn(move || serve(stream, &seen, handler.as_ref()));
            }
        });
        Server { url, requests }
    }

    /// Every request so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, seen: &Mutex<Vec<Recorded>>, handler: &Handler) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = h.trim_end().split_once(':') {
            headers.push((name.trim().to_lowercase(), value.trim().to_string()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let recorded = Recorded {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let n = {
        let mut all = seen.lock().unwrap();
        all.push(recorded.clone());
        all.len() - 1
    };
    let mut out = stream;
    let _ = match handler(&recorded, n) {
        Reply::Json(status, extra, value) => {
            let body = value.to_string();
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in extra {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            out.write_all(head.as_bytes())
                .and_then(|_| out.write_all(body.as_bytes()))
        }
        Reply::SseThenStall(events, stall) => {
            let text: String = events.iter().map(|e| format!("{e}\n\n")).collect();
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            let sent = out
                .write_all(head.as_bytes())
                .and_then(|_| out.write_all(text.as_bytes()))
                .and_then(|_| out.flush());
            std::thread::sleep(stall);
            sent
        }
        Reply::Raw(status, extra, body) => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in extra {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            out.write_all(head.as_bytes())
                .and_then(|_| out.write_all(&body))
        }
        Reply::Sse(events, cut) => {
            let mut text: String = events.iter().map(|e| format!("{e}\n\n")).collect();
            if let Some(cut) = cut {
                text.truncate(cut.min(text.len()));
            }
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nrequest-id: req_stream\r\nconnection: close\r\n\r\n";
            out.write_all(head.as_bytes())
                .and_then(|_| out.write_all(text.as_bytes()))
        }
    };
    let _ = out.flush();
    let _ = out.shutdown(std::net::Shutdown::Both);
}

/// `data: JSON` as one event (OpenAI's chunks).
pub(crate) fn data(value: Value) -> String {
    format!("data: {value}")
}

/// `event: NAME` and `data: JSON` (Anthropic's events).
pub(crate) fn event(name: &str, value: Value) -> String {
    format!("event: {name}\ndata: {value}")
}

/// What llama-cpp-python's server (pydantic models of the chat completions request) refuses,
/// answered as it answers it: HTTP 500 with `{"error": {"message": "N validation errors: …",
/// "type": "internal_server_error"}}`. None when the request is one it takes: every message a
/// known role with string content (an assistant's may be absent beside `tool_calls`, never
/// null), a tool message with its `tool_call_id`, each tool call with an id, `type:
/// "function"` and arguments as a string.
pub(crate) fn strict_openai(body: &Value) -> Option<Reply> {
    let mut errors = Vec::new();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if messages.is_empty() {
        errors.push("('body', 'messages'): Field required".to_string());
    }
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        let content = m.get("content");
        let string_content = matches!(content, Some(Value::String(_)));
        match role {
            "system" | "user" | "tool" if !string_content => errors.push(format!(
                "('body', 'messages', {i}, 'content'): Input should be a valid string"
            )),
            "assistant" if content.is_some() && !string_content => errors.push(format!(
                "{{'type': 'string_type', 'loc': ('body', 'messages', {i}, 'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string', 'input': None}}"
            )),
            "system" | "user" | "tool" | "assistant" => {}
            other => errors.push(format!(
                "('body', 'messages', {i}, 'role'): Input should be 'system', 'user', 'assistant' or 'tool', not {other:?}"
            )),
        }
        if role == "tool" && !m["tool_call_id"].is_string() {
            errors.push(format!(
                "('body', 'messages', {i}, 'tool_call_id'): Field required"
            ));
        }
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            if !call["id"].is_string()
                || call["type"] != "function"
                || !call["function"]["name"].is_string()
                || !call["function"]["arguments"].is_string()
            {
                errors.push(format!(
                    "('body', 'messages', {i}, 'tool_calls'): Input should be a valid tool call"
                ));
            }
        }
    }
    (!errors.is_empty()).then(|| {
        Reply::Json(
            500,
            vec![("x-request-id", "req-validation".into())],
            serde_json::json!({"error": {"message": format!("{} validation errors:\n  {}", errors.len(), errors.join("\n  ")), "type": "internal_server_error", "param": null, "code": null}}),
        )
    })
}
