//! Restoring a run from its log, pure: the settings it ran with, its plan, every subagent that
//! had ended (with its handoff, observations and spend, so nothing accepted is redone), and the
//! effects cut off while executing (to become outcome_unknown, never failed or retried).

use std::collections::BTreeMap;

use crate::checkpoint::{project, EffectState, LoggedEvent, RunEvent};
use crate::handoff::{Handoff, OpenItem, Violation, WorkspaceFiles};
use crate::policy::{Budget, Spent};
use crate::report::SubagentState;
use crate::source::ObservationLog;
use crate::source::SearchKind;
use crate::source::{search_label, Observation};
use crate::tools::{ToolRegistry, Workspace};

use crate::transcript::ToolCall;

use super::plan::Shard;

/// How the run was set up.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    pub(crate) question: String,
    pub(crate) root: String,
    pub(crate) agents: usize,
    pub(crate) max_subagents: usize,
    pub(crate) max_waves: usize,
    pub(crate) budget: Budget,
    pub(crate) repairs: u32,
    pub(crate) shards: Option<usize>,
    /// The task's kind, roles and subtasks.
    pub(crate) task: crate::checkpoint::TaskSpec,
}

/// A subagent as the log left it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Restored {
    pub(crate) state: Option<SubagentState>,
    pub(crate) error: Option<String>,
    pub(crate) handoff: Option<Handoff>,
    pub(crate) unverified: Option<Handoff>,
    /// Conclusions taken out of its accepted handoff.
    pub(crate) dropped: Vec<crate::handoff::Dropped>,
    pub(crate) violations: Vec<Violation>,
    pub(crate) repairs: u32,
    pub(crate) observations: ObservationLog,
    pub(crate) spent: Spent,
    /// The digests of the text its accepted handoff cited, when it was accepted.
    pub(crate) evidence_digests: BTreeMap<String, String>,
}

impl Restored {
    /// Whether its work is done and is kept: everything but a cancelled or unfinished one.
    pub(crate) fn is_done(&self) -> bool {
        matches!(
            self.state,
            Some(
                SubagentState::HandedOff
                    | SubagentState::Repaired
                    | SubagentState::PartlyAccepted
                    | SubagentState::Rejected
                    | SubagentState::Failed
            )
        )
    }
}

/// Everything a resumed run starts from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resumption {
    pub(crate) settings: Settings,
    /// Empty when the run was killed before it planned: the resumed lead plans afresh.
    pub(crate) plan: Vec<(String, Shard)>,
    pub(crate) subagents: BTreeMap<String, Restored>,
    pub(crate) after_seq: u64,
    /// Calls whose effect was executing when the log stopped.
    pub(crate) cut_off: Vec<String>,
    /// Calls whose effect was awaiting approval when the log stopped: their subagents start
    /// again and ask anew (the request itself waits on).
    pub(crate) awaiting: Vec<String>,
    /// The intents of calls with effects whose outcome is unknown (cut off, or past their
    /// limit), each with its effect's intent id (the call id, `CALL#N` for a restarted attempt).
    pub(crate) unknown: Vec<(String, String)>,
    /// The log's events about approvals, from which the run's requests are rebuilt.
    pub(crate) approval_events: Vec<LoggedEvent>,
    /// The events as logged.
    pub(crate) events: Vec<LoggedEvent>,
    /// Accepted conclusions whose cited text changed since (set by [`Resumption::recheck`]).
    pub(crate) stale: Vec<Stale>,
    /// Directories the plan could not cover.
    pub(crate) left_out: Vec<String>,
    /// What the plan's walk left out of the tree: how many, and the first twenty.
    pub(crate) not_searched: (usize, Vec<String>),
    /// The waves the log planned: each plan revision that added subagents other than a
    /// verifier.
    pub(crate) waves: Vec<super::waves::WavePlan>,
    /// The run's checkpoint so far, every logged event applied (set by
    /// [`Resumption::prepare`]).
    pub(crate) projector: Option<crate::checkpoint::Projector>,
    /// The lead model's turns already logged (`lead_turn`), for the report's usage.
    pub(crate) lead_turns: Vec<(String, super::leader::LeadTurn)>,
    /// The lead model the log names last (`provider:model`).
    pub(crate) lead_model: Option<String>,
}

