//! The durable checkpoint: an append-only, digest-chained event log per run (`event`,
//! `store`, `sqlite`), effect states with one table of legal transitions (`effect`), and the
//! typed checkpoint projected from the events (`projection`) — never from a summary.
//!
//! **Invariant:** a checkpoint is rebuilt from events only; one that fails [`Checkpoint::check`]
//! (a mandatory field missing or inconsistent) is never used — the previous one stays current.

mod audit;
mod branch;
mod brief;
mod effect;
mod event;
mod feed;
mod forget;
mod lock;
mod log;
mod manifest;
mod projection;
mod sqlite;
mod store;
mod writer;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use audit::{
    audit, Audit, CompactionAudit, DenialAudit, RepeatedCall, ResumeAudit, StoredAudit, TraceAudit,
};
pub use branch::{fork_events, lineage, merge, Lineage, Merged, MergedBranch};
pub use brief::{brief, Brief, BriefItem};
pub use effect::{on_recovery, transition, EffectError, EffectState, TRANSITIONS};
#[cfg(test)]
pub(crate) use event::run_started_fixture;
pub(crate) use feed::Feed;
pub use feed::{EventStream, EVENTS_BUFFER};
pub use forget::{
    cites_any, covers, no_reading, tombstone, unavailable, withdraw, withdrawn, withdrawn_in,
    Tombstone, WithdrawnEntry, REASON_MAX_CHARS,
};

/// The checkpoint of run `r` with only its `run_started_fixture` logged, for unit tests.
#[cfg(test)]
pub(crate) fn started_checkpoint_fixture() -> Checkpoint {
    let started = LoggedEvent {
        run_id: "r".into(),
        seq: 1,
        at_ms: 0,
        event: run_started_fixture(),
        prev: String::new(),
        digest: String::new(),
    };
    project("r", &[started])
}
pub use event::{HelperCall, LoggedEvent, Manifest, PlannedSubagent, RunEvent, Subtask, TaskSpec};
pub(crate) use log::now_ms;
pub use log::{Ack, RunLog};
pub use manifest::{Field, ManifestEntry, Reason};
pub use projection::{delta, project, with_withdrawals, Delta, Projector};
pub use sqlite::SqliteStore;
#[doc(hidden)]
pub use store::MemoryStore;
pub use store::{EventStore, RunClaim, RunRow, StoreError, WRITER_BACKLOG};

use crate::handoff::ViolationCode;
pub use crate::policy::ConstraintEntry;
use crate::policy::{Budget, Spent};

/// The checkpoint format's version.
pub const SCHEMA_VERSION: u32 = 1;

/// The constraint a `constraint_stated` event (logged as `seq`) states; `None` for any
/// other event. The checkpoint and the gate's policy both read constraints this way.
pub fn stated_constraint(event: &RunEvent, seq: u64) -> Option<ConstraintEntry> {
    match event {
        RunEvent::ConstraintStated {
            text,
            normalised,
            provenance,
            rules,
            untyped,
            warnings,
        } => Some(ConstraintEntry {
            text: text.clone(),
            normalised: normalised.clone(),
            provenance: provenance.clone(),
            rules: rules.clone(),
            untyped: untyped.clone(),
            warnings: warnings.clone(),
            event: seq,
        }),
        _ => None,
    }
}

/// The policy of a run's log: its `constraint_stated` events, nothing else.
pub fn policy_of_log(events: &[LoggedEvent]) -> crate::policy::Policy {
    let entries: Vec<ConstraintEntry> = events
        .iter()
        .filter_map(|e| stated_constraint(&e.event, e.seq))
        .collect();
    crate::policy::Policy::from_constraints(&entries)
}

