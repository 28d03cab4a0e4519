//! `baton serve` over a real loopback socket: runs started and followed over Server-Sent
//! Events, reconnects with `Last-Event-ID`, cancel, the token, allowed roots and models,
//! body caps, `--max-runs`, many followers, one state shared with the command line and
//! another server, and a server killed mid-run then resumed.

use std::time::Duration;

use baton::checkpoint::{EventStore, SqliteStore};
use serde_json::{json, Value};

use crate::support::serve::{
    cli_explore, cli_runs, client, post_json, send, settled, start_explore, Serve, SseReader,
};
use crate::support::{
    assert_citations_hold, assert_docs_answered, count_kind, rust_tree, write_docs, DOCS_QUESTION,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Slow enough to be caught mid-run: four shards, one at a time, each model call 100 ms.
fn slow() -> Value {
    json!({ "limits": { "shards": 4, "agents": 1 } })
}

#[test]
fn a_run_is_started_and_followed_over_sse_to_its_end() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start(state.path(), tree.path(), &[], &[]);
    runtime().block_on(async {
        let client = client();
        // A relative root is taken from the first allowed root.
        let run = start_explore(&client, &serve, ".", json!({})).await;
        let mut stream = SseReader::open(&client, &serve, &run, None, None).await;
        let events = stream.rest().await;
        let ids: Vec<u64> = events.iter().map(|e| e.id.unwrap()).collect();
        assert_eq!(
            ids,
            (1..=ids.len() as u64).collect::<Vec<_>>(),
            "every event once, in order"
        );
        assert_eq!(events.first().unwrap().event, "run_started");
        assert_eq!(events.last().unwrap().event, "run_finished");
        for e in &events {
            let data: Value = serde_json::from_str(&e.data).unwrap();
            assert_eq!(data["seq"].as_u64(), e.id, "data is the logged event");
            assert_eq!(data["event"]["kind"], e.event.as_str());
            assert_eq!(data["run_id"], run.as_str());
        }
        let body = settled(&client, &serve, &run).await;
        assert_eq!(body["state"], "finished");
        assert_eq!(body["events"].as_u64(), Some(ids.len() as u64));
        assert!(body["usage"]["tool_calls"].as_u64().unwrap() > 0);
        let report: baton::Report = serde_json::from_value(body["report"].clone()).unwrap();
        assert!(!report.handoff.settled_conclusions.is_empty());
        assert_citations_hold(&report, tree.path());
        // The brief, the approvals (none for an exploration), the listing.
        let brief = send(client.get(serve.url(&format!("/v1/runs/{run}/brief")))).await;
        assert_eq!(brief.status, 200);
        assert!(brief.body["markdown"]
            .as_str()
            .unwrap()
            .contains("where is the retry delay"));
        let approvals = send(client.get(serve.url(&format!("/v1/runs/{run}/approvals")))).await;
        assert_eq!(approvals.body["approvals"], json!([]));
        // A finished run's stream replays and ends.
        let again = SseReader::open(&client, &serve, &run, Some(ids.len() as u64 - 2), None)
            .await
            .rest()
            .await;
        assert_eq!(
            again.iter().map(|e| e.id.unwrap()).collect::<Vec<_>>(),
            ids[ids.len() - 2..].to_vec()
        );
        // A finished run resumed logs more: its view follows (it is not kept past its log).
        let before = send(client.get(serve.url(&format!("/v1/runs/{run}")))).await;
        let resumed = send(post_json(
            &client,
            &serve.url(&format!("/v1/runs/{run}/resume")),
            &json!({}),
        ))
        .await;
        assert_eq!(resumed.status, 202, "{}", resumed.body);
        let after = settled(&client, &serve, &run).await;
        assert_eq!(after["state"], "finished");
        assert!(
            after["events"].as_u64() > before.body["events"].as_u64(),
            "{after}"
        );
        let report: baton::Report = serde_json::from_value(after["report"].clone()).unwrap();
        assert_eq!(
            report.handoff.settled_conclusions.len(),
            body["report"]["handoff"]["settled_conclusions"]
                .as_array()
                .unwrap()
                .len()
        );
    });
}