/// What a resume found stale in one accepted handoff.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stale {
    pub(crate) subagent: String,
    /// The sources whose text changed or no longer reads.
    pub(crate) sources: Vec<String>,
    /// The claims moved from settled conclusions to open items.
    pub(crate) claims: Vec<String>,
}

impl Resumption {
    /// The heavy work of a resume, done before the lead starts (blocking: call it off the
    /// runtime): the evidence rechecked ([`Resumption::recheck`]), the log applied to the
    /// projector the lead continues (then let go), the tokenizer's vocabulary loaded.
    pub(crate) fn prepare(
        &mut self,
        workspace: Option<Workspace>,
        corpus: Option<&crate::corpus::Corpus>,
        run_id: &str,
    ) {
        if let Some(workspace) = &workspace {
            self.recheck(workspace);
        }
        if let Some(corpus) = corpus {
            self.recheck_docs(corpus);
        }
        let mut projector = crate::checkpoint::Projector::new(run_id);
        for logged in std::mem::take(&mut self.events) {
            projector.apply(&logged);
        }
        self.projector = Some(projector);
        let _ = crate::tokens::Tokenizer::count(&crate::tokens::Bpe, "warm");
    }

    /// Rechecks every accepted handoff's evidence against the tree as it is now (blocking: it
    /// reads files and runs searches). A conclusion citing text whose digest changed — or that
    /// no longer reads — leaves the settled conclusions for the open items, marked stale; a
    /// search that found nothing and now finds something no longer stands as negative
    /// evidence. [`Resumption::stale`] says which, for the log.
    pub(crate) fn recheck(&mut self, workspace: &Workspace) {
        let files = WorkspaceFiles::new(workspace.clone());
        let tools = ToolRegistry::workspace();
        for (id, restored) in &mut self.subagents {
            let Some(handoff) = restored.handoff.as_mut() else {
                continue;
            };
            let now = super::report::evidence_digests(handoff, &files, &restored.observations);
            let changed: Vec<String> = restored
                .evidence_digests
                .iter()
                .filter(|(source, digest)| now.get(*source) != Some(*digest))
                .map(|(source, _)| source.clone())
                .collect();
            let found_now = searches_gone_stale(&restored.observations, &tools, workspace);
            if let Some(stale) = mark_stale(id, restored, changed, found_now) {
                self.stale.push(stale);
            }
        }
    }
}

/// Moves a handoff's conclusions citing a changed source, or a search that finds something
/// now, to its open items, marked stale; what was moved, for the log.
pub(super) fn mark_stale(
    id: &str,
    restored: &mut Restored,
    mut changed: Vec<String>,
    found_now: Vec<(String, String, String)>,
) -> Option<Stale> {
    if restored.handoff.is_none() || (changed.is_empty() && found_now.is_empty()) {
        return None;
    }
    restored.observations.retain(|o| {
        !found_now
            .iter()
            .any(|(call, _, _)| call == o.call_id() && matches!(o, Observation::Searched { .. }))
    });
    let handoff = restored.handoff.as_mut()?;
    changed.extend(found_now.iter().map(|(call, _, _)| format!("call:{call}")));
    let (stale, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut handoff.settled_conclusions)
        .into_iter()
        .partition(|c| c.sources.iter().any(|s| changed.contains(&s.to_string())));
    handoff.settled_conclusions = kept;
    for c in &stale {
        let cited: Vec<String> = c
            .sources
            .iter()
            .map(|s| s.to_string())
            .filter(|s| changed.contains(s))
            .collect();
        handoff.open_items.push(OpenItem {
            item: format!("Stale since the resume: {}", c.claim),
            stuck_on: format!(
                "{} changed after the handoff was accepted; reread it before relying on this",
                cited.join(", ")
            ),
        });
    }
    let mut claims: Vec<String> = Vec::new();
    for (call, label, why) in &found_now {
        // One open item per search: the handoff's own conclusion on it, if it had one.
        let source = format!("call:{call}");
        if stale
            .iter()
            .any(|c| c.sources.iter().any(|s| s.to_string() == source))
        {
            continue;
        }
        let claim = format!("nothing matched {label} (search {source})");
        handoff.open_items.push(OpenItem {
            item: format!("Stale since the resume: {claim}"),
            stuck_on: why.clone(),
        });
        claims.push(claim);
    }
    claims.splice(0..0, stale.into_iter().map(|c| c.claim));
    Some(Stale {
        subagent: id.to_string(),
        sources: changed,
        claims,
    })
}

