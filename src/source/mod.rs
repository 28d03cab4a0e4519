//! Source identifiers (what a conclusion cites), their grammar with a quoted form for any file
//! name, and the observation log (what a subagent's tools showed it).

mod observation;

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

pub(crate) use observation::SearchKind;
pub(crate) use observation::{search_label, shadowed, NOT_SEARCHED_NAMED};
pub use observation::{Observation, ObservationLog, Shown, MAX_OBSERVED_TEXT};

/// What a conclusion points at. The grammar (contracts/handoff.md, "Source identifiers"):
///
/// ```text
/// source := url | doc | event | record | file
/// url    := ("http://" | "https://") HOST [REST]        no whitespace
/// doc    := "doc:" ID ["#" SPAN]                         a corpus document, optionally a span
/// event  := "event:" ID                                  a checkpoint event
/// record := KIND ":" ID                                  KIND = [a-z][a-z0-9_-]*, e.g. order:A-1234,
///                                                        call:sa1.3 (a tool call of the run)
/// file   := (PATH | QUOTED) [":" LINE ["-" LINE]]        root-relative, 1-based, inclusive
/// QUOTED := a JSON string literal ("a, b.rs")            any name; required for names that
///                                                        hold whitespace, a control character
///                                                        or one of , ; : [ ] ( ) ` " ' # < > { } | \ – —
/// ```
///
/// `a:12` and `a:3-9` are files with lines (the part after the last `:` is a line range);
/// any other `word:rest` is a record when `word` is a lower-case kind, and malformed otherwise.
/// So a record id that reads as a line range (`order:12`) is a file with lines.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum SourceId {
    /// A file of the workspace, optionally a 1-based inclusive line range.
    File {
        /// Root-relative path with `/` separators.
        path: String,
        /// Inclusive line range, if any.
        lines: Option<(u32, u32)>,
    },
    /// A web address.
    Url(String),
    /// A corpus document, optionally a span of it.
    Doc {
        /// Document id.
        id: String,
        /// Span inside the document.
        span: Option<String>,
    },
    /// A checkpoint event.
    Event(String),
    /// A typed record such as a tool call (`call:ID`) or a business record (`order:A-1234`).
    Record {
        /// The record kind, lower case.
        kind: String,
        /// Its id.
        id: String,
    },
}

/// Why a text is not a source identifier.
/// ```
/// let err = baton::SourceId::parse("").unwrap_err();
/// assert!(err.to_string().contains("empty"), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a source identifier: {why}")]
pub struct SourceParseError {
    text: String,
    why: &'static str,
}

/// Characters a file name cannot hold unquoted in a source identifier: they separate sources
/// (`,` `;`), close a source group (`[` `]`), start a line range (`:`), quote (`` ` `` `"` `'`),
/// mark a span (`#`), separate ranges and claims (`–` `—`), or confuse a reader of markdown.
fn is_special(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || is_invisible(c)
        || matches!(
            c,
            ',' | ';'
                | ':'
                | '['
                | ']'
                | '('
                | ')'
                | '`'
                | '"'
                | '\''
                | '#'
                | '<'
                | '>'
                | '{'
                | '}'
                | '|'
                | '\\'
                | '\u{2013}'
                | '\u{2014}'
        )
}

/// Invisible format characters (zero-width spaces, direction marks and overrides, the line
/// and paragraph separators, tags): a reader could not tell a text holding one from another,
/// so the quoted form writes them as `\uXXXX`, the command line's output escapes them like
/// control characters, and the offline explorer never quotes one.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{2800}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}'
        | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}' | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0000}'..='\u{E0FFF}')
}

/// Whether a path must be written in the quoted form: it is empty, holds a special character,
/// or its plain form would read back as something else — another path (`./x` reads as `x`) or
/// another kind of source (a file named `doc` cited with lines, `doc:2-5`, reads as a
/// document).
pub(crate) fn needs_quoting(path: &str) -> bool {
    if path.is_empty() || path.chars().any(is_special) || path.starts_with("./") {
        return true;
    }
    let plain = |lines| SourceId::File {
        path: path.to_string(),
        lines,
    };
    SourceId::parse(path).ok() != Some(plain(None))
        || SourceId::parse(&format!("{path}:1")).ok() != Some(plain(Some((1, 1))))
}

