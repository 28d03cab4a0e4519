//! Issue 26, item 4: branches of a run — `baton fork RUN --at SEQ` shares the log up to SEQ
//! and is resumed on another question; `baton runs` shows the tree; `baton merge A B` builds
//! a new run from both branches, a planted conflict becoming an open item naming both.

use std::path::Path;

use baton::checkpoint::EventStore;
use serde_json::Value;

use crate::support::{baton_in as baton, stdout_ok as ok};

fn fixture() -> tempfile::TempDir {
    crate::support::tree(&[
        (
            "a/retry.rs",
            "pub fn next_delay(attempt: u32) -> u64 {\n    100 << attempt\n}\n",
        ),
        (
            "b/limits.rs",
            "pub const RETRY_LIMIT: u32 = 5;\n\npub fn retry_limit() -> u32 {\n    RETRY_LIMIT\n}\n",
        ),
    ])
}

fn explore(state: &Path, root: &Path, question: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "explore",
        root.to_str().unwrap(),
        question,
        "--json",
        "--no-progress",
        "--shards",
        "2",
        "--agents",
        "1",
        "--max-waves",
        "1",
    ];
    args.extend_from_slice(extra);
    let report: Value = serde_json::from_str(&ok(&baton(state, &args))).unwrap();
    report["run_id"].as_str().unwrap().to_string()
}

