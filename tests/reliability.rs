//! Reliability: many processes on one state, appends that fail, input that is not a regular
//! file, evidence that changed before a resume, read-only commands on a missing state, text
//! that would drive a terminal, numbers past their bounds, damaged state.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::checkpoint::{EventStore, LoggedEvent, RunEvent, RunRow, SqliteStore, StoreError};
use baton::testing::MemoryStore;
use baton::{Checkpoint, Coordinator, RunError, Task};

use crate::support::rust_tree;

fn baton() -> Command {
    Command::new(env!("CARGO_BIN_EXE_baton"))
}

const QUESTION: &str = "Where is next_delay defined?";

/// Runs a command to its end or kills it after `limit`: a hang fails the test, never the suite.
fn output_within(mut command: Command, limit: Duration) -> Output {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{command:?} did not finish within {limit:?}");
        }
    }
}

fn one_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// Issue 10: five or eight `baton explore` processes on one state all exit 0, yet some runs
/// had no event at all. Eight at once, three times: all 24 land and every chain verifies.
#[test]
fn eight_processes_on_one_state_all_land() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let children: Vec<_> = (0..8)
            .map(|_| {
                baton()
                    .args(["explore", &tree.path().display().to_string(), QUESTION])
                    .args(["--no-progress", "--json", "--state"])
                    .arg(state.path())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut reported = Vec::new();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            reported.push(report["run_id"].as_str().unwrap().to_string());
        }
        let store = SqliteStore::open_existing(state.path()).unwrap();
        let runs: Vec<RunRow> = store.runs().unwrap();
        assert_eq!(runs.len(), 8 * (round + 1), "every run is in the log");
        for run_id in &reported {
            let events = store.events(run_id).expect("the chain verifies");
            assert!(matches!(
                events.last().map(|e| &e.event),
                Some(RunEvent::RunFinished { cancelled: false })
            ));
        }
    }
}

