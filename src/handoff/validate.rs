//! Validation past structure: each source resolves (resolution), the subagent saw what it
//! cites (observation), and backticked quotes occur in the cited lines (quotation). Every
//! violation is returned at once, each with its code, line and a message a model can act on.

use std::collections::HashSet;
use std::sync::Arc;

pub use super::files::{
    FileProblem, FileText, Files, MemoryFiles, WorkspaceFiles, FILE_CACHE_BYTES,
};
use super::{parse, Conclusion, ConclusionKind, Parsed, Violation, ViolationCode};
use crate::source::{quote_path, Observation, ObservationLog, Shown, SourceId};

/// What a handoff is checked against. Each layer runs only when what it needs is given:
/// resolution and quotation need `files`, observation needs `observations`.
/// ```
/// let files = baton::testing::MemoryFiles::new();
/// // Structure and resolution against these files; no observation log: nothing is checked
/// // against what a tool showed.
/// let check = baton::Check { files: Some(&files), observations: None, docs: None };
/// let parsed = baton::validate("## Settled conclusions\n## Open items\n## Hard constraints\n- none\n", &check);
/// assert!(parsed.violations.is_empty());
/// ```
#[derive(Default, Clone, Copy)]
pub struct Check<'a> {
    /// Where cited files are read.
    pub files: Option<&'a dyn Files>,
    /// What the subagent's tool calls showed it.
    pub observations: Option<&'a ObservationLog>,
    /// The corpus's document ids (none: no corpus to resolve a `doc:` citation against, which
    /// then stands on its observation alone).
    pub docs: Option<&'a HashSet<String>>,
}

impl std::fmt::Debug for Check<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check")
            .field("files", &self.files.is_some())
            .field("observations", &self.observations.is_some())
            .field("docs", &self.docs.map(HashSet::len))
            .finish()
    }
}

/// What a file citation's backticked quotes may rest on.
enum Quotable {
    /// The whole file (a whole-file citation checked without an observation log).
    Whole,
    /// Lines `a..=b`, all of them shown (or no log to say otherwise).
    Range(u32, u32),
    /// Only what the subagent's tools showed of the cited lines (or of the file).
    Parts(Shown),
}

impl Quotable {
    /// The texts a quote may occur in, borrowed from the file.
    fn slices<'t>(&self, file: &'t FileText, out: &mut Vec<&'t str>) {
        match self {
            Quotable::Whole => out.push(file.text()),
            Quotable::Range(a, b) => out.push(file.lines(*a, *b)),
            Quotable::Parts(shown) => {
                for (a, b) in &shown.spans {
                    out.push(file.lines(*a, *b));
                }
                for (line, chars) in &shown.parts {
                    let text = file.lines(*line, *line);
                    let end = text
                        .char_indices()
                        .nth(*chars as usize)
                        .map(|(at, _)| at)
                        .unwrap_or(text.len());
                    out.push(&text[..end]);
                }
            }
        }
    }
}

