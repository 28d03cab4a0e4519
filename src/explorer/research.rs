//! The offline model as a researcher: it searches the corpus for its sub-question's words (and
//! the code names it holds, alone), reads the best-ranked chunks and the openings of the best
//! documents, and settles one conclusion per document made of its best verbatim sentences,
//! citing the chunks they are in. When a sentence read defines a term by the question's words,
//! it searches again in that term and answers in it. When no document's sentences hold enough
//! of the sub-question's rarer words, it hands off negative evidence naming every query it ran.
//! The whole question's other words weigh in as context.

use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;

use serde_json::json;

use super::asking::{
    absence_queries, content_words, definition, foreign, holds_number, parse_search, queries,
    weights, Counts, Weight, NUMBER,
};
use super::{call, not_issued, succeeded, Exchange, Task};
use crate::handoff::{Conclusion, ConclusionKind, Handoff, OpenItem};
use crate::source::SourceId;
use crate::transcript::ToolCall;

/// Chunks read for one sub-question.
const READS: usize = 8;
/// Chunks read of one document.
const READS_PER_DOC: usize = 3;
/// Chunks read of a search in the corpus's own term for what the question describes.
const READS_AGAIN: usize = 4;
/// Documents whose opening chunks are read besides the best-ranked chunks.
const OPENINGS: usize = 2;
/// Chunks after the first read of a document's opening.
const OPENING_CHUNKS: u64 = 2;
/// Most sentences a conclusion quotes of its document.
const SENTENCES: usize = 4;
/// Most sentences a conclusion quotes, with the neighbours of those.
const WITH_NEIGHBOURS: usize = 6;
/// ... each holding this share of the best one's score.
const ALSO: f64 = 0.5;
/// Most conclusions one researcher settles.
const MOST_CONCLUSIONS: usize = 2;
/// A sentence must hold this share of the sub-question's own word weight to answer it.
const MIN_COVERAGE: f64 = 0.25;
/// ... or, for a document, the sentences it quotes together this many times that share.
const TOGETHER: f64 = 2.0;
/// The share needed when the question names a thing no chunk mentions.
const NAMED_UNSEEN_COVERAGE: f64 = 0.5;
/// ... and score at least this share of the best sentence.
const RELATIVE: f64 = 0.8;

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

/// A handoff with one open item, when the run took a tool the researcher needs (a constraint,
/// or a spent budget) before it could search or read.
fn without(tool: &str, task: &Task, found: &[String]) -> (String, Vec<ToolCall>) {
    let stuck = if found.is_empty() {
        format!("the run's constraints or budget leave the researcher no {tool}")
    } else {
        format!(
            "the run's constraints or budget leave the researcher no {tool}; its searches ranked doc:{} best, unread",
            found.join(", doc:")
        )
    };
    let handoff = Handoff {
        open_items: vec![OpenItem {
            item: format!("No passage was read for: {}", task.question),
            stuck_on: stuck,
        }],
        ..Handoff::default()
    };
    (handoff.to_markdown(), Vec::new())
}

