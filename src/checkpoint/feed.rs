//! A run's event stream, which is its log: every durable event, in order, to every reader —
//! replayed from the store, then followed live as the run appends — with no gap and no
//! duplicate. Bounded: a reader that falls behind slows the run; none is ever dropped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::event::LoggedEvent;
use super::store::{EventStore, StoreError};

/// A reader's queue of live events, and how far behind what the run published a reader may
/// fall before the run waits for it: a reader that stops reading holds the run within twice
/// this of where it stopped.
pub const EVENTS_BUFFER: usize = 1024;

/// Events a reader reads from the store at a time while it catches up.
const PAGE: usize = 512;

/// The live side of a run's stream: the run publishes each event once it is durable, to every
/// reader following live.
pub(crate) struct Feed {
    run_id: String,
    store: Arc<dyn EventStore>,
    state: Mutex<FeedState>,
    /// Notified each time what was published moves on, a reader goes, or the feed closes.
    moved: tokio::sync::Notify,
    /// The last event the run has logged, as it last said when it waited for room.
    logged: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct FeedState {
    /// The last event published (every event up to it is durable).
    published: u64,
    /// The last event of the batch being published (durable; not every reader has it yet):
    /// a reader that joins meanwhile is not handed that batch live, so it reads it from the
    /// store.
    publishing: u64,
    /// Set once the run has ended here: nothing more is published.
    closed: bool,
    /// Set when the run's log could not be written: the run stopped there.
    failed: Option<StoreError>,
    /// Set when the run is cancelled: it no longer waits for readers.
    released: bool,
    readers: Vec<mpsc::Sender<LoggedEvent>>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("run_id", &self.run_id)
            .finish()
    }
}

impl Feed {
    /// The feed of `run_id`, whose log is in `store`; `published`: the last event already in
    /// it (a resumed run's).
    pub(crate) fn new(run_id: &str, store: Arc<dyn EventStore>, published: u64) -> Feed {
        Feed {
            run_id: run_id.to_string(),
            store,
            state: Mutex::new(FeedState {
                published,
                ..FeedState::default()
            }),
            moved: tokio::sync::Notify::new(),
            logged: std::sync::atomic::AtomicU64::new(published),
        }
    }

    /// Waits while a reader following the run is more than [`EVENTS_BUFFER`] events behind
    /// `logged`, the last event the run has logged: so the run gets no further than that
    /// ahead of what it published, and what it published waits in each reader's queue of
    /// [`EVENTS_BUFFER`] — a reader that stops reading holds the run within twice that of
    /// where it stopped, and the few events of the step the run is taking. Once the run is
    /// released (cancelled), it never waits.
    pub(crate) async fn room(&self, logged: u64) {
        self.logged
            .fetch_max(logged, std::sync::atomic::Ordering::Relaxed);
        loop {
            let moved = self.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            if !self.behind(logged) {
                return;
            }
            moved.await;
        }
    }

    /// Waits while the run is held by a reader (see [`Feed::room`]): a subagent waits here
    /// before each model call, so a held run spends nothing more.
    pub(crate) async fn unheld(&self) {
        let logged = self.logged.load(std::sync::atomic::Ordering::Relaxed);
        self.room(logged).await;
    }

    /// Whether the run, having logged up to `logged`, must wait for a reader (see
    /// [`Feed::room`]).
    pub(crate) fn behind(&self, logged: u64) -> bool {
        match self.state.lock() {
            Ok(state) => {
                !state.released
                    && !state.readers.is_empty()
                    && logged > state.published.saturating_add(EVENTS_BUFFER as u64)
            }
            Err(_) => false,
        }
    }

