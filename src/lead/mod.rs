//! The lead actor: plans a run (shards of the tree), spawns subagents linked to it with bounded
//! concurrency, supervises them, merges what they hand off, and replies with the report.
//!
//! # Guarantees
//! - The lead never blocks on a subagent or on the disk: planning runs on a blocking thread and
//!   comes back as `Planned`; subagents report by message. Status and cancel stay responsive.
//! - At most `agents` subagents run at once and at most `max_subagents` exist per run.
//! - A subagent that panics, errors or stops without a handoff is recorded as failed; the run
//!   still reports what the others handed off.
//! - Only a handoff that passed the contract is merged into the report.
//! - Every subagent's first context is compiled from the checkpoint for its role; its tools
//!   are its role profile's, never more.
//! - The second wave (a verifier over the conclusions of repaired handoffs) is planned at most
//!   once, after every explorer has ended, and never after `Cancel`.
//! - After `Cancel`, no subagent is spawned; running ones are stopped and recorded as
//!   cancelled; the report holds what was handed off before.

mod handle;
mod journal;
mod merge;
mod plan;
mod relevance;
mod report;
mod resume;
mod verdict;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::sync::mpsc::UnboundedSender;

use crate::checkpoint::{Delta, LoggedEvent, Projector, RunEvent, RunLog, StoreError};
use crate::context::{
    compile, Bpe, CachedTokenizer, Compiled, FloorError, Orientation, RoleProfile,
};

use crate::event::Event;
use crate::handoff::Handoff;
use crate::handoff::{validate, Check, Parsed, Violation, WorkspaceFiles};
use crate::model::Model;
use crate::policy::{Budget, Spent};
use crate::report::{Report, SubagentState, SubagentSummary};
use crate::source::ObservationLog;
use crate::subagent::{SubagentActor, SubagentArgs, SubagentMsg, SubagentReport};
use crate::tools::{ToolRegistry, Workspace};
pub(crate) use handle::LeadHandle;
use plan::Shard;
use report::{evidence_digests, plan_run};
pub(crate) use resume::{restore, Resumption};
use verdict::Verdict;

/// The least time between two checkpoints taken while a run goes on.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Everything one run needs; built by the `Coordinator`.
#[derive(Clone)]
pub(crate) struct RunConfig {
    pub(crate) run_id: String,
    pub(crate) question: String,
    pub(crate) workspace: Workspace,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) tools: ToolRegistry,
    pub(crate) agents: usize,
    pub(crate) max_subagents: usize,
    pub(crate) budget: Budget,
    pub(crate) repairs: u32,
    /// Shards to split the tree into (none: one per agent, one more per MiB).
    pub(crate) shards: Option<usize>,
    /// Constraints given with the task: (verbatim text, provenance).
    pub(crate) constraints: Vec<(String, String)>,
    /// The role profiles subagents are compiled for (explorer, verifier, …).
    pub(crate) roles: BTreeMap<String, RoleProfile>,
    /// Where the run's events go (none: the run is not logged).
    pub(crate) log: Option<RunLog>,
    /// How long one model call and one tool call may take.
    pub(crate) limits: crate::policy::TimeLimits,
    /// This process's hold on the run, released when the lead stops.
    pub(crate) _claim: Option<Arc<crate::checkpoint::RunClaim>>,
}

/// What the lead is told.
pub(crate) enum LeadMsg {
    /// Start the run; the report comes back on the port (an error when the run's log could
    /// not be written: no report is given as if it were logged).
    Run(RpcReplyPort<Result<Report, StoreError>>),
    /// An append to the run's log (or a checkpoint) failed: the run stops.
    LogFailed(StoreError),
    /// Planning finished.
    Planned(Result<Vec<Shard>, String>),
    /// A subagent reported.
    Subagent { id: String, report: SubagentReport },
    /// A handoff was checked against the contract (off the actor).
    HandoffChecked {
        id: String,
        parsed: Parsed,
        digests: BTreeMap<String, String>,
    },
    /// Stop spawning, stop the running subagents, report what was handed off.
    Cancel,
    /// The subagents as they stand.
    Status(RpcReplyPort<Vec<SubagentSummary>>),
}