/// The researcher's next turn: search, read, hand off. `may_call` says which tools the run
/// left it (a constraint may take one; a spent budget takes all): calls it may not make are
/// not asked for, and it hands off from what it did.
pub(super) fn turn(
    task: &Task,
    done: &[Exchange<'_>],
    may_call: &dyn Fn(&str) -> bool,
) -> (String, Vec<ToolCall>) {
    let ask = |pending: Vec<ToolCall>, tool: &str, say: &str| asked(may_call, pending, tool, say);
    let searches: Vec<ToolCall> = queries(task)
        .into_iter()
        .enumerate()
        .map(|(i, q)| call(i, "search", json!({"query": q, "limit": 8})))
        .collect();
    if searches.is_empty() {
        let handoff = Handoff {
            open_items: vec![OpenItem {
                item: format!("Nothing to search for: {}", task.question),
                stuck_on: "the question holds no word worth searching for (only question words and common words)".into(),
            }],
            ..Handoff::default()
        };
        return (handoff.to_markdown(), Vec::new());
    }
    let searching = "Searching the corpus for the question's words.";
    if let Some(turn) = ask(not_issued(done, &searches), "search", searching) {
        return turn;
    }
    let ran = succeeded(done, &searches);
    if ran.is_empty() {
        return without("search", task, &[]);
    }
    let chunks = to_read(&ran);
    let reads = reads_of(&chunks);
    // (A search leaves out the documents the run forbids reading: none of these is one.)
    let reading = "Reading the best-ranked passages.";
    if let Some(turn) = ask(not_issued(done, &reads), "read", reading) {
        return turn;
    }
    let read = succeeded(done, &reads);
    if read.is_empty() && !chunks.is_empty() {
        return without("read", task, &chunks);
    }
    let reading = Reading::of(task, &ran, &read);
    let mut handoff = conclude(task, &reading);
    if !handoff.settled_conclusions.is_empty() {
        let first = Found {
            searches: &ran,
            reads: &read,
            chunks: &chunks,
        };
        return match redefined(task, &ran, &reading) {
            Some((again, search)) => in_own_term(&again, search, done, may_call, &first, handoff),
            None => (handoff.to_markdown(), Vec::new()),
        };
    }
    // Nothing read answers: the absence is tested by searches that must find nothing.
    let checks: Vec<ToolCall> = absence_queries(task, &Counts::of(&ran))
        .into_iter()
        .enumerate()
        .map(|(i, q)| call(40 + i, "search", json!({"query": q, "limit": 3})))
        .collect();
    let checking = "Checking what the corpus does not hold.";
    if let Some(turn) = ask(not_issued(done, &checks), "search", checking) {
        return turn;
    }
    let checked = succeeded(done, &checks);
    absent(task, &ran, &checked, &mut handoff);
    (handoff.to_markdown(), Vec::new())
}

/// A turn asking for the `pending` calls of `tool`, when there are any and the run lets the
/// researcher make them.
fn asked(
    may_call: &dyn Fn(&str) -> bool,
    pending: Vec<ToolCall>,
    tool: &str,
    say: &str,
) -> Option<(String, Vec<ToolCall>)> {
    (!pending.is_empty() && may_call(tool)).then(|| (say.to_string(), pending))
}

/// What a researcher's first searches found and read.
struct Found<'x, 'a> {
    searches: &'x [&'x Exchange<'a>],
    reads: &'x [&'x Exchange<'a>],
    chunks: &'x [String],
}

/// The turns after a sentence read defined a term by the question's words: search in that
/// term, read what it found that was not read yet, and hand off the answer in it — or the
/// first answer (`handoff`) when the term finds none.
fn in_own_term(
    again: &Task,
    search: ToolCall,
    done: &[Exchange<'_>],
    may_call: &dyn Fn(&str) -> bool,
    first: &Found<'_, '_>,
    handoff: Handoff,
) -> (String, Vec<ToolCall>) {
    let ask = |pending: Vec<ToolCall>, tool: &str, say: &str| asked(may_call, pending, tool, say);
    let say = "Searching again in the corpus's own term for what the question describes.";
    if let Some(turn) = ask(
        not_issued(done, std::slice::from_ref(&search)),
        "search",
        say,
    ) {
        return turn;
    }
    let found = succeeded(done, &[search]);
    let reads: Vec<ToolCall> = to_read(&found)
        .into_iter()
        .filter(|c| !first.chunks.contains(c))
        .take(READS_AGAIN)
        .enumerate()
        .map(|(i, id)| call(60 + i, "read", json!({"id": format!("doc:{id}")})))
        .collect();
    let say = "Reading the passages found by the corpus's own term.";
    if let Some(turn) = ask(not_issued(done, &reads), "read", say) {
        return turn;
    }
    let searches: Vec<&Exchange<'_>> = first.searches.iter().chain(&found).copied().collect();
    let read: Vec<&Exchange<'_>> = first
        .reads
        .iter()
        .copied()
        .chain(succeeded(done, &reads))
        .collect();
    let mut answer = conclude(again, &Reading::of(again, &searches, &read));
    if answer.settled_conclusions.is_empty() {
        return (handoff.to_markdown(), Vec::new());
    }
    // The first answer, which holds the definition, says why the term answers: it stays,
    // after the answer in the term, when it cites a passage that answer does not.
    for first in handoff.settled_conclusions.into_iter().take(1) {
        let cited = |s: &SourceId| {
            answer
                .settled_conclusions
                .iter()
                .any(|c| c.sources.contains(s))
        };
        if !first.sources.iter().all(cited) {
            answer.settled_conclusions.push(first);
        }
    }
    (answer.to_markdown(), Vec::new())
}

/// The sub-question asked again in the corpus's own term (see [`Reading::redefined`]), and
/// the search for it; None when no sentence read defines a term by the question's words,
/// or when that search was run already.
fn redefined(task: &Task, ran: &[&Exchange<'_>], reading: &Reading) -> Option<(Task, ToolCall)> {
    let again = reading.redefined(task)?;
    let query = content_words(&again.question).join(" ");
    let search = call(50, "search", json!({"query": query, "limit": 8}));
    if ran.iter().any(|e| *e.arguments == search.arguments) {
        return None;
    }
    Some((again, search))
}

/// The reads of the chunks to read, then of the best documents' openings — a page usually
/// says what it is about first.
fn reads_of(chunks: &[String]) -> Vec<ToolCall> {
    let mut reads: Vec<ToolCall> = chunks
        .iter()
        .enumerate()
        .map(|(i, id)| call(20 + i, "read", json!({"id": format!("doc:{id}")})))
        .collect();
    let mut docs: Vec<&str> = Vec::new();
    for id in chunks {
        let doc = doc_of(id);
        if !docs.contains(&doc) && docs.len() < OPENINGS {
            docs.push(doc);
        }
    }
    reads.extend(docs.iter().enumerate().map(|(i, doc)| {
        call(
            30 + i,
            "read",
            json!({"path": doc, "start": 1, "end": 1, "around": OPENING_CHUNKS}),
        )
    }));
    reads
}

/// A chunk as a read showed it: its id, its headings and its text lines.
struct Shown<'a> {
    id: String,
    headings: &'a str,
    lines: Vec<&'a str>,
}

/// The chunks a read showed, each under its `[doc:ID — headings]` line (a span not edge to
/// edge with chunks is shown as one block under its own id).
fn read_chunks<'a>(ex: &Exchange<'a>) -> Vec<Shown<'a>> {
    let mut out: Vec<Shown<'a>> = Vec::new();
    for line in ex.content.lines() {
        if let Some(header) = line.strip_prefix("[doc:") {
            let header = header.trim_end_matches(']');
            let (id, headings) = header.split_once(" — ").unwrap_or((header, ""));
            out.push(Shown {
                id: id.to_string(),
                headings,
                lines: Vec::new(),
            });
        } else if line.starts_with("(cut at ") && line.contains(" lines: read from line ") {
            // The tool's note that it cut a long read: not the document's text.
            continue;
        } else if let Some(last) = out.last_mut() {
            last.lines.push(line);
        }
    }
    out
}

