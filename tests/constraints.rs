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

fn cites_docs(report: &baton::Report) -> bool {
    report
        .handoff
        .settled_conclusions
        .iter()
        .flat_map(|c| &c.sources)
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