/// The searches of `observations` that found nothing and no longer stand, as (call id, label,
/// why): each is run again — the same pattern, flags and scope — and is stale when it finds
/// something now, when its scope can no longer be searched (a file or directory gone, or now
/// forbidden), or when it searches fewer files than it did (some of them gone).
fn searches_gone_stale(
    observations: &ObservationLog,
    tools: &ToolRegistry,
    workspace: &Workspace,
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
                case_insensitive,
                fixed_string,
                ..
            } => {
                // A glob is rerun as a glob, a pattern as a grep with its flags (a corpus
                // search is rechecked against its corpus: `recheck_docs`).
                let (name, arguments) = match SearchKind::of(pattern) {
                    (SearchKind::Passages, _) => return None,
                    (SearchKind::FileNames, glob) => {
                        ("glob", serde_json::json!({"pattern": glob, "paths": scope}))
                    }
                    (SearchKind::Lines, _) => (
                        "grep",
                        serde_json::json!({
                            "pattern": pattern, "paths": scope, "output": "count",
                            "case_insensitive": case_insensitive, "fixed_string": fixed_string,
                        }),
                    ),
                };
                let again = tools.execute_blocking(
                    &ToolCall {
                        id: call_id.clone(),
                        name: name.into(),
                        arguments,
                    },
                    workspace,
                );
                let now = again.observations.iter().find_map(|o| match o {
                    Observation::Searched {
                        matches,
                        files_searched,
                        ..
                    } => Some((*matches, *files_searched)),
                    _ => None,
                });
                let why = match now {
                    _ if again.is_error => format!(
                        "its scope can no longer be searched ({})",
                        crate::text::one_line(&again.content)
                    ),
                    None => "its scope can no longer be searched".to_string(),
                    Some((found, _)) if found > 0 => {
                        "the search finds matches now: the files changed after it ran".to_string()
                    }
                    Some((_, files)) if files < *files_searched => format!(
                        "it searches {files} files now, {files_searched} when it ran: some are gone"
                    ),
                    Some(_) => return None,
                };
                let label = match SearchKind::of(pattern) {
                    (SearchKind::FileNames, glob) => format!("a file name matching `{glob}`"),
                    (SearchKind::Passages, query) => format!("\"{query}\""),
                    (SearchKind::Lines, _) => {
                        search_label(pattern, *case_insensitive, *fixed_string)
                    }
                };
                Some((call_id.clone(), label, why))
            }
            _ => None,
        })
        .collect()
}

/// What a subagent event says of its subagent (other events say nothing of one).
fn restore_subagent(subagents: &mut BTreeMap<String, Restored>, event: &RunEvent) {
    match event {
        RunEvent::SubagentSpawned { subagent, .. } => {
            // A new attempt: what an earlier one saw no longer counts.
            subagents.insert(subagent.clone(), Restored::default());
        }
        RunEvent::ToolReturned {
            subagent,
            observations,
            ..
        } => {
            subagents
                .entry(subagent.clone())
                .or_default()
                .observations
                .record(observations.iter().cloned());
        }
        RunEvent::HandoffAccepted {
            subagent,
            handoff,
            repairs,
            evidence_digests,
            dropped,
        } => {
            let r = subagents.entry(subagent.clone()).or_default();
            r.handoff = Some(handoff.clone());
            r.repairs = *repairs;
            r.evidence_digests = evidence_digests.clone();
            r.violations = dropped.iter().flat_map(|d| d.violations.clone()).collect();
            r.dropped = dropped.clone();
            // Accepted is done, even in a log that stops before the subagent's end.
            r.state = Some(match (dropped.is_empty(), *repairs) {
                (false, _) => SubagentState::PartlyAccepted,
                (true, 0) => SubagentState::HandedOff,
                (true, _) => SubagentState::Repaired,
            });
        }
        RunEvent::HandoffRepairRequested { subagent, .. } => {
            subagents.entry(subagent.clone()).or_default().repairs += 1;
        }
        RunEvent::HandoffRejected {
            subagent,
            violations,
            unverified,
        } => {
            let r = subagents.entry(subagent.clone()).or_default();
            r.violations = violations.clone();
            r.unverified = Some(unverified.clone());
            r.state = Some(SubagentState::Rejected);
        }
        RunEvent::BudgetSpent { subagent, spent } => {
            subagents.entry(subagent.clone()).or_default().spent = *spent;
        }
        RunEvent::SubagentEnded {
            subagent,
            state,
            error,
        } => {
            let r = subagents.entry(subagent.clone()).or_default();
            r.state = Some(*state);
            r.error = error.clone();
        }
        _ => {}
    }
}