#[test]
fn a_model_not_allowed_or_a_base_url_or_key_is_refused_and_no_connection_is_made() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    // A host the server's environment points a provider at: nothing may reach it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let host = format!("http://{}/v1", listener.local_addr().unwrap());
    // One model is allowed, so the server could reach that host: only a refusal keeps it away.
    let serve = Serve::start(
        state.path(),
        tree.path(),
        &["--allow-model", "openai:gpt-4o"],
        &[
            ("OPENAI_BASE_URL", &host),
            ("OPENAI_API_KEY", "sk-test-not-sent"),
        ],
    );
    let client = client();
    let url = serve.url("/v1/runs");
    let base = json!({"kind": "explore", "root": ".", "question": "where is next_delay?", "model": "openai:gpt-4o"});
    runtime().block_on(async {
        let with = |k: &str, v: Value| {
            let mut b = base.clone();
            b[k] = v;
            b
        };
        for (body, code) in [
            (
                with("model", json!("openai:gpt-4o-mini")),
                "model_not_allowed",
            ),
            (
                with("lead_model", json!("anthropic:claude-sonnet-4-5")),
                "model_not_allowed",
            ),
            (with("base_url", json!(host)), "forbidden_field"),
            (with("api_key", json!("sk-other")), "forbidden_field"),
            (
                with("limits", json!({"OPENAI_BASE_URL": host})),
                "forbidden_field",
            ),
            (with("prices", json!("/etc/prices.toml")), "forbidden_field"),
            (with("model", json!("nonsense")), "invalid_model"),
        ] {
            let answer = send(post_json(&client, &url, &body)).await;
            assert_eq!((answer.status, answer.code()), (400, code), "{body}");
            assert!(!answer.body["detail"].as_str().unwrap().contains('\n'));
        }
    });
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "no connection was made to the provider's host"
    );
    // Nothing was logged for the refused runs.
    assert!(SqliteStore::open_existing(state.path())
        .unwrap()
        .runs()
        .unwrap()
        .is_empty());
    // The control: the allowed model, asked for, does reach that host.
    runtime().block_on(async {
        let answer = send(post_json(&client, &url, &base)).await;
        assert_eq!(answer.status, 202, "{}", answer.body);
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match listener.accept() {
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the allowed model never connected"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn a_reconnect_with_last_event_id_gets_no_gap_and_no_duplicate() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        state.path(),
        tree.path(),
        &["--offline-latency-ms", "100"],
        &[],
    );
    runtime().block_on(async {
        let client = client();
        let run = start_explore(&client, &serve, ".", slow()).await;
        let mut first = SseReader::open(&client, &serve, &run, None, None).await;
        let mut seen = Vec::new();
        for _ in 0..6 {
            seen.push(first.next().await.unwrap());
        }
        drop(first);
        let last = seen.last().unwrap().id.unwrap();
        let mut second = SseReader::open(&client, &serve, &run, Some(last), None).await;
        let rest = second.rest().await;
        assert!(!rest.is_empty());
        seen.extend(rest);
        let ids: Vec<u64> = seen.iter().map(|e| e.id.unwrap()).collect();
        assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
        assert_eq!(seen.last().unwrap().event, "run_finished");
        // `?after=` does the same; a bad Last-Event-ID is refused.
        let after =
            send(client.get(serve.url(&format!("/v1/runs/{run}/events?after={}", ids.len() - 1))))
                .await;
        assert_eq!(after.status, 200);
        let bad = send(
            client
                .get(serve.url(&format!("/v1/runs/{run}/events")))
                .header("Last-Event-ID", "x"),
        )
        .await;
        assert_eq!((bad.status, bad.code()), (400, "invalid_last_event_id"));
        // The client that went away did not cancel the run.
        assert_eq!(settled(&client, &serve, &run).await["state"], "finished");
    });
}

#[test]
fn a_run_is_cancelled_on_request_and_only_then() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        state.path(),
        tree.path(),
        &["--offline-latency-ms", "200"],
        &[],
    );
    let run = runtime().block_on(async {
        let client = client();
        let run = start_explore(&client, &serve, ".", slow()).await;
        let mut stream = SseReader::open(&client, &serve, &run, None, None).await;
        while stream.next().await.unwrap().event != "subagent_spawned" {}
        let cancel = send(client.post(serve.url(&format!("/v1/runs/{run}/cancel")))).await;
        assert_eq!(cancel.status, 202, "{}", cancel.body);
        let rest = stream.rest().await;
        assert_eq!(rest.last().unwrap().event, "run_finished");
        let body = settled(&client, &serve, &run).await;
        assert_eq!(body["state"], "cancelled");
        assert_eq!(body["report"]["cancelled"], true);
        let again = send(client.post(serve.url(&format!("/v1/runs/{run}/cancel")))).await;
        assert_eq!((again.status, again.code()), (409, "run_not_live"));
        let unknown = send(client.post(serve.url("/v1/runs/run-nope/cancel"))).await;
        assert_eq!((unknown.status, unknown.code()), (404, "run_not_found"));
        run
    });
    // Finished by the command line: the server gives that report, not its cancelled one.
    let resumed = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["resume", &run, "--no-progress", "--json", "--state"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    runtime().block_on(async {
        let body = settled(&client(), &serve, &run).await;
        assert_eq!(body["state"], "finished", "{body}");
        assert_eq!(body["report"]["cancelled"], false, "{body}");
    });
}

