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
use crate::checkpoint::RunEvent;
use crate::event::Event;
use crate::handoff::{validate, Check};
use crate::subagent::SubagentReport;

impl LeadState {
    /// The plan came in: logged, adopted, and the first subagents spawned.
    pub(super) async fn on_planned(&mut self, myself: &ActorRef<LeadMsg>, mut planned: Planned) {
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
        self.adopt_plan(plan, BTreeMap::new());
        self.emit(Event::RunPlanned {
            run_id: self.config.run_id.clone(),
            subagents: self.fleet.records.len(),
        });
        self.advance(myself).await;
    }

    /// A subagent reported.
    pub(super) fn on_report(
        &mut self,
        myself: &ActorRef<LeadMsg>,
        id: String,
        report: SubagentReport,
    ) {
        match report {
            SubagentReport::ModelConfigured { config } => {
                self.log(vec![RunEvent::ModelConfigured {
                    role: "subagents".into(),
                    config,
                }]);
            }
            SubagentReport::WindowCompacted { note } => {
                self.log(vec![journal::window_compacted(id, note)]);
            }
            SubagentReport::ToolsStarted { calls } => {
                let tools = &self.config.tools;
                let events = calls
                    .iter()
                    .map(|c| journal::tool_called(&id, c, tools.read_only(&c.name)))
                    .collect();
                self.log(events);
            }
            SubagentReport::ToolsFinished { returned } => {
                let events = returned
                    .into_iter()
                    .flat_map(|r| journal::tool_returned(&id, r))
                    .collect();
                self.log(events);
            }
            SubagentReport::Progressed { spent } => {
                if let Some(index) = self.index_of(&id) {
                    self.apply_spent(index, spent);
                    self.emit(Event::SubagentProgressed {
                        id,
                        tool_calls: spent.tool_calls,
                        tokens: spent.tokens(),
                        cost_usd: self.fleet.records[index].summary.cost_usd,
                    });
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
        let me = myself.clone();
        let validate_off = move || {
            let check = Check {
                files: Some(files.as_ref()),
                observations: Some(&log),
                docs: None,
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
