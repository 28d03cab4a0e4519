//! The projection, pure: a run's events folded into its checkpoint, and the delta of events
//! after a checkpoint. Projecting the same events always gives the same checkpoint.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::effect::transition;
use super::event::{LoggedEvent, RunEvent};
use super::forget::{covers, WithdrawnEntry};
use super::{
    AcceptedEntry, ApprovalEntry, Budgets, Checkpoint, DenialEntry, EffectEntry, EvidenceEntry,
    Handoffs, NegativeEntry, PlanEntry, PlanStatus, RejectedEntry, SCHEMA_VERSION,
};
use crate::digest::sha256_hex;
use crate::handoff::ConclusionKind;
use crate::policy::{Budget, Spent};
use crate::source::{Observation, SourceId};

/// Longest evidence excerpt kept in a checkpoint.
const EXCERPT_CHARS: usize = 300;

/// The events after a checkpoint, to be layered on top of it.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use baton::EventStore;
/// let store = baton::testing::MemoryStore::new();
/// store.append("r1", vec![(1, baton::RunEvent::RunFinished { cancelled: false })]).await.unwrap().unwrap();
/// let events = store.events("r1").unwrap();
/// let empty = baton::project("r1", &[]);
/// let delta = baton::delta(&empty, &events);
/// assert_eq!((delta.after_seq, delta.events.len()), (0, 1));
/// # });
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    /// The checkpoint's last event.
    pub after_seq: u64,
    /// Every event after it, in order.
    pub events: Vec<LoggedEvent>,
}

