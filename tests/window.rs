//! Compaction keeps every promise it makes: survival checks that can fail (a lossy summariser
//! is caught), a compacted window that fits or is refused, a subagent that never sends a
//! request over its model's window, messages not compacted passed through as they were, a
//! marker that says truly where the raw turns are, a subagent's window that is its model's,
//! and `baton compact` bounded in what it reads.

use std::sync::Arc;

use baton::compaction::{compact, ledger_of, Compactor, Decision, Options, RawTurns, Summariser};
use baton::testing::{ScriptedModel, ScriptedTurn};
use baton::tokens::Bpe;
use baton::{Coordinator, Message, SubagentState, Task, ToolCall};
use serde_json::json;

fn user(text: &str) -> Message {
    Message::User { text: text.into() }
}

fn assistant(text: &str) -> Message {
    Message::Assistant {
        text: text.into(),
        tool_calls: Vec::new(),
    }
}

/// A session of `rounds` exchanges, each stating facts with numbers, paths and identifiers.
fn session(rounds: usize) -> Vec<Message> {
    let mut out = vec![user(
        "Audit the storage layer. Never modify anything under /migrations.",
    )];
    for r in 0..rounds {
        out.push(assistant(&format!(
            "Shard {r} keeps its blocks at /data/shard{r}/blocks.bin with checksum {} and the writer `flush_shard_{r}` runs every {} ms.",
            9000 + r,
            100 + r
        )));
        out.push(user(&format!("Noted. Continue with shard {}.", r + 1)));
    }
    out
}

/// A summariser that loses everything but the headings.
struct Lossy;

impl Summariser for Lossy {
    fn name(&self) -> &str {
        "lossy-test"
    }

    fn summarise(&self, _span: &[Message], _must_keep: &[String], _long: usize) -> String {
        "## Settled conclusions\n- the storage layer was audited\n## Open items\n## Hard constraints\n- none\n".into()
    }
}

fn opts() -> Options {
    Options {
        window: 2_000,
        slot: 1_500,
        keep_last: 2,
        ..Options::default()
    }
}

/// Issue 9, item 10: the survival check is taken from the raw window on its own path, so a
/// lossy summariser plugged in fails it, and the window is left as it was.
#[test]
fn a_lossy_summariser_fails_the_survival_check_and_changes_nothing() {
    let window = session(40);
    let ledger = ledger_of(&window);
    let good = Compactor::new(opts(), &Bpe).compact(&window, &ledger);
    assert_eq!(good.decision, Decision::Compact, "{:?}", good.reason);
    assert!(good.survival.ok());
    let lossy = Compactor::new(opts(), &Bpe)
        .summariser(&Lossy)
        .compact(&window, &ledger);
    assert_eq!(lossy.decision, Decision::Refuse);
    assert_eq!(lossy.window, window, "the window is unchanged");
    assert!(lossy
        .survival
        .missing
        .iter()
        .any(|m| m == "/data/shard7/blocks.bin"));
    assert!(lossy.reason.unwrap().contains("survival check failed"));
    // A must-keep fact the caller passes, found by no rule, is kept by the default summariser
    // and checked: a summariser that drops it is refused.
    let must = vec!["the blue door".to_string()];
    let mut told = session(40);
    told.insert(
        5,
        assistant("The spare key is under the blue door mat, by the way."),
    );
    let ledger = ledger_of(&told);
    let kept = Compactor::new(opts(), &Bpe)
        .must_keep(&must)
        .compact(&told, &ledger);
    assert_eq!(kept.decision, Decision::Compact, "{:?}", kept.reason);
    let text: String = kept
        .window
        .iter()
        .map(baton::compaction::message_text)
        .collect();
    assert!(text.contains("the blue door"));
    let dropped = Compactor::new(opts(), &Bpe)
        .must_keep(&must)
        .summariser(&Lossy)
        .compact(&told, &ledger);
    assert!(dropped
        .survival
        .missing
        .contains(&"the blue door".to_string()));
}

/// Issue 9, item 11: after any decision but refuse, the window fits; a call without a result
/// no longer stops the cut, and a split that would not fit is refused.
#[test]
fn a_compacted_window_always_fits() {
    let mut window = vec![user("Find the slow query.")];
    window.push(Message::Assistant {
        text: "Running the profiler.".into(),
        tool_calls: vec![ToolCall {
            id: "never-answered".into(),
            name: "profile".into(),
            arguments: json!({}),
        }],
    });
    window.extend(session(120).into_iter().skip(1));
    let out = compact(&window, &Options::default(), &Bpe);
    assert_ne!(out.decision, Decision::Refuse, "{:?}", out.reason);
    assert!(out.tokens_after <= 16_000, "{} tokens", out.tokens_after);
    for rounds in [30, 80, 200, 400] {
        for keep_last in [0, 2, 6] {
            let window = session(rounds);
            let o = Options {
                window: 3_000,
                slot: 600,
                keep_last,
                ..Options::default()
            };
            let out = compact(&window, &o, &Bpe);
            match out.decision {
                Decision::Refuse => assert_eq!(out.window, window),
                _ => {
                    let counted: usize = out
                        .window
                        .iter()
                        .map(|m| {
                            baton::tokens::Tokenizer::count(
                                &Bpe,
                                &baton::compaction::message_text(m),
                            )
                        })
                        .sum();
                    assert!(
                        counted <= o.window,
                        "{rounds}/{keep_last}: {counted} tokens"
                    );
                    assert_eq!(counted, out.tokens_after);
                }
            }
        }
    }
}