/// A run killed once a handoff is durable (with subagents still to go).
fn killed_run(tree: &Path, state: &Path) -> String {
    let spawn = || {
        baton()
            .args(["explore", &tree.display().to_string(), QUESTION])
            .args(["--no-progress", "--agents", "1", "--shards", "3"])
            .args(["--offline-latency-ms", "300", "--state"])
            .arg(state)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    crate::support::kill_when(state, spawn, |events| {
        crate::support::count_kind(events, "handoff_accepted") >= 1
    })
}

/// A `baton explore` run to its end (exit 0): its run id.
fn explored(tree: &Path, question: &str, state: &Path) -> String {
    let out = baton()
        .args(["explore", &tree.display().to_string(), question])
        .args(["--no-progress", "--json", "--state"])
        .arg(state)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report["run_id"].as_str().unwrap().to_string()
}

/// Makes a FIFO at `path`.
fn mkfifo(path: impl AsRef<Path>) {
    let made = Command::new("mkfifo").arg(path.as_ref()).status().unwrap();
    assert!(made.success());
}

/// Resumes a run in the library and waits for its report.
async fn resumed_to_end(coordinator: &Coordinator, run_id: &str) -> baton::Report {
    coordinator
        .resume(run_id)
        .await
        .unwrap()
        .report()
        .await
        .unwrap()
}

/// A run in a store held in memory: the store, its coordinator, and the run's report.
async fn run_in_memory(tree: &Path) -> (Arc<dyn EventStore>, Coordinator, baton::Report) {
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let coordinator = Coordinator::builder().store(Arc::clone(&store)).build();
    let report = coordinator
        .run(Task::explore(QUESTION, tree))
        .await
        .unwrap();
    (store, coordinator, report)
}

/// `baton runs` on a state.
fn runs_of(state: &Path) -> Output {
    baton()
        .arg("runs")
        .arg("--state")
        .arg(state)
        .output()
        .unwrap()
}

/// Two processes resuming the same run: one wins, the other gets a one-line error, and the
/// log stays one intact chain with one resume in it.
#[test]
fn two_processes_resuming_one_run_one_wins() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let run_id = killed_run(tree.path(), state.path());
    let resume = || {
        baton()
            .args(["resume", &run_id, "--no-progress", "--json"])
            .args(["--offline-latency-ms", "100", "--state"])
            .arg(state.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (resume(), resume());
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let won: Vec<&Output> = outs.iter().filter(|o| o.status.success()).collect();
    let lost: Vec<&Output> = outs.iter().filter(|o| !o.status.success()).collect();
    assert_eq!(won.len(), 1, "{outs:?}");
    assert_eq!(lost.len(), 1, "{outs:?}");
    assert_eq!(lost[0].status.code(), Some(1));
    let stderr = one_line(lost[0]);
    assert!(stderr.contains(&run_id), "{stderr}");
    assert!(lost[0].stdout.is_empty(), "the loser prints no report");
    let store = SqliteStore::open_existing(state.path()).unwrap();
    let events = store.events(&run_id).expect("the chain verifies");
    let resumes = events
        .iter()
        .filter(|e| e.event.kind() == "run_resumed")
        .count();
    assert_eq!(resumes, 1, "only the winner resumed");
    assert!(matches!(
        events.last().map(|e| &e.event),
        Some(RunEvent::RunFinished { cancelled: false })
    ));
}

/// A store whose `nth` append fails (or whose writer vanishes without acknowledging); every
/// other append goes to memory — or, `sticky`, none after it does, as a real store refuses
/// every later append of a run whose append failed.
struct FailingStore {
    inner: MemoryStore,
    nth: usize,
    vanish: bool,
    sticky: bool,
    appends: AtomicUsize,
}

impl FailingStore {
    fn new(nth: usize, vanish: bool) -> FailingStore {
        FailingStore {
            inner: MemoryStore::new(),
            nth,
            vanish,
            sticky: false,
            appends: AtomicUsize::new(0),
        }
    }
}

impl EventStore for FailingStore {
    fn append(
        &self,
        run_id: &str,
        events: Vec<(u64, RunEvent)>,
    ) -> tokio::sync::oneshot::Receiver<Result<Vec<LoggedEvent>, StoreError>> {
        let n = self.appends.fetch_add(1, Ordering::SeqCst) + 1;
        if n < self.nth || (n > self.nth && !self.sticky) {
            return self.inner.append(run_id, events);
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        if !self.vanish {
            let _ = tx.send(Err(StoreError::Write(
                "/state/baton.db: the disk is full".into(),
            )));
        }
        rx
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
        "/state/baton.db".into()
    }
}

/// Whichever append fails — the first, the last or any between — and whether it fails or its
/// writer vanishes, the run ends with the store's error, never with a report as if logged.
#[tokio::test]
async fn a_store_failing_on_the_nth_append_never_reports_as_logged() {
    let tree = rust_tree();
    let task = || Task::explore(QUESTION, tree.path());
    // A clean run counts the appends.
    let clean = Arc::new(FailingStore::new(0, false));
    Coordinator::builder()
        .store(clean.clone())
        .build()
        .run(task())
        .await
        .expect("a clean run reports");
    let total = clean.appends.load(Ordering::SeqCst);
    assert!(total > 5, "{total} appends");
    for nth in 1..=total {
        for vanish in [false, true] {
            let store = Arc::new(FailingStore::new(nth, vanish));
            let result = Coordinator::builder()
                .store(store)
                .build()
                .run(task())
                .await;
            match result {
                Err(RunError::Store(StoreError::Write(why))) => {
                    assert!(why.contains("/state/baton.db"), "{why}");
                }
                other => panic!("append {nth} of {total} failed (vanish: {vanish}): {other:?}"),
            }
        }
    }
}

/// A run whose append was refused takes no later append from this process — it cannot go on
/// with a hole in its log, nor continue another process's run — while this process's other
/// runs, their appends interleaved with it, all land. Two stores on one state play two
/// processes: the second starts run `r`; the first's own start of `r` is refused, and so is
/// every later append it sends for `r`, though each would chain onto the log as it stands.
#[tokio::test]
async fn a_refused_append_stops_its_run_and_no_other() {
    let state = tempfile::tempdir().unwrap();
    let first = SqliteStore::open(state.path()).unwrap();
    let second = SqliteStore::open(state.path()).unwrap();
    let started = || RunEvent::RunStarted {
        question: "q".into(),
        root: "/".into(),
        model: "offline".into(),
        agents: 1,
        max_subagents: 1,
        budget: baton::Budget::default(),
        repairs: 0,
        shards: None,
        tools: vec![],
        max_waves: None,
        task: Default::default(),
    };
    let finished = || RunEvent::RunFinished { cancelled: false };
    second
        .append("r", vec![(1, started())])
        .await
        .unwrap()
        .unwrap();
    first
        .append("mine", vec![(1, started())])
        .await
        .unwrap()
        .unwrap();
    let refused = first.append("r", vec![(1, started())]).await.unwrap();
    assert!(refused.unwrap_err().to_string().contains("already exists"));
    let mut later = Vec::new();
    let mut mine = Vec::new();
    for _ in 0..100 {
        later.push(first.append("r", vec![(2, finished())]));
        mine.push(first.append("mine", vec![(2, finished())]));
    }
    for ack in later {
        let err = ack.await.unwrap().unwrap_err().to_string();
        assert!(err.contains("already exists"), "{err}");
        assert!(err.contains(&state.path().display().to_string()), "{err}");
    }
    for ack in mine {
        ack.await.unwrap().expect("this process's other run lands");
    }
    assert_eq!(first.events("r").unwrap().len(), 1, "nothing written to r");
    assert_eq!(first.events("mine").unwrap().len(), 101);
}

/// A state directory on a full disk (a file size limit, as the kernel reports a full disk):
/// the run exits 1 with one line naming the state, and prints no report.
#[cfg(unix)]
#[test]
fn a_full_disk_exits_1_naming_the_state_and_prints_no_report() {
    let tree = rust_tree();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let script = format!(
        "trap '' XFSZ; ulimit -f 64; exec \"$0\" explore \"$1\" \"{QUESTION}\" --no-progress --state \"$2\""
    );
    let out = Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_baton")])
        .arg(tree.path())
        .arg(&state)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = one_line(&out);
    assert!(stderr.contains(&state.display().to_string()), "{stderr}");
    assert!(out.stdout.is_empty(), "no report as if logged");
}

/// A handoff citing a FIFO or a device inside the root: `baton validate` answers at once
/// (the citation cannot be read), never hangs or reads without end.
#[cfg(unix)]
#[test]
fn validate_of_a_handoff_citing_a_fifo_or_a_device_answers() {
    let tree = rust_tree();
    let fifo = tree.path().join("pipe.rs");
    mkfifo(&fifo);
    let handoffs = tempfile::tempdir().unwrap();
    for (root, cited) in [(tree.path(), "pipe.rs"), (Path::new("/dev"), "zero")] {
        let handoff = handoffs.path().join(format!("{cited}.md"));
        std::fs::write(
            &handoff,
            format!("## Settled conclusions\n- It is here. [{cited}:1-2]\n\n## Open items\nnone\n\n## Hard constraints\nnone\n"),
        )
        .unwrap();
        let mut command = baton();
        command
            .arg("validate")
            .arg(&handoff)
            .arg("--root")
            .arg(root);
        let out = output_within(command, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(1), "{cited}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("not a regular file"), "{cited}: {stdout}");
    }
}

/// `--roles` pointing at a directory holding a FIFO named like a profile: a one-line error,
/// never a hang.
#[cfg(unix)]
#[test]
fn a_roles_directory_holding_a_fifo_is_an_error_not_a_hang() {
    let tree = rust_tree();
    let roles = tempfile::tempdir().unwrap();
    mkfifo(roles.path().join("explorer.toml"));
    let state = tempfile::tempdir().unwrap();
    let mut command = baton();
    command
        .args(["explore", &tree.path().display().to_string(), QUESTION])
        .arg("--roles")
        .arg(roles.path())
        .arg("--state")
        .arg(state.path());
    let out = output_within(command, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(one_line(&out).contains("not a regular file"));
}

/// Resume after a cited file changed: the conclusions citing it are no longer settled but open
/// items marked stale, the log says which, and the checkpoint's evidence is marked stale. With
/// the file unchanged, the same resume keeps them.
#[tokio::test]
async fn resume_after_a_cited_file_changed_marks_its_conclusions_stale() {
    for edit in [false, true] {
        let tree = rust_tree();
        let (store, coordinator, first) = run_in_memory(tree.path()).await;
        let cites_retry = |c: &baton::Conclusion| {
            c.sources
                .iter()
                .any(|s| s.to_string().starts_with("src/net/retry.rs:"))
        };
        let before = first
            .handoff
            .settled_conclusions
            .iter()
            .filter(|c| cites_retry(c))
            .count();
        assert!(before > 0, "the run cites src/net/retry.rs");
        if edit {
            let path = tree.path().join("src/net/retry.rs");
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, text.replace("next_delay", "delay_after")).unwrap();
        }
        let resumed = resumed_to_end(&coordinator, &first.run_id).await;
        let settled = resumed
            .handoff
            .settled_conclusions
            .iter()
            .filter(|c| cites_retry(c))
            .count();
        let stale: Vec<_> = resumed
            .handoff
            .open_items
            .iter()
            .filter(|o| o.item.starts_with("Stale since the resume"))
            .collect();
        let events = store.events(&first.run_id).unwrap();
        let logged = events
            .iter()
            .filter(|e| e.event.kind() == "evidence_stale")
            .count();
        let cp = baton::checkpoint::project(&first.run_id, &events);
        let stale_evidence = cp.evidence.iter().filter(|e| e.stale.is_some()).count();
        if edit {
            assert_eq!(settled, 0, "{:#?}", resumed.handoff);
            assert_eq!(stale.len(), before, "{:#?}", resumed.handoff.open_items);
            assert!(stale
                .iter()
                .all(|o| o.stuck_on.contains("src/net/retry.rs")));
            assert!(logged > 0);
            assert!(stale_evidence > 0);
            let brief = baton::checkpoint::brief(&cp).render();
            assert!(brief.contains("stale"), "{brief}");
        } else {
            assert_eq!(settled, before);
            assert!(stale.is_empty());
            assert_eq!(logged, 0);
            assert_eq!(stale_evidence, 0);
        }
    }
}

/// Read-only commands on a mistyped state say so (exit 2) and create nothing.
#[test]
fn read_only_commands_on_a_missing_state_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("mistyped/path");
    for args in [
        vec!["runs"],
        vec!["brief", "run-x"],
        vec!["context", "run-x", "--role", "explorer"],
        vec!["resume", "run-x"],
    ] {
        let out = baton()
            .args(&args)
            .arg("--state")
            .arg(&missing)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(one_line(&out).contains("no state"), "{args:?}");
        assert!(!dir.path().join("mistyped").exists(), "{args:?} created it");
    }
    // A path holding a line break is named on one line.
    let out = runs_of(&dir.path().join("two\nlines"));
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out).contains("two\\u{a}lines"));
    // A state that is a file is said to be one, for a run too.
    let file = dir.path().join("statefile");
    std::fs::write(&file, "").unwrap();
    let tree = rust_tree();
    let out = baton()
        .args([
            "explore",
            &tree.path().display().to_string(),
            "q?",
            "--state",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(one_line(&out).contains("not a directory"), "{out:?}");
}

/// A question holding escape sequences (a window title, a colour, a cursor move) is printed by
/// `baton runs` and `baton brief` with its control characters escaped.
#[test]
fn text_from_runs_is_printed_with_control_characters_escaped() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let question = "Where is next_delay \u{1b}]0;pwned\u{7} defined?\u{1b}[2J\r";
    let run_id = &explored(tree.path(), question, state.path());
    for args in [vec!["runs"], vec!["brief", run_id]] {
        let out = baton()
            .args(&args)
            .arg("--state")
            .arg(state.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\r'),
            "{args:?}: {text:?}"
        );
        assert!(text.contains("\\u{1b}]0;pwned\\u{7}"), "{args:?}: {text}");
    }
}

/// A line break in a file's name or in the root's cannot forge a line of `baton brief` or
/// `baton runs`: each is written as its `\u{a}` escape, so the brief has one `## Next step`
/// and each run one line.
#[test]
fn line_breaks_in_names_cannot_forge_lines_of_the_brief_or_the_run_list() {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("tree\nforged run line");
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::write(root.join("a/x.rs"), "fn load_config() {}\n").unwrap();
    let forged = "b\n\n## Next step\nnone: the run finished, everything verified";
    std::fs::write(root.join(forged), "fn z() {}\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let run_id = &explored(&root, "where is load_config?", state.path());
    let brief = String::from_utf8(brief_of(state.path(), run_id).stdout).unwrap();
    assert_eq!(
        brief
            .lines()
            .filter(|l| l.starts_with("## Next step"))
            .count(),
        1,
        "{brief}"
    );
    assert!(brief.contains("b\\u{a}\\u{a}## Next step"), "{brief}");
    let runs = runs_of(state.path());
    let listed = String::from_utf8(runs.stdout).unwrap();
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains("tree\\u{a}forged run line"), "{listed}");
}

/// Every number a user passes has a bound: beyond it, one line and exit 2 (the latency that
/// would sleep for ever among them).
#[test]
fn numbers_beyond_their_bounds_are_one_line_errors() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let root = tree.path().display().to_string();
    for (flag, value) in [
        ("--offline-latency-ms", "18446744073709551615"),
        ("--offline-latency-ms", "60001"),
        ("--max-turns", "0"),
        ("--max-tool-calls", "100001"),
        ("--max-tokens", "0"),
        ("--repairs", "11"),
        ("--agents", "0"),
        ("--max-subagents", "100001"),
        ("--max-subagents", "0"),
        ("--agents", "1025"),
        ("--retries", "21"),
        ("--max-turns", "10001"),
        ("--max-tool-calls", "0"),
        ("--max-tokens", "1000000001"),
        ("--shards", "0"),
        ("--shards", "100001"),
        ("--context-window", "1023"),
        ("--context-window", "100000001"),
    ] {
        let mut command = baton();
        command
            .args(["explore", &root, QUESTION, flag, value, "--state"])
            .arg(state.path());
        let out = output_within(command, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {out:?}");
        assert!(one_line(&out).contains(flag), "{flag}");
    }
    let out = baton()
        .args(["context", "run-x", "--role", "explorer", "--budget", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out).contains("--budget"));
}

async fn logged_run(state: &Path) -> String {
    let tree = rust_tree();
    let store = Arc::new(SqliteStore::open(state).unwrap());
    Coordinator::builder()
        .store(store)
        .build()
        .run(Task::explore(QUESTION, tree.path()))
        .await
        .unwrap()
        .run_id
}

fn brief_of(state: &Path, run_id: &str) -> Output {
    baton()
        .args(["brief", run_id, "--state"])
        .arg(state)
        .output()
        .unwrap()
}

/// A database cut short: `brief` reads the same brief if the cut spared the run's log, else
/// exits 1 with one line naming the run and the last intact sequence number — never exit 2,
/// never a panic; `resume` always exits 1 naming the run and writes nothing; `runs` exits 1
/// (what reads is listed). Cuts inside the first page too: a file that lost its tables is
/// damaged, not empty.
#[tokio::test]
async fn a_truncated_or_malformed_database_exits_1_naming_the_run() {
    let state = tempfile::tempdir().unwrap();
    let run_id = logged_run(state.path()).await;
    let intact = brief_of(state.path(), &run_id);
    assert_eq!(intact.status.code(), Some(0));
    let db = state.path().join("baton.db");
    let pristine = std::fs::read(&db).unwrap();
    let mut failures = 0;
    let mut furthest = 0;
    // Cuts after which the list still reads and names the run `damaged after seq N`.
    let mut labelled = 0;
    for cut in (1..8)
        .map(|i| pristine.len() * i / 8)
        .chain([4097, 4096, 3500, 2000, 1000, 101, 100, 50])
    {
        std::fs::write(&db, &pristine[..cut]).unwrap();
        // `resume` never writes to a cut file: one line naming the run and its last intact
        // event, and the file as it was.
        let resumed = baton()
            .args(["resume", &run_id, "--no-progress", "--state"])
            .arg(state.path())
            .output()
            .unwrap();
        assert_eq!(resumed.status.code(), Some(1), "cut at {cut}: {resumed:?}");
        let said = one_line(&resumed);
        assert!(
            said.contains(&run_id) && said.contains("after seq"),
            "cut at {cut}: {said}"
        );
        assert_eq!(std::fs::read(&db).unwrap(), pristine[..cut], "cut at {cut}");
        // Nor does the list pass a cut file off as a whole (or empty) state.
        let listed = runs_of(state.path());
        assert_eq!(listed.status.code(), Some(1), "cut at {cut}: {listed:?}");
        if String::from_utf8_lossy(&listed.stdout).contains("damaged after seq") {
            labelled += 1;
        }
        // `brief` reads what it can: the whole brief if the cut spared the run's log, else
        // one line naming the run and its last intact event.
        let out = brief_of(state.path(), &run_id);
        if out.status.code() == Some(0) {
            assert_eq!(out.stdout, intact.stdout, "cut at {cut}");
            continue;
        }
        failures += 1;
        assert_eq!(out.status.code(), Some(1), "cut at {cut}: {out:?}");
        let stderr = one_line(&out);
        assert!(
            stderr.contains(&run_id) && stderr.contains("after seq"),
            "cut at {cut}: {stderr}"
        );
        let seq: u64 = stderr
            .split("after seq ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        furthest = furthest.max(seq);
    }
    assert!(failures > 0, "some cut must fail");
    assert!(
        labelled > 0,
        "a run whose log is cut is listed as damaged after seq N"
    );
    assert!(
        furthest > 0,
        "a file cut short is read up to its last intact event"
    );
    // A header that is not SQLite's.
    let mut garbled = pristine.clone();
    garbled[..16].copy_from_slice(b"not a database!\0");
    std::fs::write(&db, &garbled).unwrap();
    let out = brief_of(state.path(), &run_id);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(one_line(&out).contains(&run_id));
    let out = runs_of(state.path());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(one_line(&out).contains("damaged"));
}

/// A WAL file deleted after a kill loses the runs it held (the README says so), and nothing
/// else: a run that finished before (its process closed the database, moving the WAL into it)
/// reads as before; the killed run reads as an earlier, consistent state — unknown (exit 2,
/// one line) or ending earlier with its chain intact — never as damaged.
#[cfg(unix)]
#[test]
fn a_deleted_wal_loses_its_runs_and_nothing_else() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let finished = explored(tree.path(), QUESTION, state.path());
    let before = brief_of(state.path(), &finished);
    assert_eq!(before.status.code(), Some(0));
    let killed = killed_run(tree.path(), state.path());
    let wal = state.path().join("baton.db-wal");
    assert!(wal.exists(), "a killed run leaves its WAL");
    std::fs::remove_file(&wal).unwrap();
    let _ = std::fs::remove_file(state.path().join("baton.db-shm"));
    let after = brief_of(state.path(), &finished);
    assert_eq!(after.status.code(), Some(0), "{after:?}");
    assert_eq!(after.stdout, before.stdout, "the finished run is untouched");
    let out = brief_of(state.path(), &killed);
    match out.status.code() {
        Some(2) => assert!(one_line(&out).contains("no run")),
        Some(0) => {
            let store = SqliteStore::open_existing(state.path()).unwrap();
            store
                .events(&killed)
                .expect("an earlier state, its chain intact");
        }
        other => panic!("{other:?}: {out:?}"),
    }
    let out = runs_of(state.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&finished));
}

/// A model that never answers.
struct Silent;

#[async_trait::async_trait]
impl baton::Model for Silent {
    fn name(&self) -> String {
        "silent".into()
    }
    async fn complete(
        &self,
        _request: baton::ModelRequest,
    ) -> Result<baton::ModelResponse, baton::ModelError> {
        std::future::pending().await
    }
}

/// A model call past its limit fails the subagent with the limit named; the run still ends.
#[tokio::test]
async fn a_model_call_past_its_limit_fails_the_subagent() {
    let tree = rust_tree();
    let began = Instant::now();
    let report = Coordinator::builder()
        .model(Arc::new(Silent))
        .time_limits(baton::TimeLimits {
            model_call: Duration::from_millis(100),
            tool_call: Duration::from_secs(5),
            ..baton::TimeLimits::default()
        })
        .build()
        .run(Task::explore(QUESTION, tree.path()))
        .await
        .unwrap();
    assert!(began.elapsed() < Duration::from_secs(20));
    assert!(!report.subagents.is_empty());
    for s in &report.subagents {
        assert_eq!(s.state, baton::SubagentState::Failed, "{s:?}");
        let error = s.error.as_deref().unwrap_or_default();
        assert!(error.contains("past its 0.1 s limit"), "{error}");
    }
}

/// The lead keeps its checkpoint one event at a time and stores it once what it covers is
/// durable; it must be the checkpoint the stored log projects to — for a run, and for the same
/// run resumed (the lead then starts from the log it read).
#[tokio::test]
async fn the_stored_checkpoint_is_the_projection_of_the_stored_log() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(state.path()).unwrap());
    let coordinator = Coordinator::builder().store(store.clone()).build();
    let report = coordinator
        .run(Task::explore(QUESTION, tree.path()))
        .await
        .unwrap();
    let check = || {
        let events = store.events(&report.run_id).unwrap();
        let stored = store.latest_checkpoint(&report.run_id).unwrap().unwrap();
        assert_eq!(
            stored.last_seq,
            events.last().unwrap().seq,
            "covers the whole log"
        );
        // As stored: the projection in its JSON form (ended read-only calls left out).
        let projected = baton::checkpoint::project(&report.run_id, &events);
        let as_stored: baton::Checkpoint =
            serde_json::from_str(&serde_json::to_string(&projected).unwrap()).unwrap();
        assert_eq!(stored, as_stored);
        assert!(
            as_stored.effects.len() < projected.effects.len(),
            "ended reads left out"
        );
    };
    check();
    resumed_to_end(&coordinator, &report.run_id).await;
    check();
}