/// What the lead is spawned with.
pub(crate) struct LeadArgs {
    pub(crate) config: RunConfig,
    pub(crate) events: Option<UnboundedSender<Event>>,
    /// Set when resuming a run from its log.
    pub(crate) resume: Option<Resumption>,
}

struct SubagentRecord {
    summary: SubagentSummary,
    shard: Shard,
    actor: Option<ActorRef<SubagentMsg>>,
    alive: bool,
    handoff: Option<Handoff>,
    observations: ObservationLog,
    spent: Spent,
    /// Violations quoted back in a repair turn not yet answered.
    pending: Option<Vec<Violation>>,
    /// What a rejected handoff said: unverified leads at most.
    unverified: Option<Handoff>,
}

pub(crate) struct LeadState {
    config: RunConfig,
    events: Option<UnboundedSender<Event>>,
    reply: Option<RpcReplyPort<Result<Report, StoreError>>>,
    started: Instant,
    planned: bool,
    records: Vec<SubagentRecord>,
    queue: VecDeque<usize>,
    by_actor: HashMap<ActorId, usize>,
    cancelled: bool,
    planning_error: Option<String>,
    /// The workspace's files, read once per run for checking citations.
    files: Arc<WorkspaceFiles>,
    /// Where each append's acknowledgement goes to be checked (none: the run is not logged).
    acks: Option<UnboundedSender<journal::Logged>>,
    /// When the last checkpoint was taken (they are taken at most once a second, and at the
    /// end).
    checkpointed: Option<Instant>,
    /// The watcher of the acknowledgements: the first failure, once every one has come.
    acked: Option<tokio::task::JoinHandle<Result<(), StoreError>>>,
    /// Set when the run's log could not be written: the run stops and reports this instead.
    log_failed: Option<StoreError>,
    /// The resumption this lead starts from, taken when the run starts.
    resume: Option<Resumption>,
    /// Set once the report is on its way.
    finished: bool,
    /// The run's checkpoint, every event applied once as it is logged (from the log, on
    /// resume), for compiling contexts.
    projector: Projector,
    /// On a resumed run: the effect changes logged since the resume (each restarted subagent's
    /// delta).
    since_resume: Vec<LoggedEvent>,
    next_seq: u64,
    /// Counts tokens for contexts, caching per block.
    tokenizer: Arc<CachedTokenizer<Bpe>>,
    /// Set on a resumed run: the last event before the resume.
    resumed_after: Option<u64>,
    /// Set once the second wave was considered.
    second_wave_planned: bool,
}

pub(crate) struct LeadActor;

impl LeadState {
    fn emit(&self, event: Event) {
        if let Some(events) = &self.events {
            let _ = events.send(event);
        }
    }

    /// Appends to the run's log, if there is one; durability is awaited before the report.
    fn log(&mut self, events: Vec<RunEvent>) {
        for event in &events {
            self.next_seq += 1;
            let logged = LoggedEvent {
                run_id: self.config.run_id.clone(),
                seq: self.next_seq,
                at_ms: 0,
                event: event.clone(),
                prev: String::new(),
                digest: String::new(),
            };
            self.projector.apply(&logged);
            if self.resumed_after.is_some() && matches!(event, RunEvent::EffectChanged { .. }) {
                self.since_resume.push(logged);
            }
        }
        if let (Some(log), Some(acks)) = (&self.config.log, &self.acks) {
            // The watcher outlives every send but the last, which drops it; a send that fails
            // leaves the append unchecked, so it is reported like a failed one.
            let sent = acks.send(journal::Logged::Ack(log.append(events)));
            if sent.is_err() && self.log_failed.is_none() {
                self.log_failed = Some(StoreError::Write(
                    "the acknowledgement watcher stopped".into(),
                ));
            }
        }
    }

