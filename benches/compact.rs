//! Compaction cost as a transcript grows: sessions of 2,000, 5,000, 10,000 and 50,000 messages
//! compacted with `baton compact`'s defaults and the o200k_base tokenizer, of two kinds —
//! `tool_rounds` (tool rounds reading 20-line results, user follow-ups with a question,
//! assistant notes with versions and order ids, one constraint at the start) and `pins` (every
//! user turn states ten constraints, every assistant turn a commitment: the ledger grows with
//! the transcript). One JSON line per session:
//! `{"bench": "compact", "kind", "messages", "bytes", "seconds", "decision", "tokens_before",
//! "tokens_after", "pins"}`.
//!
//!     cargo bench --bench compact

use std::time::Instant;

use baton::compaction::{compact, Options};
use baton::tokens::Bpe;
use baton::{Message, ToolCall};

fn session(n: usize) -> Vec<Message> {
    let mut out = vec![Message::User {
        text: "Please refactor the retry logic in src/net. Never modify anything under \
               /migrations; the release pipeline applies those files."
            .into(),
    }];
    let mut i = 0;
    while out.len() < n {
        let id = format!("c{i}");
        let path = format!("src/net/part{}.rs", i % 97);
        out.push(Message::Assistant {
            text: format!("Reading {path}."),
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: serde_json::json!({ "path": path }),
            }],
        });
        let body: String = (1..=20)
            .map(|k| {
                format!("{k:>6}\tlet value_{k} = compute(input, {k}); // step {k} of {path}\n")
            })
            .collect();
        out.push(Message::Tool {
            call_id: id,
            name: "read_file".into(),
            content: body,
            is_error: false,
        });
        if i % 3 == 0 {
            out.push(Message::User {
                text: format!(
                    "Good, now look at part {}. Which version of tokio is pinned?",
                    i + 1
                ),
            });
        }
        if i % 5 == 0 {
            out.push(Message::Assistant {
                text: format!(
                    "Part {i} uses tokio 1.{}.0 and order A-{}; I will check the cache after this.",
                    i % 60,
                    1000 + i
                ),
                tool_calls: Vec::new(),
            });
        }
        i += 1;
    }
    out.truncate(n);
    out
}

/// A session of `n` messages.
type Session = fn(usize) -> Vec<Message>;

/// Every user turn states ten constraints; every assistant turn makes a commitment.
fn pinned_session(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Message::User {
                    text: (0..10)
                        .map(|k| format!("Never touch file{i}_{k}."))
                        .collect::<Vec<_>>()
                        .join(" "),
                }
            } else {
                Message::Assistant {
                    text: format!("I will check module {i} next."),
                    tool_calls: Vec::new(),
                }
            }
        })
        .collect()
}

fn main() {
    // The BPE vocabulary loads once per process; not part of any measurement.
    let _ = baton::tokens::Tokenizer::count(&Bpe, "warm");
    let kinds: [(&str, Session); 2] = [("tool_rounds", session), ("pins", pinned_session)];
    for (kind, make) in kinds {
        for n in [2_000, 5_000, 10_000, 50_000] {
            let messages = make(n);
            let bytes: usize = messages.iter().map(Message::text_len).sum();
            let started = Instant::now();
            let out = compact(&messages, &Options::default(), &Bpe);
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "{}",
                serde_json::json!({
                    "bench": "compact",
                    "kind": kind,
                    "pins": out.ledger.len(),
                    "messages": n,
                    "bytes": bytes,
                    "seconds": (seconds * 1000.0).round() / 1000.0,
                    "decision": out.decision,
                    "tokens_before": out.tokens_before,
                    "tokens_after": out.tokens_after,
                })
            );
        }
    }
}