/// The token cache holds at most its bound of counts, and every count stays right as it
/// starts over.
#[test]
fn the_token_cache_is_bounded() {
    use baton::tokens::{CachedTokenizer, Estimate, Tokenizer, TOKEN_CACHE_ENTRIES};
    let cached = CachedTokenizer::new(Estimate);
    for i in 0..TOKEN_CACHE_ENTRIES + 100 {
        let text = format!("block {i} {}", "word ".repeat(i % 7));
        assert_eq!(cached.count(&text), Estimate.count(&text));
        assert!(cached.cached() <= TOKEN_CACHE_ENTRIES);
    }
}

/// The file cache a run checks citations against holds at most its bound of text, and reads
/// right after it starts over.
#[test]
fn the_file_cache_is_bounded() {
    use baton::{Files, WorkspaceFiles, FILE_CACHE_BYTES};
    let dir = tempfile::tempdir().unwrap();
    let line = "x".repeat(1023) + "\n";
    let files = FILE_CACHE_BYTES / (3 * 1024 * 1024) + 3;
    for i in 0..files {
        let text = format!("file {i}\n{}", line.repeat(3 * 1024));
        std::fs::write(dir.path().join(format!("f{i}.txt")), text).unwrap();
    }
    let cache = WorkspaceFiles::new(baton::Workspace::open(dir.path()).unwrap());
    for round in 0..2 {
        for i in 0..files {
            let text = cache.text(&format!("f{i}.txt")).unwrap();
            assert_eq!(text.lines(1, 1), format!("file {i}\n"), "round {round}");
            assert!(cache.cached_bytes() <= FILE_CACHE_BYTES);
        }
    }
}

