//! Issue 26, item 5: `baton forget RUN SOURCE --reason TEXT` — the withdrawn source's text
//! appears in no later context, brief, audit or report (grep), while its tombstone does; the
//! log keeps what happened and records the withdrawal as one more event.

use std::path::Path;
use std::process::Command;

use baton::checkpoint::EventStore;
use serde_json::Value;

/// The identifier only the withdrawn file holds: the question does not name it.
const SECRET: &str = "zebra_cipher_key";
const TOMBSTONE: &str = "src/secret.rs: content unavailable (withdrawn: licence withdrawn)";

use crate::support::{baton_in as baton, stdout_ok as text};

/// Whether any file under `dir` holds `needle`.
fn grep_dir(dir: &Path, needle: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let path = e.path();
            if path.is_dir() {
                grep_dir(&path, needle)
            } else {
                std::fs::read(&path).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
            }
        })
}

#[test]
fn a_forgotten_source_leaves_every_later_output_and_its_tombstone_stays() {
    let tree = crate::support::tree(&[
        (
            "src/secret.rs",
            "pub fn zebra_cipher_key() -> u64 {\n    7\n}\n",
        ),
        ("src/lib.rs", "pub fn other() {}\n"),
    ]);
    let state = tempfile::tempdir().unwrap();
    let root = tree.path().to_str().unwrap();
    let first = text(&baton(
        state.path(),
        &[
            "explore",
            root,
            "where is the cipher key function defined?",
            "--json",
            "--no-progress",
        ],
    ));
    assert!(first.contains(SECRET), "the run cites it: {first}");
    let report: Value = serde_json::from_str(&first).unwrap();
    let run = report["run_id"].as_str().unwrap().to_string();

    // Refusals: each one line, exit 2, nothing written.
    let long = "x".repeat(501);
    for (source, reason, says) in [
        (
            "src/secret.rs",
            long.as_str(),
            "the reason is over 500 characters",
        ),
        (
            "src/nothing.rs",
            "x",
            "no conclusion of the run cites src/nothing.rs",
        ),
        ("src/secret.rs", "  ", "the reason is empty"),
        ("src/secret.rs:", "x", "the source `src/secret.rs:`"),
    ] {
        let out = baton(state.path(), &["forget", &run, source, "--reason", reason]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{source}: {err}");
        assert!(
            err.contains(says) && err.trim().lines().count() == 1,
            "{err}"
        );
    }
    let out = baton(
        state.path(),
        &["forget", "run-none", "src/secret.rs", "--reason", "x"],
    );
    assert_eq!(out.status.code(), Some(2));
    {
        // A run another process holds is refused, and nothing is written.
        let store = baton::SqliteStore::open(state.path()).unwrap();
        let _held = store.claim(&run).unwrap();
        let out = baton(
            state.path(),
            &["forget", &run, "src/secret.rs", "--reason", "x"],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let store = baton::SqliteStore::open(state.path()).unwrap();
    let logged = store.events(&run).unwrap();
    assert!(logged.iter().all(|e| e.event.kind() != "source_forgotten"));
    drop(store);

    let kept_reports = state.path().join("reports");
    assert!(
        grep_dir(&kept_reports, SECRET),
        "the explore kept its report"
    );
    let said = text(&baton(
        state.path(),
        &[
            "forget",
            &run,
            "src/secret.rs",
            "--reason",
            "licence withdrawn",
        ],
    ));
    assert!(said.starts_with(TOMBSTONE), "{said}");
    assert!(
        !grep_dir(&kept_reports, SECRET),
        "the kept report went with it"
    );
    let again = baton(
        state.path(),
        &["forget", &run, "src/secret.rs:1-3", "--reason", "x"],
    );
    assert_eq!(
        again.status.code(),
        Some(2),
        "a range of a withdrawn file is withdrawn"
    );

    // Every later output, before and after a resume: no text of it, its tombstone.
    let run = run.as_str();
    let outputs = |when: &str| -> Vec<(String, String)> {
        [
            vec!["brief", run],
            vec!["brief", run, "--json"],
            vec!["context", run, "--role", "explorer"],
            vec!["context", run, "--role", "explorer", "--json"],
            vec!["context", run, "--role", "lead"],
            vec!["audit", run],
            vec!["audit", run, "--json"],
        ]
        .into_iter()
        .map(|args| {
            (
                format!("{when}: {}", args.join(" ")),
                text(&baton(state.path(), &args)),
            )
        })
        .collect()
    };
    let mut seen = outputs("before the resume");
    let resumed = text(&baton(
        state.path(),
        &["resume", run, "--json", "--no-progress"],
    ));
    seen.push(("resume --json".into(), resumed.clone()));
    let report: Value = serde_json::from_str(&resumed).unwrap();
    let open = report["handoff"]["open_items"].to_string();
    assert!(
        open.contains(&format!("Withdrawn: a conclusion citing {TOMBSTONE}")),
        "{open}"
    );
    seen.extend(outputs("after the resume"));
    for (what, out) in &seen {
        assert!(
            !out.contains(SECRET),
            "{what} holds the withdrawn text:\n{out}"
        );
        let shown = out.contains(TOMBSTONE)
            || out.contains("content unavailable (withdrawn: licence withdrawn)");
        assert!(shown, "{what} does not show the tombstone:\n{out}");
    }

    // The log keeps what happened: the accepted handoff still holds it, and the withdrawal
    // is one event after it, with the tombstone's digest and the decision it influenced.
    let store = baton::SqliteStore::open(state.path()).unwrap();
    let events = store.events(run).unwrap();
    let accepted = events
        .iter()
        .find(|e| {
            e.event.kind() == "handoff_accepted"
                && serde_json::to_string(&e.event).unwrap().contains(SECRET)
        })
        .expect("history is not rewritten");
    let forgotten = events
        .iter()
        .find(|e| e.event.kind() == "source_forgotten")
        .unwrap();
    let t = serde_json::to_value(&forgotten.event).unwrap();
    assert!(forgotten.seq > accepted.seq);
    assert_eq!(t["source"], "src/secret.rs");
    assert_eq!(t["reason"], "licence withdrawn");
    assert_eq!(t["classification"], "file; finding");
    assert_eq!(t["digest"].as_str().unwrap().len(), 64);
    assert!(t["decisions"]
        .as_array()
        .unwrap()
        .contains(&Value::from(accepted.seq)));
    // The withdrawn file is not read again in this run: the gate denies it from now on.
    let denied = events
        .iter()
        .find_map(|e| match &e.event {
            baton::RunEvent::ConstraintStated {
                text, provenance, ..
            } if provenance == "baton forget" => Some(text.clone()),
            _ => None,
        })
        .expect("the withdrawal binds");
    assert_eq!(
        denied,
        "Never read src/secret.rs: it was withdrawn (licence withdrawn)."
    );
    let schema: Value =
        serde_json::from_str(include_str!("../contracts/event.schema.json")).unwrap();
    crate::durable::events_fit_their_schema(&events, &schema);

    // A fork taken before the withdrawal is bound by it too, and a new question there that
    // finds the file again still never shows its text.
    let fork: Value = serde_json::from_str(&text(&baton(
        state.path(),
        &[
            "fork",
            run,
            "--at",
            "3",
            "--question",
            "which function returns seven?",
            "--json",
        ],
    )))
    .unwrap();
    let fork = fork["run_id"].as_str().unwrap();
    let resumed = text(&baton(
        state.path(),
        &["resume", fork, "--json", "--no-progress"],
    ));
    assert!(!resumed.contains(SECRET), "{resumed}");
    let brief = text(&baton(state.path(), &["brief", fork]));
    assert!(!brief.contains(SECRET), "{brief}");
}

/// A withdrawn search call takes its negative evidence with it.
#[test]
fn a_forgotten_call_takes_its_negative_evidence() {
    let tree = crate::support::tree(&[("src/lib.rs", "pub fn other() {}\n")]);
    let state = tempfile::tempdir().unwrap();
    let root = tree.path().to_str().unwrap();
    let out = text(&baton(
        state.path(),
        &[
            "explore",
            root,
            "where is the quux frobnicator?",
            "--json",
            "--no-progress",
        ],
    ));
    let report: Value = serde_json::from_str(&out).unwrap();
    let run = report["run_id"].as_str().unwrap();
    let negative = report["handoff"]["settled_conclusions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "negative_evidence")
        .expect("nothing matched")
        .clone();
    let call = negative["sources"][0].as_str().unwrap().to_string();
    let id = call.strip_prefix("call:").unwrap().to_string();
    let brief = |when: &str| -> String {
        let out = text(&baton(state.path(), &["brief", run, "--json"]));
        let doc: Value = serde_json::from_str(&out).unwrap();
        let _ = when;
        doc["checkpoint"]["negative_evidence"].to_string()
    };
    assert!(brief("before").contains(&format!("\"{id}\"")));
    text(&baton(
        state.path(),
        &["forget", run, &call, "--reason", "x"],
    ));
    let left = brief("after");
    assert!(!left.contains(&format!("\"{id}\"")), "{left}");
    let resumed = text(&baton(
        state.path(),
        &["resume", run, "--json", "--no-progress"],
    ));
    let report: Value = serde_json::from_str(&resumed).unwrap();
    let settled = report["handoff"]["settled_conclusions"].to_string();
    assert!(!settled.contains(&format!("\"{call}\"")), "{settled}");
}

/// A key the environment holds, typed into a reason or a fork's question, is never logged.
#[test]
fn a_key_in_a_reason_or_a_question_is_not_logged() {
    let key = "sk-test-FORGETKEY0123456789";
    let tree = crate::support::tree(&[(
        "src/secret.rs",
        "pub fn zebra_cipher_key() -> u64 {\n    7\n}\n",
    )]);
    let state = tempfile::tempdir().unwrap();
    let root = tree.path().to_str().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(args)
            .arg("--state")
            .arg(state.path())
            .env("OPENAI_API_KEY", key)
            .env_remove("BATON_STATE")
            .output()
            .expect("run baton")
    };
    let first = text(&run(&[
        "explore",
        root,
        "where is the cipher key function defined?",
        "--json",
        "--no-progress",
    ]));
    let report: Value = serde_json::from_str(&first).unwrap();
    let id = report["run_id"].as_str().unwrap();
    let reason = format!("leaked {key}");
    text(&run(&["forget", id, "src/secret.rs", "--reason", &reason]));
    let question = format!("where is {key} used?");
    text(&run(&["fork", id, "--at", "3", "--question", &question]));
    assert!(!grep_dir(state.path(), key), "the key reached the state");
}