/// The events of `events` that come after `checkpoint`.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use baton::EventStore;
/// let store = baton::testing::MemoryStore::new();
/// store.append("r1", vec![(1, baton::RunEvent::RunFinished { cancelled: false })]).await.unwrap().unwrap();
/// let events = store.events("r1").unwrap();
/// let checkpoint = baton::project("r1", &events);
/// assert!(baton::delta(&checkpoint, &events).events.is_empty(), "nothing after the checkpoint");
/// # });
/// ```
pub fn delta(checkpoint: &Checkpoint, events: &[LoggedEvent]) -> Delta {
    Delta {
        after_seq: checkpoint.last_seq,
        events: events
            .iter()
            .filter(|e| e.seq > checkpoint.last_seq)
            .cloned()
            .collect(),
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(EXCERPT_CHARS).collect()
}

/// A checkpoint kept up to date one event at a time: each event is applied once, so a lead
/// that logs N events pays for N applications, not for re-projecting the run at every step.
#[derive(Debug, Clone, PartialEq)]
pub struct Projector {
    cp: Checkpoint,
    /// Call id -> its latest effect entry.
    effect_index: BTreeMap<String, usize>,
    /// The attempt each effect entry belongs to.
    entry_attempt: Vec<u32>,
    /// Each subagent's current attempt.
    attempt: BTreeMap<String, u32>,
    /// Each subagent's latest plan entry, so an event finds it without a scan.
    plan_of: BTreeMap<String, usize>,
    /// The searches negative evidence already holds (pattern, scope, flags), so a repeated
    /// one is found without a scan.
    searches: HashSet<(String, Arc<[String]>, bool, bool)>,
    /// Every scope held, once: a plan's shard and the searches over it share one copy.
    scopes: HashSet<Arc<[String]>>,
}

/// `scope`, as the one copy `scopes` holds.
fn interned(scopes: &mut HashSet<Arc<[String]>>, scope: &[String]) -> Arc<[String]> {
    if let Some(held) = scopes.get(scope) {
        return Arc::clone(held);
    }
    let held: Arc<[String]> = scope.into();
    scopes.insert(Arc::clone(&held));
    held
}

/// An effect moves on, named by its intent id (`sa1.1`, or `sa1.1#2` for a restarted
/// attempt's), when the transition is allowed.
fn effect_changed(
    cp: &mut Checkpoint,
    intent_id: &str,
    to: super::EffectState,
    evidence: Option<&str>,
    at: u64,
) {
    if let Some(e) = cp
        .effects
        .iter_mut()
        .rev()
        .find(|e| e.intent_id == intent_id)
    {
        if let Ok(next) = transition(e.state, to, evidence) {
            e.state = next;
            e.receipts.push(at);
        }
    }
}

/// A call's intent as logged (its arguments may have been scrubbed since; an old log has
/// none, and it is their digest): none for a read-only call.
fn logged_intent(
    tool: &str,
    arguments: &serde_json::Value,
    intent: &str,
    read_only: bool,
) -> String {
    match (read_only, intent.is_empty()) {
        (true, _) => String::new(),
        (false, false) => intent.to_string(),
        (false, true) => crate::policy::intent_digest(tool, arguments),
    }
}

impl Projector {
    /// The checkpoint of a run with no events yet.
    pub fn new(run_id: &str) -> Projector {
        Projector {
            cp: Checkpoint {
                schema_version: SCHEMA_VERSION,
                run_id: run_id.to_string(),
                first_seq: 0,
                last_seq: 0,
                goal: String::new(),
                root: String::new(),
                constraints: Vec::new(),
                evidence: Vec::new(),
                negative_evidence: Vec::new(),
                effects: Vec::new(),
                denials: Vec::new(),
                approvals: Vec::new(),
                budgets: Budgets {
                    limit: Budget::default(),
                    per_subagent: BTreeMap::new(),
                    total: Spent::default(),
                },
                tool_registry_revision: String::new(),
                plans: Vec::new(),
                handoffs: Handoffs::default(),
                withdrawn: Vec::new(),
                conflicts: Vec::new(),
                finished: None,
            },
            effect_index: BTreeMap::new(),
            entry_attempt: Vec::new(),
            attempt: BTreeMap::new(),
            plan_of: BTreeMap::new(),
            searches: HashSet::new(),
            scopes: HashSet::new(),
        }
    }

    /// The checkpoint as of the last event applied.
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.cp
    }

    /// The intent id of the latest effect of a call id (a restarted attempt's calls reuse
    /// their ids: its effects' intent ids are `CALL#N`).
    pub fn intent_of(&self, call_id: &str) -> Option<&str> {
        self.effect_of(call_id).map(|e| e.intent_id.as_str())
    }

    /// The effect of the latest call logged with this id.
    pub fn effect_of(&self, call_id: &str) -> Option<&EffectEntry> {
        self.effect_index
            .get(call_id)
            .and_then(|&i| self.cp.effects.get(i))
    }

    /// The checkpoint, taken.
    pub fn into_checkpoint(self) -> Checkpoint {
        self.cp
    }

    /// Applies the run's next event.
    pub fn apply(&mut self, logged: &LoggedEvent) {
        let cp = &mut self.cp;
        if cp.first_seq == 0 {
            cp.first_seq = logged.seq;
        }
        cp.last_seq = logged.seq;
        let at = logged.seq;
        match &logged.event {
            RunEvent::RunStarted {
                question,
                root,
                budget,
                tools,
                ..
            } => {
                cp.goal = question.clone();
                cp.root = root.clone();
                cp.budgets.limit = *budget;
                cp.tool_registry_revision =
                    sha256_hex(tools.join("\n").as_bytes())[..16].to_string();
            }
            RunEvent::ConstraintStated { .. } => cp
                .constraints
                .extend(super::stated_constraint(&logged.event, at)),
            RunEvent::ToolDenied {
                subagent,
                call_id,
                denial,
            } => cp.denials.push(DenialEntry {
                subagent: subagent.clone(),
                call_id: call_id.clone(),
                tool: denial.tool.clone(),
                consequence: denial.consequence.clone(),
                constraint: denial.constraint.clone(),
                constraint_event: denial.constraint_event,
                category: denial.category,
                event: at,
            }),
            RunEvent::PlanRevised { subagents, .. } => self.plan_revised(subagents, at),
            RunEvent::SubagentSpawned { subagent, .. } => self.spawned(subagent, at),
            RunEvent::ToolCalled {
                subagent,
                call_id,
                tool,
                arguments,
                effect,
                read_only,
                intent,
            } => {
                let intent = logged_intent(tool, arguments, intent, *read_only);
                self.tool_called(subagent, call_id, tool, (*effect, intent), *read_only, at)
            }
            RunEvent::ToolReturned {
                subagent,
                call_id,
                observations,
                effect,
                ..
            } => self.tool_returned(subagent, call_id, observations, *effect, at),
            RunEvent::ApprovalRequested { .. }
            | RunEvent::ApprovalDecided { .. }
            | RunEvent::ApprovalConsumed { .. } => approval(cp, &logged.event, at),
            RunEvent::EffectChanged {
                call_id,
                to,
                evidence,
                ..
            } => effect_changed(cp, call_id, *to, evidence.as_deref(), at),
            RunEvent::HandoffAccepted {
                subagent,
                handoff,
                repairs,
                evidence_digests,
                dropped,
            } => accept(
                cp,
                subagent,
                handoff,
                *repairs,
                evidence_digests,
                !dropped.is_empty(),
                at,
            ),
            RunEvent::HandoffRepairRequested { .. }
            | RunEvent::ModelReturned { .. }
            | RunEvent::WindowCompacted { .. }
            | RunEvent::LedgerClassified { .. }
            | RunEvent::SummaryNarrated { .. }
            | RunEvent::ModelConfigured { .. }
            | RunEvent::LeadTurn { .. } => {}
            RunEvent::HandoffRejected {
                subagent,
                violations,
                ..
            } => cp.handoffs.rejected.push(RejectedEntry {
                subagent: subagent.clone(),
                codes: violations.iter().map(|v| v.code).collect(),
                event: at,
            }),
            RunEvent::BudgetSpent { subagent, spent } => spend(&mut cp.budgets, subagent, spent),
            RunEvent::SubagentEnded {
                subagent, state, ..
            } => self.ended(subagent, *state, at),
            RunEvent::RunResumed { .. } => resumed(cp, at),
            RunEvent::SourceForgotten { tombstone } => forgotten(cp, tombstone, at),
            RunEvent::RunForked {
                question: Some(question),
                ..
            } => cp.goal = question.clone(),
            RunEvent::RunMerged { conflicts, .. } => cp
                .conflicts
                .extend(conflicts.iter().map(|c| (c.clone(), at))),
            RunEvent::RunForked { .. } => {}
            RunEvent::EvidenceStale {
                subagent, sources, ..
            } => self.evidence_stale(subagent, sources, at),
            RunEvent::RunFinished { cancelled } => cp.finished = Some(*cancelled),
        }
    }

    /// A subagent's new attempt: its plan entry active again.
    fn spawned(&mut self, subagent: &str, at: u64) {
        *self.attempt.entry(subagent.to_string()).or_default() += 1;
        if let Some(plan) = self
            .plan_of
            .get(subagent)
            .and_then(|&i| self.cp.plans.get_mut(i))
        {
            plan.status = PlanStatus::Active;
            plan.outcome = None;
            plan.event = at;
        }
    }

    /// A subagent's end: its plan entry completed, or blocked when it was cancelled.
    fn ended(&mut self, subagent: &str, state: super::SubagentState, at: u64) {
        if let Some(plan) = self
            .plan_of
            .get(subagent)
            .and_then(|&i| self.cp.plans.get_mut(i))
        {
            plan.outcome = Some(state);
            plan.event = at;
            plan.status = if state == super::SubagentState::Cancelled {
                PlanStatus::Blocked
            } else {
                PlanStatus::Completed
            };
        }
    }

    /// A new plan: the active entries superseded, one entry a subagent — a subagent the new
    /// plan lists again after it finished (a second wave lists the first) keeps its entry.
    fn plan_revised(&mut self, subagents: &[super::PlannedSubagent], at: u64) {
        let cp = &mut self.cp;
        for plan in &mut cp.plans {
            if plan.status == PlanStatus::Active {
                plan.status = PlanStatus::Superseded;
                plan.event = at;
            }
        }
        for s in subagents {
            let finished = self
                .plan_of
                .get(&s.id)
                .and_then(|&i| cp.plans.get(i))
                .is_some_and(|p| p.status == PlanStatus::Completed);
            if finished {
                continue;
            }
            self.plan_of.insert(s.id.clone(), cp.plans.len());
            cp.plans.push(PlanEntry {
                subagent: s.id.clone(),
                scope: interned(&mut self.scopes, &s.scope),
                status: PlanStatus::Active,
                outcome: None,
                event: at,
            });
        }
    }

    /// A tool call: another try of an effect of this attempt, or a new effect.
    fn tool_called(
        &mut self,
        subagent: &str,
        call_id: &str,
        tool: &str,
        (effect, intent): (super::EffectState, String),
        read_only: bool,
        at: u64,
    ) {
        let cp = &mut self.cp;
        let current = self.attempt.get(subagent).copied().unwrap_or(0);
        match self.effect_index.get(call_id).copied() {
            // The same call again within one attempt: another try of one effect.
            Some(i) if self.entry_attempt[i] == current => {
                let e = &mut cp.effects[i];
                e.attempts += 1;
                e.receipts.push(at);
                e.state = effect;
            }
            // A new effect; a restarted attempt reusing an id gets its own intent id,
            // and the earlier one keeps its state (outcome_unknown stays so).
            earlier => {
                let intent_id = match earlier {
                    Some(_) => format!("{call_id}#{current}"),
                    None => call_id.to_string(),
                };
                self.effect_index
                    .insert(call_id.to_string(), cp.effects.len());
                self.entry_attempt.push(current);
                cp.effects.push(EffectEntry {
                    intent_id,
                    subagent: subagent.to_string(),
                    tool: tool.to_string(),
                    state: effect,
                    attempts: 1,
                    receipts: vec![at],
                    allowed_recovery: if read_only {
                        "read-only: may be read again".into()
                    } else {
                        "has effects: reconcile what happened before any retry".into()
                    },
                    prohibited_repetition: !read_only,
                    intent,
                });
            }
        }
    }

    /// A call's return: its effect moves on, and each empty search it made is negative
    /// evidence (once per pattern, scope and flags).
    fn tool_returned(
        &mut self,
        subagent: &str,
        call_id: &str,
        observations: &[Observation],
        effect: super::EffectState,
        at: u64,
    ) {
        let cp = &mut self.cp;
        if let Some(&i) = self.effect_index.get(call_id) {
            let e = &mut cp.effects[i];
            if let Ok(next) = transition(e.state, effect, Some(call_id)) {
                e.state = next;
            }
            e.receipts.push(at);
        }
        for o in observations {
            if let Observation::Searched {
                call_id,
                pattern,
                scope,
                matches: 0,
                files_searched,
                files_skipped,
                case_insensitive,
                fixed_string,
                not_searched,
                ..
            } = o
            {
                // The same search in the same scope (a restarted attempt repeating it)
                // is one piece of negative evidence, not two.
                let scope = interned(&mut self.scopes, scope);
                let key = (
                    pattern.clone(),
                    Arc::clone(&scope),
                    *case_insensitive,
                    *fixed_string,
                );
                if !self.searches.insert(key) {
                    continue;
                }
                cp.negative_evidence.push(NegativeEntry {
                    subagent: subagent.to_string(),
                    call_id: call_id.clone(),
                    pattern: pattern.clone(),
                    scope,
                    files_searched: *files_searched,
                    files_skipped: *files_skipped,
                    not_searched: *not_searched,
                    case_insensitive: *case_insensitive,
                    fixed_string: *fixed_string,
                    event: at,
                });
            }
        }
    }

    /// Sources found stale: their evidence marked, and a search that finds something now is
    /// no longer negative evidence.
    fn evidence_stale(&mut self, subagent: &str, sources: &[String], at: u64) {
        let cp = &mut self.cp;
        for entry in cp
            .evidence
            .iter_mut()
            .filter(|e| e.subagent == subagent && sources.contains(&e.source))
        {
            entry.stale = Some(at);
        }
        let searches = &mut self.searches;
        cp.negative_evidence.retain(|n| {
            let keep =
                !(n.subagent == subagent && sources.contains(&format!("call:{}", n.call_id)));
            if !keep {
                searches.remove(&(
                    n.pattern.clone(),
                    n.scope.clone(),
                    n.case_insensitive,
                    n.fixed_string,
                ));
            }
            keep
        });
    }
}

