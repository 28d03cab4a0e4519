//! Approvals (issue 22): a call whose tool, role or unknown outcome asks for the
//! application's say waits for it; granted, it runs once; denied, expired or withdrawn, it
//! never does; a run killed while waiting resumes waiting.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use baton::checkpoint::EventStore;
use baton::testing::{MemoryStore, ScriptedModel, ScriptedTurn};
use baton::{
    async_trait, json, ApprovalDecision, ApprovalError, Consequence, Coordinator, Effect,
    LoggedEvent, Model, ModelError, ModelRequest, ModelResponse, Observation, Role, RunEvent,
    SubagentState, Task, TimeLimits, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry,
    ToolSpec, Value,
};

const EMPTY_HANDOFF: &str = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";

/// Files a ticket: a tool with effects that asks for approval of every call, counting the
/// calls it really ran; each call takes the given time.
struct FileTicket(Arc<AtomicU32>, Duration);

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
        tokio::time::sleep(self.1).await;
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
        .tools(ToolRegistry::empty().with(Arc::new(FileTicket(Arc::clone(ran), Duration::ZERO))))
        .role(Role::new("filer").tools(["file_ticket"]))
        .repairs(0)
        .store(Arc::clone(store));
    (builder, model)
}

/// One batch of two calls of `tool` (arguments `a`, then `b`), then an empty handoff.
fn two_calls(tool: &str, a: Value, b: Value) -> Vec<ScriptedTurn> {
    vec![
        ScriptedTurn::Tools(vec![(tool.into(), a), (tool.into(), b)]),
        ScriptedTurn::text(EMPTY_HANDOFF),
    ]
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
            // A request that does not exist is refused, the run going on.
            assert_eq!(
                handle.approve("ap99").await,
                Err(ApprovalError::Unknown("ap99".into()))
            );
        }
    }
    assert_eq!(
        handle.approve("ap1").await,
        Err(ApprovalError::RunEnded),
        "the run is over"
    );
    // Every event of the run, the approvals' too, fits its schema.
    let schema: Value =
        serde_json::from_str(include_str!("../contracts/event.schema.json")).unwrap();
    let seen =
        crate::durable::events_fit_their_schema(&store.events(handle.run_id()).unwrap(), &schema);
    for kind in [
        "approval_requested",
        "approval_decided",
        "approval_consumed",
        "model_returned",
        "effect_changed",
    ] {
        assert!(seen.contains(kind), "{kind}");
    }
    let report = handle.report().await.unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the granted call ran once");
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].tool, "file_ticket");
    assert_ne!(asked[0].arguments_digest, asked[1].arguments_digest);
    // Unless the time limits say otherwise, a request waits 15 minutes.
    assert_eq!(asked[0].expires_ms - asked[0].requested_ms, 15 * 60 * 1000);
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
    // The parent may ask for requests that expire soon.
    let limits = match std::env::var(APPROVAL_CHILD_EXPIRY_MS) {
        Ok(ms) => TimeLimits {
            approval: Duration::from_millis(ms.parse().unwrap()),
            ..TimeLimits::default()
        },
        Err(_) => TimeLimits::default(),
    };
    let handle = builder
        .time_limits(limits)
        .build()
        .start(file_task())
        .await
        .unwrap();
    // It waits until the parent kills it.
    let _ = handle.report().await;
    panic!("the run ended while it waited for approval");
}

/// How soon the child's requests expire, in ms (unset: the default).
const APPROVAL_CHILD_EXPIRY_MS: &str = "BATON_APPROVAL_CHILD_EXPIRY_MS";

