//! The fidelity audit of a run, pure: each figure apart, with the events it rests on, so no
//! single score hides a lost constraint — per compaction, the mandatory fields retained and
//! the tokens saved; each settled conclusion traced to the observations it rests on; per
//! resume, the state's accuracy and the work run again; the prohibited proposals, by
//! consequence; and every stored checkpoint against the projection of its events.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::event::{LoggedEvent, RunEvent};
use super::projection::project;
use super::Checkpoint;
use crate::source::{ObservationLog, SourceId};

/// One compaction: what it had to carry and what it did, and the tokens it saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactionAudit {
    /// The `window_compacted` event.
    pub seq: u64,
    /// The subagent.
    pub subagent: String,
    /// Tokens of the window before and after.
    pub tokens_before: u64,
    /// After.
    pub tokens_after: u64,
    /// The pins the subagent's previous compaction carried (since it was last spawned) that no
    /// later turn settled: each must be carried again, verbatim.
    pub mandatory: Vec<String>,
    /// Those it did not carry.
    pub lost: Vec<String>,
    /// The earlier `window_compacted` events that first carried the mandatory pins.
    pub rests_on: Vec<u64>,
}

/// One settled conclusion and the observations (`tool_returned` events of its subagent) that
/// showed what it cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceAudit {
    /// The `handoff_accepted` event.
    pub seq: u64,
    /// The subagent.
    pub subagent: String,
    /// The claim.
    pub claim: String,
    /// Its sources.
    pub sources: Vec<String>,
    /// The `tool_returned` events that showed them.
    pub observations: Vec<u64>,
    /// The sources no observation showed.
    pub untraced: Vec<String>,
}

/// A tool call run again after a resume: the same tool with the same arguments as one that
/// had already returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepeatedCall {
    /// The `tool_called` event after the resume.
    pub seq: u64,
    /// The earlier `tool_returned` event of the same call.
    pub first: u64,
    /// The tool.
    pub tool: String,
    /// Whether the tool only reads (run again, it changes nothing).
    pub read_only: bool,
}

/// One resume: the state it started from and the work it ran again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResumeAudit {
    /// The `run_resumed` event.
    pub seq: u64,
    /// The last event before it.
    pub after_seq: u64,
    /// The checkpoint stored when it resumed (its last event), if one was.
    pub stored_seq: Option<u64>,
    /// The parts of that checkpoint that differ from the projection of its events (empty:
    /// accurate).
    pub differs: Vec<String>,
    /// Subagents whose handoff was already accepted and that were spawned again.
    pub respawned_done: Vec<String>,
    /// Tool calls run again.
    pub repeated: Vec<RepeatedCall>,
}

/// Denials of one consequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DenialAudit {
    /// What was denied (`writing `src/a.rs``).
    pub consequence: String,
    /// The constraint that denied it, verbatim.
    pub constraint: String,
    /// The `tool_denied` events.
    pub events: Vec<u64>,
}

/// A stored checkpoint against the projection of its own events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredAudit {
    /// Its last event.
    pub last_seq: u64,
    /// The parts that differ (empty: it equals the projection).
    pub differs: Vec<String>,
}

/// The fidelity audit of one run (`baton audit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Audit {
    /// The run.
    pub run_id: String,
    /// Events read.
    pub events: u64,
    /// Every compaction that folded or cleared (a refused one changed nothing).
    pub compactions: Vec<CompactionAudit>,
    /// Every settled conclusion of every accepted handoff.
    pub evidence: Vec<TraceAudit>,
    /// Every resume.
    pub resumes: Vec<ResumeAudit>,
    /// Denials, by consequence.
    pub denials: Vec<DenialAudit>,
    /// Every stored checkpoint.
    pub stored: Vec<StoredAudit>,
}

/// Audits a run from its events and its stored checkpoints (oldest first).
pub fn audit(run_id: &str, events: &[LoggedEvent], stored: &[Checkpoint]) -> Audit {
    Audit {
        run_id: run_id.to_string(),
        events: events.len() as u64,
        compactions: compactions(events),
        evidence: evidence(events),
        resumes: resumes(run_id, events, stored),
        denials: denials(events),
        stored: stored
            .iter()
            .map(|cp| StoredAudit {
                last_seq: cp.last_seq,
                differs: differs(run_id, events, cp),
            })
            .collect(),
    }
}