    /// The run is being cancelled: from now on it never waits for a reader, and a reader
    /// whose queue is full reads what it missed from the store (nothing is dropped).
    pub(crate) fn release(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.released = true;
        }
        self.moved.notify_waiters();
    }

    /// The feed of a run that is not running here: readers replay its log and end.
    pub(crate) fn closed(run_id: &str, store: Arc<dyn EventStore>) -> Feed {
        let feed = Feed::new(run_id, store, 0);
        feed.close();
        feed
    }

    /// Publishes durable events, in order, to every reader following live — waiting for room
    /// in each reader's queue: a slow reader slows the run, and none is dropped. A reader that
    /// is gone is let go. Once the run is released, a reader whose queue is full is not
    /// waited for: it reads what it missed from the store, where every published event is.
    pub(crate) async fn publish(&self, events: &[LoggedEvent]) {
        let Some(last) = events.last() else { return };
        let readers = match self.state.lock() {
            Ok(mut state) if state.readers.is_empty() => {
                // Readers that join after this replay these events from the store.
                state.published = state.published.max(last.seq);
                drop(state);
                self.moved.notify_waiters();
                return;
            }
            Ok(mut state) => {
                state.publishing = state.publishing.max(last.seq);
                state.readers.clone()
            }
            Err(_) => return,
        };
        let mut gone = false;
        for event in events {
            for reader in &readers {
                gone |= !self.queue(reader, event).await;
            }
            // An event counts as published once every reader has it queued: a reader that
            // joined meanwhile reads it from the store.
            if let Ok(mut state) = self.state.lock() {
                state.published = state.published.max(event.seq);
            }
            self.moved.notify_waiters();
        }
        if gone {
            if let Ok(mut state) = self.state.lock() {
                state.readers.retain(|r| !r.is_closed());
            }
            self.moved.notify_waiters();
        }
    }

    /// Queues `event` for `reader`, waiting for room in its queue until the run is released;
    /// false when the reader is gone.
    async fn queue(&self, reader: &mpsc::Sender<LoggedEvent>, event: &LoggedEvent) -> bool {
        loop {
            let moved = self.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            match reader.try_send(event.clone()) {
                Ok(()) => return true,
                Err(mpsc::error::TrySendError::Closed(_)) => return false,
                // Released: the reader reads this one from the store.
                Err(mpsc::error::TrySendError::Full(_)) if self.is_released() => return true,
                Err(mpsc::error::TrySendError::Full(_)) => {}
            }
            tokio::select! {
                permit = reader.reserve() => match permit {
                    Ok(permit) => {
                        permit.send(event.clone());
                        return true;
                    }
                    Err(_) => return false,
                },
                () = &mut moved => {}
            }
        }
    }

    fn is_released(&self) -> bool {
        self.state.lock().map_or(true, |state| state.released)
    }

    /// The last event published.
    fn published(&self) -> u64 {
        self.state.lock().map_or(0, |state| state.published)
    }

    /// The run's log could not be written: nothing more is published, and readers following
    /// live end with this error once they have read what was.
    pub(crate) fn fail(&self, error: StoreError) {
        if let Ok(mut state) = self.state.lock() {
            state.failed.get_or_insert(error);
        }
        self.close();
    }

    /// Why the run's log stopped, when it could not be written.
    fn failure(&self) -> Option<StoreError> {
        self.state
            .lock()
            .ok()
            .and_then(|state| state.failed.clone())
    }

    /// The run has ended here: readers following live end once they have read what was
    /// published.
    pub(crate) fn close(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.closed = true;
            state.readers.clear();
        }
        self.moved.notify_waiters();
    }

    /// Whether the run has ended here.
    fn is_closed(&self) -> bool {
        self.state.lock().map_or(true, |state| state.closed)
    }

    /// A reader of every event after `after`. It follows the run from the moment it is
    /// made — what the run publishes meanwhile waits in its queue, so a reader that does not
    /// read holds the run once the queue is full — and first reads from the store what was
    /// published before.
    pub(crate) fn reader(self: &Arc<Feed>, after: u64) -> EventStream {
        let phase = match self.follow() {
            Some((receiver, upto)) => Phase::Replay {
                live: Some(receiver),
                upto,
            },
            None => Phase::Replay {
                live: None,
                upto: u64::MAX,
            },
        };
        EventStream {
            feed: Arc::clone(self),
            last: after,
            buffer: VecDeque::new(),
            phase,
        }
    }

    /// A live queue of what is published from now on, and the last event published before
    /// it or in the batch being published (which the store holds); none once the run has
    /// ended here.
    fn follow(&self) -> Option<(mpsc::Receiver<LoggedEvent>, u64)> {
        let mut state = self.state.lock().ok()?;
        if state.closed {
            return None;
        }
        let (sender, receiver) = mpsc::channel(EVENTS_BUFFER);
        // Readers dropped since the last publish are let go here too: a client reconnecting
        // while nothing is published does not pile them up.
        state.readers.retain(|r| !r.is_closed());
        state.readers.push(sender);
        Some((receiver, state.published.max(state.publishing)))
    }
}

/// A live queue that has ended: a reader caught up after the run ended follows it to its end.
fn closed() -> mpsc::Receiver<LoggedEvent> {
    mpsc::channel(1).1
}

enum Phase {
    /// Reading from the store what was published up to `upto` (all of it, for a run not
    /// running here), while what is published after waits in `live`.
    Replay {
        live: Option<mpsc::Receiver<LoggedEvent>>,
        upto: u64,
    },
    /// Following the run live.
    Live(mpsc::Receiver<LoggedEvent>),
    /// Nothing more will come.
    Done,
}

