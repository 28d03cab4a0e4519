//! A run's log: the store and the run id together, stamping each event with the time.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;

use super::event::{LoggedEvent, RunEvent};
use super::store::{EventStore, StoreError};

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Where one run's events go.
#[derive(Clone)]
pub struct RunLog {
    store: Arc<dyn EventStore>,
    run_id: String,
}

impl std::fmt::Debug for RunLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunLog")
            .field("run_id", &self.run_id)
            .finish()
    }
}

/// The acknowledgement of an append: fires once the events are durable.
pub type Ack = oneshot::Receiver<Result<Vec<LoggedEvent>, StoreError>>;

impl RunLog {
    /// The log of `run_id` in `store`.
    pub fn new(store: Arc<dyn EventStore>, run_id: &str) -> RunLog {
        RunLog {
            store,
            run_id: run_id.to_string(),
        }
    }

    /// The run.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn EventStore> {
        &self.store
    }

    /// Appends events stamped now.
    pub fn append(&self, events: Vec<RunEvent>) -> Ack {
        let at = now_ms();
        self.store
            .append(&self.run_id, events.into_iter().map(|e| (at, e)).collect())
    }
}
