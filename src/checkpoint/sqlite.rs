//! The SQLite event store (rusqlite, bundled: nothing to install). WAL mode with
//! `synchronous=FULL`: a commit is on disk before it returns, so an acknowledged event survives
//! a crash or a power cut; group commit makes that cheap — one writer thread takes every append
//! waiting in its queue into one transaction and acknowledges them all after the one commit.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::{params, Connection};
use tokio::sync::oneshot;

use super::event::{LoggedEvent, RunEvent};
use super::store::{verify, verify_page, EventStore, RunClaim, RunRow, StoreError, StoredRow};
use super::writer::{
    is_busy, load_head, sqlite_reason, write_locked, writer_loop, WriteFailure, LOCK_WAIT,
};
use super::Checkpoint;

/// Most appends folded into one commit.
pub(super) const GROUP: usize = 4096;
/// Checkpoints a run keeps: the newest and the one before it.
const CHECKPOINTS_KEPT: i64 = 2;
/// Most appends waiting for the writer; a sender past it waits.
pub(super) const WRITER_QUEUE: usize = 2 * GROUP;

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

pub(super) type Ack = oneshot::Sender<Result<Vec<LoggedEvent>, StoreError>>;

pub(super) struct Append {
    pub(super) run_id: String,
    pub(super) events: Vec<(u64, RunEvent)>,
    pub(super) ack: Ack,
}

/// The writer's end of the queue: appends, how many wait, and who to tell after a commit.
pub(super) struct Queue {
    pub(super) rx: mpsc::Receiver<Append>,
    pub(super) backlog: Arc<AtomicUsize>,
    pub(super) drained: Arc<tokio::sync::Notify>,
}

/// The on-disk store at `DIR/baton.db`.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::sync::Arc;
/// let state = tempfile::tempdir().unwrap();
/// let store = Arc::new(baton::SqliteStore::open(state.path()).unwrap());
/// let dir = baton::testing::fixture_tree();
/// let report = baton::Coordinator::builder().store(store.clone()).build()
///     .run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
/// use baton::EventStore;
/// assert_eq!(store.runs().unwrap()[0].run_id, report.run_id);
/// # });
/// ```
pub struct SqliteStore {
    path: PathBuf,
    writer: Mutex<Option<mpsc::SyncSender<Append>>>,
    /// Appends queued for the writer and not yet taken into a commit.
    backlog: Arc<AtomicUsize>,
    /// Notified after each commit.
    drained: Arc<tokio::sync::Notify>,
    thread: Mutex<Option<JoinHandle<()>>>,
    reader: Mutex<Connection>,
    /// False for an existing file without baton's tables (a WAL that held them was lost):
    /// it holds no runs.
    tables: bool,
    /// Set when the file only opened as damaged (cut short): what SQLite said.
    damage: Option<String>,
    /// The size of the last checkpoint stored, to serialise the next into a buffer that does
    /// not grow by doubling.
    last_checkpoint: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

/// What a failure to open the database means: a file that is not (or no longer) a database is
/// damaged state; anything else is state that cannot be opened.
fn open_failure(path: &Path, e: &rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => {
            StoreError::Corrupt {
                path: path.display().to_string(),
                detail: e.to_string(),
            }
        }
        // The state is there but cannot be written: a failed write, not bad input.
        Some(rusqlite::ErrorCode::DiskFull | rusqlite::ErrorCode::SystemIoFailure) => {
            StoreError::Write(format!("{}: {}", path.display(), sqlite_reason(e)))
        }
        _ => StoreError::Open {
            path: path.display().to_string(),
            reason: sqlite_reason(e),
        },
    }
}

/// How a connection opens the database file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Read and write, creating the file and its tables when missing (WAL mode).
    Create,
    /// Read only: nothing is created or written.
    ReadOnly,
    /// Read only, the file taken as unchanging (its WAL and shared memory not used): for a
    /// state on media that cannot hold them.
    Immutable,
}

/// Opens a connection in WAL mode with `synchronous=FULL`, making the file and its tables
/// when missing. Another process opening the same file at once is waited for.
fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    open_with(path, Access::Create, false)
}

