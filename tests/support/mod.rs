//! Fixture trees built in temp dirs, and checks shared by the tests.

pub(crate) mod http;
pub(crate) mod serve;

use std::fs;
use std::path::Path;

use baton::{ConclusionKind, Report, SourceId};

/// Runs one tool call in `ws` (its policy the gate's) on a runtime of its own, as a subagent
/// would: the registry's gate first.
pub(crate) fn execute(
    registry: &baton::ToolRegistry,
    ws: &baton::Workspace,
    call: baton::ToolCall,
) -> baton::ToolResult {
    let cx = baton::ToolContext::new("test", "t", &call.id).with_workspace(ws.clone());
    let registry = registry.clone();
    // A thread of its own: the caller may be on a runtime already.
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(registry.execute(&call, &cx))
    })
    .join()
    .expect("the tool call's thread")
}

/// Writes `files` (path, content) under a new temp dir.
pub(crate) fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, content) in files {
        let full = dir.path().join(path);
        fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        fs::write(full, content).expect("write");
    }
    dir
}

pub(crate) const RETRY_RS: &str = r#"//! Retry policy for network calls.

use std::time::Duration;

/// How long to wait between attempts.
pub struct RetryPolicy {
    base_ms: u64,
    cap_ms: u64,
}

impl RetryPolicy {
    /// A policy starting at `base_ms`, never waiting longer than `cap_ms`.
    pub fn new(base_ms: u64, cap_ms: u64) -> RetryPolicy {
        RetryPolicy { base_ms, cap_ms }
    }

    /// The delay before attempt `attempt`: doubles per attempt up to the cap.
    pub fn next_delay(&self, attempt: u32) -> Duration {
        let doubled = self.base_ms.saturating_mul(1u64 << attempt.min(31));
        Duration::from_millis(doubled.min(self.cap_ms))
    }
}
"#;

/// A small Rust tree: a retry policy, a cache, a client that uses both, tests and docs.
pub(crate) fn rust_tree() -> tempfile::TempDir {
    tree(&[
        ("Cargo.toml", "[package]\nname = \"netkit\"\nversion = \"0.1.0\"\n"),
        ("README.md", "# netkit\n\nCalls `RetryPolicy::next_delay` between attempts.\n"),
        ("src/lib.rs", "//! netkit.\npub mod net;\npub mod storage;\n"),
        ("src/net/mod.rs", "//! Networking.\npub mod client;\npub mod retry;\n"),
        ("src/net/retry.rs", RETRY_RS),
        (
            "src/net/client.rs",
            "//! A client that retries.\nuse super::retry::RetryPolicy;\n\npub struct Client {\n    policy: RetryPolicy,\n}\n\nimpl Client {\n    pub fn wait_before(&self, attempt: u32) -> std::time::Duration {\n        self.policy.next_delay(attempt)\n    }\n}\n",
        ),
        (
            "src/storage/cache.rs",
            "//! An in-memory cache.\nuse std::collections::HashMap;\n\npub struct Cache {\n    entries: HashMap<String, Vec<u8>>,\n}\n\nimpl Cache {\n    pub fn get(&self, key: &str) -> Option<&Vec<u8>> {\n        self.entries.get(key)\n    }\n}\n",
        ),
        ("src/storage/mod.rs", "//! Storage.\npub mod cache;\n"),
        (
            "tests/retry_test.rs",
            "use netkit::net::retry::RetryPolicy;\n\n#[test]\nfn next_delay_is_capped() {\n    let p = RetryPolicy::new(10, 100);\n    assert_eq!(p.next_delay(9).as_millis(), 100);\n}\n",
        ),
    ])
}

pub(crate) const TOKENS_PY: &str = r#""""Access tokens and their refresh."""
import time


class TokenStore:
    """Keeps one access token per user."""

    def __init__(self):
        self.tokens = {}

    def get(self, user):
        return self.tokens.get(user)


def refresh_token(store, user, issuer):
    """Replace an expired token with a fresh one from the issuer."""
    token = store.get(user)
    if token is None or token.expires_at < time.time():
        token = issuer.issue(user)
        store.tokens[user] = token
    return token