/// A run's events, each once and in order, from a sequence number on: what the store holds
/// first, then what the run logs as it goes; it ends when the run has ended here (or, for a
/// run not running in this process, at the end of its log). Every event is one the log holds
/// durably, with its sequence number and digest.
///
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use baton::RunEvent;
/// let dir = baton::testing::fixture_tree();
/// let handle = baton::Coordinator::builder().build()
///     .start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
/// let mut events = handle.events();
/// let mut spawned = 0;
/// while let Some(event) = events.next().await {
///     if let RunEvent::SubagentSpawned { .. } = event.unwrap().event {
///         spawned += 1;
///     }
/// }
/// assert_eq!(spawned, handle.report().await.unwrap().subagents.len());
/// # });
/// ```
pub struct EventStream {
    feed: Arc<Feed>,
    /// The last event given.
    last: u64,
    buffer: VecDeque<LoggedEvent>,
    phase: Phase,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("run_id", &self.feed.run_id)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl EventStream {
    /// The sequence number of the last event given (or the one the stream started after).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder().build()
    ///     .start(baton::Task::explore("q", dir.path())).await.unwrap();
    /// let mut events = handle.events_from(0);
    /// assert_eq!(events.last_seq(), 0);
    /// events.next().await;
    /// assert_eq!(events.last_seq(), 1);
    /// # });
    /// ```
    pub fn last_seq(&self) -> u64 {
        self.last
    }

    /// The run whose events these are.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder().build()
    ///     .start(baton::Task::explore("q", dir.path())).await.unwrap();
    /// assert_eq!(handle.events().run_id(), handle.run_id());
    /// # });
    /// ```
    pub fn run_id(&self) -> &str {
        &self.feed.run_id
    }

    /// The next event; `None` once the run has ended and every event was given. An error —
    /// the store could not be read, or the log is damaged — ends the stream.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder().build()
    ///     .start(baton::Task::explore("q", dir.path())).await.unwrap();
    /// let mut events = handle.events();
    /// let mut last = 0;
    /// while let Some(event) = events.next().await {
    ///     let event = event.unwrap();
    ///     assert_eq!(event.seq, last + 1, "in order, none missing");
    ///     last = event.seq;
    /// }
    /// # });
    /// ```
    pub async fn next(&mut self) -> Option<Result<LoggedEvent, StoreError>> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                self.last = event.seq;
                return Some(Ok(event));
            }
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Live(receiver) => match receiver.recv().await {
                    // Read from the store already.
                    Some(event) if event.seq <= self.last => {}
                    Some(event) if event.seq == self.last + 1 => {
                        self.last = event.seq;
                        return Some(Ok(event));
                    }
                    // Events this reader's queue had no room for once the run was
                    // released: the store holds them, and this one.
                    Some(event) => self.catch_up(event.seq),
                    // The run has ended here: what was published and not queued is read
                    // from the store.
                    None => match self.feed.published() {
                        upto if upto > self.last => self.phase = Phase::Replay { live: None, upto },
                        _ => return self.end(),
                    },
                },
                Phase::Replay { live, upto } => {
                    if self.last >= *upto {
                        match live.take() {
                            Some(receiver) => self.phase = Phase::Live(receiver),
                            None if *upto == u64::MAX => return self.end(),
                            None => self.phase = Phase::Live(closed()),
                        }
                        continue;
                    }
                    let upto = *upto;
                    if let Err(e) = self.read_page().await {
                        self.phase = Phase::Done;
                        return Some(Err(e));
                    }
                    if self.buffer.is_empty() {
                        // The store ends here: what follows comes live (for a run not
                        // running here, nothing does).
                        if upto != u64::MAX && self.last < upto {
                            return self.missing(upto);
                        }
                        match &mut self.phase {
                            Phase::Replay { live, .. } => match live.take() {
                                Some(receiver) => self.phase = Phase::Live(receiver),
                                None => return self.end(),
                            },
                            _ => return self.end(),
                        }
                    }
                }
            }
        }
    }

    /// Reads from the store up to event `upto` before following live again.
    fn catch_up(&mut self, upto: u64) {
        let phase = std::mem::replace(&mut self.phase, Phase::Done);
        if let Phase::Live(receiver) = phase {
            self.phase = Phase::Replay {
                live: Some(receiver),
                upto,
            };
        }
    }

    /// The stream ends: with the error the run's log failed with, if it did.
    fn end(&mut self) -> Option<Result<LoggedEvent, StoreError>> {
        self.phase = Phase::Done;
        self.feed.failure().map(Err)
    }

    /// The store holds less than was published: the log is damaged.
    fn missing(&mut self, upto: u64) -> Option<Result<LoggedEvent, StoreError>> {
        self.phase = Phase::Done;
        Some(Err(StoreError::Damaged {
            run_id: self.feed.run_id.clone(),
            last_intact: self.last,
            detail: format!(
                "the store ends at event {}, and event {upto} was published",
                self.last
            ),
        }))
    }

    /// Reads the next page of the log from the store, off the runtime.
    async fn read_page(&mut self) -> Result<(), StoreError> {
        let (store, run_id, after) = (
            Arc::clone(&self.feed.store),
            self.feed.run_id.clone(),
            self.last,
        );
        let page = tokio::task::spawn_blocking(move || store.events_after(&run_id, after, PAGE))
            .await
            .map_err(|e| StoreError::Read(format!("reading the log failed: {e}")))?;
        match page {
            Ok(page) => self.buffer.extend(page),
            // A run that has not logged its first event yet: nothing to replay.
            Err(StoreError::UnknownRun(_)) if after == 0 && !self.feed.is_closed() => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }
}