    /// A subagent's context, compiled for its role from the checkpoint of everything logged
    /// so far. A floor over the budget raises the budget while the subagent's model's window
    /// (less the room for its answer) allows; past that the context is refused.
    fn context_for(
        &self,
        subagent: &str,
        role: &RoleProfile,
    ) -> Result<(Compiled, Option<Orientation>), FloorError> {
        let checkpoint = self.projector.checkpoint();
        // After a resume, what changed since for this subagent (its effects cut off by the
        // crash) comes as the delta, and the restarted subagent orients itself first.
        let own = |call: &str| call.split('.').next() == Some(subagent);
        let delta = self
            .resumed_after
            .map(|after| Delta {
                after_seq: after,
                events: self
                    .since_resume
                    .iter()
                    .filter(|e| matches!(&e.event, RunEvent::EffectChanged { call_id, .. } if own(call_id)))
                    .cloned()
                    .collect(),
            })
            .filter(|d| !d.events.is_empty());
        let orientation = self
            .resumed_after
            .and_then(|_| Orientation::for_subagent(checkpoint, subagent));
        let tokenizer = self.tokenizer.as_ref();
        let window = self
            .config
            .model
            .context_window()
            .saturating_sub(crate::subagent::ANSWER_TOKENS as usize);
        let compiled = match compile(checkpoint, delta.as_ref(), role, role.budget, tokenizer) {
            Err(floor) if floor.floor <= window => {
                compile(checkpoint, delta.as_ref(), role, floor.floor, tokenizer)
            }
            other => other,
        }?;
        Ok((compiled, orientation))
    }

    /// A checkpoint of everything logged so far, stored by the watcher once it is durable;
    /// `now` takes it whatever the interval (the end of the run).
    fn checkpoint(&mut self, now: bool) {
        let due = now
            || self
                .checkpointed
                .is_none_or(|at| at.elapsed() >= CHECKPOINT_EVERY);
        if let (true, Some(acks)) = (due, &self.acks) {
            self.checkpointed = Some(Instant::now());
            let checkpoint = Box::new(self.projector.checkpoint().clone());
            if acks.send(journal::Logged::Checkpoint(checkpoint)).is_err()
                && self.log_failed.is_none()
            {
                self.log_failed = Some(StoreError::Write(
                    "the acknowledgement watcher stopped".into(),
                ));
            }
        }
    }

    /// Stops spawning and stops the running subagents; the run finishes with what was handed
    /// off.
    fn cancel(&mut self, myself: &ActorRef<LeadMsg>) {
        self.cancelled = true;
        while let Some(index) = self.queue.pop_front() {
            self.end(index, SubagentState::Cancelled, None);
        }
        for record in self.records.iter().filter(|r| r.alive) {
            if let Some(actor) = &record.actor {
                actor.stop(Some("run cancelled".into()));
            }
        }
        self.finish_if_done(myself);
    }

    /// Takes a plan: a record per shard, restored from the log where its subagent had ended
    /// (nothing accepted is redone), queued otherwise.
    fn adopt_plan(
        &mut self,
        plan: Vec<(String, Shard)>,
        mut restored: BTreeMap<String, resume::Restored>,
    ) {
        self.planned = true;
        for (id, shard) in plan {
            let index = self.records.len();
            let kept = restored.remove(&id).filter(|r| r.is_done());
            let mut record = SubagentRecord {
                summary: SubagentSummary {
                    id,
                    role: shard.role.clone(),
                    scope: shard.label(),
                    state: SubagentState::Queued,
                    tool_calls: 0,
                    tokens: 0,
                    model_turns: 0,
                    repairs: 0,
                    error: None,
                    violations: Vec::new(),
                },
                shard,
                actor: None,
                alive: false,
                handoff: None,
                observations: ObservationLog::default(),
                spent: Spent::default(),
                pending: None,
                unverified: None,
            };
            match kept {
                Some(r) => {
                    record.summary.state = r.state.unwrap_or(SubagentState::Failed);
                    record.summary.error = r.error;
                    record.summary.repairs = r.repairs;
                    record.summary.violations = r.violations;
                    record.handoff = r.handoff;
                    record.unverified = r.unverified;
                    record.observations = r.observations;
                    self.records.push(record);
                    self.apply_spent(index, r.spent);
                }
                None if self.cancelled => {
                    record.summary.state = SubagentState::Cancelled;
                    self.records.push(record);
                }
                None => {
                    self.queue.push_back(index);
                    self.records.push(record);
                }
            }
        }
    }

