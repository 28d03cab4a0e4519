//! Citations keep their promises: a quote under a whole-file citation is checked (`baton
//! validate`), what a tool records as seen is what it showed (long lines, byte caps), and any
//! file name can be cited — written quoted by the tools, read back by the parser, round-tripped
//! over arbitrary names, and cited by a whole run.

use std::process::Command;

use baton::{
    parse_handoff, Conclusion, ConclusionKind, Coordinator, Handoff, Observation, SourceId,
    SubagentState, Task, ToolCall, ToolRegistry, Workspace,
};
use proptest::prelude::*;
use serde_json::json;

use crate::support::tree;

fn baton() -> Command {
    Command::new(env!("CARGO_BIN_EXE_baton"))
}

fn validate(root: &std::path::Path, text: &str) -> (Option<i32>, String) {
    let file = root.join("handoff.md");
    std::fs::write(&file, text).unwrap();
    let out = baton()
        .arg("validate")
        .arg(&file)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

const TAIL: &str = "## Open items\n## Hard constraints\n- none\n";

/// Issue 9, item 1: `baton validate` checks a quote under a whole-file citation.
#[test]
fn validate_checks_a_quote_under_a_whole_file_citation() {
    let dir = tree(&[("src/lib.rs", "//! The root.\npub mod net;\n")]);
    let (code, out) = validate(
        dir.path(),
        &format!("## Settled conclusions\n- The root says `text that is nowhere in it` plainly. [src/lib.rs]\n{TAIL}"),
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("[quote_not_found]"), "{out}");
    let (code, out) = validate(
        dir.path(),
        &format!(
            "## Settled conclusions\n- The root declares `pub mod net;`. [src/lib.rs]\n{TAIL}"
        ),
    );
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = validate(
        dir.path(),
        r#"{"settled_conclusions":[{"claim":"It says `text that is nowhere in it`.","sources":["src/lib.rs"]}],"open_items":[],"hard_constraints":[]}"#,
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("[quote_not_found]"), "{out}");
}

fn run_tool(root: &std::path::Path, name: &str, arguments: serde_json::Value) -> baton::ToolResult {
    let workspace = Workspace::open(root).unwrap();
    crate::support::execute(
        &ToolRegistry::workspace(),
        &workspace,
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments,
        },
    )
}

/// Issue 9, item 3: grep shows 240 characters of a long line and records only those; read_file
/// cuts long lines and stops at a byte cap, recording only the lines it printed.
#[test]
fn what_is_recorded_as_seen_is_what_was_shown() {
    let long = format!(
        "let start = 1; {} let secret_tail = 2;",
        "x = x + 1; ".repeat(200)
    );
    let wide: String = (0..400)
        .map(|i| format!("{i:04} {}\n", "y".repeat(600)))
        .collect();
    let dir = tree(&[("min.js", &format!("{long}\n")), ("wide.txt", &wide)]);
    let grep = run_tool(dir.path(), "grep", json!({"pattern": "start"}));
    assert!(!grep.content.contains("secret_tail"), "{}", grep.content);
    assert!(grep.observations.contains(&Observation::LinePart {
        call_id: "c1".into(),
        path: "min.js".into(),
        line: 1,
        chars: 240,
    }));
    assert!(!grep
        .observations
        .iter()
        .any(|o| matches!(o, Observation::Lines { .. })));
    let read = run_tool(dir.path(), "read_file", json!({"path": "min.js"}));
    assert!(read.content.contains("[line cut:"), "{}", read.content);
    assert!(!read.content.contains("secret_tail"));
    assert!(read
        .observations
        .iter()
        .all(|o| matches!(o, Observation::LinePart { chars: 2000, .. })));
    let read = run_tool(
        dir.path(),
        "read_file",
        json!({"path": "wide.txt", "start_line": 1, "end_line": 400}),
    );
    assert!(
        read.content.len() <= 100_000 + 400,
        "{} bytes",
        read.content.len()
    );
    let Some(Observation::Lines { start, end, .. }) = read.observations.first() else {
        panic!("{:?}", read.observations)
    };
    assert_eq!(*start, 1);
    assert!(*end < 400, "stopped at the byte cap, recorded to {end}");
    assert!(read.content.contains(&format!("{:04} ", end - 1)));
    assert!(!read
        .content
        .contains(&format!("\n{:>6}\t{:04} ", end + 1, end)));
    assert!(read.content.contains("output cap"), "{}", read.content);
}

