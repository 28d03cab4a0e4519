//! The durable checkpoint: a real `baton explore` killed mid-run and resumed, a damaged log
//! reported with the last intact event, and the projection's properties.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::checkpoint::{project, EventStore, RunEvent, SqliteStore, StoreError};
use baton::testing::MemoryStore;
use baton::{Coordinator, Task};
use proptest::prelude::*;

use crate::support::count_kind;
use serde_json::Value;

fn baton() -> Command {
    Command::new(env!("CARGO_BIN_EXE_baton"))
}

/// Eight directories of similar size: eight subagents, run one at a time.
fn wide_tree() -> tempfile::TempDir {
    let files: Vec<(String, String)> = (0..8)
        .map(|i| {
            (
                format!("mod{i}/lib.rs"),
                format!(
                    "//! Module {i}.\n\n/// Retries the request {i} with a backoff delay.\npub fn retry_request_{i}(attempt: u32) -> u64 {{\n    let delay = 10u64 << attempt.min(8);\n    delay + {i}\n}}\n{}",
                    "// padding line for size\n".repeat(40)
                ),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    crate::support::tree(&borrowed)
}

const QUESTION: &str = "Where is the retry backoff delay computed?";

fn explore_args(root: &Path, state: &Path) -> Vec<String> {
    vec![
        "explore".into(),
        root.display().to_string(),
        QUESTION.into(),
        "--json".into(),
        "--no-progress".into(),
        "--agents".into(),
        "1".into(),
        "--shards".into(),
        "8".into(),
        "--state".into(),
        state.display().to_string(),
    ]
}

fn without_timing(report: &str) -> Value {
    let mut v: Value = serde_json::from_str(report).expect("one JSON report");
    let object = v.as_object_mut().unwrap();
    object.remove("run_id");
    object.remove("elapsed_ms");
    v
}

/// What a report says about the question: the handoff, the counts, each subagent's scope,
/// state and repairs — not what the work cost.
fn essentials(report: &str) -> Value {
    let v = without_timing(report);
    let subagents: Vec<Value> = v["subagents"]
        .as_array()
        .expect("subagents")
        .iter()
        .map(|s| {
            serde_json::json!([
                s["id"],
                s["role"],
                s["scope"],
                s["state"],
                s["repairs"],
                s["error"]
            ])
        })
        .collect();
    serde_json::json!([
        v["handoff"],
        v["handoffs"],
        v["cancelled"],
        v["question"],
        subagents
    ])
}

fn count(events: &[baton::checkpoint::LoggedEvent], kind: &str, subagent: &str) -> usize {
    events
        .iter()
        .filter(|e| e.event.kind() == kind)
        .filter(|e| serde_json::to_value(&e.event).unwrap()["subagent"] == subagent)
        .count()
}

#[cfg(unix)]
#[test]
fn a_run_killed_mid_flight_resumes_to_the_same_report() {
    let tree = wide_tree();
    let killed_state = tempfile::tempdir().unwrap();
    let clean_state = tempfile::tempdir().unwrap();

    // The uninterrupted run, for comparison.
    let clean = baton()
        .args(explore_args(tree.path(), clean_state.path()))
        .output()
        .unwrap();
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );

    // The same run, slowed down, killed once some handoffs are durable and others are not.
    let spawn = || {
        baton()
            .args(explore_args(tree.path(), killed_state.path()))
            .args(["--offline-latency-ms", "150"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let run_id = crate::support::kill_when(killed_state.path(), spawn, |events| {
        let accepted = count_kind(events, "handoff_accepted");
        accepted >= 2 && count_kind(events, "subagent_spawned") > accepted
    });

    let store = SqliteStore::open(killed_state.path()).unwrap();
    let before = store
        .events(&run_id)
        .expect("the log survives the kill intact");
    assert!(
        !before.iter().any(|e| e.event.kind() == "run_finished"),
        "killed before the end"
    );
    let accepted_before: Vec<String> = before
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::HandoffAccepted { subagent, .. } => Some(subagent.clone()),
            _ => None,
        })
        .collect();
    drop(store);

    let resumed = baton()
        .args(["resume", &run_id, "--json", "--no-progress", "--state"])
        .arg(killed_state.path())
        .output()
        .unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    // A subagent restarted with an effect cut off is told so (its token count may differ);
    // everything the report says about the question is the uninterrupted run's.
    assert_eq!(
        essentials(&String::from_utf8_lossy(&resumed.stdout)),
        essentials(&String::from_utf8_lossy(&clean.stdout)),
        "the resumed report equals the uninterrupted one"
    );

    let store = SqliteStore::open(killed_state.path()).unwrap();
    let after = store.events(&run_id).unwrap();
    assert!(after.iter().any(|e| e.event.kind() == "run_resumed"));
    for subagent in (1..=8).map(|i| format!("sa{i}")) {
        assert_eq!(
            count(&after, "handoff_accepted", &subagent),
            1,
            "{subagent}: accepted exactly once"
        );
    }
    for subagent in &accepted_before {
        assert_eq!(
            count(&after, "subagent_spawned", subagent),
            1,
            "{subagent} was not redone"
        );
    }
    // Effects cut off by the kill (executing when it came) are outcome_unknown — never failed,
    // never still executing; nothing at all is left executing. (tests/context.rs checks the
    // same on a log cut mid-call every time.)
    use baton::checkpoint::EffectState;
    let cut_off: Vec<String> = project(&run_id, &before)
        .effects
        .into_iter()
        .filter(|e| e.state == EffectState::Executing)
        .map(|e| e.intent_id)
        .collect();
    let cp = project(&run_id, &after);
    for intent in &cut_off {
        let effect = cp.effects.iter().find(|e| &e.intent_id == intent).unwrap();
        assert_eq!(effect.state, EffectState::OutcomeUnknown, "{intent}");
    }
    assert!(cp.effects.iter().all(|e| e.state != EffectState::Executing));
    assert_eq!(cp.finished, Some(false));
}

/// SIGKILL at random moments — the run, then each resume of it — until a process finishes:
/// the report equals the uninterrupted run's, every subagent's handoff is accepted exactly
/// once, and the chain verifies. The seed is printed, so a failure can be replayed with
/// `BATON_KILL_SEED`.
#[cfg(unix)]
#[test]
fn a_kill_loop_always_resumes_to_the_uninterrupted_report() {
    let tree = wide_tree();
    let latency = ["--offline-latency-ms", "15"];
    let clean_state = tempfile::tempdir().unwrap();
    let began = Instant::now();
    let clean = baton()
        .args(explore_args(tree.path(), clean_state.path()))
        .args(latency)
        .output()
        .unwrap();
    let wall_ms = began.elapsed().as_millis() as u64;
    assert_eq!(clean.status.code(), Some(0), "{clean:?}");
    let seed: u64 = std::env::var("BATON_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(7)
        });
    eprintln!("kill loop: BATON_KILL_SEED={seed}, an uninterrupted run takes {wall_ms} ms");
    let mut rng = seed;
    let mut below = |bound: u64| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) % bound.max(1)
    };
    let mut kills = 0;
    for _ in 0..3 {
        let state = tempfile::tempdir().unwrap();
        let mut attempts = 0;
        let finished = loop {
            attempts += 1;
            assert!(attempts < 30, "no process finished in 30 attempts");
            // Resume the run if any of it is logged; start it otherwise.
            let logged = SqliteStore::open_existing(state.path())
                .ok()
                .and_then(|store| store.runs().ok())
                .and_then(|runs| runs.into_iter().next());
            let mut command = baton();
            match &logged {
                Some(run) => {
                    command
                        .args(["resume", &run.run_id, "--json", "--no-progress", "--state"])
                        .arg(state.path());
                }
                None => {
                    command.args(explore_args(tree.path(), state.path()));
                }
            }
            let mut child = command
                .args(latency)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // Late attempts are left to finish, so the loop ends.
            let kill_at = Instant::now() + Duration::from_millis(below(wall_ms * 4 / 5));
            let exited = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break Some(status);
                }
                if attempts < 6 && Instant::now() >= kill_at {
                    break None;
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            match exited {
                Some(_) => break child.wait_with_output().unwrap(),
                None => {
                    child.kill().unwrap(); // SIGKILL
                    let _ = child.wait();
                    kills += 1;
                }
            }
        };
        assert_eq!(
            finished.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&finished.stderr)
        );
        // A subagent restarted after a kill is told what was cut off, so its token count may
        // differ; everything the report says about the question may not.
        assert_eq!(
            essentials(&String::from_utf8_lossy(&finished.stdout)),
            essentials(&String::from_utf8_lossy(&clean.stdout)),
            "seed {seed}: the resumed report equals the uninterrupted one"
        );
        let store = SqliteStore::open_existing(state.path()).unwrap();
        let run = store.runs().unwrap().remove(0);
        let events = store.events(&run.run_id).expect("the chain verifies");
        for subagent in (1..=8).map(|i| format!("sa{i}")) {
            assert_eq!(
                count(&events, "handoff_accepted", &subagent),
                1,
                "seed {seed}: {subagent} accepted exactly once"
            );
        }
    }
    assert!(kills >= 3, "seed {seed}: only {kills} kills");
}

