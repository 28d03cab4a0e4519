//! Relevance selection: which items of a checkpoint a subagent's context may hold, found through
//! an index kept up to date one item at a time ([`ContextIndex::sync`]), never by scanning the
//! run. A subagent sees the items under its scope (and above it), the items matching its
//! question's words, its own plan, effects and handoffs, and the doubts it is asked to check —
//! each field at most [`FIELD_CAP`] items — and the rest is counted and summed
//! ([`Omitted`]), so its context and manifest do not grow with the number of other subagents.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::checkpoint::Checkpoint;
use crate::source::SourceId;

use super::Field;

/// Most items of one field a focused selection takes before the token budget has its say.
pub const FIELD_CAP: usize = 64;
/// Most items one of the question's words adds to a field.
const TERM_CAP: usize = 8;
/// Words of one item indexed.
const WORDS_PER_ITEM: usize = 16;

/// What a subagent's context is about: who it is, its scope and its question's words.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Focus {
    /// The subagent.
    pub subagent: String,
    /// Its root-relative paths (`.` is the whole tree).
    pub scope: Vec<String>,
    /// Lower-case content words of its question.
    pub terms: Vec<String>,
}

impl Focus {
    /// The focus of `subagent` over `scope`, asked `question`.
    pub fn new(subagent: &str, scope: &[String], question: &str) -> Focus {
        Focus {
            subagent: subagent.to_string(),
            scope: scope.to_vec(),
            terms: Focus::terms(question),
        }
    }

    /// The content words of `question`: a run's subagents share them, so a lead takes them
    /// once.
    pub fn terms(question: &str) -> Vec<String> {
        let mut terms = words(question, usize::MAX);
        terms.retain(|w| !crate::text::is_stop_word(w));
        terms
    }
}

/// Lower-case alphanumeric words of at least three characters, first `most` distinct ones.
fn words(text: &str, most: usize) -> Vec<String> {
    let mut seen = HashSet::new();
    crate::text::words(text)
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| seen.insert(w.clone()))
        .take(most)
        .collect()
}

/// An order-free sum of item hashes (each item's SHA-256 as four big-endian words, added
/// wrapping): the sum over what was left out is the sum over everything less the sum over
/// what was kept, so it costs what was kept, not what the run holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ItemSum([u64; 4]);

impl ItemSum {
    /// The hash of one item: SHA-256 of `field NUL id`.
    pub fn of(field: Field, id: &str) -> ItemSum {
        use sha2::Digest;
        let digest = sha2::Sha256::new()
            .chain_update(field.name().as_bytes())
            .chain_update([0u8])
            .chain_update(id.as_bytes())
            .finalize();
        let mut words = [0u64; 4];
        for (word, bytes) in words.iter_mut().zip(digest.chunks_exact(8)) {
            let mut be = [0u8; 8];
            be.copy_from_slice(bytes);
            *word = u64::from_be_bytes(be);
        }
        ItemSum(words)
    }

    /// Adds `other` in.
    pub fn add(&mut self, other: ItemSum) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.wrapping_add(b);
        }
    }

    /// Takes `other` out.
    pub fn sub(&mut self, other: ItemSum) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.wrapping_sub(b);
        }
    }

    /// 64 hex digits.
    pub fn hex(&self) -> String {
        self.0.iter().map(|w| format!("{w:016x}")).collect()
    }
}

/// What a selection left out: how many items, and their [`ItemSum`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Omitted {
    /// Items left out.
    pub items: u64,
    /// The sum of their hashes.
    pub sum: ItemSum,
}

/// The items of each list field a context may hold, by index into the checkpoint's lists;
/// `None` is every item.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    pub(crate) picked: Option<BTreeMap<Field, Vec<usize>>>,
    /// What was not picked.
    pub omitted: Omitted,
}

impl Selection {
    /// Every item of every field.
    pub fn everything() -> Selection {
        Selection::default()
    }

