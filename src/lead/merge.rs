//! Merging, pure: the accepted handoffs of a run into the lead's own handoff. Duplicate
//! conclusions are merged with their sources kept; negative evidence is derived from the
//! subagents' observation logs, not from their prose.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::relevance::Rarity;
use crate::handoff::{Conclusion, ConclusionKind, Dropped, Handoff, HardConstraint, OpenItem};
use crate::text::one_line;
use crate::report::ReportedConstraint;
use crate::source::{
    path_factor, prose_list, search_label, shadowed, Observation, ObservationLog, SourceId,
};

/// One search a subagent ran, as a finished subagent keeps it for the merge: what it looked
/// for and how it fared, and where — `None` for the subagent's whole shard, which its record
/// holds once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Search {
    pub(crate) call_id: String,
    pub(crate) pattern: String,
    pub(crate) case_insensitive: bool,
    pub(crate) fixed_string: bool,
    pub(crate) matches: usize,
    pub(crate) files_searched: usize,
    pub(crate) files_skipped: usize,
    pub(crate) not_searched: usize,
    pub(crate) not_searched_names: Vec<String>,
    pub(crate) scope: Option<Vec<String>>,
}

/// The searches of an observation log, a search of the whole `shard` holding no scope of its
/// own: the rest of the log (the lines shown) is not needed once the handoff is checked.
pub(crate) fn searches_of(log: &ObservationLog, shard: &[String]) -> Vec<Search> {
    log.entries()
        .iter()
        .filter_map(|o| match o {
            Observation::Searched {
                call_id,
                pattern,
                scope,
                matches,
                files_searched,
                files_skipped,
                case_insensitive,
                fixed_string,
                not_searched,
                not_searched_names,
            } => Some(Search {
                call_id: call_id.clone(),
                pattern: pattern.clone(),
                case_insensitive: *case_insensitive,
                fixed_string: *fixed_string,
                matches: *matches,
                files_searched: *files_searched,
                files_skipped: *files_skipped,
                not_searched: *not_searched,
                not_searched_names: not_searched_names.iter().take(5).cloned().collect(),
                scope: (scope.as_slice() != shard).then(|| scope.clone()),
            }),
            _ => None,
        })
        .collect()
}

/// One subagent's accepted work.
pub(crate) struct Accepted<'a> {
    pub(crate) handoff: &'a Handoff,
    /// The subagent's shard.
    pub(crate) scope: &'a [String],
    /// The searches it ran.
    pub(crate) searches: &'a [Search],
    /// A verifier's handoff: its findings are what it confirmed.
    pub(crate) verifier: bool,
    /// The lead doubted this handoff (it passed only after repair): its findings stand only if
    /// a verifier confirmed them, when a verifier's handoff was accepted.
    pub(crate) doubted: bool,
    /// The subagent's id.
    pub(crate) id: &'a str,
    /// Conclusions taken out of it: they alone broke the contract.
    pub(crate) dropped: &'a [Dropped],
}

/// A shard nobody explored, and why.
pub(crate) struct Unexplored<'a> {
    pub(crate) id: String,
    /// Its role: an explorer leaves a shard unexplored, a verifier a check undone.
    pub(crate) role: String,
    pub(crate) scope: String,
    pub(crate) why: String,
    /// A handoff that was handed off and rejected: its violations' codes (the shard was
    /// explored, its findings did not pass).
    pub(crate) rejected: Option<String>,
    /// What a rejected handoff claimed: listed as unverified leads, never settled.
    pub(crate) unverified: Option<&'a Handoff>,
}

/// Merges accepted handoffs as a lead does: duplicate conclusions merged with their sources,
/// conclusions ordered by the rarity of what they match, negative evidence derived from the
/// searches each observation log holds. Each entry is a handoff, its subagent's shard (its
/// paths) and its observation log, in shard order.
pub fn merge_handoffs(accepted: &[(Handoff, Vec<String>, ObservationLog)]) -> Handoff {
    let searches: Vec<Vec<Search>> = accepted
        .iter()
        .map(|(_, scope, log)| searches_of(log, scope))
        .collect();
    let list: Vec<Accepted<'_>> = accepted
        .iter()
        .zip(&searches)
        .map(|((handoff, scope, _), searches)| Accepted {
            handoff,
            scope,
            searches,
            verifier: false,
            doubted: false,
            id: "",
            dropped: &[],
        })
        .collect();
    merge(&list, &[], WHOLE_TREE)
}