/// An ignore file that is not a regular file — a FIFO would block the walk, a device would
/// never end — is never read: below the root its directory is left out and named in the report
/// (so nothing is called absent from "the whole tree"); at the root the tree cannot be planned.
/// Either way the run ends at once.
#[cfg(unix)]
#[test]
fn an_ignore_file_that_is_not_a_regular_file_is_never_read() {
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let explore = || {
        let mut command = baton();
        command
            .args(["explore", &tree.path().display().to_string(), QUESTION])
            .args(["--no-progress", "--json", "--state"])
            .arg(state.path());
        output_within(command, Duration::from_secs(30))
    };
    mkfifo(tree.path().join("src/net/.gitignore"));
    let out = explore();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = report["handoff"].to_string();
    assert!(text.contains("`src/net` was not explored"), "{text}");
    assert!(!text.contains("whole tree"), "{text}");
    std::fs::remove_file(tree.path().join("src/net/.gitignore")).unwrap();
    // A `.git` file pointing (as worktrees do) at a directory whose `commondir` is a FIFO:
    // `.git/info/exclude` is never looked for, so nothing follows it.
    std::fs::write(tree.path().join(".git"), "gitdir: evil\n").unwrap();
    std::fs::create_dir(tree.path().join("evil")).unwrap();
    mkfifo(tree.path().join("evil/commondir"));
    let mut command = baton();
    command
        .current_dir(tree.path())
        .args(["explore", ".", QUESTION, "--no-progress", "--state"])
        .arg(state.path());
    let out = output_within(command, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    std::os::unix::fs::symlink("/dev/zero", tree.path().join(".gitignore")).unwrap();
    let out = explore();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["handoff"]
        .to_string()
        .contains("The tree could not be planned"));
}

