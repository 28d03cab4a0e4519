//! The offline model as a researcher: it searches the corpus for its sub-question's words,
//! reads the best-ranked chunks, and settles conclusions made of verbatim sentences of what it
//! read, each citing its chunk — or, when no sentence holds enough of the question's rarer
//! words, hands off negative evidence naming every query it ran.

use std::collections::{BTreeMap, HashSet};

use serde_json::json;

use super::{call, not_issued, succeeded, Exchange, Task};
use crate::handoff::{Conclusion, ConclusionKind, Handoff, OpenItem};
use crate::source::SourceId;
use crate::transcript::ToolCall;

/// Chunks read for one sub-question.
const READS: usize = 5;
/// Chunks read of one document.
const READS_PER_DOC: usize = 2;
/// Most conclusions one researcher settles.
const MOST_CONCLUSIONS: usize = 2;
/// A sentence must hold this share of the question's word weight to answer it.
const MIN_COVERAGE: f64 = 0.25;
/// The share needed when the question names a thing no chunk mentions.
const NAMED_UNSEEN_COVERAGE: f64 = 0.5;
/// ... and score at least this share of the best sentence.
const RELATIVE: f64 = 0.8;

/// The queries a researcher runs: its sub-question's words, then (for a sub-question of a
/// larger question) those words with the whole question's context — its words that no other
/// researcher's sub-question holds, so no two researchers run the same query.
fn queries(task: &Task) -> Vec<String> {
    let mut out = vec![content_words(&task.question).join(" ")];
    if let Some(whole) = &task.whole {
        let theirs: Vec<String> = task.others.iter().flat_map(|o| content_words(o)).collect();
        let mut words = content_words(&task.question);
        for w in content_words(whole) {
            if !words.contains(&w) && !theirs.contains(&w) {
                words.push(w);
            }
        }
        out.push(words.join(" "));
    }
    out.retain(|q| !q.is_empty());
    out.dedup();
    out
}

/// A text's words worth searching for: not stop words, not single letters.
fn content_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-') {
        let w = w.trim_matches('-');
        let lower = w.to_lowercase();
        if lower.chars().count() < 2 || crate::text::is_stop_word(&lower) || out.contains(&lower) {
            continue;
        }
        out.push(lower);
    }
    out
}

/// One search hit as the search tool printed it.
struct Listed {
    id: String,
    rank: usize,
}

/// The chunk ids a search printed, in rank order, and its term counts.
fn parse_search(content: &str) -> (Vec<Listed>, BTreeMap<String, u64>, u64) {
    let mut hits = Vec::new();
    let mut counts = BTreeMap::new();
    let mut total = 0;
    for line in content.lines() {
        if let Some(rest) = line.strip_prefix(crate::corpus::TERMS_LINE) {
            if let Some((n, list)) = rest.split_once("): ") {
                total = n.parse().unwrap_or(0);
                for item in list.split(", ") {
                    if let Some((t, c)) = item.rsplit_once(' ') {
                        counts.insert(t.to_string(), c.parse().unwrap_or(0));
                    }
                }
            }
            continue;
        }
        let Some((num, rest)) = line.split_once(". doc:") else {
            continue;
        };
        let Ok(rank) = num.trim().parse::<usize>() else {
            continue;
        };
        let id = rest.split(" — ").next().unwrap_or(rest).trim().to_string();
        hits.push(Listed { id, rank });
    }
    (hits, counts, total)
}

