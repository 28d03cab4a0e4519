//! The compaction benchmark: sessions built from the cases behind the rules, each compacted
//! with the real tokenizer; a table of tokens before/after, ratio, decision and the survival of
//! every must-keep item is printed (`cargo test --test tests compaction -- --nocapture`) and the
//! targets are asserted.

use baton::compaction::{compact, Decision, Options};
use baton::tokens::Bpe;
use baton::{Message, ToolCall};

const MIGRATIONS: &str = "Never modify anything under /migrations.";

fn user(text: &str) -> Message {
    Message::User { text: text.into() }
}

fn tool_round(id: &str, path: &str, size_lines: usize) -> Vec<Message> {
    let body: String = (1..=size_lines)
        .map(|i| format!("{i:>6}\tlet value_{i} = compute(input, {i}); // step {i} of {path}\n"))
        .collect();
    vec![
        Message::Assistant {
            text: format!("Reading {path}."),
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": path}),
            }],
        },
        Message::Tool {
            call_id: id.into(),
            name: "read_file".into(),
            content: body,
            is_error: false,
        },
    ]
}

/// A coding session that obeys a constraint stated once at turn 3, growing by `rounds` tool
/// rounds with user follow-ups.
fn migrations_session(from: usize, rounds: usize) -> Vec<Message> {
    let mut out = Vec::new();
    if from == 0 {
        out.push(user("Please refactor the retry logic in src/net."));
        out.push(Message::Assistant {
            text: "I will start by reading src/net/retry.rs.".into(),
            tool_calls: vec![],
        });
        out.push(user("Sure, go ahead."));
        out.push(user(MIGRATIONS));
    }
    for r in from..from + rounds {
        out.extend(tool_round(
            &format!("c{r}"),
            &format!("src/net/part{r}.rs"),
            40,
        ));
        out.push(user(&format!("Good, now look at part {}.", r + 1)));
    }
    out
}

struct Row {
    name: &'static str,
    before: usize,
    after: usize,
    decision: Decision,
    kept: usize,
    total: usize,
}

