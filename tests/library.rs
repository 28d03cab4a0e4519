//! baton as a library (issue 22): the event stream is the log — read again from any point
//! with no gap and no duplicate, bounded when nobody reads; tools, roles and models of one's
//! own; approvals granted, denied, expired, and waiting across a SIGKILL and a resume.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use baton::checkpoint::EventStore;
use baton::testing::{MemoryStore, ScriptedModel, ScriptedTurn};
use baton::{
    async_trait, json, ApprovalDecision, ApprovalError, Consequence, Coordinator, Effect,
    LoggedEvent, Model, ModelError, ModelRequest, ModelResponse, Observation, Role, RunEvent,
    SubagentState, Task, TimeLimits, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry,
    ToolSpec, Usage, Value,
};

const EMPTY_HANDOFF: &str = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";

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
    assert!(stream.next().await.is_some());
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
    assert!(held_at < total, "held at {held_at} of {total} events");
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
    let fixed = "## Settled conclusions
- T-1 blocks the release: `the login page times out` [ticket:T-1]
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
        ScriptedTurn::text(fixed),
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
    let claims: Vec<&str> = report
        .handoff
        .settled_conclusions
        .iter()
        .map(|c| c.claim.as_str())
        .collect();
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
        .run(
            Task::explore("where is the retry delay computed?", tree.path())
                .roles(["explorer"])
                .subtask("reviewer", "where is the delay capped?"),
        )
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
        assert!(
            names.is_empty() || names == ["grep", "read_file"],
            "{names:?}"
        );
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

/// Files a ticket: a tool with effects that asks for approval of every call, counting the
/// calls it really ran.
struct FileTicket(Arc<AtomicU32>);

#[async_trait]
impl Tool for FileTicket {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "file_ticket".into(),
            description: "File a ticket.".into(),
            parameters: json!({"type": "object", "properties": {"title": {"type": "string"}}}),
        }
    }
    fn consequences(&self, _: &Value) -> Vec<Consequence> {
        vec![Consequence {
            effect: Effect::Write,
            resource: "tickets".into(),
        }]
    }
    fn needs_approval(&self, _: &Value) -> bool {
        true
    }
    async fn call(&self, arguments: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        let id = format!("T-{n}");
        let text = format!("[open] {}", arguments["title"].as_str().unwrap_or_default());
        Ok(ToolOutput::new(format!("filed {id}"))
            .observed(Observation::record("ticket", &id, &text)))
    }
}

const FILED: &str = "## Settled conclusions
- Filed as T-1: `[open] a` [ticket:T-1]
## Open items
## Hard constraints
- none
";

/// A filer role with the ticket tool, playing `turns`, logged to `store`.
fn filer(
    turns: Vec<ScriptedTurn>,
    ran: &Arc<AtomicU32>,
    store: &Arc<dyn EventStore>,
) -> (baton::CoordinatorBuilder, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(turns));
    let builder = Coordinator::builder()
        .model(Arc::clone(&model) as Arc<dyn Model>)
        .tools(ToolRegistry::empty().with(Arc::new(FileTicket(Arc::clone(ran)))))
        .role(Role::new("filer").tools(["file_ticket"]))
        .repairs(0)
        .store(Arc::clone(store));
    (builder, model)
}

fn file_task() -> Task {
    Task::job("File the tickets.").subtask("filer", "File them.")
}

fn kinds(events: &[LoggedEvent], kind: &str) -> Vec<RunEvent> {
    events
        .iter()
        .filter(|e| e.event.kind() == kind)
        .map(|e| e.event.clone())
        .collect()
}