/// Opens an existing file for reading only; where its directory cannot hold the shared
/// memory a WAL reader needs (read-only media), as immutable. `tolerant` reads a file cut
/// short: SQLite refuses a file shorter than its header says unless the schema is writable,
/// yet every page still there reads — so a truncated log can be read up to its last intact
/// event. Nothing is ever written through such a connection.
fn open_reading(path: &Path, tolerant: bool) -> Result<Connection, StoreError> {
    // No WAL file: no process is writing and the file holds everything — read it as it is,
    // creating nothing beside it (a WAL reader would leave its shared memory and WAL behind).
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if !Path::new(&wal).exists() {
        return open_with(path, Access::Immutable, tolerant);
    }
    match open_with(path, Access::ReadOnly, tolerant) {
        Err(StoreError::Open { .. }) => open_with(path, Access::Immutable, tolerant),
        other => other,
    }
}

/// `path` as an SQLite URI asking for an immutable file.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'?' | b'#' | b'%' => uri.push_str(&format!("%{b:02X}")),
            _ => uri.push(b as char),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

fn open_with(path: &Path, access: Access, tolerant: bool) -> Result<Connection, StoreError> {
    use rusqlite::OpenFlags;
    // SQLite opens its journal, WAL and shared-memory files beside the database: one that is
    // a FIFO, a device or a link would block the open or write elsewhere.
    for suffix in ["-journal", "-wal", "-shm"] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        let side = PathBuf::from(side);
        if let Ok(meta) = std::fs::symlink_metadata(&side) {
            if !meta.is_file() {
                return Err(StoreError::Open {
                    path: path.display().to_string(),
                    reason: format!("{} is not a regular file", side.display()),
                });
            }
        }
    }
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        let attempt = (|| {
            let read_only = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let conn = match access {
                Access::Create => Connection::open_with_flags(path, OpenFlags::default())?,
                Access::ReadOnly => Connection::open_with_flags(path, read_only)?,
                Access::Immutable => Connection::open_with_flags(
                    immutable_uri(path),
                    read_only | OpenFlags::SQLITE_OPEN_URI,
                )?,
            };
            conn.busy_timeout(std::time::Duration::from_secs(10))?;
            if access == Access::Create {
                conn.pragma_update(None, "journal_mode", "WAL")?;
            }
            if tolerant {
                // Before anything reads the schema: a failed schema load stays failed.
                conn.pragma_update(None, "writable_schema", "ON")?;
            }
            conn.pragma_update(None, "synchronous", "FULL")?;
            if access == Access::Create {
                conn.execute_batch(SCHEMA)?;
            } else {
                // Reads the header and the schema now, so a damaged file is told at open.
                conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
            }
            Ok(conn)
        })();
        match attempt {
            Ok(conn) => return Ok(conn),
            Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(open_failure(path, &e)),
        }
    }
}

/// What SQLite's `quick_check` finds wrong with the file (every page of every B-tree read
/// and its structure checked), if anything: a damaged file is never written to.
fn quick_check(conn: &Connection) -> Option<String> {
    let found: rusqlite::Result<Vec<String>> = conn
        .prepare("PRAGMA quick_check(3)")
        .and_then(|mut s| s.query_map([], |row| row.get(0))?.collect());
    match found {
        Ok(rows) if rows.len() == 1 && rows[0] == "ok" => None,
        Ok(rows) => Some(format!("quick_check: {}", rows.join("; "))),
        Err(e) => Some(format!("quick_check: {e}")),
    }
}

/// Whether the database file is shorter than its header says (it was cut): what is wrong, if
/// so. An empty file is a database not yet written, not a cut one.
fn cut_short(path: &Path) -> Option<String> {
    use std::io::Read;
    let (file, meta) = crate::fsio::open_regular_file(path).ok()?;
    let mut header = Vec::with_capacity(100);
    let read = file.take(100).read_to_end(&mut header).ok()?;
    let be32 = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    match read {
        0 => None,
        1..=99 => Some(format!(
            "the file is {read} bytes, shorter than a database header"
        )),
        _ => {
            let page_size = match u16::from_be_bytes([header[16], header[17]]) {
                1 => 65_536,
                n => u64::from(n),
            };
            // The page count is valid when the "version valid for" matches the change counter.
            let pages = u64::from(be32(28));
            let counted = be32(92) == be32(24) && pages > 0;
            (counted && pages * page_size > meta.len()).then(|| {
                format!(
                    "the file is {} bytes, its header says {} pages of {page_size} bytes",
                    meta.len(),
                    pages
                )
            })
        }
    }
}

