//! The lead's state: its records of the run's subagents and the decisions taken on them —
//! what to spawn next, what to log, when to checkpoint, when the run is done. The actor
//! (actor.rs) only turns messages into calls here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use ractor::{Actor, ActorRef};

use crate::checkpoint::{Delta, Projector, RunEvent};
use crate::context::{
    compile_selected, Compiled, ContextIndex, Field, FloorError, Focus, Orientation, RoleProfile,
};
use crate::contracts::RoleId;
use crate::transcript::CallId;

use crate::tokens::{Bpe, CachedTokenizer};

use super::merge;
use super::plan::Shard;
use super::resume::Resumption;
use crate::handoff::WorkspaceFiles;
use crate::policy::{Policy, Spent};
use crate::report::{SubagentState, SubagentSummary};
use crate::source::ObservationLog;
use crate::subagent::{SubagentActor, SubagentArgs};

use super::parts::{Contexts, Fleet, Journal, LeadWork, Outside, SubagentRecord};
use super::{journal, plan, resume, LeadArgs, LeadMsg, RunConfig};

pub(crate) struct LeadState {
    pub(super) config: RunConfig,
    /// Who hears of the run: its reply port, its event stream, its span and clock.
    pub(super) outside: Outside,
    /// Planning and spawning: the subagents, who waits, what the plan covers.
    pub(super) fleet: Fleet,
    /// The run's log: appends, their acknowledgements, checkpoints.
    pub(super) journal: Journal,
    /// What subagents' contexts are compiled from.
    pub(super) contexts: Contexts,
    /// The lead model's own work (planning, writing the handoff).
    pub(super) lead: LeadWork,
    /// The gate's policy: the typed rules of the checkpoint's constraints, set when the run
    /// starts (its constraints logged, or read back on a resume).
    pub(super) policy: Arc<Policy>,
    /// The resumption this lead starts from, taken when the run starts.
    pub(super) resume: Option<Resumption>,
    /// The run's requests for approval.
    pub(super) approvals: super::approvals::Book,
    pub(super) cancelled: bool,
    /// Set once the report is on its way.
    pub(super) finished: bool,
}