    fn index_of(&self, id: &str) -> Option<usize> {
        self.records.iter().position(|r| r.summary.id == id)
    }

    fn running(&self) -> usize {
        self.records.iter().filter(|r| r.alive).count()
    }

    async fn fill(&mut self, myself: &ActorRef<LeadMsg>) {
        while !self.cancelled && self.running() < self.config.agents.max(1) {
            let Some(index) = self.queue.pop_front() else {
                break;
            };
            let id = self.records[index].summary.id.clone();
            let Some(role) = self
                .config
                .roles
                .get(&self.records[index].shard.role)
                .cloned()
            else {
                let why = format!("no role profile `{}`", self.records[index].shard.role);
                self.end(index, SubagentState::Failed, Some(why));
                continue;
            };
            let (context, orientation) = match self.context_for(&id, &role) {
                Ok(c) => c,
                Err(refused) => {
                    self.end(
                        index,
                        SubagentState::Failed,
                        Some(format!("context refused: {refused}")),
                    );
                    continue;
                }
            };
            let record = &self.records[index];
            let brief = if role.name == "verifier" {
                plan::verify_brief(&self.config.question)
            } else {
                plan::brief(&self.config.question, &record.shard)
            };
            let spawned = journal::spawned(
                &record.summary.id,
                &record.shard.paths,
                &brief,
                &context,
                self.config.budget,
            );
            let args = SubagentArgs {
                id: record.summary.id.clone(),
                system: context.text,
                brief,
                orientation,
                budget: self.config.budget,
                model: Arc::clone(&self.config.model),
                tools: self.config.tools.only(&role.tools),
                workspace: self.config.workspace.clone(),
                report: {
                    let (lead, id) = (myself.clone(), record.summary.id.clone());
                    Arc::new(move |report| {
                        let _ = lead.cast(LeadMsg::Subagent {
                            id: id.clone(),
                            report,
                        });
                    })
                },
                limits: self.config.limits,
            };
            match SubagentActor::spawn_linked(None, SubagentActor, args, myself.get_cell()).await {
                Ok((actor, _)) => {
                    self.log(vec![spawned]);
                    self.by_actor.insert(actor.get_id(), index);
                    let record = &mut self.records[index];
                    record.actor = Some(actor);
                    record.alive = true;
                    record.summary.state = SubagentState::Running;
                    let event = Event::SubagentSpawned {
                        id: record.summary.id.clone(),
                        role: record.summary.role.clone(),
                        scope: record.summary.scope.clone(),
                    };
                    self.emit(event);
                }
                Err(e) => self.end(
                    index,
                    SubagentState::Failed,
                    Some(format!("could not spawn: {e}")),
                ),
            }
        }
    }

    fn end(&mut self, index: usize, state: SubagentState, error: Option<String>) {
        self.end_after(None, index, state, error);
    }

