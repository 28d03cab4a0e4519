//! The observation log: a typed entry for each kind of thing a tool can show — lines of a file
//! (whole, or the first characters of a long line), a directory listing, a search and its
//! outcome, a document span, a fetched URL, a returned record — so the contract's observation
//! layer can check any citation against what was really shown, and new tools plug in by
//! recording the kind they show.

use serde::{Deserialize, Serialize};

use super::SourceId;

/// What a search looked for: lines matching a pattern (grep), file names matching a glob, or
/// a corpus's passages matching a query. A search's kind is decided here only: the log stores
/// a glob's pattern as `glob:PATTERN` and a corpus query as `passages:QUERY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SearchKind {
    /// Lines matching a regex or a fixed string.
    Lines,
    /// File names matching a glob.
    FileNames,
    /// A corpus's passages (chunks) matching a query.
    Passages,
}

/// How the log marks a glob's pattern.
const GLOB_MARK: &str = "glob:";
/// How the log marks a corpus query.
const PASSAGES_MARK: &str = "passages:";

impl SearchKind {
    /// A logged search's kind and what it searched for.
    #[inline]
    pub(crate) fn of(stored: &str) -> (SearchKind, &str) {
        if let Some(glob) = stored.strip_prefix(GLOB_MARK) {
            (SearchKind::FileNames, glob)
        } else if let Some(query) = stored.strip_prefix(PASSAGES_MARK) {
            (SearchKind::Passages, query)
        } else {
            (SearchKind::Lines, stored)
        }
    }

    /// How a search of this kind for `pattern` is logged.
    #[inline]
    pub(crate) fn stored(self, pattern: &str) -> String {
        match self {
            SearchKind::Lines => pattern.to_string(),
            SearchKind::FileNames => format!("{GLOB_MARK}{pattern}"),
            SearchKind::Passages => format!("{PASSAGES_MARK}{pattern}"),
        }
    }
}

/// One thing a tool call let its caller see.
/// ```
/// let observed = baton::Observation::record("ticket", "T-12", "[open] login times out");
/// let mut log = baton::ObservationLog::default();
/// log.record([observed]);
/// assert_eq!(log.entries().len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Observation {
    /// Whole lines of a file were shown (a read).
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
    /// Only the first `chars` characters of one line were shown (a long line cut by a tool).
    LinePart {
        /// The call that showed it.
        call_id: String,
        /// Root-relative path.
        path: String,
        /// The line, 1-based.
        line: u32,
        /// How many characters of it were shown, from its start.
        chars: u32,
    },
    /// A directory listing was shown.
    Listed {
        /// The call.
        call_id: String,
        /// Root-relative directory.
        path: String,
    },
    /// A search ran: its pattern and flags, where, and how many matches it had.
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
        /// Files in the scope that could not be searched (binary, too large, unreadable).
        #[serde(default, skip_serializing_if = "is_zero")]
        files_skipped: usize,
        /// The pattern ignored letter case.
        #[serde(default, skip_serializing_if = "is_false")]
        case_insensitive: bool,
        /// The pattern was a literal string, not a regular expression.
        #[serde(default, skip_serializing_if = "is_false")]
        fixed_string: bool,
        /// How many entries of the scope it did not search — hidden ones, ignored ones, links,
        /// names no citation could write — counting each top-most one once.
        #[serde(default, skip_serializing_if = "is_zero")]
        not_searched: usize,
        /// The first twenty of them, root-relative.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        not_searched_names: Vec<String>,
    },
    /// A corpus document, or one span of it, was shown.
    Document {
        /// The call.
        call_id: String,
        /// The document id.
        doc: String,
        /// The span shown; none when the whole document was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        span: Option<String>,
        /// The text shown, when it fits in [`MAX_OBSERVED_TEXT`] bytes: a conclusion citing
        /// the document has its backticked quotes checked against it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// SHA-256 of the text shown (hex).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<String>,
    },
    /// A URL was fetched and its content shown.
    Url {
        /// The call.
        call_id: String,
        /// The URL as fetched.
        url: String,
        /// The content shown, when it fits in [`MAX_OBSERVED_TEXT`] bytes: a conclusion citing
        /// the URL has its backticked quotes checked against it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// SHA-256 of the content shown (hex).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<String>,
    },
    /// A record (an order, a ticket, …) was returned.
    Record {
        /// The call.
        call_id: String,
        /// Its kind, lower case (`order`).
        record_kind: String,
        /// Its id (`A-1234`).
        id: String,
        /// The record's text as the tool showed it, when it fits in [`MAX_OBSERVED_TEXT`]
        /// bytes: a conclusion citing the record has its backticked quotes checked against it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// SHA-256 of the record's text (hex), when the tool gave one: kept when the text was
        /// too long to keep.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<String>,
    },
}