/// A sentence read, scored against the question.
struct Scored {
    /// The weight of the question words it holds.
    score: f64,
    /// ... of the sub-question's own words only.
    own: f64,
    /// Whether the sentence itself (not its headings) holds one of those.
    holds_own: bool,
    /// The question words it holds itself (indices of the weights).
    held: Vec<usize>,
    id: String,
    /// Its place among the chunk's prose sentences (`usize::MAX` for a line of code).
    at: usize,
    sentence: String,
    /// The stems of its chunk's headings and its document's path: what it is about.
    topic: Rc<HashSet<String>>,
    /// Its line in the document.
    line: u32,
}

/// The lines of a chunk or span id (`PATH#Lstart-end`); (0, 0) for none.
fn span_of(id: &str) -> (u32, u32) {
    id.rsplit_once("#L")
        .and_then(|(_, span)| {
            let (a, b) = span.split_once('-')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .unwrap_or((0, 0))
}

/// The document a chunk id is in.
fn doc_of(id: &str) -> &str {
    id.split('#').next().unwrap_or(id)
}

/// A document's best sentences read (at most [`SENTENCES`]: those that answer, and those
/// holding one of the sub-question's own words and a share of the best one's score), best
/// first.
fn choose<'a>(
    scored: &'a [Scored],
    doc: &str,
    answers: &dyn Fn(&Scored) -> bool,
) -> Vec<&'a Scored> {
    let mut chosen: Vec<&Scored> = scored.iter().filter(|s| doc_of(&s.id) == doc).collect();
    // The best sentence answers; the others hold one of the sub-question's own words
    // themselves (not only through their headings) and a share of its score.
    let best = chosen.iter().find(|s| answers(s)).map_or(0.0, |s| s.score);
    let mut of_doc = chosen.clone();
    chosen.retain(|s| answers(s) || (s.holds_own && s.score >= ALSO * best));
    chosen.truncate(SENTENCES);
    // Then, best first, each one's neighbours in its chunk that hold a question word: the
    // sentence saying what to do often follows the one that repeats the question's words.
    of_doc.retain(|n| !n.held.is_empty());
    for anchor in chosen.clone() {
        for n in of_doc
            .iter()
            .filter(|n| n.id == anchor.id && n.at.abs_diff(anchor.at) == 1)
        {
            if chosen.len() < WITH_NEIGHBOURS && !chosen.iter().any(|c| std::ptr::eq(*c, *n)) {
                chosen.push(n);
            }
        }
    }
    chosen
}