    /// The indices picked for `field`, or `None` for all of them.
    pub(crate) fn of(&self, field: Field) -> Option<&[usize]> {
        self.picked
            .as_ref()
            .map(|p| p.get(&field).map(Vec::as_slice).unwrap_or(&[]))
    }
}

/// Items keyed by path, so a scope finds what lies under it (a range) and above it (its
/// ancestors) without a scan.
#[derive(Debug, Clone, Default)]
struct PathIndex(BTreeMap<String, Vec<usize>>);

impl PathIndex {
    fn insert(&mut self, path: &str, index: usize) {
        let key = path.trim_end_matches('/');
        let key = if key.is_empty() { "." } else { key };
        self.0.entry(key.to_string()).or_default().push(index);
    }

    /// Up to `cap` items under or above `scope`, most specific first; for the whole tree
    /// (`.`), the latest of the `len` items the list holds.
    fn find(&self, scope: &str, cap: usize, len: usize, out: &mut Vec<usize>) {
        let scope = scope.trim_end_matches('/');
        if scope.is_empty() || scope == "." {
            out.extend(
                (len.saturating_sub(cap)..len)
                    .rev()
                    .take(cap - out.len().min(cap)),
            );
            return;
        }
        let take = |list: &Vec<usize>, out: &mut Vec<usize>| {
            for &i in list {
                if out.len() >= cap {
                    return false;
                }
                out.push(i);
            }
            true
        };
        // The scope itself, then everything under `scope/` — a range of its own, so a
        // neighbour that sorts between them (`a.rs`, `a-b/` beside `a/`) never ends it.
        if let Some(list) = self.0.get(scope) {
            if !take(list, out) {
                return;
            }
        }
        let under = format!("{scope}/");
        for (key, list) in self.0.range(under.clone()..) {
            if !key.starts_with(&under) || !take(list, out) {
                break;
            }
        }
        let ancestors = scope
            .match_indices('/')
            .map(|(at, _)| &scope[..at])
            .chain(["."]);
        for ancestor in ancestors {
            if let Some(list) = self.0.get(ancestor) {
                if !take(list, out) {
                    return;
                }
            }
        }
    }
}

/// The latest `cap` items of each of `terms`' postings.
fn find_terms(postings: &HashMap<String, Vec<usize>>, terms: &[String], out: &mut Vec<usize>) {
    for term in terms {
        for &i in postings
            .get(term)
            .into_iter()
            .flatten()
            .rev()
            .take(TERM_CAP)
        {
            if out.len() >= FIELD_CAP {
                return;
            }
            out.push(i);
        }
    }
}

/// The checkpoint lists the index follows, each append-only between rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum List {
    Evidence,
    Negative,
    Effects,
    Plans,
    Accepted,
    Rejected,
}

const LISTS: [List; 6] = [
    List::Evidence,
    List::Negative,
    List::Effects,
    List::Plans,
    List::Accepted,
    List::Rejected,
];

fn list_len(cp: &Checkpoint, list: List) -> usize {
    match list {
        List::Evidence => cp.evidence.len(),
        List::Negative => cp.negative_evidence.len(),
        List::Effects => cp.effects.len(),
        List::Plans => cp.plans.len(),
        List::Accepted => cp.handoffs.accepted.len(),
        List::Rejected => cp.handoffs.rejected.len(),
    }
}

/// What tells item `i` of `list` from another in its place, without allocating: the event it
/// came from (where that never changes) and its id.
fn mark(cp: &Checkpoint, list: List, i: usize) -> (u64, &str) {
    match list {
        List::Evidence => (cp.evidence[i].event, cp.evidence[i].source.as_str()),
        List::Negative => {
            let n = &cp.negative_evidence[i];
            (n.event, n.call_id.as_str())
        }
        List::Effects => (0, cp.effects[i].intent_id.as_str()),
        // A plan entry's event moves as its subagent runs: its subagent tells it apart.
        List::Plans => (0, cp.plans[i].subagent.as_str()),
        List::Accepted => {
            let h = &cp.handoffs.accepted[i];
            (h.event, h.subagent.as_str())
        }
        List::Rejected => {
            let h = &cp.handoffs.rejected[i];
            (h.event, h.subagent.as_str())
        }
    }
}

