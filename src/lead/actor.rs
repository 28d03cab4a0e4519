//! The lead actor: a thin shell that turns each message into a call on its state.

use std::collections::BTreeMap;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tracing::Instrument;

use crate::checkpoint::RunEvent;

use super::plan::Shard;
use super::report::evidence_digests;
use crate::event::Event;
use crate::handoff::{validate, Check};
use crate::report::SubagentState;
use crate::subagent::SubagentReport;

use super::state::LeadState;
use super::{journal, LeadArgs, LeadMsg};

pub(crate) struct LeadActor;

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
        Ok(LeadState::new(args, &myself))
    }

    async fn handle(
        &self,
        myself: ActorRef<LeadMsg>,
        message: LeadMsg,
        state: &mut LeadState,
    ) -> Result<(), ActorProcessingErr> {
        // Each message is handled inside the run's span.
        let span = state.span.clone();
        on_message(myself, message, state).instrument(span).await
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<LeadMsg>,
        message: SupervisionEvent,
        state: &mut LeadState,
    ) -> Result<(), ActorProcessingErr> {
        let span = state.span.clone();
        on_supervision(myself, message, state)
            .instrument(span)
            .await
    }
}

async fn on_message(
    myself: ActorRef<LeadMsg>,
    message: LeadMsg,
    state: &mut LeadState,
) -> Result<(), ActorProcessingErr> {
    {
        match message {
            LeadMsg::Run(reply) => state.start(reply, &myself).await,
            // A plan that comes after the run was cancelled before it planned is not taken.
            LeadMsg::Planned(_) if state.finished || state.planning_error.is_some() => {}
            LeadMsg::Planned(Err(error)) => {
                state.planning_error = Some(error);
                state.finish_if_done(&myself);
            }
            LeadMsg::Planned(Ok(mut planned)) => {
                state.lead_task = None;
                if let Some(turn) = planned.lead.take() {
                    state.lead_turn("plan", turn);
                }
                state.left_out = planned.left_out;
                state.not_searched = (
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
                let listed: Vec<(String, &Shard)> =
                    plan.iter().map(|(id, s)| (id.clone(), s)).collect();
                state.log(vec![journal::planned(
                    &listed,
                    &planned.reason,
                    &state.left_out,
                    &state.not_searched,
                )]);
                state.adopt_plan(plan, BTreeMap::new());
                state.emit(Event::RunPlanned {
                    run_id: state.config.run_id.clone(),
                    subagents: state.records.len(),
                });
                state.advance(&myself).await;
            }
            LeadMsg::Subagent {
                report: SubagentReport::ModelConfigured { config },
                ..
            } => {
                state.log(vec![RunEvent::ModelConfigured {
                    role: "subagents".into(),
                    config,
                }]);
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
                let tools = &state.config.tools;
                let events = calls
                    .iter()
                    .map(|c| journal::tool_called(&id, c, tools.read_only(&c.name)))
                    .collect();
                state.log(events);
            }
            LeadMsg::Subagent {
                id,
                report: SubagentReport::ToolsFinished { returned },
            } => {
                let events = returned
                    .into_iter()
                    .flat_map(|r| journal::tool_returned(&id, r))
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
                        cost_usd: state.records[index].summary.cost_usd,
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
                // Off the actor, in a blocking slot: the lead never waits here.
                let validate_off = move || {
                    let check = Check {
                        files: Some(files.as_ref()),
                        observations: Some(&log),
                        docs: None,
                    };
                    let parsed = validate(&text, &check);
                    // A handoff that may be accepted, whole or without the conclusions that
                    // broke the contract, has its evidence digested.
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
                // A validation stuck past the tool limit (a hung file system) gives its slot
                // back; its verdict comes when it ends.
                let limit = state.config.limits.tool_call;
                tokio::spawn(async move {
                    if let Err(blocked) =
                        crate::tools::run_blocking(limit, false, validate_off).await
                    {
                        tracing::warn!(?blocked, "a handoff's validation is held up");
                    }
                });
            }
            LeadMsg::HandoffChecked {
                id,
                parsed,
                digests,
            } => state.take_verdict(&id, parsed, digests),
            LeadMsg::Subagent {
                id,
                report:
                    SubagentReport::Failed {
                        reason,
                        observations,
                        spent,
                    },
            } => state.on_failed(&id, reason, observations, spent),
            // A handoff that comes after the run was cancelled is not taken.
            LeadMsg::Synthesised { .. } if state.cancelled => {}
            LeadMsg::Synthesised { outcome, turn } => state.on_synthesised(&myself, outcome, turn),
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
}

async fn on_supervision(
    myself: ActorRef<LeadMsg>,
    message: SupervisionEvent,
    state: &mut LeadState,
) -> Result<(), ActorProcessingErr> {
    {
        let (cell, failure) = match message {
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, None),
            SupervisionEvent::ActorFailed(cell, error) => (cell, Some(error.to_string())),
            _ => return Ok(()),
        };
        let Some(index) = state.by_actor.remove(&cell.get_id()) else {
            return Ok(());
        };
        // A stopped actor's handle is let go: its mailbox and ports are freed, and what the
        // lead keeps of a finished subagent is its record.
        state.records[index].actor = None;
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
