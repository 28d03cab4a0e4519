//! baton as a library (issue 22): the event stream is the log — read again from any point
//! with no gap and no duplicate, bounded when nobody reads; tools, roles and models of one's
//! own. Approvals are tests/approvals.rs.

use std::sync::Arc;
use std::time::Duration;

use baton::checkpoint::EventStore;
use baton::testing::{MemoryStore, ScriptedModel, ScriptedTurn};
use baton::{
    async_trait, json, Consequence, Coordinator, LoggedEvent, Model, ModelError, ModelRequest,
    ModelResponse, Observation, Role, RunEvent, SubagentState, Task, Tool, ToolContext, ToolError,
    ToolOutput, ToolRegistry, ToolSpec, Usage, Value,
};

const EMPTY_HANDOFF: &str = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";

/// Where the retry delay is computed, explored, and a reviewer's own question beside it.
fn reviewed(root: &std::path::Path) -> Task {
    Task::explore("where is the retry delay computed?", root)
        .roles(["explorer"])
        .subtask("reviewer", "where is the delay capped?")
}

/// A model that hands off at once, after `delay_us` microseconds: a fan-out of many quick
/// subagents.
struct Quick {
    delay_us: u64,
}

#[async_trait]
impl Model for Quick {
    fn name(&self) -> String {
        "quick".into()
    }
    async fn complete(&self, _request: ModelRequest) -> Result<ModelResponse, ModelError> {
        if self.delay_us > 0 {
            tokio::time::sleep(Duration::from_micros(self.delay_us)).await;
        }
        Ok(ModelResponse::new(
            EMPTY_HANDOFF.into(),
            Vec::new(),
            Usage {
                input_tokens: 100,
                output_tokens: 10,
                ..Usage::default()
            },
        ))
    }
}

/// A coordinator of up to `n` quick subagents, `agents` at once, for a role with no tools.
fn workers(n: usize, agents: usize, delay_us: u64) -> baton::CoordinatorBuilder {
    Coordinator::builder()
        .model(Arc::new(Quick { delay_us }))
        .role(Role::new("worker"))
        .agents(agents)
        .max_subagents(n)
}

/// A job of `n` subtasks for the worker role: no tree to walk.
fn parts(n: usize) -> Task {
    let mut task = Task::job("What does each part say?");
    for i in 0..n {
        task = task.subtask("worker", format!("part {i}"));
    }
    task
}

/// A small deterministic generator (xorshift), so a failing case can be replayed by its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Issue 22: a reader that disconnects at a random point and comes back with
/// `events_from(last seq)` — at once or a little later, during the run or after it, once or
/// twice — reads every event of the log exactly once, in order. 1,000 runs of a scripted
/// fan-out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_drops_and_comes_back_reads_every_event_exactly_once() {
    let seed: u64 = std::env::var("BATON_STREAM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_ba70);
    let mut rng = Rng(seed);
    let (coordinator, task) = (workers(4, 4, 200).build(), parts(4));
    let mut mid_run = 0;
    for case in 0..1000 {
        let handle = coordinator.start(task.clone()).await.unwrap();
        let mut read: Vec<LoggedEvent> = Vec::new();
        let reconnects = 1 + rng.below(2);
        let mut stream = handle.events();
        for _ in 0..reconnects {
            let stop_after = rng.below(30);
            while (read.len() as u64) < stop_after {
                match stream.next().await {
                    Some(event) => read.push(event.unwrap()),
                    None => break,
                }
            }
            let last = read.last().map_or(0, |e| e.seq);
            assert_eq!(stream.last_seq(), last, "case {case}");
            drop(stream);
            if rng.below(2) == 1 {
                tokio::time::sleep(Duration::from_micros(rng.below(2000))).await;
            }
            if handle.status().await.is_some() {
                mid_run += 1;
            }
            stream = handle.events_from(last);
        }
        while let Some(event) = stream.next().await {
            read.push(event.unwrap());
        }
        let report = handle.report().await.unwrap();
        let seqs: Vec<u64> = read.iter().map(|e| e.seq).collect();
        let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
        assert_eq!(seqs, expected, "case {case} (BATON_STREAM_SEED={seed})");
        assert_eq!(read.last().map(|e| e.event.kind()), Some("run_finished"));
        // What was read is the log itself: each event chained to the one before.
        for pair in read.windows(2) {
            assert_eq!(pair[1].prev, pair[0].digest, "case {case}");
        }
        assert_eq!(report.subagents.len(), 4);
    }
    assert!(
        mid_run > 100,
        "only {mid_run} reconnections happened mid-run"
    );
}