#[test]
fn runs_outside_the_allowed_roots_are_not_shown_and_a_command_line_run_has_its_report() {
    let inside = rust_tree();
    let outside = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let mine = cli_explore(state.path(), inside.path());
    let theirs = cli_explore(state.path(), outside.path())["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let serve = Serve::start(state.path(), inside.path(), &[], &[]);
    runtime().block_on(async {
        let client = client();
        let listed = send(client.get(serve.url("/v1/runs"))).await;
        assert_eq!(listed.body["total"], 1, "{}", listed.body);
        assert_eq!(listed.body["runs"][0]["run_id"], mine["run_id"]);
        // The command line kept its report in the state: the server gives it.
        let seen =
            send(client.get(serve.url(&format!("/v1/runs/{}", mine["run_id"].as_str().unwrap()))))
                .await;
        assert_eq!(seen.body["state"], "finished");
        assert_eq!(
            seen.body["report"], mine,
            "the report the command line printed"
        );
        for (post, rest) in [
            (false, ""),
            (false, "/events"),
            (false, "/brief"),
            (true, "/resume"),
        ] {
            let url = serve.url(&format!("/v1/runs/{theirs}{rest}"));
            let answer = if post {
                send(post_json(&client, &url, &json!({}))).await
            } else {
                send(client.get(url)).await
            };
            assert_eq!(
                (answer.status, answer.code()),
                (403, "root_not_allowed"),
                "{rest}"
            );
            assert!(!answer
                .body
                .to_string()
                .contains(&outside.path().display().to_string()));
        }
    });
}

#[test]
fn with_a_token_every_route_but_healthz_needs_it() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let token = "s3cret-token-value";
    let serve = Serve::start(state.path(), tree.path(), &[], &[("BATON_TOKEN", token)]);
    runtime().block_on(async {
        let client = client();
        for request in [
            client.get(serve.url("/v1/runs")),
            client
                .get(serve.url("/v1/runs"))
                .bearer_auth("s3cret-token-valu"),
            client
                .get(serve.url("/v1/runs"))
                .header("authorization", token),
            post_json(
                &client,
                &serve.url("/v1/runs"),
                &json!({"kind": "explore", "root": ".", "question": "q"}),
            ),
            client.get(serve.url("/openapi.json")),
            client.post(serve.url("/mcp")),
        ] {
            let answer = send(request).await;
            assert_eq!((answer.status, answer.code()), (401, "unauthorized"));
            assert_eq!(answer.header("www-authenticate"), Some("Bearer"));
            assert!(!answer.body.to_string().contains(token));
        }
        // A refusal said before the body is read closes the connection (it cannot carry
        // another request); one without a body keeps it.
        let refused = send(post_json(
            &client,
            &serve.url("/v1/runs"),
            &json!({"kind": "explore", "root": ".", "question": "q"}),
        ))
        .await;
        assert_eq!(refused.header("connection"), Some("close"));
        let bodiless = send(client.get(serve.url("/v1/runs"))).await;
        assert_eq!(bodiless.status, 401);
        assert_eq!(bodiless.header("connection"), None);
        // A route that takes no body answers before reading one: closed too.
        let unread = send(client.get(serve.url("/healthz")).body("x".repeat(100_000))).await;
        assert_eq!(unread.status, 200);
        assert_eq!(unread.header("connection"), Some("close"));
        let ok = send(client.get(serve.url("/v1/runs")).bearer_auth(token)).await;
        assert_eq!(ok.status, 200);
        // The scheme's name in any case.
        let lower = client
            .get(serve.url("/v1/runs"))
            .header("authorization", format!("bearer {token}"));
        assert_eq!(send(lower).await.status, 200);
        let bad_limit = send(client.get(serve.url("/v1/runs?limit=0")).bearer_auth(token)).await;
        assert_eq!((bad_limit.status, bad_limit.code()), (400, "invalid_query"));
        let health = send(client.get(serve.url("/healthz"))).await;
        assert_eq!(health.status, 200);
        assert!(SqliteStore::open_existing(state.path())
            .unwrap()
            .runs()
            .unwrap()
            .is_empty());
    });
}

