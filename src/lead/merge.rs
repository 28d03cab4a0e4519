//! Merging, pure: the accepted handoffs of a run into the lead's own handoff. Duplicate
//! conclusions are merged with their sources kept; negative evidence is derived from the
//! subagents' observation logs, not from their prose.

use crate::contracts::RoleId;
use std::collections::HashMap;

use super::relevance::Rarity;
use crate::handoff::{
    Conclusion, ConclusionKind, Dropped, Files, Handoff, HardConstraint, OpenItem,
};
use crate::report::ReportedConstraint;
use crate::source::{Observation, ObservationLog, SourceId};
use crate::text::one_line;

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
#[derive(Clone)]
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
    /// Its wave (1: the first plan; more: a follow-up; 0: a verifier's check).
    pub(crate) wave: u32,
}

/// A shard nobody explored, and why.
pub(crate) struct Unexplored<'a> {
    pub(crate) id: String,
    /// Its role: an explorer leaves a shard unexplored, a verifier a check undone.
    pub(crate) role: RoleId,
    pub(crate) scope: String,
    pub(crate) why: String,
    /// A handoff that was handed off and rejected: its violations' codes (the shard was
    /// explored, its findings did not pass).
    pub(crate) rejected: Option<String>,
    /// What a rejected handoff claimed: listed as unverified leads, never settled.
    pub(crate) unverified: Option<&'a Handoff>,
}

/// Merges accepted handoffs as a lead does: duplicate conclusions (the same claim, or lines
/// overlapping or adjacent in one file) merged with their sources, findings in the report's
/// order (the question's subject first, source before tests before docs, definitions and code
/// before uses before mentions, then the rarity of what they match; no file is read here, so
/// a finding's role comes from its claim alone), negative evidence derived from the searches
/// each observation log holds. Each entry is a handoff, its subagent's shard (its
/// paths) and its observation log, in shard order.
/// ```
/// let parse = |t: &str| baton::parse_handoff(t).handoff;
/// let a = parse("## Settled conclusions\n- f is `fn f()` [a.rs:1]\n## Open items\n## Hard constraints\n- none\n");
/// let b = parse("## Settled conclusions\n- g is `fn g()` [b.rs:1]\n## Open items\n## Hard constraints\n- none\n");
/// let merged = baton::merge_handoffs(&[
///     (a, vec!["a.rs".into()], baton::ObservationLog::default()),
///     (b, vec!["b.rs".into()], baton::ObservationLog::default()),
/// ]);
/// assert_eq!(merged.settled_conclusions.len(), 2);
/// ```
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
            wave: 1,
        })
        .collect();
    merge(&list, &[], WHOLE_TREE)
}

/// What negative evidence calls everything the shards covered, when no constraint narrowed it.
pub(crate) const WHOLE_TREE: &str = "the whole tree";

