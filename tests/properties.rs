//! Property tests of the handoff contract: both forms round-trip, and no input — arbitrary
//! bytes, handoff-shaped noise, huge or deeply nested text — panics the parser or validator.

use baton::testing::MemoryFiles;
use baton::{
    parse_handoff, validate, Check, Conclusion, ConclusionKind, Handoff, HardConstraint,
    ObservationLog, OpenItem, SourceId,
};
use proptest::prelude::*;

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z][A-Za-z0-9_]{0,9}",
        "[a-z_]{1,8}".prop_map(|w| format!("`{w}`")),
        "[0-9]{1,4}",
    ]
}

/// Single-line, single-spaced text: the texts a parsed handoff holds.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 1..8).prop_map(|w| w.join(" "))
}

fn source() -> impl Strategy<Value = SourceId> {
    prop_oneof![
        (
            "[a-z]{1,6}(/[a-z]{1,6}){0,2}\\.rs",
            prop::option::of((1u32..500, 0u32..40))
        )
            .prop_map(|(path, lines)| SourceId::File {
                path,
                lines: lines.map(|(a, n)| (a, a + n)),
            }),
        "[a-z0-9]{1,6}".prop_map(|id| SourceId::Record {
            kind: "call".into(),
            id: format!("sa1.{id}")
        }),
        ("[a-z0-9]{1,8}", prop::option::of("[a-z0-9.]{1,5}"))
            .prop_map(|(id, span)| SourceId::Doc { id, span }),
        "[a-z]{1,8}".prop_map(|host| SourceId::Url(format!("https://{host}.example/x"))),
        // A record id that reads as a line range (`order:12`) is a file with lines by the grammar.
        "[A-Z][A-Z0-9-]{0,7}".prop_map(|id| SourceId::Record {
            kind: "order".into(),
            id
        }),
    ]
}

fn handoff() -> impl Strategy<Value = Handoff> {
    let conclusion = (text(), prop::collection::vec(source(), 1..4), any::<bool>()).prop_map(
        |(claim, sources, negative)| Conclusion {
            claim,
            sources,
            kind: if negative {
                ConclusionKind::NegativeEvidence
            } else {
                ConclusionKind::Finding
            },
        },
    );
    let open = (text(), prop::option::of(text())).prop_map(|(item, stuck)| OpenItem {
        item,
        stuck_on: stuck.unwrap_or_default(),
    });
    let constraint = (text(), prop::collection::vec(source(), 0..2))
        .prop_filter("`none` is the empty list", |(c, _)| {
            !c.eq_ignore_ascii_case("none")
        })
        .prop_map(|(constraint, sources)| HardConstraint {
            constraint,
            sources,
        });
    (
        prop::collection::vec(conclusion, 0..6),
        prop::collection::vec(open, 0..4),
        prop::collection::vec(constraint, 0..3),
    )
        .prop_map(
            |(settled_conclusions, open_items, hard_constraints)| Handoff {
                settled_conclusions,
                open_items,
                hard_constraints,
            },
        )
}

/// Lines that look like a handoff: headings, bullets, sources, fences, JSON braces.
fn handoff_noise() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("## Settled conclusions".to_string()),
        Just("**Open Items:**".to_string()),
        Just("HARD CONSTRAINTS:".to_string()),
        Just("- none".to_string()),
        Just("```".to_string()),
        "[-*+] [ -~]{0,40}",
        "[0-9]{1,3}\\. [ -~]{0,30}\\[[ -~]{0,20}\\]",
        "- [ -~]{0,20} — stuck: [ -~]{0,20}",
        "[{}\\[\\]\":,a-z_ ]{0,40}",
        "\\PC{0,30}",
    ];
    prop::collection::vec(line, 0..20).prop_map(|l| l.join("\n"))
}

fn check_all(text: &str) {
    let mut files = MemoryFiles::new();
    files.insert("a.rs", "fn a() {}\n");
    let log = ObservationLog::default();
    let check = Check {
        files: Some(&files),
        observations: Some(&log),
        docs: None,
    };
    let parsed = validate(text, &check);
    for v in &parsed.violations {
        assert!(!v.message.contains('\n'));
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn markdown_round_trips(h in handoff()) {
        let text = h.to_markdown();
        let back = parse_handoff(&text);
        prop_assert!(back.violations.iter().all(|v| v.code != baton::ViolationCode::SourceMalformed), "{:?}", back.violations);
        prop_assert_eq!(&back.handoff, &h, "markdown:\n{}", text);
        prop_assert_eq!(back.handoff.to_markdown(), text);
    }

    #[test]
    fn json_round_trips(h in handoff()) {
        let back = parse_handoff(&h.to_json());
        prop_assert_eq!(back.handoff, h);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        check_all(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn handoff_shaped_noise_never_panics(text in handoff_noise()) {
        check_all(&text);
        check_all(&format!("{{\"settled_conclusions\": [{text}]}}"));
    }
}

#[test]
fn ten_megabytes_is_one_clear_error_quickly() {
    let huge = "- a fact [a.rs:1]\n".repeat(600_000);
    assert!(huge.len() > 10_000_000);
    let started = std::time::Instant::now();
    let parsed = parse_handoff(&huge);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    assert_eq!(parsed.violations.len(), 1);
    assert_eq!(parsed.violations[0].code, baton::ViolationCode::TooLarge);
}

#[test]
fn deeply_nested_json_is_an_error() {
    let depth = 200_000;
    let text = format!(
        "{{\"settled_conclusions\": {}{}, \"open_items\": [], \"hard_constraints\": []}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let parsed = parse_handoff(&text);
    assert_eq!(parsed.violations[0].code, baton::ViolationCode::JsonInvalid);
    assert!(
        parsed.violations[0].message.contains("recursion"),
        "{}",
        parsed.violations[0].message
    );
}