/// Parses and validates a handoff text in every layer `check` allows; `violations` of the
/// result holds them all, structure first, each tied to its conclusion where it has one.
/// ```
/// let mut files = baton::testing::MemoryFiles::new();
/// files.insert("src/a.rs", "fn main() {}\n");
/// let check = baton::Check { files: Some(&files), observations: None, docs: None };
/// let good = "## Settled conclusions\n- main is `fn main()` [src/a.rs:1]\n## Open items\n## Hard constraints\n- none\n";
/// assert!(baton::validate(good, &check).violations.is_empty());
/// let made_up = good.replace("fn main()", "fn start()");
/// let codes: Vec<_> = baton::validate(&made_up, &check).violations.iter().map(|v| v.code.as_str()).collect();
/// assert_eq!(codes, ["quote_not_found"]);
/// ```
pub fn validate(text: &str, check: &Check<'_>) -> Parsed {
    let mut parsed = parse(text);
    if let Some(log) = check.observations {
        records_with_numeric_ids(&mut parsed, log);
    }
    let mut found = Vec::new();
    for (i, c) in parsed.handoff.settled_conclusions.iter().enumerate() {
        let line = parsed.settled_line(i);
        let from = found.len();
        sources_in_claim(&c.claim, line, &mut found);
        let mut cited: Vec<(Arc<FileText>, Quotable)> = Vec::new();
        // Whether every source resolved: a quote is looked for only when they all did.
        let mut resolved = true;
        for source in &c.sources {
            let before = found.len();
            cited.extend(check_source(source, c.kind, line, check, &mut found));
            resolved &= found.len() == before;
        }
        if c.kind == ConclusionKind::Finding {
            negative_unmarked(c, line, check, &mut found);
        }
        // Negative evidence quotes what was searched for: it is not looked for.
        let quoted = c.kind == ConclusionKind::Finding && c.claim.contains('`');
        // A conclusion whose sources did not parse has its violation already.
        let parsed_whole = !parsed.violations.iter().any(|v| v.conclusion == Some(i));
        if (check.files.is_some() || check.observations.is_some())
            && resolved
            && quoted
            && parsed_whole
        {
            let mut slices: Vec<&str> = Vec::with_capacity(cited.len());
            for (text, shown) in &cited {
                shown.slices(text, &mut slices);
            }
            if slices.is_empty() {
                unchecked_quotes(c, line, check, &mut found);
            } else {
                check_quotes(&c.claim, &slices, line, &mut found);
            }
        }
        crate::handoff::of_conclusion(&mut found, from, i);
    }
    for (i, h) in parsed.handoff.hard_constraints.iter().enumerate() {
        let line = parsed.lines.constraints.get(i).copied().unwrap_or(0);
        for source in &h.sources {
            check_source(source, ConclusionKind::Finding, line, check, &mut found);
        }
    }
    parsed.violations.extend(found);
    parsed
}

/// `ticket:12` reads as line 12 of a file `ticket` — and as ticket 12: where the subagent's
/// tools returned that record, or records of that kind and never a file of that name, it is
/// a record that is cited.
fn records_with_numeric_ids(parsed: &mut Parsed, log: &ObservationLog) {
    let handoff = &mut parsed.handoff;
    let sources = handoff
        .settled_conclusions
        .iter_mut()
        .flat_map(|c| c.sources.iter_mut())
        .chain(
            handoff
                .hard_constraints
                .iter_mut()
                .flat_map(|h| h.sources.iter_mut()),
        );
    for source in sources {
        if let Some((kind, id)) = source.as_record() {
            let of_kind = || {
                log.entries().iter().any(
                    |o| matches!(o, Observation::Record { record_kind, .. } if record_kind == kind),
                )
            };
            // As written when a record was seen so; else as a tool spelled one that reads as
            // these lines (`007`, `12-12`); else as written, when records of the kind were
            // seen and no file of its name was shown.
            let spelled = || {
                log.entries().iter().find_map(|o| match o {
                    Observation::Record {
                        record_kind, id, ..
                    } if record_kind == kind
                        && SourceId::parse(&format!("{kind}:{id}")).as_ref() == Ok(&*source) =>
                    {
                        Some(id.clone())
                    }
                    _ => None,
                })
            };
            let record = match log.saw_record(kind, &id) {
                true => Some(id),
                false => spelled()
                    .or_else(|| (of_kind() && log.shown_file(kind).is_none()).then_some(id)),
            };
            if let Some(id) = record {
                *source = SourceId::Record {
                    kind: kind.to_string(),
                    id,
                };
            }
        }
    }
}

