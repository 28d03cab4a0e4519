//! `baton research` on a fixture corpus the tests build: 24 documents, Markdown and HTML, with
//! navigation chrome, a print-all page and facts planted across documents.

use std::sync::Arc;

use baton::testing::{MemoryStore, ScriptedModel, ScriptedTurn};

use crate::support::{cited_docs, tree};
use baton::{json, ConclusionKind, Coordinator, Role, SourceId, Task, ViolationCode};

const CHROME_TOP: &str = "<html><head><title>Handbook</title><script>var theme = 'dark';</script><style>body{}</style></head><body><nav class=\"sidebar\"><ol><li><a href=\"a.html\">Ferries</a></li><li><a href=\"b.html\">Lighthouses</a></li></ol></nav><div id=\"menu-bar\"><h1 class=\"menu-title\">The Harbour Handbook</h1><button>Theme</button></div><main>";
const CHROME_END: &str = "</main><nav class=\"nav-wrapper\"><a href=\"next.html\">Next chapter</a></nav><footer>Keyboard shortcuts: press ? to show this help.</footer></body></html>";

/// The chapters: (path, title, paragraphs). Facts are planted in a few; the rest is filler
/// that shares the harbour's vocabulary.
fn chapters() -> Vec<(String, String, Vec<String>)> {
    let mut out = vec![
        ("ferries/schedule.html".to_string(), "Ferry schedule".to_string(), vec![
            "The harbour ferry leaves the north pier every forty minutes between dawn and dusk.".to_string(),
            "In winter the last crossing departs at half past four because the channel ices over after dark.".to_string(),
        ]),
        ("lighthouses/beacon.html".to_string(), "The beacon".to_string(), vec![
            "The beacon on Gull Rock flashes green twice every twelve seconds so that pilots can tell it from the breakwater light.".to_string(),
            "Its lamp was converted from paraffin to electricity in the year the cable reached the island.".to_string(),
        ]),
        ("tides.md".to_string(), "Tides".to_string(), vec![
            "Spring tides in the harbour rise seven metres, which floods the lower quay twice a month.".to_string(),
            "Neap tides rise barely three metres.".to_string(),
        ]),
    ];
    let topics = [
        "moorings",
        "cranes",
        "warehouses",
        "customs",
        "pilots",
        "tugboats",
        "dredging",
        "buoys",
        "fishing",
        "nets",
        "sailmakers",
        "ropewalk",
        "chandlery",
        "slipway",
        "drydock",
        "signals",
        "weather",
        "fog",
        "harbourmaster",
        "fees",
    ];
    for (i, topic) in topics.iter().enumerate() {
        let ext = if i % 3 == 0 { "md" } else { "html" };
        out.push((
            format!("misc/{topic}.{ext}"),
            format!("About {topic}"),
            vec![
                format!("The harbour keeps records about {topic} in the office by the quay."),
                format!(
                    "Visitors may ask the staff about {topic} during opening hours on weekdays."
                ),
            ],
        ));
    }
    out
}

fn html(title: &str, paras: &[String]) -> String {
    let body: String = paras.iter().map(|p| format!("<p>{p}</p>\n")).collect();
    format!("{CHROME_TOP}<h1 id=\"t\"><a class=\"header\" href=\"#t\">{title}</a></h1>\n{body}{CHROME_END}")
}

fn markdown(title: &str, paras: &[String]) -> String {
    format!("# {title}\n\n{}\n", paras.join("\n\n"))
}

/// The corpus on disk: every chapter, a print-all page repeating them all, and an image.
/// A research run with the offline model and nothing else configured.
pub(crate) async fn research(question: &str, folder: &std::path::Path) -> baton::Report {
    Coordinator::builder()
        .build()
        .run(Task::research(question, folder))
        .await
        .unwrap()
}