/// The resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// Issue 22: a reader that never reads makes the run wait — the log stops growing once the
/// run is a bounded way ahead of it — and memory does not grow while it waits; once the
/// reader reads, the run finishes and every event arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_never_reads_holds_the_run_and_memory_stays_bounded() {
    let n = 4000;
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let coordinator = workers(n, 64, 0).store(Arc::clone(&store)).build();
    let handle = coordinator.start(parts(n)).await.unwrap();
    let mut stream = handle.events();
    // Read one event, then nothing: the reader is there, and behind.
    let read = stream.next().await.unwrap().unwrap().seq;
    // The run's last sequence number, as the store lists it (cheap: no chain is checked).
    let logged = |store: &Arc<dyn EventStore>| {
        store
            .runs()
            .ok()
            .and_then(|runs| runs.into_iter().find(|r| r.run_id == handle.run_id()))
            .map_or(0, |r| r.last_seq as usize)
    };
    // Wait for the log to stop growing.
    let mut last = 0;
    let mut still = 0;
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = logged(&store);
        // Past the start (planning 4,000 subtasks takes a moment), the log stops growing.
        if now == last && now > 1000 {
            still += 1;
            if still == 6 {
                break;
            }
        } else {
            still = 0;
        }
        last = now;
    }
    assert_eq!(still, 6, "the log kept growing: {last} events");
    let held_at = last;
    let rss_then = rss_kib();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        logged(&store),
        held_at,
        "the run went on without its reader"
    );
    let rss_later = rss_kib();
    eprintln!(
        "a reader that never reads: the run held at {held_at} events; resident {rss_then} KiB, {} KiB 1.5 s later",
        rss_later
    );
    assert!(
        rss_later <= rss_then + 8 * 1024,
        "memory grew while the run waited: {rss_then} -> {rss_later} KiB"
    );
    // The reader reads: the run goes on, ends, and every event came.
    let mut seen = 1;
    while let Some(event) = stream.next().await {
        event.unwrap();
        seen += 1;
    }
    let report = handle.report().await.unwrap();
    assert_eq!(report.subagents.len(), n);
    let total = store.events(&report.run_id).unwrap().len();
    assert_eq!(seen, total);
    // Held within twice the reader's queue of where it stopped (and the few events of the
    // step in hand: 64 subagents run at once, yet the run does not spawn past its reader),
    // whatever the run's size.
    let bound = read + 2 * baton::EVENTS_BUFFER as u64 + 16;
    assert!(
        (held_at as u64) <= bound,
        "held at {held_at} events, past {bound}; the run has {total}"
    );
    assert!(held_at < total / 4, "held at {held_at} of {total} events");
}

/// A model that calls the `noop` tool until it has seen `turns` results, then hands off;
/// counting its calls, each taking 2 ms (a real model takes far longer).
struct Busy {
    turns: usize,
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait]
impl Model for Busy {
    fn name(&self) -> String {
        "busy".into()
    }
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(2)).await;
        let seen = request
            .messages
            .iter()
            .filter(|m| matches!(m, baton::Message::Tool { .. }))
            .count();
        let (text, calls) = if seen < self.turns {
            let call = baton::ToolCall {
                id: format!("c{seen}"),
                name: "noop".into(),
                arguments: json!({}),
            };
            (String::new(), vec![call])
        } else {
            (EMPTY_HANDOFF.to_string(), Vec::new())
        };
        Ok(ModelResponse::new(text, calls, Usage::default()))
    }
}

/// A stub tool: `noop` does nothing, read-only; `explode` has effects and panics.
struct Stub(&'static str);

#[async_trait]
impl Tool for Stub {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.0.into(),
            description: "A stub.".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn read_only(&self) -> bool {
        self.0 == "noop"
    }
    fn consequences(&self, _: &Value) -> Vec<Consequence> {
        Vec::new()
    }
    async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        if self.0 == "explode" {
            panic!("the tool blew up");
        }
        Ok(ToolOutput::new("ok"))
    }
}

