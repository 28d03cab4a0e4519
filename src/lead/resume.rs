//! Restoring a run from its log, pure: the settings it ran with, its plan, every subagent that
//! had ended (with its handoff, observations and spend, so nothing accepted is redone), and the
//! effects cut off while executing (to become outcome_unknown, never failed or retried).

use std::collections::BTreeMap;

use crate::checkpoint::{EffectState, LoggedEvent, RunEvent};
use crate::handoff::{Handoff, Violation};
use crate::policy::{Budget, Spent};
use crate::report::SubagentState;
use crate::source::ObservationLog;

use super::plan::Shard;

/// How the run was set up.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    pub(crate) question: String,
    pub(crate) root: String,
    pub(crate) agents: usize,
    pub(crate) max_subagents: usize,
    pub(crate) budget: Budget,
    pub(crate) repairs: u32,
    pub(crate) shards: Option<usize>,
}

/// A subagent as the log left it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Restored {
    pub(crate) state: Option<SubagentState>,
    pub(crate) error: Option<String>,
    pub(crate) handoff: Option<Handoff>,
    pub(crate) unverified: Option<Handoff>,
    pub(crate) violations: Vec<Violation>,
    pub(crate) repairs: u32,
    pub(crate) observations: ObservationLog,
    pub(crate) spent: Spent,
}

impl Restored {
    /// Whether its work is done and is kept: everything but a cancelled or unfinished one.
    pub(crate) fn is_done(&self) -> bool {
        matches!(
            self.state,
            Some(
                SubagentState::HandedOff
                    | SubagentState::Repaired
                    | SubagentState::Rejected
                    | SubagentState::Failed
            )
        )
    }
}

/// Everything a resumed run starts from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resumption {
    pub(crate) settings: Settings,
    /// Empty when the run was killed before it planned: the resumed lead plans afresh.
    pub(crate) plan: Vec<(String, Shard)>,
    pub(crate) subagents: BTreeMap<String, Restored>,
    pub(crate) after_seq: u64,
    /// Calls whose effect was executing when the log stopped.
    pub(crate) cut_off: Vec<String>,
}

/// Reads a run's events back into what a resume needs.
pub(crate) fn restore(events: &[LoggedEvent]) -> Result<Resumption, String> {
    let mut settings = None;
    let mut plan = Vec::new();
    let mut subagents: BTreeMap<String, Restored> = BTreeMap::new();
    let mut effects: BTreeMap<String, EffectState> = BTreeMap::new();
    for logged in events {
        match &logged.event {
            RunEvent::RunStarted {
                question,
                root,
                agents,
                max_subagents,
                budget,
                repairs,
                shards,
                ..
            } => {
                settings = Some(Settings {
                    shards: *shards,
                    question: question.clone(),
                    root: root.clone(),
                    agents: *agents,
                    max_subagents: *max_subagents,
                    budget: *budget,
                    repairs: *repairs,
                })
            }
            RunEvent::PlanRevised {
                subagents: planned, ..
            } => {
                plan = planned
                    .iter()
                    .map(|p| {
                        (
                            p.id.clone(),
                            Shard {
                                paths: p.scope.clone(),
                                bytes: 0,
                            },
                        )
                    })
                    .collect();
            }
            RunEvent::SubagentSpawned { subagent, .. } => {
                // A new attempt: what an earlier one saw no longer counts.
                subagents.insert(subagent.clone(), Restored::default());
            }
            RunEvent::ToolCalled {
                call_id, effect, ..
            } => {
                effects.insert(call_id.clone(), *effect);
            }
            RunEvent::ToolReturned {
                subagent,
                call_id,
                observations,
                effect,
                ..
            } => {
                effects.insert(call_id.clone(), *effect);
                subagents
                    .entry(subagent.clone())
                    .or_default()
                    .observations
                    .record(observations.iter().cloned());
            }
            RunEvent::EffectChanged { call_id, to, .. } => {
                effects.insert(call_id.clone(), *to);
            }
            RunEvent::HandoffAccepted {
                subagent,
                handoff,
                repairs,
                ..
            } => {
                let r = subagents.entry(subagent.clone()).or_default();
                r.handoff = Some(handoff.clone());
                r.repairs = *repairs;
            }
            RunEvent::HandoffRepairRequested { subagent, .. } => {
                subagents.entry(subagent.clone()).or_default().repairs += 1;
            }
            RunEvent::HandoffRejected {
                subagent,
                violations,
                unverified,
            } => {
                let r = subagents.entry(subagent.clone()).or_default();
                r.violations = violations.clone();
                r.unverified = Some(unverified.clone());
            }
            RunEvent::BudgetSpent { subagent, spent } => {
                subagents.entry(subagent.clone()).or_default().spent = *spent;
            }
            RunEvent::SubagentEnded {
                subagent,
                state,
                error,
            } => {
                let r = subagents.entry(subagent.clone()).or_default();
                r.state = Some(*state);
                r.error = error.clone();
            }
            _ => {}
        }
    }
    let settings = settings.ok_or("the log has no run_started event")?;
    let cut_off = effects
        .into_iter()
        .filter(|(_, state)| *state == EffectState::Executing)
        .map(|(call, _)| call)
        .collect();
    Ok(Resumption {
        settings,
        plan,
        subagents,
        after_seq: events.last().map(|e| e.seq).unwrap_or(0),
        cut_off,
    })
}