/// The approval events of a log, in order: what a resumed run's approvals are rebuilt from.
fn approval_events(
    events: &[crate::checkpoint::LoggedEvent],
) -> Vec<crate::checkpoint::LoggedEvent> {
    events
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                RunEvent::ApprovalRequested { .. }
                    | RunEvent::ApprovalDecided { .. }
                    | RunEvent::ApprovalConsumed { .. }
            )
        })
        .cloned()
        .collect()
}

/// Takes the conclusions citing a withdrawn source (`baton forget`) out of everything the
/// report is rebuilt from: accepted and rejected handoffs, the conclusions dropped from them
/// and the lead's own report; each becomes an open item naming the source, never its text.
fn withdraw_restored(
    events: &[crate::checkpoint::LoggedEvent],
    subagents: &mut BTreeMap<String, Restored>,
    lead_turns: &mut [(String, super::leader::LeadTurn)],
) {
    use crate::checkpoint::{cites_any, withdraw, withdrawn};
    let gone = withdrawn(events);
    if gone.is_empty() {
        return;
    }
    let ids: Vec<crate::source::SourceId> = gone.iter().map(|(s, _)| s.clone()).collect();
    for r in subagents.values_mut() {
        for handoff in r.handoff.iter_mut().chain(r.unverified.iter_mut()) {
            withdraw(handoff, &gone);
        }
        let before = r.dropped.len();
        r.dropped.retain(|d| !cites_any(&d.conclusion, &ids));
        if r.dropped.len() != before {
            r.violations = r
                .dropped
                .iter()
                .flat_map(|d| d.violations.clone())
                .collect();
        }
        if r.unverified.is_some() {
            // A rejected handoff's violations may quote what it cited.
            r.violations
                .retain(|v| !ids.iter().any(|s| v.message.contains(&s.to_string())));
        }
    }
    for (_, turn) in lead_turns.iter_mut() {
        if let Some(handoff) = turn.handoff.as_mut() {
            withdraw(handoff, &gone);
        }
    }
}

/// A logged plan's subagents as shards.
fn planned_shards(planned: &[crate::checkpoint::PlannedSubagent]) -> Vec<(String, Shard)> {
    planned
        .iter()
        .map(|p| {
            (
                p.id.clone(),
                Shard {
                    paths: p.scope.clone(),
                    bytes: 0,
                    role: p.role.clone(),
                    question: p.question.clone(),
                },
            )
        })
        .collect()
}

/// The effects a resume finds as the projection has them: those still executing (cut off by
/// the crash), those awaiting approval, and the intents whose outcome is unknown — cut off by
/// this crash or an earlier one, or returned past their limit.
fn effect_states(events: &[LoggedEvent]) -> (Vec<String>, Vec<String>, Vec<(String, String)>) {
    let run_id = events.first().map(|e| e.run_id.as_str()).unwrap_or("");
    let effects = project(run_id, events).effects;
    let in_state = |state: EffectState| {
        effects
            .iter()
            .filter(|e| e.state == state)
            .map(|e| e.intent_id.clone())
            .collect::<Vec<_>>()
    };
    // A call with effects cut off now is unknown from this resume on, as is one a crash
    // before cut off or that ran past its limit — each effect by the intent it was logged
    // with, whatever call id a restarted attempt reused.
    let mut unknown: Vec<(String, String)> = effects
        .iter()
        .filter(|e| {
            !e.intent.is_empty()
                && matches!(
                    e.state,
                    EffectState::Executing | EffectState::OutcomeUnknown
                )
        })
        .map(|e| (e.intent.clone(), e.intent_id.clone()))
        .collect();
    unknown.sort();
    unknown.dedup();
    (
        in_state(EffectState::Executing),
        in_state(EffectState::AwaitingApproval),
        unknown,
    )
}