/// What negative evidence calls everything the shards covered, when no constraint narrowed it.
pub(crate) const WHOLE_TREE: &str = "the whole tree";

/// The lead's handoff from the accepted ones (in shard order) and the unexplored shards.
/// `whole` names everything the shards covered ("the whole tree", or the read scope the
/// constraints allow).
pub(crate) fn merge(
    accepted: &[Accepted<'_>],
    unexplored: &[Unexplored<'_>],
    whole: &str,
) -> Handoff {
    let mut out = Handoff::default();
    // Findings, taken in turn from each subagent, duplicates merged.
    // What an accepted verifier confirmed: a claim (its words) with the sources it cites. A
    // doubted finding stands only if the verifier settled that same claim on a source it
    // cites — confirming one claim on a range confirms no other claim on it.
    let confirmed: Option<Vec<(String, &[SourceId])>> =
        accepted.iter().any(|a| a.verifier).then(|| {
            accepted
                .iter()
                .filter(|a| a.verifier)
                .flat_map(|a| a.handoff.settled_conclusions.iter())
                .map(|c| (one_line(&c.claim), c.sources.as_slice()))
                .collect()
        });
    let stands = |a: &Accepted<'_>, c: &Conclusion| match (&confirmed, a.doubted) {
        (Some(ok), true) => ok.iter().any(|(claim, sources)| {
            *claim == one_line(&c.claim) && c.sources.iter().any(|s| sources.contains(s))
        }),
        _ => true,
    };
    let findings: Vec<Vec<&Conclusion>> = accepted
        .iter()
        .map(|a| {
            a.handoff
                .settled_conclusions
                .iter()
                .filter(|c| c.kind == ConclusionKind::Finding && stands(a, c))
                .collect()
        })
        .collect();
    let longest = findings.iter().map(Vec::len).max().unwrap_or(0);
    let mut merged = Findings::default();
    for rank in 0..longest {
        for list in &findings {
            if let Some(c) = list.get(rank) {
                merged.add(c);
            }
        }
    }
    out.settled_conclusions = merged.list;
    let mut open_items = OpenItems::default();
    // Most telling first: by the rarity of what each claim matches (ties keep the turns).
    let rarity = Rarity::from_counts(
        accepted
            .iter()
            .flat_map(|a| a.searches.iter().map(|s| (s.pattern.as_str(), s.matches))),
    );
    let mut scored: Vec<(f64, Conclusion)> = out
        .settled_conclusions
        .drain(..)
        .map(|c| (rarity.score(&c.claim) * source_weight(&c), c))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.settled_conclusions = scored.into_iter().map(|(_, c)| c).collect();
    let (absent, unsearched) = negative_evidence(accepted, unexplored.is_empty(), whole);
    out.settled_conclusions.extend(absent);
    for item in unsearched {
        open_items.add(item);
    }
    for a in accepted {
        for c in a
            .handoff
            .settled_conclusions
            .iter()
            .filter(|c| c.kind == ConclusionKind::Finding && !stands(a, c))
        {
            let cites: Vec<String> = c.sources.iter().map(|s| s.to_string()).collect();
            open_items.add(OpenItem {
                item: format!(
                    "Not confirmed by the verifier: {} (cites {})",
                    c.claim,
                    cites.join(", ")
                ),
                stuck_on: "its handoff passed only after repair, and a reread did not support it"
                    .into(),
            });
        }
        for d in a.dropped {
            let cites: Vec<String> = d.conclusion.sources.iter().map(|s| s.to_string()).collect();
            let broke: Vec<String> = d
                .violations
                .iter()
                .map(|v| format!("[{}] {}", v.code, v.message))
                .collect();
            open_items.add(OpenItem {
                item: format!(
                    "Taken out of {}'s handoff, which broke the contract only there: {} (cites {})",
                    a.id,
                    d.conclusion.claim,
                    if cites.is_empty() {
                        "nothing".into()
                    } else {
                        cites.join(", ")
                    }
                ),
                stuck_on: format!("not settled: {}", broke.join("; ")),
            });
        }
        for item in &a.handoff.open_items {
            open_items.add(item.clone());
        }
    }
    let reporters = accepted.iter().map(|a| (a.id, a.handoff));
    out.hard_constraints = reported_constraints(reporters)
        .iter()
        .map(|r| HardConstraint {
            constraint: r.line(),
            sources: r.sources.clone(),
        })
        .collect();
    for u in unexplored {
        open_items.add(OpenItem {
            item: if let Some(codes) = &u.rejected {
                format!(
                    "`{}` was explored by subagent {}, but its handoff was rejected ({codes}): its claims follow as unverified leads",
                    u.scope, u.id
                )
            } else if u.role == "explorer" {
                format!("`{}` was not explored (subagent {})", u.scope, u.id)
            } else {
                format!(
                    "The {} (subagent {}) did not finish its check",
                    u.role, u.id
                )
            },
            stuck_on: u.why.clone(),
        });
        let claims = u
            .unverified
            .map(|h| h.settled_conclusions.as_slice())
            .unwrap_or(&[]);
        for c in claims.iter().filter(|c| c.kind == ConclusionKind::Finding) {
            let cites: Vec<String> = c.sources.iter().map(|s| s.to_string()).collect();
            open_items.add(OpenItem {
                item: format!(
                    "Unverified lead from {} (its handoff broke the contract): {} (cites {})",
                    u.id,
                    c.claim,
                    if cites.is_empty() {
                        "nothing".into()
                    } else {
                        cites.join(", ")
                    }
                ),
                stuck_on: "not verified: re-check the cited lines before relying on it".into(),
            });
        }
    }
    out.open_items = open_items.list;
    out
}

/// The limits the handoffs reported in their Hard constraints, each once (by its normal
/// form) with everyone who reported it: data for the reader, never a rule.
pub(crate) fn reported_constraints<'a>(
    handoffs: impl IntoIterator<Item = (&'a str, &'a Handoff)>,
) -> Vec<ReportedConstraint> {
    let mut out: Vec<ReportedConstraint> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (who, handoff) in handoffs {
        for h in &handoff.hard_constraints {
            let key = crate::text::normalise(&h.constraint);
            let i = *at.entry(key).or_insert_with(|| {
                out.push(ReportedConstraint {
                    text: h.constraint.clone(),
                    reported_by: Vec::new(),
                    sources: Vec::new(),
                });
                out.len() - 1
            });
            let r = &mut out[i];
            if !who.is_empty() && !r.reported_by.iter().any(|w| w == who) {
                r.reported_by.push(who.to_string());
            }
            for s in &h.sources {
                if !r.sources.contains(s) {
                    r.sources.push(s.clone());
                }
            }
        }
    }
    out
}