/// What the model was told of each call in its last request: the tool results' text.
fn tool_results(model: &ScriptedModel) -> Vec<String> {
    model
        .requests()
        .last()
        .map(|r| {
            r.messages
                .iter()
                .filter_map(|m| match m {
                    baton::Message::Tool { content, .. } => Some(content.clone()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Issue 22: a call whose tool asks for approval waits; the application grants one request
/// (its call runs, once, and the grant is used up) and denies another (its call never runs,
/// and the model is told why); a grant given twice, and a request that does not exist, are
/// refused.
#[tokio::test]
async fn an_approval_granted_runs_the_call_once_and_a_denied_one_never_runs() {
    let ran = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let (builder, model) = filer(
        vec![
            ScriptedTurn::tool("file_ticket", json!({"title": "a"})),
            ScriptedTurn::tool("file_ticket", json!({"title": "b"})),
            ScriptedTurn::text(FILED),
        ],
        &ran,
        &store,
    );
    let handle = builder.build().start(file_task()).await.unwrap();
    let mut events = handle.events();
    let mut asked = Vec::new();
    while let Some(event) = events.next().await {
        if let RunEvent::ApprovalRequested { request } = event.unwrap().event {
            assert_eq!(handle.approvals(), vec![request.clone()]);
            // The call waiting has not run; the one granted before it has.
            assert_eq!(ran.load(Ordering::SeqCst), asked.len() as u32);
            if asked.is_empty() {
                handle.approve(&request.id).await.unwrap();
                assert_eq!(
                    handle.approve(&request.id).await,
                    Err(ApprovalError::Decided {
                        id: request.id.clone(),
                        word: "granted"
                    })
                );
            } else {
                handle.deny(&request.id, "not that one").await.unwrap();
            }
            asked.push(request);
        }
    }
    assert_eq!(
        handle.approve("ap9").await,
        Err(ApprovalError::RunEnded),
        "the run is over"
    );
    let report = handle.report().await.unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the granted call ran once");
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].tool, "file_ticket");
    assert_ne!(asked[0].arguments_digest, asked[1].arguments_digest);
    let log = store.events(&report.run_id).unwrap();
    let decided: Vec<(String, ApprovalDecision, String)> = kinds(&log, "approval_decided")
        .into_iter()
        .map(|e| match e {
            RunEvent::ApprovalDecided {
                approval_id,
                decision,
                by,
            } => (approval_id, decision, by),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        decided,
        vec![
            (
                "ap1".into(),
                ApprovalDecision::Granted,
                "application".into()
            ),
            (
                "ap2".into(),
                ApprovalDecision::Denied {
                    reason: "not that one".into()
                },
                "application".into()
            ),
        ]
    );
    assert_eq!(kinds(&log, "approval_consumed").len(), 1);
    let results = tool_results(&model);
    assert!(results[0].starts_with("filed T-1"), "{results:?}");
    assert!(
        results[1].contains("not run (ap2): the application denied it: not that one"),
        "{results:?}"
    );
    // The checkpoint: the first call completed, the second denied; both requests decided.
    let cp = store.latest_checkpoint(&report.run_id).unwrap().unwrap();
    let states: Vec<_> = cp.effects.iter().map(|e| e.state).collect();
    assert_eq!(
        states,
        [baton::EffectState::Completed, baton::EffectState::Denied]
    );
    let words: Vec<_> = cp.approvals.iter().map(|a| a.decision.clone()).collect();
    assert_eq!(words, [Some("granted".into()), Some("denied".into())]);
    assert!(cp.approvals[0].consumed && !cp.approvals[1].consumed);
    assert_eq!(report.handoff.settled_conclusions.len(), 1);
}

/// A model that waits `delay` before every call after its first.
struct Unhurried {
    inner: Arc<ScriptedModel>,
    delay: Duration,
    calls: AtomicU32,
}

#[async_trait]
impl Model for Unhurried {
    fn name(&self) -> String {
        "unhurried".into()
    }
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) > 0 {
            tokio::time::sleep(self.delay).await;
        }
        self.inner.complete(request).await
    }
}

/// Issue 22: a request nobody decides expires: its call never runs and the model is told; a
/// grant that comes after the expiry, while the run goes on, is refused — an expired request
/// is history, not permission.
#[tokio::test]
async fn an_expired_approval_is_history_not_permission() {
    let ran = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let (builder, scripted) = filer(
        vec![
            ScriptedTurn::tool("file_ticket", json!({"title": "a"})),
            ScriptedTurn::text(EMPTY_HANDOFF),
        ],
        &ran,
        &store,
    );
    // The model takes its time after the call, so the run is still going when the late grant
    // comes.
    let model = Arc::new(Unhurried {
        inner: Arc::clone(&scripted),
        delay: Duration::from_millis(1500),
        calls: AtomicU32::new(0),
    });
    let limits = TimeLimits {
        approval: Duration::from_millis(200),
        ..TimeLimits::default()
    };
    let handle = builder
        .model(model)
        .time_limits(limits)
        .build()
        .start(file_task())
        .await
        .unwrap();
    let mut events = handle.events();
    let mut late = None;
    while let Some(event) = events.next().await {
        if let RunEvent::ApprovalRequested { request } = event.unwrap().event {
            assert!(request.expires_ms >= request.requested_ms + 200);
            tokio::time::sleep(Duration::from_millis(500)).await;
            late = Some(handle.approve(&request.id).await);
        }
    }
    let late = late.expect("ap1 was asked");
    assert!(
        matches!(
            &late,
            Err(ApprovalError::Expired(_))
                | Err(ApprovalError::Decided {
                    word: "expired",
                    ..
                })
        ),
        "{late:?}"
    );
    let report = handle.report().await.unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the call never ran");
    let results = tool_results(&scripted);
    assert!(
        results[0].contains("not run (ap1): the request for approval expired"),
        "{results:?}"
    );
    let log = store.events(&report.run_id).unwrap();
    assert!(log.iter().any(|e| matches!(&e.event,
        RunEvent::ApprovalDecided { approval_id, decision: ApprovalDecision::Expired, by }
            if approval_id == "ap1" && by == "run")));
    assert_eq!(kinds(&log, "approval_consumed").len(), 0);
    let cp = store.latest_checkpoint(&report.run_id).unwrap().unwrap();
    assert_eq!(cp.effects[0].state, baton::EffectState::Stopped);
}

/// Where the child process of the SIGKILL test keeps its run (unset: the test is the parent's
/// or a plain run, and does nothing).
const APPROVAL_CHILD: &str = "BATON_APPROVAL_CHILD_STATE";

/// The child of `a_run_killed_while_waiting_for_approval_resumes_still_waiting`: a run whose
/// call waits for an approval nobody gives, logged to the state the parent names, until the
/// parent kills it.
#[tokio::test]
async fn approval_child_process() {
    let Ok(dir) = std::env::var(APPROVAL_CHILD) else {
        return;
    };
    let ran = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> =
        Arc::new(baton::SqliteStore::open(std::path::Path::new(&dir)).unwrap());
    let (builder, _) = filer(
        vec![
            ScriptedTurn::tool("file_ticket", json!({"title": "a"})),
            ScriptedTurn::text(FILED),
        ],
        &ran,
        &store,
    );
    let handle = builder.build().start(file_task()).await.unwrap();
    // It waits until the parent kills it.
    let _ = handle.report().await;
    panic!("the run ended while it waited for approval");
}

/// Issue 22: a run killed (SIGKILL) while a call waits for approval resumes still waiting —
/// the same request listed, not asked again; the restarted subagent's same call waits on it;
/// granted, the call runs once, and the log holds one request, its grant and its use.
#[test]
fn a_run_killed_while_waiting_for_approval_resumes_still_waiting() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().to_path_buf();
    let run_id = crate::support::kill_when(
        state.path(),
        || {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args(["library::approval_child_process", "--exact", "--nocapture"])
                .env(APPROVAL_CHILD, &dir)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        },
        |events| {
            events
                .iter()
                .any(|e| e.event.kind() == "approval_requested")
        },
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store: Arc<dyn EventStore> = Arc::new(baton::SqliteStore::open(state.path()).unwrap());
        let before = store.events(&run_id).unwrap();
        assert!(kinds(&before, "approval_decided").is_empty());
        assert!(kinds(&before, "tool_returned").is_empty(), "nothing ran");
        let ran = Arc::new(AtomicU32::new(0));
        let (builder, _) = filer(
            vec![
                ScriptedTurn::tool("file_ticket", json!({"title": "a"})),
                ScriptedTurn::text(FILED),
            ],
            &ran,
            &store,
        );
        let handle = builder.build().resume(&run_id).await.unwrap();
        let mut events = handle.events_from(before.len() as u64);
        // Once the run has resumed, the request waits on, listed as it was asked.
        loop {
            let event = events.next().await.unwrap().unwrap();
            if event.event.kind() == "run_resumed" {
                break;
            }
        }
        let waiting = handle.approvals();
        assert_eq!(waiting.len(), 1, "{waiting:?}");
        assert_eq!(waiting[0].id, "ap1");
        assert_eq!(waiting[0].call_id, "sa1.1");
        // The restarted subagent's call waits on it: no second request.
        loop {
            let event = events.next().await.unwrap().unwrap();
            if let RunEvent::ToolCalled { effect, .. } = &event.event {
                assert_eq!(*effect, baton::EffectState::AwaitingApproval);
                break;
            }
        }
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        handle.approve("ap1").await.unwrap();
        while let Some(event) = events.next().await {
            event.unwrap();
        }
        let report = handle.report().await.unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1, "the call ran once");
        assert_eq!(report.subagents[0].state, SubagentState::HandedOff);
        let log = store.events(&run_id).unwrap();
        assert_eq!(kinds(&log, "approval_requested").len(), 1);
        assert_eq!(kinds(&log, "approval_consumed").len(), 1);
        assert!(log.iter().any(|e| matches!(
            &e.event,
            RunEvent::EffectChanged {
                to: baton::EffectState::Superseded,
                ..
            }
        )));
    });
}

