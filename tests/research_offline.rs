//! The offline researcher on small fixture corpora: what it reads, which sentences and pages
//! it states, and what it hands off when the run's constraints or budget take a tool.

use baton::{Coordinator, Task};

use crate::research::{corpus, research};
use crate::support::{cited_docs, tree};

/// A page's answer in its opening summary, ranked below three sections of the same page that
/// repeat the question's words: the researcher reads the best documents' openings too, and the
/// conclusion quotes the summary first (the document's order), citing both chunks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_opening_of_the_best_document_is_read_and_its_answer_stated_first() {
    let filler =
        "The upload queue keeps each part on disk until the server acknowledges it. ".repeat(12);
    let page = format!(
        "# Upload retries\n\n## Summary\n\n- A failed upload is attempted again five times, then the part is dropped.\n\n\
         ## How the client retries a failed upload\n\nThe client retries a failed upload with backoff. Each retry of a failed upload by the client doubles the wait. {filler}\n\n\
         ## When the client retries a failed upload\n\nThe client retries a failed upload only when the server answered with a retryable status. A failed upload retry by the client is logged. {filler}\n\n\
         ## Client retries of failed uploads and the log\n\nEvery retry of a failed upload by the client writes a log line. {filler}\n"
    );
    let mut files = vec![("retry.md".to_string(), page)];
    for i in 0..6 {
        files.push((
            format!("other{i}.md"),
            format!("# Other {i}\n\nThe server stores parts in buckets number {i}. Nothing about the client here.\n"),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let dir = tree(&refs);
    let report = research(
        "How many times does the client retry a failed upload?",
        dir.path(),
    )
    .await;
    let first = &report.handoff.settled_conclusions[0];
    assert!(
        first
            .claim
            .starts_with("`- A failed upload is attempted again five times"),
        "{}",
        first.claim
    );
    let cited: Vec<String> = first.sources.iter().map(|s| s.to_string()).collect();
    assert_eq!(cited[0], "doc:retry.md#L3-5", "{cited:?}");
    assert!(cited.len() >= 2, "{cited:?}");
    assert!(report.subagents.iter().all(|s| s.violations.is_empty()));
}

/// A sub-question is read with its question's context: "Which flag empties it?" is answered by
/// the mirror's page, not the queue's (whose words match the sub-question alone better), and
/// "where is it kept?" — its one word a paraphrase no chunk holds — by its context's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_question_is_answered_in_its_questions_context() {
    let dir = tree(&[
        ("queue.md", "# Print queue\n\nWhich flag empties the queue? The empty flag empties it: run with the flag and every job in the queue is dropped.\n"),
        ("mirror.md", "# Mirror\n\nThe mirror tool keeps a cache of every package it fetched. Run it with the purge flag and it empties the cache at once.\n"),
        ("place.md", "# Where things live\n\nThe mirror tool keeps its cache under the state folder, next to the lock file.\n"),
    ]);
    let report = research(
        "The mirror tool keeps a cache. Which flag empties it, and where is it kept?",
        dir.path(),
    )
    .await;
    let cited = cited_docs(&report);
    assert!(
        cited.iter().any(|c| c.starts_with("mirror.md#L")),
        "{cited:?}"
    );
    assert!(
        cited.iter().any(|c| c.starts_with("place.md#L")),
        "{cited:?}"
    );
    assert!(
        !cited.iter().any(|c| c.starts_with("queue.md")),
        "{cited:?}"
    );
    assert!(
        report.handoff.open_items.is_empty(),
        "{:?}",
        report.handoff.open_items
    );
}

/// A conclusion quotes sentences that hold the question's words themselves: under a heading
/// that names the subject, the page's unrelated sentences are not quoted with the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentences_that_only_share_a_heading_with_the_question_are_not_quoted() {
    let dir = tree(&[
        ("retry.md", "# Client retries of a failed upload\n\nThe weather in Paris was nice during the conference. Lunch was served at noon in the hall. A failed upload is attempted again five times. Our team thanks every sponsor of the event.\n"),
        ("other.md", "# Other\n\nThe print queue holds jobs until a printer is free. The server stores parts in buckets.\n"),
    ]);
    let report = research("How many times is a failed upload attempted?", dir.path()).await;
    let first = &report.handoff.settled_conclusions[0];
    assert_eq!(
        first.claim,
        "`A failed upload is attempted again five times.`"
    );
}