/// A source written in brackets inside the claim's own text (outside its quotes) looks like a
/// citation yet is never checked: `… set in [docs/secret.md:2] to 5 [src/a.rs:3]`. A bracket
/// counts as one when every id in it reads as a source with a line range, a path or a file
/// extension, or a `kind:` form (`[1]`, `[x]` and `[see notes]` are not).
fn sources_in_claim(claim: &str, line: usize, out: &mut Vec<Violation>) {
    let mut outside = String::with_capacity(claim.len());
    let mut inside = false;
    for c in claim.chars() {
        if c == '`' {
            inside = !inside;
        }
        outside.push(if inside || c == '`' { ' ' } else { c });
    }
    let mut rest = outside.as_str();
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        let group = &rest[open + 1..open + close];
        rest = &rest[open + close + 1..];
        let ids: Vec<&str> = group.split([',', ';']).map(str::trim).collect();
        let citation = !ids.iter().any(|s| s.is_empty())
            && ids.iter().all(|id| {
                SourceId::parse(id).is_ok_and(|s| match s {
                    SourceId::File { path, lines } => {
                        lines.is_some() || path.contains('/') || path.contains('.')
                    }
                    _ => true,
                })
            });
        if citation {
            out.push(Violation::new(
                ViolationCode::SourceInClaim,
                line,
                format!("`[{}]` inside the claim's text is never checked: cite every source in the brackets that end the conclusion", group.trim()),
            ));
        }
    }
}

/// A finding citing a search that found nothing states an absence as a fact — an empty
/// search supports nothing else, whatever the other sources: it is negative evidence, and
/// must say so (what was searched, where), apart from what the other sources show.
fn negative_unmarked(c: &Conclusion, line: usize, check: &Check<'_>, out: &mut Vec<Violation>) {
    let Some(log) = check.observations else {
        return;
    };
    let empty_search = |s: &SourceId| match s {
        SourceId::Record { kind, id } if kind == "call" => log.entries().iter().any(
            |o| matches!(o, Observation::Searched { call_id, matches: 0, .. } if call_id == id),
        ),
        _ => false,
    };
    if c.sources.iter().any(empty_search) {
        out.push(Violation::new(
            ViolationCode::NegativeUnmarked,
            line,
            "it cites a search that found nothing: write the absence as negative evidence (`Negative evidence: no line matches … in …`), saying what was searched and where, and what the other sources show as a finding of its own".to_string(),
        ));
    }
}

/// Quotes under sources none of which holds text to check them against.
fn unchecked_quotes(c: &Conclusion, line: usize, check: &Check<'_>, out: &mut Vec<Violation>) {
    let calls_unseen = check.observations.is_none()
        && c.sources
            .iter()
            .any(|s| matches!(s, SourceId::Record { kind, .. } if kind == "call"));
    let why = if calls_unseen {
        "a `call:ID` is checked only in its run: cite the file lines it stands on"
    } else {
        "none of its sources shows text (a search that found nothing, a listing, or a record, URL or document whose text was not kept): cite the lines it stands on"
    };
    for quote in quotes(&c.claim) {
        let shown: String = quote.chars().take(60).collect();
        out.push(Violation::new(
            ViolationCode::QuoteUnchecked,
            line,
            format!("`{shown}` cannot be checked: {why}"),
        ));
    }
}

