//! The lead's state: its records of the run's subagents and the decisions taken on them —
//! what to spawn next, what to log, when to checkpoint, when the run is done. The actor
//! (actor.rs) only turns messages into calls here.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use ractor::{Actor, ActorId, ActorRef, RpcReplyPort};
use tokio::sync::mpsc::UnboundedSender;
use tracing::Instrument;

use crate::checkpoint::{Delta, LoggedEvent, Projector, RunEvent, StoreError};
use crate::context::{compile_selected, Compiled, ContextIndex, Field, FloorError, Focus, Orientation, RoleProfile};

use crate::tokens::{Bpe, CachedTokenizer};

use super::merge;
use super::plan::Shard;
use super::resume::Resumption;
use crate::event::Event;
use crate::handoff::Handoff;
use crate::handoff::{Violation, WorkspaceFiles};
use crate::policy::{Policy, Spent};
use crate::report::{Report, SubagentState, SubagentSummary};
use crate::source::ObservationLog;
use crate::subagent::{SubagentActor, SubagentArgs, SubagentMsg};

use super::report::plan_run;
use super::{journal, leader, plan, resume, LeadArgs, LeadMsg, RunConfig};

pub(super) struct SubagentRecord {
    pub(super) summary: SubagentSummary,
    pub(super) shard: Shard,
    pub(super) actor: Option<ActorRef<SubagentMsg>>,
    pub(super) handoff: Option<Handoff>,
    /// The searches it ran, for the merge: all a finished subagent keeps of its observation
    /// log.
    pub(super) searches: Vec<merge::Search>,
    /// Its whole observation log, kept only while the lead's model is to write the report
    /// (its handoff is checked against what the subagents observed).
    pub(super) observations: Option<ObservationLog>,
    pub(super) spent: Spent,
    /// Violations quoted back in a repair turn not yet answered.
    pub(super) pending: Option<Vec<Violation>>,
    /// What a rejected handoff said: unverified leads at most.
    pub(super) unverified: Option<Handoff>,
    /// Conclusions taken out of an accepted handoff: they alone broke the contract.
    pub(super) dropped: Vec<crate::handoff::Dropped>,
}

pub(crate) struct LeadState {
    pub(super) config: RunConfig,
    pub(super) events: Option<UnboundedSender<Event>>,
    pub(super) reply: Option<RpcReplyPort<Result<Report, StoreError>>>,
    pub(super) started: Instant,
    pub(super) planned: bool,
    pub(super) records: Vec<SubagentRecord>,
    pub(super) queue: VecDeque<usize>,
    pub(super) by_actor: HashMap<ActorId, usize>,
    /// Each record's index by subagent id.
    pub(super) by_id: HashMap<String, usize>,
    pub(super) cancelled: bool,
    pub(super) planning_error: Option<String>,
    /// The workspace's files, read once per run for checking citations.
    pub(super) files: Arc<WorkspaceFiles>,
    /// Where each append's acknowledgement goes to be checked (none: the run is not logged).
    pub(super) acks: Option<UnboundedSender<journal::Logged>>,
    /// When the last checkpoint was taken (they are taken at most once a second — less often
    /// as they take longer to store, never while one is on its way — and at the end).
    pub(super) checkpointed: Option<Instant>,
    /// Whether a checkpoint is on its way to the store, and how long the last took.
    pub(super) pace: Arc<journal::CheckpointPace>,
    /// The watcher of the acknowledgements: the first failure, once every one has come.
    pub(super) acked: Option<tokio::task::JoinHandle<Result<(), StoreError>>>,
    /// Set when the run's log could not be written: the run stops and reports this instead.
    pub(super) log_failed: Option<StoreError>,
    /// The resumption this lead starts from, taken when the run starts.
    pub(super) resume: Option<Resumption>,
    /// Set once the report is on its way.
    pub(super) finished: bool,
    /// The run's checkpoint, every event applied once as it is logged (from the log, on
    /// resume), for compiling contexts.
    pub(super) projector: Projector,
    /// The index contexts are selected through, synced with the projector before each spawn.
    pub(super) index: ContextIndex,
    /// The run's span: every message is handled in it; each subagent's span is its child.
    pub(super) span: tracing::Span,
    /// The question's content words, which every subagent's context is selected by.
    pub(super) question_terms: Vec<String>,
    /// On a resumed run: the effect changes logged since the resume (each restarted subagent's
    /// delta).
    pub(super) since_resume: Vec<LoggedEvent>,
    pub(super) next_seq: u64,
    /// Counts tokens for contexts, caching per block.
    pub(super) tokenizer: Arc<CachedTokenizer<Bpe>>,
    /// Set on a resumed run: the last event before the resume.
    pub(super) resumed_after: Option<u64>,
    /// Set once the second wave was considered.
    pub(super) second_wave_planned: bool,
    /// Set when a verifier was due but --max-subagents was reached.
    pub(super) verifier_skipped: bool,
    /// Directories the plan could not cover (logged with the plan, restored on resume).
    pub(super) left_out: Vec<String>,
    /// What the plan's walk left out of the tree (hidden and ignored entries, links): how
    /// many, and the first twenty (logged with the plan, restored on resume).
    pub(super) not_searched: (usize, Vec<String>),
    /// The gate's policy: the typed rules of the checkpoint's constraints, set when the run
    /// starts (its constraints logged, or read back on a resume).
    pub(super) policy: Arc<Policy>,
    /// The question without its binding sentences (they are constraints, not search terms):
    /// what briefs ask and contexts are selected by.
    pub(super) search_question: String,
    /// The lead model's turns (`plan`, `report`), in order.
    pub(super) lead_turns: Vec<(String, leader::LeadTurn)>,
    /// Set while the lead model writes the run's handoff.
    pub(super) synthesising: bool,
    /// On a resume: the lead model the log names (its turns count in the report's usage
    /// even when this process has none).
    pub(super) earlier_lead: Option<String>,
    /// The lead model's work in flight (planning, or writing the handoff): aborted on cancel.
    pub(super) lead_task: Option<tokio::task::JoinHandle<()>>,
    /// The lead model's handoff, or why it was not used.
    pub(super) synthesis: Option<Result<crate::handoff::Handoff, String>>,
}