/// The path an evidence source is about: a file's path, a document's id, else the source.
fn source_path(source: &str) -> String {
    match SourceId::parse(source) {
        Ok(SourceId::File { path, .. }) => path,
        Ok(SourceId::Doc { id, .. }) => id,
        _ => source.to_string(),
    }
}

/// The index of one checkpoint's list fields, kept in step with it by [`ContextIndex::sync`].
#[derive(Debug, Clone, Default)]
pub struct ContextIndex {
    /// Items of each list indexed so far, and the mark of the last, to notice a list that was
    /// rewritten rather than appended to.
    seen: BTreeMap<List, (usize, u64, String)>,
    /// The sum of the hashes of every item, by field.
    sums: BTreeMap<Field, ItemSum>,
    /// Each item's hash, by list and index (an accepted entry's doubts apart).
    hashes: BTreeMap<List, Vec<ItemSum>>,
    doubt_hashes: Vec<ItemSum>,
    /// Doubted claims in all.
    doubts: usize,
    evidence_paths: PathIndex,
    evidence_words: HashMap<String, Vec<usize>>,
    negative_paths: PathIndex,
    /// The negative evidence of searches over a subagent's whole shard, by subagent.
    negative_of_plan: HashMap<String, Vec<usize>>,
    negative_words: HashMap<String, Vec<usize>>,
    effects_of: HashMap<String, Vec<usize>>,
    plan_paths: PathIndex,
    /// Each subagent's latest plan entry.
    plan_of: HashMap<String, usize>,
    accepted_of: HashMap<String, Vec<usize>>,
    rejected_of: HashMap<String, Vec<usize>>,
    with_doubts: Vec<usize>,
    /// Times a rewritten list made the index start over.
    rebuilt: u64,
}

impl ContextIndex {
    /// Brings the index up to `cp`: items appended since the last sync are indexed; a list
    /// that shrank or was rewritten is indexed again from the start.
    pub fn sync(&mut self, cp: &Checkpoint) {
        let rewritten = LISTS.iter().any(|&list| match self.seen.get(&list) {
            Some((seen, event, id)) => {
                list_len(cp, list) < *seen || mark(cp, list, seen - 1) != (*event, id.as_str())
            }
            None => false,
        });
        if rewritten {
            let rebuilt = self.rebuilt + 1;
            *self = ContextIndex::default();
            self.rebuilt = rebuilt;
        }
        for list in LISTS {
            let from = self.seen.get(&list).map_or(0, |s| s.0);
            let len = list_len(cp, list);
            if len == from {
                continue;
            }
            for i in from..len {
                self.index_one(cp, list, i);
            }
            let (event, id) = mark(cp, list, len - 1);
            self.seen.insert(list, (len, event, id.to_string()));
        }
    }

