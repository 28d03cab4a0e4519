//! `baton mcp` as a child process spoken to by rmcp's client over stdio, and the same server
//! over streamable HTTP at `/mcp` on `baton serve`: the tools and their schemas, `explore`
//! with increasing progress and a structured report whose sources validate, a run as a
//! handle (`start_explore` then `get_run`), `validate_handoff`, `brief`, and a bad root as
//! `isError` with its message.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, ContentBlock, ProgressNotificationParam,
    Request, ServerResult,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, PeerRequestOptions, RunningService,
};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::support::serve::{cli_runs, Serve};
use crate::support::{
    assert_citations_hold, assert_docs_answered, rust_tree, write_docs, DOCS_QUESTION,
};

/// A client that keeps every progress notification.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// Calls a tool with a progress token (as `send_cancellable_request` attaches one).
async fn call(
    service: &RunningService<RoleClient, Client>,
    name: &'static str,
    arguments: Value,
) -> CallToolResult {
    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new(name).with_arguments(args(arguments)),
    ));
    let handle = service
        .send_cancellable_request(
            request,
            PeerRequestOptions::with_timeout(Duration::from_secs(120)),
        )
        .await
        .expect("sent");
    match handle.await_response().await.expect("an answer") {
        ServerResult::CallToolResult(result) => result,
        other => panic!("not a tool result: {other:?}"),
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks `value` against the subset of JSON Schema the report schema uses: type,
/// required, properties, items.
fn conforms(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if let Some(kind) = schema["type"].as_str() {
        let ok = match kind {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_u64() || value.is_i64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            _ => true,
        };
        if !ok {
            return Err(format!("{at}: not {kind}: {value}"));
        }
    }
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        if value.get(name).is_none() {
            return Err(format!("{at}: `{name}` missing"));
        }
    }
    if let Some(props) = schema["properties"].as_object() {
        for (name, inner) in props {
            if let Some(v) = value.get(name) {
                conforms(inner, v, &format!("{at}.{name}"))?;
            }
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, v) in list.iter().enumerate() {
            conforms(items, v, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// The checks both transports share.
async fn exercise(
    service: &RunningService<RoleClient, Client>,
    tree: &std::path::Path,
    revision: ProtocolVersion,
) {
    // rmcp's client and this server agree on the revision the client asked for.
    let version = service.peer_info().map(|i| i.protocol_version.clone());
    assert_eq!(version, Some(revision));
    let tools = service.list_all_tools().await.expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for name in [
        "explore",
        "research",
        "start_explore",
        "start_research",
        "get_run",
        "validate_handoff",
        "brief",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let explore = tools.iter().find(|t| t.name == "explore").unwrap();
    let schema = Value::Object((*explore.output_schema.clone().expect("an output schema")).clone());
    let input = Value::Object((*explore.input_schema).clone());
    let research = tools.iter().find(|t| t.name == "research").unwrap();
    assert_eq!(
        research.output_schema, explore.output_schema,
        "one report schema"
    );
    assert!(research.input_schema["properties"]["corpus"].is_object());
    assert!(
        input["properties"]["root"].is_object() && input["properties"]["question"].is_object(),
        "{input}"
    );

    // explore: progress that increases, naming what each subagent handed off; the report.
    let before = service.service().progress.lock().unwrap().len();
    let result = call(
        service,
        "explore",
        json!({"root": tree.display().to_string(), "question": "where is the retry delay computed?", "limits": {"shards": 3}}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text_of(&result));
    let report_json = result
        .structured_content
        .clone()
        .expect("structured content");
    conforms(&schema, &report_json, "report").unwrap();
    let report: baton::Report = serde_json::from_value(report_json).unwrap();
    assert!(!report.handoff.settled_conclusions.is_empty());
    assert_citations_hold(&report, tree);
    assert!(
        text_of(&result).contains("## Settled conclusions"),
        "the markdown as text"
    );
    // The client handles notifications on tasks of their own: each may land just after the
    // answer.
    let mut progress: Vec<ProgressNotificationParam> = Vec::new();
    for _ in 0..100 {
        progress = service.service().progress.lock().unwrap()[before..].to_vec();
        if progress.len() >= report.subagents.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    progress.sort_by(|a, b| a.progress.total_cmp(&b.progress));
    assert_eq!(
        progress.len(),
        report.subagents.len(),
        "one notification per subagent: {progress:?}"
    );
    // Sent in increasing order: 1, 2, 3, … (sorted above, as they may be handled out of order).
    let steps: Vec<f64> = progress.iter().map(|p| p.progress).collect();
    assert_eq!(
        steps,
        (1..=steps.len()).map(|n| n as f64).collect::<Vec<_>>(),
        "{progress:?}"
    );
    // Each message: the subagent, its state, and what of its handoff was accepted.
    for p in &progress {
        let message = p.message.clone().unwrap_or_default();
        let (who, what) = message.split_once(": ").expect(&message);
        let summary = report
            .subagents
            .iter()
            .find(|s| who == format!("{} {}", s.id, s.state.label()))
            .unwrap_or_else(|| panic!("{message}: no such subagent and state"));
        let counts: Vec<&str> = what
            .split(|c: char| !c.is_ascii_digit())
            .filter(|d| !d.is_empty())
            .collect();
        if summary.state.accepted() {
            assert_eq!(
                what,
                format!(
                    "{} settled conclusion(s), {} open item(s) accepted",
                    counts[0], counts[1]
                ),
                "{message}"
            );
        } else {
            assert_eq!(what, "nothing accepted", "{message}");
        }
    }

    // A run as a handle.
    let started = call(
        service,
        "start_explore",
        json!({"root": ".", "question": "where is Cache?"}),
    )
    .await;
    let run_id = started.structured_content.as_ref().unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut state = String::new();
    for _ in 0..600 {
        let got = call(service, "get_run", json!({"run_id": run_id})).await;
        let value = got.structured_content.clone().unwrap();
        state = value["state"].as_str().unwrap().to_string();
        if state != "running" {
            let report: baton::Report = serde_json::from_value(value["report"].clone()).unwrap();
            assert_citations_hold(&report, tree);
            assert!(text_of(&got).contains("## Settled conclusions"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, "finished");
    let brief = call(service, "brief", json!({"run_id": run_id})).await;
    assert!(
        text_of(&brief).contains("where is Cache?"),
        "{}",
        text_of(&brief)
    );

    // research and start_research: the same over a folder of documents.
    write_docs(tree);
    let result = call(
        service,
        "research",
        json!({"corpus": "docs", "question": DOCS_QUESTION}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text_of(&result));
    let value = result.structured_content.clone().expect("structured");
    conforms(&schema, &value, "report").unwrap();
    let report: baton::Report = serde_json::from_value(value).unwrap();
    assert_docs_answered(&report, tree);
    let started = call(
        service,
        "start_research",
        json!({"corpus": "docs", "question": DOCS_QUESTION}),
    )
    .await;
    let run_id = started.structured_content.as_ref().unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut done = Value::Null;
    for _ in 0..600 {
        let got = call(service, "get_run", json!({"run_id": run_id})).await;
        done = got.structured_content.clone().unwrap();
        if done["state"] != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(done["kind"], "research");
    let report: baton::Report = serde_json::from_value(done["report"].clone()).unwrap();
    assert_docs_answered(&report, tree);

    // validate_handoff: the contract's verdict with its codes.
    let bad = "## Settled conclusions\n- `next_delay` doubles the wait [src/net/retry.rs:900-901]\n\n## Open items\n- none\n\n## Hard constraints\n- none\n";
    let verdict = call(
        service,
        "validate_handoff",
        json!({"handoff": bad, "root": "."}),
    )
    .await;
    let value = verdict.structured_content.clone().unwrap();
    assert_eq!(value["valid"], false);
    assert_eq!(
        value["violations"][0]["code"], "line_out_of_range",
        "{value}"
    );
    assert!(text_of(&verdict).contains("[line_out_of_range]"));

    // Failures are results with isError and the one line.
    for (tool, arguments, needle) in [
        (
            "explore",
            json!({"root": "/", "question": "q"}),
            "not under a root this server allows",
        ),
        (
            "explore",
            json!({"root": "missing", "question": "q"}),
            "no such directory",
        ),
        (
            "research",
            json!({"corpus": "src/..", "question": "q"}),
            "`..` is not accepted",
        ),
        ("get_run", json!({"run_id": "run-nope"}), "run-nope"),
        (
            "explore",
            json!({"root": ".", "question": "q", "model": "openai:gpt-4o"}),
            "not a model this server allows",
        ),
    ] {
        let result = call(service, tool, arguments).await;
        assert_eq!(result.is_error, Some(true), "{tool}");
        let text = text_of(&result);
        assert!(
            text.contains(needle) && !text.contains('\n'),
            "{tool}: {text}"
        );
    }
    // The connection is still up.
    assert!(service.list_all_tools().await.is_ok());
}

#[test]
fn baton_mcp_over_stdio_serves_the_tools() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_baton")).configure(|c| {
            c.arg("mcp")
                .arg("--allow-root")
                .arg(tree.path())
                .arg("--state")
                .arg(state.path())
                .args(["--offline-latency-ms", "20"])
                .env_remove("BATON_LOG");
        });
        let transport = TokioChildProcess::new(command).expect("spawn baton mcp");
        let service = Client::default()
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("initialised");
        exercise(&service, tree.path(), ProtocolVersion::V_2026_07_28).await;
        service.cancel().await.expect("closed");
    });
    // The runs landed in the state the command line reads.
    assert_eq!(
        cli_runs(state.path()).len(),
        4,
        "explore, start_explore, research, start_research"
    );
}

#[test]
fn the_mcp_server_over_streamable_http_serves_the_same_tools_behind_the_token() {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let token = "mcp-token-123";
    let serve = Serve::start(
        state.path(),
        tree.path(),
        &["--offline-latency-ms", "20"],
        &[("BATON_TOKEN", token)],
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    runtime().block_on(async {
        // Without the token: refused before MCP is spoken.
        let refused = Client::default()
            .serve(StreamableHttpClientTransport::from_uri(serve.url("/mcp")))
            .await;
        assert!(refused.is_err(), "no token, no session");
        let config =
            StreamableHttpClientTransportConfig::with_uri(serve.url("/mcp")).auth_header(token);
        let transport = StreamableHttpClientTransport::from_config(config);
        let service = Client::default()
            .serve(transport)
            .await
            .expect("initialised");
        // The legacy handshake: rmcp's `serve` initializes with the last revision that has one.
        exercise(
            &service,
            tree.path(),
            ProtocolVersion::LATEST_WITH_INITIALIZE,
        )
        .await;
        service.cancel().await.expect("closed");
    });
}

/// An `initialize` of the 2025-06-18 revision posted to `/mcp` with the token and a `Host`
/// header; its status (and, answered, the revision the server agreed to).
async fn initialize_with_host(base: &str, token: &str, host: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}});
    let client = crate::support::serve::client();
    let answer = client
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("host", host)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("answered");
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap_or_default();
    if status == 200 {
        // An earlier revision is negotiated, not refused.
        assert!(text.contains(r#""protocolVersion":"2025-06-18""#), "{text}");
    }
    status
}

#[test]
fn mcp_host_names_are_checked_on_loopback_and_left_to_the_token_elsewhere() {
    let tree = rust_tree();
    let token = "host-token-123";
    let root = tree.path().display().to_string();
    let serve_args = |addr: &str| -> Vec<String> {
        ["serve", "--allow-root", &root, "--addr", addr]
            .map(String::from)
            .to_vec()
    };
    let state = tempfile::tempdir().unwrap();
    let local = Serve::start_in(
        tree.path(),
        state.path(),
        &serve_args("127.0.0.1:0"),
        &[("BATON_TOKEN", token)],
    );
    let wide = Serve::start_in(
        tree.path(),
        state.path(),
        &serve_args("0.0.0.0:0"),
        &[("BATON_TOKEN", token)],
    );
    let port = wide.base.rsplit(':').next().unwrap().to_string();
    let wide_base = format!("http://127.0.0.1:{port}");
    runtime().block_on(async {
        let local_host = local.base.trim_start_matches("http://").to_string();
        assert_eq!(
            initialize_with_host(&local.base, token, &local_host).await,
            200
        );
        // A name that is not loopback's (DNS rebinding) is refused on a loopback server…
        assert_eq!(
            initialize_with_host(&local.base, token, "evil.example").await,
            403
        );
        // …and taken by one bound beyond loopback, where the token guards it.
        assert_eq!(
            initialize_with_host(&wide_base, token, "baton.example").await,
            200
        );
        assert_eq!(
            initialize_with_host(&wide_base, "wrong-token", "baton.example").await,
            401
        );
    });
}

/// Progress as the server writes it, line by line over stdio (rmcp's client may hand
/// notifications to its handler out of order; the wire may not).
#[test]
fn progress_goes_out_in_increasing_order_on_the_wire() {
    use std::io::{BufRead, BufReader, Write};
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["mcp", "--offline-latency-ms", "20", "--allow-root"])
        .arg(tree.path())
        .arg("--state")
        .arg(state.path())
        .env_remove("BATON_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "wire", "version": "1"}}}),
    );
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["result"]["protocolVersion"], "2025-06-18", "{first}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "explore", "_meta": {"progressToken": "p1"},
        "arguments": {"root": ".", "question": "where is Cache?", "limits": {"shards": 3}}}}),
    );
    let mut steps = Vec::new();
    let answer = loop {
        let line = lines.next().expect("a line").unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "p1");
            steps.push(message["params"]["progress"].as_f64().unwrap());
        } else if message["id"] == 2 {
            break message;
        }
    };
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let subagents = answer["result"]["structuredContent"]["subagents"]
        .as_array()
        .unwrap()
        .len();
    assert!(subagents >= 2, "{answer}");
    // One per subagent, each sent after the one before: 1, 2, 3, …
    assert_eq!(steps, (1..=subagents).map(|n| n as f64).collect::<Vec<_>>());
    // A run started as a handle finishes though the client goes away at once.
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "start_explore",
        "arguments": {"root": ".", "question": "where is next_delay?", "limits": {"shards": 3, "agents": 1}}}}),
    );
    let started: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let run = started["result"]["structuredContent"]["run_id"]
        .as_str()
        .expect("a run id")
        .to_string();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let listed = cli_runs(state.path());
    let row = listed.iter().find(|r| r["run_id"] == run.as_str()).cloned();
    assert_eq!(
        row.map(|r| r["state"].clone()),
        Some(json!("finished")),
        "{listed:?}"
    );
}
