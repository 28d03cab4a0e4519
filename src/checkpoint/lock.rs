//! The claim on a run: an exclusive lock on `locks/<digest of the run id>.lock` beside the
//! database, held while a process runs the run; the system lets it go when the process dies.

use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

use super::store::{RunClaim, StoreError};

/// How long a claim tries again while the lock is held for an instant by a reader looking
/// whether the run is held.
const CLAIM_WAIT: Duration = Duration::from_millis(100);

/// The run's lock file, opened (made when missing): a regular file of the state's own.
fn open(db: &Path, run_id: &str) -> Result<File, StoreError> {
    let dir = db.parent().unwrap_or_else(|| Path::new(".")).join("locks");
    let failed = |e: std::io::Error| StoreError::Write(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(failed)?;
    let digest = crate::digest::sha256_hex(run_id.as_bytes());
    let path = dir.join(format!("{}.lock", &digest[..32]));
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    // Never through a link, never waiting on a FIFO.
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options
        .open(&path)
        .map_err(|e| StoreError::Write(format!("{}: {e}", path.display())))?;
    if !file.metadata().map_err(failed)?.is_file() {
        return Err(StoreError::Write(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    Ok(file)
}

/// Claims the run: its lock, or `InUse` when another holder keeps it past [`CLAIM_WAIT`].
pub(super) fn claim(db: &Path, run_id: &str) -> Result<RunClaim, StoreError> {
    let file = open(db, run_id)?;
    let deadline = Instant::now() + CLAIM_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(RunClaim::locked(file)),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => return Err(StoreError::InUse(run_id.to_string())),
            Err(TryLockError::Error(e)) => {
                return Err(StoreError::Write(format!("{}: {e}", db.display())))
            }
        }
    }
}

/// Whether another holder keeps the run's lock now (tried once, let go at once).
pub(super) fn held(db: &Path, run_id: &str) -> Result<bool, StoreError> {
    let file = open(db, run_id)?;
    match file.try_lock() {
        Ok(()) => Ok(false),
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(e)) => Err(StoreError::Write(format!("{}: {e}", db.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_waits_out_a_look_and_not_a_holder() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("baton.db");
        assert!(!held(&db, "r1").unwrap());
        let first = claim(&db, "r1").unwrap();
        assert!(held(&db, "r1").unwrap());
        let started = Instant::now();
        assert!(matches!(claim(&db, "r1"), Err(StoreError::InUse(_))));
        assert!(started.elapsed() >= CLAIM_WAIT);
        drop(first);
        // A look holding the lock for a moment does not turn a claim away.
        let look = open(&db, "r1").unwrap();
        look.try_lock().unwrap();
        let letting_go = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            drop(look);
        });
        assert!(claim(&db, "r1").is_ok());
        letting_go.join().unwrap();
    }
}
