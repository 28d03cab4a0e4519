//! Negative evidence, pure: the searches the accepted subagents ran that found nothing, as
//! conclusions citing those calls — "the whole tree" only when every shard ran the same search
//! over its whole share — and the searches that searched no file, as open items.

use std::collections::{BTreeMap, BTreeSet};

use super::merge::Accepted;
use crate::handoff::{Conclusion, ConclusionKind, OpenItem};
use crate::source::{prose_list, search_label, shadowed, SearchKind, SourceId};

/// Whether a search over `searched` covered every path of `shard`.
fn covers(searched: &[String], shard: &[String]) -> bool {
    shard.iter().all(|path| {
        searched.iter().any(|s| {
            let s = s.trim_end_matches('/');
            s.is_empty() || super::plan::within(path, s)
        })
    })
}

/// Searches that found nothing, as conclusions citing them: one per place searched (and file
/// count). A search is keyed by its pattern and its flags, so `/x/i` and `/x/` are different
/// searches. Its place is "the whole tree" only when every shard handed off and every one of
/// them ran that same search over its whole shard — decided per pattern, never from the union
/// of the scopes of different searches; otherwise the place is the scopes it ran in. What
/// the searches left out (hidden and ignored entries, links; files they could not read) is
/// named, and "the whole tree" is then said only with that limit. A search that searched no
/// file is no evidence at all: it is an open item.
pub(super) fn negative_evidence(
    accepted: &[Accepted<'_>],
    all_handed_off: bool,
    whole: &str,
) -> (Vec<Conclusion>, Vec<OpenItem>) {
    let explorers: Vec<usize> = (0..accepted.len())
        .filter(|i| !accepted[*i].verifier)
        .collect();
    let groups = group_searches(accepted);
    // What matched somewhere: an empty search whose words a matching one spells out is not
    // evidence of absence.
    let matched: Vec<&str> = groups
        .iter()
        .filter(|((pattern, _, _), g)| g.found && SearchKind::of(pattern).0 == SearchKind::Lines)
        .map(|((pattern, _, _), _)| *pattern)
        .collect();
    // Patterns that found nothing, grouped by where they were searched and how many files.
    type Place = (SearchKind, String, usize, String);
    let mut by_place: BTreeMap<Place, (Vec<String>, Vec<String>)> = BTreeMap::new();
    let mut unsearched = Vec::new();
    for ((pattern, insensitive, fixed), g) in groups.iter().filter(|(_, g)| !g.found) {
        if SearchKind::of(pattern).0 == SearchKind::Lines && shadowed(pattern, &matched) {
            continue;
        }
        let skipped: usize = g.skipped.values().sum();
        let left_out: usize = g.not_searched.values().sum();
        let files: usize = g.files.values().sum();
        let scopes: Vec<String> = g.scopes.iter().cloned().collect();
        if files == 0 {
            // No file was searched: nothing is known of the place, least of all an absence.
            unsearched.push(OpenItem {
                item: format!("{} was not searched", prose_list(&scopes)),
                stuck_on: format!(
                    "no file there could be searched for {}",
                    search_label(SearchKind::of(pattern).1, *insensitive, *fixed)
                ),
            });
            continue;
        }
        let covered = all_handed_off
            && skipped == 0
            && !explorers.is_empty()
            && explorers.iter().all(|i| g.shards.contains(i));
        let kind = SearchKind::of(pattern).0;
        let place = match (covered, left_out) {
            // A corpus search: the corpus, or the paths of it searched.
            _ if kind == SearchKind::Passages => match scopes.as_slice() {
                [only] if only == "." => "this corpus".to_string(),
                _ => format!("the corpus's {}", prose_list(&scopes)),
            },
            (true, 0) => whole.to_string(),
            // A whole that names what the walk left out says it already (the limits below
            // name what the searches left out).
            (true, _) if whole.contains(", but not its ") => whole.to_string(),
            (true, _) => format!("{whole} but the entries it left out"),
            (false, _) => prose_list(&scopes),
        };
        let mut limits = Vec::new();
        if skipped > 0 {
            limits.push(format!(
                "{skipped} could not be searched: binary, over 4 MiB or unreadable"
            ));
        }
        if left_out > 0 {
            let names: Vec<String> = g.names.iter().cloned().collect();
            let what = if kind == SearchKind::Passages {
                "entries the index left out"
            } else {
                "hidden or ignored entries or links"
            };
            limits.push(format!(
                "not searched: {left_out} {what} ({}{})",
                names.join(", "),
                if left_out > names.len() { ", …" } else { "" }
            ));
        }
        let label = match SearchKind::of(pattern) {
            (SearchKind::FileNames, glob) => search_label(glob, *insensitive, true),
            (SearchKind::Lines, _) => search_label(pattern, *insensitive, *fixed),
            (SearchKind::Passages, query) => format!("\"{query}\""),
        };
        let limits = limits.iter().map(|l| format!("; {l}")).collect::<String>();
        let entry = by_place.entry((kind, place, files, limits)).or_default();
        entry.0.push(label);
        entry.1.extend(g.calls.iter().cloned());
    }
    (absences(by_place), unsearched)
}

/// One search (pattern and flags) as every subagent ran it.
#[derive(Default)]
struct Group {
    found: bool,
    calls: Vec<String>,
    scopes: BTreeSet<String>,
    /// Files searched, the most of any one call per subagent.
    files: BTreeMap<usize, usize>,
    /// Files that could not be searched, the most of any one call per subagent.
    skipped: BTreeMap<usize, usize>,
    /// Which shards ran it over their whole shard.
    shards: BTreeSet<usize>,
    /// Entries left out (hidden, ignored, links), the most of any one call per subagent.
    not_searched: BTreeMap<usize, usize>,
    /// The first of them named.
    names: BTreeSet<String>,
}

/// The runs of each search (pattern, case-insensitive, fixed-string) across the subagents.
fn group_searches<'a>(accepted: &[Accepted<'a>]) -> BTreeMap<(&'a str, bool, bool), Group> {
    let mut groups: BTreeMap<(&str, bool, bool), Group> = BTreeMap::new();
    for (index, a) in accepted.iter().enumerate() {
        for search in a.searches {
            let scope = search.scope.as_deref().unwrap_or(a.scope);
            let g = groups
                .entry((
                    search.pattern.as_str(),
                    search.case_insensitive,
                    search.fixed_string,
                ))
                .or_default();
            g.found |= search.matches > 0;
            g.calls.push(search.call_id.clone());
            let files = g.files.entry(index).or_default();
            *files = (*files).max(search.files_searched);
            let skipped = g.skipped.entry(index).or_default();
            *skipped = (*skipped).max(search.files_skipped);
            let left_out = g.not_searched.entry(index).or_default();
            *left_out = (*left_out).max(search.not_searched);
            for name in &search.not_searched_names {
                if g.names.len() < 5 {
                    g.names.insert(name.clone());
                }
            }
            if !a.scope.is_empty() && !g.shards.contains(&index) && covers(scope, a.scope) {
                g.shards.insert(index);
            }
            for s in scope {
                if !g.scopes.contains(s) {
                    g.scopes.insert(s.clone());
                }
            }
        }
    }
    groups
}

/// Where and how many files each group of empty searches searched, as conclusions citing
/// their calls.
#[allow(clippy::type_complexity)]
fn absences(
    by_place: BTreeMap<(SearchKind, String, usize, String), (Vec<String>, Vec<String>)>,
) -> Vec<Conclusion> {
    by_place
        .into_iter()
        .map(
            |((kind, place, files, limits), (labels, calls))| Conclusion {
                claim: match kind {
                    SearchKind::FileNames => format!(
                        "no file name matches the glob {} in {place} ({files} files{limits})",
                        labels.join(", ")
                    ),
                    SearchKind::Lines => format!(
                        "no line matches {} in {place} (searched {files} files{limits})",
                        labels.join(", ")
                    ),
                    // Never "it does not exist": what was searched, and where.
                    SearchKind::Passages => format!(
                        "no passage in {place} matched {} ({files} documents searched{limits})",
                        labels.join(", ")
                    ),
                },
                sources: calls
                    .into_iter()
                    .map(|id| SourceId::Record {
                        kind: "call".into(),
                        id,
                    })
                    .collect(),
                kind: ConclusionKind::NegativeEvidence,
            },
        )
        .collect()
}
