//! Light compaction first: the trigger on occupancy (never on turn count), and clearing the
//! oldest tool results, keeping the last few, and only when a pass clears enough to be worth
//! rebuilding a cached prompt prefix. A cleared result that can be reread (a pure read that
//! did not fail) becomes a placeholder keeping the tool, its arguments and the call to reread;
//! one that cannot — an error, or a tool that is not a pure read, whose rerun would not show
//! the same thing — keeps its irreducible items (error literals, paths, numbers, versions) in
//! its placeholder. A result whose call is not in the window is never cleared.

use std::collections::HashMap;

use super::cut::reports_error;
use super::floor::irreducible;
use crate::tokens::Tokenizer;
use crate::transcript::Message;

/// Default occupancy that triggers compaction.
pub const DEFAULT_THRESHOLD: f64 = 0.8;
/// Default tool results kept whole.
pub const DEFAULT_KEEP_TOOL_RESULTS: usize = 3;
/// Default least tokens a clearing pass must free.
pub const DEFAULT_MIN_CLEARED: usize = 2000;

/// Whether a request of `tokens` in a window of `window` tokens must be compacted first.
pub fn should_compact(tokens: usize, window: usize, threshold: f64) -> bool {
    window > 0 && tokens as f64 / window as f64 >= threshold
}

/// The tools whose results can be reread by calling them again: baton's workspace reads.
pub fn is_pure_read(tool: &str) -> bool {
    matches!(tool, "read_file" | "grep" | "glob" | "list_dir")
}

/// Most error lines a cleared result keeps whole, and the longest such line.
const ERROR_LINES: usize = 40;
const ERROR_LINE_CHARS: usize = 400;

/// What a result that cannot be reread keeps when it is cleared: its error lines whole (an
/// error, a failure, a panic, a denial, an errno, a `file:line:col` location — up to 40 lines
/// of up to 400 characters),
/// then every irreducible item (error literals, paths, numbers, versions) not already in them.
pub(crate) fn kept_items(content: &str) -> Vec<String> {
    static ERROR_LINE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let error_line = ERROR_LINE.get_or_init(|| {
        regex::Regex::new(r"(?i)\b(error|errno|fatal|panic|panicked|exception|traceback|failed|failure|denied|no such file|cannot|could not|refused|timed out|aborted|segmentation fault|killed)\b|(?-i:\bE[A-Z]{3,}\b)|[\w./-]+\.\w+:\d+(:\d+)?")
            .expect("static regex")
    });
    let mut kept: Vec<String> = content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && error_line.is_match(l))
        .map(|l| match l.char_indices().nth(ERROR_LINE_CHARS) {
            Some((at, _)) => l[..at].to_string(),
            None => l.to_string(),
        })
        .take(ERROR_LINES)
        .collect();
    kept.dedup();
    let lines = kept.join("\n");
    kept.extend(
        irreducible(content)
            .into_iter()
            .filter(|item| !lines.contains(item.as_str())),
    );
    kept
}

/// A window after clearing.
#[derive(Debug, Clone, PartialEq)]
pub struct Cleared {
    /// The window with placeholders.
    pub window: Vec<Message>,
    /// Tokens freed.
    pub saved: usize,
    /// Results replaced.
    pub replaced: usize,
    /// The indices of the results replaced whose content cannot be reread: what they showed
    /// that cannot be rebuilt must survive in their placeholders.
    pub unrereadable: Vec<usize>,
}

/// The placeholder of a cleared result: for a rereadable one, the call to reread; for one
/// that is not, every irreducible item of what it showed.
fn placeholder(call_id: &str, name: &str, arguments: &str, kept: Option<&[String]>) -> String {
    match kept {
        None => {
            format!("[tool result cleared: {name}({arguments}) — reread it with call {call_id}]")
        }
        Some(items) => {
            let mut text = format!(
                "[tool result cleared: {name}({arguments}), call {call_id} — it cannot be reread; what it showed that cannot be rebuilt:"
            );
            for item in items {
                text.push_str("\n- ");
                text.push_str(item);
            }
            text.push_str("\n]");
            text
        }
    }
}

/// Replaces the oldest tool results, all but the last `keep`, until at least `min_tokens` are
/// freed; None when even clearing all of them would free less (the pass is not worth it).
/// `rereadable` says which tools' results can be reread by calling them again.
pub fn clear_tool_results(
    messages: &[Message],
    keep: usize,
    min_tokens: usize,
    tokenizer: &dyn Tokenizer,
    rereadable: &dyn Fn(&str) -> bool,
) -> Option<Cleared> {
    clear_counted(messages, None, keep, min_tokens, tokenizer, rereadable)
}

