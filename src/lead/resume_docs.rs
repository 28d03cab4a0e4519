//! A research run's evidence rechecked on resume against its corpus as it reads now: cited
//! passages by their digests, empty corpus searches run again.

use std::collections::BTreeMap;

use super::resume::{mark_stale, Resumption};
use crate::source::{Observation, ObservationLog, SearchKind};

impl Resumption {
    /// Rechecks the cited passages of a research run's accepted handoffs against the corpus
    /// as it reads now: a passage whose text changed, or whose document no longer reads,
    /// leaves the settled conclusions for the open items, marked stale; a corpus search that
    /// found nothing and finds passages now (or searches fewer documents) no longer stands.
    pub(crate) fn recheck_docs(&mut self, corpus: &crate::corpus::Corpus) {
        for (id, restored) in &mut self.subagents {
            if restored.handoff.is_none() {
                continue;
            }
            let changed: Vec<String> = restored
                .evidence_digests
                .keys()
                .filter(|source| {
                    passage_changed(
                        source,
                        &restored.evidence_digests,
                        &restored.observations,
                        corpus,
                    )
                })
                .cloned()
                .collect();
            let found_now = passages_gone_stale(&restored.observations, corpus);
            if let Some(stale) = mark_stale(id, restored, changed, found_now) {
                self.stale.push(stale);
            }
        }
    }
}

/// Whether a cited document span reads differently now than when it was accepted: a span
/// against its digest then; a whole document by every span of it that was shown.
fn passage_changed(
    source: &str,
    digests: &BTreeMap<String, String>,
    observations: &ObservationLog,
    corpus: &crate::corpus::Corpus,
) -> bool {
    match crate::source::SourceId::parse(source) {
        Ok(crate::source::SourceId::Doc {
            id,
            span: Some(span),
        }) => corpus.current_digest(&id, Some(&span)).as_ref() != digests.get(source),
        Ok(crate::source::SourceId::Doc { id, span: None }) => {
            observations.entries().iter().any(|o| match o {
                Observation::Document {
                    doc,
                    span,
                    digest: Some(then),
                    ..
                } if *doc == id => {
                    corpus.current_digest(&id, span.as_deref()).as_ref() != Some(then)
                }
                _ => false,
            })
        }
        _ => false,
    }
}

/// The corpus searches of `observations` that found nothing and no longer stand, as (call id,
/// label, why): each is run again over its scope.
fn passages_gone_stale(
    observations: &ObservationLog,
    corpus: &crate::corpus::Corpus,
) -> Vec<(String, String, String)> {
    observations
        .entries()
        .iter()
        .filter_map(|o| match o {
            Observation::Searched {
                call_id,
                pattern,
                scope,
                matches: 0,
                files_searched,
                ..
            } => {
                let (SearchKind::Passages, query) = SearchKind::of(pattern) else {
                    return None;
                };
                let paths: Vec<String> = scope.iter().filter(|p| *p != ".").cloned().collect();
                let why = match corpus.search(query, &paths, 1) {
                    Err(e) => format!("the corpus can no longer be searched ({e})"),
                    Ok(hits) if !hits.is_empty() => {
                        "the search finds passages now: the corpus changed after it ran".into()
                    }
                    Ok(_) if corpus.searchable_under(&paths) < *files_searched => format!(
                        "it searches {} documents now, {files_searched} when it ran: some are gone",
                        corpus.searchable_under(&paths)
                    ),
                    Ok(_) => return None,
                };
                Some((call_id.clone(), format!("\"{query}\""), why))
            }
            _ => None,
        })
        .collect()
}