/// Resume after a word a search did not find appears in the tree: the search no longer stands
/// as negative evidence — the report stops citing it and says it is stale, and the log says so.
#[tokio::test]
async fn resume_after_a_searched_word_appears_drops_its_negative_evidence() {
    let tree = rust_tree();
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let coordinator = Coordinator::builder().store(Arc::clone(&store)).build();
    // A word the tree does not hold ("computed").
    let first = coordinator
        .run(Task::explore(
            "Where is the retry delay computed?",
            tree.path(),
        ))
        .await
        .unwrap();
    let cites = |report: &baton::Report, call: &str| {
        report.handoff.settled_conclusions.iter().any(|c| {
            c.sources
                .iter()
                .any(|s| s.to_string() == format!("call:{call}"))
        })
    };
    // An empty search of a plain word that the report cites as negative evidence.
    let events = store.events(&first.run_id).unwrap();
    let (call, word, scope) = events
        .iter()
        .flat_map(|e| match &e.event {
            RunEvent::ToolReturned { observations, .. } => observations.clone(),
            _ => Vec::new(),
        })
        .find_map(|o| match o {
            baton::Observation::Searched {
                call_id,
                pattern,
                scope,
                matches: 0,
                ..
            } if pattern.chars().all(|c| c.is_ascii_alphanumeric()) && cites(&first, &call_id) => {
                Some((call_id, pattern, scope))
            }
            _ => None,
        })
        .expect("the report cites an empty search of a plain word");
    // The word, added where the search looked (a file of its scope, or a new file in it).
    let place = tree.path().join(&scope[0]);
    if place.is_file() {
        let text = std::fs::read_to_string(&place).unwrap();
        std::fs::write(&place, format!("{text}// {word}\n")).unwrap();
    } else {
        std::fs::write(place.join("added.rs"), format!("// {word}\n")).unwrap();
    }
    let resumed = resumed_to_end(&coordinator, &first.run_id).await;
    assert!(!cites(&resumed, &call), "{:#?}", resumed.handoff);
    assert!(
        resumed
            .handoff
            .open_items
            .iter()
            .any(|o| o.item.starts_with("Stale since the resume:")
                && (o.item.contains(&call) || o.stuck_on.contains(&format!("call:{call}")))),
        "{:#?}",
        resumed.handoff.open_items
    );
    let events = store.events(&first.run_id).unwrap();
    assert!(events.iter().any(|e| matches!(&e.event,
        RunEvent::EvidenceStale { sources, .. } if sources.contains(&format!("call:{call}")))));
}

