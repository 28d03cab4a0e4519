//! The OpenAI chat format, one message per JSONL line (role system/developer/user/assistant/
//! tool, content, tool_calls, tool_call_id), read into [`Message`]s and written back.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::{Compaction, Message, ToolCall};

/// Why a line is not a chat message (one line, for the user).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ChatError(pub String);

/// The text of a message's `content`: a string, or the `text` of each part of an array.
pub fn content_text(value: &Value) -> Result<String, ChatError> {
    Ok(match value.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(_) => return Err(ChatError("`content` is not text".into())),
    })
}

/// One line of the transcript as a message; `system` and `developer` messages are user-side
/// turns (the caller keeps the leading ones apart).
pub fn read_line(value: &Value, names: &HashMap<String, String>) -> Result<Message, ChatError> {
    let role = value
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| ChatError("no `role`".into()))?;
    let content = content_text(value)?;
    Ok(match role {
        "system" | "developer" | "user" => match Compaction::of_text(&content) {
            Some(kind) => Message::Compacted {
                kind,
                text: content,
            },
            None => Message::User { text: content },
        },
        "assistant" => {
            let mut tool_calls = Vec::new();
            for call in value
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ChatError("a tool call without `id`".into()))?;
                let function = call
                    .get("function")
                    .ok_or_else(|| ChatError("a tool call without `function`".into()))?;
                let name = function
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ChatError("a tool call without a name".into()))?;
                let arguments = match function.get("arguments") {
                    Some(Value::String(s)) => {
                        serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                    }
                    Some(other) => other.clone(),
                    None => json!({}),
                };
                tool_calls.push(ToolCall {
                    id: id.into(),
                    name: name.into(),
                    arguments,
                });
            }
            Message::Assistant {
                text: content,
                tool_calls,
            }
        }
        "tool" => {
            let call_id = value
                .get("tool_call_id")
                .and_then(Value::as_str)
                .ok_or_else(|| ChatError("a tool message without `tool_call_id`".into()))?;
            let name = names.get(call_id).cloned().unwrap_or_default();
            Message::Tool {
                call_id: call_id.into(),
                name,
                content,
                is_error: false,
            }
        }
        other => return Err(ChatError(format!("unknown role `{other}`"))),
    })
}

/// A message in OpenAI chat format.
pub fn write_message(m: &Message) -> Value {
    write_message_with(m, &|id| id.to_string())
}

/// A message in OpenAI chat format, each call id written as `id` gives it (a provider maps
/// ids to the ones its server accepts). Arguments that were not JSON go back as the text they
/// were.
pub(crate) fn write_message_with(m: &Message, id: &dyn Fn(&str) -> String) -> Value {
    match m {
        Message::User { text } | Message::Compacted { text, .. } => {
            json!({"role": "user", "content": text})
        }
        Message::Assistant { text, tool_calls } if tool_calls.is_empty() => {
            json!({"role": "assistant", "content": text})
        }
        Message::Assistant { text, tool_calls } => json!({
            "role": "assistant",
            // A string, never null: some servers (llama-cpp-python) refuse a null.
            "content": text,
            "tool_calls": tool_calls.iter().map(|c| json!({
                "id": id(&c.id),
                "type": "function",
                "function": {"name": c.name, "arguments": match &c.arguments {
                    Value::String(raw) => raw.clone(),
                    v => v.to_string(),
                }},
            })).collect::<Vec<_>>(),
        }),
        Message::Tool {
            call_id, content, ..
        } => {
            json!({"role": "tool", "tool_call_id": id(call_id), "content": content})
        }
    }
}
