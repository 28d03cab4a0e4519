//! Following a run's events: those logged first, then each as it is logged, from any point,
//! with no gap and no duplicate, ending with the run — on the tap of a run this server holds,
//! or by looking again for a run that runs in another process.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use super::problem::Problem;
use super::runs::blocking;
use super::Server;
use crate::checkpoint::{EventStore, LoggedEvent, RunEvent};

/// Events a follower reads from the store at a time.
const PAGE: usize = 512;
/// How often a follower of a run that runs elsewhere (another process) looks for more.
const POLL: Duration = Duration::from_millis(250);

impl Server {
    /// Follows a run's events after `after`: every event once, in order, those logged first,
    /// then each as it is logged; the stream ends when the run has ended. 404 for an unknown
    /// run, 403 for one whose root is not under an allowed root.
    pub async fn follow(&self, run_id: &str, after: u64) -> Result<Follower, Problem> {
        // A run held here exists even before its first event is durable (and is in scope).
        if !self.inner.live.contains_key(run_id) {
            self.scope(run_id).await?;
        }
        Ok(Follower {
            server: self.clone(),
            run_id: run_id.to_string(),
            last: after,
            buffer: VecDeque::new(),
            done: false,
            last_look: false,
        })
    }
}

/// A reader of one run's events (see [`Server::follow`]).
pub struct Follower {
    server: Server,
    run_id: String,
    last: u64,
    buffer: VecDeque<LoggedEvent>,
    done: bool,
    /// The run was seen to end: one more read of the store, then the end.
    last_look: bool,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("run_id", &self.run_id)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl Follower {
    /// The next event; `None` once the run has ended and every event was given. An error (the
    /// log could not be read, or is damaged) ends the stream.
    pub async fn next(&mut self) -> Option<Result<LoggedEvent, Problem>> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                self.last = event.seq;
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            let store = Arc::clone(&self.server.inner.store);
            let (id, last) = (self.run_id.clone(), self.last);
            match blocking(move || Ok(store.events_after(&id, last, PAGE)?)).await {
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(page) if !page.is_empty() => {
                    self.buffer.extend(page);
                    continue;
                }
                Ok(_) => {}
            }
            if self.last_look {
                self.done = true;
                continue;
            }
            self.wait().await;
        }
    }

    /// Waits for more: on the tap of a run this server holds, or — a run running elsewhere,
    /// or none — by looking again after a while; sets `last_look` once the run has ended.
    async fn wait(&mut self) {
        let seen = self
            .server
            .inner
            .live
            .get(&self.run_id)
            .map(|l| l.seen.clone());
        if let Some(mut seen) = seen.filter(|s| !s.borrow().blind) {
            let now = *seen.borrow_and_update();
            // Ended, or nothing new and the tap gone while waiting: one more read, then the end.
            if now.ended || (now.seq <= self.last && seen.changed().await.is_err()) {
                self.last_look = true;
            }
            return;
        }
        // Not held here: ended when its last event ends the run, or when no process holds
        // its claim (interrupted: nothing more comes until it is resumed), and nobody holds it.
        let store = Arc::clone(&self.server.inner.store);
        let (id, last) = (self.run_id.clone(), self.last);
        let ended = blocking(move || {
            let tail = store.events_after(&id, last.saturating_sub(1), 1)?;
            // Nothing at `last`: the client asked past the log's end; nothing more will come.
            let finished = tail
                .first()
                .is_none_or(|e| matches!(e.event, RunEvent::RunFinished { .. }));
            Ok(finished || !store.held(&id)?)
        })
        .await
        .unwrap_or(true);
        if ended && !self.server.inner.live.contains_key(&self.run_id) {
            self.last_look = true;
        } else {
            tokio::time::sleep(POLL).await;
        }
    }

    /// The sequence number of the last event given (or the one it started after).
    pub fn last_seq(&self) -> u64 {
        self.last
    }
}