/// A request for approval asked, decided or used.
fn approval(cp: &mut Checkpoint, event: &RunEvent, at: u64) {
    match event {
        RunEvent::ApprovalRequested { request } => cp.approvals.push(ApprovalEntry {
            id: request.id.clone(),
            subagent: request.subagent.clone(),
            call_id: request.call_id.clone(),
            object: format!(
                "tool `{}`, arguments sha256:{}",
                request.tool, request.arguments_digest
            ),
            reason: request.reason.clone(),
            expires_ms: Some(request.expires_ms),
            decision: None,
            consumed: false,
            event: at,
        }),
        RunEvent::ApprovalDecided {
            approval_id,
            decision,
            ..
        } => {
            if let Some(entry) = cp.approvals.iter_mut().find(|a| &a.id == approval_id) {
                entry.decision = Some(decision.word().to_string());
            }
        }
        RunEvent::ApprovalConsumed { approval_id, .. } => {
            if let Some(entry) = cp.approvals.iter_mut().find(|a| &a.id == approval_id) {
                entry.consumed = true;
            }
        }
        _ => {}
    }
}

/// A resume: blocked plan entries active again, the run no longer finished. Effects cut off by
/// the crash change by their own `effect_changed` events.
fn resumed(cp: &mut Checkpoint, at: u64) {
    for plan in &mut cp.plans {
        if plan.status == PlanStatus::Blocked {
            plan.status = PlanStatus::Active;
            plan.event = at;
        }
    }
    cp.finished = None;
}