#[test]
fn binding_beyond_loopback_needs_a_token() {
    let state = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["serve", "--addr", "0.0.0.0:0", "--state"])
        .arg(state.path())
        .env_remove("BATON_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs BATON_TOKEN"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1);
}

#[test]
fn only_roots_under_an_allowed_root_are_used() {
    let tree = rust_tree();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.rs"), "fn secret() {}\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), tree.path().join("out")).unwrap();
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start(state.path(), tree.path(), &[], &[]);
    runtime().block_on(async {
        let client = client();
        let url = serve.url("/v1/runs");
        let allowed = tree.path().canonicalize().unwrap();
        for (root, status, code) in [
            (
                outside.path().display().to_string(),
                403,
                "root_not_allowed",
            ),
            ("src/../..".to_string(), 403, "root_not_allowed"),
            (
                format!("{}/src/..", allowed.display()),
                403,
                "root_not_allowed",
            ),
            ("out".to_string(), 403, "root_not_allowed"),
            ("Cargo.toml".to_string(), 403, "root_not_directory"),
            ("missing".to_string(), 404, "root_not_found"),
        ] {
            let body = json!({"kind": "explore", "root": root, "question": "where is secret?"});
            let answer = send(post_json(&client, &url, &body)).await;
            assert_eq!((answer.status, answer.code()), (status, code), "{root}");
        }
        // A research run's corpus is held to the same rule.
        let body = json!({"kind": "research", "corpus": "out", "question": "q"});
        let answer = send(post_json(&client, &url, &body)).await;
        assert_eq!((answer.status, answer.code()), (403, "root_not_allowed"));
    });
    assert!(SqliteStore::open_existing(state.path())
        .unwrap()
        .runs()
        .unwrap()
        .is_empty());
}

