//! Branches of a run, pure: a fork shares its parent's log up to a sequence number and goes
//! on from there (perhaps on another question); a merge builds a new run from two branches'
//! semantic states — settled conclusions with their evidence, effects, constraints — keeping
//! once what agrees and turning what conflicts into open items that name both branches.
//! Nothing is chosen by recency, and no constraint is dropped.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::event::{LoggedEvent, RunEvent};
use super::projection::project;
use crate::handoff::{Conclusion, Handoff, HardConstraint, OpenItem};

/// One branch of a merge, as its `run_merged` event names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedBranch {
    /// The run.
    pub run_id: String,
    /// Its last event when it was merged.
    pub last_seq: u64,
    /// That event's digest.
    pub last_digest: String,
}

/// Where a run comes from, when it is a branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Lineage {
    /// A fork of `parent` at `at_seq`.
    Fork {
        /// The run forked.
        parent: String,
        /// The last event shared.
        at_seq: u64,
    },
    /// A merge of two runs.
    Merge {
        /// The runs merged.
        branches: Vec<String>,
    },
}

/// Where a run comes from, read from its log (none: it is not a branch).
pub fn lineage(events: &[LoggedEvent]) -> Option<Lineage> {
    // The last branching event: a fork of a fork names its own parent, a fork of a merge is
    // a fork.
    events.iter().rev().find_map(|e| match &e.event {
        RunEvent::RunForked { parent, at_seq, .. } => Some(Lineage::Fork {
            parent: parent.clone(),
            at_seq: *at_seq,
        }),
        RunEvent::RunMerged { branches, .. } => Some(Lineage::Merge {
            branches: branches.iter().map(|b| b.run_id.clone()).collect(),
        }),
        _ => None,
    })
}

/// The log of a fork of `parent` at `at`: its events up to `at`, as they were, then the
/// `run_forked` event naming the parent, the event and its digest, and the new question if
/// there is one. Refused when `at` is not an event of the parent.
pub fn fork_events(
    parent: &str,
    events: &[LoggedEvent],
    at: u64,
    question: Option<&str>,
) -> Result<Vec<(u64, RunEvent)>, String> {
    let question = match question.map(str::trim) {
        Some("") => return Err("the question is empty".to_string()),
        Some(q) if crate::text::sentences(q).iter().any(|s| crate::text::binds(s)) => {
            return Err(
                "a fork's question cannot state a constraint: ask the question alone (the fork keeps its parent's constraints)"
                    .to_string(),
            )
        }
        Some(q) => Some(crate::redact::scrubbed(q.to_string())),
        None => None,
    };
    let Some(last) = events.iter().find(|e| e.seq == at) else {
        let end = events.last().map_or(0, |e| e.seq);
        return Err(format!(
            "{parent} has no event {at} (its events are 1..={end})"
        ));
    };
    if !matches!(
        events.first().map(|e| &e.event),
        Some(RunEvent::RunStarted { .. })
    ) {
        return Err(format!("{parent} does not start with run_started"));
    }
    let mut out: Vec<(u64, RunEvent)> = events
        .iter()
        .take_while(|e| e.seq <= at)
        .map(|e| (e.at_ms, e.event.clone()))
        .collect();
    out.push((
        super::now_ms(),
        RunEvent::RunForked {
            parent: parent.to_string(),
            at_seq: at,
            parent_digest: last.digest.clone(),
            question,
        },
    ));
    // Whatever SEQ, the fork is bound as its parent is: every constraint the parent stated
    // later, and every source it withdrew later, follow the fork's mark.
    for e in events.iter().filter(|e| e.seq > at) {
        if matches!(
            e.event,
            RunEvent::ConstraintStated { .. } | RunEvent::SourceForgotten { .. }
        ) {
            out.push((e.at_ms, e.event.clone()));
        }
    }
    Ok(out)
}

/// What one branch settled, for a merge.
struct State<'a> {
    id: &'a str,
    question: String,
    root: String,
    /// Settled conclusions by claim (normalised), with their sources.
    settled: BTreeMap<String, (Conclusion, BTreeSet<String>)>,
    /// The digest of each cited source's text, as accepted.
    digests: BTreeMap<String, String>,
    /// Open items.
    open: Vec<OpenItem>,
    /// Constraints stated, by normalised text.
    constraints: BTreeMap<String, RunEvent>,
    /// The hard constraints its handoffs carried.
    stated: Vec<HardConstraint>,
    /// Each effect's state, by intent (its call id when it has no intent digest).
    effects: BTreeMap<String, (String, String)>,
}

