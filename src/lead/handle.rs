//! The lead's handle: what callers (the coordinator, the CLI, tests) hold — start the run,
//! ask its status, cancel it. Messages stay private to the lead.

use ractor::{Actor, ActorRef};

use super::{LeadActor, LeadArgs, LeadMsg};
use crate::checkpoint::StoreError;
use crate::report::{Report, SubagentSummary};

/// Why a run gave no report.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LeadError {
    /// The run's log could not be read or written.
    #[error(transparent)]
    Store(StoreError),
    /// The lead stopped before it reported.
    #[error("the lead stopped without a report")]
    Stopped,
    /// The lead's actor is gone.
    #[error("the lead is gone: {0}")]
    Gone(String),
}

/// The handle callers hold: start the run, ask its status, cancel it.
#[derive(Clone)]
pub(crate) struct LeadHandle {
    actor: ActorRef<LeadMsg>,
}

impl LeadHandle {
    pub(crate) async fn spawn(
        args: LeadArgs,
    ) -> Result<(LeadHandle, tokio::task::JoinHandle<()>), String> {
        let (actor, join) = LeadActor::spawn(None, LeadActor, args)
            .await
            .map_err(|e| format!("could not start the lead: {e}"))?;
        Ok((LeadHandle { actor }, join))
    }

    /// Runs to the end (or to cancellation) and returns the report.
    pub(crate) async fn run(&self) -> Result<Report, LeadError> {
        match self.actor.call(LeadMsg::Run, None).await {
            Ok(ractor::rpc::CallResult::Success(report)) => report.map_err(LeadError::Store),
            Ok(_) => Err(LeadError::Stopped),
            Err(e) => Err(LeadError::Gone(e.to_string())),
        }
    }

    pub(crate) fn cancel(&self) {
        let _ = self.actor.cast(LeadMsg::Cancel);
    }

    /// A request for approval was settled: the lead logs it and tells its call.
    pub(crate) fn settled(&self, id: &str) {
        let _ = self.actor.cast(LeadMsg::ApprovalSettled(id.to_string()));
    }

    pub(crate) async fn status(&self) -> Option<Vec<SubagentSummary>> {
        match self.actor.call(LeadMsg::Status, None).await {
            Ok(ractor::rpc::CallResult::Success(list)) => Some(list),
            _ => None,
        }
    }
}