/// The sources `cp` withdrew.
fn withdrawn_ids(cp: &Checkpoint) -> Vec<SourceId> {
    cp.withdrawn
        .iter()
        .filter_map(|w| SourceId::parse(&w.tombstone.source).ok())
        .collect()
}

/// Evidence of withdrawn sources keeps its identity and digest, not its text; a doubted
/// conclusion citing one is no longer listed.
fn tombstone_withdrawn(cp: &mut Checkpoint) {
    let ids = withdrawn_ids(cp);
    if ids.is_empty() {
        return;
    }
    // A finding citing several sources is one excerpt per source: where one of them is
    // withdrawn, the claim goes from every entry of it (same event, same excerpt).
    let mut claims: HashSet<(u64, String)> = HashSet::new();
    for e in &cp.evidence {
        if SourceId::parse(&e.source).is_ok_and(|s| ids.iter().any(|w| covers(w, &s))) {
            if let Some(x) = &e.excerpt {
                claims.insert((e.event, x.clone()));
            }
        }
    }
    for e in &mut cp.evidence {
        let covered = SourceId::parse(&e.source).is_ok_and(|s| ids.iter().any(|w| covers(w, &s)));
        let same_claim = e
            .excerpt
            .as_ref()
            .is_some_and(|x| claims.contains(&(e.event, x.clone())));
        if covered || same_claim {
            e.excerpt = None;
            e.tombstone = true;
        }
    }
    for a in &mut cp.handoffs.accepted {
        a.doubted.retain(|c| !super::forget::cites_any(c, &ids));
    }
    // A withdrawn search call's result — what it found nothing of, and where — goes too.
    cp.negative_evidence.retain(|n| {
        !ids.iter().any(
            |w| matches!(w, SourceId::Record { kind, id } if kind == "call" && *id == n.call_id),
        )
    });
}