/// Source above tests and docs: the weight of the best kind of file a conclusion cites.
fn source_weight(c: &Conclusion) -> f64 {
    c.sources
        .iter()
        .filter_map(|s| s.file_lines().map(|(path, _, _)| path_factor(path)))
        .fold(0.0, f64::max)
        .max(0.3)
}

/// Findings merged as they come: findings of the same claim are one (their sources joined); a
/// finding citing exactly the sources of one kept is dropped. Indexed by claim and by sources,
/// so each costs the same however many came before.
#[derive(Default)]
struct Findings {
    list: Vec<Conclusion>,
    by_claim: HashMap<String, usize>,
    /// How many kept findings cite exactly these sources.
    by_sources: HashMap<Vec<SourceId>, usize>,
}

impl Findings {
    fn add(&mut self, c: &Conclusion) {
        if let Some(&i) = self.by_claim.get(&c.claim) {
            let same = &mut self.list[i];
            let before = same.sources.clone();
            for s in &c.sources {
                if !same.sources.contains(s) {
                    same.sources.push(s.clone());
                }
            }
            if same.sources != before {
                if let Some(n) = self.by_sources.get_mut(&before) {
                    *n = n.saturating_sub(1);
                }
                *self.by_sources.entry(same.sources.clone()).or_default() += 1;
            }
            return;
        }
        if self.by_sources.get(&c.sources).is_some_and(|n| *n > 0) {
            return;
        }
        self.by_claim.insert(c.claim.clone(), self.list.len());
        *self.by_sources.entry(c.sources.clone()).or_default() += 1;
        self.list.push(c.clone());
    }
}

