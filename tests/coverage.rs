//! Negative evidence states its real coverage: a search or a listing through a link is judged
//! and reported where the link leads (so a link inside an `only` scope pointing out of it is
//! denied, never "searched 0 files"); hidden and ignored entries are named as not searched and
//! "the whole tree" is never said without them; a search that searched no file is no
//! evidence; on resume, evidence about a file that no longer exists is stale.

use std::sync::Arc;

use baton::testing::{MemoryStore, ScriptedModel, ScriptedTurn};
use baton::{Coordinator, EventStore, Observation, RunEvent, Task};
use serde_json::json;

use crate::policy::calls;
use crate::support::tree;

const NOTHING: &str = "## Settled conclusions\n## Open items\n- Where frobnicator_zeta is — stuck: not found\n## Hard constraints\n- none\n";

fn linked_tree() -> tempfile::TempDir {
    let dir = tree(&[
        ("src/lib.rs", "pub fn lib() {}\n"),
        ("docs/notes.md", "frobnicator_zeta lives here\n"),
    ]);
    #[cfg(unix)]
    std::os::unix::fs::symlink("../docs", dir.path().join("src/docs_link")).unwrap();
    dir
}

fn tool_results(events: &[baton::checkpoint::LoggedEvent]) -> Vec<Observation> {
    events
        .iter()
        .flat_map(|e| match &e.event {
            RunEvent::ToolReturned { observations, .. } => observations.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[tokio::test]
async fn a_search_or_listing_through_a_link_is_judged_where_it_leads() {
    let dir = linked_tree();
    let script = || {
        Arc::new(ScriptedModel::new([
            calls(&[
                (
                    "grep",
                    json!({"pattern": "frobnicator_zeta", "paths": ["src/docs_link"]}),
                ),
                ("list_dir", json!({"path": "src/docs_link"})),
            ]),
            ScriptedTurn::text(NOTHING),
        ]))
    };
    // Under "only src/": the link leads to docs/, so both calls are denied there.
    let store = Arc::new(MemoryStore::new());
    let report = Coordinator::builder()
        .model(script())
        .store(store.clone())
        .agents(1)
        .shards(1)
        .constraint("Only read files under src/")
        .build()
        .run(Task::explore("where is frobnicator_zeta?", dir.path()))
        .await
        .unwrap();
    let events = store.events(&report.run_id).unwrap();
    let denied: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::ToolDenied { denial, .. } => Some(denial.consequence.describe()),
            _ => None,
        })
        .collect();
    assert_eq!(denied.len(), 2, "{denied:?}");
    assert!(denied.iter().all(|d| d.contains("`docs`")), "{denied:?}");
    assert!(
        report.handoff.settled_conclusions.is_empty(),
        "no absence over 0 files: {:?}",
        report.handoff.settled_conclusions
    );
    // Without a constraint, the search runs where the link leads, and says so.
    let store = Arc::new(MemoryStore::new());
    let report = Coordinator::builder()
        .model(script())
        .store(store.clone())
        .agents(1)
        .shards(1)
        .build()
        .run(Task::explore("where is frobnicator_zeta?", dir.path()))
        .await
        .unwrap();
    let observations = tool_results(&store.events(&report.run_id).unwrap());
    assert!(observations.iter().any(|o| matches!(o,
        Observation::Searched { scope, matches: 1, .. } if scope == &["docs".to_string()])));
}

#[tokio::test]
async fn hidden_and_ignored_entries_are_named_as_not_searched() {
    let dir = tree(&[
        ("src/lib.rs", "pub fn lib() {}\n"),
        (".env", "FROBNICATOR_ZETA=1\n"),
        (".config/settings.toml", "frobnicator_zeta = 1\n"),
        (".gitignore", "gen/\n"),
        ("gen/out.rs", "pub fn frobnicator_zeta() {}\n"),
    ]);
    let report = Coordinator::builder()
        .build()
        .run(Task::explore("where is frobnicator_zeta?", dir.path()))
        .await
        .unwrap();
    let negative: Vec<&str> = report
        .handoff
        .settled_conclusions
        .iter()
        .filter(|c| c.kind == baton::ConclusionKind::NegativeEvidence)
        .map(|c| c.claim.as_str())
        .collect();
    assert!(!negative.is_empty(), "{:?}", report.handoff);
    for claim in negative {
        assert!(
            claim.contains("not its 4 hidden or ignored entries or links (.config, .env, .gitignore, gen), which were not searched"),
            "{claim}"
        );
        // Said once, in plain words.
        assert!(!claim.contains("but the entries it left out"), "{claim}");
    }
    // A search says what it left out, in its output and its observation.
    let ws = baton::Workspace::open(dir.path()).unwrap();
    let out = crate::support::execute(
        &baton::ToolRegistry::workspace(),
        &ws,
        baton::ToolCall {
            id: "t.1".into(),
            name: "grep".into(),
            arguments: json!({"pattern": "frobnicator"}),
        },
    );
    assert!(
        out.content.contains(
            "not searched: 4 hidden or ignored entries or links (.config, .env, .gitignore, gen)"
        ),
        "{}",
        out.content
    );
    assert!(out.observations.iter().any(|o| matches!(o,
        Observation::Searched { not_searched: 4, not_searched_names, .. } if not_searched_names.len() == 4)));
}

#[tokio::test]
async fn a_resume_whose_root_lost_a_file_finds_its_negative_evidence_stale() {
    let dir = tree(&[
        ("src/lib.rs", "pub fn lib() {}\n"),
        ("src/main.rs", "fn main() {}\n"),
    ]);
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let coordinator = Coordinator::builder().store(Arc::clone(&store)).build();
    let first = coordinator
        .run(Task::explore("where is frobnicator_zeta?", dir.path()))
        .await
        .unwrap();
    let cites_lib = |report: &baton::Report| {
        report.handoff.settled_conclusions.iter().any(|c| {
            c.kind == baton::ConclusionKind::NegativeEvidence && c.claim.contains("lib.rs")
                || c.claim.contains("the whole tree")
        })
    };
    assert!(cites_lib(&first), "{:?}", first.handoff);
    std::fs::remove_file(dir.path().join("src/lib.rs")).unwrap();
    let resumed = coordinator
        .resume(&first.run_id)
        .await
        .unwrap()
        .report()
        .await
        .unwrap();
    assert!(
        !resumed
            .handoff
            .settled_conclusions
            .iter()
            .any(|c| c.claim.contains("src/lib.rs") || c.claim.contains("the whole tree")),
        "{:#?}",
        resumed.handoff.settled_conclusions
    );
    assert!(
        resumed
            .handoff
            .open_items
            .iter()
            .any(|o| o.item.starts_with("Stale since the resume:")),
        "{:#?}",
        resumed.handoff.open_items
    );
    let events = store.events(&first.run_id).unwrap();
    assert!(events
        .iter()
        .any(|e| matches!(&e.event, RunEvent::EvidenceStale { .. })));
}

/// A conclusion citing a call (`call:ID`) is rechecked on resume like one citing the file:
/// the file the call read changed, or was removed, and the conclusion is stale.
#[tokio::test]
async fn a_resume_finds_a_conclusion_citing_a_call_stale_when_what_it_read_changed() {
    for change in ["edit", "remove"] {
        let dir = tree(&[("src/lib.rs", "pub fn open_db() -> u32 {\n    42\n}\n")]);
        let script = Arc::new(ScriptedModel::new([
            ScriptedTurn::tool("read_file", json!({"path": "src/lib.rs"})),
            ScriptedTurn::text(
                "## Settled conclusions\n- `open_db` returns `42`. [call:sa1.1]\n## Open items\n## Hard constraints\n- none\n",
            ),
        ]));
        let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
        let coordinator = Coordinator::builder()
            .model(script)
            .store(Arc::clone(&store))
            .agents(1)
            .shards(1)
            .build();
        let first = coordinator
            .run(Task::explore("what does open_db return?", dir.path()))
            .await
            .unwrap();
        let settled = |r: &baton::Report| {
            r.handoff
                .settled_conclusions
                .iter()
                .any(|c| c.claim.contains("returns `42`"))
        };
        assert!(settled(&first), "{:#?}", first.handoff);
        let lib = dir.path().join("src/lib.rs");
        match change {
            "edit" => std::fs::write(&lib, "pub fn open_db() -> u32 {\n    43\n}\n").unwrap(),
            _ => std::fs::remove_file(&lib).unwrap(),
        }
        let resumed = coordinator
            .resume(&first.run_id)
            .await
            .unwrap()
            .report()
            .await
            .unwrap();
        assert!(!settled(&resumed), "{change}: {:#?}", resumed.handoff);
        assert!(
            resumed
                .handoff
                .open_items
                .iter()
                .any(|o| o.item.starts_with("Stale since the resume:")
                    && o.stuck_on.contains("call:sa1.1")),
            "{change}: {:#?}",
            resumed.handoff.open_items
        );
    }
}

/// A file whose name is not UTF-8 (no citation could write it) is not searched, and the
/// search says so, naming it escaped.
#[cfg(target_os = "linux")]
#[test]
fn a_name_no_citation_could_write_is_named_as_not_searched() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tree(&[("src/lib.rs", "pub fn lib() {}\n")]);
    let odd = dir
        .path()
        .join("src")
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9.rs"));
    std::fs::write(&odd, "pub fn frobnicator_zeta() {}\n").unwrap();
    let ws = baton::Workspace::open(dir.path()).unwrap();
    let out = crate::support::execute(
        &baton::ToolRegistry::workspace(),
        &ws,
        baton::ToolCall {
            id: "t.1".into(),
            name: "grep".into(),
            arguments: json!({"pattern": "frobnicator_zeta"}),
        },
    );
    assert!(
        out.content
            .contains("not searched: 1 hidden or ignored entries or links (src/caf"),
        "{}",
        out.content
    );
    assert!(
        out.observations.iter().any(|o| matches!(
            o,
            Observation::Searched {
                not_searched: 1,
                files_searched: 1,
                matches: 0,
                ..
            }
        )),
        "{:?}",
        out.observations
    );
}
