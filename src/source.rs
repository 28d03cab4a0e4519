//! Source identifiers (what a conclusion cites) and the observation log (what a subagent saw).

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a conclusion points at. The grammar (contracts/handoff.md, "Source identifiers"):
///
/// ```text
/// source := url | doc | event | record | file
/// url    := ("http://" | "https://") HOST [REST]        no whitespace
/// doc    := "doc:" ID ["#" SPAN]                         a corpus document, optionally a span
/// event  := "event:" ID                                  a checkpoint event
/// record := KIND ":" ID                                  KIND = [a-z][a-z0-9_-]*, e.g. order:A-1234,
///                                                        call:sa1.3 (a tool call of the run)
/// file   := PATH [":" LINE ["-" LINE]]                   root-relative, 1-based, inclusive
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a source identifier: {why}")]
pub struct SourceParseError {
    text: String,
    why: &'static str,
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
    /// Parses one identifier (surrounding whitespace and backticks are ignored).
    pub fn parse(text: &str) -> Result<SourceId, SourceParseError> {
        let t = text.trim().trim_matches('`').trim();
        let err = |why| SourceParseError {
            text: t.chars().take(120).collect(),
            why,
        };
        if t.is_empty() {
            return Err(err("it is empty"));
        }
        if t.chars().any(char::is_whitespace) {
            return Err(err("it contains whitespace"));
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
                        return Err(err("a file source is PATH:LINE or PATH:START-END"));
                    }
                    Ok(SourceId::File {
                        path: path.to_string(),
                        lines: Some(lines),
                    })
                }
                Some(Err(why)) => Err(err(why)),
                None => {
                    let (kind, id) = t.split_once(':').unwrap_or((t, ""));
                    if !is_kind(kind) {
                        return Err(err(
                            "not a file (PATH:LINE), URL, doc:ID, event:ID or lower-case KIND:ID",
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
            SourceId::File { path, lines: None } => write!(f, "{path}"),
            SourceId::File {
                path,
                lines: Some((a, b)),
            } if a == b => write!(f, "{path}:{a}"),
            SourceId::File {
                path,
                lines: Some((a, b)),
            } => write!(f, "{path}:{a}-{b}"),
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

/// One thing a tool call let its caller see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Observation {
    /// Lines of a file were shown (a read, or one grep hit).
    Lines {
        /// The call that showed them.
        call_id: String,
        /// Root-relative path.
        path: String,
        /// First line shown, 1-based.
        start: u32,
        /// Last line shown, inclusive.
        end: u32,
    },
    /// A directory listing was shown.
    Listed {
        /// The call.
        call_id: String,
        /// Root-relative directory.
        path: String,
    },
    /// A search ran: its pattern, where, and how many matches it had.
    Searched {
        /// The call.
        call_id: String,
        /// The pattern searched for.
        pattern: String,
        /// Paths searched.
        scope: Vec<String>,
        /// Matching lines (or files, for glob).
        matches: usize,
        /// Files searched.
        files_searched: usize,
    },
}

impl Observation {
    /// The call that made this observation.
    pub fn call_id(&self) -> &str {
        match self {
            Observation::Lines { call_id, .. }
            | Observation::Listed { call_id, .. }
            | Observation::Searched { call_id, .. } => call_id,
        }
    }
}

/// Everything one subagent's tool calls showed it, in order. A citation of lines that are not
/// in here was never observed, and is not evidence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationLog {
    entries: Vec<Observation>,
}

impl ObservationLog {
    /// Appends what one call showed.
    pub fn record(&mut self, observations: impl IntoIterator<Item = Observation>) {
        self.entries.extend(observations);
    }

    /// All entries, oldest first.
    pub fn entries(&self) -> &[Observation] {
        &self.entries
    }

    /// Whether every line of `start..=end` of `path` was shown by some call.
    pub fn saw_lines(&self, path: &str, start: u32, end: u32) -> bool {
        let mut spans: Vec<(u32, u32)> = self
            .entries
            .iter()
            .filter_map(|o| match o {
                Observation::Lines {
                    path: p,
                    start: a,
                    end: b,
                    ..
                } if p == path => Some((*a, *b)),
                _ => None,
            })
            .collect();
        spans.sort_unstable();
        let mut covered_to = start.saturating_sub(1);
        for (a, b) in spans {
            if a > covered_to.saturating_add(1) {
                break;
            }
            covered_to = covered_to.max(b);
        }
        covered_to >= end
    }

    /// Whether any lines of `path` were shown.
    pub fn saw_file(&self, path: &str) -> bool {
        self.entries
            .iter()
            .any(|o| matches!(o, Observation::Lines { path: p, .. } if p == path))
    }

    /// Whether a search call with this id ran.
    pub fn searched(&self, call_id: &str) -> bool {
        self.entries
            .iter()
            .any(|o| matches!(o, Observation::Searched { call_id: c, .. } if c == call_id))
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
    fn coverage_needs_every_line() {
        let mut log = ObservationLog::default();
        let lines = |s, e| Observation::Lines {
            call_id: "c".into(),
            path: "a.rs".into(),
            start: s,
            end: e,
        };
        log.record([lines(10, 20), lines(21, 30), lines(40, 41)]);
        assert!(log.saw_lines("a.rs", 12, 30));
        assert!(!log.saw_lines("a.rs", 12, 35));
        assert!(log.saw_lines("a.rs", 40, 40));
        assert!(!log.saw_lines("a.rs", 5, 12));
        assert!(!log.saw_lines("b.rs", 10, 10));
    }
}