/// The weight of the question words some of the sentences hold (each word once), of the
/// sub-question's own words only when `own`.
fn together(chosen: &[&Scored], weights: &[Weight], own: bool) -> f64 {
    let held: HashSet<usize> = chosen.iter().flat_map(|s| s.held.iter().copied()).collect();
    held.iter()
        .filter(|&&i| !own || weights[i].own)
        .map(|&i| weights[i].w)
        .sum()
}

/// A conclusion for one document: the sentences [`choose`] chose, in the document's order,
/// each quoted whole — one holding inline code (`x`) as it is, its code spans being the quotes
/// checked —, citing the chunks they are in.
fn doc_conclusion(mut chosen: Vec<&Scored>) -> Option<Conclusion> {
    chosen.sort_by_key(|s| (s.line, s.at));
    let quote = |s: &str| {
        if s.contains('`') {
            s.to_string()
        } else {
            format!("`{s}`")
        }
    };
    let mut sources: Vec<SourceId> = Vec::new();
    for s in &chosen {
        let source = SourceId::parse(&format!("doc:{}", s.id)).ok()?;
        if !sources.contains(&source) {
            sources.push(source);
        }
    }
    let claim = chosen
        .iter()
        .map(|s| quote(&s.sentence))
        .collect::<Vec<_>>()
        .join(" ");
    // A document's words never make a finding negative evidence: a sentence that starts as
    // one would is said to be the passage's.
    let claim = if crate::handoff::reads_as_negative(&claim) {
        format!("The passage says: {claim}")
    } else {
        claim
    };
    Some(Conclusion {
        claim,
        sources,
        kind: ConclusionKind::Finding,
    })
    .filter(|c| !c.sources.is_empty())
}

