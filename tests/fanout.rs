//! Fan-out that scales: a subagent's compiled context and its logged manifest hold what is
//! relevant to its brief, so neither grows with the number of other subagents' evidence.

use std::sync::Arc;

use baton::checkpoint::{EventStore, RunEvent};
use baton::{Coordinator, SqliteStore, Task};

#[path = "../examples/support/one_call.rs"]
mod one_call;
use one_call::OneCall;

/// The last subagent spawned in a run over `others + 1` one-file shards, one subagent at a
/// time: its checkpoint holds the accepted evidence of `others` subagents in other scopes.
/// Returns its context's tokens, its logged entry's bytes and the items it left out.
async fn last_spawn(others: usize) -> (u64, usize, u64) {
    let root = one_call::tree(others + 1, |i| format!("d{i:04}"));
    let state = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(state.path()).unwrap());
    let report = Coordinator::builder()
        .model(Arc::new(OneCall {
            latency: std::time::Duration::ZERO,
        }))
        .store(Arc::clone(&store) as Arc<dyn EventStore>)
        .agents(1)
        .max_subagents(others + 1)
        .shards(others + 1)
        .build()
        .run(Task::explore("Where is each item defined?", root.path()))
        .await
        .unwrap();
    assert_eq!(
        report.handoffs.accepted,
        others + 1,
        "{:?}",
        report.handoffs
    );
    let events = store.events(&report.run_id).unwrap();
    let last = events
        .iter()
        .rev()
        .find(|e| matches!(e.event, RunEvent::SubagentSpawned { .. }))
        .unwrap();
    let RunEvent::SubagentSpawned { manifest, .. } = &last.event else {
        unreachable!()
    };
    let bytes = serde_json::to_string(&last.event).unwrap().len();
    (manifest.context_tokens, bytes, manifest.omitted_items)
}

/// Issue 11: the same brief over checkpoints of 10 and of 1,000 finished subagents in other
/// scopes compiles to the same context and logs the same manifest, within a few tokens and
/// bytes; what it leaves out is counted. The question's word `item` occurs in every other
/// subagent's evidence, so selection by words is at work too (at most eight a word).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_does_not_grow_with_other_subagents_evidence() {
    let (ten_tokens, ten_bytes, ten_left) = last_spawn(10).await;
    let (k_tokens, k_bytes, k_left) = last_spawn(1_000).await;
    assert!(
        k_tokens.abs_diff(ten_tokens) <= 8,
        "context tokens: {ten_tokens} with 10 others, {k_tokens} with 1,000"
    );
    assert!(
        k_bytes.abs_diff(ten_bytes) <= 64,
        "logged entry: {ten_bytes} bytes with 10 others, {k_bytes} with 1,000"
    );
    // The others' plans, evidence and handoffs are left out, and counted.
    assert!(ten_left >= 10, "{ten_left}");
    assert!(k_left >= 1_000 + ten_left - 10, "{k_left} vs {ten_left}");
}