"#;

/// A small Python tree: token refresh, an API client, tests.
pub(crate) fn python_tree() -> tempfile::TempDir {
    tree(&[
        ("setup.py", "from setuptools import setup\nsetup(name='svc')\n"),
        ("svc/__init__.py", ""),
        ("svc/auth/__init__.py", ""),
        ("svc/auth/tokens.py", TOKENS_PY),
        (
            "svc/api/client.py",
            "from svc.auth.tokens import refresh_token\n\n\nclass Client:\n    def call(self, store, user, issuer):\n        token = refresh_token(store, user, issuer)\n        return {'Authorization': token.value}\n",
        ),
        (
            "tests/test_tokens.py",
            "from svc.auth.tokens import TokenStore, refresh_token\n\n\ndef test_refresh_replaces_expired():\n    store = TokenStore()\n    assert store.get('a') is None\n",
        ),
    ])
}

/// Checks every settled finding of a report against the files: each cited range exists, and
/// every backticked text of the claim occurs within the cited lines byte for byte, inner
/// whitespace included (what `grep -F` on the quote finds).
pub(crate) fn assert_citations_hold(report: &Report, root: &Path) {
    for c in &report.handoff.settled_conclusions {
        assert!(
            !c.sources.is_empty(),
            "conclusion without source: {}",
            c.claim
        );
        if c.kind == ConclusionKind::NegativeEvidence {
            continue;
        }
        let mut cited = String::new();
        for s in &c.sources {
            let (path, start, end) = s
                .file_lines()
                .unwrap_or_else(|| panic!("finding cites no lines: {s}"));
            let text = fs::read_to_string(root.join(path))
                .unwrap_or_else(|_| panic!("cited file {path} exists"));
            let lines: Vec<&str> = text.lines().collect();
            assert!(
                start >= 1 && (end as usize) <= lines.len(),
                "{s} is inside {path} ({} lines)",
                lines.len()
            );
            for line in &lines[start as usize - 1..end as usize] {
                cited.push_str(line);
                cited.push('\n');
            }
        }
        let quoted: Vec<&str> = c.claim.split('`').skip(1).step_by(2).collect();
        assert!(
            !quoted.is_empty(),
            "a finding names what it found in backticks: {}",
            c.claim
        );
        for q in quoted {
            assert!(
                cited.contains(q),
                "`{q}` of \"{}\" is not in the cited lines",
                c.claim
            );
        }
    }
}

/// The sources of every settled finding (negative evidence left out).
pub(crate) fn finding_sources(report: &Report) -> impl Iterator<Item = &SourceId> {
    report
        .handoff
        .settled_conclusions
        .iter()
        .filter(|c| c.kind == ConclusionKind::Finding)
        .flat_map(|c| c.sources.iter())
}

/// The claims of a report's settled conclusions, in order.
pub(crate) fn settled_claims(report: &Report) -> Vec<&str> {
    report
        .handoff
        .settled_conclusions
        .iter()
        .map(|c| c.claim.as_str())
        .collect()
}

/// The document spans every settled finding cites, as `PATH#SPAN`.
pub(crate) fn cited_docs(report: &Report) -> Vec<String> {
    finding_sources(report)
        .filter_map(|s| match s {
            SourceId::Doc { id, span } => {
                Some(format!("{id}#{}", span.as_deref().unwrap_or_default()))
            }
            _ => None,
        })
        .collect()
}

/// The file sources of every settled finding.
pub(crate) fn cited_files(report: &Report) -> Vec<(String, u32, u32)> {
    finding_sources(report)
        .filter_map(|s| match s {
            SourceId::File {
                path,
                lines: Some((a, b)),
            } => Some((path.clone(), *a, *b)),
            _ => None,
        })
        .collect()
}

/// The line of `text` holding `needle`, 1-based.
pub(crate) fn line_of(text: &str, needle: &str) -> u32 {
    text.lines()
        .position(|l| l.contains(needle))
        .expect("needle in fixture") as u32
        + 1
}

