//! The researcher's tools over a [`Corpus`]: `search` (a query to ranked chunk ids with their
//! headings and a snippet) and `read` (a chunk, a line span of a document, or the chunks
//! around one). A search is logged with its query and scope; a read with each chunk it showed,
//! its text and digest, so a `doc:` citation is accepted only for a passage read.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use crate::corpus::{chunk_id, parse_span, Corpus};
use crate::policy::{Consequence, Effect};
use crate::source::{Observation, SearchKind};
use crate::transcript::ToolSpec;

/// Chunks a search returns unless asked for fewer (at most [`MOST_HITS`]).
pub(crate) const SEARCH_HITS: usize = 8;
/// Most chunks one search returns.
const MOST_HITS: usize = 20;
/// Most lines one read shows.
const MOST_LINES: u32 = 400;
/// Most chunks on each side a read `around` one shows.
const MOST_AROUND: u64 = 3;

/// `search`: BM25 over the corpus's chunks.
#[derive(Debug, Clone)]
pub struct CorpusSearch(pub Arc<Corpus>);

/// `read`: a chunk, a span, or the chunks around one.
#[derive(Debug, Clone)]
pub struct CorpusRead(pub Arc<Corpus>);

impl ToolRegistry {
    /// The corpus tools, `search` and `read`, over one corpus.
    pub fn corpus(corpus: Arc<Corpus>) -> ToolRegistry {
        ToolRegistry::empty()
            .with(Arc::new(CorpusSearch(Arc::clone(&corpus))))
            .with(Arc::new(CorpusRead(corpus)))
    }
}