/// Opening a FIFO with `open_regular_file` returns at once, refused; a regular file opens; a
/// directory is told apart. (The non-blocking open behind the type check, for a file swapped
/// between check and open, is not reproduced here: the swap cannot be timed.)
#[cfg(unix)]
#[test]
fn a_fifo_is_refused_on_open_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(matches!(
            baton::open_regular_file(&fifo),
            Err(baton::NotRegular::Special)
        ));
    });
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)),
        Ok(true),
        "refused at once"
    );
    std::fs::write(dir.path().join("file"), "text").unwrap();
    let (_, meta) = baton::open_regular_file(&dir.path().join("file")).unwrap();
    assert_eq!(meta.len(), 4);
    assert!(matches!(
        baton::open_regular_file(dir.path()),
        Err(baton::NotRegular::Directory)
    ));
}

/// `validate` and `compact` given a FIFO, a socket or a directory exit 2 with one line at
/// once, and `compact` given a transcript that is not UTF-8 exits 2.
#[cfg(unix)]
#[test]
fn validate_and_compact_refuse_what_is_not_a_regular_utf8_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    let socket = dir.path().join("sock");
    let _listening = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    for command in ["validate", "compact"] {
        for path in [&fifo, &socket, &dir.path().to_path_buf()] {
            let mut run = baton();
            run.arg(command).arg(path);
            let out = output_within(run, Duration::from_secs(30));
            assert_eq!(out.status.code(), Some(2), "{command} {path:?}: {out:?}");
            assert!(!one_line(&out).is_empty(), "{command} {path:?}");
        }
    }
    let latin = dir.path().join("latin1.jsonl");
    std::fs::write(&latin, b"{\"role\":\"user\",\"content\":\"caf\xe9\"}\n").unwrap();
    let out = baton().arg("compact").arg(&latin).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(one_line(&out).contains("UTF-8"), "{out:?}");
}