fn kept_in(window: &[Message], items: &[&str]) -> usize {
    let text: String = window
        .iter()
        .map(|m| match m {
            Message::User { text } | Message::Compacted { text, .. } => text.clone(),
            Message::Assistant { text, .. } => text.clone(),
            Message::Tool { content, .. } => content.clone(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    items.iter().filter(|i| text.contains(*i)).count()
}

#[test]
fn compaction_benchmark() {
    let mut rows: Vec<Row> = Vec::new();
    let opts = Options {
        window: 8_000,
        slot: 2_000,
        ..Options::default()
    };

    // 1. A 63-turn session; "never modify anything under /migrations" stated once at turn 3;
    //    compacted three times as it grows.
    // Tool results are never cleared here, so every pass summarises and writes the ledger.
    let summarising = Options {
        keep_tool_results: usize::MAX,
        ..opts
    };
    let mut window = migrations_session(0, 20);
    let mut ledger_messages: Vec<String> = Vec::new();
    for pass in 1..=3 {
        let before = window.clone();
        let out = compact(&before, &summarising, &Bpe);
        assert_ne!(
            out.decision,
            Decision::None,
            "pass {pass}: over the threshold"
        );
        assert!(out.survival.ok(), "pass {pass}: {:?}", out.survival);
        assert_eq!(
            kept_in(&out.window, &[MIGRATIONS]),
            1,
            "pass {pass}: the constraint verbatim"
        );
        rows.push(Row {
            name: [
                "migrations, pass 1",
                "migrations, pass 2",
                "migrations, pass 3",
            ][pass - 1],
            before: out.tokens_before,
            after: out.tokens_after,
            decision: out.decision,
            kept: kept_in(&out.window, &[MIGRATIONS]),
            total: 1,
        });
        // An earlier summary is carried verbatim, never summarised again.
        for earlier in before.iter().filter(
            |m| matches!(m, Message::Compacted { text, .. } if text.starts_with("[compacted:")),
        ) {
            assert!(
                out.window.contains(earlier),
                "pass {pass}: an earlier summary is kept as it was"
            );
        }
        ledger_messages.extend(out.window.iter().filter_map(|m| match m {
            Message::Compacted { text, .. } if text.starts_with("=== PINNED") => Some(text.clone()),
            _ => None,
        }));
        window = out.window;
        window.extend(migrations_session(20 * pass, 8));
    }

    // The ledger is byte-identical across the compactions (no pin arrived in between).
    let ledgers: Vec<String> = ledger_messages.clone();
    assert_eq!(ledgers.len(), 3);
    assert!(ledgers.windows(2).all(|w| w[0] == w[1]), "{ledgers:#?}");

    // 2. Tool results are cleared before any summary, tokens saved reported.
    let mut light = vec![user("Summarise the parser module.")];
    for r in 0..6 {
        light.extend(tool_round(
            &format!("t{r}"),
            &format!("src/parse/p{r}.rs"),
            60,
        ));
    }
    light.push(user("Which function handles errors?"));
    let out = compact(&light, &opts, &Bpe);
    assert_eq!(out.decision, Decision::Compact);
    assert!(out.cleared_tokens > 2_000, "{}", out.cleared_tokens);
    assert!(out.window.iter().any(|m| matches!(m, Message::Tool { content, .. } if content.starts_with("[tool result cleared:"))));
    assert!(
        !out.window.iter().any(
            |m| matches!(m, Message::Compacted { text, .. } if text.starts_with("[compacted:"))
        ),
        "no summary was needed"
    );
    rows.push(Row {
        name: "tool results cleared first",
        before: out.tokens_before,
        after: out.tokens_after,
        decision: out.decision,
        kept: 1,
        total: 1,
    });

    // 3. An outcome that is unknown stays unknown.
    let mut unknown = vec![user("Refund order A-1234.")];
    unknown.push(Message::Assistant {
        text: "The refund call timed out: its effect is outcome_unknown; I will not retry it."
            .into(),
        tool_calls: vec![],
    });
    for r in 0..8 {
        unknown.extend(tool_round(
            &format!("u{r}"),
            &format!("src/pay/p{r}.rs"),
            50,
        ));
        unknown.push(user("Continue."));
    }
    let out = compact(&unknown, &opts, &Bpe);
    assert!(out.survival.effect_states_kept);
    assert_eq!(kept_in(&out.window, &["outcome_unknown"]), 1);
    assert_eq!(
        kept_in(&out.window, &["failed"]),
        0,
        "unknown never becomes failed"
    );
    rows.push(Row {
        name: "outcome_unknown stays",
        before: out.tokens_before,
        after: out.tokens_after,
        decision: out.decision,
        kept: kept_in(&out.window, &["outcome_unknown", "A-1234"]),
        total: 2,
    });

    // 4. A span holding an exact regex constraint, an errno with a path and a version pin later
    //    reverted, with a 2,000-token slot below its floor: split or refused, all three kept.
    let regex_rule = "Only accept names matching `^[a-z][a-z0-9_]{2,31}$` from now on.";
    let errno = "open(/var/lib/app/state.db) failed with ENOENT (errno 2).";
    let pin = "Pinned tokio to =1.38.0 in Cargo.toml; later reverted the pin to 1.54.1.";
    let mut dense = vec![user(regex_rule)];
    dense.push(Message::Assistant {
        text: errno.into(),
        tool_calls: vec![],
    });
    dense.push(Message::Assistant {
        text: pin.into(),
        tool_calls: vec![],
    });
    for r in 0..40 {
        let facts: String = (0..12)
            .map(|i| {
                format!(
                    "Record R{r}_{i} lives at /data/shard{r}/block{i}.bin with checksum {}.",
                    100_000 + r * 97 + i
                )
            })
            .collect::<Vec<_>>()
            .join(" ");
        dense.push(Message::Assistant {
            text: facts,
            tool_calls: vec![],
        });
        dense.push(user("Next."));
    }
    let out = compact(&dense, &opts, &Bpe);
    assert!(
        matches!(out.decision, Decision::Split | Decision::Refuse),
        "{:?}",
        out.decision
    );
    let must = [
        "^[a-z][a-z0-9_]{2,31}$",
        "/var/lib/app/state.db",
        "ENOENT",
        "=1.38.0",
        "1.54.1",
    ];
    assert_eq!(kept_in(&out.window, &must), must.len(), "{:?}", out.reason);
    rows.push(Row {
        name: "regex, errno, reverted pin; slot below floor",
        before: out.tokens_before,
        after: out.tokens_after,
        decision: out.decision,
        kept: kept_in(&out.window, &must),
        total: must.len(),
    });

    // 5. A ~2,200-token support session; four facts must survive, the deadline stated only in
    //    the last turns: with default settings, and with keep-last 1 (the ledger pinned it).
    let mut support = vec![
        user("Hello, my order A-55810 arrived damaged."),
        Message::Assistant {
            text: "Sorry to hear that. I will check the order and the refund policy.".into(),
            tool_calls: vec![],
        },
        user("I paid €149.90 for it."),
    ];
    for i in 0..40 {
        support.push(Message::Assistant {
            text: format!("Checking the warehouse records for the shipment, step {i}: the parcel left the depot, was scanned at the sorting centre and handed to the courier, who reported the box as dented on arrival at the customer's address."),
            tool_calls: vec![],
        });
        support.push(user("Okay, thanks for checking."));
    }
    support.push(Message::Assistant {
        text: "Under clause 4.2 of our returns policy, damaged goods are refunded in full.".into(),
        tool_calls: vec![],
    });
    support.push(user("Good. Please answer before 18:00 on Friday."));
    support.push(Message::Assistant {
        text: "Noted, you will hear from us.".into(),
        tool_calls: vec![],
    });
    let facts = ["A-55810", "€149.90", "clause 4.2", "before 18:00 on Friday"];
    for keep_last in [6, 1] {
        let support_opts = Options {
            window: 2_400,
            slot: 1_000,
            keep_last,
            ..Options::default()
        };
        let out = compact(&support, &support_opts, &Bpe);
        assert_eq!(
            out.decision,
            Decision::Compact,
            "keep-last {keep_last}: {:?}",
            out.reason
        );
        assert!(out.tokens_after < out.tokens_before);
        assert_eq!(
            kept_in(&out.window, &facts),
            4,
            "keep-last {keep_last}: {:?}",
            out.reason
        );
        assert!(
            out.ledger
                .iter()
                .any(|p| p.text == "Please answer before 18:00 on Friday."),
            "the deadline was pinned when it arrived"
        );
        rows.push(Row {
            name: if keep_last == 6 {
                "support session, defaults"
            } else {
                "support session, keep-last 1"
            },
            before: out.tokens_before,
            after: out.tokens_after,
            decision: out.decision,
            kept: kept_in(&out.window, &facts),
            total: facts.len(),
        });
    }

    println!("\n| case | tokens before | tokens after | ratio | decision | must-keep kept |");
    println!("|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.2} | {:?} | {}/{} |",
            r.name,
            r.before,
            r.after,
            r.after as f64 / r.before as f64,
            r.decision,
            r.kept,
            r.total
        );
    }
    assert!(rows.iter().all(|r| r.kept == r.total));
}

fn chat_jsonl(messages: &[Message]) -> String {
    let mut out = String::from("{\"role\":\"system\",\"content\":\"You are a coding agent.\"}\n");
    for m in messages {
        let v = match m {
            Message::User { text } | Message::Compacted { text, .. } => {
                serde_json::json!({"role": "user", "content": text})
            }
            Message::Assistant { text, tool_calls } if tool_calls.is_empty() => {
                serde_json::json!({"role": "assistant", "content": text})
            }
            Message::Assistant { text, tool_calls } => serde_json::json!({
                "role": "assistant", "content": text,
                "tool_calls": tool_calls.iter().map(|c| serde_json::json!({
                    "id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments.to_string()}
                })).collect::<Vec<_>>()
            }),
            Message::Tool {
                call_id, content, ..
            } => {
                serde_json::json!({"role": "tool", "tool_call_id": call_id, "content": content})
            }
        };
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

#[test]
fn baton_compact_reads_chat_jsonl_and_its_output_feeds_back_in() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.jsonl");
    std::fs::write(&file, chat_jsonl(&migrations_session(0, 20))).unwrap();
    let run = |path: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .arg("compact")
            .arg(path)
            .args(["--window", "8000", "--slot", "2000", "--json"])
            .output()
            .unwrap()
    };
    let out = run(&file);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["decision"], "compact");
    assert!(doc["tokens_after"].as_u64() < doc["tokens_before"].as_u64());
    assert_eq!(
        doc["window"][0]["role"], "system",
        "system messages are kept first"
    );
    assert!(doc["ledger"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["text"] == MIGRATIONS && p["class"] == "constraint"));
    assert_eq!(doc["survival"]["ledger_verbatim"], true);
    // The window, written back as JSONL, is a valid input again.
    let again = dir.path().join("again.jsonl");
    let lines: String = doc["window"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{m}\n"))
        .collect();
    std::fs::write(&again, lines).unwrap();
    let out = run(&again);
    assert!(
        matches!(out.status.code(), Some(0) | Some(3)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["window"].to_string().contains(MIGRATIONS));
    // Unusable input.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"role\":\"user\",\"content\":\"hi\"}\nnot json\n").unwrap();
    let out = run(&bad);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.jsonl:2:"));
    // Unusable options: one line, exit 2, before the file is read.
    for (flag, value) in [
        ("--threshold", "7"),
        ("--threshold", "0"),
        ("--threshold", "NaN"),
        ("--window", "0"),
        ("--slot", "0"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .arg("compact")
            .arg(&file)
            .args([flag, value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag) && err.lines().count() == 1, "{err}");
        assert!(out.stdout.is_empty());
    }
}

/// A subagent whose model has a small window: its window is compacted before a request would
/// fill it, the compaction is logged, and the handoff still passes (the observation log is
/// not compacted).
#[tokio::test]
async fn a_subagent_window_is_compacted_before_it_fills() {
    use baton::checkpoint::EventStore;
    use baton::testing::MemoryStore;
    use baton::testing::{ScriptedModel, ScriptedTurn};
    use baton::{Coordinator, Task};
    use std::sync::Arc;
    let body: String = (1..=300)
        .map(|i| format!("pub fn step_{i}(x: u64) -> u64 {{ x + {i} }}\n"))
        .collect();
    let tree = crate::support::tree(&[("src/big.rs", body.as_str())]);
    let read = |a: u32, b: u32| {
        ScriptedTurn::tool(
            "read_file",
            serde_json::json!({"path": "src/big.rs", "start_line": a, "end_line": b}),
        )
    };
    let model = Arc::new(
        ScriptedModel::new([
            read(1, 100),
            read(101, 200),
            read(201, 300),
            read(1, 100),
            read(101, 200),
            ScriptedTurn::text("## Settled conclusions\n- `step_1` adds one. [src/big.rs:1]\n## Open items\n## Hard constraints\n- none\n"),
        ])
        .with_window(13_500),
    );
    let store = Arc::new(MemoryStore::new());
    let report = Coordinator::builder()
        .model(model.clone())
        .store(store.clone())
        .agents(1)
        .max_subagents(1)
        .build()
        .run(Task::explore(
            "What does step_1 do? Never edit src/big.rs.",
            tree.path(),
        ))
        .await
        .unwrap();
    assert_eq!(
        report.subagents[0].state,
        baton::SubagentState::HandedOff,
        "{:?}",
        report.subagents
    );
    let requests = model.requests();
    let cleared = requests.iter().any(|r| {
        r.messages
            .iter()
            .any(|m| matches!(m, Message::Tool { content, .. } if content.starts_with("[tool result cleared:")))
    });
    assert!(
        cleared,
        "old tool results were cleared before a request filled the window: {:?}",
        report.subagents
    );
    let events = store.events(&report.run_id).unwrap();
    let compacted: Vec<_> = events
        .iter()
        .filter(|e| e.event.kind() == "window_compacted")
        .collect();
    assert!(!compacted.is_empty());
    let logged = serde_json::to_value(&compacted[0].event).unwrap();
    assert!(logged["tokens_after"].as_u64() < logged["tokens_before"].as_u64());
}

#[test]
fn window_compacted_is_in_the_event_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../contracts/event.schema.json")).unwrap();
    let branch = schema["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["properties"]["kind"]["const"] == "window_compacted")
        .expect("documented");
    let event = baton::checkpoint::RunEvent::WindowCompacted {
        subagent: "sa1".into(),
        decision: Decision::Compact,
        tokens_before: 10,
        tokens_after: 5,
        cleared_tokens: 3,
        pinned: vec![MIGRATIONS.into()],
        constraints: vec![MIGRATIONS.into()],
        retired: vec![],
        reason: None,
        folded: Some(baton::compaction::Folded {
            first: 0,
            last: 3,
            bytes: 9,
            digest: "ab".into(),
            text: "raw turns".into(),
            truncated: false,
        }),
    };
    let written = serde_json::to_value(&event).unwrap();
    for key in written.as_object().unwrap().keys() {
        assert!(branch["properties"].get(key).is_some(), "{key} declared");
    }
    assert!(include_str!("../contracts/events.md").contains("`window_compacted`"));
}

/// `baton compact` keeps what it does not compact as it was read: a cleared tool result
/// keeps every field but its content, and a summary's marker numbers messages from the
/// transcript's first line (0 is the leading system message), the first kept message being
/// the line after the marker's last.
#[test]
fn baton_compact_keeps_fields_and_numbers_messages_by_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = vec![
        serde_json::json!({"role": "system", "content": "You are a coding agent."}).to_string(),
    ];
    for i in 0..30 {
        lines.push(serde_json::json!({"role": "user", "content": format!("Question {i}: look at file{i}.rs please. {}", "filler ".repeat(200))}).to_string());
        lines.push(serde_json::json!({"role": "assistant", "content": "", "tool_calls": [{"id": format!("c{i}"), "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\":\"file{i}.rs\"}}")}}]}).to_string());
        lines.push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{i}"), "name": "read_file", "x_extra": i, "content": format!("line of file{i} {}", "x = 1; ".repeat(300))}).to_string());
        lines.push(
            serde_json::json!({"role": "assistant", "content": format!("File{i} sets x to 1.")})
                .to_string(),
        );
    }
    let file = dir.path().join("session.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let compact = |window: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .arg("compact")
            .arg(&file)
            .args(["--window", window, "--json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    // Clearing alone: each cleared result keeps its other fields.
    let cleared = compact("20000");
    assert!(cleared["cleared_tokens"].as_u64().unwrap() > 0);
    let mut placeholders = 0;
    for m in cleared["window"].as_array().unwrap() {
        if m["role"] != "tool"
            || !m["content"]
                .as_str()
                .unwrap()
                .starts_with("[tool result cleared")
        {
            continue;
        }
        placeholders += 1;
        let id = m["tool_call_id"].as_str().unwrap();
        let n: u64 = id[1..].parse().unwrap();
        assert_eq!(m["x_extra"], n, "{m}");
        assert_eq!(m["name"], "read_file");
    }
    assert!(placeholders > 0);
    // A summary: its marker names lines 1..=L, and the line after L is kept as it was read.
    let folded = compact("8000");
    let marker = folded["window"][1]["content"].as_str().unwrap().to_string();
    let span = marker
        .strip_prefix("[compacted: messages ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap();
    let (first, last) = span.split_once("..=").unwrap();
    assert_eq!(first, "1", "{marker}");
    let last: usize = last.parse().unwrap();
    let kept = folded["window"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant" && m.get("tool_calls").is_some())
        .unwrap();
    let original: serde_json::Value = serde_json::from_str(&lines[last + 1]).unwrap();
    assert_eq!(kept, &original, "line {} follows the marker", last + 1);
}