#[test]
fn an_oversized_body_is_413_and_a_run_beyond_max_runs_is_429() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        state.path(),
        tree.path(),
        &[
            "--max-body-bytes",
            "2048",
            "--max-runs",
            "1",
            "--offline-latency-ms",
            "100",
        ],
        &[],
    );
    runtime().block_on(async {
        let client = client();
        let url = serve.url("/v1/runs");
        let big = json!({"kind": "explore", "root": ".", "question": "x".repeat(4096)});
        let answer = send(post_json(&client, &url, &big)).await;
        assert_eq!((answer.status, answer.code()), (413, "body_too_large"));
        assert_eq!(answer.header("connection"), Some("close"));
        // Without a declared length (chunked), the cap holds as the body is read.
        let stream =
            futures_util::stream::iter((0..8).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1024])));
        let chunked = client
            .post(&url)
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(stream));
        let answer = send(chunked).await;
        assert_eq!((answer.status, answer.code()), (413, "body_too_large"));
        // A body that cannot be read to its end (a chunk size that is no number) is no JSON:
        // 400, not "over the limit".
        let addr = url.trim_start_matches("http://").trim_end_matches("/v1/runs");
        let mut raw = std::net::TcpStream::connect(addr).unwrap();
        raw.set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        std::io::Write::write_all(
            &mut raw,
            b"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        )
        .unwrap();
        let mut answered = Vec::new();
        let _ = std::io::Read::read_to_end(&mut raw, &mut answered);
        let answered = String::from_utf8_lossy(&answered);
        assert!(answered.starts_with("HTTP/1.1 400"), "{answered}");
        assert!(answered.contains("\"code\":\"invalid_json\""), "{answered}");
        assert!(answered.contains("could not be read to its end"), "{answered}");
        // The unread rest of the body ends the connection: the client is told to open anew.
        assert_eq!(answer.header("connection"), Some("close"));
        let run = start_explore(&client, &serve, ".", slow()).await;
        let second = json!({"kind": "explore", "root": ".", "question": "where is Cache?"});
        let answer = send(post_json(&client, &url, &second)).await;
        assert_eq!((answer.status, answer.code()), (429, "too_many_runs"));
        assert_eq!(answer.header("retry-after"), Some("5"));
        settled(&client, &serve, &run).await;
        // The slot is given back when the run ends.
        let answer = send(post_json(&client, &url, &second)).await;
        assert_eq!(answer.status, 202, "{}", answer.body);
        // A body read to its end keeps the connection.
        assert_eq!(answer.header("connection"), None);
    });
}

#[test]
fn fifty_clients_following_ten_runs_lose_no_event() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        state.path(),
        tree.path(),
        &["--max-runs", "10", "--offline-latency-ms", "20"],
        &[],
    );
    let runs = runtime().block_on(async {
        let client = client();
        let mut runs = Vec::new();
        for _ in 0..10 {
            runs.push(start_explore(&client, &serve, ".", json!({"limits": {"shards": 3}})).await);
        }
        let mut followers = Vec::new();
        for i in 0..50 {
            let run = runs[i % 10].clone();
            let client = client.clone();
            let serve = &serve;
            followers.push(async move {
                let mut stream = SseReader::open(&client, serve, &run, None, None).await;
                (run, stream.rest().await)
            });
        }
        let results = futures_util::future::join_all(followers).await;
        for (run, events) in &results {
            let ids: Vec<u64> = events.iter().map(|e| e.id.unwrap()).collect();
            assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "{run}");
            assert_eq!(events.last().unwrap().event, "run_finished", "{run}");
        }
        results
    });
    let store = SqliteStore::open_existing(state.path()).unwrap();
    for (run, events) in &runs {
        let logged = store.events(run).unwrap();
        assert_eq!(
            events.len(),
            logged.len(),
            "{run}: every logged event reached the client"
        );
        for (sse, logged) in events.iter().zip(&logged) {
            let data: baton::checkpoint::LoggedEvent = serde_json::from_str(&sse.data).unwrap();
            assert_eq!(&data, logged);
        }
    }
}

#[test]
fn keep_alives_go_out_while_a_stream_is_idle() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        state.path(),
        tree.path(),
        &["--keep-alive-secs", "1", "--offline-latency-ms", "1200"],
        &[],
    );
    runtime().block_on(async {
        let client = client();
        let run = start_explore(&client, &serve, ".", json!({"limits": {"shards": 1}})).await;
        let mut stream = SseReader::open(&client, &serve, &run, None, None).await;
        stream.rest().await;
        assert!(
            stream.comments >= 1,
            "a keep-alive while the model took its time"
        );
    });
}