/// How a subagent ended (or where it is).
/// ```
/// use baton::SubagentState;
/// assert_eq!(SubagentState::HandedOff.label(), "handed off");
/// assert!(SubagentState::Failed.ended() && !SubagentState::Running.ended());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentState {
    /// Planned, not yet spawned.
    Queued,
    /// Working.
    Running,
    /// Handed off a valid handoff at the first attempt.
    HandedOff,
    /// Handed off a valid handoff after one or more repair turns.
    Repaired,
    /// Handed off a handoff that, once the repairs were spent, broke the contract only in some
    /// of its conclusions: those were taken out (listed as open items), the rest accepted.
    PartlyAccepted,
    /// Never produced a valid handoff within its repairs (`contract_unmet`): nothing of it is
    /// settled.
    Rejected,
    /// Panicked, errored, or stopped without a handoff.
    Failed,
    /// Stopped because the run was cancelled.
    Cancelled,
}

impl SubagentState {
    /// Whether its handoff was accepted.
    pub fn accepted(self) -> bool {
        matches!(
            self,
            SubagentState::HandedOff | SubagentState::Repaired | SubagentState::PartlyAccepted
        )
    }

    /// Whether it has ended.
    pub fn ended(self) -> bool {
        !matches!(self, SubagentState::Queued | SubagentState::Running)
    }

    /// The word shown in progress lines.
    pub fn label(self) -> &'static str {
        match self {
            SubagentState::Queued => "queued",
            SubagentState::Running => "running",
            SubagentState::HandedOff => "handed off",
            SubagentState::Repaired => "repaired",
            SubagentState::PartlyAccepted => "partly accepted",
            SubagentState::Rejected => "rejected",
            SubagentState::Failed => "failed",
            SubagentState::Cancelled => "cancelled",
        }
    }
}

/// One piece of evidence: a cited source, the digest of what it said, an excerpt or a
/// tombstone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceEntry {
    /// The source id.
    pub source: String,
    /// SHA-256 of the cited text when it was accepted (empty when not a file range).
    pub digest: String,
    /// The claim it supports, up to 300 characters; None when tombstoned.
    pub excerpt: Option<String>,
    /// True when the excerpt was dropped (the identity and digest stay).
    pub tombstone: bool,
    /// The event that found the cited text changed since it was accepted, if one did: the
    /// evidence no longer holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<u64>,
    /// The subagent that cited it.
    pub subagent: String,
    /// The event that accepted it.
    pub event: u64,
}

/// A search that found nothing: what, where, how much was covered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NegativeEntry {
    /// The subagent.
    pub subagent: String,
    /// The search call.
    pub call_id: String,
    /// The pattern.
    pub pattern: String,
    /// Where (shared: the same scope is held once however many entries name it).
    pub scope: std::sync::Arc<[String]>,
    /// Coverage: files searched.
    pub files_searched: usize,
    /// Files in the scope that could not be searched.
    #[serde(default)]
    pub files_skipped: usize,
    /// Entries of the scope it left out: hidden, ignored, links, names no citation could
    /// write.
    #[serde(default)]
    pub not_searched: usize,
    /// The pattern ignored letter case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// The pattern was a literal string.
    #[serde(default)]
    pub fixed_string: bool,
    /// The event.
    pub event: u64,
}

/// An effect (a tool call's consequence) and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectEntry {
    /// The intent id (the call id).
    pub intent_id: String,
    /// The subagent.
    pub subagent: String,
    /// The tool.
    pub tool: String,
    /// Its state.
    pub state: EffectState,
    /// Attempts made.
    pub attempts: u32,
    /// Events that bear on it (call, return, changes).
    pub receipts: Vec<u64>,
    /// What recovery may do.
    pub allowed_recovery: String,
    /// Whether repeating it is prohibited.
    pub prohibited_repetition: bool,
    /// For a call with effects, its intent: the digest of its tool and arguments (a repeat of
    /// an effect whose outcome is unknown is recognised by it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub intent: String,
}

impl EffectEntry {
    /// Whether a stored checkpoint keeps it: unresolved, or not to be repeated.
    pub fn kept_when_stored(&self) -> bool {
        self.prohibited_repetition
            || !matches!(
                self.state,
                EffectState::Completed
                    | EffectState::Failed
                    | EffectState::Denied
                    | EffectState::Stopped
                    | EffectState::Superseded
                    | EffectState::Reconciled
            )
    }
}

