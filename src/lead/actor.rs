//! The lead actor: a thin shell that turns each message into a call on its state.

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tracing::Instrument;

use super::state::LeadState;
use super::{LeadArgs, LeadMsg};
use crate::report::SubagentState;

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
        let span = state.outside.span.clone();
        let handled = on_message(myself, message, state)
            .instrument(span.clone())
            .await;
        state.flush().instrument(span).await;
        handled
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<LeadMsg>,
        message: SupervisionEvent,
        state: &mut LeadState,
    ) -> Result<(), ActorProcessingErr> {
        let span = state.outside.span.clone();
        let handled = on_supervision(myself, message, state)
            .instrument(span.clone())
            .await;
        state.flush().instrument(span).await;
        handled
    }
}

async fn on_message(
    myself: ActorRef<LeadMsg>,
    message: LeadMsg,
    state: &mut LeadState,
) -> Result<(), ActorProcessingErr> {
    match message {
        LeadMsg::Run(reply) => state.start(reply, &myself).await,
        // A plan that comes after the run was cancelled before it planned is not taken.
        LeadMsg::Planned(_) if state.finished || state.fleet.planning_error.is_some() => {}
        LeadMsg::Planned(Err(error)) => {
            state.fleet.planning_error = Some(error);
            state.finish_if_done(&myself);
        }
        LeadMsg::Planned(Ok(planned)) => state.on_planned(&myself, planned).await,
        LeadMsg::Subagent { id, report } => state.on_report(&myself, id, report),
        LeadMsg::HandoffChecked {
            id,
            parsed,
            digests,
        } => state.take_verdict(&id, parsed, digests),
        // A handoff that comes after the run was cancelled is not taken.
        LeadMsg::Synthesised { .. } if state.cancelled => {}
        LeadMsg::Synthesised { outcome, turn } => state.on_synthesised(&myself, outcome, turn),
        LeadMsg::Cancel => state.cancel(&myself),
        LeadMsg::LogFailed(error) => {
            if state.journal.log_failed.is_none() {
                state.journal.log_failed = Some(error);
            }
            if !state.finished {
                state.cancel(&myself);
            }
        }
        LeadMsg::Status(reply) => {
            let _ = reply.send(
                state
                    .fleet
                    .records
                    .iter()
                    .map(|r| r.summary.clone())
                    .collect(),
            );
        }
    }
    Ok(())
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
        let Some(index) = state.fleet.by_actor.remove(&cell.get_id()) else {
            return Ok(());
        };
        // A stopped actor's handle is let go: its mailbox and ports are freed, and what the
        // lead keeps of a finished subagent is its record.
        state.fleet.records[index].actor = None;
        if !state.fleet.records[index].summary.state.ended() {
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