impl LeadState {
    /// The state of a lead about to run: a resumed run's log applied to its projector (then
    /// let go), and the watcher of its appends.
    pub(super) fn new(args: LeadArgs, myself: &ActorRef<LeadMsg>) -> LeadState {
        let files = Arc::new(WorkspaceFiles::new(args.config.workspace.clone()));
        // A resumed run's projector was built off the runtime (`Resumption::prepare`).
        let mut args = args;
        let projector = args
            .resume
            .as_mut()
            .and_then(|r| r.projector.take())
            .unwrap_or_else(|| Projector::new(&args.config.run_id));
        let pace = Arc::new(journal::CheckpointPace::default());
        let (acks, acked) = match &args.config.log {
            Some(log) => {
                let (acks, acked) =
                    journal::watch_acks(myself.clone(), Arc::clone(log.store()), Arc::clone(&pace));
                (Some(acks), Some(acked))
            }
            None => (None, None),
        };
        let span = tracing::info_span!("run", run_id = %args.config.run_id);
        let search_question = crate::text::without_binding(&args.config.question);
        let question_terms = Focus::terms(&search_question);
        LeadState {
            config: args.config,
            events: args.events,
            reply: None,
            started: Instant::now(),
            planned: false,
            records: Vec::new(),
            queue: VecDeque::new(),
            by_actor: HashMap::new(),
            by_id: HashMap::new(),
            cancelled: false,
            planning_error: None,
            files,
            acks,
            acked,
            checkpointed: None,
            pace,
            log_failed: None,
            projector,
            index: ContextIndex::default(),
            span,
            question_terms,
            since_resume: Vec::new(),
            next_seq: args.resume.as_ref().map(|r| r.after_seq).unwrap_or(0),
            resume: args.resume,
            finished: false,
            tokenizer: Arc::new(CachedTokenizer::new(Bpe)),
            resumed_after: None,
            second_wave_planned: false,
            verifier_skipped: false,
            left_out: Vec::new(),
            not_searched: (0, Vec::new()),
            policy: Arc::new(Policy::default()),
            search_question,
            lead_turns: Vec::new(),
            synthesising: false,
            earlier_lead: None,
            lead_task: None,
            synthesis: None,
        }
    }

    pub(super) fn emit(&self, event: Event) {
        if let Some(events) = &self.events {
            let _ = events.send(event);
        }
    }

