//! Issue 26, item 3: `baton audit RUN` on a real run — compactions, a denial, a resume — prints
//! each figure with the events it rests on, and a compaction that lost a constraint (injected
//! into the log) shows as lost.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use baton::checkpoint::EventStore;
use baton::testing::{ScriptedModel, ScriptedTurn};
use baton::{Coordinator, SqliteStore, Task};
use serde_json::{json, Value};

const HANDOFF: &str = "## Settled conclusions\n- `step_1` adds one. [src/big.rs:1]\n## Open items\n## Hard constraints\n- Never read files under vendor/.\n";

fn audit(state: &Path, run: &str, json: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_baton"));
    cmd.arg("audit").arg(run).arg("--state").arg(state);
    if json {
        cmd.arg("--json");
    }
    cmd.output().expect("run baton")
}

/// A run whose one subagent's window is compacted several times, that is denied a read of
/// vendor/ once, then resumed: its id.
async fn compacted_run(state: &Path, tree: &Path) -> String {
    let grep = || vec![("grep".to_string(), json!({"pattern": "step_"}))];
    let mut turns = vec![ScriptedTurn::Said(
        "First the vendored copy. I will check the checksum of every shard before I hand off."
            .into(),
        vec![("read_file".to_string(), json!({"path": "vendor/big.rs"}))],
    )];
    for round in 1..30 {
        turns.push(ScriptedTurn::Said(
            format!(
                "Shard {round} keeps its blocks at /data/shard{round}/blocks.bin. {}",
                "The writer flushes them in order and the reader checks every block. ".repeat(6)
            ),
            grep(),
        ));
    }
    turns.push(ScriptedTurn::text(HANDOFF));
    let store = Arc::new(SqliteStore::open(state).unwrap());
    let coordinator = Coordinator::builder()
        .model(Arc::new(ScriptedModel::new(turns).with_window(9_000)))
        .constraint("Never read files under vendor/.")
        .store(store)
        .agents(1)
        .max_subagents(1)
        .budget(baton::Budget {
            model_turns: 60,
            tool_calls: 60,
            tokens: 10_000_000,
        })
        .build();
    let report = coordinator
        .run(Task::explore("What does step_1 do?", tree))
        .await
        .unwrap();
    assert_eq!(report.subagents[0].state, baton::SubagentState::HandedOff);
    coordinator
        .resume(&report.run_id)
        .await
        .unwrap()
        .report()
        .await
        .unwrap();
    report.run_id
}

#[tokio::test]
async fn the_audit_prints_each_figure_and_a_lost_constraint() {
    let tree = crate::support::tree(&[
        ("src/big.rs", "pub fn step_1(x: u64) -> u64 { x + 1 }\n"),
        ("vendor/big.rs", "pub fn step_0() {}\n"),
    ]);
    let state = tempfile::tempdir().unwrap();
    let run = compacted_run(state.path(), tree.path()).await;

    let out = audit(state.path(), &run, true);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = &doc["audit"];
    let compactions = a["compactions"].as_array().unwrap();
    assert!(compactions.len() >= 2, "{a:#}");
    // Each compaction: what it had to carry (the pins its previous one carried that no later
    // turn settled: here the subagent's commitment) and the tokens it saved.
    for c in compactions {
        assert_eq!(c["lost"], json!([]), "{c:#}");
        assert!(
            c["tokens_before"].as_u64() > c["tokens_after"].as_u64(),
            "{c:#}"
        );
    }
    let commitment = "I will check the checksum of every shard before I hand off.";
    let later = &compactions[1];
    assert_eq!(later["mandatory"], json!([commitment]), "{later:#}");
    assert_eq!(later["rests_on"][0], compactions[0]["seq"]);
    // The settled conclusion is traced to the grep that showed src/big.rs:1.
    let evidence = a["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 1, "{a:#}");
    assert_eq!(evidence[0]["untraced"], json!([]));
    assert!(!evidence[0]["observations"].as_array().unwrap().is_empty());
    // One resume: its checkpoint matches its events, nothing done again.
    let resumes = a["resumes"].as_array().unwrap();
    assert_eq!(resumes.len(), 1, "{a:#}");
    assert_eq!(resumes[0]["differs"], json!([]));
    assert!(resumes[0]["stored_seq"].is_u64());
    assert_eq!(resumes[0]["respawned_done"], json!([]));
    assert_eq!(resumes[0]["repeated"], json!([]));
    // The denied read, by consequence, with its event.
    let denials = a["denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1, "{a:#}");
    assert_eq!(denials[0]["consequence"], "reading `vendor/big.rs`");
    assert_eq!(denials[0]["events"].as_array().unwrap().len(), 1);

    let out = audit(state.path(), &run, false);
    assert_eq!(out.status.code(), Some(0));
    let table = String::from_utf8(out.stdout).unwrap();
    for row in [
        "| figure | value | events |",
        "): mandatory fields | 1/1 retained |",
        "): tokens saved | ",
        "| evidence traceability | 1/1 settled conclusions traced |",
        "): state accuracy | checkpoint at ",
        "): repeated work | 0 tool calls run again (0 with effects) |",
        "| prohibited proposals | 1 denied |",
        "|   reading `vendor/big.rs` | 1 denied by `Never read files under vendor/.` |",
    ] {
        assert!(table.contains(row), "{row}\n{table}");
    }

    // Two compactions injected: the first pins a user's constraint, the second loses it. The
    // audit shows the loss, and what it rests on.
    let store = SqliteStore::open(state.path()).unwrap();
    let next = store.events(&run).unwrap().last().unwrap().seq + 1;
    let rule = "Keep every file under 1 MiB.".to_string();
    let compacted = |constraints: Vec<String>| baton::RunEvent::WindowCompacted {
        subagent: "sa1".into(),
        decision: baton::compaction::Decision::Compact,
        tokens_before: 8_000,
        tokens_after: 3_000,
        cleared_tokens: 0,
        pinned: constraints.clone(),
        constraints,
        retired: vec![],
        reason: None,
        folded: None,
    };
    store
        .append(
            &run,
            vec![
                (next, compacted(vec![rule.clone()])),
                (next + 1, compacted(vec![])),
            ],
        )
        .await
        .unwrap()
        .unwrap();
    drop(store);
    let out = audit(state.path(), &run, false);
    let table = String::from_utf8(out.stdout).unwrap();
    let row = format!(
        "| compaction {} (sa1): mandatory fields | 0/1 retained; lost `{rule}` | {next}, {} |",
        next + 1,
        next + 1
    );
    assert!(table.contains(&row), "{table}");
    let out = audit(state.path(), &run, true);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let last = doc["audit"]["compactions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["lost"], json!([rule]));
}

#[test]
fn an_unknown_run_is_a_one_line_error() {
    let state = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(state.path()).unwrap();
    let _ = SqliteStore::open(state.path()).unwrap();
    let out = audit(state.path(), "r-none", false);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