/// Resolution and observation of one source. Returns the texts it shows — a cited file's
/// lines, the lines a cited call showed — with what of each the quotation check may use,
/// when it resolves and was observed.
fn check_source(
    source: &SourceId,
    kind: ConclusionKind,
    line: usize,
    check: &Check<'_>,
    out: &mut Vec<Violation>,
) -> Vec<(Arc<FileText>, Quotable)> {
    let mut say = |code, message: String| out.push(Violation::new(code, line, message));
    match source {
        SourceId::File { path, lines } => check_file(source, path, *lines, check, &mut say)
            .into_iter()
            .collect(),
        SourceId::Url(url) => {
            if check.observations.is_some_and(|log| !log.saw_url(url)) {
                say(
                    ViolationCode::UrlNotFetched,
                    format!("`{url}` was never fetched by your tool calls"),
                );
                return Vec::new();
            }
            shown_texts(source, check)
        }
        SourceId::Doc { id, span } => {
            // Resolution needs a corpus; with none, the observation layer alone decides.
            if check.docs.is_some_and(|d| !d.contains(id)) {
                say(
                    ViolationCode::DocUnknown,
                    format!("`doc:{id}` is not a document of the corpus"),
                );
            } else if check
                .observations
                .is_some_and(|log| !log.saw_document(id, span.as_deref()))
            {
                say(
                    ViolationCode::DocNotObserved,
                    format!("`{source}` was never shown to you by your tool calls"),
                );
            } else {
                return shown_texts(source, check);
            }
            Vec::new()
        }
        // An event is evidence only once a tool showed it: in a run, like any record.
        SourceId::Event(id) => {
            if check
                .observations
                .is_some_and(|log| !log.saw_record("event", id))
            {
                say(
                    ViolationCode::RecordNotObserved,
                    format!("`{source}` was not shown to you by any of your tool calls"),
                );
            }
            Vec::new()
        }
        SourceId::Record { kind: record, id } if record == "call" => {
            check_call(id, kind, check, &mut say)
        }
        SourceId::Record { kind: record, id } => {
            let Some(log) = check.observations else {
                return Vec::new();
            };
            if !log.saw_record(record, id) {
                say(
                    ViolationCode::RecordNotObserved,
                    format!("`{source}` was not returned by any of your tool calls"),
                );
                return Vec::new();
            }
            shown_texts(source, check)
        }
    }
}

/// What a quote under a cited record, URL or document may rest on: the texts the subagent's
/// tools showed of it.
fn shown_texts(source: &SourceId, check: &Check<'_>) -> Vec<(Arc<FileText>, Quotable)> {
    check.observations.map_or_else(Vec::new, |log| {
        log.texts_of(source)
            .into_iter()
            .map(|text| (Arc::new(FileText::new(text.to_string())), Quotable::Whole))
            .collect()
    })
}

/// A file citation: the file resolves inside the root, its lines are in range, and (in a
/// run) the subagent was shown them; the file's text and what a quote may rest on.
fn check_file(
    source: &SourceId,
    path: &str,
    lines: Option<(u32, u32)>,
    check: &Check<'_>,
    say: &mut impl FnMut(ViolationCode, String),
) -> Option<(Arc<FileText>, Quotable)> {
    let mut cited = None;
    if let Some(files) = check.files {
        match files.text(path) {
            Err(FileProblem::NotFound) => {
                say(
                    ViolationCode::FileNotFound,
                    format!("`{}` does not exist in the workspace", quote_path(path)),
                );
                return None;
            }
            Err(FileProblem::OutsideRoot(why)) => {
                say(
                    ViolationCode::PathOutsideRoot,
                    format!("`{}`: {why}; cite root-relative paths", quote_path(path)),
                );
                return None;
            }
            Err(FileProblem::Unreadable(why)) => {
                say(ViolationCode::FileUnreadable, why);
                return None;
            }
            Err(FileProblem::NoWorkspace) => {
                say(
                    ViolationCode::FileNotFound,
                    format!(
                        "`{}`: this job has no workspace, so no file can be cited; cite what your tools returned (a record `kind:ID`, or `call:ID`)",
                        quote_path(path)
                    ),
                );
                return None;
            }
            Ok(text) => {
                if let Some((_, b)) = lines {
                    let count = text.line_count();
                    if b as usize > count {
                        say(
                            ViolationCode::LineOutOfRange,
                            format!(
                                "`{source}`: `{}` has {count} lines; cite lines that exist",
                                quote_path(path)
                            ),
                        );
                        return None;
                    }
                }
                cited = Some(text);
            }
        }
    }
    let shown = check.observations.map(|log| match lines {
        Some((a, b)) => log.shown(path, a, b),
        None => log.shown_file(path),
    });
    let quotable = match (shown, lines) {
        (None, None) => Quotable::Whole,
        (None, Some((a, b))) => Quotable::Range(a, b),
        (Some(Some(shown)), Some((a, b))) if shown.is_whole(a, b) => Quotable::Range(a, b),
        (Some(Some(shown)), _) => Quotable::Parts(shown),
        (Some(None), _) => {
            say(
                ViolationCode::NotObserved,
                format!("`{source}` was never shown to you by a tool call: read those lines, or cite the lines you read"),
            );
            return None;
        }
    };
    cited.map(|text| (text, quotable))
}