/// A chunk read, its sentences scored by the question words' weights they hold (its
/// headings counting half for every sentence under them).
fn score_chunk(shown: &Shown<'_>, weights: &[Weight]) -> Vec<Scored> {
    // The chunk's headings and its document's name say what every sentence under them is about.
    let path = shown.id.split('#').next().unwrap_or(&shown.id);
    let heading: Rc<HashSet<String>> = Rc::new(
        crate::corpus::stems(&format!("{} {path}", shown.headings))
            .into_iter()
            .collect(),
    );
    // The shown text's first line is the span's first line of the document.
    let first = span_of(&shown.id).0;
    // Each sentence with its line and its place among the chunk's prose sentences: a code
    // block's lines have none, so the sentences before and after a block are neighbours.
    // A chunk cut inside a code block (an odd number of fences) cannot tell its code from its
    // prose: its lines are all read as prose.
    let fences = shown.lines.iter().filter(|l| l.starts_with("```")).count();
    let mut sentences: Vec<(u32, &str, usize)> = Vec::new();
    let (mut in_code, mut prose) = (false, 0);
    for (i, line) in shown.lines.iter().enumerate() {
        if line.starts_with("```") {
            in_code = !in_code && fences % 2 == 0;
            continue;
        }
        if crate::corpus::is_heading_line(line) {
            continue;
        }
        for sentence in crate::text::sentences(line) {
            // A sentence with an odd number of backticks cannot be written as its own quotes.
            if sentence.matches('`').count() % 2 == 0 && sentence.split_whitespace().count() >= 4 {
                let at = if in_code { usize::MAX } else { prose };
                prose += usize::from(!in_code);
                sentences.push((first.saturating_add(i as u32), sentence.trim(), at));
            }
        }
    }
    let mut out = Vec::new();
    for (line, sentence, at) in sentences {
        let mut stems: HashSet<String> = crate::corpus::stems(sentence).into_iter().collect();
        // (A line of code holding a digit states no count.)
        if at != usize::MAX && holds_number(sentence) {
            stems.insert(NUMBER.into());
        }
        let held: Vec<usize> = (0..weights.len())
            .filter(|&i| weights[i].w > 0.0 && stems.contains(&weights[i].stem))
            .collect();
        let weight = |w: &Weight| {
            if stems.contains(&w.stem) {
                w.w
            } else if heading.contains(&w.stem) {
                w.w / 2.0
            } else {
                0.0
            }
        };
        out.push(Scored {
            score: weights.iter().map(weight).sum(),
            own: weights.iter().filter(|w| w.own).map(weight).sum(),
            // (A number alone is no word of the question: it answers only beside one.)
            holds_own: held
                .iter()
                .any(|&i| weights[i].own && weights[i].stem != NUMBER),
            held,
            id: shown.id.clone(),
            at,
            sentence: sentence.to_string(),
            topic: Rc::clone(&heading),
            line,
        });
    }
    out
}

/// The sentences read, scored against a question, best first, and what a sentence must hold
/// to answer it.
struct Reading {
    weights: Vec<Weight>,
    /// The weight of the sub-question's own words.
    whole: f64,
    /// The share of that weight a sentence must hold to answer.
    bar: f64,
    scored: Vec<Scored>,
}

impl Reading {
    fn of(task: &Task, searches: &[&Exchange<'_>], reads: &[&Exchange<'_>]) -> Reading {
        // A question foreign to the corpus counts its unseen words against every passage.
        let counts = Counts::of(searches);
        let foreign = foreign(task, &counts);
        let weights = weights(task, &counts, foreign);
        let whole: f64 = weights.iter().filter(|w| w.own).map(|w| w.w).sum();
        let mut scored: Vec<Scored> = Vec::new();
        for ex in reads {
            for shown in read_chunks(ex) {
                scored.extend(score_chunk(&shown, &weights));
            }
        }
        // Best first; of equal ones, the one read in the narrower span (a chunk before a long
        // block) — a sentence read twice (by its chunk and in a document's opening) is one.
        let width = |s: &Scored| {
            let (a, b) = span_of(&s.id);
            b.saturating_sub(a)
        };
        scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(width(a).cmp(&width(b))));
        let mut seen = HashSet::new();
        scored.retain(|s| seen.insert((doc_of(&s.id).to_string(), s.sentence.clone())));
        // A sentence answers when it holds enough of the sub-question's own words — a thing
        // the question names that the corpus never mentions raises the bar.
        let bar = if foreign {
            NAMED_UNSEEN_COVERAGE
        } else {
            MIN_COVERAGE
        };
        Reading {
            weights,
            whole,
            bar,
            scored,
        }
    }

    /// The question asked again in the corpus's own term, when a sentence read defines one by
    /// the question's words — its definition alone holding what a sentence must hold to
    /// answer (`… automatically imported into every module …` → `prelude …`): the term and
    /// the question's words the definition does not hold (its context's likewise).
    fn redefined(&self, task: &Task) -> Option<Task> {
        let own = |stem: &str| {
            self.weights
                .iter()
                .any(|w| w.own && w.w > 0.0 && w.stem == stem)
        };
        let mut best: Option<(f64, Vec<String>, HashSet<String>)> = None;
        for s in self.scored.iter().filter(|s| s.holds_own) {
            let Some((term, predicate)) = definition(&s.sentence) else {
                continue;
            };
            // The term is new to the question, and what its passage is about (its headings
            // or its document's name say it): `A notable example is …` defines nothing.
            let named: Vec<String> = term.iter().flat_map(|t| crate::corpus::stems(t)).collect();
            if named.iter().any(|t| own(t) || !s.topic.contains(t)) {
                continue;
            }
            let stems: HashSet<String> = crate::corpus::stems(predicate)
                .into_iter()
                .filter(|t| own(t))
                .collect();
            let weight: f64 = self
                .weights
                .iter()
                .filter(|w| w.own && stems.contains(&w.stem))
                .map(|w| w.w)
                .sum();
            let answers = stems.len() >= 2 && self.whole > 0.0 && weight / self.whole >= self.bar;
            if answers && best.as_ref().is_none_or(|b| weight > b.0) {
                best = Some((weight, term, stems));
            }
        }
        let (_, term, defined) = best?;
        Some(Task {
            question: in_term(&term, &task.question, &defined)?,
            whole: task
                .whole
                .as_deref()
                .map(|w| in_term(&term, w, &defined).unwrap_or_else(|| term.join(" "))),
            ..task.clone()
        })
    }
}

