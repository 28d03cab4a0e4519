//! The event store: append-only, one writer per store with group commit, every read checked
//! against the digest chain. `MemoryStore` for tests; `SqliteStore` (sqlite.rs) on disk.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::event::{chain_digest, LoggedEvent, RunEvent};
use super::Checkpoint;

/// Why the store could not do what was asked.
/// ```
/// use baton::EventStore;
/// let store = baton::testing::MemoryStore::new();
/// let err = store.events("no-such-run").unwrap_err();
/// assert!(matches!(err, baton::StoreError::UnknownRun(_)));
/// assert!(!err.to_string().contains('\n'), "one line");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The state directory or database could not be opened.
    #[error("cannot open the state at {path}: {reason}")]
    Open {
        /// Where.
        path: String,
        /// Why.
        reason: String,
    },
    /// No run with that id.
    #[error("no run `{0}` in this state")]
    UnknownRun(String),
    /// The log of a run is damaged: tampered with, truncated or unreadable past a point.
    #[error("run {run_id}: the event log is damaged after seq {last_intact} (last intact event): {detail}")]
    Damaged {
        /// The run.
        run_id: String,
        /// The last event that checks out (0: none).
        last_intact: u64,
        /// What is wrong.
        detail: String,
    },
    /// A write failed; nothing of the append was written.
    #[error("writing the event log failed: {0}")]
    Write(String),
    /// A read failed (the log, the runs, a checkpoint).
    #[error("reading the event log failed: {0}")]
    Read(String),
    /// A thread panicked while it held the store's lock: nothing more is read or written
    /// through it.
    #[error("the store is unusable: a thread panicked while holding its lock")]
    Poisoned,
    /// Another process holds the run (it is running or being resumed there).
    #[error(
        "run {0} is in use by another process (running or being resumed); try again once it ends"
    )]
    InUse(String),
    /// No state at that path (a read-only command creates none).
    #[error("no state at {path} (no baton.db there; runs are logged with --state)")]
    Missing {
        /// The state directory.
        path: String,
    },
    /// The database file itself is damaged: not a database, or its pages do not read.
    #[error("the state at {path} is damaged: {detail}")]
    Corrupt {
        /// The database file.
        path: String,
        /// What SQLite said.
        detail: String,
    },
}

/// One run as listed by `baton runs`.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use baton::EventStore;
/// let store = std::sync::Arc::new(baton::testing::MemoryStore::new());
/// let dir = baton::testing::fixture_tree();
/// let report = baton::Coordinator::builder().store(store.clone()).build()
///     .run(baton::Task::explore("q", dir.path())).await.unwrap();
/// let row = &store.runs().unwrap()[0];
/// assert_eq!(row.run_id, report.run_id);
/// assert_eq!(row.last_seq as usize, store.events(&row.run_id).unwrap().len());
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRow {
    /// Its id.
    pub run_id: String,
    /// Its question.
    pub question: String,
    /// Its root.
    pub root: String,
    /// When it started (ms since the epoch).
    pub started_ms: u64,
    /// Its last sequence number.
    pub last_seq: u64,
}

