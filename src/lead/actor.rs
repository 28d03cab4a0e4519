//! The lead actor: a thin shell that turns each message into a call on its state.

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tracing::Instrument;

use super::state::LeadState;
use super::{LeadArgs, LeadMsg};

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
        _state: &mut LeadState,
    ) -> Result<(), ActorProcessingErr> {
        on_supervision(&myself, message);
        Ok(())
    }
}

async fn on_message(
    myself: ActorRef<LeadMsg>,
    message: LeadMsg,
    state: &mut LeadState,
) -> Result<(), ActorProcessingErr> {
    // The run has ended: what its subagents, timers or the application still send changes
    // nothing, and nothing is logged after `run_finished`.
    if state.finished && !matches!(message, LeadMsg::Status(_) | LeadMsg::LogFailed(_)) {
        return Ok(());
    }
    match message {
        LeadMsg::Run(reply) => state.start(reply, &myself).await,
        LeadMsg::Planned(planned) => state.on_planned(&myself, planned).await,
        LeadMsg::Subagent { id, report } => state.on_report(&myself, id, report),
        LeadMsg::Stopped { actor, failure } => state.on_stopped(&myself, actor, failure).await,
        LeadMsg::HandoffChecked {
            id,
            parsed,
            digests,
        } => state.take_verdict(&id, parsed, digests),
        LeadMsg::Synthesised { outcome, turn } => state.on_synthesised(&myself, outcome, turn),
        LeadMsg::WavePlanned {
            shards,
            turn,
            last_added,
        } => {
            state
                .on_wave_planned(&myself, shards, turn, last_added)
                .await
        }
        LeadMsg::Cancel => state.cancel(&myself),
        LeadMsg::ApprovalSettled(id) => state.sync(&id),
        LeadMsg::ApprovalExpired(id) => state.on_expired(&id),
        LeadMsg::LogFailed(error) => state.on_log_failed(&myself, error),
        LeadMsg::Status(reply) => {
            let _ = reply.send(state.status());
        }
    }
    Ok(())
}

/// A supervision event overtakes the messages already queued (ractor gives it priority): a
/// subagent's stop is queued behind the reports it sent before it stopped.
fn on_supervision(myself: &ActorRef<LeadMsg>, message: SupervisionEvent) {
    let stopped = match message {
        SupervisionEvent::ActorTerminated(cell, _, _) => LeadMsg::Stopped {
            actor: cell.get_id(),
            failure: None,
        },
        SupervisionEvent::ActorFailed(cell, error) => LeadMsg::Stopped {
            actor: cell.get_id(),
            failure: Some(error.to_string()),
        },
        _ => return,
    };
    // The lead is stopping when this fails: nothing waits on the stop.
    let _ = myself.cast(stopped);
}