#[test]
fn one_state_serves_the_command_line_and_two_servers() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let cli_run = cli_explore(state.path(), tree.path())["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = Serve::start(
        state.path(),
        tree.path(),
        &["--offline-latency-ms", "20"],
        &[],
    );
    let b = Serve::start(
        state.path(),
        tree.path(),
        &["--offline-latency-ms", "20"],
        &[],
    );
    let started = runtime().block_on(async {
        let client = client();
        let seen = send(client.get(a.url(&format!("/v1/runs/{cli_run}")))).await;
        assert_eq!(
            seen.body["state"], "finished",
            "the command line's run, seen by the server"
        );
        let mut started = Vec::new();
        for i in 0..6 {
            let serve = if i % 2 == 0 { &a } else { &b };
            started
                .push(start_explore(&client, serve, ".", json!({"limits": {"shards": 2}})).await);
        }
        for run in &started {
            // Each server sees the other's runs.
            for serve in [&a, &b] {
                assert_eq!(
                    settled(&client, serve, run).await["state"],
                    "finished",
                    "{run}"
                );
            }
        }
        let listed = send(client.get(b.url("/v1/runs?limit=100"))).await;
        assert_eq!(listed.body["total"], 7);
        started
    });
    let rows = cli_runs(state.path());
    assert_eq!(rows.len(), 7);
    for run in started.iter().chain([&cli_run]) {
        let row = rows
            .iter()
            .find(|r| r["run_id"] == run.as_str())
            .expect("listed");
        assert_eq!(row["state"], "finished");
    }
    let brief = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["brief", &started[0], "--state"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(brief.status.code(), Some(0));
}

#[test]
fn a_server_killed_mid_run_lists_it_interrupted_and_resumes_it() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let mut serve = Serve::start(
        state.path(),
        tree.path(),
        &["--offline-latency-ms", "150"],
        &[],
    );
    let run = runtime().block_on(async {
        let client = client();
        let run = start_explore(&client, &serve, ".", slow()).await;
        let mut stream = SseReader::open(&client, &serve, &run, None, None).await;
        let mut seen = Vec::new();
        loop {
            let event = stream.next().await;
            let Some(event) = event else {
                panic!("the stream ended first: {seen:?}")
            };
            if event.event == "handoff_accepted" {
                break;
            }
            seen.push((event.event, event.data));
        }
        run
    });
    serve.child.kill().unwrap(); // SIGKILL
    serve.child.wait().unwrap();
    let before = SqliteStore::open_existing(state.path())
        .unwrap()
        .events(&run)
        .unwrap();
    assert_eq!(count_kind(&before, "run_finished"), 0, "killed mid-run");
    let accepted_before = count_kind(&before, "handoff_accepted");
    let serve = Serve::start(state.path(), tree.path(), &[], &[]);
    runtime().block_on(async {
        let client = client();
        let seen = send(client.get(serve.url(&format!("/v1/runs/{run}")))).await;
        assert_eq!(seen.body["state"], "interrupted");
        let listed = send(client.get(serve.url("/v1/runs"))).await;
        assert_eq!(listed.body["runs"][0]["state"], "interrupted");
        // Following an interrupted run gives what it logged, then ends: nothing more comes.
        let mut stream = SseReader::open(&client, &serve, &run, None, None).await;
        let replayed = stream.rest().await;
        assert_eq!(replayed.len(), before.len());
        assert_eq!(
            replayed.last().and_then(|e| e.id),
            before.last().map(|e| e.seq)
        );
        let resumed = send(post_json(
            &client,
            &serve.url(&format!("/v1/runs/{run}/resume")),
            &json!({}),
        ))
        .await;
        assert_eq!(resumed.status, 202, "{}", resumed.body);
        assert_eq!(resumed.body["run_id"], run.as_str());
        let again = send(post_json(
            &client,
            &serve.url(&format!("/v1/runs/{run}/resume")),
            &json!({}),
        ))
        .await;
        assert_eq!(again.status, 409, "{}", again.body);
        let body = settled(&client, &serve, &run).await;
        assert_eq!(body["state"], "finished");
        let report: baton::Report = serde_json::from_value(body["report"].clone()).unwrap();
        assert_eq!(report.subagents.len(), 4);
        assert!(report.subagents.iter().all(|s| s.state.accepted()));
        assert_citations_hold(&report, tree.path());
    });
    let after = SqliteStore::open_existing(state.path())
        .unwrap()
        .events(&run)
        .unwrap();
    assert_eq!(
        count_kind(&after, "handoff_accepted"),
        4,
        "no handoff twice"
    );
    assert!(accepted_before >= 1);
    let mut accepted: Vec<String> = after
        .iter()
        .filter_map(|e| match &e.event {
            baton::RunEvent::HandoffAccepted { subagent, .. } => Some(subagent.clone()),
            _ => None,
        })
        .collect();
    accepted.sort();
    accepted.dedup();
    assert_eq!(accepted.len(), 4);
    let _ = Duration::ZERO;
}

