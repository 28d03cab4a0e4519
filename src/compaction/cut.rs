//! Where a window may be cut: never between an assistant message that calls tools and the
//! results of those calls; and where a span may be split: never between an error and the fix
//! that followed it.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use regex::Regex;

use crate::transcript::Message;

/// The indices `i` at which `messages[..i]` may be folded and `messages[i..]` kept: every tool
/// call before the cut whose result appears later in the window has its result before the cut.
/// A call that is never answered (an orphan) holds nothing open: no cut can separate it from a
/// result that does not exist.
pub fn safe_cuts(messages: &[Message]) -> Vec<usize> {
    let mut answered_at: HashMap<&str, usize> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        if let Message::Tool { call_id, .. } = m {
            answered_at.insert(call_id.as_str(), i);
        }
    }
    let mut open: HashSet<&str> = HashSet::new();
    let mut cuts = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if open.is_empty() {
            cuts.push(i);
        }
        match m {
            Message::Assistant { tool_calls, .. } => open.extend(
                tool_calls
                    .iter()
                    .map(|c| c.id.as_str())
                    .filter(|id| answered_at.get(id).is_some_and(|at| *at > i)),
            ),
            Message::Tool { call_id, .. } => {
                open.remove(call_id.as_str());
            }
            Message::User { .. } | Message::Compacted { .. } => {}
        }
    }
    if open.is_empty() {
        cuts.push(messages.len());
    }
    cuts
}

/// The latest safe cut that keeps at least the last `keep_last` messages, if any folds
/// something.
pub fn split_point(messages: &[Message], keep_last: usize) -> Option<usize> {
    let limit = messages.len().saturating_sub(keep_last);
    safe_cuts(messages)
        .into_iter()
        .filter(|c| *c > 0 && *c <= limit)
        .max()
}

/// Whether a message reports an error: a failed tool result, output whose first line is an
/// error, or an errno literal.
pub fn reports_error(m: &Message) -> bool {
    static ERROR: OnceLock<Regex> = OnceLock::new();
    let re = ERROR.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\A\s*(?:error|fatal|panic|exception|traceback)\b",
            r"|\bE(?:NOENT|ACCES|PERM|EXIST|NOTDIR|ISDIR|INVAL|NOSPC|AGAIN|CONNREFUSED|CONNRESET|TIMEDOUT|PIPE|BADF|NOMEM|ROFS|BUSY|MFILE|NOTEMPTY|XDEV)\b",
        ))
        .expect("static regex")
    });
    match m {
        Message::Tool {
            is_error, content, ..
        } => *is_error || re.is_match(content),
        Message::User { text } | Message::Compacted { text, .. } => re.is_match(text),
        Message::Assistant { .. } => false,
    }
}

/// The safe cuts at which a span may be split into parts: those that also keep an error with
/// the assistant turn that followed it (the fix), so no part ends on an unanswered error whose
/// answer opens the next part. One pass over the span.
pub fn split_cuts(messages: &[Message]) -> Vec<usize> {
    let is_assistant = |m: &Message| matches!(m, Message::Assistant { .. });
    // assistant_from[i]: an assistant message is at i or after.
    let mut assistant_from = vec![false; messages.len() + 1];
    for i in (0..messages.len()).rev() {
        assistant_from[i] = assistant_from[i + 1] || is_assistant(&messages[i]);
    }
    let cuts = safe_cuts(messages);
    let mut out = Vec::with_capacity(cuts.len());
    let mut last_error: Option<usize> = None;
    let mut last_assistant: Option<usize> = None;
    let mut scanned = 0;
    for c in cuts {
        for (i, m) in messages.iter().enumerate().take(c).skip(scanned) {
            if reports_error(m) {
                last_error = Some(i);
            }
            if is_assistant(m) {
                last_assistant = Some(i);
            }
        }
        scanned = c;
        let keeps_fix = match last_error {
            None => true,
            Some(e) => last_assistant.is_some_and(|a| a > e) || !assistant_from[c],
        };
        if keeps_fix {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::ToolCall;
    use proptest::prelude::*;

    fn assistant(calls: &[&str]) -> Message {
        Message::Assistant {
            text: String::new(),
            tool_calls: calls
                .iter()
                .map(|id| ToolCall {
                    id: id.to_string(),
                    name: "grep".into(),
                    arguments: serde_json::json!({}),
                })
                .collect(),
        }
    }

    fn result(id: &str) -> Message {
        Message::Tool {
            call_id: id.into(),
            name: "grep".into(),
            content: "x".into(),
            is_error: false,
        }
    }

    fn user() -> Message {
        Message::User { text: "go".into() }
    }

    #[test]
    fn a_call_and_its_result_stay_together() {
        let window = vec![
            user(),
            assistant(&["a", "b"]),
            result("a"),
            result("b"),
            user(),
        ];
        assert_eq!(safe_cuts(&window), vec![0, 1, 4, 5]);
        assert_eq!(split_point(&window, 2), Some(1));
        assert_eq!(split_point(&window, 1), Some(4));
    }

    #[test]
    fn an_error_stays_with_the_fix_that_followed() {
        let failed = Message::Tool {
            call_id: "a".into(),
            name: "run".into(),
            content: "open /etc/app.conf: ENOENT".into(),
            is_error: false,
        };
        let window = vec![
            user(),
            assistant(&["a"]),
            failed,
            user(),
            assistant(&["b"]),
            result("b"),
            user(),
        ];
        assert!(reports_error(&window[2]));
        assert!(!reports_error(&window[5]));
        // 3 and 4 would end a part on the error while its fix opens the next one.
        assert_eq!(safe_cuts(&window), vec![0, 1, 3, 4, 6, 7]);
        assert_eq!(split_cuts(&window), vec![0, 1, 6, 7]);
    }

    #[test]
    fn a_call_never_answered_does_not_stop_the_cut() {
        let window = vec![
            user(),
            assistant(&["orphan"]),
            user(),
            assistant(&["a"]),
            result("a"),
            user(),
        ];
        assert_eq!(safe_cuts(&window), vec![0, 1, 2, 3, 5, 6]);
        assert_eq!(split_point(&window, 1), Some(5));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        /// For any window of user turns and tool rounds, no cut separates a call from its
        /// result.
        #[test]
        fn no_cut_separates_a_call_from_its_result(rounds in prop::collection::vec((0usize..3, any::<bool>()), 0..12)) {
            let mut window = Vec::new();
            for (n, (calls, with_user)) in rounds.into_iter().enumerate() {
                if with_user {
                    window.push(user());
                }
                let ids: Vec<String> = (0..calls).map(|c| format!("c{n}.{c}")).collect();
                if !ids.is_empty() {
                    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                    window.push(assistant(&refs));
                    for id in &ids {
                        window.push(result(id));
                    }
                }
            }
            for cut in safe_cuts(&window) {
                let (before, after) = window.split_at(cut);
                for m in after {
                    if let Message::Tool { call_id, .. } = m {
                        let called_before = before.iter().any(|b| matches!(b, Message::Assistant { tool_calls, .. } if tool_calls.iter().any(|c| &c.id == call_id)));
                        prop_assert!(!called_before, "cut {cut} separates {call_id}");
                    }
                }
            }
        }
    }
}
