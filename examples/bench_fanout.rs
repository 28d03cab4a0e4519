//! Fan-out benchmark: the real lead fanning out N real subagent actors, side by side with the
//! floor (bare tokio tasks, a semaphore and the same validation). Every subagent's model makes
//! one tool call (`read_file` on its shard) and hands off a valid handoff citing what it read;
//! the lead validates every handoff, merges, logs every event and checkpoints to SQLite in a
//! temp dir — nothing of the real path is skipped.
//!
//!     cargo run --release --example bench_fanout -- [--json] [--min-n N] [--max-n N] [--only fanout|saturation]
//!
//! One line per measurement, each measured in a fresh process (so its peak memory is its own):
//! `fanout` (N = 10, 100, 1,000, 10,000; zero latency) and `saturation` (10,000 subagents ×
//! 50 ms at concurrency 100), each beside its `floor` row, with baton's `floor_ratio` (overhead
//! per subagent, or wall time, over the floor's). `--min-n` / `--max-n` bound the fan-out rows' N (the saturation row takes `--max-n` as
//! its N); `--only` runs one kind of row.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::testing::MemoryFiles;
use baton::{validate, Check, Coordinator, Observation, ObservationLog, SqliteStore, Task};
use serde_json::json;

#[path = "support/one_call.rs"]
mod one_call;
use one_call::{file_text, handoff, OneCall};

/// A tree of `n` shards, one small file each.
fn tree(n: usize) -> tempfile::TempDir {
    one_call::tree(n, |i| format!("d{i:05}"))
}

/// Starts this process's peak resident set over from what it holds now (Linux: writing 5 to
/// `/proc/self/clear_refs`), so each run's peak is its own.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
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
    let coordinator = Coordinator::builder()
        .model(Arc::new(OneCall { latency }))
        .store(store)
        .agents(concurrency)
        .max_subagents(n)
        .shards(n)
        .build();
    reset_peak_rss();
    let rss_before = peak_rss_kib();
    let began = Instant::now();
    let report = coordinator
        .run(Task::explore("Where is each item defined?", root.path()))
        .await
        .expect("the run reports");
    let wall = began.elapsed();
    let accepted = report.handoffs.accepted + report.handoffs.repaired;
    assert_eq!(accepted, n, "every handoff accepted: {:?}", report.handoffs);
    if std::env::var_os("BENCH_KEEP").is_some() {
        eprintln!("state kept: {}", state.keep().display());
        return Measured {
            wall,
            rss_before,
            rss_after: 0,
            log_bytes: 0,
        };
    }
    Measured {
        wall,
        rss_before,
        rss_after: peak_rss_kib(),
        log_bytes: dir_bytes(state.path()),
    }
}

/// The floor: `n` tokio tasks under a semaphore of `concurrency`, each sleeping `latency`,
/// then validating the same handoff against the same file and what its read showed (all four
/// layers, as baton does).
async fn floor_run(n: usize, concurrency: usize, latency: Duration) -> Measured {
    reset_peak_rss();
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
            // What the subagent's read showed: the lines its handoff cites.
            let mut seen = ObservationLog::default();
            seen.record([Observation::Lines {
                call_id: "read".into(),
                path: format!("{dir}/lib.rs"),
                start: 1,
                end: 3,
            }]);
            let parsed = validate(
                &handoff(&dir),
                &Check {
                    files: Some(&files),
                    observations: Some(&seen),
                    docs: None,
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
        "bench": if who == "floor" { "floor" } else { "fanout" }, "of": "fanout", "n": n,
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
        "bench": if who == "floor" { "floor" } else { "saturation" }, "of": "saturation", "n": n,
        "latency_ms": latency.as_millis() as u64, "concurrency": concurrency,
        "wall_s": m.wall.as_secs_f64(), "ideal_s": ideal,
        "efficiency": ideal / m.wall.as_secs_f64(),
        "peak_rss_kib": m.rss_after,
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

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

/// One measurement, in this process: `kind` (fanout or saturation), `who` (baton or floor).
async fn measure(kind: &str, who: &str, n: usize) -> serde_json::Value {
    let (latency, concurrency) = match kind {
        "saturation" => (Duration::from_millis(50), 100),
        _ => (Duration::ZERO, if who == "floor" { n } else { n.min(1024) }),
    };
    if who == "baton" {
        // The BPE vocabulary loads once per process: before any timing.
        let _ = baton::tokens::Tokenizer::count(&baton::tokens::Bpe, "warm");
    }
    let m = match who {
        "floor" => floor_run(n, concurrency, latency).await,
        _ => baton_run(n, concurrency, latency).await,
    };
    match kind {
        "saturation" => saturation_row(who, n, latency, concurrency, &m),
        _ => fanout_row(who, n, &m),
    }
}

/// Runs one measurement in a fresh process, so its peak memory is its own.
fn in_child(kind: &str, who: &str, n: usize) -> serde_json::Value {
    let exe = std::env::current_exe().expect("this benchmark's path");
    let out = std::process::Command::new(exe)
        .args(["--row", kind, who, &n.to_string()])
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("the measurement runs");
    assert!(out.status.success(), "{kind} {who} {n}: {:?}", out.status);
    serde_json::from_slice(&out.stdout).expect("one JSON row")
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--row") {
        let (kind, who) = (&args[i + 1], &args[i + 2]);
        let n: usize = args[i + 3].parse().expect("N");
        println!("{}", measure(kind, who, n).await);
        return;
    }
    let json = args.iter().any(|a| a == "--json");
    let max_n: usize = arg(&args, "--max-n").unwrap_or(10_000);
    let min_n: usize = arg(&args, "--min-n").unwrap_or(0);
    let only = |what: &str| !args.iter().any(|a| a == "--only") || args.iter().any(|a| a == what);
    let mut rows = Vec::new();
    for n in [10, 100, 1_000, 10_000]
        .into_iter()
        .filter(|n| (min_n..=max_n).contains(n) && only("fanout"))
    {
        rows.push(("fanout", n, "overhead_us_per_subagent"));
    }
    if only("saturation") {
        rows.push(("saturation", max_n.min(10_000), "wall_s"));
    }
    for (kind, n, compared) in rows {
        let floor = in_child(kind, "floor", n);
        print(&floor, json);
        let mut baton = in_child(kind, "baton", n);
        let ratio =
            baton[compared].as_f64().unwrap_or(0.0) / floor[compared].as_f64().unwrap_or(1.0);
        baton["floor_ratio"] = json!(ratio);
        print(&baton, json);
    }
}