#[test]
fn each_request_is_a_span_carrying_its_run_id_beside_the_runs_spans() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        state.path(),
        tree.path(),
        &["--log-format", "json"],
        &[("BATON_LOG", "baton=info")],
    );
    let run = runtime().block_on(async {
        let client = client();
        let run = start_explore(&client, &serve, ".", json!({"limits": {"shards": 1}})).await;
        assert_eq!(settled(&client, &serve, &run).await["state"], "finished");
        let unknown = send(client.get(serve.url("/v1/runs/run-unknown"))).await;
        assert_eq!(unknown.status, 404);
        run
    });
    // Spans are written as they close: the last request's may come just after its answer.
    let mut closed = Vec::new();
    for _ in 0..100 {
        closed = serve
            .log
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["fields"]["message"] == "close")
            .map(|v| v["span"].clone())
            .collect::<Vec<Value>>();
        if closed.iter().any(|s| s["path"] == "/v1/runs/run-unknown") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let request = |method: &str, path: &str| {
        closed
            .iter()
            .find(|s| s["name"] == "request" && s["method"] == method && s["path"] == path)
            .unwrap_or_else(|| panic!("no span for {method} {path}: {closed:?}"))
            .clone()
    };
    // The run's id on the request that started it (not in its path) and on one that names it.
    assert_eq!(request("POST", "/v1/runs")["run_id"], run.as_str());
    assert_eq!(request("POST", "/v1/runs")["status"], 202);
    assert_eq!(
        request("GET", &format!("/v1/runs/{run}"))["run_id"],
        run.as_str()
    );
    assert_eq!(request("GET", "/v1/runs/run-unknown")["status"], 404);
    // The run's own span carries the same id: the two join on it.
    assert!(
        closed
            .iter()
            .any(|s| s["name"] == "run" && s["run_id"] == run.as_str()),
        "{closed:?}"
    );
}

#[test]
fn a_research_run_over_a_corpus_is_followed_to_its_end() {
    let tree = rust_tree();
    write_docs(tree.path());
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start(state.path(), tree.path(), &[], &[]);
    runtime().block_on(async {
        let client = client();
        let body = json!({"kind": "research", "corpus": "docs", "question": DOCS_QUESTION});
        let started = send(post_json(&client, &serve.url("/v1/runs"), &body)).await;
        assert_eq!(started.status, 202, "{}", started.body);
        assert_eq!(started.body["kind"], "research");
        let run = started.body["run_id"].as_str().unwrap().to_string();
        let events = SseReader::open(&client, &serve, &run, None, None)
            .await
            .rest()
            .await;
        assert_eq!(events.last().unwrap().event, "run_finished");
        let body = settled(&client, &serve, &run).await;
        assert_eq!(body["kind"], "research");
        assert_eq!(body["state"], "finished");
        let report: baton::Report = serde_json::from_value(body["report"].clone()).unwrap();
        assert_docs_answered(&report, tree.path());
    });
}

#[test]
fn a_loopback_server_refuses_any_other_host_however_it_is_spelled() {
    use std::io::{Read, Write};
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start(state.path(), tree.path(), &[], &[]);
    let addr = serve.base.trim_start_matches("http://").to_string();
    let status = |head: &str| {
        let mut tcp = std::net::TcpStream::connect(&addr).unwrap();
        write!(tcp, "{head}Connection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).unwrap();
        answer.split(' ').nth(1).unwrap_or("").to_string()
    };
    assert_eq!(
        status(&format!("GET /v1/runs HTTP/1.1\r\nHost: {addr}\r\n")),
        "200"
    );
    for head in [
        format!("GET /v1/runs HTTP/1.1\r\nHost: {addr}\r\nHost: evil.example\r\n"),
        "GET http://evil.example/v1/runs HTTP/1.1\r\nHost: localhost\r\n".to_string(),
        format!("POST /v1/runs/run-x/cancel HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://localhost\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\n"),
        format!("GET /v1/runs HTTP/1.1\r\nHost: {addr}\r\nOrigin: null\r\n"),
    ] {
        assert_eq!(status(&head), "403", "{head}");
    }
}