/// A tool with effects whose first call runs past the tool time limit.
struct Charge(Arc<AtomicU32>);

#[async_trait]
impl Tool for Charge {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "charge".into(),
            description: "Charge an order.".into(),
            parameters: json!({"type": "object", "properties": {"order": {"type": "string"}}}),
        }
    }
    fn consequences(&self, _: &Value) -> Vec<Consequence> {
        Vec::new()
    }
    async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        Ok(ToolOutput::new("charged"))
    }
}

/// Issue 22: a call with effects whose outcome is unknown (past its time limit) is never made
/// again for the same intent — the same tool and arguments — without the application's say:
/// the repeat waits for approval (here denied, so it never runs); another intent runs freely.
#[tokio::test]
async fn an_unknown_outcome_is_not_repeated_without_approval() {
    let started = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("charge", json!({"order": "A-1"})),
        ScriptedTurn::tool("charge", json!({"order": "A-1"})),
        ScriptedTurn::tool("charge", json!({"order": "A-2"})),
        ScriptedTurn::text(EMPTY_HANDOFF),
    ]));
    let handle = Coordinator::builder()
        .model(Arc::clone(&model) as Arc<dyn Model>)
        .tools(ToolRegistry::empty().with(Arc::new(Charge(Arc::clone(&started)))))
        .role(Role::new("biller").tools(["charge"]))
        .time_limits(TimeLimits {
            tool_call: Duration::from_millis(200),
            ..TimeLimits::default()
        })
        .store(Arc::clone(&store))
        .build()
        .start(Task::job("Charge the orders.").subtask("biller", "Charge A-1 and A-2."))
        .await
        .unwrap();
    let mut events = handle.events();
    let mut asked = Vec::new();
    while let Some(event) = events.next().await {
        if let RunEvent::ApprovalRequested { request } = event.unwrap().event {
            handle
                .deny(&request.id, "it may have been charged")
                .await
                .unwrap();
            asked.push(request);
        }
    }
    let report = handle.report().await.unwrap();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].reason.contains("(sa1.1) is unknown"),
        "{}",
        asked[0].reason
    );
    assert_eq!(asked[0].call_id, "sa1.2");
    assert_eq!(
        started.load(Ordering::SeqCst),
        2,
        "A-1 once (cut off), A-2 once; the repeat of A-1 never ran"
    );
    let cp = store.latest_checkpoint(&report.run_id).unwrap().unwrap();
    let states: Vec<_> = cp.effects.iter().map(|e| e.state).collect();
    assert_eq!(
        states,
        [
            baton::EffectState::OutcomeUnknown,
            baton::EffectState::Denied,
            baton::EffectState::Completed
        ]
    );
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

