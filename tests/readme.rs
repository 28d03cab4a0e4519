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
        .take_while(|l| l.starts_with("    ") || l.is_empty())
        .map(|l| l.get(4..).unwrap_or(""))
        .collect();
    format!("{}\n", block.join("\n").trim_end())
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
/// `baton COMMAND --help` gives each flag's documented default.
fn assert_help_defaults(command: &str, defaults: &[(&str, &str)]) {
    let out = baton().args([command, "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for (flag, default) in defaults {
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
fn the_flags_defaults_are_the_documented_ones() {
    assert_help_defaults(
        "explore",
        &[
            ("--agents", "4"),
            ("--max-subagents", "32"),
            ("--max-waves", "2"),
            ("--max-turns", "12"),
            ("--max-tool-calls", "60"),
            ("--max-tokens", "400000"),
            ("--repairs", "2"),
            ("--retries", "4"),
            ("--model", "offline"),
            ("--offline-latency-ms", "0"),
            ("--rpm", "0"),
            ("--tpm", "0"),
        ],
    );
}

#[test]
fn the_serve_defaults_are_the_documented_ones_and_an_unusable_model_is_said_at_start() {
    assert_help_defaults(
        "serve",
        &[
            ("--addr", "127.0.0.1:7878"),
            ("--keep-alive-secs", "15"),
            ("--max-body-bytes", "65536"),
            ("--max-runs", "8"),
        ],
    );
    // A model allowed with no key to reach it: one line at start, exit 2, nothing served.
    let state = tempfile::tempdir().unwrap();
    for command in ["serve", "mcp"] {
        let addr: &[&str] = if command == "serve" {
            &["--addr", "127.0.0.1:0"]
        } else {
            &[]
        };
        let out = baton()
            .arg(command)
            .args(addr)
            .args(["--allow-model", "anthropic:claude-sonnet-4-5", "--state"])
            .arg(state.path())
            .env_remove("ANTHROPIC_API_KEY")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("--allow-model anthropic:claude-sonnet-4-5"),
            "{stderr}"
        );
        assert!(stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
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

/// Splits a shell line into words: whitespace apart, '…' and "…" quoting.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

/// The README's curl walkthrough: its indented lines, each split from its `# comment`.
fn walkthrough() -> Vec<(Vec<String>, String)> {
    let readme = include_str!("../README.md");
    let start = readme
        .find("The curl walkthrough")
        .expect("the walkthrough");
    readme[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with("    "))
        .take_while(|l| l.starts_with("    "))
        .map(|l| match l.split_once("  # ") {
            Some((command, comment)) => (shell_words(command), comment.to_string()),
            None => (shell_words(l), String::new()),
        })
        .collect()
}

/// SSE ids of a stream's text, in order.
fn sse_ids(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().parse().unwrap())
        .collect()
}

#[test]
fn the_readme_curl_walkthrough_runs_as_written() {
    use crate::support::serve::{client, send, Serve};
    let lines = walkthrough();
    assert!(lines.len() >= 9, "{lines:?}");
    let (serve_line, _) = &lines[0];
    assert_eq!(serve_line[..2], ["baton", "serve"], "{serve_line:?}");
    assert_eq!(serve_line.last().map(String::as_str), Some("&"));
    let args = serve_line[1..serve_line.len() - 1].to_vec();
    let tree = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let serve = Serve::start_in(tree.path(), state.path(), &args, &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = client();
        let mut run_id = String::new();
        let mut methods = std::collections::BTreeSet::new();
        for (words, comment) in &lines[1..] {
            assert_eq!(words[0], "curl", "{words:?}");
            let (mut method, mut headers, mut body, mut url) =
                ("GET".to_string(), Vec::new(), None, None);
            let mut rest = words[1..].iter();
            while let Some(word) = rest.next() {
                match word.as_str() {
                    "-s" | "-N" | "-sN" => {}
                    "-X" => method = rest.next().unwrap().clone(),
                    "-H" => headers.push(rest.next().unwrap().clone()),
                    "-d" => body = Some(rest.next().unwrap().clone()),
                    w if w.starts_with('-') => panic!("a curl flag the test does not know: {w}"),
                    w => url = Some(w.to_string()),
                }
            }
            let url = url
                .expect("a URL")
                .replace("localhost:7878", serve.base.trim_start_matches("http://"))
                .replace("RUN_ID", &run_id);
            let url = format!("http://{url}");
            methods.insert(method.clone());
            let mut request = client.request(method.parse().unwrap(), &url);
            let mut last_event_id = None;
            for header in &headers {
                let (name, value) = header.split_once(": ").unwrap();
                if name.eq_ignore_ascii_case("last-event-id") {
                    last_event_id = Some(value.parse::<u64>().unwrap());
                }
                request = request.header(name, value);
            }
            if let Some(body) = body {
                request = request.body(body);
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let expected = comment.get(..3).and_then(|s| s.parse::<u16>().ok());
            let is_events = url.contains("/events");
            let text = response.text().await.unwrap();
            match expected {
                Some(code) => assert_eq!(status, code, "{url}: {text}"),
                None => assert!((200..300).contains(&status), "{url}: {status} {text}"),
            }
            if method == "POST" && url.ends_with("/v1/runs") {
                let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                run_id = value["run_id"].as_str().unwrap().to_string();
            }
            if is_events {
                // Whole, in order, from where it was asked to start, to the run's end.
                let ids = sse_ids(&text);
                let first = last_event_id.map_or(1, |n| n + 1);
                assert_eq!(
                    ids,
                    (first..first + ids.len() as u64).collect::<Vec<_>>(),
                    "{text}"
                );
                assert!(ids.len() > 5, "{text}");
                assert!(text.contains("event: run_finished"), "{text}");
            }
            if url.ends_with(&format!("/v1/runs/{run_id}")) {
                let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(value["state"], "finished");
                assert!(
                    value["report"]["handoff"]["settled_conclusions"]
                        .as_array()
                        .is_some_and(|s| !s.is_empty()),
                    "{value}"
                );
            }
        }
        assert!(!run_id.is_empty() && methods.contains("POST"));
        // The run is the state's, as the command line sees it.
        let seen = send(client.get(serve.url(&format!("/v1/runs/{run_id}")))).await;
        assert_eq!(seen.status, 200);
    });
    let runs = baton()
        .current_dir(tree.path())
        .args(["runs", "--json", "--state"])
        .arg(state.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&runs.stdout).contains("\"run_id\""));
}

#[test]
fn the_readme_lists_every_error_code_with_its_status() {
    let readme = include_str!("../README.md");
    let start = readme.find("is `application/problem+json` —").unwrap();
    let text = &readme[start..];
    let text = &text[text.find("a stable `code`:").unwrap() + 16..];
    let text = &text[..text.find("A server killed").unwrap()];
    let (mut listed, mut pending) = (Vec::new(), Vec::new());
    let mut rest = text;
    while let Some(at) = rest.find(['`', '(']) {
        if rest[at..].starts_with('`') {
            let end = rest[at + 1..].find('`').unwrap() + at + 1;
            pending.push(rest[at + 1..end].to_string());
            rest = &rest[end + 1..];
        } else {
            let end = rest[at..].find(')').unwrap() + at;
            let status: u16 = rest[at + 1..end].parse().unwrap();
            listed.extend(pending.drain(..).map(|c| (c, status)));
            rest = &rest[end + 1..];
        }
    }
    assert!(pending.is_empty(), "{pending:?}");
    let mut expected: Vec<(String, u16)> = baton::server::CODES
        .iter()
        .map(|(c, s, _)| (c.to_string(), *s))
        .collect();
    listed.sort();
    expected.sort();
    assert_eq!(listed, expected);
}