/// [`clear_tool_results`], with each message's tokens already counted when `counts` is given.
pub(crate) fn clear_counted(
    messages: &[Message],
    counts: Option<&[usize]>,
    keep: usize,
    min_tokens: usize,
    tokenizer: &dyn Tokenizer,
    rereadable: &dyn Fn(&str) -> bool,
) -> Option<Cleared> {
    let mut arguments: HashMap<&str, String> = HashMap::new();
    for m in messages {
        if let Message::Assistant { tool_calls, .. } = m {
            for c in tool_calls {
                arguments.insert(c.id.as_str(), c.arguments.to_string());
            }
        }
    }
    let results: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Tool { call_id, .. } if arguments.contains_key(call_id.as_str())))
        .map(|(i, _)| i)
        .collect();
    let clearable = &results[..results.len().saturating_sub(keep)];
    let mut window = messages.to_vec();
    let mut saved = 0usize;
    let mut replaced = 0usize;
    let mut unrereadable = Vec::new();
    for &i in clearable {
        if saved >= min_tokens {
            break;
        }
        let m = &messages[i];
        let Message::Tool {
            call_id,
            name,
            content,
            is_error,
        } = m
        else {
            continue;
        };
        let args = arguments
            .get(call_id.as_str())
            .map(String::as_str)
            .unwrap_or("");
        let reread = rereadable(name) && !reports_error(m);
        let items = (!reread).then(|| kept_items(content));
        let stub = placeholder(call_id, name, args, items.as_deref());
        let before = counts
            .and_then(|c| c.get(i).copied())
            .unwrap_or_else(|| tokenizer.count(content));
        let after = tokenizer.count(&stub);
        if before <= after {
            continue;
        }
        saved += before - after;
        replaced += 1;
        if !reread {
            unrereadable.push(i);
        }
        window[i] = Message::Tool {
            call_id: call_id.clone(),
            name: name.clone(),
            content: stub,
            is_error: *is_error,
        };
    }
    (saved >= min_tokens).then_some(Cleared {
        window,
        saved,
        replaced,
        unrereadable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Estimate;
    use crate::transcript::ToolCall;

    fn round(id: &str, tool: &str, content: String) -> Vec<Message> {
        vec![
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: id.into(),
                    name: tool.into(),
                    arguments: serde_json::json!({"path": "src/a.rs"}),
                }],
            },
            Message::Tool {
                call_id: id.into(),
                name: tool.into(),
                content,
                is_error: false,
            },
        ]
    }

    #[test]
    fn the_oldest_results_go_first_and_the_last_are_kept() {
        let window: Vec<Message> = (0..5)
            .flat_map(|i| round(&format!("c{i}"), "read_file", "x".repeat(4000)))
            .collect();
        let cleared = clear_tool_results(&window, 3, 1500, &Estimate, &is_pure_read).unwrap();
        assert_eq!(
            cleared.replaced, 2,
            "two of the five, oldest first, until 1,500 tokens freed"
        );
        assert!(cleared.saved >= 1500);
        let Message::Tool { content, .. } = &cleared.window[1] else {
            panic!()
        };
        assert!(
            content.contains("read_file") && content.contains("src/a.rs") && content.contains("c0")
        );
        let Message::Tool { content, .. } = &cleared.window[9] else {
            panic!()
        };
        assert_eq!(content.len(), 4000, "the last results stay whole");
        assert!(
            clear_tool_results(&window, 3, 100_000, &Estimate, &is_pure_read).is_none(),
            "not worth a pass"
        );
        assert!(should_compact(81, 100, 0.8) && !should_compact(79, 100, 0.8));
    }

    /// Issue 9, item 9: a failed build cannot be reread: clearing it keeps what it showed
    /// that cannot be rebuilt; an orphan result is never cleared.
    #[test]
    fn a_result_that_cannot_be_reread_keeps_its_items() {
        let build = format!(
            "error[E0308]: mismatched types\n --> src/net/retry.rs:42:17\n{}\nerror: could not compile `netkit` (lib) due to 1 previous error; rustc 1.95.0",
            "   | note: expected `u64`, found `u32`\n".repeat(200)
        );
        let mut window = round("b1", "cargo_build", build);
        window.extend(round("r1", "read_file", "fn main() {}\n".repeat(400)));
        window.push(Message::Tool {
            call_id: "gone".into(),
            name: "read_file".into(),
            content: "orphan ".repeat(2000),
            is_error: false,
        });
        let cleared = clear_tool_results(&window, 0, usize::MAX, &Estimate, &is_pure_read);
        assert!(cleared.is_none());
        let cleared = clear_tool_results(&window, 0, 100, &Estimate, &is_pure_read);
        let cleared = cleared.unwrap();
        let Message::Tool { content, .. } = &cleared.window[1] else {
            panic!()
        };
        for item in [
            "error[E0308]: mismatched types",
            "error: could not compile `netkit` (lib) due to 1 previous error; rustc 1.95.0",
            "--> src/net/retry.rs:42:17",
        ] {
            assert!(
                content.contains(&format!("\n- {item}\n")),
                "{item} in {content}"
            );
        }
        assert!(!content.contains("reread it"));
        assert_eq!(cleared.unrereadable, vec![1]);
        assert!(
            matches!(&cleared.window[4], Message::Tool { content, .. } if content.starts_with("orphan"))
        );
    }
}
