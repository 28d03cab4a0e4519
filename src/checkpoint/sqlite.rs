//! The SQLite event store (rusqlite, bundled: nothing to install). WAL mode with
//! `synchronous=FULL`: a commit is on disk before it returns, so an acknowledged event survives
//! a crash or a power cut; group commit makes that cheap — one writer thread takes every append
//! waiting in its queue into one transaction and acknowledges them all after the one commit.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread::JoinHandle;

use rusqlite::{params, Connection, OptionalExtension};
use tokio::sync::oneshot;

use super::event::{LoggedEvent, RunEvent};
use super::store::{seal, verify, EventStore, Head, RunRow, StoreError, StoredRow};
use super::Checkpoint;

/// Most appends folded into one commit.
const GROUP: usize = 4096;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    started_ms INTEGER NOT NULL,
    question TEXT NOT NULL,
    root TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    last_digest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    prev TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    schema_version INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, last_seq)
) WITHOUT ROWID;
";

type Ack = oneshot::Sender<Result<Vec<LoggedEvent>, StoreError>>;

struct Append {
    run_id: String,
    events: Vec<(u64, RunEvent)>,
    ack: Ack,
}

/// The on-disk store at `DIR/baton.db`.
pub struct SqliteStore {
    path: PathBuf,
    writer: Mutex<Option<mpsc::Sender<Append>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    reader: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    let fail = |e: rusqlite::Error| StoreError::Open {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let conn = Connection::open(path).map_err(fail)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(fail)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(fail)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(fail)?;
    conn.execute_batch(SCHEMA).map_err(fail)?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating if needed) the store in `dir`.
    pub fn open(dir: &Path) -> Result<SqliteStore, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
            path: dir.display().to_string(),
            reason: e.to_string(),
        })?;
        let path = dir.join("baton.db");
        let writer_conn = open_connection(&path)?;
        let reader = open_connection(&path)?;
        let (tx, rx) = mpsc::channel::<Append>();
        let thread = std::thread::Builder::new()
            .name("baton-event-writer".into())
            .spawn(move || writer_loop(writer_conn, rx))
            .map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
        Ok(SqliteStore {
            path,
            writer: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            reader: Mutex::new(reader),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        if let Ok(mut writer) = self.writer.lock() {
            writer.take();
        }
        if let Some(thread) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = thread.join();
        }
    }
}

fn load_head(conn: &Connection, run_id: &str) -> rusqlite::Result<Option<Head>> {
    conn.query_row(
        "SELECT last_seq, last_digest FROM runs WHERE run_id = ?1",
        params![run_id],
        |row| {
            Ok(Head {
                seq: row.get::<_, i64>(0)? as u64,
                digest: row.get(1)?,
            })
        },
    )
    .optional()
}

/// The writer: waits for an append, takes every other one already queued, commits them in one
/// transaction, then acknowledges each.
fn writer_loop(mut conn: Connection, rx: mpsc::Receiver<Append>) {
    let mut heads: HashMap<String, Head> = HashMap::new();
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < GROUP {
            match rx.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let before = heads.clone();
        match write_batch(&mut conn, &mut heads, &batch) {
            Ok(results) => {
                for (append, logged) in batch.into_iter().zip(results) {
                    let _ = append.ack.send(Ok(logged));
                }
            }
            Err(e) => {
                heads = before;
                for append in batch {
                    let _ = append.ack.send(Err(StoreError::Write(e.clone())));
                }
            }
        }
    }
}

fn write_batch(
    conn: &mut Connection,
    heads: &mut HashMap<String, Head>,
    batch: &[Append],
) -> Result<Vec<Vec<LoggedEvent>>, String> {
    let tx = conn.transaction().map_err(|e| e.to_string())?;
    let mut results = Vec::with_capacity(batch.len());
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO events (run_id, seq, at_ms, kind, payload, prev, digest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(|e| e.to_string())?;
        for append in batch {
            let run_id = append.run_id.as_str();
            if !heads.contains_key(run_id) {
                let head = load_head(&tx, run_id).map_err(|e| e.to_string())?;
                match head {
                    Some(h) => {
                        heads.insert(run_id.to_string(), h);
                    }
                    None => {
                        let (started, question, root) = match append.events.first() {
                            Some((at, RunEvent::RunStarted { question, root, .. })) => {
                                (*at, question.clone(), root.clone())
                            }
                            _ => return Err(format!("run {run_id} must start with run_started")),
                        };
                        tx.execute(
                            "INSERT INTO runs (run_id, started_ms, question, root, last_seq, last_digest) VALUES (?1, ?2, ?3, ?4, 0, '')",
                            params![run_id, started as i64, question, root],
                        )
                        .map_err(|e| e.to_string())?;
                        heads.insert(run_id.to_string(), Head::default());
                    }
                }
            }
            let head = heads.get_mut(run_id).ok_or("no head")?;
            let sealed = seal(run_id, head, append.events.clone()).map_err(|e| e.to_string())?;
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
                    .map_err(|e| e.to_string())?;
            }
            tx.execute(
                "UPDATE runs SET last_seq = ?2, last_digest = ?3 WHERE run_id = ?1",
                params![run_id, head.seq as i64, head.digest],
            )
            .map_err(|e| e.to_string())?;
            results.push(sealed.into_iter().map(|(e, _)| e).collect());
        }
    }
    tx.commit().map_err(|e| e.to_string())?;
    Ok(results)
}

