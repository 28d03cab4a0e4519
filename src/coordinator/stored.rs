//! Operations on a stored run, through the coordinator's store: withdrawing a source
//! ([`Coordinator::forget`]).

use super::{Coordinator, RunError};
use crate::checkpoint::{tombstone, RunEvent, Tombstone};
use crate::source::SourceId;

impl Coordinator {
    /// Withdraws a source from a stored run (`baton forget`): one `source_forgotten` event
    /// records its tombstone — id, digest, classification, `reason`, the decisions it
    /// influenced — and from then on no context, brief or report shows its text, only that it
    /// is unavailable; a resumed run's report holds each conclusion that cited it as an open
    /// item. Nothing logged before is rewritten. Refused ([`RunError::Refused`]) for a source
    /// that does not parse, that no conclusion of the run cites or that is withdrawn already,
    /// and for an empty reason; the run is claimed while it is written, so a run another
    /// process holds is refused too.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// let dir = baton::testing::fixture_tree();
    /// let store = Arc::new(baton::testing::MemoryStore::new());
    /// let coordinator = baton::Coordinator::builder().store(store.clone()).build();
    /// let report = coordinator.run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let cited = report.handoff.settled_conclusions[0].sources[0].to_string();
    /// let tomb = coordinator.forget(&report.run_id, &cited, "licence withdrawn").await.unwrap();
    /// assert_eq!((tomb.source.as_str(), tomb.reason.as_str()), (cited.as_str(), "licence withdrawn"));
    /// let again = coordinator.forget(&report.run_id, &cited, "twice").await.unwrap_err();
    /// assert!(again.is_bad_input() && again.to_string().contains("withdrawn already"));
    /// # });
    /// ```
    pub async fn forget(
        &self,
        run_id: &str,
        source: &str,
        reason: &str,
    ) -> Result<Tombstone, RunError> {
        let store = self.store.clone().ok_or(RunError::NoStore)?;
        let source = SourceId::parse(source.trim())
            .map_err(|e| RunError::Refused(format!("the source `{}`: {e}", source.trim())))?;
        store.events(run_id).map_err(RunError::Store)?;
        let _claim = self.claim(run_id)?;
        let events = store.events(run_id).map_err(RunError::Store)?;
        let tomb = tombstone(&events, &source, reason).map_err(RunError::Refused)?;
        let ack = store.append(
            run_id,
            vec![(
                crate::checkpoint::now_ms(),
                RunEvent::SourceForgotten {
                    tombstone: tomb.clone(),
                },
            )],
        );
        ack.await
            .map_err(|_| RunError::Runtime("the event store stopped before writing".into()))?
            .map_err(RunError::Store)?;
        Ok(tomb)
    }
}
