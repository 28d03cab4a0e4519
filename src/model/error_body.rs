//! What an error answer says: the provider's message and type from a JSON error body of any
//! common shape, an HTML page's text, and the error's kind from its status and words.

use serde_json::Value;

use super::ErrorKind;

/// The provider's message from an error body (`{"error":{"message","type"}}`, `{"error":
/// "..."}`, `{"message": "..."}`, `{"detail": "..."}`, or the text itself), with the error's
/// type when it names one.
pub(crate) fn error_message(body: &str) -> (String, String) {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return cut_error_message(body);
    };
    // A validation failure's list (`{"detail": [{"loc": …, "msg": …}]}`): its messages.
    if let Some(items) = value.get("detail").and_then(Value::as_array) {
        let messages: Vec<String> = items
            .iter()
            .filter_map(|i| {
                let msg = i.get("msg").and_then(Value::as_str)?;
                let at: Vec<String> = i
                    .get("loc")
                    .and_then(Value::as_array)
                    .map(|l| {
                        l.iter()
                            .map(|p| p.to_string().trim_matches('"').to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                Some(if at.is_empty() {
                    msg.to_string()
                } else {
                    format!("{} ({})", msg, at.join("."))
                })
            })
            .collect();
        if !messages.is_empty() {
            return (messages.join("; "), String::new());
        }
    }
    let error = value.get("error").unwrap_or(&value);
    let kind = error
        .get("type")
        .or_else(|| error.get("code"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut message = error
        .get("message")
        .or_else(|| value.get("detail"))
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| body.to_string());
    if let Some(param) = error.get("param").and_then(Value::as_str) {
        message.push_str(&format!(" (param: {param})"));
    }
    (message, kind)
}

/// The message and type of an error body that is not whole JSON (cut at the cap, or not
/// JSON at all): its first `"message"` and `"type"` strings when it reads as cut JSON, else
/// the text itself.
fn cut_error_message(body: &str) -> (String, String) {
    static FIELD: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let field = FIELD.get_or_init(|| {
        regex::Regex::new(r#""(message|type|code)"\s*:\s*("(?:[^"\\]|\\.)*")"#)
            .expect("static regex")
    });
    if !body.trim_start().starts_with('{') {
        return (body.to_string(), String::new());
    }
    let first = |name: &str| {
        field
            .captures_iter(body)
            .find(|c| &c[1] == name)
            .and_then(|c| serde_json::from_str::<String>(&c[2]).ok())
    };
    match first("message") {
        Some(message) => (
            message,
            first("type").or_else(|| first("code")).unwrap_or_default(),
        ),
        None => (body.to_string(), String::new()),
    }
}

/// Whether an error body is an HTML page (a proxy's or a server's error page).
pub(crate) fn looks_like_html(text: &str) -> bool {
    let start = text
        .trim_start()
        .get(..15)
        .unwrap_or("")
        .to_ascii_lowercase();
    start.starts_with("<!doctype html")
        || start.starts_with("<html")
        || start.starts_with("<head")
        || start.starts_with("<body")
}

/// The text of an HTML page: its title, then its body's text with tags, scripts and styles
/// left out, the common entities decoded, whitespace runs as one space.
pub(crate) fn html_text(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let mut out = String::new();
    let mut i = 0;
    while i < html.len() {
        let rest = &lower[i..];
        if rest.starts_with("<script") || rest.starts_with("<style") {
            let close = if rest.starts_with("<script") {
                "</script"
            } else {
                "</style"
            };
            i = rest
                .find(close)
                .and_then(|at| rest[at..].find('>').map(|end| i + at + end + 1))
                .unwrap_or(html.len());
            continue;
        }
        if rest.starts_with("<!--") {
            i = rest.find("-->").map_or(html.len(), |at| i + at + 3);
            continue;
        }
        if rest.starts_with('<') {
            out.push(' ');
            i = rest.find('>').map_or(html.len(), |at| i + at + 1);
            continue;
        }
        let next = rest.find('<').map_or(html.len(), |at| i + at);
        out.push_str(&html[i..next]);
        i = next;
    }
    let decoded = out
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether the provider's words say the request failed validation (a schema check of its
/// body): sending it again cannot help, whatever the status (a server may answer it 500).
fn names_validation_failure(lower: &str) -> bool {
    [
        "validation error",
        "input should be",
        "field required",
        "failed to validate",
        "invalid_request_error",
        "unprocessable",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The kind of a failed call from its status and the provider's words.
pub(crate) fn classify(status: u16, message: &str, kind: &str) -> ErrorKind {
    let lower = message.to_lowercase();
    let too_long = [
        "context length",
        "context_length",
        "prompt is too long",
        "too many tokens",
        "context window",
        "maximum context",
    ]
    .iter()
    .any(|w| lower.contains(w));
    match status {
        429 => ErrorKind::RateLimited,
        529 => ErrorKind::Overloaded,
        _ if kind == "overloaded_error" => ErrorKind::Overloaded,
        401 | 403 => ErrorKind::Auth,
        408 => ErrorKind::Timeout,
        413 => ErrorKind::ContextTooLong,
        400..=499 if too_long => ErrorKind::ContextTooLong,
        400..=499 => ErrorKind::BadRequest,
        500..=599 if names_validation_failure(&lower) || kind == "invalid_request_error" => {
            ErrorKind::BadRequest
        }
        500..=599 => ErrorKind::Server,
        _ => ErrorKind::Other,
    }
}

/// `text` on one line, cut to `max` characters.
pub(crate) fn one_line_cut(text: &str, max: usize) -> String {
    let one = crate::text::one_line(text);
    let cut: String = one.chars().take(max).collect();
    if cut.len() < one.len() {
        format!("{cut}…")
    } else {
        cut
    }
}