/// Issue 22: a run held by a reader that stopped reading spends nothing more: its running
/// subagents make no further model call until the reader reads (they would otherwise run to
/// their ends while the lead waits), and then the run goes on to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_run_s_subagents_make_no_model_call_until_it_is_read() {
    let (n, turns) = (6, 300);
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let limits = baton::Budget {
        model_turns: 1000,
        tool_calls: 1000,
        tokens: 10_000_000,
    };
    let model = Busy {
        turns,
        calls: Arc::clone(&calls),
    };
    let handle = Coordinator::builder()
        .model(Arc::new(model))
        .tools(ToolRegistry::empty().with(Arc::new(Stub("noop"))))
        .role(Role::new("worker").tools(["noop"]).limits(limits))
        .agents(n)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .start(parts(n))
        .await
        .unwrap();
    let mut stream = handle.events();
    stream.next().await.unwrap().unwrap();
    // Wait until the model calls stop: half a second without one.
    let count = || calls.load(std::sync::atomic::Ordering::SeqCst);
    let mut last = 0;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if count() == last && last > 0 {
            break;
        }
        last = count();
    }
    let held = count();
    let all = n * (turns + 1);
    assert!(
        held < all / 2,
        "{held} of {all} model calls made while held"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(count(), held, "model calls went on while the run was held");
    while let Some(event) = stream.next().await {
        event.unwrap();
    }
    let report = handle.report().await.unwrap();
    assert!(report
        .subagents
        .iter()
        .all(|s| s.state == SubagentState::HandedOff));
    assert_eq!(count(), all);
}

/// Issue 22: a run held by a reader that stopped reading is cancelled at once — the
/// cancellation waits for no reader — and that reader, when it reads again, still reads every
/// event once, in order: what its queue had no room for comes from the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_run_is_cancelled_and_its_reader_still_reads_every_event() {
    let n = 3000;
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let handle = workers(n, 16, 0)
        .store(Arc::clone(&store))
        .build()
        .start(parts(n))
        .await
        .unwrap();
    let mut stream = handle.events();
    stream.next().await.unwrap().unwrap();
    // Wait until the run is held: two seconds without a new event.
    let mut last = 0;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = store.events(handle.run_id()).map_or(0, |e| e.len());
        if now == last && now > 2 * baton::EVENTS_BUFFER {
            break;
        }
        last = now;
    }
    handle.cancel();
    let report = tokio::time::timeout(Duration::from_secs(30), handle.report())
        .await
        .expect("the cancellation waited for the reader")
        .unwrap();
    assert!(report.cancelled);
    let logged = store.events(&report.run_id).unwrap();
    assert_eq!(logged.last().map(|e| e.event.kind()), Some("run_finished"));
    let mut seqs = vec![1];
    while let Some(event) = stream.next().await {
        seqs.push(event.unwrap().seq);
    }
    let all: Vec<u64> = logged.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, all, "every event once, in order");
    assert!(
        all.len() > 2 * baton::EVENTS_BUFFER + 64,
        "the queue overflowed: {} events",
        all.len()
    );
}

/// Issue 22: a TOML role's `model` is connected when the run starts (by the builder's
/// connector here), its subagents use it and no other, and it is logged and reported under the
/// role's name.
#[tokio::test]
async fn a_toml_role_s_model_is_connected_used_logged_and_reported() {
    let tree = baton::testing::fixture_tree();
    let roles = tempfile::tempdir().unwrap();
    std::fs::write(
        roles.path().join("reviewer.toml"),
        r#"name = "reviewer"
description = "Reviews how delays are capped."
system = "You review. Cite the lines."
budget = 6000
tools = ["grep"]
mandatory = ["goal", "constraints"]
model = "openai:gpt-4o-mini"
"#,
    )
    .unwrap();
    let reviewer_model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("grep", json!({"pattern": "cap_ms"})),
        ScriptedTurn::text(EMPTY_HANDOFF),
    ]));
    let specs = Arc::new(std::sync::Mutex::new(Vec::new()));
    let connector: baton::Connector = {
        let (model, specs) = (Arc::clone(&reviewer_model), Arc::clone(&specs));
        Arc::new(move |spec: &baton::model::ModelSpec| {
            specs.lock().unwrap().push(spec.model.clone());
            Ok(Arc::clone(&model) as Arc<dyn Model>)
        })
    };
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let report = Coordinator::builder()
        .roles(roles.path())
        .connector(connector)
        .store(Arc::clone(&store))
        .build()
        .run(reviewed(tree.path()))
        .await
        .unwrap();
    assert_eq!(*specs.lock().unwrap(), ["gpt-4o-mini"]);
    assert_eq!(
        reviewer_model.requests().len(),
        2,
        "the reviewer used its model"
    );
    let events = store.events(&report.run_id).unwrap();
    let configured: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::ModelConfigured { role, .. } => Some(role.as_str()),
            _ => None,
        })
        .collect();
    assert!(configured.contains(&"reviewer"), "{configured:?}");
    let reviewer = report
        .models
        .iter()
        .find(|m| m.role == "reviewer")
        .unwrap_or_else(|| panic!("{:?}", report.models));
    assert_eq!(reviewer.model_calls, 2);
    let subagents = report
        .models
        .iter()
        .find(|m| m.role == "subagents")
        .unwrap();
    assert!(
        subagents.model_calls > 0,
        "the explorers used the run's model"
    );
}