const ODD_NAMES: &[&str] = &[
    "src/a, b.rs",
    "src/we:ird.rs",
    "src/br[ack]ets.rs",
    "src/tick`s.rs",
    "src/da-sh - x.rs",
    "src/new\nline.rs",
    "src/unicode_ファイル.rs",
    "src/quo\"te.rs",
    "src/ lead.rs",
    "src/trail.rs ",
    "\"whole.rs\"",
    "doc",
    "event",
    "src/bidi\u{202E}x.rs",
];

/// Issue 9, item 4: the tools print odd names in the quoted form, and what they print reads
/// back as the same path.
#[test]
fn tools_write_odd_file_names_so_they_read_back() {
    let files: Vec<(&str, &str)> = ODD_NAMES
        .iter()
        .map(|n| (*n, "pub fn odd_marker() {}\n"))
        .collect();
    let dir = tree(&files);
    let grep = run_tool(dir.path(), "grep", json!({"pattern": "odd_marker"}));
    for name in ODD_NAMES {
        let written = SourceId::File {
            path: name.to_string(),
            lines: Some((1, 1)),
        }
        .to_string();
        assert!(
            grep.content.contains(&format!("{written}:pub fn")),
            "{written} in {}",
            grep.content
        );
        assert_eq!(SourceId::parse(&written).unwrap().to_string(), written);
        let read = run_tool(dir.path(), "read_file", json!({"path": name}));
        assert!(!read.is_error, "{}", read.content);
        let quoted = SourceId::File {
            path: name.to_string(),
            lines: None,
        }
        .to_string();
        assert!(read
            .content
            .starts_with(&format!("{quoted} (lines 1-1 of 1)")));
        // A quoted name copied from the output is accepted as a path argument.
        let again = run_tool(dir.path(), "read_file", json!({"path": quoted}));
        assert!(!again.is_error, "{}", again.content);
    }
}

/// Issue 9, item 4: a run over a tree of odd names cites them, and every handoff passes.
#[tokio::test]
async fn a_run_cites_odd_file_names_and_every_handoff_passes() {
    let files: Vec<(String, String)> = ODD_NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (
                n.to_string(),
                format!(
                    "/// Computes the retry delay.\npub fn retry_delay_{i}() -> u32 {{ {i} }}\n"
                ),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let dir = tree(&refs);
    let report = Coordinator::builder()
        .agents(4)
        .shards(ODD_NAMES.len())
        .build()
        .run(Task::explore(
            "where is the retry delay computed?",
            dir.path(),
        ))
        .await
        .unwrap();
    for s in &report.subagents {
        assert_eq!(s.state, SubagentState::HandedOff, "{s:?}");
    }
    let cited: Vec<String> = report
        .handoff
        .settled_conclusions
        .iter()
        .flat_map(|c| c.sources.iter())
        .filter_map(|s| s.file_lines().map(|(p, _, _)| p.to_string()))
        .collect();
    for name in ODD_NAMES {
        assert!(
            cited.iter().any(|c| c == name),
            "{name:?} cited in {cited:?}"
        );
    }
}

fn name_part() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just(','),
            Just(':'),
            Just('['),
            Just(']'),
            Just('`'),
            Just('-'),
            Just('\n'),
            Just('"'),
            Just('\\'),
            Just(' '),
            Just(';'),
            Just('#'),
            Just('–'),
            Just('\u{202E}'),
            Just('\u{200B}'),
            Just('ф'),
            Just('ル'),
            prop::char::range('a', 'z'),
            any::<char>().prop_filter("no NUL or slash", |c| *c != '\0' && *c != '/'),
        ],
        1..12,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    /// Issue 9, item 4: any file name round-trips through the source grammar, alone and inside
    /// a handoff in both forms.
    #[test]
    fn any_file_name_round_trips(parts in prop::collection::vec(prop_oneof![name_part(), Just("doc".to_string()), Just("event".to_string()), Just("https".to_string()), Just(".".to_string())], 1..4), lines in prop::option::of((1u32..500, 0u32..50))) {
        let path = parts.join("/");
        let source = SourceId::File { path: path.clone(), lines: lines.map(|(a, n)| (a, a + n)) };
        let written = source.to_string();
        prop_assert_eq!(SourceId::parse(&written).unwrap(), source.clone());
        let handoff = Handoff {
            settled_conclusions: vec![Conclusion {
                claim: "The file holds `x`.".into(),
                sources: vec![source.clone(), SourceId::parse("call:sa1.2").unwrap()],
                kind: ConclusionKind::Finding,
            }],
            ..Handoff::default()
        };
        prop_assert_eq!(parse_handoff(&handoff.to_markdown()).handoff, handoff.clone());
        prop_assert!(parse_handoff(&handoff.to_markdown()).violations.is_empty());
        prop_assert_eq!(parse_handoff(&handoff.to_json()).handoff, handoff);
    }
}
