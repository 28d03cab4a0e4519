//! `baton compact FILE`: compacts a transcript in OpenAI chat format (JSONL, one message per
//! line: role system/developer/user/assistant/tool, content, tool_calls, tool_call_id) and
//! prints the compacted window in the same format, or with `--json` one document with the
//! decision, tokens, window, ledger and survival. What is not compacted passes through as it
//! was: every kept line is printed as the JSON value it was read as (a cleared tool result
//! keeps every field but its content). Leading system messages stay first and are never
//! folded; a system or developer message later on is a turn like a user's. Input over
//! [`MAX_TRANSCRIPT_BYTES`] or that is not a regular file is refused. Exit 0, 2 for unusable
//! input, 3 when refused.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use baton::compaction::{ledger_of, message_text, Compacted, Compactor, Decision, Options};
use baton::tokens::Bpe;
use baton::transcript::chat::{content_text, read_line, write_message};
use baton::Message;
use serde_json::{json, Value};

use super::{EXIT_DONE, EXIT_FAILED, EXIT_USAGE};

/// Exit code: compaction refused (the window is unchanged).
const EXIT_REFUSED: i32 = 3;

/// The largest transcript `baton compact` reads.
pub(crate) const MAX_TRANSCRIPT_BYTES: usize = 64 * 1024 * 1024;

#[derive(clap::Args, Debug)]
pub(crate) struct CompactArgs {
    /// The transcript: JSONL, one OpenAI chat message per line.
    file: PathBuf,
    /// The model's window, in tokens.
    #[arg(long, default_value_t = Options::default().window, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000_000))]
    window: usize,
    /// Occupancy (tokens of the window / window) that triggers compaction.
    #[arg(long, default_value_t = Options::default().threshold)]
    threshold: f64,
    /// Turns kept verbatim at the end.
    #[arg(long, default_value_t = Options::default().keep_last, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=100_000))]
    keep_last: usize,
    /// Tool results kept whole when clearing.
    #[arg(long, default_value_t = Options::default().keep_tool_results, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=100_000))]
    keep_tool_results: usize,
    /// The summary slot, in tokens.
    #[arg(long, default_value_t = Options::default().slot, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000_000))]
    slot: usize,
    /// Print one JSON document instead of the window.
    #[arg(long)]
    json: bool,
}

/// Why the numeric options cannot be used, if they cannot.
fn check_options(args: &CompactArgs) -> Result<(), String> {
    if !(args.threshold > 0.0 && args.threshold <= 1.0) {
        return Err(format!(
            "--threshold must be above 0 and at most 1, not {}",
            args.threshold
        ));
    }
    if args.window == 0 {
        return Err("--window must be at least 1 token".into());
    }
    if args.slot == 0 {
        return Err("--slot must be at least 1 token".into());
    }
    Ok(())
}