/// Runs the child in `state` — its requests expiring after `expiry_ms` when given — and kills
/// it (SIGKILL) once its call waits for approval; the run's id.
fn kill_while_waiting(state: &std::path::Path, expiry_ms: Option<u64>) -> String {
    let dir = state.to_path_buf();
    crate::support::kill_when(
        state,
        || {
            let mut child = std::process::Command::new(std::env::current_exe().unwrap());
            child
                .args([
                    "approvals::approval_child_process",
                    "--exact",
                    "--nocapture",
                ])
                .env(APPROVAL_CHILD, &dir)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            if let Some(ms) = expiry_ms {
                child.env(APPROVAL_CHILD_EXPIRY_MS, ms.to_string());
            }
            child.spawn().unwrap()
        },
        |events| {
            events
                .iter()
                .any(|e| e.event.kind() == "approval_requested")
        },
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Issue 22: a run killed (SIGKILL) while a call waits for approval resumes still waiting —
/// the same request listed, not asked again; the restarted subagent's same call waits on it;
/// granted, the call runs once, and the log holds one request, its grant and its use.
#[test]
fn a_run_killed_while_waiting_for_approval_resumes_still_waiting() {
    let state = tempfile::tempdir().unwrap();
    let run_id = kill_while_waiting(state.path(), None);
    runtime().block_on(async {
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
        // From the moment the run is resumed, the request waits on, listed as it was asked.
        let waiting = handle.approvals();
        assert_eq!(waiting.len(), 1, "{waiting:?}");
        assert_eq!(waiting[0].id, "ap1");
        assert_eq!(waiting[0].call_id, "sa1.1");
        let mut events = handle.events_from(before.len() as u64);
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

/// A biller role with the charge tool (200 ms a call), playing `turns`, logged to `store`.
fn biller(
    turns: Vec<ScriptedTurn>,
    started: &Arc<AtomicU32>,
    store: &Arc<dyn EventStore>,
) -> (baton::CoordinatorBuilder, Arc<ScriptedModel>) {
    let model = Arc::new(ScriptedModel::new(turns));
    let builder = Coordinator::builder()
        .model(Arc::clone(&model) as Arc<dyn Model>)
        .tools(ToolRegistry::empty().with(Arc::new(Charge(Arc::clone(started)))))
        .role(Role::new("biller").tools(["charge"]))
        .time_limits(TimeLimits {
            tool_call: Duration::from_millis(200),
            ..TimeLimits::default()
        })
        .store(Arc::clone(store));
    (builder, model)
}

/// Issue 22: a call with effects whose outcome is unknown (past its time limit) is never made
/// again for the same intent — the same tool and arguments — without the application's say:
/// the repeat waits for approval (here denied, so it never runs); another intent runs freely.
#[tokio::test]
async fn an_unknown_outcome_is_not_repeated_without_approval() {
    let started = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let (builder, _) = biller(
        vec![
            ScriptedTurn::tool("charge", json!({"order": "A-1"})),
            ScriptedTurn::tool("charge", json!({"order": "A-1"})),
            ScriptedTurn::tool("charge", json!({"order": "A-2"})),
            ScriptedTurn::text(EMPTY_HANDOFF),
        ],
        &started,
        &store,
    );
    let handle = builder
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
    // The call that waited was never made: its effect is stopped, nothing left to reconcile.
    let checkpoint = baton::checkpoint::project(&report.run_id, &log);
    let states: Vec<_> = checkpoint.effects.iter().map(|e| e.state).collect();
    assert_eq!(states, [baton::EffectState::Stopped]);
}

/// Two calls of one batch waiting for approval run as each is granted, not in the batch's
/// order: the second, granted first, runs while the first is still undecided — and its grant
/// is logged as used only then, when it starts.
#[tokio::test]
async fn a_call_runs_as_its_own_grant_comes() {
    let ran = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let (builder, _) = filer(
        two_calls("file_ticket", json!({"title": "a"}), json!({"title": "b"})),
        &ran,
        &store,
    );
    let handle = builder.build().start(file_task()).await.unwrap();
    let mut events = handle.events();
    let mut asked = Vec::new();
    while asked.len() < 2 {
        if let RunEvent::ApprovalRequested { request } = events.next().await.unwrap().unwrap().event
        {
            asked.push(request.id);
        }
    }
    handle.approve(&asked[1]).await.unwrap();
    // The second call runs, and its grant is logged as used, while the first waits.
    loop {
        let event = events.next().await.unwrap().unwrap();
        if let RunEvent::ApprovalConsumed { approval_id, .. } = &event.event {
            assert_eq!(approval_id, &asked[1]);
            break;
        }
        assert_ne!(event.event.kind(), "tool_returned", "{event:?}");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while ran.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the second call ran first");
    assert_eq!(handle.approvals().len(), 1, "the first still waits");
    handle.deny(&asked[0], "not that one").await.unwrap();
    let report = handle.report().await.unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let log = store.events(&report.run_id).unwrap();
    assert_eq!(kinds(&log, "approval_consumed").len(), 1);
}

/// Two calls of one batch with the same arguments each wait on a request of their own: both
/// are asked, both granted, both run — neither is left waiting on the other's.
#[tokio::test]
async fn two_calls_of_one_intent_in_a_batch_each_get_a_request() {
    let ran = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let (builder, _) = filer(
        two_calls("file_ticket", json!({"title": "a"}), json!({"title": "a"})),
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

/// A request that expired while the process was down is expired when the run resumes (by the
/// run, history, not permission): the restarted call asks anew, and only that grant lets it run.
#[test]
fn a_request_that_expired_while_the_run_was_down_is_asked_again() {
    let state = tempfile::tempdir().unwrap();
    let run_id = kill_while_waiting(state.path(), Some(300));
    std::thread::sleep(Duration::from_millis(500));
    runtime().block_on(async {
        let store: Arc<dyn EventStore> = Arc::new(baton::SqliteStore::open(state.path()).unwrap());
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
        let mut events = handle.events();
        while let Some(event) = events.next().await {
            if let RunEvent::ApprovalRequested { request } = event.unwrap().event {
                if request.id != "ap1" {
                    handle.approve(&request.id).await.unwrap();
                }
            }
        }
        handle.report().await.unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        let log = store.events(&run_id).unwrap();
        let decided: Vec<(String, String, String)> = kinds(&log, "approval_decided")
            .into_iter()
            .map(|e| match e {
                RunEvent::ApprovalDecided {
                    approval_id,
                    decision,
                    by,
                } => (approval_id, decision.word().to_string(), by),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            decided,
            [
                ("ap1".to_string(), "expired".to_string(), "run".to_string()),
                (
                    "ap2".to_string(),
                    "granted".to_string(),
                    "application".to_string()
                )
            ]
        );
        assert_eq!(handle_consumed(&log), ["ap2"]);
    });
}

/// The ids of the requests whose grant a call used.
fn handle_consumed(log: &[LoggedEvent]) -> Vec<String> {
    kinds(log, "approval_consumed")
        .into_iter()
        .map(|e| match e {
            RunEvent::ApprovalConsumed { approval_id, .. } => approval_id,
            _ => unreachable!(),
        })
        .collect()
}

/// Grants every request.
struct GrantAll;

#[async_trait]
impl baton::Approver for GrantAll {
    async fn decide(&self, _: &baton::ApprovalRequest) -> baton::Approval {
        baton::Approval::Grant
    }
}

/// A request waiting when the run was killed is handed to the resuming coordinator's
/// approver, which decides it: the call runs once.
#[test]
fn a_request_waiting_at_a_kill_goes_to_the_resuming_approver() {
    let state = tempfile::tempdir().unwrap();
    let run_id = kill_while_waiting(state.path(), None);
    runtime().block_on(async {
        let store: Arc<dyn EventStore> = Arc::new(baton::SqliteStore::open(state.path()).unwrap());
        let ran = Arc::new(AtomicU32::new(0));
        let (builder, _) = filer(
            vec![
                ScriptedTurn::tool("file_ticket", json!({"title": "a"})),
                ScriptedTurn::text(FILED),
            ],
            &ran,
            &store,
        );
        let report = builder
            .approver(Arc::new(GrantAll))
            .build()
            .resume(&run_id)
            .await
            .unwrap()
            .report()
            .await
            .unwrap();
        assert_eq!(report.subagents[0].state, SubagentState::HandedOff);
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        let log = store.events(&run_id).unwrap();
        assert!(log.iter().any(|e| matches!(&e.event,
            RunEvent::ApprovalDecided { approval_id, decision: ApprovalDecision::Granted, by }
                if approval_id == "ap1" && by == "approver")));
        assert_eq!(handle_consumed(&log), ["ap1"]);
    });
}

/// A request granted through the handle the moment the run is resumed — before the resumed
/// run has logged anything — is logged decided after `run_resumed`, never before it, and its
/// call runs once.
#[test]
fn a_request_decided_as_the_run_resumes_is_logged_after_the_resume() {
    let state = tempfile::tempdir().unwrap();
    let run_id = kill_while_waiting(state.path(), None);
    // One thread: the decision is sent before the spawned task that starts the run is polled.
    let one_thread = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    one_thread.block_on(async {
        let store: Arc<dyn EventStore> = Arc::new(baton::SqliteStore::open(state.path()).unwrap());
        let before = store.events(&run_id).unwrap().len();
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
        handle.approve("ap1").await.unwrap();
        handle.report().await.unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1, "the call ran once");
        let log = store.events(&run_id).unwrap();
        let after: Vec<&str> = log[before..].iter().map(|e| e.event.kind()).collect();
        assert_eq!(after[0], "run_resumed", "{after:?}");
        assert_eq!(
            after.iter().filter(|k| **k == "approval_decided").count(),
            1,
            "{after:?}"
        );
    });
}

/// Issue 22: within one batch, a call with effects whose earlier call of the same intent just
/// ran past its limit is not made: the model is told to call it again to ask for approval.
#[tokio::test]
async fn a_repeat_in_the_same_batch_of_a_call_past_its_limit_is_not_made() {
    let started = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let (builder, model) = biller(
        two_calls("charge", json!({"order": "A-1"}), json!({"order": "A-1"})),
        &started,
        &store,
    );
    let report = builder
        .build()
        .run(Task::job("Charge the order.").subtask("biller", "Charge A-1."))
        .await
        .unwrap();
    assert_eq!(started.load(Ordering::SeqCst), 1, "the repeat was not made");
    let results = tool_results(&model);
    assert!(
        results[1].contains(
            "not run: the outcome of an earlier call with the same arguments (sa1.1) is unknown"
        ),
        "{results:?}"
    );
    let cp = store.latest_checkpoint(&report.run_id).unwrap().unwrap();
    let states: Vec<_> = cp.effects.iter().map(|e| e.state).collect();
    assert_eq!(
        states,
        [
            baton::EffectState::OutcomeUnknown,
            baton::EffectState::Stopped
        ]
    );
}

/// A store whose writer takes 300 ms over every append that starts a call with effects or
/// uses a grant — or, `failing`, refuses it: what is durable lags what the lead has logged.
struct SlowStore {
    inner: Arc<MemoryStore>,
    writer: std::sync::Mutex<std::sync::mpsc::Sender<Append>>,
}

type Append = (
    String,
    Vec<(u64, RunEvent)>,
    tokio::sync::oneshot::Sender<Result<Vec<LoggedEvent>, baton::StoreError>>,
);

impl SlowStore {
    fn new(inner: Arc<MemoryStore>, failing: bool) -> SlowStore {
        let (writer, appends) = std::sync::mpsc::channel::<Append>();
        let store = Arc::clone(&inner);
        std::thread::spawn(move || {
            for (run_id, events, ack) in appends {
                let slow = events.iter().any(|(_, e)| {
                    matches!(
                        e,
                        RunEvent::ApprovalConsumed { .. }
                            | RunEvent::ToolCalled {
                                read_only: false,
                                effect: baton::EffectState::Executing,
                                ..
                            }
                    )
                });
                if slow {
                    std::thread::sleep(Duration::from_millis(300));
                    if failing {
                        let full = baton::StoreError::Write("/state: the disk is full".into());
                        let _ = ack.send(Err(full));
                        continue;
                    }
                }
                let logged = store.append(&run_id, events);
                let _ = ack.send(logged.blocking_recv().unwrap());
            }
        });
        SlowStore {
            inner,
            writer: std::sync::Mutex::new(writer),
        }
    }
}

impl EventStore for SlowStore {
    fn append(
        &self,
        run_id: &str,
        events: Vec<(u64, RunEvent)>,
    ) -> tokio::sync::oneshot::Receiver<Result<Vec<LoggedEvent>, baton::StoreError>> {
        let (ack, acked) = tokio::sync::oneshot::channel();
        let writer = self.writer.lock().unwrap();
        writer.send((run_id.to_string(), events, ack)).unwrap();
        acked
    }
    fn events(&self, run_id: &str) -> Result<Vec<LoggedEvent>, baton::StoreError> {
        self.inner.events(run_id)
    }
    fn runs(&self) -> Result<Vec<baton::checkpoint::RunRow>, baton::StoreError> {
        self.inner.runs()
    }
    fn put_checkpoint(&self, checkpoint: &baton::Checkpoint) -> Result<(), baton::StoreError> {
        self.inner.put_checkpoint(checkpoint)
    }
    fn latest_checkpoint(
        &self,
        run_id: &str,
    ) -> Result<Option<baton::Checkpoint>, baton::StoreError> {
        self.inner.latest_checkpoint(run_id)
    }
}

/// Writes a note (asking for approval when told to), and records, as it runs, whether the
/// store already holds its start: the call logged executing, or its grant logged used.
struct DurableNote {
    store: Arc<MemoryStore>,
    seen: Arc<std::sync::Mutex<Vec<(String, bool)>>>,
}

#[async_trait]
impl Tool for DurableNote {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "note".into(),
            description: "Write a note.".into(),
            parameters: json!({"type": "object", "properties": {"ask": {"type": "boolean"}}}),
        }
    }
    fn consequences(&self, _: &Value) -> Vec<Consequence> {
        vec![Consequence {
            effect: Effect::Write,
            resource: "notes".into(),
        }]
    }
    fn needs_approval(&self, arguments: &Value) -> bool {
        arguments["ask"] == json!(true)
    }
    async fn call(
        &self,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let call = context.call_id();
        let durable = self
            .store
            .events(context.run_id())
            .unwrap()
            .iter()
            .any(|e| match (&e.event, arguments["ask"] == json!(true)) {
                (RunEvent::ApprovalConsumed { call_id, .. }, true) => call_id == call,
                (
                    RunEvent::ToolCalled {
                        call_id,
                        effect: baton::EffectState::Executing,
                        ..
                    },
                    false,
                ) => call_id == call,
                _ => false,
            });
        self.seen.lock().unwrap().push((call.to_string(), durable));
        Ok(ToolOutput::new("written"))
    }
}

/// Issue 22: a call with effects runs only once the log holds, durably, that it started —
/// logged executing, or its grant logged used — so a crash while it runs is read back as an
/// unknown outcome, never as a call not made or a grant still unused; a store slow to
/// acknowledge delays the call, it does not race it, and one that refuses the start stops
/// the run before the call is made.
#[tokio::test]
async fn a_call_with_effects_runs_only_once_its_start_is_durable() {
    let (ran, made) = durable_notes(false).await;
    ran.unwrap();
    assert_eq!(
        made,
        [("sa1.1".to_string(), true), ("sa1.2".to_string(), true)]
    );
    let (ran, made) = durable_notes(true).await;
    match ran {
        Err(baton::RunError::Store(e)) => assert!(e.to_string().contains("disk is full"), "{e}"),
        other => panic!("the run went on past a failed append: {other:?}"),
    }
    assert_eq!(made, [], "no call is made whose start was not logged");
}

/// The notes run (one plain, one asking for approval, granted) over a slow or failing store:
/// each call made, with whether its start was durable when it ran.
async fn durable_notes(failing: bool) -> (Result<(), baton::RunError>, Vec<(String, bool)>) {
    let memory = Arc::new(MemoryStore::new());
    let store: Arc<dyn EventStore> = Arc::new(SlowStore::new(Arc::clone(&memory), failing));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let model = Arc::new(ScriptedModel::new(vec![
        ScriptedTurn::tool("note", json!({"ask": false})),
        ScriptedTurn::tool("note", json!({"ask": true})),
        ScriptedTurn::text(EMPTY_HANDOFF),
    ]));
    let note = DurableNote {
        store: Arc::clone(&memory),
        seen: Arc::clone(&seen),
    };
    let ran = Coordinator::builder()
        .model(model as Arc<dyn Model>)
        .tools(ToolRegistry::empty().with(Arc::new(note)))
        .role(Role::new("writer").tools(["note"]))
        .approver(Arc::new(GrantAll))
        .store(store)
        .build()
        .run(Task::job("Write the notes.").subtask("writer", "Write two."))
        .await
        .map(|_| ());
    let made = seen.lock().unwrap().clone();
    (ran, made)
}

/// Issue 22: a grant whose request expires while its call waits its turn behind another call
/// of the batch is history, not permission: that call is not made (its effect stopped, the
/// model told it expired), and only the grant used in time is logged used.
#[tokio::test]
async fn a_grant_that_expires_while_its_call_waits_its_turn_is_not_used() {
    let ran = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let model = Arc::new(ScriptedModel::new(two_calls(
        "file_ticket",
        json!({"title": "a"}),
        json!({"title": "b"}),
    )));
    let report = Coordinator::builder()
        .model(Arc::clone(&model) as Arc<dyn Model>)
        .tools(ToolRegistry::empty().with(Arc::new(FileTicket(
            Arc::clone(&ran),
            Duration::from_millis(600),
        ))))
        .role(Role::new("filer").tools(["file_ticket"]))
        .approver(Arc::new(GrantAll))
        .time_limits(TimeLimits {
            approval: Duration::from_millis(300),
            ..TimeLimits::default()
        })
        .store(Arc::clone(&store))
        .build()
        .run(file_task())
        .await
        .unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1, "one call made");
    let results = tool_results(&model);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(
        results.iter().filter(|r| r.contains("expired")).count(),
        1,
        "{results:?}"
    );
    let log = store.events(&report.run_id).unwrap();
    assert_eq!(handle_consumed(&log).len(), 1);
    let cp = store.latest_checkpoint(&report.run_id).unwrap().unwrap();
    let mut states: Vec<_> = cp.effects.iter().map(|e| e.state).collect();
    states.sort_by_key(|s| format!("{s:?}"));
    assert_eq!(
        states,
        [baton::EffectState::Completed, baton::EffectState::Stopped]
    );
}

/// The charge tool, asking for approval of every call.
struct AskedCharge(Charge);

#[async_trait]
impl Tool for AskedCharge {
    fn spec(&self) -> ToolSpec {
        self.0.spec()
    }
    fn consequences(&self, arguments: &Value) -> Vec<Consequence> {
        self.0.consequences(arguments)
    }
    fn needs_approval(&self, _: &Value) -> bool {
        true
    }
    async fn call(
        &self,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.0.call(arguments, context).await
    }
}

/// Issue 22: a grant asked for another reason (the tool asks for every call) does not cover
/// repeating an intent whose outcome became unknown while the request waited: the repeat is
/// not made, and the model is told to call it again to ask about the unknown outcome.
#[tokio::test]
async fn a_grant_asked_for_another_reason_does_not_cover_an_unknown_outcome() {
    let started = Arc::new(AtomicU32::new(0));
    let model = Arc::new(ScriptedModel::new(two_calls(
        "charge",
        json!({"order": "A-1"}),
        json!({"order": "A-1"}),
    )));
    let charge = AskedCharge(Charge(Arc::clone(&started)));
    Coordinator::builder()
        .model(Arc::clone(&model) as Arc<dyn Model>)
        .tools(ToolRegistry::empty().with(Arc::new(charge)))
        .role(Role::new("biller").tools(["charge"]))
        .approver(Arc::new(GrantAll))
        .time_limits(TimeLimits {
            tool_call: Duration::from_millis(200),
            ..TimeLimits::default()
        })
        .build()
        .run(Task::job("Charge the order.").subtask("biller", "Charge A-1."))
        .await
        .unwrap();
    assert_eq!(started.load(Ordering::SeqCst), 1, "the repeat was not made");
    let results = tool_results(&model);
    assert_eq!(
        results
            .iter()
            .filter(|r| r.contains("with the same arguments (sa1.") && r.contains(") is unknown"))
            .count(),
        1,
        "{results:?}"
    );
}

/// Issue 22: a call with effects running when its subagent is stopped (the run cancelled)
/// never returns: its effect is logged `outcome_unknown`, never left `executing`, and never
/// read as failed.
#[tokio::test]
async fn a_call_cut_off_by_a_cancel_is_an_unknown_outcome() {
    let started = Arc::new(AtomicU32::new(0));
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let model = Arc::new(ScriptedModel::new(vec![
        ScriptedTurn::tool("charge", json!({"order": "A-1"})),
        ScriptedTurn::text(EMPTY_HANDOFF),
    ]));
    let handle = Coordinator::builder()
        .model(model as Arc<dyn Model>)
        .tools(ToolRegistry::empty().with(Arc::new(Charge(Arc::clone(&started)))))
        .role(Role::new("biller").tools(["charge"]))
        .store(Arc::clone(&store))
        .build()
        .start(Task::job("Charge the order.").subtask("biller", "Charge A-1."))
        .await
        .unwrap();
    let mut events = handle.events();
    while let Some(event) = events.next().await {
        if let RunEvent::ToolCalled { effect, .. } = event.unwrap().event {
            assert_eq!(effect, baton::EffectState::Executing);
            break;
        }
    }
    while started.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    handle.cancel();
    let report = handle.report().await.unwrap();
    let cp = store.latest_checkpoint(&report.run_id).unwrap().unwrap();
    let states: Vec<_> = cp.effects.iter().map(|e| e.state).collect();
    assert_eq!(states, [baton::EffectState::OutcomeUnknown]);
    let log = store.events(&report.run_id).unwrap();
    assert!(log.iter().any(|e| matches!(&e.event,
        RunEvent::EffectChanged { to: baton::EffectState::OutcomeUnknown, note, .. }
            if note.contains("ended while it ran"))));
}
