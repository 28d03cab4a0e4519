//! Operations on stored runs, through the coordinator's store: withdrawing a source
//! ([`Coordinator::forget`]), forking a run ([`Coordinator::fork`]) and merging two
//! ([`Coordinator::merge`]).

use super::{new_run_id, Coordinator, RunError};
use crate::checkpoint::{
    fork_events, merge, no_reading, tombstone, EventStore, RunEvent, Tombstone,
};
use crate::source::SourceId;

/// A merge: the new run and the conflicts its open items name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MergeOutcome {
    /// The new run holding the merged state.
    pub run_id: String,
    /// Each conflict between the branches, one line (each is an open item of the new run).
    pub conflicts: Vec<String>,
}

/// Appends `events` to a new run `run_id`, waiting until they are durable.
async fn write_new(
    store: &dyn EventStore,
    run_id: &str,
    events: Vec<(u64, RunEvent)>,
) -> Result<(), RunError> {
    store
        .append(run_id, events)
        .await
        .map_err(|_| RunError::Runtime("the event store stopped before writing".into()))?
        .map_err(RunError::Store)?;
    Ok(())
}

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
        let now = crate::checkpoint::now_ms();
        let mut events = vec![(
            now,
            RunEvent::SourceForgotten {
                tombstone: tomb.clone(),
            },
        )];
        events.extend(no_reading(&tomb).map(|c| (now, c)));
        let ack = store.append(run_id, events);
        ack.await
            .map_err(|_| RunError::Runtime("the event store stopped before writing".into()))?
            .map_err(RunError::Store)?;
        Ok(tomb)
    }

    /// Forks a stored run at event `at` (`baton fork`): a new run whose log is the parent's
    /// up to `at`, as it was, then a `run_forked` event naming the parent, the event and its
    /// digest — and `question`, when given, which the fork pursues instead of its parent's.
    /// [`Coordinator::resume`] continues it from there; the parent is not touched. The new
    /// run's id. Refused ([`RunError::Refused`]) when the parent has no event `at`.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// let dir = baton::testing::fixture_tree();
    /// let store = Arc::new(baton::testing::MemoryStore::new());
    /// let coordinator = baton::Coordinator::builder().store(store).build();
    /// let first = coordinator.run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let fork = coordinator.fork(&first.run_id, 3, Some("where is the retry limit?")).await.unwrap();
    /// let report = coordinator.resume(&fork).await.unwrap().report().await.unwrap();
    /// assert_eq!(report.question, "where is the retry limit?");
    /// assert!(coordinator.fork(&first.run_id, 100_000, None).await.unwrap_err().is_bad_input());
    /// # });
    /// ```
    pub async fn fork(
        &self,
        run_id: &str,
        at: u64,
        question: Option<&str>,
    ) -> Result<String, RunError> {
        let store = self.store.clone().ok_or(RunError::NoStore)?;
        let events = store.events(run_id).map_err(RunError::Store)?;
        let forked = fork_events(run_id, &events, at, question).map_err(RunError::Refused)?;
        let id = new_run_id();
        write_new(store.as_ref(), &id, forked).await?;
        Ok(id)
    }

    /// Merges two stored runs (`baton merge`) into a new one built from both branches'
    /// semantic states: a settled conclusion both hold alike, a constraint, is kept once; one
    /// only a branch settled is kept; a claim they cite differently or whose cited text they
    /// read differently, an effect they left in different states, a constraint only one stated
    /// (kept in force all the same), different questions — each is an open item naming both
    /// branches, as is an effect either left unresolved; a source either withdrew stays
    /// withdrawn. Nothing is chosen by recency. Refused for branches of different trees.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// let dir = baton::testing::fixture_tree();
    /// let store = Arc::new(baton::testing::MemoryStore::new());
    /// let coordinator = baton::Coordinator::builder().store(store).build();
    /// let a = coordinator.run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let b = coordinator.run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let merged = coordinator.merge(&a.run_id, &b.run_id).await.unwrap();
    /// assert!(merged.conflicts.is_empty(), "two runs of one question on one tree agree");
    /// let brief = coordinator.brief(&merged.run_id).unwrap();
    /// assert_eq!(brief.goal.text, "where is next_delay?");
    /// # });
    /// ```
    pub async fn merge(&self, a: &str, b: &str) -> Result<MergeOutcome, RunError> {
        let store = self.store.clone().ok_or(RunError::NoStore)?;
        if a == b {
            return Err(RunError::Refused(format!(
                "{a} cannot be merged with itself"
            )));
        }
        let ea = store.events(a).map_err(RunError::Store)?;
        let eb = store.events(b).map_err(RunError::Store)?;
        let merged = merge((a, &ea), (b, &eb)).map_err(RunError::Refused)?;
        let id = new_run_id();
        write_new(store.as_ref(), &id, merged.events).await?;
        Ok(MergeOutcome {
            run_id: id,
            conflicts: merged.conflicts,
        })
    }
}
