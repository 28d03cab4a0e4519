//! Constraints are never silently not enforced (`baton explore --constraint`): the common
//! phrasings of "keep out of docs/" are typed and enforced; one that names a place and cannot
//! be typed is refused at the start — exit 2, one line with the typed form to use, no state
//! made — unless `--allow-unenforced`; letter case follows the tree; a place the tree does not
//! hold is a warning on stderr and in the report.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::tree;

fn docs_tree() -> tempfile::TempDir {
    tree(&[
        ("src/lib.rs", "pub fn frobnicator_zeta() {}\n"),
        ("docs/notes.md", "frobnicator_zeta is documented here\n"),
    ])
}

fn explore(root: &Path, state: &Path, question: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("explore")
        .arg(root)
        .arg(question)
        .args(["--json", "--no-progress", "--state"])
        .arg(state)
        .args(extra)
        .env_remove("BATON_LOG")
        .output()
        .unwrap()
}

fn report(out: &Output) -> baton::Report {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    })
}

/// Whether the report cites docs/ anywhere: among its answers or what it found besides.
fn cites_docs(report: &baton::Report) -> bool {
    report
        .handoff
        .settled_conclusions
        .iter()
        .flat_map(|c| &c.sources)
        .chain(report.also_found.iter().flat_map(|a| &a.sources))
        .any(|s| s.to_string().starts_with("docs"))
}

#[test]
fn common_phrasings_of_keeping_out_are_enforced() {
    let root = docs_tree();
    // The control: without a constraint, docs/ is cited.
    let state = tempfile::tempdir().unwrap();
    let free = report(&explore(
        root.path(),
        state.path(),
        "where is frobnicator_zeta?",
        &[],
    ));
    assert!(cites_docs(&free), "{:?}", free.handoff);
    for text in [
        "Avoid docs/",
        "Reading docs/ is forbidden",
        "Never read docs/ (it is private)",
        "Never read docs/ \u{2014} it is private",
        "Never, ever read docs/",
        "NEVER READ DOCS/",
    ] {
        let state = tempfile::tempdir().unwrap();
        let out = explore(
            root.path(),
            state.path(),
            "where is frobnicator_zeta?",
            &["--constraint", text],
        );
        assert_eq!(out.status.code(), Some(0), "{text}: {out:?}");
        let r = report(&out);
        assert!(!cites_docs(&r), "{text}: {:?}", r.handoff);
        let c = &r.constraints[0];
        // An explanation set off is carried, not enforced: the constraint is partly enforced.
        let explained = text.contains("private");
        let expected = if explained {
            baton::Enforcement::Partly
        } else {
            baton::Enforcement::Enforced
        };
        assert_eq!(c.enforcement, expected, "{text}");
        if explained {
            assert!(c.line().contains("partly enforced") && c.line().contains("\"it is private\""));
        }
        assert!(
            c.enforced_as
                .iter()
                .any(|e| e.contains("never read under `docs`")),
            "{text}: {:?}",
            c.enforced_as
        );
    }
}