    /// Ends a subagent; `verdict` (its handoff accepted or rejected) goes into the same append
    /// as its end, so a crash never leaves an accepted handoff without its subagent's end.
    fn end_after(
        &mut self,
        verdict: Option<RunEvent>,
        index: usize,
        state: SubagentState,
        error: Option<String>,
    ) {
        let record = &mut self.records[index];
        record.summary.state = state;
        if error.is_some() {
            record.summary.error = error;
        }
        let ended = journal::ended(
            &record.summary.id,
            state,
            record.summary.error.clone(),
            record.spent,
        );
        self.log(verdict.into_iter().chain(ended).collect());
        self.checkpoint(false);
        let record = &self.records[index];
        let event = Event::SubagentEnded {
            id: record.summary.id.clone(),
            state,
            tool_calls: record.summary.tool_calls,
            tokens: record.summary.tokens,
        };
        self.emit(event);
    }

    /// Takes what a subagent sent with its handoff or failure: its totals and observation log.
    fn receive(&mut self, id: &str, observations: ObservationLog, spent: Spent) -> Option<usize> {
        let index = self.index_of(id)?;
        self.apply_spent(index, spent);
        self.records[index].observations = observations;
        Some(index)
    }

    fn stop_actor(&self, index: usize) {
        if let Some(actor) = &self.records[index].actor {
            actor.stop(None);
        }
    }

    fn apply_spent(&mut self, index: usize, spent: Spent) {
        self.records[index].spent = spent;
        let s = &mut self.records[index].summary;
        s.tool_calls = spent.tool_calls;
        s.tokens = spent.tokens();
        s.model_turns = spent.model_turns;
    }

    /// Spawns what it may; once the first wave has ended, plans the second (a verifier over
    /// doubted conclusions) at most once; finishes when nothing is left.
    async fn advance(&mut self, myself: &ActorRef<LeadMsg>) {
        self.fill(myself).await;
        let idle = self.planned && self.queue.is_empty() && self.running() == 0;
        if idle && self.second_wave() {
            self.fill(myself).await;
        }
        self.finish_if_done(myself);
    }

    /// Whether the lead doubts anything: a finding of a handoff that broke the contract before
    /// a repair made it pass (the checkpoint's `doubts` the verifier is compiled with).
    fn doubts_any(&self) -> bool {
        self.records
            .iter()
            .filter(|r| r.summary.state == SubagentState::Repaired)
            .filter_map(|r| r.handoff.as_ref())
            .flat_map(|h| h.settled_conclusions.iter())
            .any(|c| c.kind == crate::handoff::ConclusionKind::Finding)
    }

    /// Plans the second wave once: a verifier subagent, compiled from the updated checkpoint,
    /// re-checks the doubted conclusions. False when there is nothing to verify.
    fn second_wave(&mut self) -> bool {
        let planned_already = self.records.iter().any(|r| r.shard.role != "explorer");
        if self.cancelled || self.second_wave_planned || planned_already {
            return false;
        }
        self.second_wave_planned = true;
        if !self.doubts_any() || !self.config.roles.contains_key("verifier") {
            return false;
        }
        let id = format!("sa{}", self.records.len() + 1);
        let shard = Shard {
            paths: vec![".".into()],
            bytes: 0,
            role: "verifier".into(),
        };
        let mut listed: Vec<(String, Vec<String>, String)> = self
            .records
            .iter()
            .map(|r| {
                (
                    r.summary.id.clone(),
                    r.shard.paths.clone(),
                    r.shard.role.clone(),
                )
            })
            .collect();
        listed.push((id.clone(), shard.paths.clone(), shard.role.clone()));
        self.log(vec![journal::planned(
            &listed,
            "second wave: a verifier re-checks the conclusions of repaired handoffs",
        )]);
        self.adopt_plan(vec![(id, shard)], BTreeMap::new());
        true
    }