/// An in-memory ticket store, read only.
struct Tickets;

#[async_trait]
impl Tool for Tickets {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "ticket".into(),
            description: "A ticket by id.".into(),
            parameters: json!({"type": "object", "properties": {"id": {"type": "string"}}}),
        }
    }
    fn read_only(&self) -> bool {
        true
    }
    fn consequences(&self, _: &Value) -> Vec<Consequence> {
        Vec::new()
    }
    async fn call(&self, arguments: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = arguments["id"].as_str().unwrap_or_default().to_string();
        let text = match id.as_str() {
            "T-1" => "[open, blocker] the login page times out".to_string(),
            // A record too long to keep its text: only its digest is kept.
            "T-big" => format!("[open] {}", "long ".repeat(5000)),
            _ => return Err(ToolError::new(format!("no ticket `{id}`"))),
        };
        Ok(ToolOutput::new(format!("{id}: {text}"))
            .observed(Observation::record("ticket", &id, &text)))
    }
}

/// The violation codes of every repair the run asked for, in order.
fn repair_codes(events: &[LoggedEvent]) -> Vec<Vec<String>> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::HandoffRepairRequested { violations, .. } => Some(
                violations
                    .iter()
                    .map(|v| v.code.as_str().to_string())
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// A handoff citing a line of ticket T-1 that the tickets tool shows.
const T1_BLOCKS: &str = "## Settled conclusions
- T-1 blocks the release: `the login page times out` [ticket:T-1]
## Open items
## Hard constraints
- none
";

/// Issue 22: a record a custom tool returned is evidence like a file's lines — a citation of
/// it is accepted, its quote checked against the record's text; a fabricated id is rejected
/// with the observation layer's code, a quote the record does not hold with the quotation
/// layer's, and a quote of a record whose text was too long to keep is unchecked.
#[tokio::test]
async fn a_record_a_custom_tool_returned_is_checked_like_a_file_citation() {
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let broken = "## Settled conclusions
- T-1 blocks the release: `the login page times out` [ticket:T-1]
- T-7 blocks it too: `payments fail` [ticket:T-7]
- T-1 is `closed` [ticket:T-1]
- T-big says `long long` [ticket:T-big]
## Open items
## Hard constraints
- none
";
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::Tools(vec![
            ("ticket".into(), json!({"id": "T-1"})),
            ("ticket".into(), json!({"id": "T-big"})),
        ]),
        ScriptedTurn::text(broken),
        ScriptedTurn::text(T1_BLOCKS),
    ]));
    let report = Coordinator::builder()
        .model(model)
        .tools(ToolRegistry::empty().with(Arc::new(Tickets)))
        .role(Role::new("triager").tools(["ticket"]))
        .store(Arc::clone(&store))
        .build()
        .run(Task::job("Which tickets block the release?").subtask("triager", "Read T-1."))
        .await
        .unwrap();
    let events = store.events(&report.run_id).unwrap();
    assert_eq!(
        repair_codes(&events),
        vec![vec![
            "record_not_observed".to_string(),
            "quote_not_found".into(),
            "quote_unchecked".into()
        ]],
        "{:?}",
        report.subagents
    );
    assert_eq!(report.subagents[0].state, SubagentState::Repaired);
    let claims = crate::support::settled_claims(&report);
    assert_eq!(
        claims,
        ["T-1 blocks the release: `the login page times out`"]
    );
    // The record's digest is the evidence's: a reader of the log can check it.
    let cp = store.latest_checkpoint(&report.run_id).unwrap().unwrap();
    let evidence = cp
        .evidence
        .iter()
        .find(|e| e.source == "ticket:T-1")
        .unwrap();
    use sha2::Digest;
    let digest = sha2::Sha256::digest(b"[open, blocker] the login page times out");
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(evidence.digest, hex);
}