fn state_of<'a>(
    id: &'a str,
    events: &[LoggedEvent],
    gone: &[(crate::source::SourceId, super::forget::Tombstone)],
) -> State<'a> {
    let cp = project(id, events);
    let mut s = State {
        id,
        question: cp.goal.clone(),
        root: cp.root.clone(),
        settled: BTreeMap::new(),
        digests: BTreeMap::new(),
        open: Vec::new(),
        constraints: BTreeMap::new(),
        stated: Vec::new(),
        effects: BTreeMap::new(),
    };
    for e in events {
        match &e.event {
            RunEvent::HandoffAccepted {
                handoff,
                evidence_digests,
                ..
            } => {
                let mut handoff = handoff.clone();
                super::forget::withdraw(&mut handoff, gone);
                for h in &handoff.hard_constraints {
                    s.stated.push(h.clone());
                }
                for c in handoff.settled_conclusions {
                    let sources = c.sources.iter().map(ToString::to_string).collect();
                    s.settled
                        .entry(crate::text::normalise(&c.claim))
                        .or_insert((c, sources));
                }
                s.open.extend(handoff.open_items);
                s.digests.extend(evidence_digests.clone());
            }
            RunEvent::ConstraintStated { normalised, .. } => {
                s.constraints.insert(normalised.clone(), e.event.clone());
            }
            _ => {}
        }
    }
    for effect in &cp.effects {
        let key = if effect.intent.is_empty() {
            effect.intent_id.clone()
        } else {
            effect.intent.clone()
        };
        s.effects.insert(
            key,
            (
                format!("{} ({})", effect.intent_id, effect.tool),
                effect.state.name().to_string(),
            ),
        );
        if effect.state.is_unresolved() {
            s.open.push(OpenItem {
                item: format!(
                    "The effect {} ({}) is {} in {id}",
                    effect.intent_id,
                    effect.tool,
                    effect.state.name()
                ),
                stuck_on:
                    "a merge carries no effect: reconcile it in its branch before acting on it"
                        .to_string(),
            });
        }
    }
    s
}

/// A merge's new log and the conflicts it found (each also an open item of its handoff).
pub struct Merged {
    /// The new run's events, in order.
    pub events: Vec<(u64, RunEvent)>,
    /// The conflicts, one line each.
    pub conflicts: Vec<String>,
}