/// A stored checkpoint brought in line with the withdrawals logged after it (`delta`): a
/// context compiled from it and its delta shows no withdrawn text, however old the checkpoint.
pub fn with_withdrawals(mut cp: Checkpoint, delta: &Delta) -> Checkpoint {
    for e in &delta.events {
        if let RunEvent::SourceForgotten { tombstone } = &e.event {
            forgotten(&mut cp, tombstone, e.seq);
        }
    }
    cp
}

/// A source withdrawn: its tombstone kept, its text out of the checkpoint.
fn forgotten(cp: &mut Checkpoint, tombstone: &super::forget::Tombstone, at: u64) {
    cp.withdrawn.push(WithdrawnEntry {
        tombstone: tombstone.clone(),
        event: at,
    });
    tombstone_withdrawn(cp);
}

/// An accepted handoff: its findings' sources as evidence, and its entry (its findings doubted
/// when it needed repairs or lost conclusions, or rest on corpus passages).
fn accept(
    cp: &mut Checkpoint,
    subagent: &str,
    handoff: &crate::handoff::Handoff,
    repairs: u32,
    evidence_digests: &BTreeMap<String, String>,
    dropped_any: bool,
    at: u64,
) {
    let findings = || {
        handoff
            .settled_conclusions
            .iter()
            .filter(|c| c.kind == ConclusionKind::Finding)
    };
    for c in findings() {
        for source in &c.sources {
            let id = source.to_string();
            cp.evidence.push(EvidenceEntry {
                digest: evidence_digests.get(&id).cloned().unwrap_or_default(),
                source: id,
                excerpt: Some(excerpt(&c.claim)),
                tombstone: false,
                stale: None,
                subagent: subagent.to_string(),
                event: at,
            });
        }
    }
    cp.handoffs.accepted.push(AcceptedEntry {
        subagent: subagent.to_string(),
        repairs,
        conclusions: handoff.settled_conclusions.len(),
        // A doubt is listed once: a verifier settling a doubted claim again does not doubt it
        // anew.
        doubted: if repairs > 0 || dropped_any || handoff.rests_on_passages() {
            findings()
                .filter(|c| {
                    !cp.handoffs
                        .accepted
                        .iter()
                        .any(|e| e.doubted.iter().any(|d| d == *c))
                })
                .cloned()
                .collect()
        } else {
            Vec::new()
        },
        event: at,
    });
    // A source withdrawn earlier stays withdrawn when a later handoff cites it.
    tombstone_withdrawn(cp);
}

