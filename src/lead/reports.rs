//! What the lead does with what it is told: a plan that came in, and each report of a
//! subagent — the events it logs, the spending it counts, and the handoff check it starts off
//! the actor.

use std::collections::BTreeMap;
use std::sync::Arc;

use ractor::ActorRef;

use super::plan::Shard;
use super::report::{evidence_digests, Planned};
use super::state::LeadState;
use super::{journal, LeadMsg};
use crate::checkpoint::{EffectState, RunEvent, StoreError};
use crate::handoff::{validate, Check};
use crate::report::SubagentState;
use crate::subagent::SubagentReport;

impl LeadState {
    /// Planning ended: a plan is logged, adopted, and its first subagents spawned; a tree that
    /// could not be planned ends the run. A plan that comes after the run was cancelled before
    /// it planned is not taken.
    pub(super) async fn on_planned(
        &mut self,
        myself: &ActorRef<LeadMsg>,
        planned: Result<Planned, String>,
    ) {
        if self.finished || self.fleet.planning_error.is_some() {
            return;
        }
        let mut planned = match planned {
            Ok(planned) => planned,
            Err(error) => {
                self.fleet.planning_error = Some(error);
                self.finish_if_done(myself);
                return;
            }
        };
        self.lead.lead_task = None;
        if let Some(turn) = planned.lead.take() {
            self.lead_turn("plan", turn);
        }
        self.fleet.left_out = planned.left_out;
        self.fleet.not_searched = (
            planned.not_searched.len(),
            planned
                .not_searched
                .into_iter()
                .take(crate::source::NOT_SEARCHED_NAMED)
                .collect(),
        );
        let plan: Vec<(String, Shard)> = planned
            .shards
            .into_iter()
            .enumerate()
            .map(|(i, shard)| (format!("sa{}", i + 1), shard))
            .collect();
        let listed: Vec<(String, &Shard)> = plan.iter().map(|(id, s)| (id.clone(), s)).collect();
        self.log(vec![journal::planned(
            &listed,
            &planned.reason,
            &self.fleet.left_out,
            &self.fleet.not_searched,
        )]);
        self.push_wave(super::waves::WavePlan {
            n: 1,
            ids: plan.iter().map(|(id, _)| id.clone()).collect(),
        });
        self.adopt_plan(plan, BTreeMap::new());
        self.advance(myself).await;
    }

    /// The subagents as they stand.
    pub(super) fn status(&self) -> Vec<crate::report::SubagentSummary> {
        self.fleet
            .records
            .iter()
            .map(|r| r.summary.clone())
            .collect()
    }

    /// The run's log could not be written: the run stops, and this is its result.
    pub(super) fn on_log_failed(&mut self, myself: &ActorRef<LeadMsg>, error: StoreError) {
        if self.journal.log_failed.is_none() {
            self.journal.log_failed = Some(error);
        }
        if !self.finished {
            self.cancel(myself);
        }
    }

    /// A subagent's actor stopped: its handle is let go (its mailbox and ports freed; what
    /// the lead keeps of a finished subagent is its record), and one that had not ended is
    /// recorded as failed — or cancelled, when the run was.
    pub(super) async fn on_stopped(
        &mut self,
        myself: &ActorRef<LeadMsg>,
        actor: ractor::ActorId,
        failure: Option<String>,
    ) {
        let Some(index) = self.fleet.by_actor.remove(&actor) else {
            return;
        };
        self.fleet.records[index].actor = None;
        if !self.fleet.records[index].summary.state.ended() {
            let (ended, why) = match failure {
                Some(error) => (SubagentState::Failed, error),
                None if self.cancelled => {
                    (SubagentState::Cancelled, "the run was cancelled".into())
                }
                None => (SubagentState::Failed, "stopped without a handoff".into()),
            };
            self.end(index, ended, Some(why));
        }
        self.advance(myself).await;
    }