#[test]
fn a_fork_at_a_mid_run_seq_resumes_on_another_question() {
    let tree = fixture();
    let state = tempfile::tempdir().unwrap();
    let parent = explore(
        state.path(),
        tree.path(),
        "where is next_delay computed?",
        &[],
    );
    let store = baton::SqliteStore::open(state.path()).unwrap();
    let logged = store.events(&parent).unwrap();
    drop(store);
    // Mid-run: after the first subagent's handoff was accepted, before the second's.
    let first = logged
        .iter()
        .find(|e| e.event.kind() == "handoff_accepted")
        .unwrap();
    let at = first.seq;
    let done = match &first.event {
        baton::RunEvent::HandoffAccepted { subagent, .. } => subagent.clone(),
        _ => unreachable!(),
    };
    assert!(
        logged
            .iter()
            .filter(|e| e.event.kind() == "handoff_accepted")
            .count()
            == 2
    );

    let out = baton(state.path(), &["fork", &parent, "--at", "100000"]);
    assert_eq!(out.status.code(), Some(2), "no such event");
    let at_text = at.to_string();
    let forked: Value = serde_json::from_str(&ok(&baton(
        state.path(),
        &[
            "fork",
            &parent,
            "--at",
            &at_text,
            "--question",
            "what is the retry limit?",
            "--json",
        ],
    )))
    .unwrap();
    let fork = forked["run_id"].as_str().unwrap().to_string();
    assert_ne!(fork, parent);

    let store = baton::SqliteStore::open(state.path()).unwrap();
    let events = store.events(&fork).unwrap();
    // The shared log: the parent's events up to SEQ, as they were; then the fork's mark.
    for (f, p) in events.iter().zip(&logged).take(at as usize) {
        assert_eq!((f.seq, &f.event), (p.seq, &p.event));
    }
    match &events[at as usize].event {
        baton::RunEvent::RunForked {
            parent: named,
            at_seq,
            parent_digest,
            question,
        } => {
            assert_eq!((named, *at_seq), (&parent, at));
            assert_eq!(parent_digest, &first.digest);
            assert_eq!(question.as_deref(), Some("what is the retry limit?"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.events(&parent).unwrap(),
        logged,
        "the parent is not touched"
    );
    let schema: Value =
        serde_json::from_str(include_str!("../contracts/event.schema.json")).unwrap();
    crate::durable::events_fit_their_schema(&events, &schema);
    drop(store);

    let resumed: Value = serde_json::from_str(&ok(&baton(
        state.path(),
        &["resume", &fork, "--json", "--no-progress"],
    )))
    .unwrap();
    assert_eq!(resumed["question"], "what is the retry limit?");
    // On its own question the fork explores every shard again: the answer is the new one's,
    // and what the parent's question found is no longer settled.
    let settled = resumed["handoff"]["settled_conclusions"]
        .as_array()
        .unwrap();
    assert!(
        settled[0]["sources"][0]
            .as_str()
            .unwrap()
            .starts_with("b/limits.rs"),
        "{settled:?}"
    );
    assert!(
        !resumed["handoff"].to_string().contains("next_delay"),
        "{resumed:#}"
    );
    let respawned = |run: &str| {
        let store = baton::SqliteStore::open(state.path()).unwrap();
        store.events(run).unwrap().into_iter().any(|e| {
            e.seq > at + 1
                && matches!(&e.event, baton::RunEvent::SubagentSpawned { subagent, .. } if *subagent == done)
        })
    };
    assert!(respawned(&fork));
    // A fork on its parent's question keeps what was handed off before it: the subagent done
    // then is not run again, and the report is the parent's.
    let same = ok(&baton(
        state.path(),
        &["fork", &parent, "--at", &at_text, "--json"],
    ));
    let same: Value = serde_json::from_str(&same).unwrap();
    let same = same["run_id"].as_str().unwrap().to_string();
    let again: Value = serde_json::from_str(&ok(&baton(
        state.path(),
        &["resume", &same, "--json", "--no-progress"],
    )))
    .unwrap();
    assert!(!respawned(&same));
    let parent_report: Value = serde_json::from_str(&ok(&baton(
        state.path(),
        &["resume", &parent, "--json", "--no-progress"],
    )))
    .unwrap();
    assert_eq!(again["handoff"], parent_report["handoff"]);

    // The tree: the fork under its parent, with where it branched.
    let runs = ok(&baton(state.path(), &["runs"]));
    let lines: Vec<&str> = runs.lines().collect();
    let p = lines.iter().position(|l| l.starts_with(&parent)).unwrap();
    for child in [&fork, &same] {
        assert!(
            lines[p + 1..p + 3]
                .iter()
                .any(|l| l.starts_with(&format!("└ {child}"))
                    && l.ends_with(&format!("(fork of {parent} at {at})"))),
            "{runs}"
        );
    }
    let listed: Value =
        serde_json::from_str(&ok(&baton(state.path(), &["runs", "--json"]))).unwrap();
    let entry = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == fork.as_str())
        .unwrap()
        .clone();
    assert_eq!(entry["branch"]["kind"], "fork");
    assert_eq!(entry["branch"]["parent"], parent.as_str());
    assert_eq!(entry["question"], "what is the retry limit?");
}

#[test]
fn a_merge_keeps_what_agrees_once_and_names_both_branches_in_a_conflict() {
    let tree = fixture();
    let state = tempfile::tempdir().unwrap();
    let question = "where is next_delay computed?";
    let a = explore(state.path(), tree.path(), question, &[]);
    // The planted conflict: a constraint only the second branch states.
    let b = explore(
        state.path(),
        tree.path(),
        question,
        &["--constraint", "Never read files under vendor/."],
    );
    let merged: Value =
        serde_json::from_str(&ok(&baton(state.path(), &["merge", &a, &b, "--json"]))).unwrap();
    let conflicts = merged["merge"]["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{merged:#}");
    let conflict = conflicts[0].as_str().unwrap();
    assert!(
        conflict.contains("Never read files under vendor/.")
            && conflict.contains(&a)
            && conflict.contains(&b),
        "{conflict}"
    );
    let run = merged["merge"]["run_id"].as_str().unwrap();

    let brief: Value =
        serde_json::from_str(&ok(&baton(state.path(), &["brief", run, "--json"]))).unwrap();
    // The conflict is an open item naming both; nothing is chosen: the constraint stays in force.
    let listed = brief["brief"]["conflicts"].to_string();
    assert!(listed.contains(&a) && listed.contains(&b), "{brief:#}");
    let text = ok(&baton(state.path(), &["brief", run]));
    assert!(text.contains("## Conflicts between branches"), "{text}");
    let constraints = brief["checkpoint"]["constraints"].to_string();
    assert!(
        constraints.contains("Never read files under vendor/."),
        "{constraints}"
    );
    // What both settled alike is there once.
    let store = baton::SqliteStore::open(state.path()).unwrap();
    let events = store.events(run).unwrap();
    let handoff = events
        .iter()
        .find_map(|e| match &e.event {
            baton::RunEvent::HandoffAccepted { handoff, .. } => Some(handoff.clone()),
            _ => None,
        })
        .unwrap();
    let schema: Value =
        serde_json::from_str(include_str!("../contracts/event.schema.json")).unwrap();
    crate::durable::events_fit_their_schema(&events, &schema);
    let claims: Vec<&str> = handoff
        .settled_conclusions
        .iter()
        .map(|c| c.claim.as_str())
        .collect();
    let once: std::collections::BTreeSet<&&str> = claims.iter().collect();
    assert_eq!(once.len(), claims.len(), "{claims:?}");
    assert!(
        claims.iter().any(|c| c.contains("next_delay")),
        "{claims:?}"
    );
    assert!(handoff
        .open_items
        .iter()
        .any(|o| o.item.contains(&a) && o.item.contains(&b)));
    drop(store);

    let runs = ok(&baton(state.path(), &["runs"]));
    assert!(runs.contains(&format!("(merge of {a} and {b})")), "{runs}");
    // A merge has no work of its own to go on with: resuming it is refused, in one line.
    let out = baton(state.path(), &["resume", run, "--no-progress"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("holds a merge of") && err.trim().lines().count() == 1,
        "{err}"
    );
    let out = baton(state.path(), &["merge", &a, &a]);
    assert_eq!(out.status.code(), Some(2));
    let out = baton(state.path(), &["merge", &a, "run-none"]);
    assert_eq!(out.status.code(), Some(2));
}