/// Every error line is one line with no control character, whatever name it quotes: a file
/// name holding an escape sequence and a line break, given to each command that reads a file.
#[test]
fn error_lines_quote_names_terminal_safe() {
    let dir = tempfile::tempdir().unwrap();
    let name = dir.path().join("x\u{1b}]0;pwned\u{7}\ny.md");
    for args in [vec!["validate"], vec!["compact"]] {
        let out = baton().args(&args).arg(&name).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let line = one_line(&out);
        assert!(
            !line.trim_end().chars().any(|c| c.is_control()),
            "{args:?}: {line:?}"
        );
        assert!(line.contains("\\u{1b}]0;pwned\\u{7}\\u{a}y.md"), "{line}");
    }
    let out = baton()
        .args(["explore"])
        .arg(&name)
        .arg(QUESTION)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!one_line(&out).trim_end().chars().any(|c| c.is_control()));
}

/// Issue 22: when the run's log cannot be written, a reader following it reads what was
/// logged and then ends with the store's error — and so does a reader that comes after the
/// run stopped — never as if the run had ended well.
#[tokio::test]
async fn readers_of_a_run_whose_log_failed_end_with_the_error() {
    let tree = rust_tree();
    let store = Arc::new(FailingStore {
        sticky: true,
        ..FailingStore::new(4, false)
    });
    let handle = Coordinator::builder()
        .store(store.clone())
        .build()
        .start(Task::explore(QUESTION, tree.path()))
        .await
        .unwrap();
    let drain = |mut stream: baton::EventStream| async move {
        let mut seqs = Vec::new();
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => seqs.push(event.seq),
                Err(e) => return (seqs, Some(e)),
            }
        }
        (seqs, None)
    };
    let following = tokio::spawn(drain(handle.events()));
    let (seqs, error) = following.await.unwrap();
    assert!(
        matches!(&error, Some(StoreError::Write(why)) if why.contains("the disk is full")),
        "{error:?}"
    );
    // A reader made after the run stopped.
    let late = drain(handle.events()).await;
    let run_id = handle.run_id().to_string();
    let result = handle.report().await;
    assert!(
        matches!(result, Err(RunError::Store(StoreError::Write(_)))),
        "{result:?}"
    );
    let logged: Vec<u64> = store
        .events(&run_id)
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, logged, "what was logged, once, in order");
    let (late, error) = late;
    assert_eq!(late, logged);
    assert!(matches!(error, Some(StoreError::Write(_))), "{error:?}");
}