    /// Appends to the run's log, if there is one; durability is awaited before the report.
    pub(super) fn log(&mut self, events: Vec<RunEvent>) {
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
            tracing::debug!(
                seq = logged.seq,
                kind = logged.event.kind(),
                subagent = logged.event.subagent().unwrap_or(""),
                "logged"
            );
            if self.resumed_after.is_some() && matches!(event, RunEvent::EffectChanged { .. }) {
                self.since_resume.push(logged);
            }
        }
        if let Some(log) = &self.config.log {
            let ack = log.append(events);
            self.watch(journal::Logged::Ack(ack));
        }
    }

    /// Hands an acknowledgement or a checkpoint to the watcher. The watcher outlives every
    /// send but the last, which drops it; a send that fails leaves the item unchecked, so it
    /// is reported like a failed append, naming the store.
    fn watch(&mut self, item: journal::Logged) {
        let Some(acks) = &self.acks else { return };
        if acks.send(item).is_err() && self.log_failed.is_none() {
            let location = self
                .config
                .log
                .as_ref()
                .map(|log| log.store().location())
                .unwrap_or_default();
            self.log_failed = Some(StoreError::Write(format!(
                "{location}: the acknowledgement watcher stopped"
            )));
        }
    }

    /// A subagent's context, compiled for its role from the checkpoint of everything logged
    /// so far. A floor over the budget raises the budget while the subagent's model's window
    /// (less the room for its answer) allows; past that the context is refused.
    pub(super) fn context_for(
        &mut self,
        subagent: &str,
        scope: &[String],
        role: &RoleProfile,
    ) -> Result<(Compiled, Option<Orientation>), FloorError> {
        self.index.sync(self.projector.checkpoint());
        let checkpoint = self.projector.checkpoint();
        let focus = Focus {
            subagent: subagent.to_string(),
            scope: scope.to_vec(),
            terms: self.question_terms.clone(),
        };
        // Optional fields are selected; mandatory ones are compiled whole.
        let fields: Vec<Field> = role.optional.iter().map(|o| o.field).collect();
        let pick = self.index.select(checkpoint, &focus, &fields);
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
        // The lead's own context is sized against the lead's model.
        let model = match (&self.config.lead_model, role.name.as_str()) {
            (Some(lead), "lead") => lead,
            _ => &self.config.model,
        };
        let window = model
            .context_window()
            .saturating_sub(crate::subagent::ANSWER_TOKENS as usize);
        let compile =
            |budget| compile_selected(checkpoint, delta.as_ref(), role, budget, tokenizer, &pick);
        let compiled = match compile(role.budget) {
            Err(floor) if floor.floor <= window => compile(floor.floor),
            other => other,
        }?;
        Ok((compiled, orientation))
    }

    /// A checkpoint of everything logged so far, stored by the watcher once it is durable;
    /// `now` takes it whatever the interval (the end of the run).
    pub(super) fn checkpoint(&mut self, now: bool) {
        let due = now || self.pace.ready(self.checkpointed.map(|at| at.elapsed()));
        if due && self.acks.is_some() {
            self.checkpointed = Some(Instant::now());
            self.pace.taken();
            let checkpoint = Box::new(self.projector.checkpoint().clone());
            self.watch(journal::Logged::Checkpoint(checkpoint));
        }
    }

    /// Stops spawning and stops the running subagents; the run finishes with what was handed
    /// off.
    pub(super) fn cancel(&mut self, myself: &ActorRef<LeadMsg>) {
        self.cancelled = true;
        // The lead model's call in flight is aborted with its task.
        if let Some(task) = self.lead_task.take() {
            task.abort();
            if !self.planned && self.planning_error.is_none() {
                self.planning_error = Some("the run was cancelled before it was planned".into());
            }
            self.synthesising = false;
        }
        while let Some(index) = self.queue.pop_front() {
            self.end(index, SubagentState::Cancelled, None);
        }
        for &index in self.by_actor.values() {
            if let Some(actor) = &self.records[index].actor {
                actor.stop(Some("run cancelled".into()));
            }
        }
        self.finish_if_done(myself);
    }

    /// Takes a plan: a record per shard, restored from the log where its subagent had ended
    /// (nothing accepted is redone), queued otherwise.
    pub(super) fn adopt_plan(
        &mut self,
        plan: Vec<(String, Shard)>,
        mut restored: BTreeMap<String, resume::Restored>,
    ) {
        self.planned = true;
        for (id, shard) in plan {
            let index = self.records.len();
            self.by_id.entry(id.clone()).or_insert(index);
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
                    denials: 0,
                    cost_usd: None,
                },
                shard,
                actor: None,
                handoff: None,
                searches: Vec::new(),
                observations: None,
                spent: Spent::default(),
                pending: None,
                unverified: None,
                dropped: Vec::new(),
            };
            match kept {
                Some(r) => {
                    record.summary.state = r.state.unwrap_or(SubagentState::Failed);
                    record.summary.error = r.error;
                    record.summary.repairs = r.repairs;
                    record.summary.violations = r.violations;
                    record.handoff = r.handoff;
                    record.unverified = r.unverified;
                    record.dropped = r.dropped;
                    record.searches = merge::searches_of(&r.observations, &record.shard.paths);
                    if self.config.lead_model.is_some() {
                        record.observations = Some(r.observations);
                    }
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

    pub(super) fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// Subagents alive now: exactly those whose actor is still supervised.
    pub(super) fn running(&self) -> usize {
        self.by_actor.len()
    }

    pub(super) async fn fill(&mut self, myself: &ActorRef<LeadMsg>) {
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
            let scope = self.records[index].shard.paths.clone();
            let (context, orientation) = match self.context_for(&id, &scope, &role) {
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
                plan::verify_brief(&self.search_question, &record.shard)
            } else {
                plan::brief(&self.search_question, &record.shard)
            };
            let system = plan::with_contract(&context.text);
            if let Some(why) = self.unaffordable(&system, &brief, &role.tools) {
                // Spawning stops: this subagent and every one still queued are not started.
                self.end(index, SubagentState::Failed, Some(why.clone()));
                while let Some(queued) = self.queue.pop_front() {
                    self.end(queued, SubagentState::Failed, Some(why.clone()));
                }
                break;
            }
            let budget = self.policy.cap(self.config.budget);
            // The manifest's brief is the lead's instructions: the brief and the contract,
            // which travels in the system text.
            let spawned = journal::spawned(
                &record.summary.id,
                &record.shard.paths,
                &format!("{brief}\n\n{}", crate::contracts::HANDOFF),
                &context,
                budget,
            );
            // Its earlier attempts' denials (a resume) count toward the bound.
            let denied = self
                .projector
                .checkpoint()
                .denials
                .iter()
                .filter(|d| d.subagent == record.summary.id)
                .map(|d| d.consequence.clone())
                .collect();
            let args = SubagentArgs {
                id: record.summary.id.clone(),
                system,
                brief,
                orientation,
                denied,
                budget,
                model: Arc::clone(&self.config.model),
                tools: {
                    let offered: Vec<String> = role
                        .tools
                        .iter()
                        .filter(|t| self.policy.offers_tool(t))
                        .cloned()
                        .collect();
                    self.config.tools.only(&offered)
                },
                workspace: self.config.workspace.under(Arc::clone(&self.policy)),
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
                cost: Arc::clone(&self.config.cost),
                cost_cap: self.config.subagent_cost_cap,
                run_id: self.config.run_id.clone(),
                // Its spawn is the next event logged.
                span: tracing::info_span!(
                    parent: &self.span,
                    "subagent",
                    run_id = %self.config.run_id,
                    subagent = %record.summary.id,
                    role = %role.name,
                    seq = self.next_seq + 1,
                ),
            };
            match SubagentActor::spawn_linked(None, SubagentActor, args, myself.get_cell()).await {
                Ok((actor, _)) => {
                    self.log(vec![spawned]);
                    self.by_actor.insert(actor.get_id(), index);
                    let record = &mut self.records[index];
                    record.actor = Some(actor);
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

    pub(super) fn end(&mut self, index: usize, state: SubagentState, error: Option<String>) {
        self.end_after(None, index, state, error);
    }

    /// Ends a subagent; `verdict` (its handoff accepted or rejected) goes into the same append
    /// as its end, so a crash never leaves an accepted handoff without its subagent's end.
    pub(super) fn end_after(
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
            cost_usd: record.summary.cost_usd,
        };
        self.emit(event);
    }

    /// Takes what a subagent sent with its handoff or failure: its totals and observation log.
    pub(super) fn receive(
        &mut self,
        id: &str,
        observations: ObservationLog,
        spent: Spent,
    ) -> Option<usize> {
        let index = self.index_of(id)?;
        self.apply_spent(index, spent);
        let record = &mut self.records[index];
        record.searches = merge::searches_of(&observations, &record.shard.paths);
        if self.config.lead_model.is_some() {
            record.observations = Some(observations);
        }
        Some(index)
    }

    pub(super) fn stop_actor(&self, index: usize) {
        if let Some(actor) = &self.records[index].actor {
            actor.stop(None);
        }
    }

    pub(super) fn apply_spent(&mut self, index: usize, spent: Spent) {
        self.records[index].spent = spent;
        let s = &mut self.records[index].summary;
        s.tool_calls = spent.tool_calls;
        s.tokens = spent.tokens();
        s.model_turns = spent.model_turns;
        // Costs are shown only for a model with a price.
        s.cost_usd = self
            .config
            .model
            .price()
            .map(|_| crate::model::price::dollars(spent.cost_micros));
    }

    /// Spawns what it may; once the first wave has ended, plans the second (a verifier over
    /// doubted conclusions) at most once; finishes when nothing is left.
    pub(super) async fn advance(&mut self, myself: &ActorRef<LeadMsg>) {
        self.fill(myself).await;
        let idle = self.planned && self.queue.is_empty() && self.running() == 0;
        if idle && self.second_wave() {
            self.fill(myself).await;
        }
        self.finish_if_done(myself);
    }

    /// Whether the lead doubts anything: a finding of a handoff that broke the contract before
    /// a repair made it pass (the checkpoint's `doubts` the verifier is compiled with).
    pub(super) fn doubts_any(&self) -> bool {
        self.records
            .iter()
            .filter(|r| {
                matches!(
                    r.summary.state,
                    SubagentState::Repaired | SubagentState::PartlyAccepted
                )
            })
            .filter_map(|r| r.handoff.as_ref())
            .flat_map(|h| h.settled_conclusions.iter())
            .any(|c| c.kind == crate::handoff::ConclusionKind::Finding)
    }

    /// Plans the second wave once: a verifier subagent, compiled from the updated checkpoint,
    /// re-checks the doubted conclusions. False when there is nothing to verify.
    pub(super) fn second_wave(&mut self) -> bool {
        let planned_already = self.records.iter().any(|r| r.shard.role != "explorer");
        if self.cancelled || self.second_wave_planned || planned_already {
            return false;
        }
        self.second_wave_planned = true;
        if !self.doubts_any() || !self.config.roles.contains_key("verifier") {
            return false;
        }
        // The second wave counts against --max-subagents like the first.
        if self.records.len() >= self.config.max_subagents {
            self.verifier_skipped = true;
            return false;
        }
        let id = format!("sa{}", self.records.len() + 1);
        // The whole tree — or, under a read scope, all of it that may be read.
        let shard = Shard {
            paths: self.policy.read_roots().unwrap_or_else(|| vec![".".into()]),
            bytes: 0,
            role: "verifier".into(),
            question: None,
        };
        let mut listed: Vec<(String, &Shard)> = self
            .records
            .iter()
            .map(|r| (r.summary.id.clone(), &r.shard))
            .collect();
        listed.push((id.clone(), &shard));
        self.log(vec![journal::planned(
            &listed,
            "second wave: a verifier re-checks the conclusions of repaired handoffs",
            &self.left_out,
            &self.not_searched,
        )]);
        self.adopt_plan(vec![(id, shard)], BTreeMap::new());
        true
    }

    pub(super) fn finish_if_done(&mut self, myself: &ActorRef<LeadMsg>) {
        let done = !self.finished
            && (self.planned || self.planning_error.is_some())
            && self.queue.is_empty()
            && self.running() == 0;
        if !done || self.synthesising {
            return;
        }
        if self.wants_synthesis() {
            self.synthesise(myself);
            return;
        }
        let report = self.report();
        self.log(vec![RunEvent::RunFinished {
            cancelled: self.cancelled,
        }]);
        // The final checkpoint is the projector's own, taken rather than copied: nothing
        // compiles a context after the report, so the index goes too.
        self.index = ContextIndex::default();
        if self.acks.is_some() {
            let projector =
                std::mem::replace(&mut self.projector, Projector::new(&self.config.run_id));
            self.watch(journal::Logged::Checkpoint(Box::new(
                projector.into_checkpoint(),
            )));
        }
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

    /// A subagent that cannot go on: failed — or rejected, if it owed a repair.
    pub(super) fn on_failed(
        &mut self,
        id: &str,
        reason: String,
        observations: ObservationLog,
        spent: Spent,
    ) {
        let Some(index) = self.receive(id, observations, spent) else {
            return;
        };
        self.stop_actor(index);
        // A subagent that gives up while owing a repair leaves a rejected handoff.
        match self.records[index].pending.take() {
            Some(violations) => {
                self.records[index].summary.violations = violations;
                self.end(index, SubagentState::Rejected, Some(reason));
            }
            None => self.end(index, SubagentState::Failed, Some(reason)),
        }
    }

    /// Takes the gate's policy from the checkpoint's constraints (nothing else can add one);
    /// citations are then read only where it lets files be read.
    fn adopt_policy(&mut self) {
        self.policy = Arc::new(Policy::from_constraints(
            &self.projector.checkpoint().constraints,
        ));
        if !self.policy.is_empty() {
            self.files = Arc::new(WorkspaceFiles::new(
                self.config.workspace.under(Arc::clone(&self.policy)),
            ));
        }
    }

    /// Starts the run: logs its start (or its resume, with what the resume found cut off or
    /// stale), then plans it off the actor — or, resuming a planned run, takes up its plan.
    pub(super) async fn start(
        &mut self,
        reply: RpcReplyPort<Result<Report, StoreError>>,
        myself: &ActorRef<LeadMsg>,
    ) {
        self.reply = Some(reply);
        self.started = Instant::now();
        if let Some(resumption) = self.resume.take() {
            // The constraints come back from the log, with the rules they were typed to.
            self.adopt_policy();
            self.resumed_after = Some(resumption.after_seq);
            self.lead_turns = resumption.lead_turns.clone();
            self.earlier_lead = resumption.lead_model.clone();
            let mut events = vec![RunEvent::RunResumed {
                after_seq: resumption.after_seq,
            }];
            events.extend(journal::models_configured(&self.config));
            events.extend(journal::cut_off(&resumption.cut_off));
            events.extend(resumption.stale.iter().map(|s| RunEvent::EvidenceStale {
                subagent: s.subagent.clone(),
                sources: s.sources.clone(),
                claims: s.claims.clone(),
            }));
            self.log(events);
            if !resumption.plan.is_empty() {
                self.left_out = resumption.left_out;
                self.not_searched = resumption.not_searched;
                self.adopt_plan(resumption.plan, resumption.subagents);
                self.emit(Event::RunPlanned {
                    run_id: self.config.run_id.clone(),
                    subagents: self.records.len(),
                });
                self.advance(myself).await;
                return;
            }
        } else {
            let mut events = vec![journal::started(&self.config)];
            events.extend(journal::models_configured(&self.config));
            events.extend(journal::constraints(&self.config.constraints));
            self.log(events);
            self.adopt_policy();
        }
        let workspace = self.config.workspace.under(Arc::clone(&self.policy));
        let roots = self.policy.read_roots();
        let (agents, max) = (self.config.agents, self.config.max_subagents);
        let shards = self.config.shards;
        let me = myself.clone();
        let tokenizer = Arc::clone(&self.tokenizer);
        let lead = self.config.lead_model.clone();
        let meter = Arc::clone(&self.config.cost);
        let limits = self.config.limits;
        let question = self.search_question.clone();
        let planning = async move {
            let roots_for_plan = roots.clone();
            let planned = tokio::task::spawn_blocking(move || {
                // The BPE vocabulary loads once (~0.2 s): here, not in a handler.
                let _ = crate::tokens::Tokenizer::count(tokenizer.as_ref(), "warm");
                plan_run(&workspace, roots_for_plan.as_deref(), agents, max, shards)
            })
            .await
            .unwrap_or_else(|e| Err(format!("planning failed: {e}")));
            // A lead model proposes the subtasks; the shards stand if its plan does not.
            let planned = match (lead, planned) {
                (Some(model), Ok(mut p)) if !p.shards.is_empty() => {
                    let tree = leader::Tree::of(&p.files, roots.as_deref());
                    let fallback = std::mem::take(&mut p.shards);
                    let lead = leader::LeadModel {
                        model,
                        meter,
                        limits,
                    };
                    let (shards, reason, turn) =
                        leader::propose(&lead, &question, &tree, max, fallback, &p.reason).await;
                    p.shards = shards;
                    p.reason = reason;
                    p.lead = Some(turn);
                    Ok(p)
                }
                (_, planned) => planned,
            };
            let _ = me.cast(LeadMsg::Planned(planned));
        };
        let task = tokio::spawn(planning.instrument(self.span.clone()));
        // Only a lead model's planning can take long enough to be worth cancelling.
        if self.config.lead_model.is_some() {
            self.lead_task = Some(task);
        }
    }
}