fn compactions(events: &[LoggedEvent]) -> Vec<CompactionAudit> {
    // Per subagent: the pins its last compaction carried (since it was last spawned), each
    // with the compaction that first carried it.
    let mut held: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match &e.event {
            RunEvent::SubagentSpawned { subagent, .. } => {
                held.remove(subagent);
            }
            RunEvent::WindowCompacted {
                subagent,
                decision,
                tokens_before,
                tokens_after,
                pinned,
                retired,
                ..
            } => {
                let earlier = held.entry(subagent.clone()).or_default();
                // A pin a later turn settled may go; every other one must be carried again.
                for r in retired {
                    earlier.remove(r);
                }
                if !matches!(decision, crate::compaction::Decision::Refuse) {
                    let mandatory: Vec<String> = earlier.keys().cloned().collect();
                    let lost: Vec<String> = mandatory
                        .iter()
                        .filter(|m| !pinned.contains(m))
                        .cloned()
                        .collect();
                    let rests_on: BTreeSet<u64> = earlier.values().copied().collect();
                    out.push(CompactionAudit {
                        seq: e.seq,
                        subagent: subagent.clone(),
                        tokens_before: *tokens_before,
                        tokens_after: *tokens_after,
                        mandatory,
                        lost,
                        rests_on: rests_on.into_iter().collect(),
                    });
                }
                let carried: BTreeMap<String, u64> = pinned
                    .iter()
                    .map(|p| (p.clone(), earlier.get(p).copied().unwrap_or(e.seq)))
                    .collect();
                *earlier = carried;
            }
            _ => {}
        }
    }
    out
}

/// Whether what one call returned (`log`) shows (some of) `source`.
fn shows(log: &ObservationLog, source: &SourceId) -> bool {
    match source {
        SourceId::Record { kind, id } if kind == "call" => {
            log.entries().iter().any(|o| o.call_id() == id)
        }
        SourceId::File { path, lines } => {
            let (start, end) = lines.unwrap_or((1, u32::MAX));
            log.shown_file(path).is_some_and(|s| {
                s.spans.iter().any(|(a, b)| *b >= start && *a <= end)
                    || s.parts.iter().any(|(l, _)| (start..=end).contains(l))
            })
        }
        _ => log.shows(source),
    }
}

