//! End-to-end exploration with the offline model on real actors, over fixture trees.

use baton::{Coordinator, SubagentState, Task};

use crate::support::{
    assert_citations_hold, assert_cites, cited_files, line_of, python_tree, rust_tree, tree,
    RETRY_RS, TOKENS_PY,
};

#[tokio::test]
async fn rust_tree_cites_the_definition() {
    let dir = rust_tree();
    let report = Coordinator::builder()
        .build()
        .run(Task::explore("Where is next_delay defined?", dir.path()))
        .await
        .unwrap();
    assert!(
        report.subagents.len() > 1,
        "the tree is shared among subagents"
    );
    assert!(report
        .subagents
        .iter()
        .all(|s| s.state == SubagentState::HandedOff));
    let def = line_of(RETRY_RS, "pub fn next_delay");
    assert_cites(&report, dir.path(), "src/net/retry.rs", def, 0);
}

#[tokio::test]
async fn rust_tree_plain_words_question() {
    let dir = rust_tree();
    let report = Coordinator::builder()
        .build()
        .run(Task::explore(
            "How is the retry delay computed between attempts?",
            dir.path(),
        ))
        .await
        .unwrap();
    let def = line_of(RETRY_RS, "pub fn next_delay");
    assert_cites(&report, dir.path(), "src/net/retry.rs", def, 3);
}

#[tokio::test]
async fn python_tree_cites_the_definition() {
    let dir = python_tree();
    let report = Coordinator::builder()
        .agents(2)
        .build()
        .run(Task::explore(
            "How does refresh_token replace an expired token?",
            dir.path(),
        ))
        .await
        .unwrap();
    let def = line_of(TOKENS_PY, "def refresh_token");
    let cites = cited_files(&report);
    assert!(
        cites
            .iter()
            .any(|(p, a, b)| p == "svc/auth/tokens.py" && *a <= def && *b >= def + 3),
        "cites the whole function from line {def}: {cites:?}"
    );
    assert_citations_hold(&report, dir.path());
}

#[tokio::test]
async fn absent_answer_gets_no_settled_location() {
    let dir = rust_tree();
    let report = Coordinator::builder()
        .build()
        .run(Task::explore(
            "Where are responses compressed with gzip?",
            dir.path(),
        ))
        .await
        .unwrap();
    assert!(
        cited_files(&report).is_empty(),
        "no location: {:?}",
        report.handoff
    );
    let negative = report
        .handoff
        .settled_conclusions
        .iter()
        .find(|c| c.kind == baton::ConclusionKind::NegativeEvidence)
        .expect("negative evidence says what was searched");
    assert!(negative.claim.contains("gzip"));
    assert!(negative
        .sources
        .iter()
        .all(|s| s.to_string().starts_with("call:")));
    assert!(!report.handoff.open_items.is_empty());
}

#[tokio::test]
async fn an_example_found_nowhere_settles_no_location() {
    let dir = rust_tree();
    let report = Coordinator::builder()
        .build()
        .run(Task::explore(
            "Where is the retry delay cached between attempts (like memcached)?",
            dir.path(),
        ))
        .await
        .unwrap();
    assert!(cited_files(&report).is_empty(), "{:?}", report.handoff);
    assert!(
        report
            .handoff
            .open_items
            .iter()
            .any(|o| o.stuck_on.contains("example (memcached)")),
        "{:?}",
        report.handoff.open_items
    );
}