/// Issue 9, item 11: a subagent never sends a request over its model's window: when the
/// default compaction cannot fold (the last results are kept whole), it clears harder; when
/// nothing can bring a request under the window, it ends with the reason instead.
#[tokio::test]
async fn a_subagent_never_sends_a_request_over_its_window() {
    let line = "pub const DATA: &str = \"a long line of data that nobody can summarise away 0123456789\";\n";
    let tree = crate::support::tree(&[("src/a.rs", &line.repeat(400))]);
    let read = |a: u32, b: u32| {
        ScriptedTurn::tool(
            "read_file",
            json!({"path": "src/a.rs", "start_line": a, "end_line": b}),
        )
    };
    let window = 12_000;
    let store = Arc::new(baton::testing::MemoryStore::new());
    let model = Arc::new(
        ScriptedModel::new([
            read(1, 200),
            read(201, 400),
            read(1, 200),
            read(1, 400),
            ScriptedTurn::text(
                "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n",
            ),
        ])
        .with_window(window),
    );
    let report = Coordinator::builder()
        .model(model.clone())
        .store(store.clone())
        .agents(1)
        .max_subagents(1)
        .build()
        .run(Task::explore("What data is there?", tree.path()))
        .await
        .unwrap();
    let requests = model.requests();
    assert!(requests.len() >= 3, "{:?}", report.subagents);
    // The default compaction refused (the last results are kept whole); the harder one ran.
    let events = baton::checkpoint::EventStore::events(store.as_ref(), &report.run_id).unwrap();
    let decisions: Vec<String> = events
        .iter()
        .filter(|e| e.event.kind() == "window_compacted")
        .map(|e| serde_json::to_value(&e.event).unwrap()["decision"].to_string())
        .collect();
    assert!(decisions.iter().any(|d| d == "\"refuse\""), "{decisions:?}");
    assert!(
        decisions.iter().any(|d| d == "\"compact\""),
        "{decisions:?}"
    );
    for request in &requests {
        let tokens = request.estimated_tokens() as usize + 4096;
        assert!(
            tokens <= window,
            "a request of {tokens} tokens for a {window}-token window"
        );
    }
    let only = &report.subagents[0];
    if only.state == SubagentState::Failed {
        assert!(
            only.error
                .as_deref()
                .unwrap_or("")
                .contains("the window is full"),
            "{only:?}"
        );
    }
}