impl SqliteStore {
    /// Whether a process holds the run's claim (it is running there), looked at without
    /// keeping it: the lock is taken and let go at once, and a claim made meanwhile waits.
    pub fn held(&self, run_id: &str) -> Result<bool, StoreError> {
        super::lock::held(&self.path, run_id)
    }

    /// Opens (creating if needed) the store in `dir`.
    /// ```
    /// let state = tempfile::tempdir().unwrap();
    /// let store = baton::SqliteStore::open(state.path()).unwrap();
    /// assert!(state.path().join("baton.db").exists());
    /// use baton::EventStore;
    /// assert!(store.runs().unwrap().is_empty());
    /// ```
    pub fn open(dir: &Path) -> Result<SqliteStore, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| match e.kind() {
            // The state cannot be written: a failed write, not bad input.
            std::io::ErrorKind::StorageFull => StoreError::Write(format!("{}: {e}", dir.display())),
            // Something that is not a directory (a file, a device, a link to itself).
            _ if dir.exists() || dir.is_symlink() => StoreError::Open {
                path: dir.display().to_string(),
                reason: "it is not a directory".into(),
            },
            _ => StoreError::Open {
                path: dir.display().to_string(),
                reason: e.to_string(),
            },
        })?;
        let path = dir.join("baton.db");
        // A damaged file is never written to — not a run's event, not a new run, not the
        // tables — so an existing one is checked, read-only, before anything opens it to
        // write: SQLite's pages (`quick_check`), and every run's log (its digest chain).
        if std::fs::metadata(&path).is_ok_and(|m| !m.is_file() || m.len() > 0) {
            let check = SqliteStore::open_existing(dir)?;
            if let Some(detail) = check.damage() {
                return Err(StoreError::Corrupt {
                    path: path.display().to_string(),
                    detail: detail.to_string(),
                });
            }
            for run in check.runs()? {
                check.events(&run.run_id)?;
            }
        }
        let writer_conn = open_connection(&path)?;
        let reader = open_connection(&path)?;
        // A bounded queue: a lead that outruns the disk waits for it instead of growing.
        let (tx, rx) = mpsc::sync_channel::<Append>(WRITER_QUEUE);
        let backlog = Arc::new(AtomicUsize::new(0));
        let drained = Arc::new(tokio::sync::Notify::new());
        let thread = std::thread::Builder::new()
            .name("baton-event-writer".into())
            .spawn({
                let path = path.clone();
                let queue = Queue {
                    rx,
                    backlog: Arc::clone(&backlog),
                    drained: Arc::clone(&drained),
                };
                move || writer_loop(writer_conn, queue, path)
            })
            .map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
        Ok(SqliteStore {
            path,
            writer: Mutex::new(Some(tx)),
            backlog,
            drained,
            thread: Mutex::new(Some(thread)),
            reader: Mutex::new(reader),
            tables: true,
            damage: None,
            last_checkpoint: Default::default(),
        })
    }

    /// Opens the store in `dir` for reading, creating nothing: a missing directory or database
    /// is [`StoreError::Missing`]. Appends to it fail.
    pub fn open_existing(dir: &Path) -> Result<SqliteStore, StoreError> {
        let path = dir.join("baton.db");
        let missing = || StoreError::Missing {
            path: dir.display().to_string(),
        };
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => {
                return Err(StoreError::Open {
                    path: path.display().to_string(),
                    reason: "not a regular file".into(),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
            Err(e) => {
                return Err(StoreError::Open {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })
            }
        }
        let (reader, damage) = match open_reading(&path, false) {
            Err(StoreError::Corrupt { path, detail }) => match open_reading(Path::new(&path), true)
            {
                Ok(reader) => (reader, Some(detail)),
                Err(_) => return Err(StoreError::Corrupt { path, detail }),
            },
            other => (other?, None),
        };
        // A file shorter than its header says was cut: damaged, whatever still reads. With a
        // WAL holding frames, a checkpoint may have been cut short mid-copy: the WAL still
        // has the pages, so the header is not compared.
        let wal = dir.join("baton.db-wal");
        let wal_empty = std::fs::metadata(&wal).map_or(true, |m| m.len() == 0);
        let damage = damage
            .or_else(|| wal_empty.then(|| cut_short(&path)).flatten())
            .or_else(|| quick_check(&reader));
        let tables: i64 = reader
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('runs', 'events')",
                [],
                |row| row.get(0),
            )
            .map_err(|e| open_failure(&path, &e))?;
        if tables != 2 {
            if let Some(detail) = &damage {
                // Not a lost WAL: the file itself lost the pages that held the tables.
                return Err(StoreError::Corrupt {
                    path: path.display().to_string(),
                    detail: detail.clone(),
                });
            }
        }
        Ok(SqliteStore {
            path,
            writer: Mutex::new(None),
            backlog: Default::default(),
            drained: Default::default(),
            thread: Mutex::new(None),
            reader: Mutex::new(reader),
            tables: tables == 2,
            damage,
            last_checkpoint: Default::default(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is wrong with the file, when it opened only as damaged (cut short): what still
    /// reads is served, and may be missing runs.
    pub fn damage(&self) -> Option<&str> {
        self.damage.as_deref()
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
        let (message, why) = match self.writer.lock() {
            Ok(writer) => match writer.as_ref() {
                Some(tx) => match tx.send(message) {
                    Ok(()) => {
                        self.backlog.fetch_add(1, Ordering::AcqRel);
                        return rx;
                    }
                    Err(mpsc::SendError(message)) => (message, "the event writer has stopped"),
                },
                None => (message, "the state was opened read-only"),
            },
            Err(_) => (message, "the event writer's lock is poisoned"),
        };
        let _ = message.ack.send(Err(StoreError::Write(format!(
            "{}: {why}",
            self.path.display()
        ))));
        rx
    }

    fn events(&self, run_id: &str) -> Result<Vec<LoggedEvent>, StoreError> {
        if !self.tables {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        }
        let conn = self.reader.lock().map_err(|_| StoreError::Poisoned)?;
        let damaged = |last_intact: u64, detail: String| StoreError::Damaged {
            run_id: run_id.to_string(),
            last_intact,
            detail,
        };
        // An unreadable run table does not hide the events that still read: the error names
        // the last of them.
        let (head_seq, head_digest, head_problem) = match load_head(&conn, run_id) {
            Ok(Some(head)) => (head.seq, head.digest, None),
            // In a file cut short, a run missing from the run table may still have events.
            Ok(None) => match &self.damage {
                None => return Err(StoreError::UnknownRun(run_id.to_string())),
                Some(damage) => (
                    0,
                    String::new(),
                    Some(format!(
                        "the state is damaged ({damage}) and holds no entry for this run"
                    )),
                ),
            },
            Err(e) => (
                0,
                String::new(),
                Some(format!("the run table is unreadable: {e}")),
            ),
        };
        let mut statement = conn
            .prepare("SELECT seq, at_ms, payload, prev, digest FROM events WHERE run_id = ?1 ORDER BY seq")
            .map_err(|e| damaged(0, format!("the event table is unreadable: {e}")))?;
        let rows = statement
            .query_map(params![run_id], stored_row)
            .map_err(|e| damaged(0, format!("the event table is unreadable: {e}")))?;
        let events = verify(
            run_id,
            rows.map(|r| r.map_err(|e| e.to_string())),
            head_seq,
            &head_digest,
        )?;
        match head_problem {
            None => Ok(events),
            Some(problem) => Err(damaged(events.last().map_or(0, |e| e.seq), problem)),
        }
    }

    fn events_after(
        &self,
        run_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        if !self.tables {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        }
        let conn = self.reader.lock().map_err(|_| StoreError::Poisoned)?;
        // The head is read first: rows appended meanwhile only lengthen the page.
        let Some(head) = load_head(&conn, run_id).ok().flatten() else {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        };
        let damaged = |detail: String| StoreError::Damaged {
            run_id: run_id.to_string(),
            last_intact: after_seq,
            detail,
        };
        let mut statement = conn
            .prepare_cached("SELECT seq, at_ms, payload, prev, digest FROM events WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3")
            .map_err(|e| damaged(format!("the event table is unreadable: {e}")))?;
        let anchor = after_seq.max(1);
        let take = limit.saturating_add(usize::from(after_seq > 0));
        let rows = statement
            .query_map(
                params![
                    run_id,
                    anchor.min(i64::MAX as u64) as i64,
                    take.min(i64::MAX as usize) as i64
                ],
                stored_row,
            )
            .map_err(|e| damaged(format!("the event table is unreadable: {e}")))?;
        let page = verify_page(
            run_id,
            after_seq,
            rows.map(|r| r.map_err(|e| e.to_string())),
        )?;
        super::store::tail_checked(run_id, page, (after_seq, limit), &head)
    }

    fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        if !self.tables {
            return Ok(Vec::new());
        }
        let conn = self.reader.lock().map_err(|_| StoreError::Poisoned)?;
        // The file exists and opened: a list that does not read is a damaged state.
        let unreadable = |e: rusqlite::Error| match open_failure(&self.path, &e) {
            StoreError::Open { .. } if !is_busy(&e) => StoreError::Corrupt {
                path: self.path.display().to_string(),
                detail: e.to_string(),
            },
            other => other,
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

    /// Stores a checkpoint: serialised once into a buffer sized from the last (so it does not
    /// grow by doubling), scrubbed in place of a copy when it holds no secret.
    fn put_checkpoint(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        let hint = self.last_checkpoint.load(Ordering::Relaxed);
        let mut body = Vec::with_capacity(hint + hint / 8);
        serde_json::to_writer(&mut body, checkpoint)
            .map_err(|e| StoreError::Write(e.to_string()))?;
        let body = String::from_utf8(body).map_err(|e| StoreError::Write(e.to_string()))?;
        let body = crate::redact::scrubbed(body);
        self.last_checkpoint.store(body.len(), Ordering::Relaxed);
        let mut conn = self.reader.lock().map_err(|_| StoreError::Poisoned)?;
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        write_locked(&mut conn, deadline, |tx| {
            tx.execute(
                "INSERT OR REPLACE INTO checkpoints (run_id, last_seq, first_seq, schema_version, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    checkpoint.run_id,
                    checkpoint.last_seq as i64,
                    checkpoint.first_seq as i64,
                    checkpoint.schema_version,
                    body
                ],
            )
            .map_err(WriteFailure::Sqlite)?;
            // The log is the record; a run keeps its two latest checkpoints (the newest, and
            // the one before should the newest not read back), so they do not pile up.
            tx.execute(
                "DELETE FROM checkpoints WHERE run_id = ?1 AND last_seq < (SELECT MIN(last_seq) FROM (SELECT last_seq FROM checkpoints WHERE run_id = ?1 ORDER BY last_seq DESC LIMIT ?2))",
                params![checkpoint.run_id, CHECKPOINTS_KEPT],
            )
            .map_err(WriteFailure::Sqlite)
        })
        .map(|_| ())
        .map_err(|e| e.into_store_error(&self.path))
    }

    fn backlog(&self) -> usize {
        self.backlog.load(Ordering::Acquire)
    }

    fn drained(&self) -> Option<Arc<tokio::sync::Notify>> {
        Some(Arc::clone(&self.drained))
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    /// A lock on `locks/<digest of the run id>.lock` beside the database, held while the claim
    /// lives; the system releases it when the process dies, so a killed run can be resumed at
    /// once.
    fn claim(&self, run_id: &str) -> Result<RunClaim, StoreError> {
        super::lock::claim(&self.path, run_id)
    }

    fn latest_checkpoint(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        // A checkpoint missing a mandatory field does not deserialise: the previous stays.
        self.stored_checkpoints(run_id, "DESC", true)
            .map(|mut list| list.pop())
    }

    fn checkpoints(&self, run_id: &str) -> Result<Vec<Checkpoint>, StoreError> {
        self.stored_checkpoints(run_id, "ASC", false)
    }
}

impl SqliteStore {
    /// The run's valid stored checkpoints in `order` of their last event (`ASC`, `DESC`);
    /// with `first`, only the first valid one. One that does not load is not one.
    fn stored_checkpoints(
        &self,
        run_id: &str,
        order: &str,
        first: bool,
    ) -> Result<Vec<Checkpoint>, StoreError> {
        if !self.tables {
            return Ok(Vec::new());
        }
        let conn = self.reader.lock().map_err(|_| StoreError::Poisoned)?;
        let mut statement = conn
            .prepare(&format!(
                "SELECT body FROM checkpoints WHERE run_id = ?1 ORDER BY last_seq {order}"
            ))
            .map_err(|e| StoreError::Read(e.to_string()))?;
        let bodies = statement
            .query_map(params![run_id], |row| {
                Ok(row
                    .get_ref(0)?
                    .as_bytes()
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default())
            })
            .map_err(|e| StoreError::Read(e.to_string()))?;
        let mut out = Vec::new();
        for body in bodies.flatten() {
            if let Ok(cp) = serde_json::from_slice::<Checkpoint>(&body) {
                if cp.check().is_ok() {
                    out.push(cp);
                    if first {
                        break;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// One row of the event table, as selected `seq, at_ms, payload, prev, digest`.
fn stored_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRow> {
    Ok(StoredRow {
        seq: row.get::<_, i64>(0)? as u64,
        at_ms: row.get::<_, i64>(1)? as u64,
        payload: row.get(2)?,
        prev: row.get(3)?,
        digest: row.get(4)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every connection that writes runs in WAL mode with `synchronous=FULL` (a commit is on
    /// disk before it returns); a lock file stays behind its run's claim.
    #[test]
    fn writers_are_durable_and_claims_leave_their_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        let conn = open_connection(store.path()).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        let sync: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!((mode.as_str(), sync), ("wal", 2), "WAL and FULL");
        drop(store.claim("r1").unwrap());
        let locks = std::fs::read_dir(dir.path().join("locks")).unwrap().count();
        assert_eq!(locks, 1, "the lock file is not removed");
    }

    /// The writer's queue is bounded: with the database locked by another connection, an
    /// appender is held back once the queue and the writer's batch are full, instead of the
    /// queue growing; once the lock goes, every append lands.
    #[test]
    fn a_writer_held_up_holds_its_appenders_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(SqliteStore::open(dir.path()).unwrap());
        let blocker = open_connection(store.path()).unwrap();
        blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let appender = {
            let (store, sent) = (std::sync::Arc::clone(&store), std::sync::Arc::clone(&sent));
            std::thread::spawn(move || {
                let mut acks = Vec::new();
                for i in 0..(WRITER_QUEUE + GROUP + 500) {
                    let started = RunEvent::RunStarted {
                        question: "q".into(),
                        root: "/r".into(),
                        agents: 1,
                        max_subagents: 1,
                        budget: Default::default(),
                        repairs: 0,
                        shards: None,
                        tools: Vec::new(),
                        max_waves: None,
                        model: "offline".into(),
                        task: Default::default(),
                    };
                    acks.push(store.append(&format!("run{i}"), vec![(0, started)]));
                    sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                acks
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let held = sent.load(std::sync::atomic::Ordering::SeqCst);
        assert!(
            held <= WRITER_QUEUE + GROUP + 1,
            "{held} appends were taken while the writer was held up"
        );
        blocker.execute_batch("COMMIT").unwrap();
        let acks = appender.join().unwrap();
        assert_eq!(acks.len(), WRITER_QUEUE + GROUP + 500);
        for ack in acks {
            assert!(ack.blocking_recv().unwrap().is_ok());
        }
    }
}