    /// A subagent reported.
    pub(super) fn on_report(
        &mut self,
        myself: &ActorRef<LeadMsg>,
        id: String,
        report: SubagentReport,
    ) {
        // A call reported by a subagent the lead has ended already (its time or budget ran
        // out, the run was cancelled: its calls were stopped with it) is not made: nothing is
        // logged of it, nothing is asked, and the answer it waits on is dropped.
        let gone = self
            .index_of(&id)
            .is_none_or(|i| self.fleet.records[i].summary.state.ended());
        let call = matches!(
            report,
            SubagentReport::ToolCalls { .. } | SubagentReport::GrantUsed { .. }
        );
        if gone && call {
            return;
        }
        match report {
            SubagentReport::ModelConfigured { config } => {
                // Logged under the role whose own model it is, or as the run's.
                let role = self
                    .index_of(&id)
                    .map(|i| self.fleet.records[i].shard.role.clone())
                    .filter(|role| self.config.role_models.contains_key(role))
                    .map_or_else(|| "subagents".to_string(), |role| role.to_string());
                self.log(vec![RunEvent::ModelConfigured { role, config }]);
            }
            SubagentReport::WindowCompacted { note } => {
                self.log(vec![journal::window_compacted(id, note)]);
            }
            SubagentReport::Helped { event } => self.log(vec![event]),
            SubagentReport::ToolCalls {
                calls,
                state,
                asks,
                durable,
            } => {
                let tools = &self.config.tools;
                let events = calls
                    .iter()
                    .map(|c| journal::tool_called(&id, c, tools.read_only(&c.name), state))
                    .collect();
                let started: Vec<String> = calls
                    .iter()
                    .filter(|c| state == EffectState::Executing && !tools.read_only(&c.name))
                    .map(|c| c.id.clone())
                    .collect();
                self.log(events);
                self.track_running(&id, started, false);
                if let Some(durable) = durable {
                    self.when_durable(durable);
                }
                if !asks.is_empty() {
                    self.on_asks(&id, asks, myself);
                }
            }
            SubagentReport::GrantUsed {
                call_id,
                approval_id,
                durable,
            } => {
                if self.grant_used(&id, &call_id, &approval_id) {
                    self.track_running(&id, vec![call_id], false);
                    self.when_durable(durable);
                }
            }
            SubagentReport::ToolsFinished { returned } => {
                let calls = returned.iter().map(|r| r.call_id.clone()).collect();
                self.track_running(&id, calls, true);
                let events = returned
                    .into_iter()
                    .flat_map(|r| journal::tool_returned(&id, r))
                    .collect();
                self.log(events);
            }
            SubagentReport::ModelReturned { spent, stop } => {
                if let Some(index) = self.index_of(&id) {
                    self.apply_spent(index, spent);
                    self.log(vec![RunEvent::ModelReturned {
                        subagent: id,
                        spent,
                        stop,
                    }]);
                }
            }
            SubagentReport::HandedOff {
                text,
                observations,
                spent,
            } => {
                let log = observations.clone();
                if self.receive(&id, observations, spent).is_some() {
                    self.check_handoff(myself, id, text, log);
                }
            }
            SubagentReport::Failed {
                reason,
                observations,
                spent,
            } => self.on_failed(&id, reason, observations, spent),
        }
    }

    /// Checks a handoff against the contract off the actor, in a blocking slot: the lead never
    /// waits here; the verdict comes back as `HandoffChecked`. A validation stuck past the tool
    /// limit (a hung file system) gives its slot back; its verdict comes when it ends.
    fn check_handoff(
        &self,
        myself: &ActorRef<LeadMsg>,
        id: String,
        text: String,
        log: crate::source::ObservationLog,
    ) {
        let files = Arc::clone(&self.contexts.files);
        let docs = self.config.doc_ids.clone();
        let me = myself.clone();
        let validate_off = move || {
            let check = Check {
                files: Some(files.as_ref()),
                observations: Some(&log),
                docs: docs.as_deref(),
            };
            let parsed = validate(&text, &check);
            // A handoff that may be accepted, whole or without the conclusions that broke the
            // contract, has its evidence digested.
            let digests = if parsed.violations.iter().all(|v| v.conclusion.is_some()) {
                evidence_digests(
                    &parsed.handoff,
                    files.as_ref() as &dyn crate::handoff::Files,
                    &log,
                )
            } else {
                BTreeMap::new()
            };
            let _ = me.cast(LeadMsg::HandoffChecked {
                id,
                parsed,
                digests,
            });
        };
        let limit = self.config.limits.tool_call;
        tokio::spawn(async move {
            if let Err(blocked) = crate::tools::run_blocking(limit, false, validate_off).await {
                tracing::warn!(?blocked, "a handoff's validation is held up");
            }
        });
    }
}
