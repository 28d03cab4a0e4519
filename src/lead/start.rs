//! How a run starts: its start logged (or its resume, with what the resume found cut off,
//! waiting or stale), its policy taken from the logged constraints, and its plan made off the
//! actor — the tree sharded among explorers, one subtask per other role the task fans out,
//! the task's own subtasks, or the lead model's plan — or, resuming a planned run, taken up.

use std::sync::Arc;
use std::time::Instant;

use ractor::{ActorRef, RpcReplyPort};
use tracing::Instrument;

use super::report::plan_task;
use super::{journal, leader, LeadMsg, LeadState};
use crate::checkpoint::{EffectState, RunEvent, StoreError};
use crate::contracts::RoleId;
use crate::handoff::WorkspaceFiles;
use crate::policy::Policy;
use crate::report::Report;

impl LeadState {
    /// Takes the gate's policy from the checkpoint's constraints (nothing else can add one);
    /// citations are then read only where it lets files be read.
    fn adopt_policy(&mut self) {
        self.policy = Arc::new(Policy::from_constraints(
            &self.contexts.projector.checkpoint().constraints,
        ));
        if !self.policy.is_empty() {
            let workspace = self
                .config
                .workspace
                .as_ref()
                .map(|w| w.under(Arc::clone(&self.policy)));
            self.contexts.files = Arc::new(WorkspaceFiles::of(workspace));
        }
    }

    /// Starts the run: logs its start (or its resume, with what the resume found cut off or
    /// stale), then plans it off the actor — or, resuming a planned run, takes up its plan.
    pub(super) async fn start(
        &mut self,
        reply: RpcReplyPort<Result<Report, StoreError>>,
        myself: &ActorRef<LeadMsg>,
    ) {
        self.outside.reply = Some(reply);
        self.outside.started = Instant::now();
        if let Some(resumption) = self.resume.take() {
            // The constraints come back from the log, with the rules they were typed to.
            self.adopt_policy();
            self.journal.resumed_after = Some(resumption.after_seq);
            self.lead.lead_turns = resumption.lead_turns.clone();
            self.lead.earlier_lead = resumption.lead_model.clone();
            for (intent, call) in &resumption.unknown {
                self.config
                    .oversight
                    .unknown
                    .insert(intent.clone(), call.clone());
            }
            let mut events = vec![RunEvent::RunResumed {
                after_seq: resumption.after_seq,
            }];
            events.extend(journal::models_configured(&self.config));
            events.extend(journal::cut_off(&resumption.cut_off));
            // A call that waited for approval when the process died is asked again by its
            // restarted subagent; the request itself waits on.
            events.extend(
                resumption
                    .awaiting
                    .iter()
                    .map(|call| RunEvent::EffectChanged {
                        call_id: call.clone(),
                        from: EffectState::AwaitingApproval,
                        to: EffectState::Superseded,
                        evidence: None,
                        note: "the process died while it waited; its subagent starts again".into(),
                    }),
            );
            events.extend(resumption.stale.iter().map(|s| RunEvent::EvidenceStale {
                subagent: s.subagent.clone(),
                sources: s.sources.clone(),
                claims: s.claims.clone(),
            }));
            self.log(events);
            self.resume_approvals(myself);
            if !resumption.plan.is_empty() {
                self.fleet.left_out = resumption.left_out;
                self.fleet.not_searched = resumption.not_searched;
                for wave in resumption.waves {
                    self.push_wave(wave);
                }
                self.adopt_plan(resumption.plan, resumption.subagents);
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
        self.plan(myself);
    }

    /// Plans the run off the actor; the plan comes back as `Planned`.
    fn plan(&mut self, myself: &ActorRef<LeadMsg>) {
        let workspace = self
            .config
            .workspace
            .as_ref()
            .map(|w| w.under(Arc::clone(&self.policy)));
        let roots = self.policy.read_roots();
        let (agents, max) = (self.config.agents, self.config.max_subagents);
        let (shards, task) = (self.config.shards, self.config.task.clone());
        let me = myself.clone();
        let tokenizer = Arc::clone(&self.contexts.tokenizer);
        let lead = self.lead_model();
        let question = self.contexts.search_question.clone();
        let roles = self.assignable_roles();
        let planned_question = question.clone();
        let planning = async move {
            let roots_for_plan = roots.clone();
            let planned = tokio::task::spawn_blocking(move || {
                // The BPE vocabulary loads once (~0.2 s): here, not in a handler.
                let _ = crate::tokens::Tokenizer::count(tokenizer.as_ref(), "warm");
                let limits = (agents, max, shards);
                plan_task(
                    workspace.as_ref(),
                    &task,
                    &planned_question,
                    roots_for_plan.as_deref(),
                    limits,
                )
            })
            .await
            .unwrap_or_else(|e| Err(format!("planning failed: {e}")));
            // A lead model proposes the subtasks; the deterministic plan stands if its plan
            // does not.
            let planned = match (lead, planned) {
                (Some(lead), Ok(mut p)) if !p.shards.is_empty() => {
                    let tree = p
                        .walked
                        .then(|| leader::Tree::of(&p.files, roots.as_deref()));
                    let fallback = std::mem::take(&mut p.shards);
                    let asked = leader::Asked {
                        question: &question,
                        tree: tree.as_ref(),
                        roles: &roles,
                        max,
                        wave: None,
                        rules: None,
                    };
                    let (shards, reason, turn) =
                        leader::propose(&lead, &asked, fallback, &p.reason).await;
                    p.shards = shards;
                    p.reason = reason;
                    p.lead = Some(turn);
                    Ok(p)
                }
                (_, planned) => planned,
            };
            planned
        };
        // A panic while planning (a library's model) fails the run; it never leaves it waiting.
        let planning = async move {
            let planned = crate::subagent::CatchPanic(Box::pin(planning))
                .await
                .unwrap_or_else(|panic| Err(format!("planning failed: it panicked: {panic}")));
            let _ = me.cast(LeadMsg::Planned(planned));
        };
        let task = tokio::spawn(planning.instrument(self.outside.span.clone()));
        // Only a lead model's planning can take long enough to be worth cancelling.
        if self.config.lead_model.is_some() {
            self.lead.lead_task = Some(task);
        }
    }

    /// The roles a lead model may assign subtasks to: those the task names, each with its
    /// description.
    fn assignable_roles(&self) -> Vec<(RoleId, String)> {
        let spec = &self.config.task;
        let mut names: Vec<RoleId> = spec.roles.clone();
        if names.is_empty() && spec.subtasks.is_empty() && !spec.custom {
            names.push(RoleId::EXPLORER);
        }
        // A research task's sub-questions go to researchers.
        if names.is_empty() && spec.subtasks.is_empty() && spec.corpus.is_some() {
            names.push(RoleId::RESEARCHER);
        }
        for s in &spec.subtasks {
            if !names.contains(&s.role) {
                names.push(s.role.clone());
            }
        }
        names
            .into_iter()
            .map(|name| {
                let description = self
                    .config
                    .roles
                    .get(&name)
                    .map(|r| r.description.clone())
                    .unwrap_or_default();
                (name, description)
            })
            .collect()
    }
}