#[tokio::test]
async fn max_subagents_caps_the_plan_and_agents_bound_concurrency() {
    // Three directories of 700 KiB each: by size the plan wants three shards.
    let filler: String = (0..10_000)
        .map(|i| format!("// filler line {i:05} of padding text here\n"))
        .collect();
    let files: Vec<(String, String)> = ["a", "b", "c"]
        .iter()
        .map(|d| {
            (
                format!("{d}/big.rs"),
                format!("pub fn find_{d}() {{}}\n{filler}"),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let dir = crate::support::tree(&borrowed);
    let coordinator = Coordinator::builder().agents(1).max_subagents(2).build();
    let handle = coordinator
        .start(Task::explore("Where is find_b?", dir.path()))
        .await
        .unwrap();
    let mut events = handle.events();
    let report = handle.report().await.unwrap();
    assert_eq!(report.subagents.len(), 2, "capped at --max-subagents");
    let mut running = 0i32;
    let mut most = 0i32;
    let mut spawned = 0;
    while let Some(event) = events.next().await {
        match event.unwrap().event {
            baton::RunEvent::SubagentSpawned { .. } => {
                running += 1;
                spawned += 1;
            }
            baton::RunEvent::SubagentEnded { .. } => running -= 1,
            _ => {}
        }
        most = most.max(running);
    }
    assert_eq!(spawned, 2);
    assert_eq!(most, 1, "one agent at a time");
}

#[tokio::test]
async fn tight_budget_still_hands_off() {
    let dir = rust_tree();
    let report = Coordinator::builder()
        .agents(1)
        .max_subagents(1)
        .budget(baton::Budget {
            model_turns: 1,
            tool_calls: 100,
            tokens: 1_000_000,
        })
        .build()
        .run(Task::explore("Where is next_delay defined?", dir.path()))
        .await
        .unwrap();
    let only = &report.subagents[0];
    assert_eq!(only.state, SubagentState::HandedOff);
    assert_eq!(
        only.model_turns, 1,
        "its one turn is the handoff: no turn past the budget"
    );
    assert_citations_hold(&report, dir.path());
}

#[tokio::test]
async fn connection_question_follows_the_call() {
    let dir = rust_tree();
    // One subagent, so caller and callee share its scope (calls are followed within a scope).
    let report = Coordinator::builder()
        .agents(1)
        .build()
        .run(Task::explore(
            "What calls next_delay to wait before an attempt?",
            dir.path(),
        ))
        .await
        .unwrap();
    let claims = crate::support::settled_claims(&report);
    assert!(
        claims
            .iter()
            .any(|c| c.contains("`wait_before`") && c.contains("calls `next_delay` at line 10")),
        "{claims:#?}"
    );
    assert_cites(&report, dir.path(), "src/net/client.rs", 10, 0);
}

/// A caller found by following a settled definition gets a claim of its own, which says — as
/// a place's does — which of the question's terms its cited lines hold: a caller that ties
/// several of them together weighs with them when the report is ranked.
#[tokio::test]
async fn a_followed_callers_claim_says_what_its_lines_mention() {
    let dir = tree(&[
        (
            "src/backoff.rs",
            "//! Backoff.\n\n/// Doubles per try.\npub fn retry_pause(attempt_count: u32) -> u64 {\n    100u64 << attempt_count.min(10)\n}\n",
        ),
        (
            "src/run.rs",
            "//! Running jobs.\n\npub fn run(job: &dyn Fn() -> bool) {\n    let mut tries = 0;\n    while !job() {\n        // Sleep, then try once more.\n        let wait = crate::backoff::retry_pause(tries);\n        std::thread::sleep(std::time::Duration::from_millis(wait));\n        tries += 1;\n    }\n}\n",
        ),
    ]);
    let report = Coordinator::builder()
        .agents(1)
        .build()
        .run(Task::explore(
            "Where is the exponential pause before the next retry computed from the attempt count?",
            dir.path(),
        ))
        .await
        .unwrap();
    let claims = crate::support::settled_claims(&report);
    let call = claims
        .iter()
        .find(|c| c.contains("`run`") && c.contains("calls `retry_pause` at line 7"))
        .unwrap_or_else(|| panic!("no call-site claim: {claims:#?}"));
    assert!(
        call.ends_with("— the cited lines mention pause, retry"),
        "{call}"
    );
    assert_citations_hold(&report, dir.path());
}

/// Regression: a two-word question whose second word occurs nowhere ("chosen") settled nothing,
/// because two terms were required together even where only one occurs at all.
#[tokio::test]
async fn short_question_with_an_unmatched_word_still_settles() {
    let dir = rust_tree();
    let report = Coordinator::builder()
        .build()
        .run(Task::explore("Where is the delay chosen?", dir.path()))
        .await
        .unwrap();
    let def = line_of(RETRY_RS, "pub fn next_delay");
    assert_cites(&report, dir.path(), "src/net/retry.rs", def, 0);
}

/// Issue 9, item 5: a pattern the explorer builds from the question's words must not make an
/// absence a reader would misread: `/etc/shadow` in the tree is not "etc shadow found nowhere".
#[tokio::test]
async fn a_compound_of_the_question_is_not_a_false_absence() {
    let dir = crate::support::tree(&[
        (
            "src/auth.rs",
            "//! Password checks.\npub fn load_hashes() -> String {\n    std::fs::read_to_string(\"/etc/shadow\").unwrap_or_default()\n}\n",
        ),
        ("src/lib.rs", "pub mod auth;\n"),
    ]);
    for question in [
        "which function reads the etc shadow file?",
        "which function reads /etc/shadow?",
    ] {
        let report = Coordinator::builder()
            .build()
            .run(Task::explore(question, dir.path()))
            .await
            .unwrap();
        for c in &report.handoff.settled_conclusions {
            if c.kind == baton::ConclusionKind::NegativeEvidence {
                assert!(!c.claim.contains("etc"), "{question}: {}", c.claim);
            }
        }
        assert!(
            cited_files(&report).iter().any(|c| c.0 == "src/auth.rs"),
            "{question}: {:?}",
            report.handoff
        );
    }
    // A quoted phrase is not absent where it occurs unquoted.
    let dir = crate::support::tree(&[(
        "src/net.rs",
        "/// The retry delay doubles on each attempt.\npub fn backoff(attempt: u32) -> u64 {\n    10 << attempt\n}\n",
    )]);
    let report = Coordinator::builder()
        .build()
        .run(Task::explore(
            "where is the \"retry delay\" computed?",
            dir.path(),
        ))
        .await
        .unwrap();
    for c in &report.handoff.settled_conclusions {
        if c.kind == baton::ConclusionKind::NegativeEvidence {
            assert!(!c.claim.contains("retry delay"), "{}", c.claim);
        }
    }
}

/// Issue 9, item 5: a file the searches could not read (over 4 MiB) leaves no "whole tree"
/// absence and no claim that its shard holds none of the terms.
#[tokio::test]
async fn a_file_no_search_could_read_makes_no_absence() {
    let huge = format!(
        "// the retry delay is computed here\npub fn compute_retry_delay() -> u64 {{ 5 }}\n{}",
        "// padding\n".repeat(500_000)
    );
    let dir = crate::support::tree(&[
        ("big/huge.rs", huge.as_str()),
        ("small/lib.rs", "pub fn unrelated() {}\n"),
    ]);
    let report = Coordinator::builder()
        .agents(2)
        .build()
        .run(Task::explore(
            "where is the retry delay computed?",
            dir.path(),
        ))
        .await
        .unwrap();
    let text = report.handoff.to_markdown();
    assert!(!text.contains("the whole tree"), "{text}");
    assert!(
        !text.contains("big: none of the question's terms"),
        "{text}"
    );
    assert!(text.contains("could not be searched"), "{text}");
}

/// Issue 20, item 8: the explorer quotes only bytes of the file — never a label it composes
/// (`From for SmallIndex` for `impl From<StateID> for SmallIndex`) — so no handoff is rejected
/// for it and the definition is settled.
#[tokio::test]
async fn a_label_the_explorer_composes_is_never_quoted() {
    let dir = crate::support::tree(&[
        (
            "src/util/primitives.rs",
            "/// A small index.\npub(crate) struct SmallIndex(u32);\n\nimpl From<StateID> for SmallIndex {\n    fn from(id: StateID) -> SmallIndex {\n        SmallIndex(id.0)\n    }\n}\n\nimpl TryFrom<usize> for SmallIndex {\n    type Error = ();\n    fn try_from(n: usize) -> Result<SmallIndex, ()> {\n        Ok(SmallIndex(n as u32))\n    }\n}\n",
        ),
        ("src/util/state.rs", "pub(crate) struct StateID(pub u32);\n"),
        ("src/lib.rs", "mod util;\n"),
    ]);
    for question in [
        "where is the SmallIndex type defined?",
        "where is SmallIndex defined?",
    ] {
        let report = Coordinator::builder()
            .agents(1)
            .shards(1)
            .build()
            .run(Task::explore(question, dir.path()))
            .await
            .unwrap();
        assert!(
            report
                .subagents
                .iter()
                .all(|s| s.state == SubagentState::HandedOff),
            "{question}: {:?}",
            report.subagents
        );
        assert_cites(&report, dir.path(), "src/util/primitives.rs", 2, 0);
    }
}

/// Issue 20, item 8: the question's own words of asking never become required terms: a
/// definition is found whether the question says "defined", "declared", "implemented" or
/// "located", and no absence of the asking word is reported.
#[tokio::test]
async fn the_words_a_question_asks_with_are_never_required() {
    let dir = crate::support::tree(&[
        ("src/lib.rs", "pub fn load_config_file() {}\n"),
        ("README.md", "# Config\n"),
    ]);
    for question in [
        "where is load_config_file defined?",
        "where is load_config_file declared?",
        "how is load_config_file implemented?",
        "where is load_config_file located?",
    ] {
        let report = Coordinator::builder()
            .build()
            .run(Task::explore(question, dir.path()))
            .await
            .unwrap();
        assert_cites(&report, dir.path(), "src/lib.rs", 1, 0);
        for c in &report.handoff.settled_conclusions {
            for word in ["defin", "declar", "implement", "locat"] {
                assert!(
                    !c.claim.contains(&format!("/{word}")),
                    "{question}: {}",
                    c.claim
                );
            }
        }
    }
}

/// Issue 20, item 8, second pass: the words of a question about uses (`used`, `called`,
/// `referenced`, `anywhere`) are its syntax too, and a word the stemmer cuts from `-ies` is
/// still searched as written (`RETRIES`, `Queries`).
#[tokio::test]
async fn a_question_about_uses_or_plurals_in_ies_finds_what_it_names() {
    let dir = crate::support::tree(&[
        (
            "src/consts.rs",
            "pub const TIMEOUT: u32 = 3;\npub const RETRIES: u32 = 5;\n",
        ),
        (
            "src/run.rs",
            "pub fn run() {\n    sleep(TIMEOUT);\n}\npub struct Queries;\n",
        ),
    ]);
    for (question, file, line) in [
        ("where is TIMEOUT used?", "src/run.rs", 2),
        ("what calls TIMEOUT?", "src/run.rs", 2),
        ("is TIMEOUT referenced anywhere?", "src/run.rs", 2),
        ("where is RETRIES defined?", "src/consts.rs", 2),
        ("where is `RETRIES`?", "src/consts.rs", 2),
        ("where are the queries?", "src/run.rs", 4),
    ] {
        let report = Coordinator::builder()
            .build()
            .run(Task::explore(question, dir.path()))
            .await
            .unwrap();
        assert_cites(&report, dir.path(), file, line, 0);
        for c in &report.handoff.settled_conclusions {
            assert!(
                !c.claim.starts_with("Negative evidence"),
                "{question}: {}",
                c.claim
            );
        }
    }
}

/// Issue 20, item 9: quotes are byte-exact — a doc comment's inner whitespace kept, a file
/// with bare carriage returns quoted without them, no invisible character quoted — and a
/// term inside another word is not a mention.
#[tokio::test]
async fn quotes_are_byte_exact_and_mentions_whole_words() {
    let dir = crate::support::tree(&[
        (
            "src/builder.rs",
            "/// Example:\n///\n///     let b = Builder::new()\n///         .match_kind(MatchKind::LeftmostFirst)\n///         .build();\npub struct Builder;\n",
        ),
        (
            "src/widget.rs",
            "pub struct Widget {\r    size: u32,\r}\rpub fn build_widget() -> Widget {\r    Widget { size: 1 }\r}\r",
        ),
        ("src/hidden.rs", "pub fn zero\u{200B}width_marker() {}\n"),
        ("src/entry.rs", "pub struct Entry {\n    pub fingerprint: String,\n}\n"),
    ]);
    for question in [
        "where is match_kind used?",
        "where is build_widget defined?",
        "where is width_marker defined?",
        "where is the printed string stored?",
    ] {
        let report = Coordinator::builder()
            .agents(1)
            .shards(1)
            .build()
            .run(Task::explore(question, dir.path()))
            .await
            .unwrap();
        assert_citations_hold(&report, dir.path());
        for c in &report.handoff.settled_conclusions {
            assert!(
                !c.claim.contains('\r') && !c.claim.contains('\u{200B}'),
                "{question}: {:?}",
                c.claim
            );
            assert!(
                !c.claim.contains("mention printed"),
                "{question}: {}",
                c.claim
            );
        }
        let markdown = report.handoff.to_markdown();
        if question.contains("match_kind") {
            assert!(
                markdown.contains("`///         .match_kind(MatchKind::LeftmostFirst)`"),
                "{markdown}"
            );
        }
    }
}

/// A reader that reads one event at a time, slowly, misses nothing: every subagent's spawn and
/// end arrives, from the run's start to its end, each event once and in order.
#[tokio::test]
async fn a_slow_reader_loses_no_event() {
    let dir = crate::support::rust_tree();
    let handle = Coordinator::builder()
        .agents(2)
        .build()
        .start(Task::explore(
            "where is the retry delay computed?",
            dir.path(),
        ))
        .await
        .unwrap();
    let mut events = handle.events();
    let listener = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = events.next().await {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            seen.push(event.unwrap());
        }
        seen
    });
    let report = handle.report().await.unwrap();
    let seen = listener.await.unwrap();
    let count = |f: fn(&baton::RunEvent) -> bool| seen.iter().filter(|e| f(&e.event)).count();
    let spawned = count(|e| matches!(e, baton::RunEvent::SubagentSpawned { .. }));
    let ended = count(|e| matches!(e, baton::RunEvent::SubagentEnded { .. }));
    assert_eq!(seen.first().map(|e| e.event.kind()), Some("run_started"));
    assert_eq!(seen.last().map(|e| e.event.kind()), Some("run_finished"));
    assert_eq!(spawned, report.subagents.len());
    assert_eq!(ended, report.subagents.len());
    // Every event once, in order, with no gap.
    let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seen.len() as u64).collect::<Vec<_>>());
}
