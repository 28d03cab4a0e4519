//! The event log under load: 100,000 events appended by 64 concurrent writers through group
//! commit (events/s, p50/p99 time to a durable acknowledgement), then reading the run back
//! (digest chain checked) and projecting its checkpoint. Prints one JSON line.
//!
//!     cargo bench --bench event_log

use std::sync::Arc;
use std::time::Instant;

use baton::checkpoint::{project, EffectState, EventStore, RunEvent, SqliteStore};

const EVENTS: usize = 100_000;
const WRITERS: usize = 64;

fn tool_event(i: usize) -> RunEvent {
    RunEvent::ToolCalled {
        subagent: format!("sa{}", i % 32),
        call_id: format!("sa{}.{}", i % 32, i),
        tool: "grep".into(),
        arguments: serde_json::json!({"pattern": format!("term{i}"), "paths": ["src"]}),
        effect: EffectState::Executing,
        read_only: true,
        intent: String::new(),
    }
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(SqliteStore::open(dir.path()).expect("store"));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let run_id = "bench-run";
    runtime
        .block_on(store.append(
            run_id,
            vec![(
                1,
                RunEvent::RunStarted {
                    question: "bench".into(),
                    root: "/".into(),
                    model: "offline".into(),
                    agents: WRITERS,
                    max_subagents: 32,
                    budget: baton::Budget::default(),
                    repairs: 2,
                    shards: None,
                    tools: vec!["grep".into()],
                    max_waves: None,
                    task: Default::default(),
                },
            )],
        ))
        .expect("ack")
        .expect("append");

    let started = Instant::now();
    let latencies: Vec<f64> = runtime.block_on(async {
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            let store = Arc::clone(&store);
            tasks.push(tokio::spawn(async move {
                let mut own = Vec::with_capacity(EVENTS / WRITERS);
                for i in (w..EVENTS).step_by(WRITERS) {
                    let sent = Instant::now();
                    let ack = store.append(run_id, vec![(2, tool_event(i))]);
                    ack.await.expect("ack").expect("durable");
                    own.push(sent.elapsed().as_secs_f64() * 1e6);
                }
                own
            }));
        }
        let mut all = Vec::with_capacity(EVENTS);
        for t in tasks {
            all.extend(t.await.expect("writer"));
        }
        all
    });
    let append_secs = started.elapsed().as_secs_f64();
    let mut sorted = latencies.clone();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)];

    let read_started = Instant::now();
    let events = store.events(run_id).expect("read back");
    let read_ms = read_started.elapsed().as_secs_f64() * 1e3;
    let project_started = Instant::now();
    let checkpoint = project(run_id, &events);
    let project_ms = project_started.elapsed().as_secs_f64() * 1e3;
    assert_eq!(events.len(), EVENTS + 1);
    assert_eq!(checkpoint.effects.len(), EVENTS);

    println!(
        "{}",
        serde_json::json!({
            "events": EVENTS,
            "writers": WRITERS,
            "append_events_per_sec": (EVENTS as f64 / append_secs).round(),
            "append_p50_us": at(0.50).round(),
            "append_p99_us": at(0.99).round(),
            "read_and_verify_ms": read_ms.round(),
            "project_ms": project_ms.round(),
            "synchronous": "FULL",
        })
    );
}