/// The lead's handoff from the accepted ones (in shard order) and the unexplored shards,
/// every finding kept: the answers first, then the rest in rank order, before the negative
/// evidence. `whole` names everything the shards covered ("the whole tree", or the read
/// scope the constraints allow).
pub(crate) fn merge(
    accepted: &[Accepted<'_>],
    unexplored: &[Unexplored<'_>],
    whole: &str,
) -> Handoff {
    let files = crate::handoff::MemoryFiles::new();
    let merged = merge_ranked(accepted, unexplored, whole, &files);
    let mut handoff = merged.handoff;
    let at = handoff
        .settled_conclusions
        .iter()
        .position(|c| c.kind != ConclusionKind::Finding)
        .unwrap_or(handoff.settled_conclusions.len());
    let rest = merged.also_found.into_iter().map(|(c, _)| c);
    handoff.settled_conclusions.splice(at..at, rest);
    handoff
}

/// The lead's handoff with its ranking: the reason of each settled conclusion's rank (in
/// their order) and the findings listed after the answers.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    pub(crate) handoff: Handoff,
    /// One per settled conclusion, in order.
    pub(crate) reasons: Vec<String>,
    /// Findings that do not answer (common words only, or far below the best), in rank order
    /// with their reasons.
    pub(crate) also_found: Vec<(Conclusion, String)>,
}

/// [`merge`], its findings ranked with the cited lines `files` holds.
pub(crate) fn merge_ranked(
    accepted: &[Accepted<'_>],
    unexplored: &[Unexplored<'_>],
    whole: &str,
    files: &dyn Files,
) -> Merged {
    let mut out = Handoff::default();
    let mut merged = Merged::default();
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
    for r in ranked_findings(accepted, &stands, files) {
        if r.answers {
            out.settled_conclusions.push(r.conclusion);
            merged.reasons.push(r.reason);
        } else {
            merged.also_found.push((r.conclusion, r.reason));
        }
    }
    let mut open_items = OpenItems::default();
    // Negative evidence is about the question: what the first wave (and a verifier) searched,
    // not the names follow-ups traced.
    let asked: Vec<Accepted<'_>> = accepted
        .iter()
        .filter(|a| a.wave <= 1)
        .map(Accepted::clone)
        .collect();
    let (absent, unsearched) =
        super::absence::negative_evidence(&asked, unexplored.is_empty(), whole);
    merged.reasons.extend(
        absent
            .iter()
            .map(|_| "negative evidence: what was searched and matched nothing".to_string()),
    );
    out.settled_conclusions.extend(absent);
    for item in unsearched {
        open_items.add(item);
    }
    for a in accepted {
        not_settled(a, &stands, &mut open_items);
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
        unexplored_items(u, &mut open_items);
    }
    out.open_items = open_items.list;
    merged.handoff = out;
    merged
}

/// The findings that stand, taken in turn from each subagent (duplicates merged), most
/// telling first: by the rarity of what each claim matches (ties keep the turns).
fn ranked_findings(
    accepted: &[Accepted<'_>],
    stands: &impl Fn(&Accepted<'_>, &Conclusion) -> bool,
    files: &dyn Files,
) -> Vec<super::ranking::Ranked> {
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
    let merged = merged.list;
    // Most telling first: by the rarity of what each claim matches (ties keep the turns).
    let own: std::collections::BTreeSet<&str> = accepted
        .iter()
        .filter(|a| a.wave <= 1)
        .flat_map(|a| a.searches.iter().map(|s| s.pattern.as_str()))
        .collect();
    let rarity = Rarity::from_counts(
        accepted
            .iter()
            .flat_map(|a| a.searches.iter().map(|s| (s.pattern.as_str(), s.matches))),
    )
    .capped(&own);
    // A finding only a follow-up made: no first-wave subagent handed it off (a verifier that
    // confirms a follow-up's finding re-states it; it did not find it).
    let first: std::collections::HashSet<&str> = accepted
        .iter()
        .filter(|a| a.wave <= 1 && !a.verifier)
        .flat_map(|a| {
            a.handoff
                .settled_conclusions
                .iter()
                .map(|c| c.claim.as_str())
        })
        .collect();
    // Which follow-up made a finding no first-wave subagent handed off.
    let follow_up = |c: &Conclusion| {
        if first.contains(c.claim.as_str()) {
            return None;
        }
        accepted.iter().position(|a| {
            a.wave > 1
                && a.handoff
                    .settled_conclusions
                    .iter()
                    .any(|f| f.claim == c.claim)
        })
    };
    super::ranking::rank(merged, files, &rarity, &follow_up)
}

/// What of one accepted handoff is not settled: findings the verifier did not confirm,
/// conclusions taken out, and its own open items.
fn not_settled(
    a: &Accepted<'_>,
    stands: &impl Fn(&Accepted<'_>, &Conclusion) -> bool,
    open_items: &mut OpenItems,
) {
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
            stuck_on: if a.handoff.rests_on_passages() {
                "a reread of the passages it cites did not support it".into()
            } else {
                "its handoff passed only after repair, and a reread did not support it".into()
            },
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

/// What a subagent without an accepted handoff leaves open: its scope or its check, and its
/// claims as unverified leads.
fn unexplored_items(u: &Unexplored<'_>, open_items: &mut OpenItems) {
    open_items.add(OpenItem {
        item: if let Some(codes) = &u.rejected {
            format!(
                "`{}` was explored by subagent {}, but its handoff was rejected ({codes}): its claims follow as unverified leads",
                u.scope, u.id
            )
        } else if u.role == RoleId::EXPLORER {
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

#[cfg(test)]
mod tests;