#[test]
fn a_constraint_naming_a_place_that_cannot_be_typed_is_refused_unless_allowed() {
    let root = docs_tree();
    let state = tempfile::tempdir().unwrap();
    let missing = state.path().join("never-made");
    let out = explore(
        root.path(),
        &missing,
        "where is frobnicator_zeta?",
        &["--constraint", "never read 'docs'"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(r#"--constraint-json '{"rule":"read_scope","never_under":["docs"]}'"#)
            && err.contains("--allow-unenforced"),
        "{err}"
    );
    assert!(!missing.exists(), "a refused run made its state");
    // A tool or a budget named by a constraint no rule types is refused the same way.
    for (text, says) in [
        ("never use grep on big files", "grep"),
        ("Keep the final answer under 300 tokens", "budget"),
        ("Don't spend more than 10 minutes", "budget"),
        ("don't read more than 3 files", "budget"),
        // Typed, but a cost the gate cannot see is not enforced: refused the same way.
        ("Spend at most $2", "--max-cost-per-subagent"),
        ("Keep the cost under $0.50", "budget"),
    ] {
        let out = explore(
            root.path(),
            &missing,
            "where is frobnicator_zeta?",
            &["--constraint", text],
        );
        assert_eq!(out.status.code(), Some(2), "{text}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.starts_with("baton: ") && err.contains(says) && err.contains("--allow-unenforced"),
            "{text}: {err}"
        );
        assert!(!missing.exists(), "a refused run made its state");
    }
    // Allowed: carried as a standing condition, not enforced, and said so.
    let out = explore(
        root.path(),
        state.path(),
        "where is frobnicator_zeta?",
        &["--constraint", "never read 'docs'", "--allow-unenforced"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("baton: warning: ") && l.contains("is not enforced")),
        "{err}"
    );
    let r = report(&out);
    assert_eq!(
        r.constraints[0].enforcement,
        baton::Enforcement::NotEnforced
    );
    assert!(
        r.constraints[0].line().contains("warning:"),
        "{}",
        r.constraints[0].line()
    );
}

#[test]
fn a_place_the_tree_does_not_hold_is_a_warning_and_case_follows_the_tree() {
    let root = docs_tree();
    let state = tempfile::tempdir().unwrap();
    let out = explore(
        root.path(),
        state.path(),
        "where is frobnicator_zeta?",
        &[
            "--constraint",
            "Never read vendor/",
            "--constraint",
            "NEVER READ DOCS/",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`vendor` is not in the tree"), "{err}");
    assert!(err.contains("`DOCS` is read as `docs`"), "{err}");
    let r = report(&out);
    let lines: Vec<String> = r.constraints.iter().map(|c| c.line()).collect();
    assert!(
        lines[0].contains("warning: `vendor` is not in the tree"),
        "{lines:?}"
    );
    assert!(lines[1].contains("never read under `docs`"), "{lines:?}");
    let markdown = r.handoff.to_markdown();
    assert!(
        markdown.contains("warning: `vendor` is not in the tree"),
        "{markdown}"
    );
}

/// A glob or a file's name at any depth matches in any letter case: written upper-case, the
/// rule still keeps the file out.
#[test]
fn a_glob_or_a_file_name_in_another_letter_case_keeps_the_file_out() {
    let root = tree(&[
        ("src/lib.rs", "pub fn frobnicator_zeta() {}\n"),
        ("src/secrets.json", "{\"frobnicator_zeta\": 1}\n"),
        ("Docs/a.md", "frobnicator_zeta is documented here\n"),
    ]);
    for (constraint, kept_out) in [
        ("NEVER READ SECRETS.JSON", "secrets.json"),
        ("never read *.MD files", "Docs/a.md"),
        ("never read DOCS/*.MD", "Docs/a.md"),
    ] {
        let state = tempfile::tempdir().unwrap();
        let out = explore(
            root.path(),
            state.path(),
            "where is frobnicator_zeta?",
            &["--constraint", constraint],
        );
        assert_eq!(out.status.code(), Some(0), "{constraint}: {out:?}");
        let r = report(&out);
        let line = r.constraints[0].line();
        assert!(
            line.contains("enforced by the gate"),
            "{constraint}: {line}"
        );
        let cited = serde_json::to_string(&r.handoff).unwrap();
        assert!(!cited.contains(kept_out), "{constraint}: {cited}");
        assert!(cited.contains("src/lib.rs"), "{constraint}: {cited}");
    }
}

/// A tool a constraint denies is not offered to the subagents' model: the offline explorer,
/// which searches with grep, makes no call only to be denied and says why it settled nothing;
/// each subagent's logged manifest lists the tools it was given, without grep.
#[test]
fn a_denied_tool_is_not_offered_and_the_explorer_says_why_it_did_not_search() {
    let root = docs_tree();
    for constraint in ["never use grep", "only use read_file"] {
        let state = tempfile::tempdir().unwrap();
        let out = explore(
            root.path(),
            state.path(),
            "where is frobnicator_zeta?",
            &["--constraint", constraint],
        );
        assert_eq!(out.status.code(), Some(0), "{constraint}: {out:?}");
        let r = report(&out);
        assert!(r.handoff.settled_conclusions.is_empty(), "{:?}", r.handoff);
        assert!(
            r.handoff
                .open_items
                .iter()
                .any(|o| o.stuck_on.contains("leave it no grep")),
            "{constraint}: {:?}",
            r.handoff.open_items
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(" 0 tool calls"), "{constraint}: {err}");
        let store = baton::SqliteStore::open(state.path()).unwrap();
        let events = baton::checkpoint::EventStore::events(&store, &r.run_id).unwrap();
        let manifests: Vec<Vec<String>> = events
            .iter()
            .filter_map(|e| match &e.event {
                baton::RunEvent::SubagentSpawned { manifest, .. } => Some(manifest.tools.clone()),
                _ => None,
            })
            .collect();
        assert!(!manifests.is_empty());
        for tools in manifests {
            assert!(
                !tools.is_empty() && !tools.contains(&"grep".to_string()),
                "{tools:?}"
            );
        }
    }
}

/// The question's own binding sentences are never refused: one that names a place and cannot
/// be typed is carried as a standing condition, with a warning saying so.
#[test]
fn a_binding_sentence_of_the_question_is_warned_of_not_refused() {
    let root = docs_tree();
    let state = tempfile::tempdir().unwrap();
    let out = explore(
        root.path(),
        state.path(),
        "where is frobnicator_zeta? Never read 'docs'.",
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: constraint \"Never read 'docs'.\" (question)")
            && err.contains("is not enforced"),
        "{err}"
    );
    let r = report(&out);
    let c = r
        .constraints
        .iter()
        .find(|c| c.provenance == "question")
        .unwrap();
    assert_eq!(c.enforcement, baton::Enforcement::NotEnforced);
    assert!(!c.warnings.is_empty());
}
