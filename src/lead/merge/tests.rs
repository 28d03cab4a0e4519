//! Tests of the merge: negative evidence, verifiers' confirmations, follow-ups' findings.

use super::*;
use crate::handoff::finding;

fn searched(log: &mut ObservationLog, id: &str, pattern: &str, matches: usize) {
    log.record([Observation::Searched {
        call_id: id.into(),
        pattern: pattern.into(),
        scope: vec![format!("dir-{id}")],
        matches,
        files_searched: 3,
        files_skipped: 0,
        case_insensitive: false,
        fixed_string: false,
        not_searched: 0,
        not_searched_names: Vec::new(),
    }]);
}

#[test]
fn duplicates_merge_and_negative_evidence_needs_every_search_empty() {
    let a = Handoff {
        settled_conclusions: vec![finding("x", "a.rs:1-2"), finding("y", "b.rs:3")],
        ..Handoff::default()
    };
    let b = Handoff {
        settled_conclusions: vec![finding("x", "c.rs:1"), finding("z", "b.rs:3")],
        ..Handoff::default()
    };
    let mut log_a = ObservationLog::default();
    let mut log_b = ObservationLog::default();
    searched(&mut log_a, "sa1.1", "gzip", 0);
    searched(&mut log_b, "sa2.1", "gzip", 0);
    searched(&mut log_a, "sa1.2", "body", 0);
    searched(&mut log_b, "sa2.2", "body", 4);
    let (scope_a, scope_b) = (["dir-sa1.1".to_string()], ["dir-sa2.1".to_string()]);
    let (searches_a, searches_b) = (searches_of(&log_a, &scope_a), searches_of(&log_b, &scope_b));
    let accepted = [
        Accepted {
            handoff: &a,
            scope: &scope_a,
            searches: &searches_a,
            verifier: false,
            doubted: false,
            id: "",
            dropped: &[],
            wave: 1,
        },
        Accepted {
            handoff: &b,
            scope: &scope_b,
            searches: &searches_b,
            verifier: false,
            doubted: false,
            id: "",
            dropped: &[],
            wave: 1,
        },
    ];
    let everything = merge(&accepted, &[], WHOLE_TREE);
    let negative = everything.settled_conclusions.last().unwrap();
    assert!(
        negative.claim.contains("in the whole tree"),
        "{}",
        negative.claim
    );
    let merged = merge(
        &accepted,
        &[Unexplored {
            id: "sa3".into(),
            role: RoleId::EXPLORER,
            scope: "tests".into(),
            why: "panicked".into(),
            rejected: None,
            unverified: Some(&Handoff {
                settled_conclusions: vec![finding("w", "t.rs:9")],
                ..Handoff::default()
            }),
        }],
        WHOLE_TREE,
    );
    let claims: Vec<&str> = merged
        .settled_conclusions
        .iter()
        .map(|c| c.claim.as_str())
        .collect();
    assert_eq!(claims[0], "x");
    assert_eq!(merged.settled_conclusions[0].sources.len(), 2);
    assert_eq!(claims[1], "y");
    let negative = merged.settled_conclusions.last().unwrap();
    assert_eq!(negative.kind, ConclusionKind::NegativeEvidence);
    assert!(negative.claim.contains("/gzip/") && !negative.claim.contains("body"));
    assert_eq!(negative.sources.len(), 2);
    assert!(merged.open_items[0].item.contains("tests"));
    assert!(merged.open_items[1]
        .item
        .starts_with("Unverified lead from sa3"));
    assert!(merged.open_items[1].item.contains("t.rs:9"));
    assert!(!merged
        .settled_conclusions
        .iter()
        .any(|c| c.sources.iter().any(|s| s.to_string() == "t.rs:9")));
}

#[test]
fn source_outranks_a_test_citing_the_same_terms() {
    let a = Handoff {
        settled_conclusions: vec![finding("the `parse` call", "tests/t.rs:1-3")],
        ..Handoff::default()
    };
    let b = Handoff {
        settled_conclusions: vec![finding("the `parse` function", "src/p.rs:4-9")],
        ..Handoff::default()
    };
    let mut log = ObservationLog::default();
    searched(&mut log, "sa1.1", "parse", 2);
    let searches = searches_of(&log, &[]);
    let accepted = [
        Accepted {
            handoff: &a,
            scope: &[],
            searches: &searches,
            verifier: false,
            doubted: false,
            id: "",
            dropped: &[],
            wave: 1,
        },
        Accepted {
            handoff: &b,
            scope: &[],
            searches: &searches,
            verifier: false,
            doubted: false,
            id: "",
            dropped: &[],
            wave: 1,
        },
    ];
    let merged = merge(&accepted, &[], WHOLE_TREE);
    assert_eq!(merged.settled_conclusions[0].claim, "the `parse` function");
}

fn accepted<'a>(handoff: &'a Handoff, scope: &'a [String], log: &'a [Search]) -> Accepted<'a> {
    Accepted {
        handoff,
        scope,
        searches: log,
        verifier: false,
        doubted: false,
        id: "",
        dropped: &[],
        wave: 1,
    }
}

fn search(id: &str, pattern: &str, scope: &str, insensitive: bool, fixed: bool) -> Observation {
    Observation::Searched {
        call_id: id.into(),
        pattern: pattern.into(),
        scope: vec![scope.into()],
        matches: 0,
        files_searched: 4,
        files_skipped: 0,
        case_insensitive: insensitive,
        fixed_string: fixed,
        not_searched: 0,
        not_searched_names: Vec::new(),
    }
}