pub(crate) fn corpus() -> tempfile::TempDir {
    let mut files: Vec<(String, String)> = Vec::new();
    let mut print = String::new();
    for (path, title, paras) in chapters() {
        let text = if path.ends_with(".md") {
            markdown(&title, &paras)
        } else {
            html(&title, &paras)
        };
        print.push_str(&format!(
            "<h1>{title}</h1>{}",
            paras
                .iter()
                .map(|p| format!("<p>{p}</p>"))
                .collect::<String>()
        ));
        files.push((path, text));
    }
    files.push((
        "print.html".into(),
        format!("{CHROME_TOP}{print}{CHROME_END}"),
    ));
    files.push(("logo.png".into(), "\u{0}\u{1}png".into()));
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    tree(&borrowed)
}

/// A document's words never make a finding negative evidence: a sentence that starts as one
/// would is stated as the passage's, and stays a finding.
#[tokio::test]
async fn a_passage_that_starts_like_negative_evidence_stays_a_finding() {
    let dir = tree(&[(
        "dispatch.md",
        "# Dispatcher\n\nNegative evidence: the dispatcher routes a request through `route_main` today.\n",
    )]);
    let report = research("How does the dispatcher route a request?", dir.path()).await;
    let found: Vec<&baton::Conclusion> = report
        .handoff
        .settled_conclusions
        .iter()
        .filter(|c| c.kind == ConclusionKind::Finding)
        .collect();
    assert_eq!(found.len(), 1, "{}", report.to_markdown());
    assert!(
        found[0]
            .claim
            .starts_with("The passage says: Negative evidence: the dispatcher routes"),
        "{}",
        found[0].claim
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cites_the_chunk_holding_its_fact_and_never_the_print_page() {
    let dir = corpus();
    let report = research(
        "How often does the beacon on Gull Rock flash, and in what colour?",
        dir.path(),
    )
    .await;
    // The corpus is logged and reported canonical: the run resumes from any directory.
    assert_eq!(
        report.root,
        dir.path().canonicalize().unwrap().display().to_string()
    );
    let cited = cited_docs(&report);
    assert!(
        cited
            .iter()
            .any(|c| c.starts_with("lighthouses/beacon.html#L")),
        "{cited:?}"
    );
    assert!(
        cited.iter().all(|c| !c.starts_with("print.html")),
        "{cited:?}"
    );
    let first = &report.handoff.settled_conclusions[0];
    assert!(
        first
            .claim
            .contains("flashes green twice every twelve seconds"),
        "{}",
        first.claim
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_needing_two_documents_cites_both() {
    let dir = corpus();
    let store = Arc::new(MemoryStore::new());
    let report = Coordinator::builder()
        .store(store.clone())
        .build()
        .run(Task::research(
            "When does the last winter ferry crossing depart, and how high do spring tides rise in the harbour?",
            dir.path(),
        ))
        .await
        .unwrap();
    let cited = cited_docs(&report);
    assert!(
        cited.iter().any(|c| c.starts_with("ferries/schedule.html")),
        "{cited:?}"
    );
    assert!(cited.iter().any(|c| c.starts_with("tides.md")), "{cited:?}");
    assert!(
        report.subagents.len() >= 2,
        "one researcher per sub-question"
    );
    // No query is run by two researchers over the same scope.
    let mut searches: Vec<(String, String)> = Vec::new();
    for logged in baton::EventStore::events(store.as_ref(), &report.run_id).unwrap() {
        if let baton::RunEvent::ToolCalled {
            subagent,
            tool,
            arguments,
            ..
        } = logged.event
        {
            if tool == "search" {
                // A query is its set of words: the same words in another order are the same.
                let mut words: Vec<String> = arguments["query"]
                    .as_str()
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(str::to_lowercase)
                    .collect();
                words.sort();
                words.push(arguments["paths"].to_string());
                searches.push((subagent, words.join(" ")));
            }
        }
    }
    assert!(searches.len() >= 2, "{searches:?}");
    for (i, (who, what)) in searches.iter().enumerate() {
        assert!(
            !searches[i + 1..].iter().any(|(w, q)| w != who && q == what),
            "{what} run by two researchers"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_with_no_answer_is_negative_evidence_naming_the_queries() {
    let dir = corpus();
    let report = research(
        "Which submarine cable operator maintains the Gull Rock telegraph?",
        dir.path(),
    )
    .await;
    assert!(cited_docs(&report).is_empty(), "{:?}", report.handoff);
    let negative: Vec<_> = report
        .handoff
        .settled_conclusions
        .iter()
        .filter(|c| c.kind == ConclusionKind::NegativeEvidence)
        .collect();
    assert_eq!(negative.len(), 1, "{:?}", report.handoff);
    // What was searched and where, never "it does not exist".
    let claim = &negative[0].claim;
    assert!(
        claim.starts_with("no passage in this corpus matched \""),
        "{claim}"
    );
    assert!(claim.contains("submarin"), "{claim}");
    assert!(claim.ends_with("(23 documents searched)"), "{claim}");
    assert!(!claim.contains("does not exist"), "{claim}");
    assert!(negative[0]
        .sources
        .iter()
        .all(|s| matches!(s, SourceId::Record { kind, .. } if kind == "call")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_document_marks_its_evidence_stale_on_resume() {
    let dir = corpus();
    let store = Arc::new(MemoryStore::new());
    let coordinator = Coordinator::builder().store(store).build();
    let first = coordinator
        .run(Task::research(
            "How often does the beacon on Gull Rock flash?",
            dir.path(),
        ))
        .await
        .unwrap();
    assert!(!cited_docs(&first).is_empty());
    let (path, title, mut paras) = chapters().into_iter().nth(1).unwrap();
    paras[0] = "The beacon on Gull Rock now flashes white once every five seconds.".into();
    std::fs::write(dir.path().join(&path), html(&title, &paras)).unwrap();
    let again = coordinator
        .resume(&first.run_id)
        .await
        .unwrap()
        .report()
        .await
        .unwrap();
    assert!(
        cited_docs(&again)
            .iter()
            .all(|c| !c.starts_with("lighthouses/")),
        "{:?}",
        again.handoff
    );
    assert!(
        again
            .handoff
            .open_items
            .iter()
            .any(|o| o.item.starts_with("Stale since the resume")),
        "{:?}",
        again.handoff.open_items
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passage_never_read_and_a_quote_not_in_the_passage_are_rejected() {
    let dir = corpus();
    // The beacon page's one chunk, as the corpus lays it out: its heading, its paragraphs.
    let chunk = "doc:lighthouses/beacon.html#L1-5";
    let never_read = "doc:tides.md#L1-5";
    let handoff = format!(
        "## Settled conclusions\n- The beacon `flashes red` [{chunk}]\n- Spring tides rise seven metres [{never_read}]\n## Open items\n## Hard constraints\n- none\n"
    );
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("read", json!({"id": chunk})),
        ScriptedTurn::text(handoff),
    ]));
    let report = Coordinator::builder()
        .role(
            Role::new("researcher")
                .tools(["search", "read"])
                .model(model),
        )
        .repairs(0)
        .build()
        .run(Task::research("How does the beacon flash?", dir.path()))
        .await
        .unwrap();
    let codes: Vec<ViolationCode> = report.subagents[0]
        .violations
        .iter()
        .map(|v| v.code)
        .collect();
    assert!(codes.contains(&ViolationCode::QuoteNotFound), "{codes:?}");
    assert!(codes.contains(&ViolationCode::DocNotObserved), "{codes:?}");
    assert!(cited_docs(&report).is_empty(), "{:?}", report.handoff);
}

#[test]
fn the_index_keeps_repeats_out_and_counts_what_it_skipped() {
    let dir = corpus();
    let state = tempfile::tempdir().unwrap();
    let (corpus, stats) = baton::Corpus::open(dir.path(), Some(state.path()), &|_, _| {}).unwrap();
    assert_eq!(stats.documents, 24);
    assert_eq!(stats.skipped.get("not a document"), Some(&1));
    assert!(
        stats.repeats >= 1,
        "the print-all page repeats the chapters"
    );
    let text = corpus.search_text("beacon flashes green", 5).unwrap();
    assert!(text.contains("doc:lighthouses/beacon.html#L"), "{text}");
    assert!(!text.contains("doc:print.html"), "{text}");
    // Chrome is not text: the sidebar, the menu and the footer are never indexed.
    assert!(!corpus
        .search_text("keyboard shortcuts", 5)
        .unwrap()
        .contains("doc:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_evidence_a_new_document_contradicts_is_stale_on_resume() {
    let dir = corpus();
    let store = Arc::new(MemoryStore::new());
    let coordinator = Coordinator::builder().store(store).build();
    let question = "Which submarine cable operator maintains the Gull Rock telegraph?";
    let first = coordinator
        .run(Task::research(question, dir.path()))
        .await
        .unwrap();
    let negative = |r: &baton::Report| {
        r.handoff
            .settled_conclusions
            .iter()
            .any(|c| c.kind == ConclusionKind::NegativeEvidence)
    };
    assert!(negative(&first), "{:?}", first.handoff);
    std::fs::write(
        dir.path().join("telegraph.md"),
        "# Telegraph\n\nThe submarine telegraph cable operator maintains the line to Gull Rock.\n",
    )
    .unwrap();
    let again = coordinator
        .resume(&first.run_id)
        .await
        .unwrap()
        .report()
        .await
        .unwrap();
    assert!(!negative(&again), "{:?}", again.handoff);
    assert!(
        again
            .handoff
            .open_items
            .iter()
            .any(|o| o.item.starts_with("Stale since the resume")
                && o.item.contains("no passage in this corpus matched")),
        "{:?}",
        again.handoff.open_items
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_evidence_names_what_the_index_left_out() {
    let dir = tree(&[
        ("guide.md", "# Guide\n\nThe harbour opens at dawn.\n"),
        (
            "Meeting notes.md",
            "# Notes\n\nThe regatta launch is on Tuesday.\n",
        ),
        (
            ".hidden/regatta.md",
            "# Regatta\n\nThe regatta launch is on Tuesday.\n",
        ),
    ]);
    let report = research("Which day is the regatta launch?", dir.path()).await;
    let negative: Vec<&str> = report
        .handoff
        .settled_conclusions
        .iter()
        .filter(|c| c.kind == ConclusionKind::NegativeEvidence)
        .map(|c| c.claim.as_str())
        .collect();
    assert_eq!(negative.len(), 1, "{:?}", report.handoff);
    assert!(
        negative[0].contains("not searched: 2 entries the index left out"),
        "{}",
        negative[0]
    );
    assert!(negative[0].contains("Meeting notes.md"), "{}", negative[0]);
    assert!(negative[0].contains(".hidden"), "{}", negative[0]);
}

fn baton() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
}

#[test]
fn baton_index_prints_its_figures_and_its_search_as_json() {
    let dir = corpus();
    let state = tempfile::tempdir().unwrap();
    let out = baton()
        .args(["index", "--json", "--no-progress", "--state"])
        .arg(state.path())
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stats: baton::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["documents"], 24);
    let out = baton()
        .args([
            "index",
            "--json",
            "--no-progress",
            "--search",
            "beacon flashes green",
            "--state",
        ])
        .arg(state.path())
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let found: baton::Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = found["hits"][0]["id"].as_str().unwrap();
    assert!(
        first.starts_with("doc:lighthouses/beacon.html#L"),
        "{first}"
    );
}

#[test]
fn research_on_a_folder_with_nothing_to_index_exits_2_saying_so() {
    let state = tempfile::tempdir().unwrap();
    let missing = baton()
        .args(["research", "/no/such/folder", "what?", "--state"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(err.trim(), "baton: /no/such/folder: no such directory");
    // A state that is a file: bad input, one line, before anything is indexed.
    let file = state.path().join("state-file");
    std::fs::write(&file, "not a directory").unwrap();
    let dangling = state.path().join("dangling");
    #[cfg(unix)]
    std::os::unix::fs::symlink("/no/such/target", &dangling).unwrap();
    #[cfg(not(unix))]
    let dangling = file.clone();
    for (command, file) in [
        ("research", &file),
        ("index", &file),
        ("index", &file.join("below")),
        ("index", &dangling),
    ] {
        let mut cmd = baton();
        cmd.arg(command).arg(state.path());
        if command == "research" {
            cmd.arg("what?");
        }
        let out = cmd.arg("--state").arg(file).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.trim(),
            format!(
                "baton: cannot open the state at {}: it is not a directory",
                file.display()
            )
        );
    }
    // Only a binary file, an image and a FIFO named like a document: nothing indexed, no hang.
    let dir = tree(&[("a.md", "\u{0}binary"), ("logo.png", "png")]);
    #[cfg(unix)]
    {
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe.md"))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let out = baton()
        .args(["research", "--no-progress", "--json", "--state"])
        .arg(state.path())
        .arg(dir.path())
        .arg("what is here?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing indexed"), "{err}");
    assert!(err.contains("1 binary"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_markdown_sentence_with_inline_code_is_stated_and_its_code_checked() {
    let dir = tree(&[
        ("cli.md", "# Flags\n\nThe `--timeout` flag defaults to thirty seconds when it is not given.\n\nThe `--retries` flag defaults to three.\n"),
        ("other.md", "# Other\n\nNothing about flags here at all.\n"),
    ]);
    let report = research("What does the timeout flag default to?", dir.path()).await;
    // The document's best sentence first; a conclusion quotes up to four of its sentences.
    let first = &report.handoff.settled_conclusions[0];
    assert!(
        first
            .claim
            .starts_with("The `--timeout` flag defaults to thirty seconds when it is not given."),
        "{}",
        first.claim
    );
    assert!(
        !first.claim.contains("Nothing about flags"),
        "{}",
        first.claim
    );
    assert!(cited_docs(&report)[0].starts_with("cli.md#L"));
    assert!(report.subagents.iter().all(|s| s.violations.is_empty()));
}

#[test]
fn baton_brief_marks_a_cited_passage_stale_once_its_document_changed() {
    let dir = corpus();
    let state = tempfile::tempdir().unwrap();
    let out = baton()
        .args(["research", "--no-progress", "--json", "--state"])
        .arg(state.path())
        .arg(dir.path())
        .arg("How often does the beacon on Gull Rock flash?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: baton::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = report["run_id"].as_str().unwrap().to_string();
    let brief = |state: &std::path::Path| {
        let out = baton()
            .args(["brief", &run, "--state"])
            .arg(state)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    let before = brief(state.path());
    assert!(before.contains("doc:lighthouses/beacon.html#L"), "{before}");
    // The verifier's wave lists the researchers again: finished, not "to do".
    assert!(before.contains("sa1 []: handed off"), "{before}");
    assert!(!before.contains("to do"), "{before}");
    assert!(!before.contains("stale"), "{before}");
    let (path, title, mut paras) = chapters().into_iter().nth(1).unwrap();
    paras[0] = "The beacon on Gull Rock now flashes white once every five seconds.".into();
    std::fs::write(dir.path().join(&path), html(&title, &paras)).unwrap();
    let after = brief(state.path());
    assert!(
        after.contains("(stale: the passage reads differently in the corpus now"),
        "{after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_document_citation_stands_while_what_was_read_of_it_does() {
    let dir = corpus();
    let handoff = "## Settled conclusions\n- The beacon `flashes green twice every twelve seconds` [doc:lighthouses/beacon.html]\n## Open items\n## Hard constraints\n- none\n";
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("read", json!({"id": "doc:lighthouses/beacon.html#L1-5"})),
        ScriptedTurn::text(handoff),
    ]));
    let coordinator = Coordinator::builder()
        .store(Arc::new(MemoryStore::new()))
        .role(
            Role::new("researcher")
                .tools(["search", "read"])
                .model(model),
        )
        .build();
    let first = coordinator
        .run(Task::research("How does the beacon flash?", dir.path()))
        .await
        .unwrap();
    assert_eq!(cited_docs(&first), vec!["lighthouses/beacon.html#"]);
    let resume = || async {
        coordinator
            .resume(&first.run_id)
            .await
            .unwrap()
            .report()
            .await
            .unwrap()
    };
    let unchanged = resume().await;
    assert_eq!(cited_docs(&unchanged), vec!["lighthouses/beacon.html#"]);
    let (path, title, mut paras) = chapters().into_iter().nth(1).unwrap();
    paras[0] = "The beacon on Gull Rock now flashes white once every five seconds.".into();
    std::fs::write(dir.path().join(&path), html(&title, &paras)).unwrap();
    let changed = resume().await;
    assert!(cited_docs(&changed).is_empty(), "{:?}", changed.handoff);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_index_dir_keeps_each_corpus_index_where_the_cli_does() {
    let dir = corpus();
    let state = tempfile::tempdir().unwrap();
    let coordinator = Coordinator::builder().index_dir(state.path()).build();
    let report = coordinator
        .run(Task::research("How high do spring tides rise?", dir.path()))
        .await
        .unwrap();
    assert!(cited_docs(&report)
        .iter()
        .any(|c| c.starts_with("tides.md")));
    let kept = baton::Corpus::index_dir_in(state.path(), dir.path());
    assert!(kept.join("manifest.json").is_file(), "{}", kept.display());
    // The same index, unchanged, opened again: nothing converted again.
    let (_, stats) = baton::Corpus::open(dir.path(), Some(&kept), &|_, _| {}).unwrap();
    assert_eq!((stats.documents, stats.indexed), (24, 0));
}

/// The offline model, but before the verifier's first turn a document is rewritten (when
/// `rewrite` is given): what the verifier rereads is the document as it is then.
struct RewritesBeforeVerifying {
    inner: baton::OfflineModel,
    rewrite: Option<(std::path::PathBuf, &'static str)>,
    verifier_turns: std::sync::atomic::AtomicUsize,
}

#[baton::async_trait]
impl baton::Model for RewritesBeforeVerifying {
    fn name(&self) -> String {
        "offline".into()
    }

    async fn complete(
        &self,
        request: baton::ModelRequest,
    ) -> Result<baton::ModelResponse, baton::ModelError> {
        let verifying = request.messages.iter().any(|m| {
            matches!(m, baton::Message::User { text } if text.contains("Task: verify the doubted claims."))
        });
        if verifying {
            let n = self
                .verifier_turns
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if let (0, Some((file, text))) = (n, &self.rewrite) {
                std::fs::write(file, text).unwrap();
            }
        }
        self.inner.complete(request).await
    }
}

async fn verified_run(rewrite: bool) -> (baton::Report, usize) {
    let dir = tree(&[
        (
            "cache.md",
            "# Cache\n\nThe purge flag empties the mirror cache at once.\n",
        ),
        (
            "other.md",
            "# Other\n\nThe print queue holds jobs until a printer is free.\n",
        ),
    ]);
    let model = Arc::new(RewritesBeforeVerifying {
        inner: baton::OfflineModel::new(),
        rewrite: rewrite.then(|| {
            (
                dir.path().join("cache.md"),
                "# Cache\n\nThe cache is kept forever.\n",
            )
        }),
        verifier_turns: Default::default(),
    });
    let report = Coordinator::builder()
        .model(Arc::clone(&model) as Arc<dyn baton::Model>)
        .build()
        .run(Task::research(
            "Which flag empties the mirror cache?",
            dir.path(),
        ))
        .await
        .unwrap();
    let turns = model
        .verifier_turns
        .load(std::sync::atomic::Ordering::SeqCst);
    (report, turns)
}

/// A second wave rereads the passages the report rests on: a verifier (with the researchers'
/// `read`) confirms a finding whose passage still says it, and the finding stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verifier_rereads_the_passages_research_findings_rest_on() {
    let (report, turns) = verified_run(false).await;
    assert!(
        turns >= 2,
        "the verifier reads, then hands off: {turns} turn(s)"
    );
    let verifier = report
        .subagents
        .iter()
        .find(|s| s.role == baton::RoleId::VERIFIER)
        .expect("a verifier");
    assert!(verifier.tool_calls >= 1, "{verifier:?}");
    let first = &report.handoff.settled_conclusions[0];
    assert!(
        first
            .claim
            .contains("The purge flag empties the mirror cache"),
        "{first:?}"
    );
    assert_eq!(first.sources[0].to_string(), "doc:cache.md#L1-3");
    assert!(
        report.handoff.open_items.is_empty(),
        "{:?}",
        report.handoff.open_items
    );
}

/// The passage changed before the verifier reread it: the finding does not stand; it is an
/// open item saying the reread did not support it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_research_finding_the_verifier_cannot_reread_does_not_stand() {
    let (report, _) = verified_run(true).await;
    assert!(
        !report
            .handoff
            .settled_conclusions
            .iter()
            .any(|c| c.kind == ConclusionKind::Finding),
        "{:?}",
        report.handoff.settled_conclusions
    );
    let items: Vec<String> = report
        .handoff
        .open_items
        .iter()
        .map(|o| format!("{} — {}", o.item, o.stuck_on))
        .collect();
    assert!(
        items
            .iter()
            .any(|i| i.starts_with("Not confirmed by the verifier")
                && i.contains("doc:cache.md#L1-3")
                && i.contains("a reread of the passages it cites did not support it")),
        "{items:?}"
    );
}

/// An index whose manifest is of another version (or missing) holds chunks nothing accounts
/// for: it is rebuilt from nothing, so a document removed since is not searched any more.
#[test]
fn an_index_with_a_manifest_of_another_version_is_rebuilt() {
    let dir = tree(&[
        ("a.md", "# A\n\nAlpha zebra text here.\n"),
        ("b.md", "# B\n\nBeta zebra text here.\n"),
        ("d.md", "# D\n\nDelta zebra text here.\n"),
    ]);
    let state = tempfile::tempdir().unwrap();
    let index = |dir: &std::path::Path| {
        let out = baton()
            .args(["index", "--json", "--no-progress", "--state"])
            .arg(state.path())
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(index(dir.path())["chunks"], 3);
    let manifest = std::fs::read_dir(state.path().join("corpus"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["version"] = json!(3);
    std::fs::write(&manifest, m.to_string()).unwrap();
    std::fs::remove_file(dir.path().join("d.md")).unwrap();
    let figures = index(dir.path());
    assert_eq!(figures["documents"], 2, "{figures}");
    assert_eq!(figures["chunks"], 2, "{figures}");
}

/// With no room left for the verifier, research findings stand unverified, and the report
/// says so for what they rest on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn findings_the_verifier_had_no_room_to_reread_are_said_to_be_unverified() {
    let dir = tree(&[
        (
            "cache.md",
            "# Cache\n\nThe purge flag empties the mirror cache at once.\n",
        ),
        (
            "other.md",
            "# Other\n\nThe print queue holds jobs until a printer is free.\n",
        ),
    ]);
    let report = Coordinator::builder()
        .max_subagents(1)
        .build()
        .run(Task::research(
            "Which flag empties the mirror cache?",
            dir.path(),
        ))
        .await
        .unwrap();
    assert!(report.handoff.settled_conclusions[0]
        .claim
        .contains("The purge flag empties the mirror cache"));
    let items: Vec<String> = report
        .handoff
        .open_items
        .iter()
        .map(|o| format!("{} — {}", o.item, o.stuck_on))
        .collect();
    assert!(
        items.iter().any(
            |i| i.starts_with("The conclusions resting on corpus passages")
                && i.contains("--max-subagents 1")
        ),
        "{items:?}"
    );
}

/// A link put where the index's folder goes is not followed: the folder it points to keeps
/// its files, and the command says why it cannot index.
#[cfg(unix)]
#[test]
fn a_link_in_place_of_the_index_folder_is_not_followed() {
    let dir = tree(&[("a.md", "# A\n\nAlpha zebra text here.\n")]);
    let state = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    std::fs::write(victim.path().join("important.txt"), "keep me").unwrap();
    std::fs::write(victim.path().join("meta.json"), "{}").unwrap();
    let key = baton::Corpus::index_dir_in(state.path(), dir.path());
    std::fs::create_dir_all(&key).unwrap();
    std::os::unix::fs::symlink(victim.path(), key.join("tantivy")).unwrap();
    let out = baton()
        .args(["index", "--no-progress", "--state"])
        .arg(state.path())
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(victim.path().join("important.txt").exists());
    assert!(victim.path().join("meta.json").exists());
}