/// A `call:ID` citation: the call is the subagent's; negative evidence cites a search that
/// found nothing. What the call showed of each file is what a quote under it may rest on.
fn check_call(
    id: &str,
    kind: ConclusionKind,
    check: &Check<'_>,
    say: &mut impl FnMut(ViolationCode, String),
) -> Vec<(Arc<FileText>, Quotable)> {
    let Some(log) = check.observations else {
        return Vec::new();
    };
    let searched = log.entries().iter().find_map(|o| match o {
        Observation::Searched {
            call_id, matches, ..
        } if call_id == id => Some(*matches),
        _ => None,
    });
    let called = searched.is_some() || log.entries().iter().any(|o| o.call_id() == id);
    if !called {
        say(
            ViolationCode::CallUnknown,
            format!("`call:{id}` is not one of your tool calls"),
        );
        return Vec::new();
    }
    if kind == ConclusionKind::NegativeEvidence {
        match searched {
            Some(0) => {}
            Some(n) => say(
                ViolationCode::NegativeNotEmpty,
                format!("`call:{id}` found {n} matches: it is not evidence that nothing was found"),
            ),
            None => say(
                ViolationCode::NegativeNotEmpty,
                format!("`call:{id}` was not a search: negative evidence cites the search that found nothing"),
            ),
        }
        return Vec::new();
    }
    let Some(files) = check.files else {
        return Vec::new();
    };
    log.shown_by_call(id)
        .into_iter()
        .filter_map(|(path, shown)| Some((files.text(&path).ok()?, Quotable::Parts(shown))))
        .collect()
}

/// Appends `text` to `out` with every run of ASCII whitespace as one space and none at the
/// ends of what is appended. Byte-wise is safe: UTF-8 continuation bytes are never ASCII.
fn normalise_into(text: &str, out: &mut String) {
    let mut pending_space = false;
    let mut start = None;
    for (i, b) in text.bytes().enumerate() {
        if b.is_ascii_whitespace() {
            if let Some(s) = start.take() {
                if pending_space {
                    out.push(' ');
                }
                out.push_str(&text[s..i]);
                pending_space = true;
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        if pending_space {
            out.push(' ');
        }
        out.push_str(&text[s..]);
    }
}

fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    normalise_into(text, &mut out);
    out
}

/// The texts between matching backtick runs (`` `a` ``, ``` ``a`b`` ```).
pub(crate) fn quotes(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let run = bytes[i..].iter().take_while(|b| **b == b'`').count();
        let start = i + run;
        let mut j = start;
        let mut closed = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let close = bytes[j..].iter().take_while(|b| **b == b'`').count();
                if close == run {
                    closed = Some(j);
                    break;
                }
                j += close;
            } else {
                j += 1;
            }
        }
        match closed {
            Some(end) => {
                let inner = text[start..end].trim();
                if !inner.is_empty() {
                    out.push(inner);
                }
                i = end + run;
            }
            None => break,
        }
    }
    out
}

