//! Issue 26, items 1 and 2: the helper models of a subagent's window, through whole runs —
//! the ledger model classifies flagged turns off the subagent's path (a verbatim pin kept, a
//! paraphrase discarded, an error harmless), the summary model's narrative replaces a
//! summary only when it keeps the skeleton, and every answer is logged with its model, prompt
//! revision, cost and latency.

use std::sync::Arc;
use std::time::Duration;

use baton::checkpoint::EventStore;
use baton::testing::{MemoryStore, ScriptedModel, ScriptedTurn};
use baton::{Coordinator, Message, Model, ModelError, ModelRequest, ModelResponse, Task};
use serde_json::{json, Value};

/// A scripted model that takes its time over each answer, so a helper's answer (instant)
/// is in before the subagent's next turn.
struct Paced(Arc<ScriptedModel>, Duration);

#[async_trait::async_trait]
impl Model for Paced {
    fn name(&self) -> String {
        self.0.name()
    }
    fn context_window(&self) -> usize {
        self.0.context_window()
    }
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        tokio::time::sleep(self.1).await;
        self.0.complete(request).await
    }
}

/// The events of `kind` the run logged, as JSON; every event of the run is first checked
/// against contracts/event.schema.json.
fn logged(store: &MemoryStore, run: &str, kind: &str) -> Vec<Value> {
    let events = store.events(run).unwrap();
    let schema: Value =
        serde_json::from_str(include_str!("../contracts/event.schema.json")).unwrap();
    crate::durable::events_fit_their_schema(&events, &schema);
    events
        .iter()
        .filter(|e| e.event.kind() == kind)
        .map(|e| serde_json::to_value(&e.event).unwrap())
        .collect()
}

/// Runs "What does step_1 do?" over `tree` with one subagent, logged to `store`: the report,
/// once its subagent handed off.
async fn one_subagent(
    builder: baton::CoordinatorBuilder,
    store: &Arc<MemoryStore>,
    tree: &std::path::Path,
) -> baton::Report {
    let report = builder
        .store(store.clone())
        .agents(1)
        .max_subagents(1)
        .build()
        .run(Task::explore("What does step_1 do?", tree))
        .await
        .unwrap();
    assert_eq!(
        report.subagents[0].state,
        baton::SubagentState::HandedOff,
        "{:?}",
        report.subagents
    );
    report
}

const HANDOFF: &str = "## Settled conclusions\n- `step_1` adds one. [src/big.rs:1]\n## Open items\n## Hard constraints\n- none\n";