/// A research run's constraints name its own tools: `search` and `read` are typed and
/// enforced as any tool is, and a researcher the run forbids a document, or a tool, hands off
/// what it could do rather than fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_research_constraint_names_the_corpus_tools_and_is_enforced() {
    let dir = corpus();
    let run = |constraint: &'static str| {
        let folder = dir.path().to_path_buf();
        async move {
            Coordinator::builder()
                .constraint(constraint)
                .build()
                .run(Task::research(
                    "How often does the beacon on Gull Rock flash, and in what colour?",
                    &folder,
                ))
                .await
                .unwrap()
        }
    };
    for (constraint, tool) in [
        ("Never use search.", "search"),
        ("Do not use read.", "read"),
        ("Never use search or read.", "search"),
    ] {
        let report = run(constraint).await;
        assert_eq!(
            report.constraints[0].enforcement,
            baton::Enforcement::Enforced,
            "{constraint}"
        );
        assert!(
            report.handoff.settled_conclusions.is_empty(),
            "{constraint}"
        );
        let said = format!("{:?}", report.handoff.open_items);
        assert!(
            said.contains(&format!("leave the researcher no {tool}")),
            "{said}"
        );
    }
    // A folder of the corpus is a place a constraint names.
    let report = run("Never read anything under lighthouses.").await;
    assert_eq!(
        report.constraints[0].enforcement,
        baton::Enforcement::Enforced
    );
    assert!(
        cited_docs(&report)
            .iter()
            .all(|c| !c.starts_with("lighthouses/")),
        "{:?}",
        cited_docs(&report)
    );
    // The best document forbidden: searches leave it out, so no researcher asks for it (the
    // tool's own test shows what a search leaves out).
    let report = run("Do not read lighthouses/beacon.html.").await;
    assert_eq!(
        report.constraints[0].enforcement,
        baton::Enforcement::Enforced
    );
    assert!(
        report
            .subagents
            .iter()
            .all(|s| s.state != baton::SubagentState::Failed),
        "{:?}",
        report.subagents
    );
    assert!(report.subagents.iter().all(|s| s.denials == 0));
    let cited = cited_docs(&report);
    assert!(
        cited.iter().all(|c| !c.starts_with("lighthouses/")),
        "{cited:?}"
    );
}

/// Ten documents on other things, so that a word's rarity means something.
fn with_fillers(files: &[(&str, &str)]) -> tempfile::TempDir {
    let topics = [
        "ropes", "sails", "anchors", "masts", "decks", "hulls", "oars", "rudders", "keels", "flags",
    ];
    let fillers: Vec<(String, String)> = topics
        .iter()
        .map(|t| {
            (
                format!("{t}.md"),
                format!("# {t}\n\nThe {t} of the old fleet were made in the harbour workshops.\n"),
            )
        })
        .collect();
    let mut all: Vec<(&str, &str)> = files.to_vec();
    all.extend(fillers.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    tree(&all)
}

/// A page whose sentences each say part of the answer is stated before, and instead of, a
/// page that repeats more of the question's words in one sentence, and answers although no
/// sentence of it alone holds enough of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_answering_across_its_sentences_is_stated_first() {
    let dir = with_fillers(&[
        ("listing.md", "# Listing\n\nThe list shows every result of a search.\n"),
        (
            "shortcut.md",
            "# Shortcut\n\nBrowsers can send a search straight from the address bar.\n\nAdd go_first to the address to jump to the top hit.\n\nThe browser then skips the list instead.\n",
        ),
    ]);
    let report = research(
        "Can a search jump straight to the first result instead of showing the list?",
        dir.path(),
    )
    .await;
    let first = &report.handoff.settled_conclusions[0];
    assert!(
        first.sources[0]
            .to_string()
            .starts_with("doc:shortcut.md#L"),
        "{first:?}"
    );
    assert!(first.claim.contains("jump to the top hit"), "{first:?}");
    assert!(
        cited_docs(&report)
            .iter()
            .all(|c| !c.starts_with("listing.md")),
        "{:?}",
        cited_docs(&report)
    );
}

/// The sentence after an answering one is quoted with it when it holds a question word: it
/// often says what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sentence_after_an_answer_is_quoted_with_it() {
    let dir = with_fillers(&[(
        "rollbacks.md",
        "# Rollbacks\n\nWhen a schema migration fails, the tool backs out every edit it made. Pass --no-rollback to leave the broken ones. Then repair them by hand.\n",
    )]);
    let report = research(
        "How do I keep the broken edits when a schema migration fails?",
        dir.path(),
    )
    .await;
    let first = &report.handoff.settled_conclusions[0];
    assert!(
        first
            .claim
            .contains("Pass --no-rollback to leave the broken ones."),
        "{first:?}"
    );
    assert!(!first.claim.contains("repair them by hand"), "{first:?}");
}

/// A researcher whose tool calls run out hands off from what it did: a search made and nothing
/// read is an open item naming the chunks left unread — not an explorer's complaint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_researcher_out_of_tool_calls_hands_off_what_it_did() {
    let dir = corpus();
    let report = Coordinator::builder()
        .budget(baton::Budget {
            model_turns: 12,
            tool_calls: 1,
            tokens: 400_000,
        })
        .build()
        .run(Task::research(
            "How often does the beacon on Gull Rock flash?",
            dir.path(),
        ))
        .await
        .unwrap();
    let said = format!("{:?}", report.handoff.open_items);
    assert!(
        said.contains("budget leave the researcher no read"),
        "{said}"
    );
    assert!(said.contains("doc:lighthouses/beacon.html#L"), "{said}");
    assert!(!said.contains("grep"), "{said}");
}