/// The effects a stored checkpoint keeps ([`EffectEntry::kept_when_stored`]).
fn stored_effects<S: serde::Serializer>(
    effects: &[EffectEntry],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(effects.iter().filter(|e| e.kept_when_stored()))
}

/// A denial by policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DenialEntry {
    /// The subagent whose call was denied.
    pub subagent: String,
    /// The call.
    pub call_id: String,
    /// The tool called.
    pub tool: String,
    /// The consequence denied.
    pub consequence: crate::policy::Consequence,
    /// The constraint that denied it, verbatim.
    pub constraint: String,
    /// The `constraint_stated` event of that constraint.
    pub constraint_event: u64,
    /// The kind of constraint.
    pub category: crate::policy::Category,
    /// The event.
    pub event: u64,
}

/// An approval: the exact object asked for, until when, how it was decided, whether used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalEntry {
    /// The request's id (`ap1`).
    #[serde(default)]
    pub id: String,
    /// The subagent whose call asked.
    #[serde(default)]
    pub subagent: String,
    /// The call that asked.
    #[serde(default)]
    pub call_id: String,
    /// The exact object: the tool and the digest of its arguments
    /// (`` tool `x`, arguments sha256:… ``).
    pub object: String,
    /// Why it needed approval.
    #[serde(default)]
    pub reason: String,
    /// Expiry (ms since the epoch), if any.
    pub expires_ms: Option<u64>,
    /// `granted`, `denied`, `expired` or `withdrawn`; none while it waits.
    #[serde(default)]
    pub decision: Option<String>,
    /// Whether a call used it (a grant is used once).
    pub consumed: bool,
    /// The event that asked.
    pub event: u64,
}

/// Budgets, exact, from the ledger of events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budgets {
    /// The per-subagent limit.
    pub limit: Budget,
    /// What each subagent spent.
    pub per_subagent: BTreeMap<String, Spent>,
    /// The run's total.
    pub total: Spent,
}

/// Where a planned piece of work stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// To do or under way.
    Active,
    /// Cannot go on as it is (its subagent was cancelled mid-way).
    Blocked,
    /// Replaced by a later plan.
    Superseded,
    /// No longer valid.
    Invalidated,
    /// Done: its subagent ended.
    Completed,
}

/// One planned piece of work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEntry {
    /// The subagent.
    pub subagent: String,
    /// Its shard (shared with the searches over it).
    pub scope: std::sync::Arc<[String]>,
    /// Where it stands.
    pub status: PlanStatus,
    /// How its subagent ended, once it has.
    pub outcome: Option<SubagentState>,
    /// The event of the latest change.
    pub event: u64,
}

/// A handoff accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcceptedEntry {
    /// The subagent.
    pub subagent: String,
    /// Repair turns it took.
    pub repairs: u32,
    /// Its settled conclusions.
    pub conclusions: usize,
    /// The findings of a handoff that passed only after repair, or that rest on corpus
    /// passages: doubted until a verifier rereads them (empty for a handoff accepted as first
    /// sent whose findings cite no passage).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub doubted: Vec<crate::handoff::Conclusion>,
    /// The event.
    pub event: u64,
}

/// A handoff rejected (`contract_unmet`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedEntry {
    /// The subagent.
    pub subagent: String,
    /// Its violation codes.
    pub codes: Vec<ViolationCode>,
    /// The event.
    pub event: u64,
}

/// Handoffs accepted and rejected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoffs {
    /// Accepted.
    pub accepted: Vec<AcceptedEntry>,
    /// Rejected.
    pub rejected: Vec<RejectedEntry>,
}