/// Issue 22: a role of one's own is spawned for its subtask, and its subagents are offered its
/// tools and no others — the tools its model is sent, and those its manifest logs — with its
/// own model and its own limits.
#[tokio::test]
async fn a_custom_role_is_spawned_with_its_tools_its_model_and_its_limits_only() {
    let tree = baton::testing::fixture_tree();
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let reviewer_model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("grep", json!({"pattern": "next_delay"})),
        ScriptedTurn::text(EMPTY_HANDOFF),
    ]));
    let limits = baton::Budget {
        model_turns: 5,
        tool_calls: 3,
        tokens: 50_000,
    };
    let reviewer = Role::new("reviewer")
        .tools(["grep", "read_file"])
        .limits(limits)
        .model(Arc::clone(&reviewer_model) as Arc<dyn Model>);
    let report = Coordinator::builder()
        .role(reviewer)
        .store(Arc::clone(&store))
        .build()
        .run(reviewed(tree.path()))
        .await
        .unwrap();
    let reviewers: Vec<_> = report
        .subagents
        .iter()
        .filter(|s| s.role == "reviewer")
        .collect();
    assert_eq!(reviewers.len(), 1, "{:?}", report.subagents);
    assert_eq!(reviewers[0].state, SubagentState::HandedOff);
    assert!(report.subagents.iter().any(|s| s.role == "explorer"));
    // Its model was sent only its tools, every turn.
    let requests = reviewer_model.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["grep", "read_file"]);
    }
    let brief = match &requests[0].messages[0] {
        baton::Message::User { text } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        brief.contains("Subtask: where is the delay capped?"),
        "{brief}"
    );
    let events = store.events(&report.run_id).unwrap();
    let manifest = events
        .iter()
        .find_map(|e| match &e.event {
            RunEvent::SubagentSpawned { role, manifest, .. } if role == "reviewer" => {
                Some(manifest.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(manifest.tools, ["grep", "read_file"]);
    assert_eq!(manifest.budget, limits);
    // The explorers had the workspace tools and the run's budget.
    assert!(events.iter().any(|e| matches!(&e.event,
        RunEvent::SubagentSpawned { role, manifest, .. }
            if role == "explorer" && manifest.tools.len() == 4 && manifest.budget == baton::Budget::default())));
}

/// A role the task names that the run does not have, or a role naming a tool the run does
/// not have, is refused before anything starts; a job with nothing to fan out too.
#[tokio::test]
async fn a_task_naming_what_the_run_lacks_is_refused() {
    let coordinator = Coordinator::builder().build();
    let unknown = coordinator
        .check(&Task::job("q").subtask("nobody", "q"))
        .unwrap_err();
    assert!(unknown.to_string().contains("`nobody`"), "{unknown}");
    let empty = coordinator.check(&Task::job("q")).unwrap_err();
    assert!(empty.to_string().contains("nothing to fan out"), "{empty}");
    let tool = Coordinator::builder()
        .role(Role::new("fetcher").tools(["fetch"]))
        .build()
        .check(&Task::job("q").roles(["fetcher"]))
        .unwrap_err();
    assert!(tool.to_string().contains("unknown tool `fetch`"), "{tool}");
    // An empty registry and a tool of one's own: the built-in roles, unused, are not checked.
    let own = Coordinator::builder()
        .tools(ToolRegistry::empty().with(Arc::new(Tickets)))
        .role(Role::new("triager").tools(["ticket"]))
        .build()
        .check(&Task::job("q").roles(["triager"]));
    assert!(own.is_ok(), "{own:?}");
}

/// Issue 22: with a lead model, the plan assigns each subtask one of the run's roles — the
/// roles the task names, listed to the lead with their descriptions — and a role the run does
/// not have is a problem the lead model is told of; each subagent is spawned in its role.
#[tokio::test]
async fn a_lead_model_assigns_the_run_s_roles_to_its_subtasks() {
    let tree = baton::testing::fixture_tree();
    let wrong = json!({"subtasks": [{"scope": ["src"], "question": "q", "role": "stranger"}]});
    let plan = json!({"subtasks": [
        {"scope": ["src"], "question": "where is next_delay defined?", "role": "explorer"},
        {"scope": ["tests"], "question": "what checks the cap?", "role": "reviewer"}]});
    let lead = Arc::new(ScriptedModel::new([
        ScriptedTurn::text(wrong.to_string()),
        ScriptedTurn::text(plan.to_string()),
        ScriptedTurn::text(EMPTY_HANDOFF),
    ]));
    let report = Coordinator::builder()
        .lead_model(Arc::clone(&lead) as Arc<dyn Model>)
        .role(
            Role::new("reviewer")
                .description("Reviews the tests.")
                .tools(["grep", "read_file"]),
        )
        .build()
        .run(
            Task::explore("where is the retry delay computed?", tree.path())
                .roles(["explorer", "reviewer"]),
        )
        .await
        .unwrap();
    let planned: Vec<(&str, &str)> = report
        .subagents
        .iter()
        .map(|s| (s.role.as_str(), s.scope.as_str()))
        .collect();
    assert_eq!(planned, [("explorer", "src"), ("reviewer", "tests")]);
    let requests = lead.requests();
    let first = match &requests[0].messages[0] {
        baton::Message::User { text } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(first.contains("- reviewer: Reviews the tests."), "{first}");
    let retold = match &requests[1].messages[2] {
        baton::Message::User { text } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        retold.contains("`role` must be one of the run's roles: explorer, reviewer"),
        "{retold}"
    );
}

/// A logged run read again from another handle: the stream crosses the store's pages of 512
/// events, and across a resume (after which the same run's events follow on) it gives every
/// event once, in order — from the start, and from any point.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_logged_run_reads_across_pages_and_a_resume() {
    let state = tempfile::tempdir().unwrap();
    let store: Arc<dyn EventStore> = Arc::new(baton::SqliteStore::open(state.path()).unwrap());
    let coordinator = workers(300, 8, 0).store(Arc::clone(&store)).build();
    let first = coordinator.run(parts(300)).await.unwrap();
    let logged = store.events(&first.run_id).unwrap();
    assert!(logged.len() > 1100, "{} events", logged.len());
    let read_all = |mut stream: baton::EventStream| async move {
        let mut out = Vec::new();
        while let Some(event) = stream.next().await {
            out.push(event.unwrap());
        }
        out
    };
    assert_eq!(
        read_all(coordinator.logged_events(&first.run_id, 0).unwrap()).await,
        logged
    );
    let from = read_all(coordinator.logged_events(&first.run_id, 700).unwrap()).await;
    assert_eq!(from.first().map(|e| e.seq), Some(701));
    assert_eq!(from.len(), logged.len() - 700);
    // Resumed, the run goes on from its last event: a reader from the start reads the first
    // run's events and the resume's, each once.
    let handle = coordinator.resume(&first.run_id).await.unwrap();
    let mut stream = handle.events();
    let mut read = Vec::new();
    for _ in 0..600 {
        read.push(stream.next().await.unwrap().unwrap());
    }
    drop(stream);
    read.extend(read_all(handle.events_from(600)).await);
    handle.report().await.unwrap();
    let all = store.events(&first.run_id).unwrap();
    assert!(all.len() > logged.len(), "the resume logged its events");
    assert_eq!(read, all);
}

/// A job's verifier with none of its profile's tools in the run rereads with the read-only
/// tools of the roles whose handoffs it checks: here the application's ticket tool.
#[tokio::test]
async fn a_job_s_verifier_rereads_with_the_read_only_tools_of_the_roles_it_checks() {
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let broken = "## Settled conclusions
- T-1 blocks the release: `the login page times out` [ticket:T-1]
- T-7 blocks it too [ticket:T-7]
## Open items
## Hard constraints
- none
";
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("ticket", json!({"id": "T-1"})),
        ScriptedTurn::text(broken),
        ScriptedTurn::text(T1_BLOCKS),
        // The verifier: it rereads T-1 and confirms the claim.
        ScriptedTurn::tool("ticket", json!({"id": "T-1"})),
        ScriptedTurn::text(T1_BLOCKS),
    ]));
    let report = Coordinator::builder()
        .model(Arc::clone(&model) as Arc<dyn Model>)
        .tools(ToolRegistry::empty().with(Arc::new(Tickets)))
        .role(Role::new("triager").tools(["ticket"]))
        .agents(1)
        .store(Arc::clone(&store))
        .build()
        .run(Task::job("Which tickets block the release?").subtask("triager", "Read T-1."))
        .await
        .unwrap();
    let states: Vec<(&str, SubagentState)> = report
        .subagents
        .iter()
        .map(|s| (s.role.as_str(), s.state))
        .collect();
    assert_eq!(
        states,
        [
            ("triager", SubagentState::Repaired),
            ("verifier", SubagentState::HandedOff)
        ]
    );
    let log = store.events(&report.run_id).unwrap();
    let tools: Vec<Vec<String>> = log
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::SubagentSpawned { manifest, .. } => Some(manifest.tools.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        tools,
        [vec!["ticket".to_string()], vec!["ticket".to_string()]]
    );
    assert_eq!(report.handoff.settled_conclusions.len(), 1);
}