/// Most bytes of a record's, a URL's or a document's text an observation keeps; past it only
/// the digest is kept, and quotes citing it cannot be checked (`quote_unchecked`).
pub const MAX_OBSERVED_TEXT: usize = 16 * 1024;

/// Most entries a search names of those it did not search.
pub(crate) const NOT_SEARCHED_NAMED: usize = 20;

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

/// The words a search pattern spells out: its runs of three or more letters and digits, with
/// regex escapes (`\s`, `\b`, `\-`) taken out, lower case.
fn pattern_words(pattern: &str) -> Vec<String> {
    let mut plain = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            chars.next();
            plain.push(' ');
        } else {
            plain.push(c);
        }
    }
    let mut words: Vec<String> = crate::text::words(&plain)
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect();
    words.sort();
    words.dedup();
    words
}

/// The top-level alternatives of a regex (`a|b|c`), escapes and classes respected; None when
/// any alternative holds a group or a quantifier that can drop what precedes it (`(`, `?`,
/// `*`, `{0`), whose words a match need not spell.
fn alternatives(pattern: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let (mut in_class, mut escaped, mut start) = (false, false, 0);
    for (i, c) in pattern.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' | ')' | '?' | '*' if !in_class => return None,
            // `[…]{0,2}` may drop its class, never a word; `x{0,…}` may drop a word.
            '{' if !in_class && pattern[i..].starts_with("{0") && !pattern[..i].ends_with(']') => {
                return None
            }
            '|' if !in_class => {
                out.push(&pattern[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&pattern[start..]);
    Some(out)
}

/// Whether a search that found nothing is shadowed by one that matched: every alternative of
/// the matching pattern spells out every word of the empty one, so whichever alternative
/// matched, those words occur. Such an empty search is not evidence that what it looked for
/// is absent — only that this spelling of it is (the question's `etc shadow` as
/// `/etc[_-]?shadow/` while `/etc/shadow` occurs) — so it is not reported as negative
/// evidence.
pub(crate) fn shadowed(empty: &str, matched: &[&str]) -> bool {
    let words = pattern_words(empty);
    !words.is_empty()
        && matched.iter().any(|m| {
            alternatives(m).is_some_and(|all| {
                all.iter().all(|alternative| {
                    let found = pattern_words(alternative);
                    words.iter().all(|w| found.binary_search(w).is_ok())
                })
            })
        })
}

/// How a search is shown to a reader, flags included: `/regex/`, `/regex/i` when it ignored
/// case, `"literal"` (and `"literal" (any case)`) for a fixed string.
pub(crate) fn search_label(pattern: &str, case_insensitive: bool, fixed_string: bool) -> String {
    match (fixed_string, case_insensitive) {
        (true, false) => serde_json::to_string(pattern).unwrap_or_default(),
        (true, true) => format!(
            "{} (any case)",
            serde_json::to_string(pattern).unwrap_or_default()
        ),
        (false, false) => format!("/{pattern}/"),
        (false, true) => format!("/{pattern}/i"),
    }
}

impl Observation {
    /// A record a tool returned: its kind (`ticket`: a lower-case ASCII letter, then letters,
    /// digits, `_` or `-`; up to 32), its id (no whitespace), and its text as the tool showed
    /// it — a conclusion may cite it as `KIND:ID` (`ticket:T-2`, `ticket:12`,
    /// `order:2024-001`) and quote it; a kind or id of another form cannot be cited. The call id
    /// is set by the registry when the call returns; a text over [`MAX_OBSERVED_TEXT`] bytes is
    /// kept as its digest only.
    /// ```
    /// use baton::{validate, Check, Observation, ObservationLog};
    /// let mut log = ObservationLog::default();
    /// log.record([Observation::record("ticket", "T-2", "[open] login times out").made_by("sa1.1")]);
    /// let handoff = "## Settled conclusions
    /// - T-2 is `[open]` [ticket:T-2]
    /// - T-3 is closed [ticket:T-3]
    /// ## Open items
    /// ## Hard constraints
    /// - none
    /// ";
    /// let checked = validate(handoff, &Check { observations: Some(&log), ..Check::default() });
    /// let codes: Vec<&str> = checked.violations.iter().map(|v| v.code.as_str()).collect();
    /// assert_eq!(codes, ["record_not_observed"]);
    /// ```
    pub fn record(kind: &str, id: &str, text: &str) -> Observation {
        Observation::Record {
            call_id: String::new(),
            record_kind: kind.to_string(),
            id: id.to_string(),
            text: Some(text.to_string()),
            digest: Some(crate::digest::sha256_hex(text.as_bytes())),
        }
        .bounded()
    }

    /// A URL a tool fetched, and the content it showed — cited as the URL, quoted from that
    /// content.
    /// ```
    /// let seen = baton::Observation::url("https://example.com/status", "all systems normal");
    /// assert_eq!(seen.content().unwrap().0, Some("all systems normal"));
    /// ```
    pub fn url(url: &str, text: &str) -> Observation {
        Observation::Url {
            call_id: String::new(),
            url: url.to_string(),
            text: Some(text.to_string()),
            digest: Some(crate::digest::sha256_hex(text.as_bytes())),
        }
        .bounded()
    }

    /// A document (or a span of it: `span`) a tool showed, and its text — cited as
    /// `doc:ID` or `doc:ID#SPAN`, quoted from that text.
    /// ```
    /// let seen = baton::Observation::document("handbook", Some("ch2"), "Leave is booked a week ahead.");
    /// let mut log = baton::ObservationLog::default();
    /// log.record([seen]);
    /// assert!(log.saw_document("handbook", Some("ch2")));
    /// ```
    pub fn document(doc: &str, span: Option<&str>, text: &str) -> Observation {
        Observation::Document {
            call_id: String::new(),
            doc: doc.to_string(),
            span: span.map(str::to_string),
            text: Some(text.to_string()),
            digest: Some(crate::digest::sha256_hex(text.as_bytes())),
        }
        .bounded()
    }

    /// The text shown with it and its digest, for what keeps text (a document, a URL, a
    /// record).
    /// ```
    /// let long = "x".repeat(baton::MAX_OBSERVED_TEXT + 1);
    /// let seen = baton::Observation::record("log", "1", &long);
    /// let (text, digest) = seen.content().unwrap();
    /// assert!(text.is_none() && digest.is_some(), "too long to keep: its digest only");
    /// ```
    pub fn content(&self) -> Option<(Option<&str>, Option<&str>)> {
        match self {
            Observation::Document { text, digest, .. }
            | Observation::Url { text, digest, .. }
            | Observation::Record { text, digest, .. } => {
                Some((text.as_deref(), digest.as_deref()))
            }
            _ => None,
        }
    }

    /// A text over [`MAX_OBSERVED_TEXT`] bytes cut down to its digest.
    pub(crate) fn bounded(mut self) -> Observation {
        if let Observation::Document { text, digest, .. }
        | Observation::Url { text, digest, .. }
        | Observation::Record { text, digest, .. } = &mut self
        {
            if let Some(long) = text.take_if(|t| t.len() > MAX_OBSERVED_TEXT) {
                digest.get_or_insert_with(|| crate::digest::sha256_hex(long.as_bytes()));
            }
        }
        self
    }

    /// The same observation made by `call`: the registry stamps what a tool returned with
    /// the call it answers, whatever id the tool wrote (a test builds a log this way).
    /// ```
    /// let seen = baton::Observation::record("ticket", "T-2", "open").made_by("sa1.4");
    /// assert_eq!(seen.call_id(), "sa1.4");
    /// ```
    pub fn made_by(mut self, call: &str) -> Observation {
        match &mut self {
            Observation::Lines { call_id, .. }
            | Observation::LinePart { call_id, .. }
            | Observation::Listed { call_id, .. }
            | Observation::Searched { call_id, .. }
            | Observation::Document { call_id, .. }
            | Observation::Url { call_id, .. }
            | Observation::Record { call_id, .. } => {
                call.clone_into(call_id);
            }
        }
        self
    }

    /// The call that made this observation.
    /// ```
    /// assert_eq!(baton::Observation::url("https://a.example", "").call_id(), "", "not stamped yet");
    /// ```
    pub fn call_id(&self) -> &str {
        match self {
            Observation::Lines { call_id, .. }
            | Observation::LinePart { call_id, .. }
            | Observation::Listed { call_id, .. }
            | Observation::Searched { call_id, .. }
            | Observation::Document { call_id, .. }
            | Observation::Url { call_id, .. }
            | Observation::Record { call_id, .. } => call_id,
        }
    }
}

/// What of a cited range a subagent was shown: whole line spans, and lines of which only a
/// prefix was shown, as (line, characters).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shown {
    /// Spans of whole lines, sorted and merged, clipped to the cited range.
    pub spans: Vec<(u32, u32)>,
    /// Lines shown only in part (not also whole), with the characters shown.
    pub parts: Vec<(u32, u32)>,
}