/// Symbols a claim names outside its quotes: code-like tokens (`snake_case`, `CamelCase`,
/// `a::b`, `call()`).
fn symbols(claim: &str) -> Vec<&str> {
    static SYMBOL: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = SYMBOL.get_or_init(|| {
        regex::Regex::new(concat!(
            r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+",
            r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b",
            r"|\b[a-z]+(?:[A-Z][a-z0-9]*)+\b",
            r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b",
            r"|\b[A-Za-z_][A-Za-z0-9_]*\(\)",
        ))
        .expect("static regex")
    });
    // The claim with its quotes, paths and file names blanked out, byte for byte, so offsets
    // stay the claim's: `tests/retry_test.rs` names a file, not a symbol.
    static PATHS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let paths = PATHS.get_or_init(|| {
        regex::Regex::new(r"[^\s`\[\]()]*/[^\s`\[\]()]*|\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b")
            .expect("static regex")
    });
    let mut outside = String::with_capacity(claim.len());
    let mut inside = false;
    for c in claim.chars() {
        if c == '`' {
            inside = !inside;
        }
        if c == '`' || inside {
            outside.extend(std::iter::repeat_n(' ', c.len_utf8()));
        } else {
            outside.push(c);
        }
    }
    for m in paths.find_iter(&outside.clone()) {
        outside.replace_range(m.range(), &" ".repeat(m.len()));
    }
    let mut found: Vec<&str> = Vec::new();
    for m in re.find_iter(&outside) {
        let symbol = &claim[m.start()..m.end()];
        let symbol = symbol.trim_end_matches("()");
        if !found.contains(&symbol) {
            found.push(symbol);
        }
    }
    found
}

/// What a claim states that `lines` do not hold: each backticked quote (whitespace runs as one
/// space) and each symbol it names must occur there. A claim that states nothing checkable —
/// no quote, no symbol — is unsupported as a whole: a reread cannot confirm it. Empty when the
/// lines support it.
pub(crate) fn unsupported(claim: &str, lines: &str) -> Vec<String> {
    let quoted = quotes(claim);
    let named = symbols(claim);
    if quoted.is_empty() && named.is_empty() {
        return vec!["nothing in the claim (no quote, no symbol) can be checked".into()];
    }
    let folded = normalise(lines);
    quoted
        .into_iter()
        .filter(|q| {
            !lines.contains(q) && !folded.contains(&normalise(q)) && !redacted_in(q, &[lines])
        })
        .chain(named.into_iter().filter(|s| !lines.contains(s)))
        .map(str::to_string)
        .collect()
}

/// Whether a quote holding `[redacted]` occurs in the cited lines once they are scrubbed of
/// the process's secrets: a model quoting a line that holds a key has the key taken out of its
/// answer, and the quote is still the line's.
fn redacted_in(quote: &str, cited: &[&str]) -> bool {
    quote.contains(crate::redact::REDACTED)
        && cited
            .iter()
            .any(|c| crate::redact::scrub(c).contains(quote))
}