/// Asserts that some settled finding cites `path` with a range that reaches within `slack`
/// lines of `line`, and that every citation of the report holds.
pub(crate) fn assert_cites(report: &Report, root: &Path, path: &str, line: u32, slack: u32) {
    let cites = cited_files(report);
    assert!(
        cites
            .iter()
            .any(|(p, a, b)| p == path && *a <= line + slack && *b + slack >= line),
        "expected a citation of {path}:{line}; got {cites:?}"
    );
    assert_citations_hold(report, root);
}

/// Spawns a run with `spawn` and kills it (SIGKILL) once the run it logs in `state` — the
/// first listed that was not there before — satisfies `ready`, polled every 50 ms for at most
/// a minute; returns that run's id. A child that ends first fails the test.
pub(crate) fn kill_when(
    state: &Path,
    spawn: impl FnOnce() -> std::process::Child,
    ready: impl Fn(&[baton::checkpoint::LoggedEvent]) -> bool,
) -> String {
    use baton::checkpoint::{EventStore, SqliteStore};
    let known: Vec<String> = SqliteStore::open_existing(state)
        .ok()
        .and_then(|store| store.runs().ok())
        .map(|runs| runs.into_iter().map(|r| r.run_id).collect())
        .unwrap_or_default();
    let mut child = spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let run_id = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never got there in time"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended ({status}) before it got there");
        }
        let Ok(store) = SqliteStore::open_existing(state) else {
            continue;
        };
        let Some(run) = store
            .runs()
            .ok()
            .and_then(|r| r.into_iter().find(|run| !known.contains(&run.run_id)))
        else {
            continue;
        };
        if store.events(&run.run_id).is_ok_and(|events| ready(&events)) {
            break run.run_id;
        }
    };
    child.kill().expect("kill");
    let _ = child.wait();
    run_id
}

/// How many events of `kind` a log holds.
pub(crate) fn count_kind(events: &[baton::checkpoint::LoggedEvent], kind: &str) -> usize {
    events.iter().filter(|e| e.event.kind() == kind).count()
}

/// A small folder of documents under `dir/docs` whose answer to [`DOCS_QUESTION`] is the
/// first sentence of `retry.md` (line 3).
pub(crate) fn write_docs(dir: &Path) {
    let docs = dir.join("docs");
    fs::create_dir_all(&docs).unwrap();
    fs::write(
        docs.join("retry.md"),
        "# Upload retries\n\nA failed upload is attempted again five times, then the part is dropped.\n\nThe wait doubles after each attempt.\n",
    )
    .unwrap();
    for i in 0..3 {
        fs::write(
            docs.join(format!("other{i}.md")),
            format!("# Other {i}\n\nThe server stores parts in buckets number {i}.\n"),
        )
        .unwrap();
    }
}

/// The question [`write_docs`]'s documents answer.
pub(crate) const DOCS_QUESTION: &str = "How many times is a failed upload attempted again?";

/// The report answers [`DOCS_QUESTION`] first, from `retry.md`, quoting what it holds.
pub(crate) fn assert_docs_answered(report: &Report, dir: &Path) {
    let first = report
        .handoff
        .settled_conclusions
        .first()
        .unwrap_or_else(|| panic!("no settled conclusion: {}", report.to_markdown()));
    assert!(first.claim.contains("five times"), "{}", first.claim);
    assert!(
        cited_docs(report)
            .iter()
            .any(|d| d.starts_with("retry.md#")),
        "{:?}",
        cited_docs(report)
    );
    let text = fs::read_to_string(dir.join("docs/retry.md")).unwrap();
    for quoted in first.claim.split('`').skip(1).step_by(2) {
        assert!(text.contains(quoted), "`{quoted}` is not in retry.md");
    }
}

/// Runs the built `baton` with `args` on the state `state` (`BATON_STATE` unset).
pub(crate) fn baton_in(state: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .arg("--state")
        .arg(state)
        .env_remove("BATON_STATE")
        .output()
        .expect("run baton")
}

/// The stdout of a command that must have exited 0 (its stderr in the panic otherwise).
pub(crate) fn stdout_ok(out: &std::process::Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}