/// A path as a source identifier writes it: as is, or quoted (a JSON string literal).
pub(crate) fn quote_path(path: &str) -> Cow<'_, str> {
    if needs_quoting(path) {
        let quoted = serde_json::to_string(path).unwrap_or_else(|_| format!("{path:?}"));
        if !quoted.chars().any(is_invisible) {
            return Cow::Owned(quoted);
        }
        Cow::Owned(
            quoted
                .chars()
                .map(|c| {
                    if is_invisible(c) {
                        // JSON escapes UTF-16 units: past U+FFFF, a surrogate pair.
                        let mut units = [0u16; 2];
                        c.encode_utf16(&mut units)
                            .iter()
                            .map(|u| format!("\\u{u:04x}"))
                            .collect()
                    } else {
                        c.to_string()
                    }
                })
                .collect(),
        )
    } else {
        Cow::Borrowed(path)
    }
}

/// A path as prose shows it (in a claim, where a backtick would open a quote): the source form,
/// with a backtick written `\u0060` inside the quotes.
pub(crate) fn prose_path(path: &str) -> String {
    let written = quote_path(path);
    if path.contains('`') {
        written.replace('`', "\\u0060")
    } else {
        written.into_owned()
    }
}

/// Paths as prose lists them: each as [`prose_path`] writes it, comma-separated.
pub(crate) fn prose_list(paths: &[String]) -> String {
    paths
        .iter()
        .map(|p| prose_path(p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The path `text` holds whole in the quoted form a tool prints (`"a b.rs"`), unquoted;
/// `None` when it is not one (surrounding whitespace aside).
pub(crate) fn unquoted_path(text: &str) -> Option<String> {
    let trimmed = text.trim();
    trimmed
        .strip_prefix('"')
        .and_then(|_| leading_path(trimmed))
        .filter(|(_, rest)| rest.is_empty())
        .map(|(path, _)| path)
}

/// Reads a path written at the start of `text` as a tool prints it — quoted, or plain up to the
/// first `:` or the end — and returns it with the rest of the text. A plain path holds no `:`
/// (it would have been quoted), so the first `:` ends it.
pub(crate) fn leading_path(text: &str) -> Option<(String, &str)> {
    if text.starts_with('"') {
        let end = quoted_end(text)?;
        let path: String = serde_json::from_str(&text[..end]).ok()?;
        return Some((path, &text[end..]));
    }
    let end = text.find(':').unwrap_or(text.len());
    Some((text[..end].to_string(), &text[end..]))
}

/// The byte just past the closing quote of the JSON string literal `text` starts with.
fn quoted_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn is_kind(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && word.len() <= 32
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// `12` or `3-40` (an en dash too): Some(range) when it is a well-formed line range, Some(Err)
/// when it starts like one but is not, None when it is not a line range at all.
fn line_range(text: &str) -> Option<Result<(u32, u32), &'static str>> {
    if !text.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    let (a, b) = match text.split_once(['-', '\u{2013}']) {
        Some((a, b)) => (a, b),
        None => (text, text),
    };
    let parse = |n: &str| {
        n.parse::<u32>()
            .ok()
            .filter(|_| n.chars().all(|c| c.is_ascii_digit()))
    };
    Some(match (parse(a), parse(b)) {
        (Some(a), Some(b)) if a >= 1 && b >= a => Ok((a, b)),
        (Some(_), Some(_)) => Err("a line range is START-END with 1 <= START <= END"),
        _ => Err("the line range is not numeric"),
    })
}

impl SourceId {
    /// The record a `KIND:LINES` citation also reads as (`ticket:12`: line 12 of a file
    /// `ticket`, or ticket 12): its kind and id, when the path is a record kind.
    pub(crate) fn as_record(&self) -> Option<(&str, String)> {
        match self {
            SourceId::File {
                path,
                lines: Some((a, b)),
            } if is_kind(path) => Some((
                path,
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                },
            )),
            _ => None,
        }
    }

    /// Parses one identifier (surrounding whitespace and backticks are ignored).
    pub fn parse(text: &str) -> Result<SourceId, SourceParseError> {
        let trimmed = text.trim();
        let t = if trimmed.starts_with('"') {
            trimmed
        } else {
            trimmed.trim_matches('`').trim()
        };
        let err = |why| SourceParseError {
            text: t.chars().take(120).collect(),
            why,
        };
        if t.is_empty() {
            return Err(err("it is empty"));
        }
        if t.starts_with('"') {
            return SourceId::parse_quoted(t).map_err(err);
        }
        if t.chars().any(char::is_whitespace) {
            return Err(err(
                "it contains whitespace (quote a file name that holds any: \"a b.rs\":3)",
            ));
        }
        if let Some(rest) = t
            .strip_prefix("http://")
            .or_else(|| t.strip_prefix("https://"))
        {
            let host = rest.split(['/', '?', '#']).next().unwrap_or("");
            if host.is_empty() {
                return Err(err("the URL has no host"));
            }
            if rest
                .chars()
                .any(|c| matches!(c, '<' | '>' | '"' | '{' | '}' | '|' | '\\' | '^' | '`'))
            {
                return Err(err("the URL holds a character URLs cannot"));
            }
            return Ok(SourceId::Url(t.to_string()));
        }
        if let Some(rest) = t.strip_prefix("doc:") {
            let (id, span) = match rest.split_once('#') {
                Some((id, span)) => (id, Some(span.to_string())),
                None => (rest, None),
            };
            if id.is_empty() {
                return Err(err("the document id is empty"));
            }
            if span.as_deref() == Some("") {
                return Err(err("the span after `#` is empty"));
            }
            return Ok(SourceId::Doc {
                id: id.to_string(),
                span,
            });
        }
        if let Some(id) = t.strip_prefix("event:") {
            if id.is_empty() {
                return Err(err("the event id is empty"));
            }
            return Ok(SourceId::Event(id.to_string()));
        }
        match t.rsplit_once(':') {
            None => Ok(SourceId::File {
                path: t.trim_start_matches("./").to_string(),
                lines: None,
            }),
            Some((path, tail)) => match line_range(tail) {
                Some(Ok(lines)) => {
                    let path = path.trim_start_matches("./");
                    if path.is_empty() || path.contains(':') {
                        return Err(err("a file source is PATH:LINE or PATH:START-END (quote a file name that holds a `:`)"));
                    }
                    Ok(SourceId::File {
                        path: path.to_string(),
                        lines: Some(lines),
                    })
                }
                // `order:2024-001`, `ticket:0`, `ticket:1a`: not lines — a record's id.
                Some(Err(_)) if is_kind(path) => Ok(SourceId::Record {
                    kind: path.to_string(),
                    id: tail.to_string(),
                }),
                Some(Err(why)) => Err(err(why)),
                None => {
                    let (kind, id) = t.split_once(':').unwrap_or((t, ""));
                    if !is_kind(kind) {
                        return Err(err(
                            "not a file (PATH:LINE, or \"QUOTED\":LINE), URL, doc:ID, event:ID or lower-case KIND:ID",
                        ));
                    }
                    if id.is_empty() {
                        return Err(err("the record id is empty"));
                    }
                    Ok(SourceId::Record {
                        kind: kind.to_string(),
                        id: id.to_string(),
                    })
                }
            },
        }
    }

    /// `"QUOTED"` or `"QUOTED":LINES`.
    fn parse_quoted(t: &str) -> Result<SourceId, &'static str> {
        let end = quoted_end(t).ok_or("the quoted file name is not closed")?;
        let path: String = serde_json::from_str(&t[..end])
            .map_err(|_| "the quoted file name is not a JSON string literal")?;
        if path.is_empty() {
            return Err("the quoted file name is empty");
        }
        let lines = match &t[end..] {
            "" => None,
            rest => {
                let tail = rest
                    .strip_prefix(':')
                    .ok_or("after a quoted file name comes nothing or :LINE or :START-END")?;
                match line_range(tail) {
                    Some(Ok(lines)) => Some(lines),
                    Some(Err(why)) => return Err(why),
                    None => return Err("after a quoted file name comes :LINE or :START-END"),
                }
            }
        };
        Ok(SourceId::File { path, lines })
    }

    /// The file path and line range of a file source with lines.
    pub fn file_lines(&self) -> Option<(&str, u32, u32)> {
        match self {
            SourceId::File {
                path,
                lines: Some((a, b)),
            } => Some((path, *a, *b)),
            _ => None,
        }
    }
}

impl fmt::Display for SourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceId::File { path, lines: None } => write!(f, "{}", quote_path(path)),
            SourceId::File {
                path,
                lines: Some((a, b)),
            } if a == b => write!(f, "{}:{a}", quote_path(path)),
            SourceId::File {
                path,
                lines: Some((a, b)),
            } => write!(f, "{}:{a}-{b}", quote_path(path)),
            SourceId::Url(url) => write!(f, "{url}"),
            SourceId::Doc { id, span: None } => write!(f, "doc:{id}"),
            SourceId::Doc { id, span: Some(s) } => write!(f, "doc:{id}#{s}"),
            SourceId::Event(id) => write!(f, "event:{id}"),
            SourceId::Record { kind, id } => write!(f, "{kind}:{id}"),
        }
    }
}