/// Reads a run's events back into what a resume needs.
pub(crate) fn restore(events: &[LoggedEvent]) -> Result<Resumption, String> {
    let mut settings = None;
    let mut plan = Vec::new();
    let mut left_out = Vec::new();
    let mut waves = Vec::new();
    let mut not_searched = (0, Vec::new());
    let mut lead_turns = Vec::new();
    let mut lead_model = None;
    let mut subagents: BTreeMap<String, Restored> = BTreeMap::new();
    for logged in events {
        match &logged.event {
            RunEvent::RunStarted {
                question,
                root,
                agents,
                max_subagents,
                budget,
                repairs,
                shards,
                task,
                max_waves,
                ..
            } => {
                settings = Some(Settings {
                    max_waves: max_waves.unwrap_or(1),
                    task: task.clone(),
                    shards: *shards,
                    question: question.clone(),
                    root: root.clone(),
                    agents: *agents,
                    max_subagents: *max_subagents,
                    budget: *budget,
                    repairs: *repairs,
                })
            }
            RunEvent::PlanRevised {
                subagents: planned,
                left_out: dirs,
                not_searched: count,
                not_searched_names: names,
                ..
            } => {
                left_out = dirs.clone();
                not_searched = (*count, names.clone());
                let known: std::collections::HashSet<&str> = plan
                    .iter()
                    .map(|(id, _): &(String, Shard)| id.as_str())
                    .collect();
                let fresh: Vec<&crate::checkpoint::PlannedSubagent> = planned
                    .iter()
                    .filter(|p| !known.contains(p.id.as_str()))
                    .collect();
                if !fresh.is_empty()
                    && fresh
                        .iter()
                        .all(|p| p.role != crate::contracts::RoleId::VERIFIER)
                {
                    waves.push(super::waves::WavePlan {
                        n: waves.len() as u32 + 1,
                        ids: fresh.iter().map(|p| p.id.clone()).collect(),
                    });
                }
                plan = planned_shards(planned);
            }
            // A fork pursuing its own question goes on with it: what was handed off before
            // answered another question, so every shard is explored again for this one (the
            // checkpoint — evidence, effects, denials, approvals — is inherited whole).
            RunEvent::RunForked {
                question: Some(q), ..
            } => {
                if let Some(s) = settings.as_mut() {
                    s.question = q.clone();
                }
                subagents.clear();
                lead_turns.clear();
            }
            RunEvent::ModelConfigured { role, config } if role == "lead" => {
                lead_model = Some(format!("{}:{}", config.provider, config.model));
            }
            RunEvent::LeadTurn {
                purpose,
                spent,
                outcome,
                handoff,
            } => lead_turns.push((
                purpose.clone(),
                super::leader::LeadTurn {
                    spent: *spent,
                    outcome: outcome.clone(),
                    configs: Vec::new(),
                    handoff: handoff.clone(),
                },
            )),
            other => restore_subagent(&mut subagents, other),
        }
    }
    let settings = settings.ok_or("the log has no run_started event")?;
    let (cut_off, awaiting, unknown) = effect_states(events);
    let approval_events = approval_events(events);
    withdraw_restored(events, &mut subagents, &mut lead_turns);
    Ok(Resumption {
        settings,
        plan,
        subagents,
        after_seq: events.last().map(|e| e.seq).unwrap_or(0),
        cut_off,
        awaiting,
        unknown,
        approval_events,
        events: events.to_vec(),
        stale: Vec::new(),
        left_out,
        not_searched,
        waves,
        projector: None,
        lead_turns,
        lead_model,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{EventStore, MemoryStore, PlannedSubagent};
    use crate::contracts::RoleId;
    use crate::lead::journal;

    fn manifest() -> crate::checkpoint::Manifest {
        crate::checkpoint::Manifest {
            brief_digest: String::new(),
            brief_tokens: 0,
            tools: vec![],
            budget: Budget::default(),
            context_tokens: 0,
            context: vec![],
            omitted_items: 0,
            omitted_digest: String::new(),
        }
    }

    fn started() -> RunEvent {
        crate::checkpoint::run_started_fixture()
    }

    #[test]
    fn ended_subagents_are_kept_and_cut_off_effects_become_unknown() {
        let events = vec![
            started(),
            RunEvent::PlanRevised {
                subagents: vec![
                    PlannedSubagent {
                        id: "sa1".into(),
                        scope: vec!["a".into()],
                        role: RoleId::EXPLORER,
                        question: None,
                    },
                    PlannedSubagent {
                        id: "sa2".into(),
                        scope: vec!["b".into()],
                        role: RoleId::EXPLORER,
                        question: None,
                    },
                ],
                reason: "test".into(),
                left_out: vec![],
                not_searched: 0,
                not_searched_names: Vec::new(),
            },
            RunEvent::SubagentSpawned {
                subagent: "sa1".into(),
                role: RoleId::EXPLORER,
                scope: vec![],
                manifest: manifest(),
            },
            RunEvent::HandoffAccepted {
                subagent: "sa1".into(),
                handoff: Handoff::default(),
                repairs: 1,
                evidence_digests: Default::default(),
                dropped: Vec::new(),
            },
            RunEvent::SubagentEnded {
                subagent: "sa1".into(),
                state: SubagentState::Repaired,
                error: None,
            },
            RunEvent::SubagentSpawned {
                subagent: "sa2".into(),
                role: RoleId::EXPLORER,
                scope: vec![],
                manifest: manifest(),
            },
            RunEvent::ToolCalled {
                subagent: "sa2".into(),
                call_id: "sa2.1".into(),
                tool: "grep".into(),
                arguments: serde_json::json!({}),
                effect: EffectState::Executing,
                read_only: true,
                intent: String::new(),
            },
        ];
        let store = MemoryStore::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let logged = rt
            .block_on(store.append("r", events.into_iter().map(|e| (1, e)).collect()))
            .unwrap()
            .unwrap();
        let resumption = restore(&logged).unwrap();
        assert_eq!(resumption.plan.len(), 2);
        assert!(resumption.subagents["sa1"].is_done());
        assert_eq!(resumption.subagents["sa1"].repairs, 1);
        assert!(!resumption.subagents["sa2"].is_done());
        assert_eq!(resumption.cut_off, vec!["sa2.1".to_string()]);
        let mut after = journal::cut_off(&resumption.cut_off);
        after.insert(
            0,
            RunEvent::RunResumed {
                after_seq: resumption.after_seq,
            },
        );
        let all = rt
            .block_on(store.append("r", after.into_iter().map(|e| (2, e)).collect()))
            .map(|_| store.events("r").unwrap())
            .unwrap();
        let cp = project("r", &all);
        assert_eq!(cp.effects[0].state, EffectState::OutcomeUnknown);
    }

    /// A call with effects cut off by a crash stays an unknown intent at every later resume,
    /// not only the first: it is never repeated without approval.
    #[test]
    fn an_intent_cut_off_by_an_earlier_crash_stays_unknown() {
        // sa1 starts and charges an order (its first call, `sa1.1`).
        let charging = |order: &str, intent: &str| {
            vec![
                RunEvent::SubagentSpawned {
                    subagent: "sa1".into(),
                    role: RoleId::EXPLORER,
                    scope: vec![],
                    manifest: manifest(),
                },
                RunEvent::ToolCalled {
                    subagent: "sa1".into(),
                    call_id: "sa1.1".into(),
                    tool: "charge".into(),
                    arguments: serde_json::json!({ "order": order }),
                    effect: EffectState::Executing,
                    read_only: false,
                    intent: intent.into(),
                },
            ]
        };
        let mut events = vec![started()];
        events.extend(charging("A-1", "intent-a1"));
        let store = MemoryStore::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let append = |events: Vec<RunEvent>| {
            rt.block_on(store.append("r", events.into_iter().map(|e| (1, e)).collect()))
                .unwrap()
                .unwrap();
            store.events("r").unwrap()
        };
        let logged = append(events);
        let first = restore(&logged).unwrap();
        let expected = vec![("intent-a1".to_string(), "sa1.1".to_string())];
        assert_eq!(first.unknown, expected);
        // The first resume logs the cut-off call unknown.
        let mut after = journal::cut_off(&first.cut_off);
        after.insert(
            0,
            RunEvent::RunResumed {
                after_seq: first.after_seq,
            },
        );
        append(after);
        // The restarted subagent numbers its calls from 1 again: its `sa1.1` charges another
        // order, and completes.
        let mut again = charging("B-2", "intent-b2");
        again.push(RunEvent::ToolReturned {
            subagent: "sa1".into(),
            call_id: "sa1.1".into(),
            is_error: false,
            content_digest: String::new(),
            observations: vec![],
            effect: EffectState::Completed,
        });
        let logged = append(again);
        let second = restore(&logged).unwrap();
        assert!(second.cut_off.is_empty());
        // The run dies again: A-1's charge is still unknown, B-2's is not.
        assert_eq!(second.unknown, expected, "A-1's charge, not B-2's");
    }
}