/// The typed state of a run, projected from its events (contracts/checkpoint.schema.json).
/// Every field is mandatory: a stored checkpoint missing one does not load.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use baton::EventStore;
/// let store = std::sync::Arc::new(baton::testing::MemoryStore::new());
/// let dir = baton::testing::fixture_tree();
/// let report = baton::Coordinator::builder().store(store.clone()).build()
///     .run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
/// let events = store.events(&report.run_id).unwrap();
/// let checkpoint = baton::project(&report.run_id, &events);
/// assert_eq!(checkpoint.last_seq, events.len() as u64);
/// assert_eq!(checkpoint.finished, Some(false), "finished, not cancelled");
/// assert!(checkpoint.check().is_ok());
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Format version.
    pub schema_version: u32,
    /// The run.
    pub run_id: String,
    /// The first event covered.
    pub first_seq: u64,
    /// The last event covered.
    pub last_seq: u64,
    /// The goal: the question.
    pub goal: String,
    /// The root explored.
    pub root: String,
    /// Constraints in force.
    pub constraints: Vec<ConstraintEntry>,
    /// Evidence accepted.
    pub evidence: Vec<EvidenceEntry>,
    /// Searches that found nothing.
    pub negative_evidence: Vec<NegativeEntry>,
    /// Effects and their states. Stored, it holds what a later step may act on: every effect
    /// still unresolved and every one that must not be repeated — a read-only call that ended
    /// (completed, failed, denied, stopped, superseded, reconciled) is left out, as it may
    /// simply be read again ([`EffectEntry::kept_when_stored`]).
    #[serde(serialize_with = "stored_effects")]
    pub effects: Vec<EffectEntry>,
    /// Denials.
    pub denials: Vec<DenialEntry>,
    /// Approvals.
    pub approvals: Vec<ApprovalEntry>,
    /// Budgets.
    pub budgets: Budgets,
    /// A digest of the tool set the run was given.
    pub tool_registry_revision: String,
    /// The plan.
    pub plans: Vec<PlanEntry>,
    /// Handoffs accepted and rejected.
    pub handoffs: Handoffs,
    /// A merge's conflicts between its branches (`baton merge`), each with its `run_merged`
    /// event: open until a later run settles them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<(String, u64)>,
    /// Sources withdrawn (`baton forget`): their tombstones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withdrawn: Vec<WithdrawnEntry>,
    /// Set once the run finished: whether it was cancelled.
    pub finished: Option<bool>,
}

/// Why a checkpoint may not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid checkpoint of {run_id}: {why}")]
pub struct CheckpointError {
    run_id: String,
    why: String,
}

impl Checkpoint {
    /// The withdrawal covering a cited source (`baton forget`), if one does.
    pub fn withdrawal_of(&self, source: &str) -> Option<&WithdrawnEntry> {
        let cited = crate::source::SourceId::parse(source).ok()?;
        self.withdrawn.iter().find(|w| {
            crate::source::SourceId::parse(&w.tombstone.source).is_ok_and(|s| covers(&s, &cited))
        })
    }

    /// Whether it may be used: known version, a goal, a sane event range, a tool revision.
    pub fn check(&self) -> Result<(), CheckpointError> {
        let why = if self.schema_version != SCHEMA_VERSION {
            format!(
                "schema version {} is not {SCHEMA_VERSION}",
                self.schema_version
            )
        } else if self.goal.trim().is_empty() {
            "the goal is missing".to_string()
        } else if self.first_seq == 0 || self.last_seq < self.first_seq {
            format!(
                "event range {}..{} is not a range",
                self.first_seq, self.last_seq
            )
        } else if self.tool_registry_revision.is_empty() {
            "the tool registry revision is missing".to_string()
        } else {
            return Ok(());
        };
        Err(CheckpointError {
            run_id: self.run_id.clone(),
            why,
        })
    }
}

/// Events as a log holds them (`run_id` `r`, seq from 1, digest `d{seq}`), for tests.
#[cfg(test)]
pub(crate) fn logged_fixture(events: Vec<RunEvent>) -> Vec<LoggedEvent> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| LoggedEvent {
            run_id: "r".into(),
            seq: i as u64 + 1,
            at_ms: 0,
            event,
            prev: String::new(),
            digest: format!("d{}", i + 1),
        })
        .collect()
}