impl From<SourceId> for String {
    fn from(source: SourceId) -> String {
        source.to_string()
    }
}

impl TryFrom<String> for SourceId {
    type Error = SourceParseError;
    fn try_from(text: String) -> Result<SourceId, SourceParseError> {
        SourceId::parse(&text)
    }
}

/// Source files count fully; tests, examples and benches less; docs less again; metadata
/// (lock files, manifests, licences, changelogs) least.
pub(crate) fn path_factor(path: &str) -> f64 {
    let lower = path.to_ascii_lowercase();
    let is_doc = [".md", ".txt", ".rst", ".adoc", ".html"]
        .iter()
        .any(|e| lower.ends_with(e));
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let is_metadata = [
        ".lock", ".orig", ".toml", ".json", ".yaml", ".yml", ".cfg", ".ini", ".svg", ".csv",
    ]
    .iter()
    .any(|e| name.ends_with(e))
        || name.starts_with("license")
        || name.starts_with("copying")
        || name.starts_with("changelog");
    let in_tests = lower.split('/').any(|part| {
        matches!(
            part,
            "tests" | "test" | "testdata" | "benches" | "examples" | "fixtures" | "docs" | "doc"
        )
    }) || lower.contains("_test.")
        || lower.contains("test_")
        || lower.ends_with("tests.rs");
    if is_metadata {
        0.3
    } else if is_doc {
        0.4
    } else if in_tests {
        0.6
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_every_form() {
        for text in [
            "src/a.rs",
            "src/a.rs:12",
            "src/a.rs:3-40",
            "https://example.com/x",
            "doc:rfc9110#5.3",
            "call:sa1.4",
            "order:A-1234",
            "event:42",
            "Makefile",
        ] {
            assert_eq!(SourceId::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(
            SourceId::parse("./src/a.rs:7-7").unwrap().to_string(),
            "src/a.rs:7"
        );
        assert!(SourceId::parse("src/a.rs:9-3").is_err());
        assert!(SourceId::parse("src/a.rs:0").is_err());
        assert!(SourceId::parse("Weird:thing").is_err());
        assert!(SourceId::parse("src/a.rs:abc").is_err());
        assert!(SourceId::parse("src/a.rs:3-x").is_err());
        assert!(SourceId::parse("https:///nohost").is_err());
        assert!(SourceId::parse("doc:").is_err());
        assert_eq!(
            SourceId::parse("order:A-1234").unwrap(),
            SourceId::Record {
                kind: "order".into(),
                id: "A-1234".into()
            }
        );
        assert!(SourceId::parse("two words").is_err());
    }

    #[test]
    fn any_file_name_is_written_quoted_and_read_back() {
        for (path, written) in [
            ("src/a b.rs", r#""src/a b.rs""#),
            ("we:ird,name[1].rs", r#""we:ird,name[1].rs""#),
            ("tick`s.md", r#""tick`s.md""#),
            ("new\nline", r#""new\nline""#),
            ("dash – and — here", r#""dash – and — here""#),
            ("src/unicode_ファイル.rs", "src/unicode_ファイル.rs"),
            ("doc", r#""doc""#),
            ("event", r#""event""#),
            ("bidi\u{202E}x.rs", r#""bidi\u202ex.rs""#),
            ("tag\u{E0001}.rs", r#""tag\udb40\udc01.rs""#),
            ("kebab-case/x-1.rs", "kebab-case/x-1.rs"),
        ] {
            let source = SourceId::File {
                path: path.into(),
                lines: Some((3, 9)),
            };
            assert_eq!(source.to_string(), format!("{written}:3-9"));
            assert_eq!(SourceId::parse(&source.to_string()).unwrap(), source);
        }
        assert_eq!(
            SourceId::parse(r#""src/a.rs":4"#).unwrap().to_string(),
            "src/a.rs:4"
        );
        assert!(SourceId::parse(r#""open"#).is_err());
        assert!(SourceId::parse(r#""a.rs" :4"#).is_err());
        assert!(SourceId::parse(r#""a.rs":x"#).is_err());
        assert!(SourceId::parse(r#""":1"#).is_err());
        assert_eq!(
            leading_path(r#""a:b.rs":12:text"#),
            Some(("a:b.rs".to_string(), ":12:text"))
        );
        assert_eq!(
            leading_path("src/a.rs:12:x: y"),
            Some(("src/a.rs".to_string(), ":12:x: y"))
        );
    }
}