    /// Keeps the hash of `list`'s next item under `field`: the sum over `ids`.
    fn add_sum<'a>(&mut self, list: List, field: Field, ids: impl IntoIterator<Item = &'a str>) {
        let mut item = ItemSum::default();
        for id in ids {
            item.add(ItemSum::of(field, id));
        }
        self.sums.entry(field).or_default().add(item);
        self.hashes.entry(list).or_default().push(item);
    }

    fn index_one(&mut self, cp: &Checkpoint, list: List, i: usize) {
        match list {
            List::Evidence => {
                let e = &cp.evidence[i];
                let path = source_path(&e.source);
                self.evidence_paths.insert(&path, i);
                let text = format!("{path} {}", e.excerpt.as_deref().unwrap_or(""));
                for word in words(&text, WORDS_PER_ITEM) {
                    self.evidence_words.entry(word).or_default().push(i);
                }
                self.add_sum(list, Field::Evidence, [e.source.as_str()]);
            }
            List::Negative => {
                let n = &cp.negative_evidence[i];
                // A search of its subagent's whole shard is found with the shard's plan (whose
                // paths are indexed once), not by each of its paths again.
                let shard = self
                    .plan_of
                    .get(&n.subagent)
                    .and_then(|&p| cp.plans.get(p))
                    .is_some_and(|p| p.scope == n.scope);
                if shard {
                    self.negative_of_plan
                        .entry(n.subagent.clone())
                        .or_default()
                        .push(i);
                } else {
                    for path in n.scope.iter() {
                        self.negative_paths.insert(path, i);
                    }
                }
                for word in words(&n.pattern, WORDS_PER_ITEM) {
                    self.negative_words.entry(word).or_default().push(i);
                }
                let id = format!("call:{}", n.call_id);
                self.add_sum(list, Field::NegativeEvidence, [id.as_str()]);
            }
            List::Effects => {
                let e = &cp.effects[i];
                self.effects_of
                    .entry(e.subagent.clone())
                    .or_default()
                    .push(i);
                self.add_sum(list, Field::Effects, [e.intent_id.as_str()]);
            }
            List::Plans => {
                let p = &cp.plans[i];
                for path in p.scope.iter() {
                    self.plan_paths.insert(path, i);
                }
                self.plan_of.insert(p.subagent.clone(), i);
                self.add_sum(list, Field::Plans, [p.subagent.as_str()]);
            }
            List::Accepted => {
                let h = &cp.handoffs.accepted[i];
                self.accepted_of
                    .entry(h.subagent.clone())
                    .or_default()
                    .push(i);
                self.add_sum(list, Field::Handoffs, [h.subagent.as_str()]);
                if !h.doubted.is_empty() {
                    self.with_doubts.push(i);
                }
                let mut doubts = ItemSum::default();
                for c in &h.doubted {
                    doubts.add(ItemSum::of(Field::Doubts, &doubt_id(c)));
                }
                self.sums.entry(Field::Doubts).or_default().add(doubts);
                self.doubt_hashes.push(doubts);
                self.doubts += h.doubted.len();
            }
            List::Rejected => {
                let h = &cp.handoffs.rejected[i];
                self.rejected_of
                    .entry(h.subagent.clone())
                    .or_default()
                    .push(i);
                self.add_sum(list, Field::Handoffs, [h.subagent.as_str()]);
            }
        }
    }

    /// The hash of item `i` of `field` as a selection numbers it (handoffs: the accepted,
    /// then the rejected).
    fn hash_of(&self, cp: &Checkpoint, field: Field, i: usize) -> Option<ItemSum> {
        let at = |list: List, i: usize| self.hashes.get(&list).and_then(|h| h.get(i)).copied();
        match field {
            Field::Evidence => at(List::Evidence, i),
            Field::NegativeEvidence => at(List::Negative, i),
            Field::Effects => at(List::Effects, i),
            Field::Plans => at(List::Plans, i),
            Field::Handoffs => match i.checked_sub(cp.handoffs.accepted.len()) {
                None => at(List::Accepted, i),
                Some(r) => at(List::Rejected, r),
            },
            Field::Doubts => self.doubt_hashes.get(i).copied(),
            _ => None,
        }
    }

    /// The items of `fields` (a role's optional fields: mandatory ones are compiled whole)
    /// relevant to `focus`, and what that leaves out. By scope and by the question's words at
    /// most [`FIELD_CAP`] a field; a subagent's own plan, effects (the latest
    /// [`FIELD_CAP`]) and handoffs; the handoffs of the subagents whose plans were picked;
    /// every doubted claim (the verifier's whole task). `cp` is the checkpoint the index was
    /// last synced with; items it does not hold are skipped.
    pub fn select(&self, cp: &Checkpoint, focus: &Focus, fields: &[Field]) -> Selection {
        let mut picked: BTreeMap<Field, Vec<usize>> = BTreeMap::new();
        let wanted = |field: Field| fields.contains(&field);
        let by_scope = |paths: &PathIndex, len: usize, out: &mut Vec<usize>| {
            for scope in &focus.scope {
                paths.find(scope, FIELD_CAP, len, out);
            }
        };
        if wanted(Field::Evidence) {
            let mut evidence = Vec::new();
            by_scope(&self.evidence_paths, cp.evidence.len(), &mut evidence);
            find_terms(&self.evidence_words, &focus.terms, &mut evidence);
            picked.insert(Field::Evidence, evidence);
        }
        let mut plans: Vec<usize> = self
            .plan_of
            .get(&focus.subagent)
            .copied()
            .into_iter()
            .collect();
        by_scope(&self.plan_paths, cp.plans.len(), &mut plans);
        if wanted(Field::NegativeEvidence) {
            let mut negative = Vec::new();
            let len = cp.negative_evidence.len();
            by_scope(&self.negative_paths, len, &mut negative);
            // The searches over the shards of the plans under or above the scope.
            for who in plans
                .iter()
                .filter_map(|&p| cp.plans.get(p))
                .map(|p| &p.subagent)
            {
                for &i in self.negative_of_plan.get(who).into_iter().flatten() {
                    if negative.len() >= FIELD_CAP {
                        break;
                    }
                    negative.push(i);
                }
            }
            find_terms(&self.negative_words, &focus.terms, &mut negative);
            picked.insert(Field::NegativeEvidence, negative);
        }
        if wanted(Field::Effects) {
            let effects = self
                .effects_of
                .get(&focus.subagent)
                .map(|own| own.iter().rev().take(FIELD_CAP).rev().copied().collect())
                .unwrap_or_default();
            picked.insert(Field::Effects, effects);
        }

        // Handoffs of the subagents whose plans are picked (accepted first, then rejected).
        let accepted = cp.handoffs.accepted.len();
        let mut handoffs = Vec::new();
        for who in plans
            .iter()
            .filter_map(|&p| cp.plans.get(p))
            .map(|p| &p.subagent)
        {
            handoffs.extend(self.accepted_of.get(who).into_iter().flatten().copied());
            let rejected = self.rejected_of.get(who).into_iter().flatten();
            handoffs.extend(rejected.map(|r| accepted + r));
        }
        if wanted(Field::Plans) {
            picked.insert(Field::Plans, plans);
        }
        if wanted(Field::Handoffs) {
            picked.insert(Field::Handoffs, handoffs);
        }
        if wanted(Field::Doubts) {
            picked.insert(Field::Doubts, self.with_doubts.clone());
        }

        let mut omitted = Omitted::default();
        for (field, list) in picked.iter_mut() {
            list.sort_unstable();
            list.dedup();
            let (total, kept) = match field {
                Field::Doubts => (
                    self.doubts,
                    list.iter()
                        .filter_map(|&i| cp.handoffs.accepted.get(i))
                        .map(|h| h.doubted.len())
                        .sum(),
                ),
                Field::Evidence => (cp.evidence.len(), list.len()),
                Field::NegativeEvidence => (cp.negative_evidence.len(), list.len()),
                Field::Effects => (cp.effects.len(), list.len()),
                Field::Plans => (cp.plans.len(), list.len()),
                Field::Handoffs => (accepted + cp.handoffs.rejected.len(), list.len()),
                _ => (0, 0),
            };
            omitted.items += total.saturating_sub(kept) as u64;
            let mut sum = self.sums.get(field).copied().unwrap_or_default();
            for &i in list.iter() {
                if let Some(hash) = self.hash_of(cp, *field, i) {
                    sum.sub(hash);
                }
            }
            omitted.sum.add(sum);
        }
        Selection {
            picked: Some(picked),
            omitted,
        }
    }
}

/// The manifest id of a doubted claim: its sources.
pub(crate) fn doubt_id(c: &crate::handoff::Conclusion) -> String {
    c.sources
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