/// Each quote must occur in the cited lines: as written within one cited range (the fast,
/// common case), or — a quote spanning lines — with whitespace runs taken as one space across
/// all of them; a quote that fits in one line but spaces it otherwise is not verbatim.
fn check_quotes(claim: &str, cited: &[&str], line: usize, out: &mut Vec<Violation>) {
    let mut joined: Option<String> = None;
    for quote in quotes(claim) {
        if cited.iter().any(|c| c.contains(quote)) || redacted_in(quote, cited) {
            continue;
        }
        let all = joined.get_or_insert_with(|| {
            let mut text = String::new();
            for c in cited {
                if !text.is_empty() {
                    text.push(' ');
                }
                normalise_into(c, &mut text);
            }
            text
        });
        let folded = normalise(quote);
        // Within one line a quote is byte-exact; only one spanning lines may join them with
        // a space (and whitespace runs at the joins taken as one).
        let within_a_line = cited
            .iter()
            .flat_map(|c| c.lines())
            .any(|l| normalise(l).contains(&folded));
        if within_a_line {
            let shown: String = quote.chars().take(60).collect();
            out.push(Violation::new(
                ViolationCode::QuoteNotFound,
                line,
                format!("`{shown}` is not verbatim: the cited line spaces it otherwise; quote it exactly, whitespace and all"),
            ));
            continue;
        }
        if !all.contains(&folded) {
            let shown: String = quote.chars().take(60).collect();
            out.push(Violation::new(
                ViolationCode::QuoteNotFound,
                line,
                format!("`{shown}` does not occur in the cited lines: quote them exactly or cite where it stands"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_text_lines() {
        let f = FileText::new("a\nb\nc\n".into());
        assert_eq!(f.line_count(), 3);
        assert_eq!(f.lines(2, 3), "b\nc\n");
        assert_eq!(f.lines(3, 4), "");
        assert_eq!(FileText::new("x".into()).line_count(), 1);
        assert_eq!(FileText::new(String::new()).line_count(), 0);
    }

    #[test]
    fn a_claim_is_supported_only_by_lines_holding_what_it_states() {
        let lines =
            "pub fn next_delay(&self, attempt: u32) -> Duration {\n    base.saturating_mul(2)\n";
        assert!(unsupported("`next_delay` doubles via `saturating_mul(2)`", lines).is_empty());
        assert!(
            unsupported("RetryPolicy::next_delay calls saturating_mul", lines)
                .contains(&"RetryPolicy::next_delay".to_string())
        );
        assert_eq!(
            unsupported("`next_delay` uses `checked_pow`", lines),
            vec!["checked_pow"]
        );
        assert_eq!(unsupported("it doubles the delay", lines).len(), 1);
        assert!(unsupported("`nextDelay` is here", "nextDelay()").is_empty());
    }

    /// Records whose ids read as line ranges, or are not numbers at all, are cited and
    /// checked as the records they are.
    #[test]
    fn records_with_numeric_ids_are_cited_as_records() {
        let mut log = ObservationLog::default();
        log.record([
            Observation::record("ticket", "12", "[open] the login page times out").made_by("sa1.1"),
            Observation::record("order", "2024-001", "paid in full").made_by("sa1.2"),
            Observation::record("ticket", "1a", "[closed] fixed").made_by("sa1.3"),
            Observation::record("ticket", "007", "[open] spelled with zeros").made_by("sa1.4"),
        ]);
        let files = MemoryFiles::new();
        let check = Check {
            files: Some(&files),
            observations: Some(&log),
            docs: None,
        };
        let text = "## Settled conclusions
- T12: `the login page times out` [ticket:12]
- The order was `paid in full` [order:2024-001]
- 1a is `[closed] fixed` [ticket:1a]
- Ticket 007 is `spelled with zeros` [ticket:007]
## Open items
## Hard constraints
- none
";
        let parsed = validate(text, &check);
        assert!(parsed.violations.is_empty(), "{:?}", parsed.violations);
        let record = |id: &str| {
            vec![SourceId::Record {
                kind: "ticket".into(),
                id: id.into(),
            }]
        };
        assert_eq!(parsed.handoff.settled_conclusions[0].sources, record("12"));
        // Kept as the tool spelled it, not as the line number it also reads as.
        assert_eq!(parsed.handoff.settled_conclusions[3].sources, record("007"));
        let codes = |text: &str| -> Vec<&'static str> {
            validate(text, &check)
                .violations
                .iter()
                .map(|v| v.code.as_str())
                .collect()
        };
        let wrong = "## Settled conclusions
- T13 is open [ticket:13]
- T12 is `closed` [ticket:12]
## Open items
## Hard constraints
- none
";
        assert_eq!(codes(wrong), ["record_not_observed", "quote_not_found"]);
    }

    #[test]
    fn quotes_pair_backtick_runs() {
        assert_eq!(quotes("a `b` c ``d`e`` `f"), vec!["b", "d`e"]);
        assert!(quotes("no quotes").is_empty());
    }
}
