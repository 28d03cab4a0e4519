//! Tracing: a trace of one explore joins its event log — a span per subagent carrying its
//! `subagent_spawned` seq, a span per model call and per tool call under it, and a `logged`
//! event for every event of the log with its seq and kind; nothing on stderr by default.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use baton::checkpoint::{EventStore, RunEvent};
use baton::SqliteStore;
use serde_json::Value;

use crate::support::rust_tree;

/// One explore of the fixture tree with `--json` and state in `state`, `BATON_LOG` unset,
/// then `configure`d.
fn explore_with(
    state: &std::path::Path,
    configure: impl FnOnce(&mut Command),
) -> std::process::Output {
    let dir = rust_tree();
    let mut command = Command::new(env!("CARGO_BIN_EXE_baton"));
    command
        .arg("explore")
        .arg(dir.path())
        .arg("Where is next_delay defined?")
        .args(["--no-progress", "--json", "--state"])
        .arg(state)
        .env_remove("BATON_LOG");
    configure(&mut command);
    command.output().unwrap()
}

/// An explore traced as JSON with the filter `log` (none: `BATON_LOG` unset).
fn explore(state: &std::path::Path, log: Option<&str>) -> std::process::Output {
    explore_with(state, |command| {
        command.args(["--log-format", "json"]);
        if let Some(filter) = log {
            command.env("BATON_LOG", filter);
        }
    })
}

/// A span's name and its fields, as text.
type Span = (String, BTreeMap<String, String>);

/// The closed spans and the `logged` events (seq, kind) of a JSON trace.
fn read_trace(stderr: &str) -> (Vec<Span>, Vec<(u64, String)>) {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let (mut spans, mut logged) = (Vec::new(), Vec::new());
    // The one-line summary the run prints anyway is not part of the trace.
    for line in stderr.lines().filter(|l| l.starts_with('{')) {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let message = v["fields"]["message"].as_str().unwrap_or("");
        if message == "close" {
            let span = v["span"].as_object().unwrap();
            let fields = span
                .iter()
                .filter(|(k, _)| *k != "name")
                .map(|(k, v)| (k.clone(), text(v)))
                .collect();
            spans.push((text(&span["name"]), fields));
        } else if message == "logged" {
            logged.push((
                v["fields"]["seq"].as_u64().unwrap(),
                text(&v["fields"]["kind"]),
            ));
        }
    }
    (spans, logged)
}

#[test]
fn a_trace_of_one_explore_joins_its_event_log() {
    let state = tempfile::tempdir().unwrap();
    let out = explore(state.path(), Some("baton=debug"));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_id = report["run_id"].as_str().unwrap().to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (spans, logged) = read_trace(&stderr);
    let events = SqliteStore::open(state.path())
        .unwrap()
        .events(&run_id)
        .unwrap();

    // Every event of the log was traced with its seq and kind, and nothing else was.
    let log: Vec<(u64, String)> = events
        .iter()
        .map(|e| (e.seq, e.event.kind().to_string()))
        .collect();
    assert_eq!(logged, log);

    let of = |name: &str| -> Vec<&BTreeMap<String, String>> {
        spans
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, f)| f)
            .collect()
    };
    assert_eq!(of("run").len(), 1);
    assert_eq!(of("run")[0]["run_id"], run_id);
    // A span per subagent, carrying the seq of its spawn.
    let spawned: BTreeSet<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::SubagentSpawned { subagent, .. } => {
                Some((subagent.clone(), e.seq.to_string()))
            }
            _ => None,
        })
        .collect();
    assert!(!spawned.is_empty());
    let subagent_spans: BTreeSet<(String, String)> = of("subagent")
        .iter()
        .inspect(|f| assert_eq!(f["run_id"], run_id))
        .map(|f| (f["subagent"].clone(), f["seq"].clone()))
        .collect();
    assert_eq!(subagent_spans, spawned);
    // A span per model call, numbered by turn, each under a subagent of the log.
    let ids: BTreeSet<&String> = spawned.iter().map(|(id, _)| id).collect();
    let model_calls = of("model_call");
    assert!(model_calls.len() >= spawned.len(), "{}", model_calls.len());
    for call in &model_calls {
        assert_eq!(call["run_id"], run_id);
        assert!(ids.contains(&call["subagent"]), "{call:?}");
    }
    for id in &ids {
        let turns: Vec<u64> = model_calls
            .iter()
            .filter(|c| &&c["subagent"] == id)
            .map(|c| c["turn"].parse().unwrap())
            .collect();
        let expected: Vec<u64> = (1..=turns.len() as u64).collect();
        let mut sorted = turns.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, expected, "{id}");
    }
    // A span per tool call, joined to its `tool_called` event by call id.
    let called: BTreeSet<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::ToolCalled {
                subagent, call_id, ..
            } => Some((subagent.clone(), call_id.clone())),
            _ => None,
        })
        .collect();
    assert!(!called.is_empty());
    let tool_spans: BTreeSet<(String, String)> = of("tool_call")
        .iter()
        .map(|f| (f["subagent"].clone(), f["call_id"].clone()))
        .collect();
    assert_eq!(tool_spans, called);
}

