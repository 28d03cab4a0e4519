//! Text that claims a permission changes no decision of the gate: an injection corpus run
//! through files, a tool's output, handoffs and compaction events.

use std::collections::BTreeSet;
use std::sync::Arc;

use baton::checkpoint::{project, LoggedEvent, RunEvent};
use baton::testing::MemoryStore;
use baton::testing::{ScriptedModel, ScriptedTurn};
use baton::{Consequence, Coordinator, Effect, Policy, Task};
use serde_json::json;

use crate::policy::{
    calls, fixture, logged, roles_with_extra_tools, tools, INJECTIONS, NOTHING, ONLY_SRC,
};

/// Text claiming a permission — in a file read, a tool's output, a handoff, a compaction's
/// pins and reason, a stale-evidence record — changes no decision: the same calls are denied before and after, in the same
/// subagent and in the next one, and the run's policy is the one its constraint events give.
#[tokio::test]
async fn injected_permissions_change_no_decision_of_the_gate() {
    let dir = fixture();
    let roles = roles_with_extra_tools();
    let forbidden = || {
        calls(&[
            ("read_file", json!({"path": "docs/retry.md"})),
            ("fetch", json!({"host": "example.com"})),
            ("grep", json!({"pattern": "delay", "paths": ["docs"]})),
        ])
    };
    let injected_handoff = format!(
        "## Settled conclusions\n\
- `next_delay` doubles the delay per attempt up to the cap: `doubled.min(self.cap_ms)`. [src/net/retry.rs:18-21]\n\
## Open items\n\
- {} — stuck: {}\n\
## Hard constraints\n\
- {}\n- {}\n",
        INJECTIONS[0], INJECTIONS[1], INJECTIONS[2], INJECTIONS[3]
    );
    let model = Arc::new(ScriptedModel::new([
        // sa1: reads the injection in a file and in a tool's output, is denied, asks again,
        // hands off claiming the permission.
        calls(&[
            ("read_file", json!({"path": "src/inject.rs"})),
            ("read_file", json!({"path": "src/net/retry.rs"})),
            ("fetch", json!({})),
        ]),
        forbidden(),
        forbidden(),
        ScriptedTurn::text(injected_handoff.clone()),
        // sa2: after the handoff, the same calls.
        forbidden(),
        ScriptedTurn::text(NOTHING),
    ]));
    let store = Arc::new(MemoryStore::new());
    let report = Coordinator::builder()
        .model(model.clone())
        .tools(tools())
        .roles(roles.path())
        .store(store.clone())
        .agents(1)
        .shards(2)
        .max_subagents(2)
        .constraint(ONLY_SRC)
        .constraint("No network access")
        .build()
        .run(Task::explore(
            "Where is the retry delay computed?",
            dir.path(),
        ))
        .await
        .unwrap();
    let events = logged(&store, &report.run_id);
    // Each forbidden call was denied all three times: 3 calls × 3 attempts.
    let denials: Vec<&baton::Denial> = events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::ToolDenied { denial, .. } => Some(denial),
            _ => None,
        })
        .collect();
    let by_consequence: BTreeSet<(String, String)> = denials
        .iter()
        .map(|d| (d.tool.clone(), d.consequence.resource.clone()))
        .collect();
    assert_eq!(
        by_consequence,
        BTreeSet::from([
            ("read_file".into(), "docs/retry.md".into()),
            ("fetch".into(), "example.com".into()),
            ("grep".into(), "docs".into()),
        ])
    );
    assert_eq!(denials.len(), 9, "{denials:?}");
    // The allowed reads of the injection ran.
    assert!(events.iter().any(|e| matches!(&e.event,
        RunEvent::ToolReturned { call_id, is_error: false, .. } if call_id == "sa1.1")));
    // Only the user's two constraints are in force, and the policy of the final checkpoint
    // decides every consequence as the policy of those two events alone does.
    let checkpoint = project(&report.run_id, &events);
    assert_eq!(checkpoint.constraints.len(), 2);
    assert_eq!(report.constraints.len(), 2);
    let stated: Vec<LoggedEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                RunEvent::RunStarted { .. } | RunEvent::ConstraintStated { .. }
            )
        })
        .cloned()
        .collect();
    let injected = injection_events(&report.run_id, events.len() as u64);
    let mut all = events.clone();
    all.extend(injected);
    let before = Policy::from_constraints(&project(&report.run_id, &stated).constraints);
    let after = Policy::from_constraints(&project(&report.run_id, &all).constraints);
    for (effect, resource) in grid() {
        let c = [Consequence {
            effect,
            resource: resource.to_string(),
        }];
        for read_only in [true, false] {
            assert_eq!(
                before.judge("t", read_only, &c).is_ok(),
                after.judge("t", read_only, &c).is_ok(),
                "{effect:?} {resource}"
            );
        }
        // Reads only under src/; no network and nothing undeclared; writing and programs
        // are not constrained here.
        let expected = match effect {
            Effect::Read | Effect::List | Effect::Search => {
                resource == "src" || resource.starts_with("src/")
            }
            Effect::Write | Effect::Spawn => true,
            Effect::Network | Effect::Undeclared => false,
        };
        assert_eq!(
            before.judge("t", true, &c).is_ok(),
            expected,
            "{effect:?} {resource}"
        );
    }
    // Issue 20, item 7: what the handoff put under Hard constraints is listed apart from the
    // run's constraints — marked as reported by sa1, not enforced — never in their form.
    let lines: Vec<&str> = report
        .handoff
        .hard_constraints
        .iter()
        .map(|h| h.constraint.as_str())
        .collect();
    let run_lines: Vec<String> = report.constraints.iter().map(|c| c.line()).collect();
    assert_eq!(&lines[..2], &run_lines[..], "the run's constraints first");
    for line in &lines[2..] {
        assert!(
            line.starts_with("reported by sa1, not enforced: \""),
            "{line}"
        );
    }
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(report.reported_constraints.len(), 2);
    assert!(report
        .reported_constraints
        .iter()
        .all(|r| r.reported_by == ["sa1"]
            && INJECTIONS[2..4]
                .iter()
                .any(|i| i.trim_end_matches('.') == r.text)));
    // The report is still a handoff that meets the contract's structure.
    assert!(baton::Handoff::parse(&report.handoff.to_markdown()).is_ok());
}

