//! Fan-out benchmark: the real lead fanning out N real subagent actors, side by side with the
//! floor (bare tokio tasks, a semaphore and the same validation). Every subagent's model makes
//! one tool call (`read_file` on its shard) and hands off a valid handoff citing what it read;
//! the lead validates every handoff, merges, logs every event and checkpoints to SQLite in a
//! temp dir — nothing of the real path is skipped.
//!
//!     cargo run --release --example bench_fanout -- [--json] [--max-n N]
//!
//! One line per measurement: `fanout` (N = 10, 100, 1,000, 10,000; zero latency) and
//! `saturation` (10,000 subagents × 50 ms at concurrency 100), each for baton and for the
//! floor. `--max-n` stops the fan-out rows at N (the saturation row uses it too).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use baton::{
    validate, Check, Coordinator, MemoryFiles, Message, Model, ModelError, ModelRequest,
    ModelResponse, SqliteStore, Task, ToolCall, Usage,
};
use serde_json::json;

/// A model that reads its shard's file once and hands off what it read: two calls, each taking
/// half of `latency`, so a subagent's model work takes `latency` in all.
struct OneCall {
    latency: Duration,
}

/// The shard directory a brief names (`Scope: ["d00042"]`).
fn scope_of(request: &ModelRequest) -> String {
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

/// The text of shard `dir`'s one file, and the handoff citing it.
fn file_text(dir: &str) -> String {
    format!("pub fn item_{dir}() -> u64 {{\n    42\n}}\n")
}

fn handoff(dir: &str) -> String {
    format!(
        "## Settled conclusions\n- `item_{dir}` is defined here: `pub fn item_{dir}() -> u64 {{` [{dir}/lib.rs:1-3]\n## Open items\n## Hard constraints\n- none\n"
    )
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
        Ok(ModelResponse {
            usage: Usage {
                input_tokens: request.estimated_tokens(),
                output_tokens: 20,
            },
            text,
            tool_calls,
        })
    }
}

/// A tree of `n` shards, one small file each.
fn tree(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for i in 0..n {
        let name = format!("d{i:05}");
        let path = dir.path().join(&name);
        std::fs::create_dir(&path).expect("shard dir");
        std::fs::write(path.join("lib.rs"), file_text(&name)).expect("shard file");
    }
    dir
}

/// This process's peak resident set, in KiB (Linux; 0 elsewhere).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

struct Measured {
    wall: Duration,
    rss_before: u64,
    rss_after: u64,
    log_bytes: u64,
}

/// One baton run over `n` shards at `concurrency`, each model call taking `latency`.
async fn baton_run(n: usize, concurrency: usize, latency: Duration) -> Measured {
    let root = tree(n);
    let state = tempfile::tempdir().expect("state dir");
    let store = Arc::new(SqliteStore::open(state.path()).expect("store"));
    let coordinator = Coordinator::new()
        .model(Arc::new(OneCall { latency }))
        .store(store)
        .agents(concurrency)
        .max_subagents(n)
        .shards(n);
    let rss_before = peak_rss_kib();
    let began = Instant::now();
    let report = coordinator
        .run(Task::new("Where is each item defined?", root.path()))
        .await
        .expect("the run reports");
    let wall = began.elapsed();
    let accepted = report.handoffs.accepted + report.handoffs.repaired;
    assert_eq!(accepted, n, "every handoff accepted: {:?}", report.handoffs);
    if std::env::var_os("BENCH_KEEP").is_some() {
        eprintln!("state kept: {}", state.keep().display());
        return Measured { wall, rss_before, rss_after: 0, log_bytes: 0 };
    }
    Measured {
        wall,
        rss_before,
        rss_after: peak_rss_kib(),
        log_bytes: dir_bytes(state.path()),
    }
}

/// The floor: `n` tokio tasks under a semaphore of `concurrency`, each sleeping `latency`,
/// then validating the same handoff against the same file.
async fn floor_run(n: usize, concurrency: usize, latency: Duration) -> Measured {
    let rss_before = peak_rss_kib();
    let began = Instant::now();
    let permits = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let permits = Arc::clone(&permits);
        tasks.push(tokio::spawn(async move {
            let _permit = permits.acquire_owned().await.expect("semaphore");
            // Two model calls, as a baton subagent makes.
            if !latency.is_zero() {
                tokio::time::sleep(latency / 2).await;
                tokio::time::sleep(latency / 2).await;
            }
            let dir = format!("d{i:05}");
            let mut files = MemoryFiles::new();
            files.insert(&format!("{dir}/lib.rs"), &file_text(&dir));
            let parsed = validate(
                &handoff(&dir),
                &Check {
                    files: Some(&files),
                    ..Check::default()
                },
            );
            parsed.violations.is_empty()
        }));
    }
    let mut valid = 0;
    for task in tasks {
        if task.await.expect("task") {
            valid += 1;
        }
    }
    assert_eq!(valid, n, "every handoff valid");
    Measured {
        wall: began.elapsed(),
        rss_before,
        rss_after: peak_rss_kib(),
        log_bytes: 0,
    }
}

fn fanout_row(who: &str, n: usize, m: &Measured) -> serde_json::Value {
    let per = |x: f64| x / n as f64;
    json!({
        "bench": "fanout", "who": who, "n": n,
        "wall_s": m.wall.as_secs_f64(),
        "overhead_us_per_subagent": per(m.wall.as_secs_f64() * 1e6),
        "peak_rss_kib": m.rss_after,
        "rss_kib_per_subagent": per(m.rss_after.saturating_sub(m.rss_before) as f64),
        "log_bytes_per_subagent": per(m.log_bytes as f64),
    })
}

fn saturation_row(
    who: &str,
    n: usize,
    latency: Duration,
    concurrency: usize,
    m: &Measured,
) -> serde_json::Value {
    let ideal = (n as f64 / concurrency as f64).ceil() * latency.as_secs_f64();
    json!({
        "bench": "saturation", "who": who, "n": n,
        "latency_ms": latency.as_millis() as u64, "concurrency": concurrency,
        "wall_s": m.wall.as_secs_f64(), "ideal_s": ideal,
        "efficiency": ideal / m.wall.as_secs_f64(),
    })
}

fn print(row: &serde_json::Value, json: bool) {
    if json {
        println!("{row}");
    } else {
        let fields: Vec<String> = row
            .as_object()
            .map(|o| o.iter().map(|(k, v)| format!("{k}={v}")).collect())
            .unwrap_or_default();
        println!("{}", fields.join("  "));
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let max_n: usize = args
        .iter()
        .position(|a| a == "--max-n")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    // The BPE vocabulary loads once per process: before any timing.
    let _ = baton::context::Tokenizer::count(&baton::context::Bpe, "warm");
    for n in [10, 100, 1_000, 10_000].into_iter().filter(|n| *n <= max_n) {
        let m = floor_run(n, n, Duration::ZERO).await;
        print(&fanout_row("floor", n, &m), json);
        let m = baton_run(n, n.min(1024), Duration::ZERO).await;
        print(&fanout_row("baton", n, &m), json);
    }
    let (n, latency, concurrency) = (max_n.min(10_000), Duration::from_millis(50), 100);
    let m = floor_run(n, concurrency, latency).await;
    print(&saturation_row("floor", n, latency, concurrency, &m), json);
    let m = baton_run(n, concurrency, latency).await;
    print(&saturation_row("baton", n, latency, concurrency, &m), json);
}
