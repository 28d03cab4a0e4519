//! The store's writer thread: group commit in immediate transactions, retrying while another
//! process holds the write lock, and a run's head checked and moved under that lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use rusqlite::{params, Connection, OptionalExtension};

use super::event::{LoggedEvent, RunEvent};
use super::sqlite::{Append, Queue, GROUP};
use super::store::{seal, Head, StoreError};

pub(super) fn load_head(conn: &Connection, run_id: &str) -> rusqlite::Result<Option<Head>> {
    conn.prepare_cached("SELECT last_seq, last_digest FROM runs WHERE run_id = ?1")?
        .query_row(params![run_id], |row| {
            Ok(Head {
                seq: row.get::<_, i64>(0)? as u64,
                digest: row.get(1)?,
            })
        })
        .optional()
}

/// How long a write waits for another process's write lock in all (the busy timeout covers
/// each attempt; retries cover the lock being taken again between attempts).
pub(super) const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// True when SQLite refused because another connection holds the lock.
pub(super) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Runs `work` in an immediate transaction — the write lock taken up front, so a reader's
/// snapshot can never turn into a BUSY at the first write — retrying on BUSY until
/// `deadline`. Anything else fails at once.
pub(super) fn write_locked<T>(
    conn: &mut Connection,
    deadline: std::time::Instant,
    mut work: impl FnMut(&rusqlite::Transaction<'_>) -> Result<T, WriteFailure>,
) -> Result<T, WriteFailure> {
    let mut pause = std::time::Duration::from_millis(5);
    loop {
        let attempt = (|| {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(WriteFailure::Sqlite)?;
            let value = work(&tx)?;
            tx.commit().map_err(WriteFailure::Sqlite)?;
            Ok(value)
        })();
        match attempt {
            Err(WriteFailure::Sqlite(e)) if is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

/// Why a write did not happen.
#[derive(Debug)]
pub(super) enum WriteFailure {
    /// SQLite refused (disk full, I/O error, lock held past the wait …).
    Sqlite(rusqlite::Error),
    /// The append itself cannot be written (another process moved the run on, a run without
    /// `run_started` …); nothing of it was written.
    Refused(String),
}

impl WriteFailure {
    pub(super) fn into_store_error(self, path: &Path) -> StoreError {
        match self {
            WriteFailure::Sqlite(e) => {
                StoreError::Write(format!("{}: {}", path.display(), sqlite_reason(&e)))
            }
            WriteFailure::Refused(why) => StoreError::Write(format!("{}: {why}", path.display())),
        }
    }
}

/// SQLite's error in words a user can act on.
pub(super) fn sqlite_reason(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => format!("the disk is full ({e})"),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => format!(
            "another process held the write lock for over {} s ({e})",
            LOCK_WAIT.as_secs()
        ),
        _ => e.to_string(),
    }
}

/// The writer: waits for an append, takes every other one already queued, commits them in one
/// transaction, then acknowledges each. An append refused for its own run fails that run's
/// later appends and no other run's; a failure of SQLite itself (disk full, I/O, the lock held
/// past the wait) fails every append of the batch. A run whose append failed takes no more
/// appends from this process: its log must not go on with a hole in it.
pub(super) fn writer_loop(mut conn: Connection, queue: Queue, path: PathBuf) {
    let mut heads: HashMap<String, Head> = HashMap::new();
    let mut failed: HashMap<String, StoreError> = HashMap::new();
    while let Ok(first) = queue.rx.recv() {
        let mut batch = vec![first];
        while batch.len() < GROUP {
            match queue.rx.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let taken = batch.len();
        // A resume reads the log afresh: it may write again.
        for append in &batch {
            if matches!(
                append.events.first(),
                Some((_, RunEvent::RunResumed { .. }))
            ) {
                failed.remove(&append.run_id);
            }
        }
        let (refused, batch): (Vec<Append>, Vec<Append>) = batch
            .into_iter()
            .partition(|a| failed.contains_key(&a.run_id));
        for append in refused {
            let why = failed[&append.run_id].clone();
            let _ = append.ack.send(Err(why));
        }
        if batch.is_empty() {
            continue;
        }
        // One transaction for the batch. An append refused for its own run (another process
        // moved the run on, a run never started) fails that run's appends — this one and every
        // later one — and no other; a failure of SQLite itself (disk full, I/O, the lock held
        // past the wait) fails the whole batch.
        let mut staged = heads.clone();
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        let written = write_locked(&mut conn, deadline, |tx| {
            staged = heads.clone();
            let mut refused: HashMap<String, StoreError> = HashMap::new();
            let mut read = std::collections::HashSet::new();
            let mut results = Vec::with_capacity(batch.len());
            for append in &batch {
                if let Some(why) = refused.get(&append.run_id) {
                    results.push(Err(why.clone()));
                    continue;
                }
                match write_append(tx, &mut staged, &mut read, append) {
                    Ok(logged) => results.push(Ok(logged)),
                    Err(refusal @ WriteFailure::Refused(_)) => {
                        let why = refusal.into_store_error(&path);
                        refused.insert(append.run_id.clone(), why.clone());
                        results.push(Err(why));
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok((results, refused))
        });
        match written {
            Ok((results, refused)) => {
                heads = staged;
                failed.extend(refused);
                for (append, result) in batch.into_iter().zip(results) {
                    let _ = append.ack.send(result);
                }
            }
            Err(e) => {
                let e = e.into_store_error(&path);
                for append in batch {
                    failed.insert(append.run_id.clone(), e.clone());
                    let _ = append.ack.send(Err(e.clone()));
                }
            }
        }
        queue.backlog.fetch_sub(taken, Ordering::AcqRel);
        queue.drained.notify_waiters();
    }
}

/// Writes one append inside a write transaction: the run's head is read under the write lock
/// and must be where this process left it (or, for a resume, where the resume read it), so two
/// processes can never interleave one run's chain.
fn write_append(
    tx: &rusqlite::Transaction<'_>,
    heads: &mut HashMap<String, Head>,
    read: &mut std::collections::HashSet<String>,
    append: &Append,
) -> Result<Vec<LoggedEvent>, WriteFailure> {
    let run_id = append.run_id.as_str();
    // Read once per run and transaction: after that, `heads` is what the log holds.
    let stored = if read.contains(run_id) {
        heads.get(run_id).cloned()
    } else {
        read.insert(run_id.to_string());
        load_head(tx, run_id).map_err(WriteFailure::Sqlite)?
    };
    // Every refusal comes before the first write, so a refused append leaves nothing behind.
    let mut head = match (stored, heads.get(run_id), append.events.first()) {
        (None, _, Some((_, RunEvent::RunStarted { .. }))) => Head::default(),
        (None, _, _) => {
            return Err(WriteFailure::Refused(format!(
                "run {run_id} must start with run_started"
            )))
        }
        (Some(stored), _, Some((_, RunEvent::RunStarted { .. }))) => {
            return Err(WriteFailure::Refused(format!(
                "run {run_id} already exists (its log is at seq {})",
                stored.seq
            )))
        }
        (Some(stored), _, Some((_, RunEvent::RunResumed { after_seq, .. }))) => {
            if stored.seq != *after_seq {
                return Err(WriteFailure::Refused(format!(
                    "run {run_id} is being resumed by another process: its log moved on from seq {after_seq} to seq {}",
                    stored.seq
                )));
            }
            stored
        }
        (Some(stored), Some(mine), _) if *mine != stored => {
            return Err(WriteFailure::Refused(format!(
                "run {run_id} was written by another process: its log is at seq {}, this process left it at seq {}",
                stored.seq, mine.seq
            )))
        }
        (Some(stored), _, _) => stored,
    };
    let sealed = seal(run_id, &mut head, append.events.clone())
        .map_err(|e| WriteFailure::Refused(e.to_string()))?;
    if let Some((at, RunEvent::RunStarted { question, root, .. })) = append.events.first() {
        tx.execute(
            "INSERT INTO runs (run_id, started_ms, question, root, last_seq, last_digest) VALUES (?1, ?2, ?3, ?4, 0, '')",
            params![
                run_id,
                *at as i64,
                crate::redact::scrub(question),
                crate::redact::scrub(root)
            ],
        )
        .map_err(WriteFailure::Sqlite)?;
    }
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO events (run_id, seq, at_ms, kind, payload, prev, digest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(WriteFailure::Sqlite)?;
        for (logged, payload) in &sealed {
            insert
                .execute(params![
                    run_id,
                    logged.seq as i64,
                    logged.at_ms as i64,
                    logged.event.kind(),
                    payload,
                    logged.prev,
                    logged.digest
                ])
                .map_err(WriteFailure::Sqlite)?;
        }
    }
    tx.execute(
        "UPDATE runs SET last_seq = ?2, last_digest = ?3 WHERE run_id = ?1",
        params![run_id, head.seq as i64, head.digest],
    )
    .map_err(WriteFailure::Sqlite)?;
    heads.insert(run_id.to_string(), head);
    Ok(sealed.into_iter().map(|(e, _)| e).collect())
}