/// Fetches a page or shows a document: URLs and documents a custom tool returns, with text.
struct Fetch;

#[async_trait]
impl Tool for Fetch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "fetch".into(),
            description: "A page or a document.".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn read_only(&self) -> bool {
        true
    }
    fn consequences(&self, _: &Value) -> Vec<Consequence> {
        Vec::new()
    }
    async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new("fetched")
            .observed(Observation::url(
                "https://example.com/retry",
                "Each retry waits twice as long.",
            ))
            .observed(Observation::document(
                "guide",
                Some("intro"),
                "Retries back off exponentially.",
            )))
    }
}

/// A URL's and a document's text a custom tool returned hold the quotes of a handoff citing
/// them, in a run as in the validator; the evidence keeps each one's digest.
#[tokio::test]
async fn urls_and_documents_a_tool_returned_are_quoted_and_kept_as_evidence() {
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let wrong = "## Settled conclusions
- The page says `three times as long` [https://example.com/retry]
- The guide says `back off exponentially` [doc:guide#intro]
## Open items
## Hard constraints
- none
";
    let right = "## Settled conclusions
- The page says `twice as long` [https://example.com/retry]
- The guide says `back off exponentially` [doc:guide#intro]
## Open items
## Hard constraints
- none
";
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("fetch", json!({})),
        ScriptedTurn::text(wrong),
        ScriptedTurn::text(right),
    ]));
    let report = Coordinator::builder()
        .model(model)
        .tools(ToolRegistry::empty().with(Arc::new(Fetch)))
        .role(Role::new("reader").tools(["fetch"]))
        .store(Arc::clone(&store))
        .build()
        .run(Task::job("How do retries wait?").roles(["reader"]))
        .await
        .unwrap();
    let log = store.events(&report.run_id).unwrap();
    assert_eq!(repair_codes(&log), [vec!["quote_not_found".to_string()]]);
    let cp = store.latest_checkpoint(&report.run_id).unwrap().unwrap();
    use sha2::Digest;
    let hex = |text: &str| -> String {
        sha2::Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let digest_of = |source: &str| {
        cp.evidence
            .iter()
            .find(|e| e.source == source)
            .map(|e| e.digest.clone())
    };
    assert_eq!(
        digest_of("https://example.com/retry"),
        Some(hex("Each retry waits twice as long."))
    );
    assert_eq!(
        digest_of("doc:guide#intro"),
        Some(hex("Retries back off exponentially."))
    );
}

/// Issue 22: an application's tool that panics fails its subagent (the run still reports),
/// and the call's effect — it started, and may have done something — is unknown, not failed.
#[tokio::test]
async fn a_tool_that_panics_fails_its_subagent_and_its_effect_is_unknown() {
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let model = ScriptedModel::new(vec![ScriptedTurn::tool("explode", json!({}))]);
    let report = Coordinator::builder()
        .model(Arc::new(model))
        .tools(ToolRegistry::empty().with(Arc::new(Stub("explode"))))
        .role(Role::new("worker").tools(["explode"]))
        .store(Arc::clone(&store))
        .build()
        .run(Task::job("Blow up.").subtask("worker", "Call it."))
        .await
        .unwrap();
    let sub = &report.subagents[0];
    assert_eq!(sub.state, SubagentState::Failed);
    assert!(
        sub.error
            .as_deref()
            .unwrap_or("")
            .contains("the tool blew up"),
        "{:?}",
        sub.error
    );
    let cp = store.latest_checkpoint(&report.run_id).unwrap().unwrap();
    let states: Vec<_> = cp.effects.iter().map(|e| e.state).collect();
    assert_eq!(states, [baton::EffectState::OutcomeUnknown]);
}