/// The paths a call names (`paths`), as given.
fn paths_arg(args: &Value) -> Vec<String> {
    args.get("paths")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|p| crate::text::lexical_path(p).unwrap_or_else(|| p.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

#[async_trait]
impl Tool for CorpusSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search".into(),
            description: "Search the corpus: the best-ranked chunks for a query (BM25; \"a phrase\" in double quotes; matches in headings count more), each as its id doc:PATH#Lstart-end with its headings and a snippet. A snippet is not a reading: read a chunk before citing it.".into(),
            parameters: json!({"type": "object", "required": ["query"], "properties": {
                "query": {"type": "string", "description": "Words or \"quoted phrases\"."},
                "paths": {"type": "array", "items": {"type": "string"}, "description": "Only documents under these paths (relative to the corpus)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MOST_HITS}}}),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn consequences(&self, args: &Value) -> Vec<Consequence> {
        let paths = paths_arg(args);
        if paths.is_empty() {
            return vec![Consequence::on_path(Effect::Search, ".")];
        }
        paths
            .iter()
            .map(|p| Consequence::on_path(Effect::Search, p))
            .collect()
    }

    async fn call(&self, args: &Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or_else(|| ToolError::invalid("give a non-empty `query`"))?
            .to_string();
        let paths = paths_arg(args);
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(SEARCH_HITS, |l| (l as usize).clamp(1, MOST_HITS));
        let corpus = Arc::clone(&self.0);
        // The documents a constraint forbids reading are searched as left out: no snippet
        // of theirs is shown.
        let policy = cx.policy();
        let forbidden: HashSet<String> = if policy.scopes_reading() {
            corpus
                .ids()
                .into_iter()
                .filter(|p| policy.may_open("read", p).is_err())
                .collect()
        } else {
            HashSet::new()
        };
        tokio::task::spawn_blocking(move || search(&corpus, &query, &paths, limit, &forbidden))
            .await
            .map_err(|e| ToolError::new(format!("the search failed: {e}")))?
    }
}

fn search(
    corpus: &Corpus,
    query: &str,
    paths: &[String],
    limit: usize,
    forbidden: &HashSet<String>,
) -> Result<ToolOutput, ToolError> {
    // Enough hits that those of forbidden documents can be dropped and `limit` remain.
    let asked = if forbidden.is_empty() {
        limit
    } else {
        limit.saturating_mul(8)
    };
    let mut hits = corpus
        .search(query, paths, asked)
        .map_err(|e| ToolError::new(e.to_string()))?;
    hits.retain(|h| !forbidden.contains(&h.path));
    hits.truncate(limit);
    let kept_out = forbidden
        .iter()
        .filter(|p| corpus.searchable(p))
        .filter(|p| paths.is_empty() || paths.iter().any(|s| crate::text::within(p, s)))
        .count();
    let searched = corpus.searchable_under(paths).saturating_sub(kept_out);
    let (left_out, left_out_names) = corpus.left_out_under(paths);
    let scope = if paths.is_empty() {
        vec![".".to_string()]
    } else {
        paths.to_vec()
    };
    let mut text = format!(
        "{} chunk(s) for `{}` ({searched} document(s) searched under {}):\n",
        hits.len(),
        crate::text::one_line(query),
        scope.join(", ")
    );
    text.push_str(&corpus.listing(query, &hits));
    if hits.is_empty() {
        text.push_str("no passage matched\n");
    }
    if kept_out > 0 {
        text.push_str(&format!(
            "not searched: {kept_out} document(s) a constraint forbids reading\n"
        ));
    }
    if left_out > 0 {
        text.push_str(&format!(
            "not searched: {left_out} entries the index left out (hidden, links, names a citation could not write, binary, too large or unreadable)\n"
        ));
    }
    Ok(ToolOutput::new(text).observed(Observation::Searched {
        call_id: String::new(),
        pattern: SearchKind::Passages.stored(query),
        scope,
        matches: hits.len(),
        files_searched: searched,
        files_skipped: 0,
        case_insensitive: true,
        fixed_string: false,
        not_searched: left_out,
        not_searched_names: left_out_names,
    }))
}

#[async_trait]
impl Tool for CorpusRead {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read".into(),
            description: "Read the corpus: a chunk by its id (doc:PATH#Lstart-end), a line span of a document (path, start, end), or a chunk with `around` chunks on each side. Cite what you read by the ids shown.".into(),
            parameters: json!({"type": "object", "properties": {
                "id": {"type": "string", "description": "A chunk id, doc:PATH#Lstart-end."},
                "path": {"type": "string"}, "start": {"type": "integer", "minimum": 1},
                "end": {"type": "integer", "minimum": 1},
                "around": {"type": "integer", "minimum": 0, "maximum": MOST_AROUND}}}),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn consequences(&self, args: &Value) -> Vec<Consequence> {
        match target(args) {
            Ok((path, _)) => vec![Consequence::on_path(Effect::Read, &path)],
            Err(_) => Vec::new(),
        }
    }

    async fn call(&self, args: &Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (path, span) = target(args)?;
        let around = args.get("around").and_then(Value::as_u64).unwrap_or(0);
        let corpus = Arc::clone(&self.0);
        tokio::task::spawn_blocking(move || read(&corpus, &path, span, around.min(MOST_AROUND)))
            .await
            .map_err(|e| ToolError::new(format!("the read failed: {e}")))?
    }
}

/// The document and span a read names.
fn target(args: &Value) -> Result<(String, Option<(u32, u32)>), ToolError> {
    if let Some(id) = args.get("id").and_then(Value::as_str) {
        let id = id.trim().trim_start_matches("doc:");
        let (path, span) = match id.split_once('#') {
            Some((p, s)) => (
                p,
                Some(parse_span(s).ok_or_else(|| {
                    ToolError::invalid(format!("`{s}` is not a span (Lstart-end)"))
                })?),
            ),
            None => (id, None),
        };
        return Ok((path.to_string(), span));
    }
    let path = args.get("path").and_then(Value::as_str).ok_or_else(|| {
        ToolError::invalid("give a chunk `id`, or a `path` with `start` and `end`")
    })?;
    let num = |k: &str| {
        args.get(k)
            .and_then(Value::as_u64)
            .map(|n| n.min(u32::MAX as u64) as u32)
    };
    let span = match (num("start"), num("end")) {
        (Some(a), Some(b)) if a >= 1 && a <= b => Some((a, b)),
        (Some(a), None) if a >= 1 => Some((a, a.saturating_add(MOST_LINES - 1))),
        (None, None) => None,
        _ => {
            return Err(ToolError::invalid(
                "`start` and `end` are lines from 1, start ≤ end",
            ))
        }
    };
    Ok((path.to_string(), span))
}

fn read(
    corpus: &Corpus,
    path: &str,
    span: Option<(u32, u32)>,
    around: u64,
) -> Result<ToolOutput, ToolError> {
    let path = crate::text::lexical_path(path).unwrap_or_else(|| path.to_string());
    let layout = corpus.layout(&path).map_err(ToolError::invalid)?;
    let last = layout.lines.len() as u32;
    if last == 0 {
        return Ok(ToolOutput::new(format!("doc:{path} holds no text")));
    }
    let (mut a, mut b) = span.unwrap_or((1, last));
    if a > last {
        return Err(ToolError::invalid(format!(
            "doc:{path} has {last} lines; line {a} is past its end"
        )));
    }
    b = b.min(last);
    if around > 0 {
        let at = layout
            .chunks
            .iter()
            .position(|c| c.start <= a && a <= c.end)
            .unwrap_or(0);
        let from = at.saturating_sub(around as usize);
        let to = (at + around as usize).min(layout.chunks.len().saturating_sub(1));
        if let (Some(f), Some(t)) = (layout.chunks.get(from), layout.chunks.get(to)) {
            (a, b) = (f.start.min(a), t.end.max(b));
        }
    }
    let cut = b.saturating_sub(a) >= MOST_LINES;
    if cut {
        b = a + MOST_LINES - 1;
    }
    let mut out = ToolOutput::new(String::new());
    let mut text = String::new();
    let contained: Vec<_> = layout
        .chunks
        .iter()
        .filter(|c| a <= c.start && c.end <= b)
        .collect();
    // Whole chunks edge to edge are shown one by one under their ids; any other span as one
    // block under its own. Each whole chunk shown is logged by its id, and the span by its.
    let aligned = contained.first().is_some_and(|c| c.start == a)
        && contained.last().is_some_and(|c| c.end == b);
    for c in &contained {
        let body = layout.text(c.start, c.end);
        if aligned {
            text.push_str(&format!(
                "[doc:{} — {}]\n{body}\n\n",
                chunk_id(&path, c.start, c.end),
                c.headings.join(" > ")
            ));
        }
        out = out.observed(Observation::document(
            &path,
            Some(&format!("L{}-{}", c.start, c.end)),
            &body,
        ));
    }
    if !(aligned && contained.len() == 1) {
        let body = layout.text(a, b);
        if !aligned {
            text.push_str(&format!("[doc:{}]\n{body}\n", chunk_id(&path, a, b)));
        }
        out = out.observed(Observation::document(
            &path,
            Some(&format!("L{a}-{b}")),
            &body,
        ));
    }
    if cut {
        text.push_str(&format!(
            "(cut at {MOST_LINES} lines: read from line {} for more)\n",
            b + 1
        ));
    }
    out.content = text;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ConstraintEntry;

    #[tokio::test]
    async fn a_search_shows_nothing_of_a_document_the_run_forbids_reading() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.md"),
            "# A\n\nThe beacon flashes green.\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("b.md"), "# B\n\nThe beacon was rebuilt.\n").unwrap();
        let (corpus, _) = Corpus::open(dir.path(), None, &|_, _| {}).unwrap();
        let text = "Never read a.md.";
        let entry = ConstraintEntry {
            text: text.into(),
            normalised: text.to_lowercase(),
            provenance: "--constraint".into(),
            rules: crate::policy::parse_constraint(text, &[], &|_| true).rules,
            untyped: Vec::new(),
            warnings: Vec::new(),
            event: 2,
        };
        let policy = Arc::new(crate::policy::Policy::from_constraints(&[entry]));
        let cx = ToolContext::new("run", "sa1", "sa1.1").with_policy(policy);
        let search = CorpusSearch(Arc::new(corpus));
        let out = search.call(&json!({"query": "beacon"}), &cx).await.unwrap();
        assert!(out.content.contains("doc:b.md#L"), "{}", out.content);
        assert!(!out.content.contains("a.md"), "{}", out.content);
        assert!(
            out.content.contains("(1 document(s) searched"),
            "{}",
            out.content
        );
        assert!(
            out.content
                .contains("not searched: 1 document(s) a constraint forbids reading"),
            "{}",
            out.content
        );
    }
}