async fn logged_run(dir: &Path) -> String {
    let store = Arc::new(SqliteStore::open(dir).unwrap());
    let tree = crate::support::rust_tree();
    let report = Coordinator::builder()
        .store(store)
        .build()
        .run(Task::explore("Where is next_delay defined?", tree.path()))
        .await
        .unwrap();
    report.run_id
}

fn raw(dir: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.join("baton.db")).unwrap()
}

#[tokio::test]
async fn a_tampered_event_is_reported_with_the_last_intact_seq() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = logged_run(dir.path()).await;
    raw(dir.path())
        .execute(
            "UPDATE events SET payload = replace(payload, 'explorer', 'intruder') WHERE run_id = ?1 AND seq = 3",
            [&run_id],
        )
        .unwrap();
    // Opened to write, the store is refused: a damaged file is never written.
    let refused = SqliteStore::open(dir.path()).map(|_| ()).unwrap_err();
    assert!(
        matches!(&refused, StoreError::Damaged { last_intact: 2, .. }),
        "{refused}"
    );
    let store = SqliteStore::open_existing(dir.path()).unwrap();
    let err = store.events(&run_id).unwrap_err();
    assert!(
        matches!(&err, StoreError::Damaged { last_intact: 2, .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&run_id) && text.contains("after seq 2"),
        "{text}"
    );
    // The CLI says the same in one line.
    let out = baton()
        .args(["brief", &run_id, "--state"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("after seq 2"), "{stderr}");
}

#[tokio::test]
async fn a_truncated_log_is_reported_with_the_last_intact_seq() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = logged_run(dir.path()).await;
    raw(dir.path())
        .execute(
            "DELETE FROM events WHERE run_id = ?1 AND seq > 10",
            [&run_id],
        )
        .unwrap();
    let store = SqliteStore::open_existing(dir.path()).unwrap();
    let err = store.events(&run_id).unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Damaged {
                last_intact: 10,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("missing"), "{err}");
    // Paged, as a reader of the logged run reads it: at most the ten intact events, then the
    // same error (the page that reaches the cut is refused whole).
    let store: Arc<dyn baton::checkpoint::EventStore> = Arc::new(store);
    let coordinator = baton::Coordinator::builder().store(store).build();
    let mut events = coordinator.logged_events(&run_id, 0).unwrap();
    let mut read = 0;
    let end = loop {
        match events.next().await {
            Some(Ok(_)) => read += 1,
            other => break other,
        }
    };
    assert!(read <= 10, "{read}");
    match end {
        Some(Err(StoreError::Damaged {
            last_intact: 10, ..
        })) => {}
        other => panic!("a cut log read to its cut as if whole: {other:?}"),
    }
}