#[tokio::test]
async fn the_ledger_model_keeps_verbatim_pins_discards_paraphrases_and_its_errors_are_harmless() {
    let tree = crate::support::tree(&[("src/big.rs", "pub fn step_1(x: u64) -> u64 { x + 1 }\n")]);
    let grep = || vec![("grep".to_string(), json!({"pattern": "step_"}))];
    let subagent = Arc::new(ScriptedModel::new([
        ScriptedTurn::Said(
            "We should keep the cache warm between calls.".into(),
            grep(),
        ),
        ScriptedTurn::Said("Let us stay inside src for the rest.".into(), grep()),
        ScriptedTurn::Said("I would rather avoid the vendored code.".into(), grep()),
        ScriptedTurn::text(HANDOFF),
    ]));
    let small = Arc::new(ScriptedModel::new([
        ScriptedTurn::text(
            "```json\n[{\"binding\": true, \"class\": \"commitment\", \"text\": \"keep the cache warm between calls\"}]\n```",
        ),
        ScriptedTurn::text(
            r#"[{"binding": true, "class": "commitment", "text": "I will only work in src"}]"#,
        ),
        ScriptedTurn::Fail("overloaded".into()),
    ]));
    let store = Arc::new(MemoryStore::new());
    let builder = Coordinator::builder()
        .model(Arc::new(Paced(
            subagent.clone(),
            Duration::from_millis(300),
        )))
        .ledger_model(small.clone());
    // A helper's error does not touch the subagent: it hands off.
    let report = one_subagent(builder, &store, tree.path()).await;
    let classified = logged(&store, &report.run_id, "ledger_classified");
    let got: Vec<(u64, u64, bool)> = classified
        .iter()
        .map(|e| {
            (
                e["accepted"].as_u64().unwrap(),
                e["discarded"].as_u64().unwrap(),
                e["error"].is_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![(1, 0, false), (0, 1, false), (0, 0, true)],
        "{classified:#?}"
    );
    assert!(classified[2]["error"]
        .as_str()
        .unwrap()
        .contains("overloaded"));
    for e in &classified {
        assert_eq!(e["model"], "scripted");
        assert_eq!(e["prompt_revision"], "ledger-1");
        assert!(e["latency_ms"].is_u64() && e["cost_micros"].is_u64());
    }
    // Each flagged turn was sent whole, as the assistant's.
    let asked = small.requests();
    assert_eq!(asked.len(), 3);
    let Message::User { text } = &asked[0].messages[0] else {
        panic!()
    };
    assert!(
        text.contains("We should keep the cache warm between calls.")
            && text.contains("from the assistant")
    );
    assert!(asked[0].tools.is_empty());
}

#[tokio::test]
async fn without_a_ledger_model_no_turn_is_sent_anywhere() {
    let tree = crate::support::tree(&[("src/big.rs", "pub fn step_1(x: u64) -> u64 { x + 1 }\n")]);
    let subagent = Arc::new(ScriptedModel::new([
        ScriptedTurn::Said(
            "We should keep the cache warm between calls.".into(),
            vec![("grep".to_string(), json!({"pattern": "step_"}))],
        ),
        ScriptedTurn::text(HANDOFF),
    ]));
    let store = Arc::new(MemoryStore::new());
    let report = one_subagent(Coordinator::builder().model(subagent), &store, tree.path()).await;
    assert!(logged(&store, &report.run_id, "ledger_classified").is_empty());
}

/// A summary model that answers each summary it is shown with `narrate` applied to it, and
/// records what it was shown.
struct Writer {
    narrate: fn(&str) -> String,
    shown: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Model for Writer {
    fn name(&self) -> String {
        "writer".into()
    }
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let Some(Message::User { text }) = request.messages.first() else {
            panic!("a summary model is shown one user turn")
        };
        let summary = text
            .strip_prefix("The summary:\n")
            .expect("the summary first")
            .split("\nFacts to copy word for word:\n")
            .next()
            .unwrap()
            .trim_end()
            .to_string();
        self.shown.lock().unwrap().push(summary.clone());
        let narrative = (self.narrate)(&format!("{summary}\n"));
        Ok(ModelResponse::new(
            narrative,
            Vec::new(),
            baton::Usage::default(),
        ))
    }
}

/// A run whose subagent's window fills with long turns, its summaries narrated by `narrate`:
/// the report, every request the subagent's model was sent, the `summary_narrated` events
/// and what the writer was shown.
async fn a_narrated_run(
    narrate: fn(&str) -> String,
) -> (Vec<ModelRequest>, Vec<Value>, Vec<String>) {
    let tree = crate::support::tree(&[("src/big.rs", "pub fn step_1(x: u64) -> u64 { x + 1 }\n")]);
    let grep = || vec![("grep".to_string(), json!({"pattern": "step_"}))];
    let mut turns = vec![ScriptedTurn::Said(
        "Never delete /data/shard0/blocks.bin. The copy of shard 0 is outcome_unknown. Did the flush of shard 0 reach the disk?".into(),
        grep(),
    )];
    for round in 1..30 {
        turns.push(ScriptedTurn::Said(
            format!(
                "Shard {round} keeps its blocks at /data/shard{round}/blocks.bin with checksum {}. {}",
                9000 + round,
                "The writer flushes them in order and the reader checks every block. ".repeat(6)
            ),
            grep(),
        ));
    }
    turns.push(ScriptedTurn::text(HANDOFF));
    let subagent = Arc::new(ScriptedModel::new(turns).with_window(9_000));
    let writer = Arc::new(Writer {
        narrate,
        shown: std::sync::Mutex::new(Vec::new()),
    });
    let store = Arc::new(MemoryStore::new());
    let builder = Coordinator::builder()
        .model(Arc::new(Paced(subagent.clone(), Duration::from_millis(30))))
        .summary_model(writer.clone())
        .budget(baton::Budget {
            model_turns: 60,
            tool_calls: 60,
            tokens: 10_000_000,
        });
    let report = one_subagent(builder, &store, tree.path()).await;
    let narrated = logged(&store, &report.run_id, "summary_narrated");
    let shown = writer.shown.lock().unwrap().clone();
    (subagent.requests(), narrated, shown)
}

fn summaries(request: &ModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Compacted { text, .. } if text.starts_with("[compacted:") => {
                Some(text.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_faithful_narrative_replaces_the_summary_in_the_subagents_window() {
    fn faithful(body: &str) -> String {
        body.replacen(
            "## Settled conclusions\n",
            "## Settled conclusions\nIn short: the shards were read one by one, in order.\n",
            1,
        )
    }
    let (requests, narrated, shown) = a_narrated_run(faithful).await;
    assert!(
        !shown.is_empty() && !narrated.is_empty(),
        "a summary was narrated"
    );
    let first = &narrated[0];
    assert_eq!(first["promoted"], true, "{first:#}");
    assert_eq!(first["model"], "writer");
    assert_eq!(first["prompt_revision"], "narrative-1");
    assert!(first["messages"].as_str().unwrap().contains("..="));
    assert_eq!(first["folded_digest"].as_str().unwrap().len(), 64);
    // A later request carries the narrative in the summary's place, marked as narrated.
    let promoted = requests
        .iter()
        .flat_map(summaries)
        .find(|s| s.contains("In short:"));
    let promoted = promoted.expect("the narrative reached the window");
    assert!(
        promoted.contains("narrated by writer (narrative-1); raw turns: "),
        "{promoted}"
    );
    assert!(promoted.contains("Never delete /data/shard0/blocks.bin."));
}

#[tokio::test]
async fn a_narrative_that_calls_an_unknown_outcome_a_failure_is_never_promoted() {
    fn failed(body: &str) -> String {
        body.replace("outcome_unknown", "failed")
    }
    let (requests, narrated, shown) = a_narrated_run(failed).await;
    assert!(
        shown.iter().any(|s| s.contains("outcome_unknown")),
        "{shown:?}"
    );
    // The summary that names the unknown outcome is refused, with the reason; the others,
    // which the rewrite leaves as they were, may be promoted.
    let refused: Vec<&Value> = narrated.iter().filter(|e| e["promoted"] == false).collect();
    assert!(
        refused
            .iter()
            .any(|e| e["problems"].to_string().contains("`failed`")
                && e["problems"]
                    .to_string()
                    .contains("`outcome_unknown` is not kept")),
        "{narrated:#?}"
    );
    // No request ever carries a narrated summary that says `failed`, and the unknown outcome
    // keeps reaching the model from its template.
    for s in requests.iter().flat_map(summaries) {
        assert!(!(s.contains("narrated by") && s.contains("failed")), "{s}");
        if s.contains("The copy of shard 0") {
            assert!(
                s.contains("outcome_unknown") && !s.contains("narrated by"),
                "{s}"
            );
        }
    }
    assert!(requests
        .iter()
        .flat_map(summaries)
        .any(|s| s.contains("outcome_unknown")));
}

#[tokio::test]
async fn a_narrative_that_drops_a_constraint_or_closes_an_open_item_is_never_promoted() {
    fn dropped(body: &str) -> String {
        match body.split_once("## Hard constraints\n") {
            Some((head, _)) => format!("{head}## Hard constraints\n- none\n"),
            None => body.to_string(),
        }
    }
    fn closed(body: &str) -> String {
        body.replace(
            "## Open items\n- Did the flush of shard 0 reach the disk?\n",
            "- The flush of shard 0 reached the disk: done.\n## Open items\n- none\n",
        )
    }
    for (narrate, why) in [
        (
            dropped as fn(&str) -> String,
            "is not under Hard constraints",
        ),
        (closed, "is not under Open items"),
    ] {
        let (requests, narrated, _) = a_narrated_run(narrate).await;
        assert!(
            narrated
                .iter()
                .any(|e| e["promoted"] == false && e["problems"].to_string().contains(why)),
            "{why}: {narrated:#?}"
        );
        for s in requests.iter().flat_map(summaries) {
            if s.contains("The copy of shard 0") {
                assert!(!s.contains("narrated by"), "{s}");
                assert!(s.contains("Never delete /data/shard0/blocks.bin."), "{s}");
                assert!(
                    s.contains("Did the flush of shard 0 reach the disk?"),
                    "{s}"
                );
            }
        }
    }
}

/// A ledger model that takes a minute to answer holds nothing up: the subagent hands off, the
/// run ends, and the call still running is dropped with it.
#[tokio::test]
async fn a_slow_ledger_model_never_holds_the_subagent_up() {
    let tree = crate::support::tree(&[("src/big.rs", "pub fn step_1(x: u64) -> u64 { x + 1 }\n")]);
    let subagent = Arc::new(ScriptedModel::new([
        ScriptedTurn::Said(
            "We should keep the cache warm between calls.".into(),
            vec![("grep".to_string(), json!({"pattern": "step_"}))],
        ),
        ScriptedTurn::text(HANDOFF),
    ]));
    let small = Arc::new(ScriptedModel::new([ScriptedTurn::text("[]")]));
    let store = Arc::new(MemoryStore::new());
    let started = std::time::Instant::now();
    let builder = Coordinator::builder()
        .model(subagent)
        .ledger_model(Arc::new(Paced(small.clone(), Duration::from_secs(60))));
    let report = one_subagent(builder, &store, tree.path()).await;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(report.subagents[0].state, baton::SubagentState::HandedOff);
    assert!(logged(&store, &report.run_id, "ledger_classified").is_empty());
}

/// A bad helper flag on `baton research` is said before the corpus is indexed: nothing is
/// made under the state.
#[test]
fn a_bad_helper_flag_is_refused_before_research_indexes() {
    let corpus = crate::support::tree(&[("a.md", "# Retries\n\nThe delay doubles.\n")]);
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("state");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["research"])
        .arg(corpus.path())
        .args([
            "how does the delay grow?",
            "--ledger-model",
            "offline",
            "--state",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot be a helper model") && err.trim().lines().count() == 1);
    assert!(!dir.exists(), "nothing indexed");
}
