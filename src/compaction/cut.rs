//! Where a window may be cut: never between an assistant message that calls tools and the
//! results of those calls.

use crate::model::Message;

/// The indices `i` at which `messages[..i]` may be folded and `messages[i..]` kept: every tool
/// call before the cut has its result before the cut.
pub fn safe_cuts(messages: &[Message]) -> Vec<usize> {
    let mut open: Vec<&str> = Vec::new();
    let mut cuts = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if open.is_empty() {
            cuts.push(i);
        }
        match m {
            Message::Assistant { tool_calls, .. } => {
                open.extend(tool_calls.iter().map(|c| c.id.as_str()));
            }
            Message::Tool { call_id, .. } => open.retain(|id| id != call_id),
            Message::User { .. } => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolCall;
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