/// Issue 9, item 5: "the whole tree" is decided per pattern — a pattern one shard never
/// searched is not absent from the whole tree, even when the union of all the empty
/// searches' scopes is the tree; and a search keeps its flags.
#[test]
fn the_whole_tree_only_for_a_pattern_every_shard_searched() {
    let empty = Handoff::default();
    let (scope_a, scope_b) = (["src".to_string()], ["tests".to_string()]);
    let mut log_a = ObservationLog::default();
    let mut log_b = ObservationLog::default();
    log_a.record([
        search("sa1.1", "gzip", "src", true, false),
        search("sa1.2", "brotli", "src", false, false),
        search("sa1.3", "zstd", "src", false, true),
    ]);
    log_b.record([
        search("sa2.1", "gzip", "tests", true, false),
        search("sa2.2", "deflate", "tests", false, false),
    ]);
    let (searches_a, searches_b) = (searches_of(&log_a, &scope_a), searches_of(&log_b, &scope_b));
    let merged = merge(
        &[
            accepted(&empty, &scope_a, &searches_a),
            accepted(&empty, &scope_b, &searches_b),
        ],
        &[],
        WHOLE_TREE,
    );
    let claims: Vec<&str> = merged
        .settled_conclusions
        .iter()
        .filter(|c| c.kind == ConclusionKind::NegativeEvidence)
        .map(|c| c.claim.as_str())
        .collect();
    let whole: Vec<&&str> = claims
        .iter()
        .filter(|c| c.contains("the whole tree"))
        .collect();
    assert_eq!(whole.len(), 1, "{claims:?}");
    assert!(whole[0].contains("/gzip/i"), "{claims:?}");
    assert!(!whole[0].contains("brotli") && !whole[0].contains("deflate"));
    assert!(claims
        .iter()
        .any(|c| c.contains("/brotli/") && c.contains("in src ")));
    assert!(claims.iter().any(|c| c.contains("\"zstd\"")), "{claims:?}");
    assert!(claims
        .iter()
        .any(|c| c.contains("/deflate/") && c.contains("in tests ")));
}

/// A verifier that confirms a follow-up's findings re-states them: they stay the
/// follow-up's, so only its best passage (the link) answers, after the first wave's.
#[test]
fn a_verifier_confirming_a_follow_ups_finding_does_not_make_it_the_first_waves() {
    let first = Handoff {
        settled_conclusions: vec![finding("`resume with --keep-going`", "doc:a.md#L1-2")],
        ..Handoff::default()
    };
    let follow = Handoff {
        settled_conclusions: vec![
            finding("`--keep-going carries on`", "doc:b.md#L1-2"),
            finding("`without --keep-going it stops`", "doc:b.md#L4-5"),
        ],
        ..Handoff::default()
    };
    let verifier = Handoff {
        settled_conclusions: [&first, &follow]
            .iter()
            .flat_map(|h| h.settled_conclusions.clone())
            .collect(),
        ..Handoff::default()
    };
    let log: Vec<Search> = Vec::new();
    let files = crate::handoff::MemoryFiles::new();
    let merged = merge_ranked(
        &[
            accepted(&first, &[], &log),
            Accepted {
                wave: 2,
                ..accepted(&follow, &[], &log)
            },
            Accepted {
                verifier: true,
                wave: 0,
                ..accepted(&verifier, &[], &log)
            },
        ],
        &[],
        WHOLE_TREE,
        &files,
    );
    let answers: Vec<&str> = merged
        .handoff
        .settled_conclusions
        .iter()
        .map(|c| c.claim.as_str())
        .collect();
    assert_eq!(
        answers,
        ["`resume with --keep-going`", "`--keep-going carries on`"]
    );
    let also: Vec<&str> = merged
        .also_found
        .iter()
        .map(|(c, _)| c.claim.as_str())
        .collect();
    assert_eq!(also, ["`without --keep-going it stops`"]);
    assert!(merged.also_found[0]
        .1
        .contains("a follow-up's finding other than its best"));
}

/// Issue 9, item 6: confirming one doubted claim on a range confirms no other claim on
/// the same range.
#[test]
fn a_verifier_confirms_claims_not_ranges() {
    let explorer = Handoff {
        settled_conclusions: vec![
            finding("`next_delay` doubles the delay", "a.rs:1-5"),
            finding("`next_delay` never waits", "a.rs:1-5"),
        ],
        ..Handoff::default()
    };
    let verifier = Handoff {
        settled_conclusions: vec![finding("`next_delay`  doubles the delay", "a.rs:1-5")],
        ..Handoff::default()
    };
    let log: Vec<Search> = Vec::new();
    let scope = ["src".to_string()];
    let merged = merge(
        &[
            Accepted {
                doubted: true,
                ..accepted(&explorer, &scope, &log)
            },
            Accepted {
                verifier: true,
                ..accepted(&verifier, &[], &log)
            },
        ],
        &[],
        WHOLE_TREE,
    );
    let settled: Vec<&str> = merged
        .settled_conclusions
        .iter()
        .map(|c| c.claim.as_str())
        .collect();
    assert!(
        settled.contains(&"`next_delay` doubles the delay"),
        "{settled:?}"
    );
    assert!(
        !settled.contains(&"`next_delay` never waits"),
        "{settled:?}"
    );
    assert!(merged
        .open_items
        .iter()
        .any(|o| o.item.contains("`next_delay` never waits")));
}