/// Writes a note: a tool with a declared write, which does not itself ask for approval.
struct Note(Arc<AtomicU32>);

#[async_trait]
impl Tool for Note {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "note".into(),
            description: "Write a note.".into(),
            parameters: json!({"type": "object", "properties": {"to": {"type": "string"}}}),
        }
    }
    fn consequences(&self, arguments: &Value) -> Vec<Consequence> {
        vec![Consequence::on_path(
            Effect::Write,
            arguments["to"].as_str().unwrap_or("notes"),
        )]
    }
    async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::new("written"))
    }
}

/// Grants writes under `out/`, denies the rest.
struct OutOnly;

#[async_trait]
impl baton::Approver for OutOnly {
    async fn decide(&self, request: &baton::ApprovalRequest) -> baton::Approval {
        if request
            .consequences
            .iter()
            .all(|c| c.resource.starts_with("out/"))
        {
            baton::Approval::Grant
        } else {
            baton::Approval::Deny("only out/ may be written".into())
        }
    }
}

/// Issue 22: a role in TOML — its limits, the effects it reserves for approval, its tools —
/// is used as written: its calls that write wait, and the builder's approver decides them
/// (logged as the approver's); the call it grants runs, the one it denies does not.
#[tokio::test]
async fn a_toml_role_reserving_writes_waits_and_the_approver_decides() {
    let roles = tempfile::tempdir().unwrap();
    std::fs::write(
        roles.path().join("scribe.toml"),
        "name = \"scribe\"\ndescription = \"Writes notes.\"\nsystem = \"Write notes.\"\n\
         budget = 4000\ntools = [\"note\"]\nmandatory = [\"goal\", \"constraints\"]\n\
         approve = [\"write\"]\n\n[limits]\nmodel_turns = 6\ntool_calls = 4\ntokens = 80000\n",
    )
    .unwrap();
    let wrote = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("note", json!({"to": "out/a.md"})),
        ScriptedTurn::tool("note", json!({"to": "etc/passwd"})),
        ScriptedTurn::text(EMPTY_HANDOFF),
    ]));
    let report = Coordinator::builder()
        .model(model)
        .tools(ToolRegistry::empty().with(Arc::new(Note(Arc::clone(&wrote)))))
        .roles(roles.path())
        .approver(Arc::new(OutOnly))
        .store(Arc::clone(&store))
        .build()
        .run(Task::job("Take notes.").roles(["scribe"]))
        .await
        .unwrap();
    assert_eq!(wrote.load(Ordering::SeqCst), 1, "only the note under out/");
    let log = store.events(&report.run_id).unwrap();
    let asked = kinds(&log, "approval_requested");
    assert_eq!(asked.len(), 2);
    if let RunEvent::ApprovalRequested { request } = &asked[0] {
        assert!(
            request
                .reason
                .contains("the role `scribe` needs approval for writing `out/a.md`"),
            "{}",
            request.reason
        );
    }
    let by: Vec<(String, String)> = kinds(&log, "approval_decided")
        .into_iter()
        .map(|e| match e {
            RunEvent::ApprovalDecided { decision, by, .. } => (decision.word().to_string(), by),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        by,
        [
            ("granted".to_string(), "approver".to_string()),
            ("denied".to_string(), "approver".to_string())
        ]
    );
    let limits = log
        .iter()
        .find_map(|e| match &e.event {
            RunEvent::SubagentSpawned { manifest, .. } => Some(manifest.budget),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        limits,
        baton::Budget {
            model_turns: 6,
            tool_calls: 4,
            tokens: 80_000
        }
    );
}

/// A request still undecided when its subagent ends — here the run is cancelled while the call
/// waits — is withdrawn: logged as the run's decision, listed no more, its call never run.
#[tokio::test]
async fn a_request_undecided_when_the_run_is_cancelled_is_withdrawn() {
    let ran = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let (builder, _) = filer(
        vec![ScriptedTurn::tool("file_ticket", json!({"title": "a"}))],
        &ran,
        &store,
    );
    let handle = builder.build().start(file_task()).await.unwrap();
    let mut events = handle.events();
    while let Some(event) = events.next().await {
        if event.unwrap().event.kind() == "approval_requested" {
            assert_eq!(handle.approvals().len(), 1);
            handle.cancel();
        }
    }
    assert!(handle.approvals().is_empty());
    let report = handle.report().await.unwrap();
    assert!(report.cancelled);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    let log = store.events(&report.run_id).unwrap();
    assert!(
        log.iter().any(|e| matches!(&e.event,
            RunEvent::ApprovalDecided { decision: ApprovalDecision::Withdrawn { reason }, by, .. }
                if by == "run" && reason == "its subagent ended")),
        "{:?}",
        kinds(&log, "approval_decided")
    );
}

/// Two calls of one batch with the same arguments each wait on a request of their own: both
/// are asked, both granted, both run — neither is left waiting on the other's.
#[tokio::test]
async fn two_calls_of_one_intent_in_a_batch_each_get_a_request() {
    let ran = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let (builder, _) = filer(
        vec![
            ScriptedTurn::Tools(vec![
                ("file_ticket".into(), json!({"title": "a"})),
                ("file_ticket".into(), json!({"title": "a"})),
            ]),
            ScriptedTurn::text(EMPTY_HANDOFF),
        ],
        &ran,
        &store,
    );
    let handle = builder.build().start(file_task()).await.unwrap();
    let mut events = handle.events();
    let mut asked = 0;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("no call is left waiting")
    {
        if let RunEvent::ApprovalRequested { request } = event.unwrap().event {
            asked += 1;
            handle.approve(&request.id).await.unwrap();
        }
    }
    handle.report().await.unwrap();
    assert_eq!(asked, 2);
    assert_eq!(ran.load(Ordering::SeqCst), 2);
}
