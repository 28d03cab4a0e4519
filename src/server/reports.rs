//! Reports kept under the state (`reports/<digest of the run id>.json`), each with the
//! sequence number of the run's last event when it was made: a report is given for a run only
//! while its log has nothing after that (a resume logs more, and makes a report of its own).
//! The command line and the server both write them, so a run ended by either has its report.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::Report;

/// A report as kept: the run's last sequence number when it was made, and the report.
#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    seq: u64,
    report: Report,
}

fn report_path(state: &Path, run_id: &str) -> PathBuf {
    let digest = crate::digest::sha256_hex(run_id.as_bytes());
    state
        .join("reports")
        .join(format!("{}.json", &digest[..32]))
}

/// Writes a run's report, made when its log ended at `seq`, under the state (a temporary
/// file renamed into place, so a reader never sees half of one; secrets scrubbed); one line
/// on failure.
pub fn save_report(state: &Path, report: &Report, seq: u64) -> Result<(), String> {
    let path = report_path(state, &report.run_id);
    let dir = path.parent().unwrap_or(state);
    let failed = |e: std::io::Error| format!("{}: {e}", dir.display());
    // The folder is the state's own: never one a link leads to.
    if std::fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(format!(
            "{}: not a directory of the state's own",
            dir.display()
        ));
    }
    std::fs::create_dir_all(dir).map_err(failed)?;
    let kept = serde_json::json!({ "seq": seq, "report": report });
    let text = crate::redact::scrubbed(kept.to_string());
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(failed)?;
    std::fs::rename(&tmp, &path).map_err(failed)
}

/// Removes the report kept for a run, if one is (a withdrawn source's text must not stay on
/// disk in it); one line on failure.
pub fn drop_report(state: &Path, run_id: &str) -> Result<(), String> {
    let path = report_path(state, run_id);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("reports/: {e}")),
    }
}

/// The report kept for a run and the sequence number it was made at; `None` when none is
/// kept; an error (one line) when one is there but cannot be read.
pub fn load_report(state: &Path, run_id: &str) -> Result<Option<(u64, Report)>, String> {
    let path = report_path(state, run_id);
    // Named without the state's own path, and never with what the file holds.
    let name = format!(
        "reports/{}",
        path.file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned())
    );
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // Never through a link, never waiting on a FIFO: only a regular file is read.
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let mut file = match options.open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{name}: {e}")),
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(format!("{name}: not a regular file"));
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| format!("{name}: {e}"))?;
    let kept: Kept = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{name}: not a kept report (line {}, column {})",
            e.line(),
            e.column()
        )
    })?;
    if kept.report.run_id != run_id {
        return Err(format!("{name}: the report of another run"));
    }
    Ok(Some((kept.seq, kept.report)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_back_with_its_seq_and_damage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load_report(dir.path(), "run-1").unwrap().map(|k| k.0), None);
        let tree = crate::testing::fixture_tree();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let mut report = runtime
            .block_on(crate::coordinator::Coordinator::builder().build().run(
                crate::coordinator::Task::explore("where is next_delay?", tree.path()),
            ))
            .unwrap();
        report.run_id = "run-1".into();
        save_report(dir.path(), &report, 42).unwrap();
        let (seq, back) = load_report(dir.path(), "run-1").unwrap().unwrap();
        assert_eq!((seq, back.run_id.as_str()), (42, "run-1"));
        // Another run's report under this run's name is refused.
        report.run_id = "run-2".into();
        save_report(dir.path(), &report, 7).unwrap();
        let two = report_path(dir.path(), "run-2");
        std::fs::copy(&two, report_path(dir.path(), "run-1")).unwrap();
        assert!(load_report(dir.path(), "run-1")
            .unwrap_err()
            .contains("another run"));
        std::fs::write(&two, r#"{"report":"sk-what-the-file-holds"}"#).unwrap();
        let said = load_report(dir.path(), "run-2").unwrap_err();
        let state = dir.path().display().to_string();
        assert!(
            !said.contains("sk-what") && !said.contains(&state),
            "{said}"
        );
        // A FIFO in a report's place is not waited on.
        #[cfg(unix)]
        {
            let fifo = report_path(dir.path(), "run-3");
            let made = std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap();
            assert!(made.success());
            let said = load_report(dir.path(), "run-3").unwrap_err();
            assert!(said.contains("not a regular file"), "{said}");
        }
        std::fs::write(two, "{not json").unwrap();
        assert!(load_report(dir.path(), "run-2")
            .unwrap_err()
            .contains("not a kept report"));
        // A link in the folder's place is not followed.
        #[cfg(unix)]
        {
            let state = tempfile::tempdir().unwrap();
            let victim = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(victim.path(), state.path().join("reports")).unwrap();
            assert!(save_report(state.path(), &report, 1).is_err());
            assert_eq!(std::fs::read_dir(victim.path()).unwrap().count(), 0);
        }
    }
}