/// A store of run events and checkpoints.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use baton::EventStore;
/// let store = baton::testing::MemoryStore::new();
/// let ack = store.append("r1", vec![(1, baton::RunEvent::RunFinished { cancelled: false })]);
/// let logged = ack.await.unwrap().unwrap();
/// assert_eq!(logged[0].seq, 1);
/// assert_eq!(store.events("r1").unwrap(), logged);
/// # });
/// ```
pub trait EventStore: Send + Sync {
    /// Appends events to a run, in order; the receiver fires once they are durable (group
    /// commit: concurrent appends share one commit).
    fn append(
        &self,
        run_id: &str,
        events: Vec<(u64, RunEvent)>,
    ) -> tokio::sync::oneshot::Receiver<Result<Vec<LoggedEvent>, StoreError>>;
    /// Every event of a run, checked against the digest chain and the run's recorded head.
    fn events(&self, run_id: &str) -> Result<Vec<LoggedEvent>, StoreError>;
    /// At most `limit` events of a run after `after_seq`, in order: each checked against its
    /// digest and chained to the one before it, the first to event `after_seq` (none past the
    /// run's last event). A reader pages through a long log this way. The default reads the
    /// whole log; a store that can read a page alone does.
    fn events_after(
        &self,
        run_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        Ok(self
            .events(run_id)?
            .into_iter()
            .filter(|e| e.seq > after_seq)
            .take(limit)
            .collect())
    }
    /// Every run, newest first.
    fn runs(&self) -> Result<Vec<RunRow>, StoreError>;
    /// Stores a checkpoint (a projection of a run's events).
    fn put_checkpoint(&self, checkpoint: &Checkpoint) -> Result<(), StoreError>;
    /// The latest valid checkpoint of a run; an invalid one is skipped for the one before.
    fn latest_checkpoint(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError>;
    /// Every valid stored checkpoint of a run, oldest first (the default: the latest only).
    fn checkpoints(&self, run_id: &str) -> Result<Vec<Checkpoint>, StoreError> {
        Ok(self.latest_checkpoint(run_id)?.into_iter().collect())
    }
    /// Where the store keeps its data, for messages (a path for a store on disk).
    fn location(&self) -> String {
        "the event store".to_string()
    }
    /// Claims a run for this process while the claim lives, so no other process resumes it
    /// meanwhile ([`StoreError::InUse`] if one holds it). A store only one process can open
    /// need not claim: the default claims nothing.
    fn claim(&self, _run_id: &str) -> Result<RunClaim, StoreError> {
        Ok(RunClaim::default())
    }
    /// Appends taken and not yet written: an async appender waits while this is at
    /// [`WRITER_BACKLOG`] or more, so it never blocks a runtime thread on a full queue. A store
    /// that writes at once holds none.
    fn backlog(&self) -> usize {
        0
    }
    /// Notified each time the writer has written a batch (none: a store without a writer).
    fn drained(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        None
    }
}

/// The backlog an async appender waits below: the writer's queue less room for what one
/// handled message appends, so the queue itself never makes an appender wait.
pub const WRITER_BACKLOG: usize = super::sqlite::WRITER_QUEUE - 1024;

/// A process's hold on a run; released when dropped (or when the process dies).
#[derive(Debug, Default)]
pub struct RunClaim {
    _lock: Option<std::fs::File>,
}

impl RunClaim {
    /// A claim held by a locked file.
    pub(crate) fn locked(file: std::fs::File) -> RunClaim {
        RunClaim { _lock: Some(file) }
    }
}

/// A run's head: its last sequence number and digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) seq: u64,
    pub(crate) digest: String,
}

/// Seals a batch onto a run's head: sequence numbers and chained digests.
pub(crate) fn seal(
    run_id: &str,
    head: &mut Head,
    events: Vec<(u64, RunEvent)>,
) -> Result<Vec<(LoggedEvent, String)>, StoreError> {
    let mut out = Vec::with_capacity(events.len());
    for (at_ms, event) in events {
        // No secret the process holds reaches the state, whatever field carries it.
        let payload = crate::redact::scrubbed(
            serde_json::to_string(&event).map_err(|e| StoreError::Write(e.to_string()))?,
        );
        let seq = head.seq + 1;
        let digest = chain_digest(&head.digest, run_id, seq, at_ms, &payload);
        let logged = LoggedEvent {
            run_id: run_id.to_string(),
            seq,
            at_ms,
            event,
            prev: std::mem::take(&mut head.digest),
            digest: digest.clone(),
        };
        head.seq = seq;
        head.digest = digest;
        out.push((logged, payload));
    }
    Ok(out)
}

/// One stored row, before checking.
#[derive(Debug, Clone)]
pub(crate) struct StoredRow {
    pub(crate) seq: u64,
    pub(crate) at_ms: u64,
    pub(crate) payload: String,
    pub(crate) prev: String,
    pub(crate) digest: String,
}

