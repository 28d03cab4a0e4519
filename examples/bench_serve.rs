//! Measures `baton serve` on loopback, in one process with its clients: the time from
//! `POST /v1/runs` to the first Server-Sent Event of the run (30 runs, one after another, each
//! an offline exploration of a small generated tree followed to its end before the next), and requests a second for
//! `GET /v1/runs/{id}` of a finished run (8 clients on kept-alive connections for 5 s).
//! Prints JSON.
//!
//!     cargo run --release --example bench_serve

use std::time::{Duration, Instant};

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    for i in 0..20 {
        let sub = dir.path().join(format!("src/m{}", i % 4));
        std::fs::create_dir_all(&sub).expect("mkdir");
        let text = format!(
            "//! Module {i}.\n\n/// The delay before attempt `n`.\npub fn delay_{i}(n: u32) -> u64 {{\n    u64::from(n) * {i}\n}}\n"
        );
        std::fs::write(sub.join(format!("f{i}.rs")), text).expect("write");
    }
    dir
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = tree();
    let state = tempfile::tempdir().expect("a temp dir");
    let mut config = baton::server::ServerConfig::new(state.path());
    config.allow_roots = vec![root.path().to_path_buf()];
    config.max_runs = 64;
    let server = baton::server::Server::new(config).expect("a server");
    let listening = baton::server::serve(server, "127.0.0.1:0".parse().expect("an address"))
        .await
        .expect("listening");
    let base = format!("http://{}", listening.addr);
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client");
    let body = serde_json::json!({"kind": "explore", "root": ".", "question": "where is the delay computed?"}).to_string();

    let mut first_event = Vec::new();
    let mut last_run = String::new();
    for _ in 0..30 {
        let t0 = Instant::now();
        let answer = client
            .post(format!("{base}/v1/runs"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .expect("started");
        let started: serde_json::Value =
            serde_json::from_slice(&answer.bytes().await.expect("a body")).expect("JSON");
        let run = started["run_id"].as_str().expect("a run id").to_string();
        if std::env::var_os("BENCH_SPLIT").is_some() {
            eprintln!("post {:.1} ms", t0.elapsed().as_secs_f64() * 1000.0);
        }
        let mut events = client
            .get(format!("{base}/v1/runs/{run}/events"))
            .send()
            .await
            .expect("a stream");
        let mut text = String::new();
        while !text.contains("\n\n") {
            let chunk = events.chunk().await.expect("a chunk").expect("an event");
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        first_event.push(t0.elapsed().as_secs_f64() * 1000.0);
        // The run is followed to its end, so the next is timed on an idle server.
        while events.chunk().await.expect("a chunk").is_some() {}
        last_run = run;
    }
    // Let the last run finish, so its GET reads a whole log and a report.
    loop {
        let v: serde_json::Value = serde_json::from_slice(
            &client
                .get(format!("{base}/v1/runs/{last_run}"))
                .send()
                .await
                .expect("run")
                .bytes()
                .await
                .expect("body"),
        )
        .expect("JSON");
        if v["state"] != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let window = Duration::from_secs(5);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let client = client.clone();
        let url = format!("{base}/v1/runs/{last_run}");
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while started.elapsed() < window {
                let answer = client.get(&url).send().await.expect("answered");
                assert_eq!(answer.status().as_u16(), 200);
                answer.bytes().await.expect("a body");
                n += 1;
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("a client");
    }
    let rps = total as f64 / started.elapsed().as_secs_f64();
    first_event.sort_by(f64::total_cmp);
    println!(
        "{}",
        serde_json::json!({
            "post_to_first_event_ms": {"median": percentile(&first_event, 0.5), "p95": percentile(&first_event, 0.95)},
            "get_run_requests_per_s": rps.round(),
            "get_run_clients": 8,
        })
    );
}
