//! A stored run's branches and withdrawals over HTTP: `POST /v1/runs/{id}/fork`,
//! `/merge` and `/forget`, each the library's operation ([`crate::Coordinator::fork`],
//! [`crate::Coordinator::merge`], [`crate::Coordinator::forget`]) on the server's state, for
//! runs under the roots it allows.

use std::sync::Arc;

use serde_json::{json, Value};

use super::problem::Problem;
use super::request::{ForgetRequest, ForkRequest, MergeRequest};
use super::Server;
use crate::checkpoint::EventStore;
use crate::coordinator::Coordinator;

impl Server {
    /// A coordinator on the server's state, for operations on stored runs.
    fn stored(&self) -> Coordinator {
        Coordinator::builder()
            .store(Arc::clone(&self.inner.store) as Arc<dyn EventStore>)
            .build()
    }

    /// Forks a run under an allowed root: the new run's id.
    pub async fn fork(&self, run_id: &str, request: ForkRequest) -> Result<Value, Problem> {
        self.scope(run_id).await?;
        let id = self
            .stored()
            .fork(run_id, request.at, request.question.as_deref())
            .await?;
        Ok(json!({ "run_id": id, "parent": run_id, "at_seq": request.at }))
    }

    /// Merges two runs under allowed roots: the new run and the conflicts.
    pub async fn merge(&self, run_id: &str, request: MergeRequest) -> Result<Value, Problem> {
        self.scope(run_id).await?;
        self.scope(&request.with).await?;
        let merged = self.stored().merge(run_id, &request.with).await?;
        Ok(json!({ "run_id": merged.run_id, "conflicts": merged.conflicts }))
    }

    /// Withdraws a source of a run under an allowed root: its tombstone.
    pub async fn forget(&self, run_id: &str, request: ForgetRequest) -> Result<Value, Problem> {
        self.scope(run_id).await?;
        let tombstone = self
            .stored()
            .forget(run_id, &request.source, &request.reason)
            .await?;
        // The report kept for the run holds the withdrawn text: it goes.
        let state = self.inner.config.state.clone();
        let id = run_id.to_string();
        super::runs::blocking(move || {
            super::reports::drop_report(&state, &id).map_err(Problem::internal)
        })
        .await?;
        Ok(json!({ "run_id": run_id, "tombstone": tombstone }))
    }
}