/// A question asking "how many" is answered by a sentence holding a number, though the
/// sentence holds few of the question's other words (its frame is said elsewhere on the page).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_how_many_question_is_answered_by_a_number() {
    let dir = with_fillers(&[(
        "uploads.md",
        "# Uploads in parts\n\nThe uploader daemon sends each file to the archive server in parts over its network link.\n\n## Limits\n\nFor a given part, a maximum of 7 tries are made. The rest are dropped.\n",
    )]);
    let report = research(
        "When the uploader daemon sends a file to the archive server over the network link, how many tries does it make for a part?",
        dir.path(),
    )
    .await;
    let first = &report.handoff.settled_conclusions[0];
    assert!(first.claim.contains("a maximum of 7 tries"), "{first:?}");
    // A number beside none of the question's words answers nothing.
    let dir = with_fillers(&[(
        "canteen.md",
        "# Canteen

The canteen serves 12 dishes on Fridays.
",
    )]);
    let report = research("How many zorblax replicas are kept?", dir.path()).await;
    assert!(
        report
            .handoff
            .settled_conclusions
            .iter()
            .all(|c| !c.claim.contains("12 dishes")),
        "{:?}",
        report.handoff
    );
    assert!(
        first
            .sources
            .iter()
            .any(|s| s.to_string() == "doc:uploads.md#L5-7"),
        "{first:?}"
    );
}

/// The sentence introducing a code block and the one after the block are neighbours: the
/// first says what to do, the second repeats the question's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sentences_either_side_of_a_code_block_are_neighbours() {
    let dir = with_fillers(&[(
        "kiln.md",
        "# Kiln firing

A kiln schedule that climbs too fast cracks the glaze with a crazing fault.

         ## Holding the ramp

You can also add a hold step, but then you must name the glaze soak:

         ```
step hold at 600 degrees
step ramp slowly to 1200
soak name here please
```

         This is needed because a kiln schedule that climbs fast heats the glaze unevenly, so crazing follows.
",
    )]);
    let report = research(
        "My kiln schedule climbs too fast and the glaze shows a crazing fault. How can I fix it?",
        dir.path(),
    )
    .await;
    let claims = crate::support::settled_claims(&report);
    assert!(
        claims
            .iter()
            .any(|c| c.contains("but then you must name the glaze soak:")),
        "{claims:?}"
    );
}

/// A sentence read that defines a term by the question's words gives the researcher the
/// corpus's own name for what the question describes: it searches again with it and states
/// the passage that answers in that name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_term_defined_by_the_questions_words_is_searched_again() {
    let dir = with_fillers(&[
        (
            "pantry.md",
            "# The pantry\n\nThe pantry of the house is the room where everything is automatically stored.\n",
        ),
        (
            "additions.md",
            "# Additions to the pantry\n\n- The Pickle and Jam jars are now part of the pantry.\n\n## Labels\n\nEach jar carries a paper label.\n",
        ),
    ]);
    let report = research(
        "Which jars became automatically stored in the room?",
        dir.path(),
    )
    .await;
    let stated = report.handoff.settled_conclusions.iter().find(|c| {
        c.claim
            .contains("The Pickle and Jam jars are now part of the pantry.")
    });
    let stated = stated.unwrap_or_else(|| panic!("{:?}", report.handoff.settled_conclusions));
    assert!(
        stated
            .sources
            .iter()
            .any(|s| s.to_string().starts_with("doc:additions.md#L")),
        "{stated:?}"
    );
    assert!(report.subagents.iter().all(|s| s.violations.is_empty()));
    // A term its passage is not about (no heading, no file name holds it) is not searched.
    let dir = with_fillers(&[
        (
            "house.md",
            "# The house\n\nThe pantry of the house is the room where everything is automatically stored.\n",
        ),
        (
            "crocks.md",
            "# Crocks\n\n- Pickle crocks and butter crocks are kept in the pantry too.\n",
        ),
    ]);
    let report = research(
        "Which jars became automatically stored in the room?",
        dir.path(),
    )
    .await;
    assert!(
        cited_docs(&report)
            .iter()
            .all(|c| !c.starts_with("crocks.md")),
        "{:?}",
        cited_docs(&report)
    );
}

/// A question with no word worth searching for is an open item saying so — not a complaint
/// about constraints or budget the run does not have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_with_nothing_to_search_for_says_so() {
    let dir = with_fillers(&[]);
    let report = research("How many are there?", dir.path()).await;
    let said = format!("{:?}", report.handoff.open_items);
    assert!(said.contains("no word worth searching for"), "{said}");
    assert!(!said.contains("budget"), "{said}");
    assert!(report.handoff.settled_conclusions.is_empty());
}
