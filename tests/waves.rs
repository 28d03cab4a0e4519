//! Waves: follow-ups planned from the checkpoint after a wave ends — a connection that spans
//! two shards needs the second wave; a wave that adds nothing stops the run, and says so; a
//! run killed in its second wave resumes to the uninterrupted report; a research run follows a
//! term its answers' passages name.

use std::path::Path;
use std::process::{Command, Stdio};

use baton::checkpoint::{EventStore, RunEvent};
use baton::{Coordinator, SqliteStore, Task};
use serde_json::Value;

/// `a/` starts the engine and calls `flush_pages`; `b/` defines it in words the question
/// never uses: no first-wave subagent can find it.
fn spanning_tree() -> tempfile::TempDir {
    crate::support::tree(&[
        (
            "a/engine.rs",
            "/// Boots the engine and hands its buffer to the storage layer.\npub fn start_engine(cfg: u32) -> usize {\n    let buf = vec![0u8; cfg as usize];\n    flush_pages(&buf)\n}\n",
        ),
        (
            "b/sink.rs",
            "/// Hands the bytes over.\npub fn flush_pages(buf: &[u8]) -> usize {\n    buf.len()\n}\n",
        ),
    ])
}

const SPANNING: &str = "How does start_engine reach the storage layer?";

fn cited_paths(report: &baton::Report) -> Vec<String> {
    crate::support::cited_files(report)
        .into_iter()
        .map(|(p, _, _)| p)
        .collect()
}

async fn explore(root: &Path, question: &str, waves: usize) -> (baton::Report, Vec<RunEvent>) {
    let store = std::sync::Arc::new(baton::testing::MemoryStore::new());
    let coordinator = Coordinator::builder()
        .store(store.clone())
        .shards(2)
        .max_waves(waves)
        .build();
    let report = coordinator
        .run(Task::explore(question, root))
        .await
        .unwrap();
    let events = logged(store.as_ref(), &report.run_id);
    (report, events)
}

/// The run's logged events.
fn logged(store: &dyn EventStore, run: &str) -> Vec<RunEvent> {
    store
        .events(run)
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect()
}