/// A subagent's spending: the total moves by the difference, no sum over every subagent per
/// event; saturating, as a log from disk is untrusted and must not overflow.
fn spend(budgets: &mut Budgets, subagent: &str, spent: &Spent) {
    let before = budgets
        .per_subagent
        .insert(subagent.to_string(), *spent)
        .unwrap_or_default();
    let total = &mut budgets.total;
    total.model_turns =
        (total.model_turns.saturating_sub(before.model_turns)).saturating_add(spent.model_turns);
    total.tool_calls =
        (total.tool_calls.saturating_sub(before.tool_calls)).saturating_add(spent.tool_calls);
    total.tokens_in =
        (total.tokens_in.saturating_sub(before.tokens_in)).saturating_add(spent.tokens_in);
    total.tokens_out =
        (total.tokens_out.saturating_sub(before.tokens_out)).saturating_add(spent.tokens_out);
}

/// Folds a run's events (in order) into its checkpoint.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use baton::EventStore;
/// let store = baton::testing::MemoryStore::new();
/// store.append("r1", vec![(1, baton::RunEvent::RunFinished { cancelled: true })]).await.unwrap().unwrap();
/// let checkpoint = baton::project("r1", &store.events("r1").unwrap());
/// assert_eq!((checkpoint.run_id.as_str(), checkpoint.finished), ("r1", Some(true)));
/// # });
/// ```
pub fn project(run_id: &str, events: &[LoggedEvent]) -> Checkpoint {
    let mut projector = Projector::new(run_id);
    for logged in events {
        projector.apply(logged);
    }
    projector.into_checkpoint()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::store::{EventStore, MemoryStore};

    #[test]
    fn a_delta_is_the_events_after_the_checkpoint() {
        let store = MemoryStore::new();
        let started = crate::checkpoint::run_started_fixture();
        let finished = RunEvent::RunFinished { cancelled: false };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let first = rt
            .block_on(store.append("r", vec![(1, started)]))
            .unwrap()
            .unwrap();
        let cp = project("r", &first);
        assert!(cp.check().is_ok());
        assert_eq!(cp.finished, None);
        rt.block_on(store.append("r", vec![(2, finished)]))
            .unwrap()
            .unwrap();
        let all = store.events("r").unwrap();
        let d = delta(&cp, &all);
        assert_eq!(d.after_seq, 1);
        assert_eq!(d.events.len(), 1);
        assert_eq!(d.events[0].seq, 2);
        assert_eq!(project("r", &all).finished, Some(false));
    }
}