impl Shown {
    /// Whether the whole of `start..=end` was shown, every line whole.
    pub fn is_whole(&self, start: u32, end: u32) -> bool {
        self.parts.is_empty() && self.spans == [(start, end)]
    }
}

/// Everything one subagent's tool calls showed it, in order. A citation of something that is
/// not in here was never observed, and is not evidence.
/// ```
/// use baton::{Observation, ObservationLog};
/// let mut log = ObservationLog::default();
/// log.record([
///     Observation::Lines { call_id: "sa1.1".into(), path: "src/a.rs".into(), start: 1, end: 40 },
///     Observation::record("ticket", "T-2", "[open] login times out").made_by("sa1.2"),
/// ]);
/// assert!(log.saw_lines("src/a.rs", 3, 9));
/// assert!(!log.saw_lines("src/a.rs", 30, 50));
/// assert!(log.shown("src/a.rs", 3, 9).unwrap().is_whole(3, 9));
/// assert!(log.saw_record("ticket", "T-2"));
/// assert_eq!(log.entries().len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationLog {
    entries: Vec<Observation>,
}

/// Sorts and merges adjacent or overlapping inclusive spans.
fn merged(mut spans: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    spans.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(spans.len());
    for (a, b) in spans {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// A URL as compared: without its fragment and a trailing slash.
fn url_key(url: &str) -> &str {
    url.split('#').next().unwrap_or(url).trim_end_matches('/')
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

    /// Keeps only the observations `keep` accepts (a resume drops searches that no longer
    /// hold).
    pub(crate) fn retain(&mut self, keep: impl FnMut(&Observation) -> bool) {
        self.entries.retain(keep);
    }

    /// What of `start..=end` of `path` was shown; None unless every line of it was shown, at
    /// least in part.
    pub fn shown(&self, path: &str, start: u32, end: u32) -> Option<Shown> {
        let shown = self.shown_of_file(path, start, end);
        let mut covered = merged(
            shown
                .spans
                .iter()
                .copied()
                .chain(shown.parts.iter().map(|(line, _)| (*line, *line)))
                .collect(),
        );
        covered.retain(|(a, b)| *b >= start && *a <= end);
        (covered.len() == 1 && covered[0].0 <= start && covered[0].1 >= end).then_some(shown)
    }

    /// What of `path` was shown within `start..=end`, however little.
    fn shown_of_file(&self, path: &str, start: u32, end: u32) -> Shown {
        let mut spans = Vec::new();
        let mut parts: Vec<(u32, u32)> = Vec::new();
        for o in &self.entries {
            match o {
                Observation::Lines {
                    path: p,
                    start: a,
                    end: b,
                    ..
                } if p == path && *b >= start && *a <= end => {
                    spans.push(((*a).max(start), (*b).min(end)));
                }
                Observation::LinePart {
                    path: p,
                    line,
                    chars,
                    ..
                } if p == path && (start..=end).contains(line) => {
                    match parts.iter_mut().find(|(l, _)| l == line) {
                        Some(part) => part.1 = part.1.max(*chars),
                        None => parts.push((*line, *chars)),
                    }
                }
                _ => {}
            }
        }
        let spans = merged(spans);
        parts.retain(|(line, _)| !spans.iter().any(|(a, b)| (a..=b).contains(&line)));
        parts.sort_unstable();
        Shown { spans, parts }
    }

    /// Whether every line of `start..=end` of `path` was shown by some call (a long line cut
    /// short counts as shown; what a quote may rest on is only what was shown of it).
    pub fn saw_lines(&self, path: &str, start: u32, end: u32) -> bool {
        self.shown(path, start, end).is_some()
    }

    /// What was shown of `path` anywhere in it; None when nothing was.
    pub fn shown_file(&self, path: &str) -> Option<Shown> {
        let shown = self.shown_of_file(path, 1, u32::MAX);
        (!shown.spans.is_empty() || !shown.parts.is_empty()).then_some(shown)
    }

    /// Whether any lines of `path` were shown.
    pub fn saw_file(&self, path: &str) -> bool {
        self.shown_file(path).is_some()
    }

    /// What one call showed of each file, in the order the files came (a read's lines, a
    /// search's hit lines; a long line cut short as the part shown).
    pub fn shown_by_call(&self, call_id: &str) -> Vec<(String, Shown)> {
        let mut out: Vec<(String, Shown)> = Vec::new();
        for o in &self.entries {
            let (path, span, part) = match o {
                Observation::Lines {
                    call_id: c,
                    path,
                    start,
                    end,
                } if c == call_id => (path, Some((*start, *end)), None),
                Observation::LinePart {
                    call_id: c,
                    path,
                    line,
                    chars,
                } if c == call_id => (path, None, Some((*line, *chars))),
                _ => continue,
            };
            let at = match out.iter().position(|(p, _)| p == path) {
                Some(at) => at,
                None => {
                    out.push((path.clone(), Shown::default()));
                    out.len() - 1
                }
            };
            let shown = &mut out[at].1;
            shown.spans.extend(span);
            shown.parts.extend(part);
        }
        for (_, shown) in &mut out {
            shown.spans = merged(std::mem::take(&mut shown.spans));
            let spans = &shown.spans;
            shown
                .parts
                .retain(|(line, _)| !spans.iter().any(|(a, b)| (a..=b).contains(&line)));
            shown.parts.sort_unstable();
        }
        out
    }

    /// Whether a search call with this id ran.
    pub fn searched(&self, call_id: &str) -> bool {
        self.entries
            .iter()
            .any(|o| matches!(o, Observation::Searched { call_id: c, .. } if c == call_id))
    }

    /// Whether document `doc` was shown: the whole of it, or the cited span (a citation of the
    /// whole document needs some part of it shown).
    pub fn saw_document(&self, doc: &str, span: Option<&str>) -> bool {
        self.entries.iter().any(|o| match o {
            Observation::Document {
                doc: d, span: s, ..
            } if d == doc => s.is_none() || span.is_none() || s.as_deref() == span,
            _ => false,
        })
    }

    /// Whether `url` was fetched (a fragment and a trailing slash do not count).
    pub fn saw_url(&self, url: &str) -> bool {
        let wanted = url_key(url);
        self.entries
            .iter()
            .any(|o| matches!(o, Observation::Url { url: u, .. } if url_key(u) == wanted))
    }

    /// The observations that show a cited record, URL or document (as the observation
    /// layer matches them: a URL without its fragment or trailing slash; a document whole, or
    /// the span cited).
    fn showing<'a, 's>(
        &'a self,
        source: &'s SourceId,
    ) -> impl Iterator<Item = &'a Observation> + use<'a, 's> {
        self.entries.iter().filter(move |o| match (source, o) {
            (
                SourceId::Record { kind, id },
                Observation::Record {
                    record_kind: k,
                    id: i,
                    ..
                },
            ) => k == kind && i == id,
            (SourceId::Url(url), Observation::Url { url: u, .. }) => url_key(u) == url_key(url),
            (
                SourceId::Doc { id, span },
                Observation::Document {
                    doc: d, span: s, ..
                },
            ) => d == id && (s.is_none() || span.is_none() || s == span),
            _ => false,
        })
    }

    /// The texts the subagent's tools showed of a cited record, URL or document (one whose
    /// text was too long to keep shows none).
    pub fn texts_of(&self, source: &SourceId) -> Vec<&str> {
        self.showing(source)
            .filter_map(|o| o.content().and_then(|(text, _)| text))
            .collect()
    }

    /// The digest of a cited record, URL or document as a tool first showed it, when it gave
    /// one.
    pub fn digest_of(&self, source: &SourceId) -> Option<&str> {
        self.showing(source)
            .find_map(|o| o.content().and_then(|(_, digest)| digest))
    }

    /// Whether some observation shows a cited record, URL or document (as [`Self::texts_of`]
    /// matches them).
    pub fn shows(&self, source: &SourceId) -> bool {
        self.showing(source).next().is_some()
    }

    /// Whether a record of this kind and id was returned.
    pub fn saw_record(&self, kind: &str, id: &str) -> bool {
        self.entries.iter().any(|o| {
            matches!(o, Observation::Record { record_kind: k, id: i, .. } if k == kind && i == id)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: u32, e: u32) -> Observation {
        Observation::Lines {
            call_id: "c".into(),
            path: "a.rs".into(),
            start: s,
            end: e,
        }
    }

    #[test]
    fn coverage_needs_every_line() {
        let mut log = ObservationLog::default();
        log.record([lines(10, 20), lines(21, 30), lines(40, 41)]);
        assert!(log.saw_lines("a.rs", 12, 30));
        assert!(!log.saw_lines("a.rs", 12, 35));
        assert!(log.saw_lines("a.rs", 40, 40));
        assert!(!log.saw_lines("a.rs", 5, 12));
        assert!(!log.saw_lines("b.rs", 10, 10));
    }

    #[test]
    fn an_empty_search_spelled_out_by_a_matching_one_is_shadowed() {
        let compound = "etc[_\\-\\s./:]{0,2}shadow|shadow[_\\-\\s./:]{0,2}etc";
        assert!(shadowed(compound, &["/etc/shadow"]));
        assert!(shadowed(
            "[\"']retry delay[\"']",
            &[compound, "retry[_\\-\\s./:]{0,2}delay"]
        ));
        assert!(!shadowed("comput", &["delay"]));
        assert!(!shadowed("delay[_\\-\\s./:]{0,2}comput", &["delay"]));
        assert!(
            !shadowed("x", &["x"]),
            "a pattern with no word to compare stands"
        );
    }

    #[test]
    fn a_line_shown_in_part_is_recorded_as_a_part() {
        let mut log = ObservationLog::default();
        log.record([
            lines(1, 3),
            Observation::LinePart {
                call_id: "g".into(),
                path: "a.rs".into(),
                line: 4,
                chars: 240,
            },
        ]);
        let shown = log.shown("a.rs", 2, 4).unwrap();
        assert_eq!(shown.spans, vec![(2, 3)]);
        assert_eq!(shown.parts, vec![(4, 240)]);
        assert!(!shown.is_whole(2, 4));
        assert!(log.shown("a.rs", 2, 3).unwrap().is_whole(2, 3));
        assert!(log.shown("a.rs", 4, 5).is_none());
    }
}