/// Checks rows against the chain and the recorded head — its sequence number reached, and
/// the event there holding the head's digest (empty: none recorded); the first bad one is
/// reported with the last intact sequence number.
pub(crate) fn verify(
    run_id: &str,
    rows: impl IntoIterator<Item = Result<StoredRow, String>>,
    head_seq: u64,
    head_digest: &str,
) -> Result<Vec<LoggedEvent>, StoreError> {
    let damaged = |last_intact: u64, detail: String| StoreError::Damaged {
        run_id: run_id.to_string(),
        last_intact,
        detail,
    };
    let mut out: Vec<LoggedEvent> = Vec::new();
    let mut prev = String::new();
    for row in rows {
        let last = out.last().map(|e| e.seq).unwrap_or(0);
        let row = row.map_err(|e| damaged(last, format!("unreadable: {e}")))?;
        if row.seq != last + 1 {
            return Err(damaged(
                last,
                format!("event {} follows event {last}", row.seq),
            ));
        }
        if row.prev != prev {
            return Err(damaged(
                last,
                format!("event {} does not chain to event {last}", row.seq),
            ));
        }
        if chain_digest(&prev, run_id, row.seq, row.at_ms, &row.payload) != row.digest {
            return Err(damaged(
                last,
                format!("event {} fails its digest check", row.seq),
            ));
        }
        let event: RunEvent = serde_json::from_str(&row.payload)
            .map_err(|e| damaged(last, format!("event {} is not a known event: {e}", row.seq)))?;
        prev = row.digest.clone();
        out.push(LoggedEvent {
            run_id: run_id.to_string(),
            seq: row.seq,
            at_ms: row.at_ms,
            event,
            prev: row.prev,
            digest: row.digest,
        });
    }
    let last = out.last().map(|e| e.seq).unwrap_or(0);
    if last < head_seq {
        return Err(damaged(
            last,
            format!("the run's head says {head_seq} events; events after {last} are missing"),
        ));
    }
    // Events past the head are another process's appends, read after the head was.
    if let Some(at_head) = out.iter().rev().find(|e| e.seq == head_seq) {
        if !head_digest.is_empty() && at_head.digest != head_digest {
            return Err(damaged(
                head_seq.saturating_sub(1),
                format!("event {head_seq} is not the one the run's head records"),
            ));
        }
    }
    Ok(out)
}

/// Checks one page of a run's rows read from event `after` on (the anchor, itself included
/// when `after` is not 0; the rows before it are not read): consecutive, each chained to the
/// one before and matching its digest. Returns the events after the anchor.
pub(crate) fn verify_page(
    run_id: &str,
    after: u64,
    rows: impl IntoIterator<Item = Result<StoredRow, String>>,
) -> Result<Vec<LoggedEvent>, StoreError> {
    let damaged = |last_intact: u64, detail: String| StoreError::Damaged {
        run_id: run_id.to_string(),
        last_intact,
        detail,
    };
    let mut out = Vec::new();
    // The row before: its seq and digest.
    let mut before: Option<(u64, String)> = None;
    for row in rows {
        let expected = before.as_ref().map_or(after.max(1), |(seq, _)| seq + 1);
        let last = expected - 1;
        let row = row.map_err(|e| damaged(last, format!("unreadable: {e}")))?;
        if row.seq != expected {
            return Err(damaged(
                last,
                format!("event {} follows event {last}", row.seq),
            ));
        }
        // The anchor's own link is to a row not read here.
        let chained = match &before {
            Some((_, digest)) => row.prev == *digest,
            None => after > 0 || row.prev.is_empty(),
        };
        if !chained {
            return Err(damaged(
                last,
                format!("event {} does not chain to event {last}", row.seq),
            ));
        }
        if chain_digest(&row.prev, run_id, row.seq, row.at_ms, &row.payload) != row.digest {
            return Err(damaged(
                last,
                format!("event {} fails its digest check", row.seq),
            ));
        }
        if row.seq > after {
            let event: RunEvent = serde_json::from_str(&row.payload).map_err(|e| {
                damaged(last, format!("event {} is not a known event: {e}", row.seq))
            })?;
            out.push(LoggedEvent {
                run_id: run_id.to_string(),
                seq: row.seq,
                at_ms: row.at_ms,
                event,
                prev: row.prev,
                digest: row.digest.clone(),
            });
        }
        before = Some((row.seq, row.digest));
    }
    Ok(out)
}

/// A page of `limit` that came back short reached the log's end: that end must be the head
/// the run recorded (read before the page), or the log was cut.
pub(crate) fn tail_checked(
    run_id: &str,
    page: Vec<LoggedEvent>,
    (after, limit): (u64, usize),
    head: &Head,
) -> Result<Vec<LoggedEvent>, StoreError> {
    if page.len() >= limit {
        return Ok(page);
    }
    let last = page.last().map_or(after, |e| e.seq);
    let damaged = |detail: String| StoreError::Damaged {
        run_id: run_id.to_string(),
        last_intact: last,
        detail,
    };
    if last < head.seq {
        return Err(damaged(format!(
            "the log ends at event {last}, and the run recorded event {} as its last",
            head.seq
        )));
    }
    if let Some(e) = page
        .last()
        .filter(|e| e.seq == head.seq && e.digest != head.digest)
    {
        return Err(damaged(format!(
            "event {} is not the last event the run recorded",
            e.seq
        )));
    }
    Ok(page)
}

