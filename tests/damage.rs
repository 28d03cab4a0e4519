//! A damaged store is never written, and a state that can only be read is read: four bytes
//! flipped in the header of the checkpoints B-tree's root page (`PRAGMA quick_check` fails
//! while every run's event chain still verifies) make `baton resume` and `baton explore`
//! refuse with one line and write nothing, and `baton runs` say the state is damaged; a
//! state on read-only media lists, briefs and compiles contexts as on any other.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::tree;

fn baton() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_baton"));
    cmd.env_remove("BATON_LOG").env_remove("BATON_STATE");
    cmd
}

/// One finished offline run in `state`; its id.
fn finished_run(state: &Path, root: &Path) -> String {
    let out = baton()
        .arg("explore")
        .arg(root)
        .args([
            "where is retry defined?",
            "--json",
            "--no-progress",
            "--state",
        ])
        .arg(state)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report["run_id"].as_str().unwrap().to_string()
}

fn sample_tree() -> tempfile::TempDir {
    tree(&[
        ("src/lib.rs", "pub mod retry;\n"),
        ("src/retry.rs", "pub fn retry() -> u32 {\n    3\n}\n"),
    ])
}

/// Flips four bytes of the page header of the checkpoints table's root page.
fn damage_checkpoints(db: &Path) {
    let (root, page_size): (i64, i64) = {
        let conn = rusqlite::Connection::open(db).unwrap();
        let root = conn
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE name = 'checkpoints'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let size = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        (root, size)
    };
    let mut bytes = std::fs::read(db).unwrap();
    let at = ((root - 1) * page_size) as usize;
    for b in &mut bytes[at + 3..at + 7] {
        *b ^= 0xFF;
    }
    std::fs::write(db, bytes).unwrap();
}

fn one_line(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(text.trim().lines().count(), 1, "one line: {text}");
    text
}

#[test]
fn a_damaged_store_is_never_written_and_runs_says_it_is_damaged() {
    let root = sample_tree();
    let state = tempfile::tempdir().unwrap();
    let run_id = finished_run(state.path(), root.path());
    let db = state.path().join("baton.db");
    damage_checkpoints(&db);
    let damaged = std::fs::read(&db).unwrap();

    let resumed = baton()
        .args(["resume", &run_id, "--no-progress", "--state"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(1), "{resumed:?}");
    let said = one_line(&resumed);
    assert!(
        said.contains(&run_id) && said.contains("quick_check"),
        "{said}"
    );

    let explored = baton()
        .arg("explore")
        .arg(root.path())
        .args(["where is retry defined?", "--no-progress", "--state"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(explored.status.code(), Some(1), "{explored:?}");
    assert!(one_line(&explored).contains("damaged"), "{explored:?}");
    assert!(explored.stdout.is_empty(), "no report");

    let listed = baton()
        .args(["runs", "--state"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(listed.status.code(), Some(1), "{listed:?}");
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&run_id));
    assert!(one_line(&listed).contains("damaged"), "{listed:?}");

    assert_eq!(std::fs::read(&db).unwrap(), damaged, "nothing was written");
    assert!(
        std::fs::metadata(state.path().join("baton.db-wal")).map_or(true, |m| m.len() == 0),
        "no WAL frame was written"
    );
}

/// A run's log that does not verify (one payload changed, the pages intact: `quick_check`
/// finds nothing) damages the state too: `explore` refuses it and writes nothing, and `runs`
/// lists the run as damaged and exits 1.
#[test]
fn a_run_whose_log_does_not_verify_is_never_written_beside() {
    // A payload changed, and the run's head recording a digest its last event lacks.
    for tamper in [
        "UPDATE events SET payload = payload || ' ' WHERE seq = (SELECT max(seq) FROM events) - 2",
        "UPDATE runs SET last_digest = '00'",
    ] {
        refused_beside(tamper);
    }
}

fn refused_beside(tamper: &str) {
    let root = sample_tree();
    let state = tempfile::tempdir().unwrap();
    let run_id = finished_run(state.path(), root.path());
    let db = state.path().join("baton.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let changed = conn.execute(tamper, []).unwrap();
        assert_eq!(changed, 1);
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
    }
    let damaged = std::fs::read(&db).unwrap();
    let explored = baton()
        .arg("explore")
        .arg(root.path())
        .args(["where is retry defined?", "--no-progress", "--state"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(explored.status.code(), Some(1), "{explored:?}");
    let said = one_line(&explored);
    assert!(said.contains(&run_id) && said.contains("damaged"), "{said}");
    assert!(explored.stdout.is_empty(), "no report");
    let listed = baton()
        .args(["runs", "--state"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(listed.status.code(), Some(1), "{listed:?}");
    assert!(String::from_utf8_lossy(&listed.stdout).contains("damaged after seq"));
    assert!(one_line(&listed).contains(&run_id), "{listed:?}");
    assert_eq!(std::fs::read(&db).unwrap(), damaged, "nothing was written");
}

#[test]
fn reading_commands_write_nothing_and_read_a_state_on_read_only_media() {
    let root = sample_tree();
    let state = tempfile::tempdir().unwrap();
    let run_id = finished_run(state.path(), root.path());
    let db = state.path().join("baton.db");
    let before = std::fs::read(&db).unwrap();
    let reads: [Vec<&str>; 3] = [
        vec!["runs"],
        vec!["brief", &run_id],
        vec!["context", &run_id, "--role", "explorer"],
    ];
    let mut expected = Vec::new();
    for args in &reads {
        let out = baton()
            .args(args)
            .arg("--state")
            .arg(state.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        expected.push(out.stdout);
    }
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "a read wrote to the file"
    );
    let mut names: Vec<String> = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // The run that finished left its log, its lock and its report; the reads nothing more.
    assert_eq!(
        names,
        ["baton.db", "locks", "reports"],
        "a read left files behind"
    );
    let reports = std::fs::read_dir(state.path().join("reports"))
        .unwrap()
        .count();
    assert_eq!(reports, 1, "the finished run's report alone");

    // The same state behind a read-only bind mount, in a user and mount namespace of its own.
    let mount = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_baton");
    for (args, expected) in reads.iter().zip(&expected) {
        let script = format!(
            "mount --bind '{}' '{}' && mount -o remount,bind,ro '{}' && exec '{bin}' {} --state '{}'",
            state.path().display(),
            mount.path().display(),
            mount.path().display(),
            args.join(" "),
            mount.path().display()
        );
        let out = Command::new("unshare")
            .args(["-rm", "sh", "-c", &script])
            .env_remove("BATON_LOG")
            .output()
            .expect("unshare runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?} on read-only media: {out:?}"
        );
        assert_eq!(&out.stdout, expected, "{args:?}");
    }
}