impl EventStore for SqliteStore {
    fn append(
        &self,
        run_id: &str,
        events: Vec<(u64, RunEvent)>,
    ) -> oneshot::Receiver<Result<Vec<LoggedEvent>, StoreError>> {
        let (ack, rx) = oneshot::channel();
        let message = Append {
            run_id: run_id.to_string(),
            events,
            ack,
        };
        let sent = self
            .writer
            .lock()
            .ok()
            .and_then(|w| w.as_ref().map(|tx| tx.send(message)));
        if let Some(Err(mpsc::SendError(message))) = sent {
            let _ = message
                .ack
                .send(Err(StoreError::Write("the writer has stopped".into())));
        }
        rx
    }

    fn events(&self, run_id: &str) -> Result<Vec<LoggedEvent>, StoreError> {
        let conn = self
            .reader
            .lock()
            .map_err(|e| StoreError::Write(e.to_string()))?;
        let damaged = |detail: String| StoreError::Damaged {
            run_id: run_id.to_string(),
            last_intact: 0,
            detail,
        };
        let head = load_head(&conn, run_id)
            .map_err(|e| damaged(format!("the run table is unreadable: {e}")))?
            .ok_or_else(|| StoreError::UnknownRun(run_id.to_string()))?;
        let mut statement = conn
            .prepare("SELECT seq, at_ms, payload, prev, digest FROM events WHERE run_id = ?1 ORDER BY seq")
            .map_err(|e| damaged(e.to_string()))?;
        let rows = statement
            .query_map(params![run_id], |row| {
                Ok(StoredRow {
                    seq: row.get::<_, i64>(0)? as u64,
                    at_ms: row.get::<_, i64>(1)? as u64,
                    payload: row.get(2)?,
                    prev: row.get(3)?,
                    digest: row.get(4)?,
                })
            })
            .map_err(|e| damaged(e.to_string()))?;
        verify(run_id, rows.map(|r| r.map_err(|e| e.to_string())), head.seq)
    }

    fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let conn = self
            .reader
            .lock()
            .map_err(|e| StoreError::Write(e.to_string()))?;
        let unreadable = |e: rusqlite::Error| StoreError::Open {
            path: self.path.display().to_string(),
            reason: e.to_string(),
        };
        let mut statement = conn
            .prepare("SELECT run_id, question, root, started_ms, last_seq FROM runs ORDER BY started_ms DESC, run_id DESC")
            .map_err(unreadable)?;
        let rows = statement
            .query_map([], |row| {
                Ok(RunRow {
                    run_id: row.get(0)?,
                    question: row.get(1)?,
                    root: row.get(2)?,
                    started_ms: row.get::<_, i64>(3)? as u64,
                    last_seq: row.get::<_, i64>(4)? as u64,
                })
            })
            .map_err(unreadable)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(unreadable)
    }

    fn put_checkpoint(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        let body =
            serde_json::to_string(checkpoint).map_err(|e| StoreError::Write(e.to_string()))?;
        let conn = self
            .reader
            .lock()
            .map_err(|e| StoreError::Write(e.to_string()))?;
        conn.execute(
            "INSERT OR REPLACE INTO checkpoints (run_id, last_seq, first_seq, schema_version, body) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                checkpoint.run_id,
                checkpoint.last_seq as i64,
                checkpoint.first_seq as i64,
                checkpoint.schema_version,
                body
            ],
        )
        .map_err(|e| StoreError::Write(e.to_string()))?;
        Ok(())
    }

    fn latest_checkpoint(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        let conn = self
            .reader
            .lock()
            .map_err(|e| StoreError::Write(e.to_string()))?;
        let mut statement = conn
            .prepare("SELECT body FROM checkpoints WHERE run_id = ?1 ORDER BY last_seq DESC")
            .map_err(|e| StoreError::Write(e.to_string()))?;
        let bodies = statement
            .query_map(params![run_id], |row| row.get::<_, String>(0))
            .map_err(|e| StoreError::Write(e.to_string()))?;
        for body in bodies.flatten() {
            // A checkpoint missing a mandatory field does not deserialise: the previous stays.
            if let Ok(cp) = serde_json::from_str::<Checkpoint>(&body) {
                if cp.check().is_ok() {
                    return Ok(Some(cp));
                }
            }
        }
        Ok(None)
    }
}
