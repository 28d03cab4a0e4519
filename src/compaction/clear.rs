//! Light compaction first: the trigger on occupancy (never on turn count), and clearing the
//! oldest tool results — each replaced by a placeholder that keeps the tool's name, its
//! arguments and the call to reread — keeping the last few, and only when a pass clears enough
//! to be worth rebuilding a cached prompt prefix.

use crate::context::Tokenizer;
use crate::model::Message;

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

/// A window after clearing.
#[derive(Debug, Clone, PartialEq)]
pub struct Cleared {
    /// The window with placeholders.
    pub window: Vec<Message>,
    /// Tokens freed.
    pub saved: usize,
    /// Results replaced.
    pub replaced: usize,
}

fn placeholder(call_id: &str, name: &str, arguments: &str) -> String {
    format!("[tool result cleared: {name}({arguments}) — reread it with call {call_id}]")
}

/// Replaces the oldest tool results, all but the last `keep`, until at least `min_tokens` are
/// freed; None when even clearing all of them would free less (the pass is not worth it).
pub fn clear_tool_results(
    messages: &[Message],
    keep: usize,
    min_tokens: usize,
    tokenizer: &dyn Tokenizer,
) -> Option<Cleared> {
    let results: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Tool { .. }))
        .map(|(i, _)| i)
        .collect();
    let clearable = &results[..results.len().saturating_sub(keep)];
    let arguments_of = |call_id: &str| {
        messages.iter().find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .find(|c| c.id == call_id)
                .map(|c| c.arguments.to_string()),
            _ => None,
        })
    };
    let mut window = messages.to_vec();
    let mut saved = 0usize;
    let mut replaced = 0usize;
    for &i in clearable {
        if saved >= min_tokens {
            break;
        }
        if let Message::Tool {
            call_id,
            name,
            content,
            is_error,
        } = &messages[i]
        {
            let args = arguments_of(call_id).unwrap_or_default();
            let stub = placeholder(call_id, name, &args);
            let before = tokenizer.count(content);
            let after = tokenizer.count(&stub);
            if before <= after {
                continue;
            }
            saved += before - after;
            replaced += 1;
            window[i] = Message::Tool {
                call_id: call_id.clone(),
                name: name.clone(),
                content: stub,
                is_error: *is_error,
            };
        }
    }
    (saved >= min_tokens).then_some(Cleared {
        window,
        saved,
        replaced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Estimate;
    use crate::tools::ToolCall;

    fn round(id: &str, size: usize) -> Vec<Message> {
        vec![
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: id.into(),
                    name: "read_file".into(),
                    arguments: serde_json::json!({"path": "src/a.rs"}),
                }],
            },
            Message::Tool {
                call_id: id.into(),
                name: "read_file".into(),
                content: "x".repeat(size),
                is_error: false,
            },
        ]
    }

    #[test]
    fn the_oldest_results_go_first_and_the_last_are_kept() {
        let window: Vec<Message> = (0..5).flat_map(|i| round(&format!("c{i}"), 4000)).collect();
        let cleared = clear_tool_results(&window, 3, 1500, &Estimate).unwrap();
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
            clear_tool_results(&window, 3, 100_000, &Estimate).is_none(),
            "not worth a pass"
        );
        assert!(should_compact(81, 100, 0.8) && !should_compact(79, 100, 0.8));
    }
}