    fn finish_if_done(&mut self, myself: &ActorRef<LeadMsg>) {
        let done = !self.finished
            && (self.planned || self.planning_error.is_some())
            && self.queue.is_empty()
            && self.running() == 0;
        if !done {
            return;
        }
        let report = self.report();
        self.log(vec![RunEvent::RunFinished {
            cancelled: self.cancelled,
        }]);
        self.checkpoint(true);
        let reply = self.reply.take();
        // Dropping the sender lets the watcher end once it has checked every acknowledgement.
        self.acks.take();
        let acked = self.acked.take();
        let failed = self.log_failed.clone();
        let me = myself.clone();
        // The report goes out only once every event is durable and the final checkpoint built;
        // if any append failed, the error goes out instead.
        tokio::spawn(async move {
            let outcome = async {
                if let Some(e) = failed {
                    return Err(e);
                }
                if let Some(acked) = acked {
                    acked.await.map_err(|e| {
                        StoreError::Write(format!("the acknowledgement watcher failed: {e}"))
                    })??;
                }
                Ok(report)
            };
            let outcome = outcome.await;
            if let Some(reply) = reply {
                let _ = reply.send(outcome);
            }
            me.stop(None);
        });
        self.finished = true;
    }
}

#[ractor::async_trait]
impl Actor for LeadActor {
    type Msg = LeadMsg;
    type State = LeadState;
    type Arguments = LeadArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<LeadMsg>,
        args: LeadArgs,
    ) -> Result<LeadState, ActorProcessingErr> {
        let files = Arc::new(WorkspaceFiles::new(args.config.workspace.clone()));
        // The log read on resume is applied once, then let go.
        let mut args = args;
        let mut projector = Projector::new(&args.config.run_id);
        for logged in args
            .resume
            .iter_mut()
            .flat_map(|r| std::mem::take(&mut r.events))
        {
            projector.apply(&logged);
        }
        let (acks, acked) = match &args.config.log {
            Some(log) => {
                let (acks, acked) = journal::watch_acks(myself.clone(), Arc::clone(log.store()));
                (Some(acks), Some(acked))
            }
            None => (None, None),
        };
        Ok(LeadState {
            config: args.config,
            events: args.events,
            reply: None,
            started: Instant::now(),
            planned: false,
            records: Vec::new(),
            queue: VecDeque::new(),
            by_actor: HashMap::new(),
            cancelled: false,
            planning_error: None,
            files,
            acks,
            acked,
            checkpointed: None,
            log_failed: None,
            projector,
            since_resume: Vec::new(),
            next_seq: args.resume.as_ref().map(|r| r.after_seq).unwrap_or(0),
            resume: args.resume,
            finished: false,
            tokenizer: Arc::new(CachedTokenizer::new(Bpe)),
            resumed_after: None,
            second_wave_planned: false,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<LeadMsg>,
        message: LeadMsg,
        state: &mut LeadState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            LeadMsg::Run(reply) => {
                state.reply = Some(reply);
                state.started = Instant::now();
                if let Some(resumption) = state.resume.take() {
                    state.resumed_after = Some(resumption.after_seq);
                    let mut events = vec![RunEvent::RunResumed {
                        after_seq: resumption.after_seq,
                    }];
                    events.extend(journal::cut_off(&resumption.cut_off));
                    events.extend(resumption.stale.iter().map(|s| RunEvent::EvidenceStale {
                        subagent: s.subagent.clone(),
                        sources: s.sources.clone(),
                        claims: s.claims.clone(),
                    }));
                    state.log(events);
                    if !resumption.plan.is_empty() {
                        state.adopt_plan(resumption.plan, resumption.subagents);
                        state.emit(Event::RunPlanned {
                            run_id: state.config.run_id.clone(),
                            subagents: state.records.len(),
                        });
                        state.advance(&myself).await;
                        return Ok(());
                    }
                } else {
                    let mut events = vec![journal::started(&state.config)];
                    events.extend(journal::constraints(&state.config.constraints));
                    state.log(events);
                }
                let workspace = state.config.workspace.clone();
                let (agents, max) = (state.config.agents, state.config.max_subagents);
                let shards = state.config.shards;
                let me = myself.clone();
                let tokenizer = Arc::clone(&state.tokenizer);
                tokio::task::spawn_blocking(move || {
                    // The BPE vocabulary loads once (~0.2 s): here, not in a handler.
                    let _ = crate::context::Tokenizer::count(tokenizer.as_ref(), "warm");
                    let planned = plan_run(&workspace, agents, max, shards);
                    let _ = me.cast(LeadMsg::Planned(planned));
                });
            }
            LeadMsg::Planned(Err(error)) => {
                state.planning_error = Some(error);
                state.finish_if_done(&myself);
            }
            LeadMsg::Planned(Ok(shards)) => {
                let plan: Vec<(String, Shard)> = shards
                    .into_iter()
                    .enumerate()
                    .map(|(i, shard)| (format!("sa{}", i + 1), shard))
                    .collect();
                let listed: Vec<(String, Vec<String>, String)> = plan
                    .iter()
                    .map(|(id, s)| (id.clone(), s.paths.clone(), s.role.clone()))
                    .collect();
                state.log(vec![journal::planned(
                    &listed,
                    "sharded the tree by directory, balanced by size",
                )]);
                state.adopt_plan(plan, BTreeMap::new());
                state.emit(Event::RunPlanned {
                    run_id: state.config.run_id.clone(),
                    subagents: state.records.len(),
                });
                state.advance(&myself).await;
            }
            LeadMsg::Subagent {
                id,
                report: SubagentReport::WindowCompacted { note },
            } => {
                state.log(vec![RunEvent::WindowCompacted {
                    subagent: id,
                    decision: note.decision,
                    tokens_before: note.tokens_before as u64,
                    tokens_after: note.tokens_after as u64,
                    cleared_tokens: note.cleared_tokens as u64,
                    pinned: note.pinned,
                    reason: note.reason,
                    folded: note.folded,
                }]);
            }
            LeadMsg::Subagent {
                id,
                report: SubagentReport::ToolsStarted { calls },
            } => {
                let events = calls.iter().map(|c| journal::tool_called(&id, c)).collect();
                state.log(events);
            }
            LeadMsg::Subagent {
                id,
                report: SubagentReport::ToolsFinished { returned },
            } => {
                let events = returned
                    .into_iter()
                    .map(|r| journal::tool_returned(&id, r))
                    .collect();
                state.log(events);
            }
            LeadMsg::Subagent {
                id,
                report: SubagentReport::Progressed { spent },
            } => {
                if let Some(index) = state.index_of(&id) {
                    state.apply_spent(index, spent);
                    state.emit(Event::SubagentProgressed {
                        id,
                        tool_calls: spent.tool_calls,
                        tokens: spent.tokens(),
                    });
                }
            }
            LeadMsg::Subagent {
                id,
                report:
                    SubagentReport::HandedOff {
                        text,
                        observations,
                        spent,
                    },
            } => {
                let log = observations.clone();
                if state.receive(&id, observations, spent).is_none() {
                    return Ok(());
                }
                let files = Arc::clone(&state.files);
                let me = myself.clone();
                tokio::task::spawn_blocking(move || {
                    let check = Check {
                        files: Some(files.as_ref()),
                        observations: Some(&log),
                        docs: None,
                    };
                    let parsed = validate(&text, &check);
                    let digests = if parsed.violations.is_empty() {
                        evidence_digests(
                            &parsed.handoff,
                            files.as_ref() as &dyn crate::handoff::Files,
                        )
                    } else {
                        BTreeMap::new()
                    };
                    let _ = me.cast(LeadMsg::HandoffChecked {
                        id,
                        parsed,
                        digests,
                    });
                });
            }
            LeadMsg::HandoffChecked {
                id,
                parsed,
                digests,
            } => {
                let Some(index) = state.index_of(&id) else {
                    return Ok(());
                };
                if state.records[index].summary.state.ended() {
                    return Ok(());
                }
                let used = state.records[index].summary.repairs;
                let checked = verdict::verdict(parsed, used, state.config.repairs);
                state.emit(Event::HandoffChecked {
                    id: id.clone(),
                    violations: match &checked {
                        Verdict::Accept(_) => 0,
                        Verdict::Repair(v) | Verdict::Reject { violations: v, .. } => v.len(),
                    },
                    repairs: used,
                });
                let logged = match &checked {
                    Verdict::Accept(handoff) => RunEvent::HandoffAccepted {
                        subagent: id.clone(),
                        handoff: handoff.clone(),
                        repairs: used,
                        evidence_digests: digests,
                    },
                    Verdict::Repair(violations) => RunEvent::HandoffRepairRequested {
                        subagent: id.clone(),
                        violations: violations.clone(),
                    },
                    Verdict::Reject {
                        violations,
                        unverified,
                    } => RunEvent::HandoffRejected {
                        subagent: id.clone(),
                        violations: violations.clone(),
                        unverified: unverified.clone(),
                    },
                };
                let record = &mut state.records[index];
                match checked {
                    Verdict::Accept(handoff) => {
                        record.handoff = Some(handoff);
                        record.pending = None;
                        state.stop_actor(index);
                        let ended = if used == 0 {
                            SubagentState::HandedOff
                        } else {
                            SubagentState::Repaired
                        };
                        state.end_after(Some(logged), index, ended, None);
                    }
                    Verdict::Repair(violations) => {
                        state.log(vec![logged]);
                        let record = &mut state.records[index];
                        record.summary.repairs += 1;
                        record.pending = Some(violations.clone());
                        if let Some(actor) = &record.actor {
                            let _ = actor.cast(SubagentMsg::Repair(violations));
                        }
                    }
                    Verdict::Reject {
                        violations,
                        unverified,
                    } => {
                        record.summary.violations = violations;
                        record.unverified = Some(unverified);
                        record.pending = None;
                        state.stop_actor(index);
                        let why = format!("contract unmet after {used} repair turn(s)");
                        state.end_after(Some(logged), index, SubagentState::Rejected, Some(why));
                    }
                }
            }
            LeadMsg::Subagent {
                id,
                report:
                    SubagentReport::Failed {
                        reason,
                        observations,
                        spent,
                    },
            } => {
                let Some(index) = state.receive(&id, observations, spent) else {
                    return Ok(());
                };
                state.stop_actor(index);
                // A subagent that gives up while owing a repair leaves a rejected handoff.
                match state.records[index].pending.take() {
                    Some(violations) => {
                        state.records[index].summary.violations = violations;
                        state.end(index, SubagentState::Rejected, Some(reason));
                    }
                    None => state.end(index, SubagentState::Failed, Some(reason)),
                }
            }
            LeadMsg::Cancel => state.cancel(&myself),
            LeadMsg::LogFailed(error) => {
                if state.log_failed.is_none() {
                    state.log_failed = Some(error);
                }
                if !state.finished {
                    state.cancel(&myself);
                }
            }
            LeadMsg::Status(reply) => {
                let _ = reply.send(state.records.iter().map(|r| r.summary.clone()).collect());
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<LeadMsg>,
        message: SupervisionEvent,
        state: &mut LeadState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, failure) = match message {
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, None),
            SupervisionEvent::ActorFailed(cell, error) => (cell, Some(error.to_string())),
            _ => return Ok(()),
        };
        let Some(index) = state.by_actor.remove(&cell.get_id()) else {
            return Ok(());
        };
        state.records[index].alive = false;
        if !state.records[index].summary.state.ended() {
            let (ended, why) = match failure {
                Some(error) => (SubagentState::Failed, error),
                None if state.cancelled => {
                    (SubagentState::Cancelled, "the run was cancelled".into())
                }
                None => (SubagentState::Failed, "stopped without a handoff".into()),
            };
            state.end(index, ended, Some(why));
        }
        state.advance(&myself).await;
        Ok(())
    }
}
