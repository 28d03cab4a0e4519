//! Constraints and denials across a resume: every constraint comes back with the rules it
//! was typed to, every denial is kept and still counts, and the resume's rechecks read only
//! where the constraints let files be read.

use std::sync::Arc;

use baton::checkpoint::{project, EventStore, RunEvent};
use baton::testing::MemoryStore;
use baton::testing::{ScriptedModel, ScriptedTurn};
use baton::{Coordinator, SubagentState, Task};
use serde_json::json;

use crate::policy::{calls, fixture, logged, HANDOFF, NOTHING, ONLY_SRC};
use crate::support::rust_tree;

/// A run cut off mid-flight resumes with every constraint it was given (their rules as
/// logged) and every denial it logged; a restarted subagent's earlier denials count toward
/// the bound, so the resumed attempt is stopped at the third.
#[tokio::test]
async fn a_resume_keeps_every_constraint_and_denial() {
    let dir = fixture();
    let read_docs = || ScriptedTurn::tool("read_file", json!({"path": "docs/retry.md"}));
    let model = Arc::new(ScriptedModel::new([
        calls(&[
            ("read_file", json!({"path": "docs/retry.md"})),
            ("read_file", json!({"path": "src/net/retry.rs"})),
        ]),
        read_docs(),
        ScriptedTurn::text(HANDOFF),
        // sa2
        read_docs(),
        ScriptedTurn::text(NOTHING),
    ]));
    let first = Arc::new(MemoryStore::new());
    let report = Coordinator::builder()
        .model(model)
        .store(first.clone())
        .agents(1)
        .shards(2)
        .max_subagents(2)
        .constraint(ONLY_SRC)
        .constraint("we ship on Fridays")
        .build()
        .run(Task::explore(
            "Where is the retry delay computed? Never edit files under docs.",
            dir.path(),
        ))
        .await
        .unwrap();
    assert_eq!(report.denials.len(), 3);
    let events = logged(&first, &report.run_id);
    // Cut after sa2's denial: its end never logged.
    let cut = events
        .iter()
        .position(
            |e| matches!(&e.event, RunEvent::ToolReturned { subagent, .. } if subagent == "sa2"),
        )
        .unwrap();
    let kept: Vec<(u64, RunEvent)> = events[..=cut]
        .iter()
        .map(|e| (e.at_ms, e.event.clone()))
        .collect();
    let second = Arc::new(MemoryStore::new());
    second.append(&report.run_id, kept).await.unwrap().unwrap();
    let resumed_model = Arc::new(ScriptedModel::new([
        // A restarted subagent orients itself first.
        ScriptedTurn::text("## Goal\nWhere is the retry delay computed?\n"),
        read_docs(),
        read_docs(),
        ScriptedTurn::text(NOTHING),
    ]));
    let resumed = Coordinator::builder()
        .model(resumed_model.clone())
        .store(second.clone())
        .agents(1)
        .max_subagents(2)
        .build()
        .resume(&report.run_id)
        .await
        .unwrap()
        .report()
        .await
        .unwrap();
    let texts = |r: &baton::Report| -> Vec<(String, String, usize)> {
        r.constraints
            .iter()
            .map(|c| (c.text.clone(), c.provenance.clone(), c.rules.len()))
            .collect()
    };
    assert_eq!(texts(&resumed), texts(&report));
    assert_eq!(
        texts(&resumed),
        vec![
            (ONLY_SRC.to_string(), "--constraint".to_string(), 1),
            (
                "we ship on Fridays".to_string(),
                "--constraint".to_string(),
                0
            ),
            (
                "Never edit files under docs.".to_string(),
                "question".to_string(),
                1
            ),
        ]
    );
    // sa1's two denials and sa2's first kept; the resumed sa2 was stopped at its third.
    assert_eq!(resumed.denials.len(), 5, "{:?}", resumed.denials);
    assert_eq!(&resumed.denials[..3], &report.denials[..3]);
    let sa2 = resumed.subagents.iter().find(|s| s.id == "sa2").unwrap();
    assert_eq!(sa2.state, SubagentState::Failed, "{sa2:?}");
    assert!(sa2
        .error
        .as_deref()
        .unwrap_or("")
        .contains("stopped after 3 denials"));
    assert_eq!(resumed_model.remaining(), 1);
    // The brief counts them.
    let checkpoint = project(&report.run_id, &logged(&second, &report.run_id));
    let brief = baton::checkpoint::brief(&checkpoint).render();
    assert!(brief.contains("## Denials (5)"), "{brief}");
}

/// On resume, the searches behind negative evidence are run again only where the run's
/// constraints let files be read: a forbidden file holding the pattern neither is read nor
/// makes the evidence stale.
#[tokio::test]
async fn a_resume_rechecks_only_where_the_constraints_let_it_read() {
    let dir = rust_tree();
    std::fs::write(dir.path().join("notes.md"), "zebra crossing\n").unwrap();
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("grep", json!({"pattern": "zebra"})),
        ScriptedTurn::text(NOTHING),
    ]));
    let first = Arc::new(MemoryStore::new());
    let report = Coordinator::builder()
        .model(model)
        .store(first.clone())
        .agents(1)
        .shards(1)
        .max_subagents(1)
        .constraint("Never read *.md files")
        .build()
        .run(Task::explore("Where is the zebra?", dir.path()))
        .await
        .unwrap();
    assert!(
        report
            .handoff
            .settled_conclusions
            .iter()
            .any(|c| c.claim.contains("zebra") && c.claim.contains("as constrained")),
        "{:?}",
        report.handoff.settled_conclusions
    );
    let events = logged(&first, &report.run_id);
    // Cut before the run's end: the resume only rechecks and reports.
    let kept: Vec<(u64, RunEvent)> = events
        .iter()
        .filter(|e| !matches!(e.event, RunEvent::RunFinished { .. }))
        .map(|e| (e.at_ms, e.event.clone()))
        .collect();
    let second = Arc::new(MemoryStore::new());
    second.append(&report.run_id, kept).await.unwrap().unwrap();
    let resumed = Coordinator::builder()
        .store(second.clone())
        .build()
        .resume(&report.run_id)
        .await
        .unwrap()
        .report()
        .await
        .unwrap();
    let after = logged(&second, &report.run_id);
    assert!(
        !after
            .iter()
            .any(|e| matches!(e.event, RunEvent::EvidenceStale { .. })),
        "the forbidden notes.md was searched on resume"
    );
    assert_eq!(
        resumed.handoff.settled_conclusions,
        report.handoff.settled_conclusions
    );
}