pub(crate) fn run(args: CompactArgs) -> i32 {
    if let Err(e) = check_options(&args) {
        say!("{e}");
        return EXIT_USAGE;
    }
    let shown = args.file.display().to_string();
    let text = match super::read_input(&args.file, MAX_TRANSCRIPT_BYTES, "a transcript") {
        Ok(t) => t,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    let Transcript {
        system,
        system_texts,
        messages,
        originals,
    } = match read_transcript(&shown, &text) {
        Ok(t) => t,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    // The leading system messages are never folded, but they take their share of the window:
    // the rest is compacted into what they leave, triggered when the whole window reaches the
    // threshold.
    let system_text = system_texts.join("\n");
    let system_tokens = baton::tokens::Tokenizer::count(&Bpe, &system_text);
    let room = args.window.saturating_sub(system_tokens).max(1);
    let opts = Options {
        window: room,
        threshold: ((args.threshold * args.window as f64 - system_tokens as f64) / room as f64)
            .clamp(f64::MIN_POSITIVE, 1.0),
        keep_last: args.keep_last,
        keep_tool_results: args.keep_tool_results,
        slot: args.slot,
        ..Options::default()
    };
    let ledger = ledger_of(&messages);
    let mut out = if system_tokens >= args.window {
        let tokens: usize = messages
            .iter()
            .map(|m| baton::tokens::Tokenizer::count(&Bpe, &message_text(m)))
            .sum();
        Compacted {
            decision: Decision::Refuse,
            reason: Some(format!(
                "the system messages alone take {system_tokens} tokens of the {}-token window",
                args.window
            )),
            ..Compacted::unchanged(&messages, &ledger, tokens)
        }
    } else {
        Compactor::new(opts, &Bpe)
            .outside(&system_text)
            .offset(system.len())
            .compact(&messages, &ledger)
    };
    out.tokens_before += system_tokens;
    out.tokens_after += system_tokens;
    let window = window_lines(&system, &out, &originals, &messages);
    let printed = if args.json {
        match json_document(&out, &window) {
            Ok(text) => text,
            Err(e) => {
                say!("{e}");
                return EXIT_FAILED;
            }
        }
    } else {
        window.iter().map(|line| format!("{line}\n")).collect()
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(printed.as_bytes())
        .and_then(|_| stdout.flush())
    {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            say!("{e}");
            return EXIT_FAILED;
        }
    }
    if out.decision == Decision::Refuse {
        say!("compaction refused: {}", out.reason.unwrap_or_default());
        EXIT_REFUSED
    } else {
        EXIT_DONE
    }
}

/// A transcript as read: its leading system messages apart (each line as written, and its
/// text), every other line a message with the line it was read from.
struct Transcript<'t> {
    system: Vec<String>,
    system_texts: Vec<String>,
    messages: Vec<Message>,
    originals: Vec<&'t str>,
}

/// Reads a JSONL transcript; the error names the line at fault.
fn read_transcript<'t>(shown: &str, text: &'t str) -> Result<Transcript<'t>, String> {
    // Leading system messages stay apart; every other line is a message, kept with the JSON
    // value it was read as.
    let mut system: Vec<String> = Vec::new();
    let mut system_texts: Vec<String> = Vec::new();
    let mut messages: Vec<Message> = Vec::new();
    // Each message's line as it was written.
    let mut originals: Vec<&str> = Vec::new();
    let mut names: HashMap<String, String> = HashMap::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return Err(format!("{shown}:{}: not a JSON message: {e}", i + 1));
            }
        };
        let leading_system = messages.is_empty()
            && matches!(
                value.get("role").and_then(Value::as_str),
                Some("system" | "developer")
            );
        if leading_system {
            match content_text(&value) {
                Ok(text) => system_texts.push(text),
                Err(e) => {
                    return Err(format!("{shown}:{}: not a chat message: {e}", i + 1));
                }
            }
            system.push(line.trim().to_string());
            continue;
        }
        match read_line(&value, &names) {
            Ok(m) => {
                if let Message::Assistant { tool_calls, .. } = &m {
                    names.extend(tool_calls.iter().map(|c| (c.id.clone(), c.name.clone())));
                }
                messages.push(m);
                originals.push(line.trim());
            }
            Err(e) => {
                return Err(format!("{shown}:{}: not a chat message: {e}", i + 1));
            }
        }
    }
    Ok(Transcript {
        system,
        system_texts,
        messages,
        originals,
    })
}

/// Every line of the new window as JSON text.
fn window_lines(
    system: &[String],
    out: &Compacted,
    originals: &[&str],
    messages: &[Message],
) -> Vec<String> {
    // A kept message as it was written, byte for byte; a cleared tool result with every field
    // as it was but its content; a summary or the ledger as a new user message.
    system
        .iter()
        .cloned()
        .chain(out.window.iter().zip(&out.kept).map(|(m, kept)| {
            match kept.and_then(|i| Some((i, *originals.get(i)?))) {
                Some((i, line)) if messages.get(i) == Some(m) => line.to_string(),
                Some((_, line)) => {
                    let mut value: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                    if let (Some(object), Message::Tool { content, .. }) =
                        (value.as_object_mut(), m)
                    {
                        object.insert("content".into(), Value::String(content.clone()));
                    }
                    value.to_string()
                }
                None => write_message(m).to_string(),
            }
        }))
        .collect()
}

/// The `--json` document: the decision, the tokens, the window, the ledger and survival.
fn json_document(out: &Compacted, window: &[String]) -> Result<String, String> {
    let window = serde_json::value::RawValue::from_string(format!("[{}]", window.join(",")))
        .map_err(|e| e.to_string())?;
    let ledger: Vec<Value> = out
        .ledger
        .iter()
        .map(|p| json!({"class": p.class, "text": p.text, "turn": p.turn}))
        .collect();
    Ok(format!(
        "{}\n",
        json!({
            "decision": out.decision,
            "tokens_before": out.tokens_before,
            "tokens_after": out.tokens_after,
            "cleared_tokens": out.cleared_tokens,
            "window": window,
            "ledger": ledger,
            "survival": out.survival,
            "reason": out.reason,
        })
    ))
}