/// Merges two branches' semantic states into a new run's log: its `run_started` (the
/// branches' own, the question both asked or both questions), every constraint either
/// stated, a `run_merged` event, one accepted handoff holding what agrees (and what only one
/// branch settled), with each conflict as an open item naming both, and `run_finished`.
/// Refused when the branches explored different roots.
pub fn merge(a: (&str, &[LoggedEvent]), b: (&str, &[LoggedEvent])) -> Result<Merged, String> {
    // A source either branch withdrew is withdrawn from both, and stays so in the merge.
    let mut gone = super::forget::withdrawn(a.1);
    for w in super::forget::withdrawn(b.1) {
        if !gone.iter().any(|(s, _)| *s == w.0) {
            gone.push(w);
        }
    }
    let (sa, sb) = (state_of(a.0, a.1, &gone), state_of(b.0, b.1, &gone));
    if sa.root != sb.root {
        return Err(format!(
            "{} explored {} and {} explored {}: branches of different trees do not merge",
            sa.id, sa.root, sb.id, sb.root
        ));
    }
    let mut conflicts = Vec::new();
    let mut handoff = Handoff::default();
    let mut digests = BTreeMap::new();
    settle(&sa, &sb, &mut handoff, &mut digests, &mut conflicts);
    effects(&sa, &sb, &mut conflicts);
    let stated = constraints(&sa, &sb, &mut handoff, &mut conflicts);
    if sa.question != sb.question {
        conflicts.push(format!(
            "The branches ask different questions: {} asks \"{}\"; {} asks \"{}\"",
            sa.id, sa.question, sb.id, sb.question
        ));
    }
    let mut seen = BTreeSet::new();
    for item in sa.open.iter().chain(&sb.open) {
        if seen.insert(item.item.clone()) {
            handoff.open_items.push(item.clone());
        }
    }
    for c in &conflicts {
        handoff.open_items.push(OpenItem {
            item: format!("Conflict between branches: {c}"),
            stuck_on: format!("{} and {} disagree; neither is chosen", sa.id, sb.id),
        });
    }
    let started = a.1.first().map(|e| e.event.clone());
    let Some(RunEvent::RunStarted { .. }) = &started else {
        return Err(format!("{} does not start with run_started", sa.id));
    };
    let mut started = started.expect("matched above");
    if let RunEvent::RunStarted { question, .. } = &mut started {
        // The branches' own questions (a fork's, when it asked another).
        *question = if sa.question == sb.question {
            sa.question.clone()
        } else {
            format!("{} | {}", sa.question, sb.question)
        };
    }
    for h in sa.stated.iter().chain(&sb.stated) {
        if !handoff
            .hard_constraints
            .iter()
            .any(|k| k.constraint == h.constraint)
        {
            handoff.hard_constraints.push(h.clone());
        }
    }
    let now = super::now_ms();
    let mut events = vec![(now, started)];
    events.extend(stated.into_iter().map(|e| (now, e)));
    events.extend(
        gone.into_iter()
            .map(|(_, tombstone)| (now, RunEvent::SourceForgotten { tombstone })),
    );
    events.push((
        now,
        RunEvent::RunMerged {
            branches: [a, b]
                .iter()
                .map(|(id, ev)| MergedBranch {
                    run_id: id.to_string(),
                    last_seq: ev.last().map_or(0, |e| e.seq),
                    last_digest: ev.last().map(|e| e.digest.clone()).unwrap_or_default(),
                })
                .collect(),
            conflicts: conflicts.clone(),
        },
    ));
    events.push((
        now,
        RunEvent::HandoffAccepted {
            subagent: "merge".to_string(),
            handoff,
            repairs: 0,
            evidence_digests: digests,
            dropped: Vec::new(),
        },
    ));
    events.push((now, RunEvent::RunFinished { cancelled: false }));
    Ok(Merged { events, conflicts })
}