fn wave_revisions(events: &[RunEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::PlanRevised { reason, .. } if reason.starts_with("wave ") => {
                Some(reason.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_connection_across_two_shards_needs_the_second_wave() {
    let tree = spanning_tree();
    let (one, events) = explore(tree.path(), SPANNING, 1).await;
    assert!(
        !cited_paths(&one).iter().any(|p| p == "b/sink.rs"),
        "one wave cannot reach b/: {}",
        one.to_markdown()
    );
    assert!(wave_revisions(&events).is_empty());
    assert_eq!(one.waves.len(), 1);
    assert_eq!(one.stopped_because, "--max-waves 1 reached");

    let (two, events) = explore(tree.path(), SPANNING, 3).await;
    crate::support::assert_citations_hold(&two, tree.path());
    let sink = two.handoff.settled_conclusions.iter().position(|c| {
        c.sources
            .iter()
            .any(|s| s.to_string().starts_with("b/sink.rs"))
    });
    assert!(
        sink.is_some(),
        "the second wave settles b/: {}",
        two.to_markdown()
    );
    let revisions = wave_revisions(&events);
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    assert!(revisions[0].contains("`flush_pages`"), "{}", revisions[0]);
    assert!(two.waves.len() >= 2, "{:?}", two.waves);
    assert!(two.waves[1].added >= 1, "{:?}", two.waves);
    // The follow-up's subagent handed off, over the paths nobody had searched for the name.
    let follow_up = &two.waves[1].subagents[0];
    let summary = two.subagents.iter().find(|s| &s.id == follow_up).unwrap();
    assert_eq!(summary.state, baton::SubagentState::HandedOff);
    let planned = events
        .iter()
        .rev()
        .find_map(|e| match e {
            RunEvent::PlanRevised { subagents, .. } => {
                subagents.iter().find(|p| &p.id == follow_up).cloned()
            }
            _ => None,
        })
        .unwrap();
    assert!(
        planned
            .question
            .as_deref()
            .unwrap_or("")
            .contains("`flush_pages`"),
        "{planned:?}"
    );
    assert!(!planned.scope.contains(&".".to_string()), "{planned:?}");
}

#[tokio::test]
async fn a_wave_that_adds_nothing_stops_the_run_and_says_so() {
    // The name the answer calls is defined inside the lines the first wave cites.
    let tree = crate::support::tree(&[
        (
            "a/engine.rs",
            "pub fn start_engine() -> u32 {\n    fn tick_clock() -> u32 { 7 }\n    tick_clock()\n}\n",
        ),
        ("b/other.rs", "pub fn unrelated() {}\n"),
    ]);
    let (report, events) = explore(tree.path(), "How does start_engine run?", 3).await;
    let revisions = wave_revisions(&events);
    assert_eq!(revisions.len(), 1);
    // The revision says what the wave before it added, as ranked then.
    assert!(
        revisions[0].starts_with(
            "wave 2: wave 1 added 1 settled conclusion(s) as ranked then; 1 follow-up(s)"
        ),
        "{revisions:?}"
    );
    assert_eq!(report.waves.len(), 2, "{:?}", report.waves);
    assert_eq!(report.waves[1].added, 0);
    assert_eq!(report.stopped_because, "wave 2 added no settled conclusion");
    // The markdown's last line says why, and what each wave ran and added.
    let markdown = report.to_markdown_shown(true);
    // Two shards (a/ and b/), one answer.
    assert!(
        markdown.ends_with(
            "Stopped: wave 2 added no settled conclusion (wave 1: 2 subagent(s), 1 added; wave 2: 1 subagent(s), 0 added).\n"
        ),
        "{markdown}"
    );
    assert_eq!(
        report.waves[1].stopped_because.as_deref(),
        Some("wave 2 added no settled conclusion")
    );
}

#[tokio::test]
async fn a_definition_question_stops_after_one_wave() {
    let tree = spanning_tree();
    let (report, events) = explore(tree.path(), "Where is start_engine defined?", 3).await;
    assert!(wave_revisions(&events).is_empty());
    assert_eq!(report.waves.len(), 1);
    assert!(
        report.stopped_because.contains("not how things connect"),
        "{}",
        report.stopped_because
    );
}

/// A corpus whose answer spans two documents: `recovery.md` answers in the question's words
/// and names `--keep-going`; `options.md` says what that flag does in words the question
/// never uses.
fn spanning_corpus() -> tempfile::TempDir {
    crate::support::tree(&[
        (
            "recovery.md",
            "# Recovering a build\n\nWhen a build stopped halfway, you can resume it with the --keep-going option.\n",
        ),
        (
            "options.md",
            "# Options\n\nThe --keep-going flag carries on past broken targets and lists them at the end.\n\n## Defaults\n\nWithout --keep-going the first broken target ends the whole run at once.\n",
        ),
        (
            "install.md",
            "# Installing\n\nDownload the archive and unpack it into a folder on your path.\n",
        ),
    ])
}

const RESUME: &str = "How do I resume a build that stopped halfway?";

async fn research(
    root: &Path,
    question: &str,
    waves: usize,
    subagents: usize,
) -> (baton::Report, Vec<RunEvent>) {
    let store = std::sync::Arc::new(baton::testing::MemoryStore::new());
    let coordinator = Coordinator::builder()
        .store(store.clone())
        .max_waves(waves)
        .max_subagents(subagents)
        .build();
    let report = coordinator
        .run(Task::research(question, root))
        .await
        .unwrap();
    let events = logged(store.as_ref(), &report.run_id);
    (report, events)
}

#[tokio::test]
async fn a_term_a_research_answer_names_is_followed_in_the_second_wave() {
    let corpus = spanning_corpus();
    let (one, _) = research(corpus.path(), RESUME, 1, 32).await;
    let cited = crate::support::cited_docs(&one);
    assert!(
        cited.iter().any(|s| s.starts_with("recovery.md#")),
        "{cited:?}"
    );
    assert!(
        !cited.iter().any(|s| s.starts_with("options.md#")),
        "one wave cannot reach options.md: {cited:?}"
    );
    assert_eq!(one.stopped_because, "--max-waves 1 reached");

    let (two, events) = research(corpus.path(), RESUME, 3, 32).await;
    let revisions = wave_revisions(&events);
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    assert!(
        revisions[0].starts_with("wave 2: wave 1 added 1 settled conclusion(s) as ranked then; 1 follow-up(s) planned from the checkpoint: sa2 What is `--keep-going`?"),
        "{revisions:?}"
    );
    // The follow-up's passage answers, after the first wave's.
    let cited = crate::support::cited_docs(&two);
    let first = cited.iter().position(|s| s.starts_with("recovery.md#"));
    let link = cited.iter().position(|s| s.starts_with("options.md#"));
    assert!(
        matches!((first, link), (Some(a), Some(b)) if a < b),
        "{cited:?}"
    );
    assert!(
        two.handoff
            .settled_conclusions
            .iter()
            .any(|c| c.claim.contains("carries on past broken targets")),
        "{}",
        two.to_markdown()
    );
    assert_eq!(two.waves.len(), 2, "{:?}", two.waves);
    assert_eq!(two.waves[1].added, 1);
    // Its passage names nothing the run did not ask about: the waves stop there.
    assert_eq!(
        two.stopped_because,
        "nothing left to follow: the first three answers' passages name no term no question asked about"
    );
    // The verifier that rereads the passages keeps its slot: with room for the first wave and
    // the verifier only, no follow-up is planned, and the report says so; with room for one
    // follow-up more, the subagents run out after it.
    for (most, waves) in [(2, 1), (3, 2)] {
        let (report, _) = research(corpus.path(), RESUME, 3, most).await;
        assert_eq!(report.waves.len(), waves, "{:?}", report.waves);
        assert_eq!(
            report.stopped_because,
            format!("--max-subagents {most} reached")
        );
    }
}

/// The first plan a scripted lead model gives over the spanning tree: a/ and b/, each asked
/// the run's question (so neither searches the name the second wave traces).
fn lead_first_plan() -> String {
    serde_json::json!({"subtasks": [
        {"scope": ["a"], "question": SPANNING}, {"scope": ["b"], "question": SPANNING}]})
    .to_string()
}

/// Explores the spanning tree, two waves, with `lead` as the lead model: the report and the
/// logged events.
async fn explore_with_lead(
    lead: std::sync::Arc<dyn baton::Model>,
) -> (baton::Report, Vec<RunEvent>) {
    let tree = spanning_tree();
    let store = std::sync::Arc::new(baton::testing::MemoryStore::new());
    let coordinator = Coordinator::builder()
        .store(store.clone())
        .lead_model(lead)
        .max_waves(2)
        .build();
    let run = coordinator.run(Task::explore(SPANNING, tree.path()));
    let report = tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("the run finishes")
        .unwrap();
    let events = logged(store.as_ref(), &report.run_id);
    (report, events)
}

/// With a lead model, the planner's follow-ups go to it: it is shown the answers and the
/// follow-ups, plans the wave through the plan schema, and is held to the planner's paths (a
/// scope beyond them is told back); the wave it plans runs and settles the link.
#[tokio::test]
async fn a_lead_model_plans_the_wave_held_to_the_planners_paths() {
    use baton::testing::{ScriptedModel, ScriptedTurn};
    // Two where the planner proposed one: more than the wave's follow-ups.
    let wide = serde_json::json!({"subtasks": [
        {"scope": ["b"], "question": "Where is `flush_pages` defined?"},
        {"scope": ["a"], "question": "Who calls `flush_pages`?"}]});
    let asked = "Where is `flush_pages` defined, and what calls it?";
    let follow = serde_json::json!({"subtasks": [{"scope": ["b"], "question": asked}]});
    let lead = std::sync::Arc::new(ScriptedModel::new([
        ScriptedTurn::text(lead_first_plan()),
        ScriptedTurn::text(wide.to_string()),
        ScriptedTurn::text(follow.to_string()),
        ScriptedTurn::Fail("the report is left to the merge".into()),
    ]));
    let (report, events) = explore_with_lead(lead.clone()).await;
    let requests = lead.requests();
    assert_eq!(requests.len(), 4, "plan, follow-ups twice, report");
    assert!(requests[1].system.contains("A wave of subagents has ended"));
    let shown = match &requests[1].messages[0] {
        baton::Message::User { text } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(shown.contains("The planner's follow-ups:"), "{shown}");
    assert!(shown.contains("`flush_pages`"), "{shown}");
    assert!(
        shown.contains("The paths a scope may name:\n- a\n- b\n"),
        "{shown}"
    );
    let retold = match &requests[2].messages[2] {
        baton::Message::User { text } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        retold.contains("there are 2 subtasks: give from 1 to 1"),
        "{retold}"
    );
    let turns: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::LeadTurn {
                purpose, outcome, ..
            } => Some((purpose.clone(), outcome.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        turns[1],
        (
            "follow-ups".to_string(),
            "accepted after 1 repair(s)".to_string()
        ),
        "{turns:?}"
    );
    let revisions = wave_revisions(&events);
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    assert!(
        revisions[0].contains("planned from the checkpoint (by the lead model scripted): sa3 Where is `flush_pages` defined, and what calls it?"),
        "{}",
        revisions[0]
    );
    assert_eq!(report.waves.len(), 2, "{:?}", report.waves);
    let id = &report.waves[1].subagents[0];
    let planned = report.subagents.iter().find(|s| &s.id == id).unwrap();
    assert_eq!(planned.scope, "b");
    assert!(report.waves[1].added >= 1, "{:?}", report.waves);
    assert!(cited_paths(&report).contains(&"b/sink.rs".to_string()));
}

/// A lead plan that traces none of the planner's names is told back; a lead model that then
/// fails leaves the planner's follow-ups standing, and the log says why.
#[tokio::test]
async fn a_lead_model_that_fails_on_a_wave_leaves_the_planners_follow_ups() {
    use baton::testing::{ScriptedModel, ScriptedTurn};
    let unnamed = serde_json::json!({"subtasks": [{"scope": ["b"], "question": "What is in b?"}]});
    let lead = std::sync::Arc::new(ScriptedModel::new([
        ScriptedTurn::text(lead_first_plan()),
        ScriptedTurn::text(unnamed.to_string()),
        ScriptedTurn::Fail("overloaded".into()),
    ]));
    let (report, events) = explore_with_lead(lead.clone()).await;
    let revisions = wave_revisions(&events);
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    assert!(
        revisions[0].contains("(by the planner: the lead model's plan was not used, its lead_turn says why): sa3 Where is `flush_pages` defined, and where is it called?"),
        "{}",
        revisions[0]
    );
    let retold = match &lead.requests()[2].messages[2] {
        baton::Message::User { text } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        retold.contains("subtask 1: its `question` must name, in backticks, the one name it traces: `flush_pages`"),
        "{retold}"
    );
    let turn = events.iter().find_map(|e| match e {
        RunEvent::LeadTurn {
            purpose, outcome, ..
        } if purpose == "follow-ups" => Some(outcome.clone()),
        _ => None,
    });
    assert!(
        turn.as_deref()
            .is_some_and(|o| o.starts_with("the lead model failed")),
        "{turn:?}"
    );
    assert!(revisions[0].contains("`flush_pages`"), "{}", revisions[0]);
    assert_eq!(report.waves.len(), 2, "{:?}", report.waves);
    assert!(cited_paths(&report).contains(&"b/sink.rs".to_string()));
}

/// A lead model that plans the first wave, then panics.
struct PanicsOnWaves {
    calls: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl baton::Model for PanicsOnWaves {
    fn name(&self) -> String {
        "panicky".into()
    }
    async fn complete(
        &self,
        _request: baton::model::ModelRequest,
    ) -> Result<baton::model::ModelResponse, baton::model::ModelError> {
        if self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            panic!("the lead model broke");
        }
        Ok(baton::model::ModelResponse::new(
            lead_first_plan(),
            Vec::new(),
            baton::model::Usage::default(),
        ))
    }
}

/// A lead model whose task panics while planning a wave (or writing the report) leaves the
/// run going: the planner's follow-ups run, the merged handoffs stand, and the run finishes.
#[tokio::test]
async fn a_lead_model_that_panics_on_a_wave_leaves_the_run_finishing() {
    let lead = std::sync::Arc::new(PanicsOnWaves {
        calls: Default::default(),
    });
    let (report, events) = explore_with_lead(lead).await;
    assert_eq!(report.waves.len(), 2, "{:?}", report.waves);
    assert!(cited_paths(&report).contains(&"b/sink.rs".to_string()));
    let outcomes: Vec<(String, String)> = events
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::LeadTurn {
                purpose, outcome, ..
            } => Some((purpose, outcome)),
            _ => None,
        })
        .collect();
    let panicked = |purpose: &str| {
        outcomes.iter().any(|(p, o)| {
            p == purpose && o == "the lead model's task panicked: the lead model broke"
        })
    };
    assert!(panicked("follow-ups"), "{outcomes:?}");
    assert!(panicked("report"), "{outcomes:?}");
}

fn baton() -> Command {
    Command::new(env!("CARGO_BIN_EXE_baton"))
}

fn args(root: &Path, state: &Path) -> Vec<String> {
    [
        "explore",
        &root.display().to_string(),
        SPANNING,
        "--json",
        "--no-progress",
        "--agents",
        "1",
        "--shards",
        "2",
        "--state",
        &state.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn essentials(stdout: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(stdout).expect("one JSON report");
    serde_json::json!([
        v["handoff"],
        v["waves"],
        v["stopped_because"],
        v["also_found"]
    ])
}

#[cfg(unix)]
#[test]
fn a_run_killed_in_its_second_wave_resumes_to_the_uninterrupted_report() {
    let tree = spanning_tree();
    let clean_state = tempfile::tempdir().unwrap();
    let clean = baton()
        .args(args(tree.path(), clean_state.path()))
        .output()
        .unwrap();
    assert_eq!(clean.status.code(), Some(0));

    let killed_state = tempfile::tempdir().unwrap();
    let spawn = || {
        baton()
            .args(args(tree.path(), killed_state.path()))
            .args(["--offline-latency-ms", "300"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // Killed once the second wave is planned and its subagent spawned, before it hands off.
    let run_id = crate::support::kill_when(killed_state.path(), spawn, |events| {
        let revised = events.iter().any(|e| {
            matches!(&e.event, RunEvent::PlanRevised { reason, .. } if reason.starts_with("wave 2"))
        });
        revised && crate::support::count_kind(events, "subagent_spawned") == 3
    });
    let store = SqliteStore::open(killed_state.path()).unwrap();
    let before = store.events(&run_id).unwrap();
    assert_eq!(crate::support::count_kind(&before, "handoff_accepted"), 2);
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
    assert_eq!(essentials(&resumed.stdout), essentials(&clean.stdout));
    let store = SqliteStore::open(killed_state.path()).unwrap();
    let after = store.events(&run_id).unwrap();
    // The second wave was not planned again.
    let revisions = after
        .iter()
        .filter(|e| {
            matches!(&e.event, RunEvent::PlanRevised { reason, .. } if reason.starts_with("wave 2"))
        })
        .count();
    assert_eq!(revisions, 1);
}

#[tokio::test]
async fn markdown_shows_five_findings_and_says_how_many_more_all_shows_them() {
    let tree = spanning_tree();
    let (mut report, _) = explore(tree.path(), SPANNING, 1).await;
    let extra = baton::Conclusion {
        claim: "a/engine.rs holds `flush_pages(&buf)`".into(),
        sources: vec![baton::SourceId::parse("a/engine.rs:4").unwrap()],
        kind: baton::ConclusionKind::Finding,
    };
    let negative = baton::Conclusion {
        claim: "no line matches /nowhere_xyz/ in the whole tree".into(),
        sources: vec![baton::SourceId::parse("call:sa1.1").unwrap()],
        kind: baton::ConclusionKind::NegativeEvidence,
    };
    report.handoff.settled_conclusions = vec![extra; 7];
    report.handoff.settled_conclusions.push(negative);
    report.also_found.push(baton::AlsoFound {
        claim: "a comment".into(),
        sources: vec![baton::SourceId::parse("a/engine.rs:1").unwrap()],
        rank_reason: "tied to the question only by common words".into(),
    });
    let shown = report.to_markdown_shown(false);
    assert_eq!(shown.matches("[a/engine.rs:4]").count(), 5, "{shown}");
    assert!(
        shown.contains("Negative evidence: no line matches /nowhere_xyz/"),
        "{shown}"
    );
    assert!(shown.contains("2 more settled conclusion(s) and 1 finding(s) ranked below the answers are not shown: --all shows them"), "{shown}");
    let all = report.to_markdown_shown(true);
    assert_eq!(all.matches("[a/engine.rs:4]").count(), 7);
    assert!(all.contains("## Also found") && all.contains("a comment [a/engine.rs:1]"));
    assert!(all.contains("Stopped: --max-waves 1 reached"));
    let json: Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
    assert_eq!(
        json["handoff"]["settled_conclusions"]
            .as_array()
            .unwrap()
            .len(),
        8
    );
    assert_eq!(
        json["also_found"][0]["rank_reason"],
        "tied to the question only by common words"
    );
}
