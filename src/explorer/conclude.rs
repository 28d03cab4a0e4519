//! Writing the handoff: one conclusion per place read (or call site followed), citing only
//! lines the explorer's own tool calls showed it; negative evidence for terms found nowhere.

use crate::handoff::{Conclusion, ConclusionKind, Handoff, OpenItem};
use crate::source::{prose_list, prose_path, shadowed, SourceId};

use super::follow::CallSite;
use super::rank::{self, Candidate, Definition};
use super::survey::Survey;
use super::{Exchange, Task};

/// The open item of a scope that holds no answer; the lead merges these into one item whose
/// reasons name each scope.
const NOTHING_HERE: &str = "Nothing answers the question in these scopes";

/// A read longer than this is cited as its first line plus the lines around the hit.
const LONG_BLOCK: u32 = 120;

pub(super) fn term_labels(survey: &Survey, indices: &[usize]) -> String {
    indices
        .iter()
        .map(|t| survey.terms[*t].label.clone())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A verbatim piece of a line to quote in backticks: the line itself, or where it holds
/// backticks, control characters (a bare carriage return) or invisible ones of its own, its
/// longest piece free of them. At most 100 characters.
fn short(text: &str) -> String {
    let piece = text
        .split(|c: char| {
            c == '`' || (c.is_control() && c != '\t') || crate::source::is_invisible(c)
        })
        .map(str::trim)
        .max_by_key(|p| p.len())
        .unwrap_or("");
    let mut out: String = piece.chars().take(100).collect();
    while out.ends_with('\\') {
        out.pop();
    }
    out.trim_end().to_string()
}

fn quoted(text: &str) -> String {
    let piece = short(text);
    if piece.is_empty() {
        String::new()
    } else {
        format!(": `{piece}`")
    }
}

pub(super) fn file_source(path: &str, start: u32, end: u32) -> SourceId {
    SourceId::File {
        path: path.to_string(),
        lines: Some((start, end.max(start))),
    }
}

/// The numbered lines of a read of `path` that shows `line`.
pub(super) fn read_lines(
    reads: &[&Exchange<'_>],
    path: &str,
    line: u32,
) -> Option<Vec<(u32, String)>> {
    reads.iter().find_map(|r| {
        let (read_path, lines) = rank::parse_read(r.content)?;
        let covers = lines.first()?.0 <= line && lines.last()?.0 >= line;
        (read_path == path && covers).then_some(lines)
    })
}

/// The definition at `line`, or the nearest one above it whose block reaches it: its index in
/// `lines`, what it defines, and the last line of its block (as far as was read).
pub(super) fn enclosing(lines: &[(u32, String)], line: u32) -> Option<(usize, Definition, u32)> {
    let at = lines.iter().position(|l| l.0 == line)?;
    (0..=at).rev().find_map(|i| {
        let def = rank::definition(&lines[i].1)?;
        let end = rank::block_end(lines, i);
        (end >= line).then_some((i, def, end))
    })
}

/// Sources for a hit inside a block: the whole block, or for a long one its first line and
/// the lines around the hit.
fn block_sources(path: &str, start: u32, end: u32, hit: u32) -> Vec<SourceId> {
    if end - start > LONG_BLOCK {
        vec![
            file_source(path, start, start),
            file_source(path, hit.saturating_sub(3).max(start), (hit + 3).min(end)),
        ]
    } else {
        vec![file_source(path, start, end)]
    }
}

fn around(path: &str, lines: &[(u32, String)], hit: u32) -> Option<Vec<SourceId>> {
    let first = lines.first()?.0;
    let last = lines.last()?.0;
    Some(vec![file_source(
        path,
        hit.saturating_sub(3).max(first),
        (hit + 3).min(last),
    )])
}

/// The question's terms that occur in the cited lines, as labels.
fn mentioned(survey: &Survey, lines: &[(u32, String)], sources: &[SourceId]) -> String {
    let cited: Vec<&str> = lines
        .iter()
        .filter(|(n, _)| {
            sources
                .iter()
                .filter_map(SourceId::file_lines)
                .any(|(_, a, b)| *n >= a && *n <= b)
        })
        .map(|(_, text)| text.as_str())
        .collect();
    let terms: Vec<usize> = (0..survey.terms.len())
        .filter(|t| survey.weights[*t] > 0.0)
        .filter(|t| cited.iter().any(|line| survey.compiled[*t].is_match(line)))
        .collect();
    term_labels(survey, &terms)
}

/// One conclusion about one place, citing only lines that were read (or the grep hit line).
fn conclude(survey: &Survey, place: &Candidate, reads: &[&Exchange<'_>]) -> Option<Conclusion> {
    let Some(lines) = read_lines(reads, &place.path, place.line) else {
        // Never read: cite the one line grep showed.
        return Some(Conclusion {
            claim: format!(
                "{} line {} mentions {}",
                prose_path(&place.path),
                place.line,
                term_labels(survey, &place.terms)
            ),
            sources: vec![file_source(&place.path, place.line, place.line)],
            kind: ConclusionKind::Finding,
        });
    };
    let hit_index = lines.iter().position(|l| l.0 == place.line)?;
    let hit_text = quoted(&lines[hit_index].1);
    let (claim, sources) = match enclosing(&lines, place.line) {
        Some((i, def, end)) if i == hit_index => (
            format!(
                "{} defines `{}` ({}) at line {}{hit_text}",
                prose_path(&place.path),
                def.shown,
                def.keyword,
                lines[i].0
            ),
            vec![file_source(&place.path, lines[i].0, end)],
        ),
        Some((i, def, end)) => (
            format!(
                "In `{}` ({} in {}), line {}{hit_text}",
                def.shown,
                def.keyword,
                prose_path(&place.path),
                place.line
            ),
            block_sources(&place.path, lines[i].0, end, place.line),
        ),
        None => (
            format!("{} line {}{hit_text}", prose_path(&place.path), place.line),
            around(&place.path, &lines, place.line)?,
        ),
    };
    Some(Conclusion {
        claim: with_mentions(claim, &mentioned(survey, &lines, &sources)),
        sources,
        kind: ConclusionKind::Finding,
    })
}

/// One conclusion about a call site: who calls the place, cited where it does, and which of
/// the question's terms the cited lines hold (as a place's claim says).
fn conclude_call(survey: &Survey, site: &CallSite, reads: &[&Exchange<'_>]) -> Option<Conclusion> {
    let lines = read_lines(reads, &site.path, site.line)?;
    let hit_index = lines.iter().position(|l| l.0 == site.line)?;
    let hit_text = quoted(&lines[hit_index].1);
    let (claim, sources) = match enclosing(&lines, site.line) {
        Some((i, def, end)) if i != hit_index => (
            format!(
                "`{}` ({} in {}) calls `{}` at line {}{hit_text}",
                def.shown,
                def.keyword,
                prose_path(&site.path),
                site.callee,
                site.line
            ),
            block_sources(&site.path, lines[i].0, end, site.line),
        ),
        _ => (
            format!(
                "{} line {} calls `{}`{hit_text}",
                prose_path(&site.path),
                site.line,
                site.callee
            ),
            around(&site.path, &lines, site.line)?,
        ),
    };
    Some(Conclusion {
        claim: with_mentions(claim, &mentioned(survey, &lines, &sources)),
        sources,
        kind: ConclusionKind::Finding,
    })
}

/// A claim followed by the question's terms its cited lines mention, when there are any.
fn with_mentions(claim: String, terms: &str) -> String {
    if terms.is_empty() {
        claim
    } else {
        format!("{claim} — the cited lines mention {terms}")
    }
}

/// A claim whose every backticked quote occurs, byte for byte, in the lines it cites as the
/// explorer's reads showed them: a quote that does not (a label the explorer composed) loses
/// its backticks, so nothing the explorer quotes is missing from the file.
fn verbatim(mut c: Conclusion, reads: &[&Exchange<'_>]) -> Conclusion {
    let cited: Vec<String> = c
        .sources
        .iter()
        .filter_map(SourceId::file_lines)
        .filter_map(|(path, a, b)| {
            let lines = read_lines(reads, path, a)?;
            Some(
                lines
                    .iter()
                    .filter(|(n, _)| (a..=b).contains(n))
                    .map(|(_, text)| text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        })
        .collect();
    let absent: Vec<String> = crate::handoff::quotes(&c.claim)
        .into_iter()
        .filter(|q| !cited.iter().any(|text| text.contains(q)))
        .map(str::to_string)
        .collect();
    for quote in absent {
        c.claim = c.claim.replacen(&format!("`{quote}`"), &quote, 1);
    }
    c
}

pub(super) fn write_handoff(
    task: &Task,
    survey: &Survey,
    picks: &[Candidate],
    sites: &[CallSite],
    reads: &[&Exchange<'_>],
) -> Handoff {
    let scope = prose_list(&task.scope);
    let mut handoff = Handoff::default();
    let mut add = |c: Conclusion| {
        if !handoff
            .settled_conclusions
            .iter()
            .any(|h| h.sources == c.sources)
        {
            handoff.settled_conclusions.push(c);
        }
    };
    for place in picks {
        if let Some(c) = conclude(survey, place, reads) {
            add(verbatim(c, reads));
        }
    }
    for site in sites {
        // A call inside a place already settled says so in that place's claim.
        let covering = handoff.settled_conclusions.iter_mut().find(|c| {
            c.sources
                .iter()
                .filter_map(SourceId::file_lines)
                .any(|(path, a, b)| path == site.path && site.line >= a && site.line <= b)
        });
        match covering {
            Some(c) => c.claim.push_str(&format!(
                "; it calls `{}` at line {}",
                site.callee, site.line
            )),
            None => {
                if let Some(c) = conclude_call(survey, site, reads) {
                    handoff.settled_conclusions.push(verbatim(c, reads));
                }
            }
        }
    }
    // Terms searched and found nowhere — but not one whose words a term that was found spells
    // out (`"retry delay"` is not absent where `retry delay` occurs).
    let found: Vec<&str> = (0..survey.terms.len())
        .filter(|t| !survey.counts[*t].is_empty())
        .map(|t| survey.terms[t].pattern.as_str())
        .collect();
    let absent: Vec<usize> = (0..survey.terms.len())
        .filter(|_| survey.files_searched > 0)
        .filter(|t| survey.counts[*t].is_empty() && survey.count_calls[*t].is_some())
        .filter(|t| !shadowed(&survey.terms[*t].pattern, &found))
        .collect();
    if !absent.is_empty() {
        let sources = absent
            .iter()
            .filter_map(|t| survey.count_calls[*t].clone())
            .map(|id| SourceId::Record {
                kind: "call".into(),
                id,
            })
            .collect();
        handoff.settled_conclusions.push(Conclusion {
            claim: format!(
                "no line in {scope} matches {} (case-insensitive grep over {} files{})",
                term_labels(survey, &absent),
                survey.files_searched,
                match (survey.files_skipped, survey.not_searched) {
                    (0, 0) => String::new(),
                    (skipped, 0) => format!("; {skipped} could not be searched"),
                    (0, left) => format!("; {left} hidden or ignored entries or links not searched"),
                    (skipped, left) => format!(
                        "; {skipped} could not be searched, {left} hidden or ignored entries or links not searched"
                    ),
                }
            ),
            sources,
            kind: ConclusionKind::NegativeEvidence,
        });
    }
    if let Some(examples) = survey.examples_absent() {
        handoff.open_items.push(OpenItem {
            item: NOTHING_HERE.into(),
            stuck_on: format!(
                "{scope}: the question's example ({}) occurs nowhere there",
                term_labels(survey, &examples)
            ),
        });
    } else if !survey.counted() || survey.files_searched == 0 {
        // No search of the scope read a file: nothing is known about it, least of all an
        // absence.
        handoff.open_items.push(OpenItem {
            item: format!("{scope} was not searched"),
            stuck_on: if survey.counted() {
                "no file in it could be searched (binary, over 4 MiB or unreadable)".into()
            } else {
                "every search of it failed (see the tool errors)".into()
            },
        });
    } else if picks.is_empty() {
        handoff.open_items.push(OpenItem {
            item: NOTHING_HERE.into(),
            stuck_on: if survey.present_terms().is_empty() {
                format!("{scope}: none of the question's terms occur there")
            } else {
                format!(
                    "{scope}: only part of the question occurs there ({}), too little to settle a location",
                    term_labels(survey, &survey.present_terms())
                )
            },
        });
    } else {
        handoff.open_items.push(OpenItem {
            item: "Uses beyond the places read and their first callers were not traced".into(),
            stuck_on: "the offline explorer reads only its best-ranked places".into(),
        });
    }
    handoff
}