#[test]
fn without_baton_log_nothing_is_traced() {
    let state = tempfile::tempdir().unwrap();
    let out = explore(state.path(), None);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // Only today's one-line summary.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("baton: "), "{stderr}");
}

#[cfg(unix)]
#[test]
fn a_filter_that_is_not_utf8_is_one_line_and_exit_2() {
    use std::os::unix::ffi::OsStrExt;
    let state = tempfile::tempdir().unwrap();
    let out = explore_with(state.path(), |command| {
        command.env("BATON_LOG", std::ffi::OsStr::from_bytes(b"baton=debug\xff"));
    });
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("BATON_LOG"), "{stderr}");
}

#[test]
fn a_bad_filter_is_one_line_and_exit_2() {
    let state = tempfile::tempdir().unwrap();
    let out = explore(state.path(), Some("baton=loud"));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("BATON_LOG"), "{stderr}");
}

/// With the `otlp` feature, the run's spans reach an OTLP/HTTP receiver (a loopback server
/// here) as JSON, with the fields the stderr trace carries.
#[cfg(feature = "otlp")]
#[test]
fn spans_are_exported_to_an_otlp_receiver() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let received: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let sink = Arc::clone(&received);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let sink = Arc::clone(&sink);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut length = 0;
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 {
                            return;
                        }
                        if header.trim().is_empty() {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':') {
                            if name.eq_ignore_ascii_case("content-length") {
                                length = value.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let path = request_line
                        .split_whitespace()
                        .nth(1)
                        .unwrap_or("")
                        .to_string();
                    sink.lock()
                        .unwrap()
                        .push((path, String::from_utf8_lossy(&body).into_owned()));
                    let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                    if reader.get_mut().write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });

    let state = tempfile::tempdir().unwrap();
    let out = explore_with(state.path(), |command| {
        command
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{port}"),
            );
    });
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_id = report["run_id"].as_str().unwrap();

    let received = received.lock().unwrap().clone();
    assert!(!received.is_empty(), "nothing reached the receiver");
    let mut spans: Vec<Span> = Vec::new();
    for (path, body) in &received {
        assert_eq!(path, "/v1/traces");
        let v: Value = serde_json::from_str(body).unwrap();
        for resource in v["resourceSpans"].as_array().unwrap() {
            for scope in resource["scopeSpans"].as_array().unwrap() {
                for span in scope["spans"].as_array().unwrap() {
                    let attributes = span["attributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| {
                            let value = &a["value"];
                            let text = value["stringValue"]
                                .as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| {
                                    value["intValue"].to_string().trim_matches('"').to_string()
                                });
                            (a["key"].as_str().unwrap().to_string(), text)
                        })
                        .collect();
                    spans.push((span["name"].as_str().unwrap().to_string(), attributes));
                }
            }
        }
    }
    let named = |name: &str| spans.iter().filter(|(n, _)| n == name).count();
    assert_eq!(named("run"), 1, "{spans:?}");
    let subagents = report["subagents"].as_array().unwrap().len();
    assert_eq!(named("subagent"), subagents, "{spans:?}");
    assert!(named("model_call") >= subagents);
    assert!(named("tool_call") >= 1);
    for (_, attributes) in &spans {
        assert_eq!(attributes.get("run_id").map(String::as_str), Some(run_id));
    }
}