/// Settled conclusions: one both settled on the same sources — whose text both read alike —
/// is kept once; one only a branch settled is kept; one they cite differently, or whose
/// cited text they read differently, is a conflict.
fn settle(
    sa: &State,
    sb: &State,
    handoff: &mut Handoff,
    digests: &mut BTreeMap<String, String>,
    conflicts: &mut Vec<String>,
) {
    let keys: BTreeSet<&String> = sa.settled.keys().chain(sb.settled.keys()).collect();
    for key in keys {
        let (x, y) = (sa.settled.get(key), sb.settled.get(key));
        let (c, sources) = match (x, y) {
            (Some((c, xs)), Some((_, ys))) if xs != ys => {
                conflicts.push(format!(
                    "\"{}\" is settled by {} citing {} and by {} citing {}",
                    c.claim,
                    sa.id,
                    xs.iter().cloned().collect::<Vec<_>>().join(", "),
                    sb.id,
                    ys.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
                continue;
            }
            (Some(found), _) | (None, Some(found)) => found,
            (None, None) => continue,
        };
        let read_apart: Vec<&String> = sources
            .iter()
            .filter(|s| matches!((sa.digests.get(*s), sb.digests.get(*s)), (Some(p), Some(q)) if p != q))
            .collect();
        if let Some(source) = read_apart.first() {
            conflicts.push(format!(
                "\"{}\" rests on {source}, which {} and {} read differently (sha256 {} and {})",
                c.claim, sa.id, sb.id, sa.digests[*source], sb.digests[*source]
            ));
            continue;
        }
        for s in sources {
            if let Some(d) = sa.digests.get(s).or_else(|| sb.digests.get(s)) {
                digests.insert(s.clone(), d.clone());
            }
        }
        handoff.settled_conclusions.push(c.clone());
    }
}

/// Effects: one the branches left in different states is a conflict.
fn effects(sa: &State, sb: &State, conflicts: &mut Vec<String>) {
    for (key, (name, x)) in &sa.effects {
        if let Some((_, y)) = sb.effects.get(key) {
            if x != y {
                conflicts.push(format!(
                    "the effect {name} is {x} in {} and {y} in {}",
                    sa.id, sb.id
                ));
            }
        }
    }
}

/// Constraints: every one either branch stated stays in force (its event, once); one only a
/// branch stated is also a conflict. The events to log.
fn constraints(
    sa: &State,
    sb: &State,
    handoff: &mut Handoff,
    conflicts: &mut Vec<String>,
) -> Vec<RunEvent> {
    let mut out = Vec::new();
    let keys: BTreeSet<&String> = sa.constraints.keys().chain(sb.constraints.keys()).collect();
    for key in keys {
        let (x, y) = (sa.constraints.get(key), sb.constraints.get(key));
        let Some(event) = x.or(y) else { continue };
        if let RunEvent::ConstraintStated { text, .. } = event {
            handoff.hard_constraints.push(HardConstraint {
                constraint: text.clone(),
                sources: Vec::new(),
            });
            if x.is_none() || y.is_none() {
                let (has, lacks) = if x.is_some() {
                    (sa.id, sb.id)
                } else {
                    (sb.id, sa.id)
                };
                conflicts.push(format!(
                    "the constraint \"{text}\" binds {has} and not {lacks} (kept in force)"
                ));
            }
        }
        out.push(event.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::EffectState;

    fn logged(events: Vec<RunEvent>) -> Vec<LoggedEvent> {
        crate::checkpoint::logged_fixture(events)
    }

    fn started() -> RunEvent {
        RunEvent::RunStarted {
            question: "where?".into(),
            root: "/t".into(),
            model: "offline".into(),
            agents: 1,
            max_subagents: 1,
            budget: crate::policy::Budget::default(),
            repairs: 0,
            shards: None,
            tools: vec!["grep".into()],
            max_waves: None,
            task: Default::default(),
        }
    }

    fn accepted(text: &str, digests: &[(&str, &str)]) -> RunEvent {
        RunEvent::HandoffAccepted {
            subagent: "sa1".into(),
            handoff: crate::handoff::parse(text).handoff,
            repairs: 0,
            evidence_digests: digests
                .iter()
                .map(|(s, d)| (s.to_string(), d.to_string()))
                .collect(),
            dropped: Vec::new(),
        }
    }

    fn effect(state: EffectState) -> Vec<RunEvent> {
        vec![
            RunEvent::ToolCalled {
                subagent: "sa1".into(),
                call_id: "sa1.1".into(),
                tool: "deploy".into(),
                arguments: serde_json::json!({}),
                effect: EffectState::Executing,
                read_only: false,
                intent: "i1".into(),
            },
            RunEvent::EffectChanged {
                call_id: "sa1.1".into(),
                from: EffectState::Executing,
                to: state,
                evidence: None,
                note: String::new(),
            },
        ]
    }

    const AGREED: &str = "- `a` is here. [src/a.rs:1]\n";

    fn branch(claims: &str, digests: &[(&str, &str)], state: EffectState) -> Vec<LoggedEvent> {
        let mut events = vec![started()];
        events.extend(effect(state));
        events.push(accepted(
            &format!("## Settled conclusions\n{AGREED}{claims}## Open items\n## Hard constraints\n- none\n"),
            digests,
        ));
        logged(events)
    }

    #[test]
    fn what_agrees_is_kept_once_and_each_conflict_names_both_branches() {
        let a = branch(
            "- `b` is there. [src/b.rs:2]\n- `c` reads c. [src/c.rs:3]\n",
            &[("src/a.rs:1", "x"), ("src/c.rs:3", "c1")],
            EffectState::OutcomeUnknown,
        );
        let b = branch(
            "- `b` is there. [src/b.rs:9]\n- `c` reads c. [src/c.rs:3]\n",
            &[("src/a.rs:1", "x"), ("src/c.rs:3", "c2")],
            EffectState::Reconciled,
        );
        let merged = merge(("ra", &a), ("rb", &b)).unwrap();
        let c = &merged.conflicts;
        assert_eq!(c.len(), 3, "{c:#?}");
        assert!(
            c[0].contains(
                "\"`b` is there.\" is settled by ra citing src/b.rs:2 and by rb citing src/b.rs:9"
            ),
            "{c:?}"
        );
        assert!(
            c[1].contains("rests on src/c.rs:3, which ra and rb read differently"),
            "{c:?}"
        );
        assert!(
            c[2].contains("is outcome_unknown in ra and") && c[2].contains("in rb"),
            "{c:?}"
        );
        let handoff = merged
            .events
            .iter()
            .find_map(|(_, e)| match e {
                RunEvent::HandoffAccepted { handoff, .. } => Some(handoff),
                _ => None,
            })
            .unwrap();
        // Only the agreed claim is settled, once; no side of a conflict is chosen.
        let claims: Vec<&str> = handoff
            .settled_conclusions
            .iter()
            .map(|c| c.claim.as_str())
            .collect();
        assert_eq!(claims, vec!["`a` is here."]);
        let items: Vec<&str> = handoff.open_items.iter().map(|o| o.item.as_str()).collect();
        assert_eq!(
            items
                .iter()
                .filter(|i| i.starts_with("Conflict between branches"))
                .count(),
            3,
            "{items:?}"
        );
        // An effect left unknown is carried as an open item naming it, never dropped.
        assert!(
            items.contains(&"The effect sa1.1 (deploy) is outcome_unknown in ra"),
            "{items:?}"
        );
        // Swapping the branches finds the same conflicts: nothing depends on which came last.
        let swapped = merge(("rb", &b), ("ra", &a)).unwrap();
        assert_eq!(swapped.conflicts.len(), 3);
    }

    #[test]
    fn a_fork_needs_an_event_of_its_parent_and_different_roots_do_not_merge() {
        let a = branch("", &[], EffectState::Completed);
        assert!(fork_events("ra", &a, 99, None)
            .unwrap_err()
            .contains("has no event 99"));
        let forked = fork_events("ra", &a, 2, Some("why?")).unwrap();
        assert_eq!(forked.len(), 3);
        assert!(
            matches!(&forked[2].1, RunEvent::RunForked { at_seq: 2, parent_digest, question: Some(q), .. } if parent_digest == "d2" && q == "why?")
        );
        assert!(fork_events("ra", &a, 2, Some("  "))
            .unwrap_err()
            .contains("empty"));
        let binding = fork_events("ra", &a, 2, Some("Never read src. Where is x?")).unwrap_err();
        assert!(binding.contains("cannot state a constraint"), "{binding}");
        // Forked before its parent stated a constraint or withdrew a source, the fork is
        // bound all the same: both follow its mark.
        let mut later = a.clone();
        let stated = RunEvent::ConstraintStated {
            text: "Never read vendor.".into(),
            normalised: "never read vendor".into(),
            provenance: "--constraint".into(),
            rules: Vec::new(),
            untyped: Vec::new(),
            warnings: Vec::new(),
        };
        let gone = RunEvent::SourceForgotten {
            tombstone: crate::checkpoint::Tombstone {
                source: "src/a.rs".into(),
                digest: String::new(),
                classification: "file; finding".into(),
                reason: "licence".into(),
                decisions: vec![4],
                conclusions: 1,
            },
        };
        later.extend(
            logged(vec![stated.clone(), gone.clone()])
                .into_iter()
                .map(|mut e| {
                    e.seq += 4;
                    e
                }),
        );
        let forked = fork_events("ra", &later, 1, None).unwrap();
        let kinds: Vec<&str> = forked.iter().map(|(_, e)| e.kind()).collect();
        assert_eq!(
            kinds,
            [
                "run_started",
                "run_forked",
                "constraint_stated",
                "source_forgotten"
            ]
        );
        // A fork of a fork names its own parent.
        let twice = logged(vec![
            started(),
            RunEvent::RunForked {
                parent: "ra".into(),
                at_seq: 1,
                parent_digest: "d1".into(),
                question: None,
            },
            RunEvent::RunForked {
                parent: "rb".into(),
                at_seq: 2,
                parent_digest: "d2".into(),
                question: None,
            },
        ]);
        assert_eq!(
            lineage(&twice),
            Some(Lineage::Fork {
                parent: "rb".into(),
                at_seq: 2
            })
        );
        let mut other = a.clone();
        if let RunEvent::RunStarted { root, .. } = &mut other[0].event {
            *root = "/elsewhere".into();
        }
        assert!(merge(("ra", &a), ("rb", &other)).is_err());
    }
}
