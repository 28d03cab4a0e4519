//! What the README shows, checked as it is written: the sample report is what the fixture
//! gives; the state goes where the README says; the flags' defaults are the documented ones;
//! an unknown run is exit 2; an accepted handoff and its subagent's end are one append.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use baton::checkpoint::{Checkpoint, EventStore, LoggedEvent, RunClaim, RunRow, StoreError};
use baton::testing::MemoryStore;
use baton::{Coordinator, RunEvent, Task};
use tokio::sync::oneshot;

use crate::support::rust_tree;

fn baton() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_baton"));
    cmd.env_remove("BATON_LOG").env_remove("BATON_STATE");
    cmd
}

/// The README's block after "## Reading the report": its indented lines, unindented.
fn readme_sample() -> String {
    let readme = include_str!("../README.md");
    let start = readme.find("## Reading the report").unwrap();
    let block: Vec<&str> = readme[start..]
        .lines()
        .skip_while(|l| !l.starts_with("    ## Settled conclusions"))
        .take_while(|l| l.starts_with("    "))
        .map(|l| &l[4..])
        .collect();
    format!("{}\n", block.join("\n"))
}

#[test]
fn the_readme_sample_report_is_what_the_fixture_gives() {
    let dir = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let out = baton()
        .arg("explore")
        .arg(dir.path())
        .args([
            "where is the retry delay computed?",
            "--no-progress",
            "--state",
        ])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), readme_sample());
}

#[test]
fn the_state_is_dot_baton_in_the_working_directory_or_baton_state() {
    let dir = rust_tree();
    let cwd = tempfile::tempdir().unwrap();
    let run = |cwd: &Path, state: Option<&Path>| {
        let mut cmd = baton();
        cmd.current_dir(cwd)
            .arg("explore")
            .arg(dir.path())
            .args(["where is next_delay?", "--no-progress"]);
        if let Some(s) = state {
            cmd.env("BATON_STATE", s);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    };
    run(cwd.path(), None);
    assert!(cwd.path().join(".baton/baton.db").is_file());
    let elsewhere = tempfile::tempdir().unwrap();
    run(cwd.path(), Some(elsewhere.path()));
    assert!(elsewhere.path().join("baton.db").is_file());
}

/// Each flag's default, as `baton explore --help` gives it, is the README's.
#[test]
fn the_flags_defaults_are_the_documented_ones() {
    let out = baton().args(["explore", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for (flag, default) in [
        ("--agents", "4"),
        ("--max-subagents", "32"),
        ("--max-turns", "12"),
        ("--max-tool-calls", "60"),
        ("--max-tokens", "400000"),
        ("--repairs", "2"),
        ("--retries", "4"),
        ("--model", "offline"),
        ("--offline-latency-ms", "0"),
        ("--rpm", "0"),
        ("--tpm", "0"),
    ] {
        let at = help
            .find(&format!("{flag} <"))
            .unwrap_or_else(|| panic!("{flag} in {help}"));
        let rest = &help[at..];
        let next = rest[2..].find(" --").map_or(rest.len(), |i| i + 2);
        assert!(
            rest[..next].contains(&format!("[default: {default}]")),
            "{flag}: {}",
            &rest[..next]
        );
    }
}

#[test]
fn an_unknown_run_on_an_existing_state_is_exit_2() {
    let dir = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let explored = baton()
        .arg("explore")
        .arg(dir.path())
        .args(["where is next_delay?", "--no-progress", "--state"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(explored.status.code(), Some(0));
    for command in ["brief", "resume", "context"] {
        let mut cmd = baton();
        cmd.args([command, "run-nope", "--state"]).arg(state.path());
        if command == "context" {
            cmd.args(["--role", "explorer"]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("run-nope") && err.trim().lines().count() == 1,
            "{err}"
        );
    }
}

/// A store that keeps what each append held, in order.
struct Recording {
    inner: MemoryStore,
    appends: Mutex<Vec<Vec<&'static str>>>,
}

impl EventStore for Recording {
    fn append(
        &self,
        run_id: &str,
        events: Vec<(u64, RunEvent)>,
    ) -> oneshot::Receiver<Result<Vec<LoggedEvent>, StoreError>> {
        self.appends
            .lock()
            .unwrap()
            .push(events.iter().map(|(_, e)| e.kind()).collect());
        self.inner.append(run_id, events)
    }
    fn events(&self, run_id: &str) -> Result<Vec<LoggedEvent>, StoreError> {
        self.inner.events(run_id)
    }
    fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        self.inner.runs()
    }
    fn put_checkpoint(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        self.inner.put_checkpoint(checkpoint)
    }
    fn latest_checkpoint(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        self.inner.latest_checkpoint(run_id)
    }
    fn location(&self) -> String {
        self.inner.location()
    }
    fn claim(&self, run_id: &str) -> Result<RunClaim, StoreError> {
        self.inner.claim(run_id)
    }
}

/// A crash can never leave an accepted handoff without its subagent's end: the verdict and
/// the end go to the log in one append.
#[tokio::test]
async fn an_accepted_handoff_and_its_subagents_end_are_one_append() {
    let dir = rust_tree();
    let store = Arc::new(Recording {
        inner: MemoryStore::new(),
        appends: Mutex::new(Vec::new()),
    });
    let report = Coordinator::builder()
        .store(store.clone())
        .build()
        .run(Task::explore("where is next_delay defined?", dir.path()))
        .await
        .unwrap();
    let appends = store.appends.lock().unwrap().clone();
    let accepted: Vec<&Vec<&str>> = appends
        .iter()
        .filter(|a| a.contains(&"handoff_accepted"))
        .collect();
    assert_eq!(accepted.len(), report.handoffs.accepted, "{appends:?}");
    for append in accepted {
        assert!(append.contains(&"subagent_ended"), "{append:?}");
    }
}

/// The README's library example, as written there, on a tree with a `src/`: it runs to a
/// report whose markdown holds the three sections.
#[tokio::test]
async fn the_library_example_runs_as_written() {
    let dir = crate::support::tree(&[
        (
            "src/validate.rs",
            "//! Handoffs are validated here.\npub fn validate_handoff() {}\n",
        ),
        ("docs/notes.md", "# Notes\n"),
    ]);
    let report = baton::Coordinator::builder()
        .constraint("only read files under src/")
        .build()
        .run(baton::Task::explore(
            "where are handoffs validated?",
            dir.path(),
        ))
        .await
        .unwrap();
    let markdown = report.handoff.to_markdown();
    for section in [
        "## Settled conclusions",
        "## Open items",
        "## Hard constraints",
    ] {
        assert!(markdown.contains(section), "{markdown}");
    }
    assert!(!markdown.contains("docs/notes.md"), "{markdown}");
}