fn evidence(events: &[LoggedEvent]) -> Vec<TraceAudit> {
    // A withdrawn source's claims are shown by their tombstone, never their text.
    let gone = super::forget::withdrawn(events);
    let shown = |c: &crate::handoff::Conclusion| {
        gone.iter()
            .find(|(s, _)| {
                c.sources
                    .iter()
                    .any(|cited| super::forget::covers(s, cited))
            })
            .map_or_else(|| c.claim.clone(), |(_, t)| super::forget::unavailable(t))
    };
    // Each subagent's returns so far: (seq, what the call showed).
    let mut returned: BTreeMap<&str, Vec<(u64, ObservationLog)>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match &e.event {
            RunEvent::ToolReturned {
                subagent,
                observations,
                ..
            } => {
                let mut log = ObservationLog::default();
                log.record(observations.iter().cloned());
                returned
                    .entry(subagent.as_str())
                    .or_default()
                    .push((e.seq, log));
            }
            RunEvent::HandoffAccepted {
                subagent, handoff, ..
            } => {
                let seen = returned
                    .get(subagent.as_str())
                    .map_or(&[][..], Vec::as_slice);
                // Every settled conclusion, negative evidence too (it rests on its searches).
                for c in &handoff.settled_conclusions {
                    let mut observations = BTreeSet::new();
                    let mut untraced = Vec::new();
                    for source in &c.sources {
                        let by: Vec<u64> = seen
                            .iter()
                            .filter(|(_, log)| shows(log, source))
                            .map(|(seq, _)| *seq)
                            .collect();
                        if by.is_empty() {
                            untraced.push(source.to_string());
                        }
                        observations.extend(by);
                    }
                    out.push(TraceAudit {
                        seq: e.seq,
                        subagent: subagent.clone(),
                        claim: shown(c),
                        sources: c.sources.iter().map(ToString::to_string).collect(),
                        observations: observations.into_iter().collect(),
                        untraced,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// The top-level parts of `stored` that differ from the projection of the events it covers.
fn differs(run_id: &str, events: &[LoggedEvent], stored: &Checkpoint) -> Vec<String> {
    let upto: Vec<LoggedEvent> = events
        .iter()
        .filter(|e| e.seq <= stored.last_seq)
        .cloned()
        .collect();
    let rebuilt = serde_json::to_value(project(run_id, &upto)).unwrap_or_default();
    let stored = serde_json::to_value(stored).unwrap_or_default();
    let (Some(rebuilt), Some(stored)) = (rebuilt.as_object(), stored.as_object()) else {
        return vec!["the checkpoint".to_string()];
    };
    rebuilt
        .keys()
        .chain(stored.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|k| rebuilt.get(*k) != stored.get(*k))
        .cloned()
        .collect()
}

fn resumes(run_id: &str, events: &[LoggedEvent], stored: &[Checkpoint]) -> Vec<ResumeAudit> {
    let mut out = Vec::new();
    let resumed: Vec<(usize, u64, u64)> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e.event {
            RunEvent::RunResumed { after_seq } => Some((i, e.seq, after_seq)),
            _ => None,
        })
        .collect();
    for (n, (at, seq, after_seq)) in resumed.iter().copied().enumerate() {
        let before = &events[..at];
        let until = resumed.get(n + 1).map_or(events.len(), |r| r.0);
        let after = &events[at + 1..until];
        let from = stored
            .iter()
            .filter(|cp| cp.last_seq <= after_seq)
            .max_by_key(|cp| cp.last_seq);
        // Done before the resume; a fork on its own question explores every shard again.
        let mut done: BTreeSet<&str> = BTreeSet::new();
        for e in before {
            match &e.event {
                RunEvent::HandoffAccepted { subagent, .. } => {
                    done.insert(subagent);
                }
                RunEvent::RunForked {
                    question: Some(_), ..
                } => done.clear(),
                _ => {}
            }
        }
        let respawned_done: BTreeSet<String> = after
            .iter()
            .filter_map(|e| match &e.event {
                RunEvent::SubagentSpawned { subagent, .. } if done.contains(subagent.as_str()) => {
                    Some(subagent.clone())
                }
                _ => None,
            })
            .collect();
        out.push(ResumeAudit {
            seq,
            after_seq,
            stored_seq: from.map(|cp| cp.last_seq),
            differs: from
                .map(|cp| differs(run_id, events, cp))
                .unwrap_or_default(),
            respawned_done: respawned_done.into_iter().collect(),
            repeated: repeated(before, after),
        });
    }
    out
}

/// The calls of `after` that repeat a call of `before` that had returned.
fn repeated(before: &[LoggedEvent], after: &[LoggedEvent]) -> Vec<RepeatedCall> {
    let mut called: BTreeMap<&str, (&str, String)> = BTreeMap::new();
    let mut done: BTreeMap<(String, String), u64> = BTreeMap::new();
    for e in before {
        match &e.event {
            RunEvent::ToolCalled {
                call_id,
                tool,
                arguments,
                ..
            } => {
                called.insert(call_id, (tool, arguments.to_string()));
            }
            RunEvent::ToolReturned { call_id, .. } => {
                if let Some((tool, args)) = called.get(call_id.as_str()) {
                    done.entry((tool.to_string(), args.clone()))
                        .or_insert(e.seq);
                }
            }
            _ => {}
        }
    }
    after
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::ToolCalled {
                tool,
                arguments,
                read_only,
                ..
            } => done
                .get(&(tool.clone(), arguments.to_string()))
                .map(|first| RepeatedCall {
                    seq: e.seq,
                    first: *first,
                    tool: tool.clone(),
                    read_only: *read_only,
                }),
            _ => None,
        })
        .collect()
}

fn denials(events: &[LoggedEvent]) -> Vec<DenialAudit> {
    let mut by: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for e in events {
        if let RunEvent::ToolDenied { denial, .. } = &e.event {
            let what = match denial.category {
                crate::policy::Category::Tool => format!("the tool `{}`", denial.tool),
                _ => denial.consequence.describe(),
            };
            by.entry((what, denial.constraint.clone()))
                .or_default()
                .push(e.seq);
        }
    }
    by.into_iter()
        .map(|((consequence, constraint), events)| DenialAudit {
            consequence,
            constraint,
            events,
        })
        .collect()
}

/// `seq 3, 5, 9`, at most `max` of them named.
fn seqs(list: &[u64]) -> String {
    const MAX: usize = 12;
    if list.is_empty() {
        return "—".to_string();
    }
    let mut named: Vec<String> = list.iter().take(MAX).map(u64::to_string).collect();
    if list.len() > MAX {
        named.push(format!("… {} more", list.len() - MAX));
    }
    named.join(", ")
}

impl Audit {
    /// The audit as one table: a row per figure, its value, the events it rests on.
    pub fn render(&self) -> String {
        let mut rows: Vec<[String; 3]> = Vec::new();
        for c in &self.compactions {
            let kept = c.mandatory.len() - c.lost.len();
            let mut value = format!("{kept}/{} retained", c.mandatory.len());
            for l in &c.lost {
                value.push_str(&format!("; lost `{l}`"));
            }
            let mut on = c.rests_on.clone();
            on.push(c.seq);
            rows.push([
                format!("compaction {} ({}): mandatory fields", c.seq, c.subagent),
                value,
                seqs(&on),
            ]);
            rows.push([
                format!("compaction {} ({}): tokens saved", c.seq, c.subagent),
                format!(
                    "{} ({} → {})",
                    c.tokens_before.saturating_sub(c.tokens_after),
                    c.tokens_before,
                    c.tokens_after
                ),
                c.seq.to_string(),
            ]);
        }
        let traced = self
            .evidence
            .iter()
            .filter(|t| t.untraced.is_empty())
            .count();
        rows.push([
            "evidence traceability".to_string(),
            format!(
                "{traced}/{} settled conclusions traced",
                self.evidence.len()
            ),
            seqs(&self.evidence.iter().map(|t| t.seq).collect::<Vec<_>>()),
        ]);
        for t in &self.evidence {
            let value = if t.untraced.is_empty() {
                format!("traced: {}", t.sources.join(", "))
            } else {
                format!("untraced: {}", t.untraced.join(", "))
            };
            rows.push([
                format!(
                    "  {} ({})",
                    crate::text::one_line(&short(&t.claim)),
                    t.subagent
                ),
                value,
                seqs(&t.observations),
            ]);
        }
        for r in &self.resumes {
            let accuracy = match (&r.stored_seq, r.differs.is_empty()) {
                (None, _) => "no stored checkpoint: rebuilt from events".to_string(),
                (Some(s), true) => format!("checkpoint at {s} equals its events' projection"),
                (Some(s), false) => {
                    format!("checkpoint at {s} differs in {}", r.differs.join(", "))
                }
            };
            let accuracy = if r.respawned_done.is_empty() {
                accuracy
            } else {
                format!(
                    "{accuracy}; done and spawned again: {}",
                    r.respawned_done.join(", ")
                )
            };
            rows.push([
                format!("resume {} (after {}): state accuracy", r.seq, r.after_seq),
                accuracy,
                seqs(&[r.seq]),
            ]);
            let effects = r.repeated.iter().filter(|c| !c.read_only).count();
            rows.push([
                format!("resume {} (after {}): repeated work", r.seq, r.after_seq),
                format!(
                    "{} tool calls run again ({effects} with effects)",
                    r.repeated.len()
                ),
                seqs(&r.repeated.iter().map(|c| c.seq).collect::<Vec<_>>()),
            ]);
        }
        let total: usize = self.denials.iter().map(|d| d.events.len()).sum();
        rows.push([
            "prohibited proposals".to_string(),
            format!("{total} denied"),
            "—".to_string(),
        ]);
        for d in &self.denials {
            rows.push([
                format!("  {}", crate::text::one_line(&d.consequence)),
                format!(
                    "{} denied by `{}`",
                    d.events.len(),
                    crate::text::one_line(&d.constraint)
                ),
                seqs(&d.events),
            ]);
        }
        for s in &self.stored {
            rows.push([
                format!("stored checkpoint at {}", s.last_seq),
                if s.differs.is_empty() {
                    "equals its events' projection".to_string()
                } else {
                    format!("differs in {}", s.differs.join(", "))
                },
                s.last_seq.to_string(),
            ]);
        }
        table(&self.run_id, self.events, &rows)
    }
}

/// A claim cut to 80 characters.
fn short(claim: &str) -> String {
    let mut out: String = claim.chars().take(80).collect();
    if claim.chars().count() > 80 {
        out.push('…');
    }
    out
}

fn table(run_id: &str, events: u64, rows: &[[String; 3]]) -> String {
    let mut out = format!("audit of {run_id} ({events} events)\n\n");
    out.push_str("| figure | value | events |\n|---|---|---|\n");
    for [a, b, c] in rows {
        let cell = |s: &str| s.replace('|', "\\|");
        out.push_str(&format!("| {} | {} | {} |\n", cell(a), cell(b), cell(c)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::EffectState;
    use crate::source::Observation;
    use serde_json::json;

    fn logged(events: Vec<RunEvent>) -> Vec<LoggedEvent> {
        crate::checkpoint::logged_fixture(events)
    }

    fn called(call: &str, pattern: &str) -> RunEvent {
        RunEvent::ToolCalled {
            subagent: "sa1".into(),
            call_id: call.into(),
            tool: "grep".into(),
            arguments: json!({ "pattern": pattern }),
            effect: EffectState::Executing,
            read_only: true,
            intent: String::new(),
        }
    }

    fn returned(call: &str, path: &str, line: u32) -> RunEvent {
        RunEvent::ToolReturned {
            subagent: "sa1".into(),
            call_id: call.into(),
            is_error: false,
            content_digest: String::new(),
            observations: vec![Observation::Lines {
                call_id: call.into(),
                path: path.into(),
                start: line,
                end: line,
            }],
            effect: EffectState::Completed,
        }
    }

    fn accepted(text: &str) -> RunEvent {
        RunEvent::HandoffAccepted {
            subagent: "sa1".into(),
            handoff: crate::handoff::parse(text).handoff,
            repairs: 0,
            evidence_digests: BTreeMap::new(),
            dropped: Vec::new(),
        }
    }

    fn compacted(pinned: &[&str], retired: &[&str]) -> RunEvent {
        RunEvent::WindowCompacted {
            subagent: "sa1".into(),
            decision: crate::compaction::Decision::Compact,
            tokens_before: 10,
            tokens_after: 4,
            cleared_tokens: 0,
            pinned: pinned.iter().map(|p| p.to_string()).collect(),
            constraints: Vec::new(),
            retired: retired.iter().map(|p| p.to_string()).collect(),
            reason: None,
            folded: None,
        }
    }

    #[test]
    fn a_settled_pin_may_go_and_any_other_is_lost_when_dropped() {
        let events = logged(vec![
            compacted(&["Which flag sets it?", "I will read a.rs."], &[]),
            compacted(&["I will read a.rs."], &["Which flag sets it?"]),
            compacted(&[], &[]),
        ]);
        let c = audit("r1", &events, &[]).compactions;
        assert_eq!((c[0].mandatory.len(), c[0].lost.len()), (0, 0));
        assert_eq!(c[1].mandatory, vec!["I will read a.rs."]);
        assert!(c[1].lost.is_empty(), "the question was settled, not lost");
        assert_eq!(c[2].lost, vec!["I will read a.rs."]);
        assert_eq!(c[2].rests_on, vec![1]);
    }

    #[test]
    fn a_call_run_again_after_a_resume_is_repeated_work() {
        let events = logged(vec![
            called("sa1.1", "step_"),
            returned("sa1.1", "src/a.rs", 3),
            called("sa1.2", "other"),
            RunEvent::RunResumed { after_seq: 3 },
            called("sa1.1#2", "step_"),
            called("sa1.2#2", "other"),
        ]);
        let a = audit("r1", &events, &[]);
        let r = &a.resumes[0];
        // The call that had returned is repeated; the one cut off before returning is not.
        assert_eq!(r.repeated.len(), 1, "{r:?}");
        assert_eq!((r.repeated[0].seq, r.repeated[0].first), (5, 2));
        assert_eq!(r.stored_seq, None);
        assert!(a
            .render()
            .contains("| 1 tool calls run again (0 with effects) | 5 |"));
    }

    #[test]
    fn a_stored_checkpoint_that_differs_from_its_events_is_named() {
        let events = logged(vec![
            called("sa1.1", "step_"),
            returned("sa1.1", "src/a.rs", 3),
            RunEvent::RunResumed { after_seq: 2 },
        ]);
        let good = project("r1", &events[..2]);
        let mut bad = good.clone();
        bad.goal = "another question".into();
        assert!(audit("r1", &events, std::slice::from_ref(&good)).resumes[0]
            .differs
            .is_empty());
        let a = audit("r1", &events, &[bad]);
        assert_eq!(a.resumes[0].differs, vec!["goal"]);
        assert_eq!(a.stored[0].differs, vec!["goal"]);
        assert!(a.render().contains("checkpoint at 2 differs in goal"));
    }

    #[test]
    fn a_conclusion_no_observation_showed_is_untraced() {
        let events = logged(vec![
            called("sa1.1", "step_"),
            returned("sa1.1", "src/a.rs", 3),
            accepted("## Settled conclusions\n- `a` is here. [src/a.rs:3]\n- `b` is there. [src/b.rs:9]\n- The search ran. [call:sa1.1]\n## Open items\n## Hard constraints\n- none\n"),
        ]);
        let a = audit("r1", &events, &[]);
        let got: Vec<(Vec<u64>, Vec<String>)> = a
            .evidence
            .iter()
            .map(|t| (t.observations.clone(), t.untraced.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (vec![2], vec![]),
                (vec![], vec!["src/b.rs:9".to_string()]),
                (vec![2], vec![]),
            ]
        );
        assert!(a
            .render()
            .contains("| evidence traceability | 2/3 settled conclusions traced |"));
    }
}