/// A question with its words a definition holds (`defined`, by stem) taken out and its term
/// added after it, the rest as written (so a name, a capital and "how many" still count); None
/// when only the term would be left — the definition itself answers.
fn in_term(term: &[String], question: &str, defined: &HashSet<String>) -> Option<String> {
    let kept: Vec<&str> = question
        .split_whitespace()
        .filter(|raw| {
            !crate::corpus::stems(raw)
                .iter()
                .all(|t| defined.contains(t))
                || content_words(raw).is_empty()
        })
        .collect();
    let kept = kept.join(" ");
    (!content_words(&kept).is_empty()).then(|| format!("{kept} {}", term.join(" ")))
}

/// The handoff: the best sentences read, or negative evidence.
fn conclude(task: &Task, reading: &Reading) -> Handoff {
    let Reading {
        weights,
        whole,
        bar,
        scored,
    } = reading;
    let (whole, bar) = (*whole, *bar);
    // (A sentence must hold one of those words itself: its headings alone answer nothing.)
    let answer = |s: &Scored| s.holds_own && whole > 0.0 && s.own / whole >= bar;
    // A document answers when one of its sentences does, or when its best sentences hold
    // together [`TOGETHER`] times that share; the documents are ranked by the weight their
    // best sentences hold together — a page whose sentences each say part of the answer
    // before one that repeats the question's words once.
    let mut docs: Vec<&str> = Vec::new();
    for s in scored {
        if !docs.contains(&doc_of(&s.id)) {
            docs.push(doc_of(&s.id));
        }
    }
    let mut found: Vec<(Vec<&Scored>, f64)> = Vec::new();
    for doc in docs {
        let chosen = choose(scored, doc, &answer);
        let answers = chosen.iter().any(|s| answer(s))
            || (whole > 0.0 && together(&chosen, weights, true) / whole >= TOGETHER * bar);
        if answers && !chosen.is_empty() {
            let weight = together(&chosen, weights, false);
            found.push((chosen, weight));
        }
    }
    found.sort_by(|a, b| b.1.total_cmp(&a.1));
    let best = found.first().map_or(0.0, |f| f.1);
    let mut handoff = Handoff::default();
    for (chosen, weight) in found.into_iter().take(MOST_CONCLUSIONS) {
        if weight < RELATIVE * best {
            break;
        }
        handoff.settled_conclusions.extend(doc_conclusion(chosen));
    }
    if handoff.settled_conclusions.is_empty() {
        if let Some(nearest) = scored.first() {
            handoff.open_items.push(OpenItem {
                item: format!(
                    "The nearest passage read, doc:{}, does not answer: {}",
                    nearest.id, task.question
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