/// A truncated database is one clear error, never a panic. SQLite only fails on the pages it
/// reads, so a cut that spares every page the brief needs may still read: then the brief must
/// be the intact one, nothing lost or invented. A cut inside the header always fails.
#[tokio::test]
async fn a_truncated_database_file_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = logged_run(dir.path()).await;
    let brief = || {
        baton()
            .args(["brief", &run_id, "--state"])
            .arg(dir.path())
            .output()
            .unwrap()
    };
    let intact = brief();
    assert_eq!(intact.status.code(), Some(0), "{intact:?}");
    let db = dir.path().join("baton.db");
    let len = std::fs::metadata(&db).unwrap().len();
    for cut in [len / 3, 50] {
        let file = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
        file.set_len(cut).unwrap();
        drop(file);
        let _ = std::fs::remove_file(dir.path().join("baton.db-wal"));
        let _ = std::fs::remove_file(dir.path().join("baton.db-shm"));
        let out = brief();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        if out.status.code() == Some(0) && cut > 50 {
            assert_eq!(
                out.stdout, intact.stdout,
                "a readable cut reads the same brief"
            );
            continue;
        }
        assert_eq!(
            out.status.code(),
            Some(1),
            "a damaged state exits 1: {out:?}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

#[test]
fn a_checkpoint_missing_a_mandatory_field_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let run_id = runtime.block_on(logged_run(dir.path()));
    let store = SqliteStore::open(dir.path()).unwrap();
    let good = store
        .latest_checkpoint(&run_id)
        .unwrap()
        .expect("a checkpoint was built");
    let mut body: Value = serde_json::to_value(&good).unwrap();
    body.as_object_mut().unwrap().remove("goal");
    raw(dir.path())
        .execute(
            "INSERT INTO checkpoints (run_id, last_seq, first_seq, schema_version, body) VALUES (?1, ?2, 1, 1, ?3)",
            rusqlite::params![run_id, (good.last_seq + 100) as i64, body.to_string()],
        )
        .unwrap();
    assert_eq!(store.latest_checkpoint(&run_id).unwrap(), Some(good));
}

/// Checkpoints do not pile up: a run keeps its newest two, and the newest is read back.
#[test]
fn a_run_keeps_its_two_latest_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let run_id = runtime.block_on(logged_run(dir.path()));
    let store = SqliteStore::open(dir.path()).unwrap();
    let good = store.latest_checkpoint(&run_id).unwrap().unwrap();
    for later in 1..=5 {
        let mut next = good.clone();
        next.last_seq = good.last_seq + later;
        store.put_checkpoint(&next).unwrap();
    }
    let seqs: Vec<i64> = raw(dir.path())
        .prepare("SELECT last_seq FROM checkpoints WHERE run_id = ?1 ORDER BY last_seq")
        .unwrap()
        .query_map([&run_id], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let last = (good.last_seq + 5) as i64;
    assert_eq!(seqs, [last - 1, last]);
    assert_eq!(
        store.latest_checkpoint(&run_id).unwrap().unwrap().last_seq,
        last as u64
    );
}

fn event() -> impl Strategy<Value = RunEvent> {
    use baton::checkpoint::EffectState as E;
    let sub = prop::sample::select(vec!["sa1", "sa2", "sa3"]);
    let call = "[a-c]";
    prop_oneof![
        (sub.clone(), call, any::<bool>()).prop_map(|(s, c, read_only)| RunEvent::ToolCalled {
            subagent: s.into(),
            call_id: format!("{s}.{c}"),
            tool: "grep".into(),
            arguments: serde_json::json!({"pattern": c}),
            effect: E::Executing,
            read_only,
            intent: String::new(),
        }),
        (sub.clone(), call, any::<bool>(), 0usize..3).prop_map(|(s, c, err, m)| {
            RunEvent::ToolReturned {
                subagent: s.into(),
                call_id: format!("{s}.{c}"),
                is_error: err,
                content_digest: "d".into(),
                observations: vec![baton::Observation::Searched {
                    call_id: format!("{s}.{c}"),
                    pattern: c.to_string(),
                    scope: vec![".".into()],
                    matches: m,
                    files_searched: 3,
                    files_skipped: 0,
                    case_insensitive: false,
                    fixed_string: false,
                    not_searched: 0,
                    not_searched_names: Vec::new(),
                }],
                effect: if err { E::Failed } else { E::Completed },
            }
        }),
        (sub.clone(), 0u32..3).prop_map(|(s, r)| RunEvent::HandoffAccepted {
            subagent: s.into(),
            handoff: baton::Handoff::default(),
            repairs: r,
            evidence_digests: Default::default(),
            dropped: Vec::new(),
        }),
        (sub.clone(), 0u32..9).prop_map(|(s, n)| RunEvent::BudgetSpent {
            subagent: s.into(),
            spent: baton::Spent {
                model_turns: n,
                tool_calls: n,
                tokens_in: 10 * n as u64,
                tokens_out: n as u64,
                cache_read_tokens: n as u64,
                cache_write_tokens: 0,
                cost_micros: 7 * n as u64,
            },
        }),
        sub.prop_map(|s| RunEvent::SubagentEnded {
            subagent: s.into(),
            state: baton::SubagentState::HandedOff,
            error: None,
        }),
        Just(RunEvent::RunResumed { after_seq: 3 }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any log survives the store as logged; its checkpoint passes its check, covers every
    /// event, survives its own JSON form, and lets an effect be repeated exactly when its tool
    /// declared it only reads.
    #[test]
    fn a_projection_covers_its_log_and_survives_its_json(events in prop::collection::vec(event(), 0..40)) {
        let store = MemoryStore::new();
        let mut all = vec![(1, RunEvent::RunStarted {
            question: "q".into(), root: "/r".into(), model: "m".into(), agents: 1,
            max_subagents: 3, budget: baton::Budget::default(), repairs: 2, shards: None, tools: vec!["grep".into()],
            max_waves: None, task: Default::default(),
        })];
        all.extend(events.into_iter().map(|e| (2, e)));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let logged = rt.block_on(store.append("r1", all)).unwrap().unwrap();
        let read = store.events("r1").unwrap();
        prop_assert_eq!(&read, &logged);
        let once = project("r1", &logged);
        prop_assert!(once.check().is_ok());
        // It covers every event, and it survives its own JSON form (what the store keeps).
        prop_assert_eq!((once.first_seq, once.last_seq), (1, logged.len() as u64));
        let stored: baton::Checkpoint =
            serde_json::from_str(&serde_json::to_string(&once).unwrap()).unwrap();
        // Stored, it keeps every effect still unresolved and every one not to be repeated;
        // a read-only call that ended may be left out. All else is as projected.
        for e in &once.effects {
            let must_keep = e.prohibited_repetition
                || matches!(
                    e.state,
                    baton::checkpoint::EffectState::Proposed
                        | baton::checkpoint::EffectState::AwaitingApproval
                        | baton::checkpoint::EffectState::Executing
                        | baton::checkpoint::EffectState::Observed
                        | baton::checkpoint::EffectState::OutcomeUnknown
                );
            prop_assert!(!must_keep || stored.effects.contains(e), "{:?} was not kept", e);
        }
        prop_assert!(stored.effects.iter().all(|e| once.effects.contains(e)));
        let (mut a, mut b) = (stored.clone(), once.clone());
        a.effects.clear();
        b.effects.clear();
        prop_assert_eq!(&a, &b);
        // An effect may be repeated exactly when its tool declared it only reads (checked
        // where every call of that id declared the same).
        for effect in &once.effects {
            let declared: std::collections::BTreeSet<bool> = logged
                .iter()
                .filter_map(|e| match &e.event {
                    RunEvent::ToolCalled { call_id, read_only, .. }
                        if effect.intent_id.split('#').next() == Some(call_id.as_str()) =>
                    {
                        Some(*read_only)
                    }
                    _ => None,
                })
                .collect();
            if declared.len() == 1 {
                prop_assert_eq!(declared.first(), Some(&!effect.prohibited_repetition));
            }
        }
    }
}

fn schema_keys(value: &Value) -> std::collections::BTreeSet<String> {
    value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// Checks every event against `contracts/event.schema.json`: its kind is one of the schema's,
/// every field written is declared, every required field is written. Returns the kinds seen.
pub(crate) fn events_fit_their_schema(
    events: &[baton::checkpoint::LoggedEvent],
    events_schema: &Value,
) -> std::collections::BTreeSet<String> {
    let branches = events_schema["oneOf"].as_array().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for logged in events {
        let payload = serde_json::to_value(&logged.event).unwrap();
        let kind = payload["kind"].as_str().unwrap().to_string();
        let branch = branches
            .iter()
            .find(|b| b["properties"]["kind"]["const"] == kind.as_str())
            .unwrap_or_else(|| panic!("{kind} is not in event.schema.json"));
        let declared = schema_keys(&branch["properties"]);
        let written = schema_keys(&payload);
        assert!(
            written.is_subset(&declared),
            "{kind}: undeclared {:?}",
            written.difference(&declared)
        );
        for required in branch["required"].as_array().unwrap() {
            assert!(
                written.contains(required.as_str().unwrap()),
                "{kind}: {required} missing"
            );
        }
        seen.insert(kind);
    }
    seen
}

/// Every event a real run logs, and its checkpoint, fit the schemas in contracts/: the kind is
/// one of the schema's, every field written is declared, every required field is written.
#[tokio::test]
async fn logged_events_and_checkpoints_match_their_schemas() {
    let events_schema: Value =
        serde_json::from_str(include_str!("../contracts/event.schema.json")).unwrap();
    let checkpoint_schema: Value =
        serde_json::from_str(include_str!("../contracts/checkpoint.schema.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run_id = logged_run(dir.path()).await;
    let store = SqliteStore::open(dir.path()).unwrap();
    let events = store.events(&run_id).unwrap();
    let seen = events_fit_their_schema(&events, &events_schema);
    for kind in [
        "run_started",
        "plan_revised",
        "subagent_spawned",
        "tool_called",
        "tool_returned",
        "handoff_accepted",
        "budget_spent",
        "subagent_ended",
        "run_finished",
    ] {
        assert!(seen.contains(kind), "a run logs {kind}");
    }
    let checkpoint =
        serde_json::to_value(store.latest_checkpoint(&run_id).unwrap().unwrap()).unwrap();
    let required: std::collections::BTreeSet<String> = checkpoint_schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert_eq!(schema_keys(&checkpoint), required);
}