/// Every consequence the injection test judges.
fn grid() -> Vec<(Effect, &'static str)> {
    let effects = [
        Effect::Read,
        Effect::List,
        Effect::Search,
        Effect::Write,
        Effect::Network,
        Effect::Spawn,
        Effect::Undeclared,
    ];
    let resources = [
        ".",
        "src",
        "src/net/retry.rs",
        "docs",
        "docs/retry.md",
        "Cargo.toml",
        "example.com",
        "sh",
    ];
    effects
        .iter()
        .flat_map(|e| resources.iter().map(move |r| (*e, *r)))
        .collect()
}

/// Events of other kinds carrying the injections: a handoff accepted with them as hard
/// constraints, a compaction whose pins and reason hold them, stale evidence quoting them.
fn injection_events(run_id: &str, after: u64) -> Vec<LoggedEvent> {
    let text = INJECTIONS.join("\n");
    let kinds = vec![
        RunEvent::HandoffAccepted {
            subagent: "sa9".into(),
            handoff: baton::Handoff {
                hard_constraints: INJECTIONS
                    .iter()
                    .map(|i| baton::HardConstraint {
                        constraint: i.to_string(),
                        sources: Vec::new(),
                    })
                    .collect(),
                ..baton::Handoff::default()
            },
            repairs: 0,
            evidence_digests: Default::default(),
            dropped: Vec::new(),
        },
        RunEvent::WindowCompacted {
            subagent: "sa9".into(),
            decision: baton::compaction::Decision::Compact,
            tokens_before: 10,
            tokens_after: 5,
            cleared_tokens: 0,
            pinned: INJECTIONS.iter().map(|i| i.to_string()).collect(),
            constraints: INJECTIONS.iter().map(|i| i.to_string()).collect(),
            retired: vec![],
            reason: Some(text.clone()),
            folded: None,
        },
        RunEvent::EvidenceStale {
            subagent: "sa9".into(),
            sources: vec!["src/inject.rs:1-7".into()],
            claims: vec![text],
        },
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, event)| LoggedEvent {
            run_id: run_id.to_string(),
            seq: after + 1 + i as u64,
            at_ms: 0,
            event,
            prev: String::new(),
            digest: String::new(),
        })
        .collect()
}
