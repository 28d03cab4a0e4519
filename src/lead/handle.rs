//! The lead's handle: what callers (the coordinator, the CLI, tests) hold — start the run,
//! ask its status, cancel it. Messages stay private to the lead.

use ractor::{Actor, ActorRef};

use super::{LeadActor, LeadArgs, LeadMsg};
use crate::coordinator::RunError;
use crate::report::{Report, SubagentSummary};

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
    pub(crate) async fn run(&self) -> Result<Report, RunError> {
        match self.actor.call(LeadMsg::Run, None).await {
            Ok(ractor::rpc::CallResult::Success(report)) => report.map_err(RunError::Store),
            Ok(_) => Err(RunError::Runtime(
                "the lead stopped without a report".into(),
            )),
            Err(e) => Err(RunError::Runtime(format!("the lead is gone: {e}"))),
        }
    }

    pub(crate) fn cancel(&self) {
        let _ = self.actor.cast(LeadMsg::Cancel);
    }

    pub(crate) async fn status(&self) -> Option<Vec<SubagentSummary>> {
        match self.actor.call(LeadMsg::Status, None).await {
            Ok(ractor::rpc::CallResult::Success(list)) => Some(list),
            _ => None,
        }
    }
}