/// Events held in memory: the same contract as the SQLite store — a run's log for as long as
/// the store lives (a run started without a store keeps its log in one), and tests.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<MemoryInner>,
}

#[derive(Debug, Default)]
struct MemoryInner {
    heads: HashMap<String, Head>,
    rows: HashMap<String, Vec<StoredRow>>,
    runs: Vec<RunRow>,
    checkpoints: HashMap<String, Vec<Checkpoint>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }
}

impl EventStore for MemoryStore {
    fn append(
        &self,
        run_id: &str,
        events: Vec<(u64, RunEvent)>,
    ) -> tokio::sync::oneshot::Receiver<Result<Vec<LoggedEvent>, StoreError>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let result = (|| {
            let mut inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
            let inner = &mut *inner;
            if let Some((at, RunEvent::RunStarted { question, root, .. })) = events.first() {
                if !inner.heads.contains_key(run_id) {
                    inner.runs.push(RunRow {
                        run_id: run_id.to_string(),
                        question: question.clone(),
                        root: root.clone(),
                        started_ms: *at,
                        last_seq: 0,
                    });
                }
            }
            let head = inner.heads.entry(run_id.to_string()).or_default();
            let sealed = seal(run_id, head, events)?;
            let last = head.seq;
            if let Some(row) = inner.runs.iter_mut().find(|r| r.run_id == run_id) {
                row.last_seq = last;
            }
            let rows = inner.rows.entry(run_id.to_string()).or_default();
            let mut logged = Vec::with_capacity(sealed.len());
            for (event, payload) in sealed {
                rows.push(StoredRow {
                    seq: event.seq,
                    at_ms: event.at_ms,
                    payload,
                    prev: event.prev.clone(),
                    digest: event.digest.clone(),
                });
                logged.push(event);
            }
            Ok(logged)
        })();
        let _ = tx.send(result);
        rx
    }

    fn events(&self, run_id: &str) -> Result<Vec<LoggedEvent>, StoreError> {
        let inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
        let head = inner
            .heads
            .get(run_id)
            .ok_or_else(|| StoreError::UnknownRun(run_id.to_string()))?;
        let rows = inner
            .rows
            .get(run_id)
            .map(Vec::as_slice)
            .unwrap_or_default();
        verify(
            run_id,
            rows.iter().map(|row| Ok(row.clone())),
            head.seq,
            &head.digest,
        )
    }

    fn events_after(
        &self,
        run_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
        let Some(head) = inner.heads.get(run_id) else {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        };
        let rows = inner
            .rows
            .get(run_id)
            .map(Vec::as_slice)
            .unwrap_or_default();
        // Rows are held in order from seq 1: the anchor is at index `after_seq - 1`.
        let from = (after_seq.max(1) - 1) as usize;
        let page = rows
            .iter()
            .skip(from)
            .take(limit.saturating_add(usize::from(after_seq > 0)));
        let page = verify_page(run_id, after_seq, page.map(|row| Ok(row.clone())))?;
        tail_checked(run_id, page, (after_seq, limit), head)
    }

    fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
        let mut runs = inner.runs.clone();
        runs.sort_by(|a, b| {
            b.started_ms
                .cmp(&a.started_ms)
                .then(b.run_id.cmp(&a.run_id))
        });
        Ok(runs)
    }

    fn put_checkpoint(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
        inner
            .checkpoints
            .entry(checkpoint.run_id.clone())
            .or_default()
            .push(checkpoint.clone());
        Ok(())
    }

    fn latest_checkpoint(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        let inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
        Ok(inner
            .checkpoints
            .get(run_id)
            .and_then(|list| list.iter().rev().find(|c| c.check().is_ok()).cloned()))
    }

    fn checkpoints(&self, run_id: &str) -> Result<Vec<Checkpoint>, StoreError> {
        let inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
        let mut list: Vec<Checkpoint> = inner
            .checkpoints
            .get(run_id)
            .map(|list| list.iter().filter(|c| c.check().is_ok()).cloned().collect())
            .unwrap_or_default();
        list.sort_by_key(|c| c.last_seq);
        Ok(list)
    }
}