/// Issue 9, item 13: without an event log, a summary's marker says the raw turns are not
/// kept (a run's subagent logs them: `subagent::agent_loop` tests the digest it points to).
#[test]
fn without_a_log_the_marker_says_the_raw_turns_are_not_kept() {
    let window = session(40);
    let out = Compactor::new(opts(), &Bpe)
        .raw_turns(RawTurns::Input)
        .compact(&window, &ledger_of(&window));
    let marker = out
        .window
        .iter()
        .find_map(|m| match m {
            Message::Compacted { text, .. } if text.starts_with("[compacted:") => {
                Some(text.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(marker.contains("raw turns: not stored"), "{marker}");
    assert!(!marker.contains("event log"));
    let folded = out.folded.unwrap();
    // The digest, computed here on its own, is of the raw turns folded.
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(folded.text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(digest, folded.digest);
    for m in &window[folded.first..=folded.last] {
        if let Message::Assistant { text, .. } = m {
            assert!(folded.text.contains(text.as_str()), "{text}");
        }
    }
}

/// Issue 9, item 11: `baton compact` counts the leading system messages against the window:
/// they are never folded, but they take their share, and the result fits with them.
#[test]
fn baton_compact_counts_the_system_messages_against_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let system = "You are a careful storage auditor. ".repeat(600);
    let mut lines = vec![json!({"role": "system", "content": system}).to_string()];
    for m in session(60) {
        let line = match m {
            Message::User { text } | Message::Compacted { text, .. } => {
                json!({"role": "user", "content": text})
            }
            Message::Assistant { text, .. } => json!({"role": "assistant", "content": text}),
            Message::Tool { .. } => unreachable!(),
        };
        lines.push(line.to_string());
    }
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = baton()
        .arg("compact")
        .arg(&file)
        .args(["--window", "8000", "--slot", "2000", "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["decision"] == "compact" || doc["decision"] == "split",
        "the system text fills most of the window: {}",
        doc["reason"]
    );
    if doc["decision"] != "refuse" {
        let counted: usize = doc["window"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| baton::tokens::Tokenizer::count(&Bpe, m["content"].as_str().unwrap_or("")))
            .sum();
        assert!(counted <= 8000, "{counted} tokens in an 8,000-token window");
        assert_eq!(doc["window"][0]["content"], system.as_str());
    }
    // A system text larger than the window is refused at once, the window unchanged.
    let huge = json!({"role": "system", "content": "word ".repeat(20_000)}).to_string();
    std::fs::write(&file, format!("{huge}\n{}", lines[1..].join("\n"))).unwrap();
    let out = baton().arg("compact").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("system messages alone"));
}

/// Issue 9, item 14: a subagent's window is its model's: a context whose floor is over 32k
/// tokens is compiled for a model with a 200k window and refused for one with 20k.
#[tokio::test]
async fn a_subagents_context_may_grow_to_its_models_window() {
    let tree = crate::support::rust_tree();
    let long: String =
        "Never read the files under vendor/ or third_party/ and never cite generated code. "
            .repeat(30);
    let run = |window: usize| {
        let mut coordinator = Coordinator::builder()
            .model(Arc::new(
                ScriptedModel::new([ScriptedTurn::text(
                    "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n",
                )])
                .with_window(window),
            ))
            .agents(1)
            .max_subagents(1)
            // Long standing conditions naming places: carried, not enforced, by choice.
            .allow_unenforced(true);
        for i in 0..60 {
            coordinator = coordinator.constraint(format!("Rule {i}: {long}"));
        }
        let question = "Where is the retry delay computed?";
        let root = tree.path().to_path_buf();
        async move {
            coordinator
                .build()
                .run(Task::explore(question, root))
                .await
                .unwrap()
        }
    };
    let roomy = run(200_000).await;
    assert_eq!(
        roomy.subagents[0].state,
        SubagentState::HandedOff,
        "{:?}",
        roomy.subagents
    );
    let tight = run(20_000).await;
    assert_eq!(tight.subagents[0].state, SubagentState::Failed);
    assert!(tight.subagents[0]
        .error
        .as_deref()
        .unwrap_or("")
        .contains("context refused"));
}

fn baton() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
}

/// Issue 9, item 12: what compaction does not compact passes through byte for byte: a "none"
/// decision prints every line as it was read, arguments that are not JSON, key order, null
/// content, `name` and `refusal` included; a system message later on stays where it was.
#[test]
fn baton_compact_passes_what_it_keeps_through_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        r#"{"role":"system","content":"You are a coding agent."}"#,
        r#"{"content":"Find the bug.","role":"user","name":"ana"}"#,
        r#"{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"grep","arguments":"not json"}}]}"#,
        r#"{"role":"tool","tool_call_id":"c1","content":"src/a.rs:3:fn bug() {}"}"#,
        r#"{"role":"tool","tool_call_id":"orphan","content":"a result whose call is gone"}"#,
        r#"{"role":"developer","content":"Answer briefly."}"#,
        r#"{"role":"assistant","content":"The bug is in `bug`.","extra":{"z":1,"a":2}}"#,
    ];
    let file = dir.path().join("t.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = baton().arg("compact").arg(&file).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed.lines().collect::<Vec<_>>(), lines);
    // The same through --json: the window's values are the lines' values.
    let out = baton()
        .arg("compact")
        .arg(&file)
        .arg("--json")
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let values: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(doc["window"].as_array().unwrap(), &values);
    assert_eq!(doc["decision"], "none");
}

/// Issue 9, item 15: `baton compact` refuses, at once and with one line, what is not a
/// regular file or is over the documented size; it never blocks or reads without end.
#[test]
fn baton_compact_refuses_fifos_devices_and_oversized_input() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let mut inputs = vec![std::path::PathBuf::from("/dev/zero")];
    if made.is_ok_and(|s| s.success()) {
        inputs.push(fifo);
    }
    let big = dir.path().join("big.jsonl");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(64 * 1024 * 1024 + 1)
        .unwrap();
    inputs.push(big);
    for input in inputs {
        let started = std::time::Instant::now();
        let out = baton().arg("compact").arg(&input).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", input.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("not a regular file") || err.contains("limit"),
            "{err}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}

/// Issue 9, items 8 and 10: a constraint wrapped over two lines is one pin, and clearing tool
/// results alone still passes the check that it survived.
#[test]
fn a_wrapped_constraint_survives_a_clearing_only_compaction() {
    let rule =
        "Never modify anything under\n/migrations; the release pipeline applies those files.";
    let mut window = vec![user(rule)];
    for r in 0..8 {
        let id = format!("r{r}");
        window.push(Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: json!({"path": format!("src/p{r}.rs")}),
            }],
        });
        window.push(Message::Tool {
            call_id: id,
            name: "read_file".into(),
            content: (0..120)
                .map(|i| format!("{i:>6}\tlet step_{i} = compute({i}, {r});\n"))
                .collect(),
            is_error: false,
        });
    }
    let o = Options {
        window: 8_000,
        ..Options::default()
    };
    let out = compact(&window, &o, &Bpe);
    assert_eq!(out.decision, Decision::Compact, "{:?}", out.reason);
    assert!(out.cleared_tokens > 0);
    assert!(out.survival.ok(), "{:?}", out.survival);
    assert_eq!(
        out.ledger[0].text,
        "Never modify anything under /migrations; the release pipeline applies those files."
    );
}