impl LeadState {
    /// The state of a lead about to run: a resumed run's log applied to its projector (then
    /// let go), and the watcher of its appends.
    pub(super) fn new(args: LeadArgs, myself: &ActorRef<LeadMsg>) -> LeadState {
        let files = Arc::new(WorkspaceFiles::of(args.config.workspace.clone()));
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
                let (acks, acked) = journal::watch_acks(
                    myself.clone(),
                    Arc::clone(log.store()),
                    Arc::clone(&pace),
                    args.feed.clone(),
                );
                (Some(acks), Some(acked))
            }
            None => (None, None),
        };
        let span = tracing::info_span!("run", run_id = %args.config.run_id);
        let search_question = crate::text::without_binding(&args.config.question);
        let question_terms = Focus::terms(&search_question);
        let approvals = args
            .resume
            .as_ref()
            .map(|r| super::approvals::Book::of_log(&r.approval_events))
            .unwrap_or_default();
        // The handle lists and decides a resumed run's requests from the moment it has it.
        approvals.share(&args.config.oversight);
        LeadState {
            outside: Outside {
                reply: None,
                started: Instant::now(),
                span,
            },
            fleet: Fleet::default(),
            journal: Journal {
                acks,
                feed: args.feed.clone(),
                pending: Vec::new(),
                checkpointed: None,
                pace,
                acked,
                log_failed: None,
                next_seq: args.resume.as_ref().map(|r| r.after_seq).unwrap_or(0),
                since_resume: Vec::new(),
                resumed_after: None,
            },
            contexts: Contexts {
                files,
                projector,
                index: ContextIndex::default(),
                tokenizer: Arc::new(CachedTokenizer::new(Bpe)),
                question_terms,
                search_question,
            },
            lead: LeadWork::default(),
            config: args.config,
            policy: Arc::new(Policy::default()),
            approvals,
            resume: args.resume,
            cancelled: false,
            finished: false,
        }
    }

    /// Sends what handling a message handed to the watcher, awaiting room in its bounded
    /// channel, then waits while the store's writer is too far behind: a slow reader of the
    /// run's events (the watcher publishes to them), a slow watcher or disk slows the run, and
    /// nothing is dropped.
    pub(super) async fn flush(&mut self) {
        for item in std::mem::take(&mut self.journal.pending) {
            let stopped = match &self.journal.acks {
                Some(acks) => acks.send(item).await.is_err(),
                None => false,
            };
            if stopped {
                self.watcher_stopped();
            }
        }
        if let Some(log) = &self.config.log {
            journal::writer_room(log.store().as_ref()).await;
        }
        if let Some(feed) = &self.journal.feed {
            feed.room(self.journal.next_seq).await;
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
        self.contexts
            .index
            .sync(self.contexts.projector.checkpoint());
        let checkpoint = self.contexts.projector.checkpoint();
        let focus = Focus {
            subagent: subagent.to_string(),
            scope: scope.to_vec(),
            terms: self.contexts.question_terms.clone(),
        };
        // Optional fields are selected; mandatory ones are compiled whole.
        let fields: Vec<Field> = role.optional.iter().map(|o| o.field).collect();
        let pick = self.contexts.index.select(checkpoint, &focus, &fields);
        // After a resume, what changed since for this subagent (its effects cut off by the
        // crash) comes as the delta, and the restarted subagent orients itself first.
        let own = |call: &str| CallId::subagent_of(call) == subagent;
        let delta = self
            .journal.resumed_after
            .map(|after| Delta {
                after_seq: after,
                events: self
                    .journal.since_resume
                    .iter()
                    .filter(|e| matches!(&e.event, RunEvent::EffectChanged { call_id, .. } if own(call_id)))
                    .cloned()
                    .collect(),
            })
            .filter(|d| !d.events.is_empty());
        let orientation = self
            .journal
            .resumed_after
            .and_then(|_| Orientation::for_subagent(checkpoint, subagent));
        let tokenizer = self.contexts.tokenizer.as_ref();
        // The lead's own context is sized against the lead's model.
        let model = match &self.config.lead_model {
            Some(lead) if role.name == RoleId::LEAD => Arc::clone(lead),
            _ => self.model_of(&role.name),
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

    /// Stops spawning and stops the running subagents; the run finishes with what was handed
    /// off.
    pub(super) fn cancel(&mut self, myself: &ActorRef<LeadMsg>) {
        self.cancelled = true;
        // The lead model's call in flight is aborted with its task.
        if let Some(task) = self.lead.lead_task.take() {
            task.abort();
            if !self.fleet.planned && self.fleet.planning_error.is_none() {
                self.fleet.planning_error =
                    Some("the run was cancelled before it was planned".into());
            }
            self.lead.synthesising = false;
            if std::mem::take(&mut self.lead.following) {
                self.fleet.stopped_because = Some("the run was cancelled".into());
            }
        }
        while let Some(index) = self.fleet.queue.pop_front() {
            self.end(index, SubagentState::Cancelled, None);
        }
        for &index in self.fleet.by_actor.values() {
            if let Some(actor) = &self.fleet.records[index].actor {
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
        self.fleet.planned = true;
        for (id, shard) in plan {
            let index = self.fleet.records.len();
            self.fleet.by_id.entry(id.clone()).or_insert(index);
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
                    self.fleet.records.push(record);
                    self.apply_spent(index, r.spent);
                }
                None if self.cancelled => {
                    record.summary.state = SubagentState::Cancelled;
                    self.fleet.records.push(record);
                }
                None => {
                    self.fleet.queue.push_back(index);
                    self.fleet.records.push(record);
                }
            }
        }
    }

    pub(super) fn index_of(&self, id: &str) -> Option<usize> {
        self.fleet.by_id.get(id).copied()
    }

    /// Subagents alive now: exactly those whose actor is still supervised.
    pub(super) fn running(&self) -> usize {
        self.fleet.by_actor.len()
    }

    pub(super) async fn fill(&mut self, myself: &ActorRef<LeadMsg>) {
        while !self.cancelled && self.running() < self.config.agents.max(1) {
            // A reader far behind holds the run between spawns too, not only between steps.
            if (self.journal.feed.as_ref()).is_some_and(|f| f.behind(self.journal.next_seq)) {
                self.flush().await;
            }
            let Some(index) = self.fleet.queue.pop_front() else {
                break;
            };
            let id = self.fleet.records[index].summary.id.clone();
            let Some(mut role) = self
                .config
                .roles
                .get(&self.fleet.records[index].shard.role)
                .cloned()
            else {
                let why = format!("no role profile `{}`", self.fleet.records[index].shard.role);
                self.end(index, SubagentState::Failed, Some(why));
                continue;
            };
            if role.name == RoleId::VERIFIER {
                role.tools = self.verifier_tools();
            }
            // Only the tools the policy offers: what its context and manifest list is what
            // it is given.
            role.tools.retain(|t| self.policy.offers_tool(t));
            let scope = self.fleet.records[index].shard.paths.clone();
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
            let record = &self.fleet.records[index];
            let brief = if role.name == RoleId::VERIFIER {
                plan::verify_brief(&self.contexts.search_question, &record.shard)
            } else {
                // A researcher is told what the others cover, so no query is run twice.
                let others: Vec<&str> = self
                    .fleet
                    .records
                    .iter()
                    .filter(|r| r.summary.id != record.summary.id && r.shard.role == role.name)
                    .filter_map(|r| r.shard.question.as_deref())
                    .collect();
                plan::brief(&self.contexts.search_question, &record.shard, &others)
            };
            let system = plan::with_contract(&context.text);
            let model = self.model_of(&role.name);
            if let Some(why) = self.unaffordable(&system, &brief, &role.tools, model.as_ref()) {
                // Spawning stops: this subagent and every one still queued are not started.
                self.end(index, SubagentState::Failed, Some(why.clone()));
                while let Some(queued) = self.fleet.queue.pop_front() {
                    self.end(queued, SubagentState::Failed, Some(why.clone()));
                }
                break;
            }
            let budget = self.policy.cap(role.limits.unwrap_or(self.config.budget));
            // The manifest's brief is the lead's instructions: the brief and the contract,
            // which travels in the system text.
            let spawned = journal::spawned(
                &record.summary.id,
                &record.shard.paths,
                &format!("{brief}\n\n{}", crate::contracts::HANDOFF),
                &context,
                budget,
            );
            let args =
                self.subagent_args(myself, index, &role, (system, brief), orientation, budget);
            match SubagentActor::spawn_linked(None, SubagentActor, args, myself.get_cell()).await {
                Ok((actor, _)) => {
                    self.log(vec![spawned]);
                    self.fleet.by_actor.insert(actor.get_id(), index);
                    let record = &mut self.fleet.records[index];
                    record.actor = Some(actor);
                    record.summary.state = SubagentState::Running;
                }
                Err(e) => self.end(
                    index,
                    SubagentState::Failed,
                    Some(format!("could not spawn: {e}")),
                ),
            }
        }
    }

    /// What a subagent is spawned with: its context and brief, the denials of its earlier
    /// attempts, its budget, the tools its role's profile names that the policy offers, and a
    /// workspace and a reporter of its own.
    fn subagent_args(
        &self,
        myself: &ActorRef<LeadMsg>,
        index: usize,
        role: &RoleProfile,
        (system, brief): (String, String),
        orientation: Option<Orientation>,
        budget: crate::policy::Budget,
    ) -> SubagentArgs {
        let record = &self.fleet.records[index];
        // Its earlier attempts' denials (a resume) count toward the bound.
        let denied = self
            .contexts
            .projector
            .checkpoint()
            .denials
            .iter()
            .filter(|d| d.subagent == record.summary.id)
            .map(|d| d.consequence.clone())
            .collect();
        SubagentArgs {
            id: record.summary.id.clone(),
            system,
            brief,
            orientation,
            denied,
            budget,
            model: self.model_of(&role.name),
            tools: self.config.tools.only(&role.tools),
            tool_context: {
                let cx =
                    crate::tools::ToolContext::new(&self.config.run_id, &record.summary.id, "");
                match &self.config.workspace {
                    Some(workspace) => cx.with_workspace(workspace.clone()),
                    None => cx,
                }
                .with_policy(Arc::clone(&self.policy))
                .with_time_limit(self.config.limits.tool_call)
            },
            oversee: crate::subagent::Oversee {
                role: role.name.clone(),
                reserved: role.approve.clone(),
                unknown: Arc::clone(&self.config.oversight.unknown),
            },
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
            feed: self.journal.feed.clone(),
            helpers: self.config.helpers.clone(),
            // Its spawn is the next event logged.
            span: tracing::info_span!(
                parent: &self.outside.span,
                "subagent",
                run_id = %self.config.run_id,
                subagent = %record.summary.id,
                role = %role.name,
                seq = self.journal.next_seq + 1,
            ),
        }
    }

    /// The tools a verifier rereads with: its role's that the run has and that are read-only
    /// (`read` for corpus passages in a research run) — or, with none of those (a job over the
    /// application's own tools), the read-only tools of the roles whose handoffs it checks.
    pub(super) fn verifier_tools(&self) -> Vec<String> {
        let tools = &self.config.tools;
        let known = tools.names();
        let own: Vec<String> = self
            .config
            .roles
            .get(&RoleId::VERIFIER)
            .map(|v| {
                v.tools
                    .iter()
                    .filter(|t| known.contains(t) && tools.read_only(t))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if !own.is_empty() {
            return own;
        }
        let mut borrowed: Vec<String> = Vec::new();
        let doubted = self.fleet.records.iter().filter(|r| r.doubted());
        for record in doubted {
            let Some(role) = self.config.roles.get(&record.shard.role) else {
                continue;
            };
            for tool in &role.tools {
                if tools.read_only(tool) && !borrowed.contains(tool) {
                    borrowed.push(tool.clone());
                }
            }
        }
        borrowed
    }

    /// The model a role's subagents use: its own, or the run's.
    pub(super) fn model_of(&self, role: &RoleId) -> Arc<dyn crate::model::Model> {
        Arc::clone(
            self.config
                .role_models
                .get(role)
                .unwrap_or(&self.config.model),
        )
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
        let record = &mut self.fleet.records[index];
        record.summary.state = state;
        if error.is_some() {
            record.summary.error = error;
        }
        let id = record.summary.id.clone();
        self.withdraw(Some(&id), "its subagent ended");
        let record = &self.fleet.records[index];
        let ended = journal::ended(
            &record.summary.id,
            state,
            record.summary.error.clone(),
            record.spent,
        );
        self.log(verdict.into_iter().chain(ended).collect());
        self.checkpoint(false);
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
        let record = &mut self.fleet.records[index];
        record.searches = merge::searches_of(&observations, &record.shard.paths);
        if self.config.lead_model.is_some() {
            record.observations = Some(observations);
        }
        Some(index)
    }

    pub(super) fn stop_actor(&self, index: usize) {
        if let Some(actor) = &self.fleet.records[index].actor {
            actor.stop(None);
        }
    }

    pub(super) fn apply_spent(&mut self, index: usize, spent: Spent) {
        self.fleet.records[index].spent = spent;
        let s = &mut self.fleet.records[index].summary;
        s.tool_calls = spent.tool_calls;
        s.tokens = spent.tokens();
        s.model_turns = spent.model_turns;
        // Costs are shown only for a model with a price.
        let role = self.fleet.records[index].shard.role.clone();
        self.fleet.records[index].summary.cost_usd = self
            .model_of(&role)
            .price()
            .map(|_| crate::model::price::dollars(spent.cost_micros));
    }

    /// Spawns what it may; once the first wave has ended, plans the second (a verifier over
    /// doubted conclusions) at most once; finishes when nothing is left.
    pub(super) async fn advance(&mut self, myself: &ActorRef<LeadMsg>) {
        self.fill(myself).await;
        let idle = self.fleet.planned && self.fleet.queue.is_empty() && self.running() == 0;
        if idle && !self.lead.following {
            // With a lead model the next wave may be planned off the actor (`following`):
            // no verifier is planned, and the run does not finish, until it is.
            let planned = self.next_wave(myself);
            if planned || (!self.lead.following && self.second_wave()) {
                self.fill(myself).await;
            }
        }
        self.finish_if_done(myself);
    }

    /// Whether the lead doubts anything: a finding of a handoff that broke the contract before
    /// a repair made it pass, or that rests on corpus passages (the checkpoint's `doubts` the
    /// verifier is compiled with).
    pub(super) fn doubts_any(&self) -> bool {
        self.fleet
            .records
            .iter()
            .filter(|r| r.doubted())
            .filter_map(|r| r.handoff.as_ref())
            .flat_map(|h| h.settled_conclusions.iter())
            .any(|c| c.kind == crate::handoff::ConclusionKind::Finding)
    }

    /// Plans the second wave once: a verifier subagent, compiled from the updated checkpoint,
    /// re-checks the doubted conclusions. False when there is nothing to verify.
    pub(super) fn second_wave(&mut self) -> bool {
        // A verifier planned before a resume is the second wave already.
        let planned_already = self
            .fleet
            .records
            .iter()
            .any(|r| r.shard.role == RoleId::VERIFIER);
        if self.cancelled || self.fleet.second_wave_planned || planned_already {
            return false;
        }
        self.fleet.second_wave_planned = true;
        let Some(verifier) = self.config.roles.get(&RoleId::VERIFIER) else {
            return false;
        };
        if !self.doubts_any() {
            return false;
        }
        // A verifier rereads with its role's tools, or the read-only tools of the roles it
        // checks: with neither it cannot.
        if self.verifier_tools().is_empty() {
            let tools = self.config.tools.names();
            self.fleet.verifier_skipped = Some(format!(
                "neither the verifier role's tools ({}) nor a read-only tool of the roles it would check are among the run's tools ({})",
                verifier.tools.join(", "),
                tools.join(", ")
            ));
            return false;
        }
        // The second wave counts against --max-subagents like the first.
        if self.fleet.records.len() >= self.config.max_subagents {
            self.fleet.verifier_skipped = Some(format!(
                "--max-subagents {} was reached before the verifier could be spawned",
                self.config.max_subagents
            ));
            return false;
        }
        let id = format!("sa{}", self.fleet.records.len() + 1);
        // The whole tree — or, under a read scope, all of it that may be read (no tree: a
        // job's verifier rereads with its tools).
        let whole = match self.config.workspace {
            Some(_) => vec![".".to_string()],
            None => Vec::new(),
        };
        let shard = Shard {
            paths: self.policy.read_roots().unwrap_or(whole),
            bytes: 0,
            role: RoleId::VERIFIER,
            question: None,
        };
        let mut listed: Vec<(String, &Shard)> = self
            .fleet
            .records
            .iter()
            .map(|r| (r.summary.id.clone(), &r.shard))
            .collect();
        listed.push((id.clone(), &shard));
        self.log(vec![journal::planned(
            &listed,
            "second wave: a verifier re-checks the conclusions of repaired handoffs and the passages research conclusions rest on",
            &self.fleet.left_out,
            &self.fleet.not_searched,
        )]);
        self.adopt_plan(vec![(id, shard)], BTreeMap::new());
        true
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
        match self.fleet.records[index].pending.take() {
            Some(violations) => {
                self.fleet.records[index].summary.violations = violations;
                self.end(index, SubagentState::Rejected, Some(reason));
            }
            None => self.end(index, SubagentState::Failed, Some(reason)),
        }
    }
}