/// The chunks to read: the best of every search, by their best rank, at most
/// [`READS_PER_DOC`] of a document.
fn to_read(searches: &[&Exchange<'_>]) -> Vec<String> {
    let mut best: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (q, ex) in searches.iter().enumerate() {
        for hit in parse_search(ex.content).0 {
            let e = best.entry(hit.id).or_insert((hit.rank, q));
            if hit.rank < e.0 {
                *e = (hit.rank, q);
            }
        }
    }
    let mut ranked: Vec<(String, (usize, usize))> = best.into_iter().collect();
    ranked.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    let mut per_doc: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (id, _) in ranked {
        let doc = id.split('#').next().unwrap_or(&id).to_string();
        let n = per_doc.entry(doc).or_default();
        if *n < READS_PER_DOC && out.len() < READS {
            *n += 1;
            out.push(id);
        }
    }
    out
}

/// The researcher's next turn: search, read, hand off.
pub(super) fn turn(task: &Task, done: &[Exchange<'_>]) -> (String, Vec<ToolCall>) {
    let searches: Vec<ToolCall> = queries(task)
        .into_iter()
        .enumerate()
        .map(|(i, q)| call(i, "search", json!({"query": q, "limit": 8})))
        .collect();
    let pending = not_issued(done, &searches);
    if !pending.is_empty() {
        return (
            "Searching the corpus for the question's words.".into(),
            pending,
        );
    }
    let ran = succeeded(done, &searches);
    let reads: Vec<ToolCall> = to_read(&ran)
        .into_iter()
        .enumerate()
        .map(|(i, id)| call(20 + i, "read", json!({"id": format!("doc:{id}")})))
        .collect();
    let pending = not_issued(done, &reads);
    if !pending.is_empty() {
        return ("Reading the best-ranked passages.".into(), pending);
    }
    let read = succeeded(done, &reads);
    let handoff = conclude(task, &ran, &read);
    if !handoff.settled_conclusions.is_empty() {
        return (handoff.to_markdown(), Vec::new());
    }
    // Nothing read answers: the absence is tested by searches that must find nothing.
    let checks: Vec<ToolCall> = absence_queries(task, &Counts::of(&ran))
        .into_iter()
        .enumerate()
        .map(|(i, q)| call(40 + i, "search", json!({"query": q, "limit": 3})))
        .collect();
    let pending = not_issued(done, &checks);
    if !pending.is_empty() {
        return ("Checking what the corpus does not hold.".into(), pending);
    }
    let checked = succeeded(done, &checks);
    let mut handoff = handoff;
    absent(task, &ran, &checked, &mut handoff);
    (handoff.to_markdown(), Vec::new())
}

/// A read's chunk: its id and text lines (the header line dropped).
fn read_chunk<'a>(ex: &Exchange<'a>) -> Option<(String, Vec<&'a str>)> {
    let mut lines = ex.content.lines();
    let header = lines.next()?.strip_prefix("[doc:")?;
    let id = header
        .split(" — ")
        .next()?
        .trim_end_matches(']')
        .to_string();
    Some((id, lines.collect()))
}

/// How many chunks hold each stemmed word the searches printed, and how many chunks there
/// are (at least 1).
struct Counts {
    held: BTreeMap<String, u64>,
    chunks: u64,
}

impl Counts {
    fn of(searches: &[&Exchange<'_>]) -> Counts {
        let mut held = BTreeMap::new();
        let mut chunks = 1u64;
        for ex in searches {
            let (_, c, n) = parse_search(ex.content);
            held.extend(c);
            chunks = chunks.max(n);
        }
        Counts { held, chunks }
    }

    /// Whether a word's stem is in no chunk (a word no search counted is not known unseen).
    fn unseen(&self, stem: &str) -> bool {
        self.held.get(stem).copied() == Some(0)
    }
}

/// Each question word's weight: how rare it is among the corpus's chunks (the search tool's
/// counts), by its stem.
fn weights(task: &Task, counts: &Counts, foreign: bool) -> Vec<(String, f64)> {
    let total = counts.chunks;
    let mut out: Vec<(String, f64)> = Vec::new();
    for (word, named) in question_words(&task.question) {
        for stem in crate::corpus::stems(&word) {
            if out.iter().any(|(s, _)| *s == stem) {
                continue;
            }
            let df = counts.held.get(&stem).copied().unwrap_or(0);
            // A word in no chunk: a paraphrase the corpus words otherwise is left out; a thing
            // the question names (an acronym, a name, an identifier) that the corpus never
            // mentions counts fully against every passage.
            let w = match (df, named) {
                (0, false) if !foreign => 0.0,
                _ => ((total as f64 + 1.0) / (df as f64 + 1.0)).ln().max(0.1),
            };
            out.push((stem, w));
        }
    }
    out
}

/// The question's content words, each with whether it names a thing: an acronym or a number,
/// a word capitalised inside a sentence, or one holding `_`, `::` or `!`.
fn question_words(question: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for sentence in crate::text::sentences(question) {
        for (i, raw) in sentence.split_whitespace().enumerate() {
            let w = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '!');
            let named = (w.len() >= 2
                && w.chars()
                    .filter(|c| c.is_alphabetic())
                    .all(char::is_uppercase))
                || (i > 0 && w.chars().next().is_some_and(char::is_uppercase))
                || w.contains(['_', '!'])
                || w.contains("::");
            for word in content_words(w) {
                if !out.iter().any(|(o, _)| *o == word) {
                    out.push((word, named));
                }
            }
        }
    }
    out
}

/// Whether the question is foreign to the corpus: it names a thing (see [`question_words`])
/// that no chunk holds, or a third of its words are in no chunk.
fn foreign(task: &Task, counts: &Counts) -> bool {
    let words = question_words(&task.question);
    let unseen = |w: &str| crate::corpus::stems(w).iter().any(|s| counts.unseen(s));
    let named = words.iter().any(|(w, named)| *named && unseen(w));
    let share = words.iter().filter(|(w, _)| unseen(w)).count() * 3 >= words.len().max(1);
    named || share
}

/// The searches that test an absence: every word the question names and the corpus never
/// mentions, alone; else the question's three rarest words, all required.
fn absence_queries(task: &Task, counts: &Counts) -> Vec<String> {
    let weights = weights(task, counts, true);
    let unseen: Vec<String> = weights
        .iter()
        .filter(|(s, w)| *w > 0.0 && counts.unseen(s))
        .map(|(s, _)| format!("+{s}"))
        .collect();
    if !unseen.is_empty() {
        return unseen;
    }
    let mut ranked: Vec<&(String, f64)> = weights.iter().filter(|(_, w)| *w > 0.0).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rare: Vec<String> = ranked
        .iter()
        .take(3)
        .map(|(s, _)| format!("+{s}"))
        .collect();
    if rare.is_empty() {
        Vec::new()
    } else {
        vec![rare.join(" ")]
    }
}

/// The handoff: the best sentences read, or negative evidence.
fn conclude(task: &Task, searches: &[&Exchange<'_>], reads: &[&Exchange<'_>]) -> Handoff {
    // A question foreign to the corpus counts its unseen words against every passage.
    let counts = Counts::of(searches);
    let foreign = foreign(task, &counts);
    let weights = weights(task, &counts, foreign);
    let whole: f64 = weights.iter().map(|(_, w)| w).sum();
    // (score, chunk id, sentence)
    let mut scored: Vec<(f64, String, String)> = Vec::new();
    for ex in reads {
        let Some((id, lines)) = read_chunk(ex) else {
            continue;
        };
        // The chunk's headings (the header's path) count half for every sentence under them.
        let heading: HashSet<String> = ex
            .content
            .lines()
            .next()
            .and_then(|h| h.split_once(" — "))
            .map(|(_, h)| crate::corpus::stems(h).into_iter().collect())
            .unwrap_or_default();
        for line in lines {
            if crate::corpus::is_heading_line(line) || line.starts_with("```") {
                continue;
            }
            for sentence in crate::text::sentences(line) {
                let stems: HashSet<String> = crate::corpus::stems(sentence).into_iter().collect();
                let score: f64 = weights
                    .iter()
                    .map(|(s, w)| {
                        if stems.contains(s) {
                            *w
                        } else if heading.contains(s) {
                            w / 2.0
                        } else {
                            0.0
                        }
                    })
                    .sum();
                // A sentence with an odd number of backticks cannot be written as its own
                // quotes.
                let ticks = sentence.matches('`').count();
                if ticks % 2 == 1 || sentence.split_whitespace().count() < 4 {
                    continue;
                }
                scored.push((score, id.clone(), sentence.trim().to_string()));
            }
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let best = scored.first().map_or(0.0, |s| s.0);
    let mut handoff = Handoff::default();
    // A thing the question names that the corpus never mentions raises the bar.
    let bar = if foreign {
        NAMED_UNSEEN_COVERAGE
    } else {
        MIN_COVERAGE
    };
    if whole > 0.0 && best / whole >= bar {
        for (score, id, sentence) in &scored {
            if handoff.settled_conclusions.len() == MOST_CONCLUSIONS || *score < RELATIVE * best {
                break;
            }
            let Ok(source) = SourceId::parse(&format!("doc:{id}")) else {
                continue;
            };
            if handoff
                .settled_conclusions
                .iter()
                .any(|c| c.sources.contains(&source))
            {
                continue;
            }
            handoff.settled_conclusions.push(Conclusion {
                // Quoted whole; one holding inline code (`x`) as it is, its code spans being
                // the quotes checked.
                claim: if sentence.contains('`') {
                    sentence.clone()
                } else {
                    format!("`{sentence}`")
                },
                sources: vec![source],
                kind: ConclusionKind::Finding,
            });
        }
    }
    if handoff.settled_conclusions.is_empty() {
        if let Some((_, id, _)) = scored.first() {
            handoff.open_items.push(OpenItem {
                item: format!(
                    "The nearest passage read, doc:{id}, does not answer: {}",
                    task.question
                ),
                stuck_on: "it holds too little of the question's rarer words".into(),
            });
        }
    }
    handoff
}

/// Negative evidence: the searches that found nothing (cited), beside the queries run, over
/// how many documents.
fn absent(
    task: &Task,
    searches: &[&Exchange<'_>],
    checks: &[&Exchange<'_>],
    handoff: &mut Handoff,
) {
    let documents = searches
        .iter()
        .filter_map(|e| {
            e.content
                .split_once(" document(s) searched")
                .and_then(|(a, _)| {
                    a.rsplit(' ')
                        .next()?
                        .trim_start_matches('(')
                        .parse::<usize>()
                        .ok()
                })
        })
        .max()
        .unwrap_or(0);
    let empty: Vec<&&Exchange<'_>> = checks
        .iter()
        .filter(|e| e.content.starts_with("0 chunk(s)"))
        .collect();
    let quoted = |e: &&Exchange<'_>| {
        e.arguments
            .get("query")
            .and_then(|q| q.as_str())
            .map(|q| format!("\"{q}\""))
    };
    if empty.is_empty() {
        handoff.open_items.push(OpenItem {
            item: format!("No passage read answers: {}", task.question),
            stuck_on: format!(
                "the searches {} found passages that share only some of its words",
                searches
                    .iter()
                    .chain(checks)
                    .filter_map(quoted)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
        return;
    }
    let nothing: Vec<String> = empty.iter().filter_map(|e| quoted(e)).collect();
    let near: Vec<String> = searches.iter().filter_map(quoted).collect();
    handoff.settled_conclusions.push(Conclusion {
        claim: format!(
            "no passage in this corpus matched {} ({documents} documents searched); the nearest passages, found by {}, do not answer the question",
            nothing.join(", "),
            near.join(", ")
        ),
        sources: empty
            .iter()
            .map(|e| SourceId::Record {
                kind: "call".into(),
                id: e.id.to_string(),
            })
            .collect(),
        kind: ConclusionKind::NegativeEvidence,
    });
}