/// Open items with the same text are one item; their reasons are joined. Indexed by text.
#[derive(Default)]
struct OpenItems {
    list: Vec<OpenItem>,
    by_item: HashMap<String, usize>,
}

impl OpenItems {
    fn add(&mut self, item: OpenItem) {
        if let Some(&i) = self.by_item.get(&item.item) {
            let same = &mut self.list[i];
            if !item.stuck_on.is_empty() && !same.stuck_on.contains(&item.stuck_on) {
                if !same.stuck_on.is_empty() {
                    same.stuck_on.push_str("; ");
                }
                same.stuck_on.push_str(&item.stuck_on);
            }
            return;
        }
        self.by_item.insert(item.item.clone(), self.list.len());
        self.list.push(item);
    }
}

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
fn negative_evidence(
    accepted: &[Accepted<'_>],
    all_handed_off: bool,
    whole: &str,
) -> (Vec<Conclusion>, Vec<OpenItem>) {
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
    let explorers: Vec<usize> = (0..accepted.len())
        .filter(|i| !accepted[*i].verifier)
        .collect();
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
    // What matched somewhere: an empty search whose words a matching one spells out is not
    // evidence of absence.
    let matched: Vec<&str> = groups
        .iter()
        .filter(|((pattern, _, _), g)| g.found && !pattern.starts_with("glob:"))
        .map(|((pattern, _, _), _)| *pattern)
        .collect();
    // Patterns that found nothing, grouped by where they were searched and how many files.
    type Place = (bool, String, usize, String);
    let mut by_place: BTreeMap<Place, (Vec<String>, Vec<String>)> = BTreeMap::new();
    let mut unsearched = Vec::new();
    for ((pattern, insensitive, fixed), g) in groups.iter().filter(|(_, g)| !g.found) {
        if !pattern.starts_with("glob:") && shadowed(pattern, &matched) {
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
                    search_label(pattern.trim_start_matches("glob:"), *insensitive, *fixed)
                ),
            });
            continue;
        }
        let covered = all_handed_off
            && skipped == 0
            && !explorers.is_empty()
            && explorers.iter().all(|i| g.shards.contains(i));
        let place = match (covered, left_out) {
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
            limits.push(format!(
                "not searched: {left_out} hidden or ignored entries or links ({}{})",
                names.join(", "),
                if left_out > names.len() { ", …" } else { "" }
            ));
        }
        let (glob, label) = match pattern.strip_prefix("glob:") {
            Some(glob) => (true, search_label(glob, *insensitive, true)),
            None => (false, search_label(pattern, *insensitive, *fixed)),
        };
        let limits = limits.iter().map(|l| format!("; {l}")).collect::<String>();
        let entry = by_place.entry((glob, place, files, limits)).or_default();
        entry.0.push(label);
        entry.1.extend(g.calls.iter().cloned());
    }
    let found = by_place
        .into_iter()
        .map(
            |((glob, place, files, limits), (labels, calls))| Conclusion {
                claim: if glob {
                    format!(
                        "no file name matches the glob {} in {place} ({files} files{limits})",
                        labels.join(", ")
                    )
                } else {
                    format!(
                        "no line matches {} in {place} (searched {files} files{limits})",
                        labels.join(", ")
                    )
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
        .collect();
    (found, unsearched)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(claim: &str, source: &str) -> Conclusion {
        Conclusion {
            claim: claim.into(),
            sources: vec![SourceId::parse(source).unwrap()],
            kind: ConclusionKind::Finding,
        }
    }

    fn searched(log: &mut ObservationLog, id: &str, pattern: &str, matches: usize) {
        log.record([Observation::Searched {
            call_id: id.into(),
            pattern: pattern.into(),
            scope: vec![format!("dir-{id}")],
            matches,
            files_searched: 3,
            files_skipped: 0,
            case_insensitive: false,
            fixed_string: false,
            not_searched: 0,
            not_searched_names: Vec::new(),
        }]);
    }

    #[test]
    fn duplicates_merge_and_negative_evidence_needs_every_search_empty() {
        let a = Handoff {
            settled_conclusions: vec![finding("x", "a.rs:1-2"), finding("y", "b.rs:3")],
            ..Handoff::default()
        };
        let b = Handoff {
            settled_conclusions: vec![finding("x", "c.rs:1"), finding("z", "b.rs:3")],
            ..Handoff::default()
        };
        let mut log_a = ObservationLog::default();
        let mut log_b = ObservationLog::default();
        searched(&mut log_a, "sa1.1", "gzip", 0);
        searched(&mut log_b, "sa2.1", "gzip", 0);
        searched(&mut log_a, "sa1.2", "body", 0);
        searched(&mut log_b, "sa2.2", "body", 4);
        let (scope_a, scope_b) = (["dir-sa1.1".to_string()], ["dir-sa2.1".to_string()]);
        let (searches_a, searches_b) =
            (searches_of(&log_a, &scope_a), searches_of(&log_b, &scope_b));
        let accepted = [
            Accepted {
                handoff: &a,
                scope: &scope_a,
                searches: &searches_a,
                verifier: false,
                doubted: false,
                id: "",
                dropped: &[],
            },
            Accepted {
                handoff: &b,
                scope: &scope_b,
                searches: &searches_b,
                verifier: false,
                doubted: false,
                id: "",
                dropped: &[],
            },
        ];
        let everything = merge(&accepted, &[], WHOLE_TREE);
        let negative = everything.settled_conclusions.last().unwrap();
        assert!(
            negative.claim.contains("in the whole tree"),
            "{}",
            negative.claim
        );
        let merged = merge(
            &accepted,
            &[Unexplored {
                id: "sa3".into(),
                role: "explorer".into(),
                scope: "tests".into(),
                why: "panicked".into(),
                rejected: None,
                unverified: Some(&Handoff {
                    settled_conclusions: vec![finding("w", "t.rs:9")],
                    ..Handoff::default()
                }),
            }],
            WHOLE_TREE,
        );
        let claims: Vec<&str> = merged
            .settled_conclusions
            .iter()
            .map(|c| c.claim.as_str())
            .collect();
        assert_eq!(claims[0], "x");
        assert_eq!(merged.settled_conclusions[0].sources.len(), 2);
        assert_eq!(claims[1], "y");
        let negative = merged.settled_conclusions.last().unwrap();
        assert_eq!(negative.kind, ConclusionKind::NegativeEvidence);
        assert!(negative.claim.contains("/gzip/") && !negative.claim.contains("body"));
        assert_eq!(negative.sources.len(), 2);
        assert!(merged.open_items[0].item.contains("tests"));
        assert!(merged.open_items[1]
            .item
            .starts_with("Unverified lead from sa3"));
        assert!(merged.open_items[1].item.contains("t.rs:9"));
        assert!(!merged
            .settled_conclusions
            .iter()
            .any(|c| c.sources.iter().any(|s| s.to_string() == "t.rs:9")));
    }

    #[test]
    fn source_outranks_a_test_citing_the_same_terms() {
        let a = Handoff {
            settled_conclusions: vec![finding("the `parse` call", "tests/t.rs:1-3")],
            ..Handoff::default()
        };
        let b = Handoff {
            settled_conclusions: vec![finding("the `parse` function", "src/p.rs:4-9")],
            ..Handoff::default()
        };
        let mut log = ObservationLog::default();
        searched(&mut log, "sa1.1", "parse", 2);
        let searches = searches_of(&log, &[]);
        let accepted = [
            Accepted {
                handoff: &a,
                scope: &[],
                searches: &searches,
                verifier: false,
                doubted: false,
                id: "",
                dropped: &[],
            },
            Accepted {
                handoff: &b,
                scope: &[],
                searches: &searches,
                verifier: false,
                doubted: false,
                id: "",
                dropped: &[],
            },
        ];
        let merged = merge(&accepted, &[], WHOLE_TREE);
        assert_eq!(merged.settled_conclusions[0].claim, "the `parse` function");
    }

    fn accepted<'a>(handoff: &'a Handoff, scope: &'a [String], log: &'a [Search]) -> Accepted<'a> {
        Accepted {
            handoff,
            scope,
            searches: log,
            verifier: false,
            doubted: false,
            id: "",
            dropped: &[],
        }
    }

    fn search(id: &str, pattern: &str, scope: &str, insensitive: bool, fixed: bool) -> Observation {
        Observation::Searched {
            call_id: id.into(),
            pattern: pattern.into(),
            scope: vec![scope.into()],
            matches: 0,
            files_searched: 4,
            files_skipped: 0,
            case_insensitive: insensitive,
            fixed_string: fixed,
            not_searched: 0,
            not_searched_names: Vec::new(),
        }
    }

    /// Issue 9, item 5: "the whole tree" is decided per pattern — a pattern one shard never
    /// searched is not absent from the whole tree, even when the union of all the empty
    /// searches' scopes is the tree; and a search keeps its flags.
    #[test]
    fn the_whole_tree_only_for_a_pattern_every_shard_searched() {
        let empty = Handoff::default();
        let (scope_a, scope_b) = (["src".to_string()], ["tests".to_string()]);
        let mut log_a = ObservationLog::default();
        let mut log_b = ObservationLog::default();
        log_a.record([
            search("sa1.1", "gzip", "src", true, false),
            search("sa1.2", "brotli", "src", false, false),
            search("sa1.3", "zstd", "src", false, true),
        ]);
        log_b.record([
            search("sa2.1", "gzip", "tests", true, false),
            search("sa2.2", "deflate", "tests", false, false),
        ]);
        let (searches_a, searches_b) =
            (searches_of(&log_a, &scope_a), searches_of(&log_b, &scope_b));
        let merged = merge(
            &[
                accepted(&empty, &scope_a, &searches_a),
                accepted(&empty, &scope_b, &searches_b),
            ],
            &[],
            WHOLE_TREE,
        );
        let claims: Vec<&str> = merged
            .settled_conclusions
            .iter()
            .filter(|c| c.kind == ConclusionKind::NegativeEvidence)
            .map(|c| c.claim.as_str())
            .collect();
        let whole: Vec<&&str> = claims
            .iter()
            .filter(|c| c.contains("the whole tree"))
            .collect();
        assert_eq!(whole.len(), 1, "{claims:?}");
        assert!(whole[0].contains("/gzip/i"), "{claims:?}");
        assert!(!whole[0].contains("brotli") && !whole[0].contains("deflate"));
        assert!(claims
            .iter()
            .any(|c| c.contains("/brotli/") && c.contains("in src ")));
        assert!(claims.iter().any(|c| c.contains("\"zstd\"")), "{claims:?}");
        assert!(claims
            .iter()
            .any(|c| c.contains("/deflate/") && c.contains("in tests ")));
    }

    /// Issue 9, item 6: confirming one doubted claim on a range confirms no other claim on
    /// the same range.
    #[test]
    fn a_verifier_confirms_claims_not_ranges() {
        let explorer = Handoff {
            settled_conclusions: vec![
                finding("`next_delay` doubles the delay", "a.rs:1-5"),
                finding("`next_delay` never waits", "a.rs:1-5"),
            ],
            ..Handoff::default()
        };
        let verifier = Handoff {
            settled_conclusions: vec![finding("`next_delay`  doubles the delay", "a.rs:1-5")],
            ..Handoff::default()
        };
        let log: Vec<Search> = Vec::new();
        let scope = ["src".to_string()];
        let merged = merge(
            &[
                Accepted {
                    doubted: true,
                    ..accepted(&explorer, &scope, &log)
                },
                Accepted {
                    verifier: true,
                    ..accepted(&verifier, &[], &log)
                },
            ],
            &[],
            WHOLE_TREE,
        );
        let settled: Vec<&str> = merged
            .settled_conclusions
            .iter()
            .map(|c| c.claim.as_str())
            .collect();
        assert!(
            settled.contains(&"`next_delay` doubles the delay"),
            "{settled:?}"
        );
        assert!(
            !settled.contains(&"`next_delay` never waits"),
            "{settled:?}"
        );
        assert!(merged
            .open_items
            .iter()
            .any(|o| o.item.contains("`next_delay` never waits")));
    }
}
