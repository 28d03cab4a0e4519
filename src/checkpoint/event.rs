//! The events of a run's log, in the past tense: plain serialisable data, documented as a wire
//! format in contracts/events.md and contracts/event.schema.json (fields may be added, never
//! renamed).

use crate::digest::sha256_hex;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::effect::EffectState;
use super::SubagentState;
use crate::contracts::RoleId;
use crate::handoff::{Handoff, Violation};
use crate::policy::{Budget, Spent};
use crate::source::Observation;

/// One planned subagent: its id and shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedSubagent {
    /// Subagent id, e.g. `sa2`.
    pub id: String,
    /// Root-relative paths of its shard.
    pub scope: Vec<String>,
    /// Its role.
    #[serde(default = "explorer")]
    pub role: RoleId,
    /// Its own question, when a lead model planned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn explorer() -> RoleId {
    RoleId::EXPLORER
}

/// One piece of work the task hands a subagent: its role, its own question, and (exploring)
/// the part of the tree it covers.
/// ```
/// let task = baton::Task::job("Triage.").subtask("triager", "Which tickets are urgent?");
/// let subtask = &task.subtasks()[0];
/// assert_eq!((subtask.role.as_str(), subtask.question.as_str()), ("triager", "Which tickets are urgent?"));
/// assert!(subtask.scope.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subtask {
    /// The role its subagent plays.
    pub role: RoleId,
    /// What it answers (asked besides the task's question).
    pub question: String,
    /// Root-relative paths it covers (exploring; empty: the whole tree, or no tree).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
}

/// What the log keeps of a task beyond its question and root: its kind, roles and subtasks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// A custom job (no workspace); false: exploring a tree.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub custom: bool,
    /// A research task's corpus folder (as given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus: Option<String>,
    /// The roles fanned out (none: an explore task's `explorer`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<RoleId>,
    /// Subtasks given one by one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subtasks: Vec<Subtask>,
}

impl TaskSpec {
    /// Whether it is a plain exploration (the tree sharded among explorers).
    pub fn is_plain(&self) -> bool {
        *self == TaskSpec::default()
    }

    /// How many subagents it fans out besides the explorers that shard a tree: one for each
    /// other role it lists, one for each subtask it gives.
    pub fn others(&self) -> usize {
        self.roles
            .iter()
            .filter(|r| **r != crate::contracts::RoleId::EXPLORER)
            .count()
            + self.subtasks.len()
    }

    /// Whether explorers shard the tree (a plain exploration, or one listing `explorer`).
    pub fn shards_tree(&self) -> bool {
        self.is_plain()
            || (!self.custom && self.roles.contains(&crate::contracts::RoleId::EXPLORER))
    }
}

/// What a subagent was given, for the log: enough to say what it saw without the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// SHA-256 of its brief followed by the contract (`brief`, a blank line, then
    /// `contracts/handoff.md`; the contract travels in its system text, after the role's).
    pub brief_digest: String,
    /// Estimated tokens of its brief and the contract.
    pub brief_tokens: u64,
    /// Tools it may call.
    pub tools: Vec<String>,
    /// Its budget.
    pub budget: Budget,
    /// Tokens of its compiled context.
    #[serde(default)]
    pub context_tokens: u64,
    /// Every checkpoint field its context included or omitted, and every item it included,
    /// with why; the items it left out are counted and digested below, so the entry does not
    /// grow with the rest of the run.
    #[serde(default)]
    pub context: Vec<super::ManifestEntry>,
    /// How many items the context left out.
    #[serde(default)]
    pub omitted_items: u64,
    /// The items left out (not relevant to the subagent, or over the budget), summed: for each,
    /// SHA-256 of `field NUL item` read as four big-endian 64-bit words, added
    /// word by word modulo 2^64, as 64 hex digits (`context::ItemSum`); empty when none were.
    /// Order-free, so it costs what the context kept, not what the run holds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub omitted_digest: String,
}

/// A helper model's call (the ledger model, the summary model): which model, under which
/// revision of its instructions, what it spent and how long it took. Its cost counts toward
/// the run's cost limit; its tokens are not a subagent's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelperCall {
    /// The model's name.
    pub model: String,
    /// The revision of its instructions (`ledger-1`, `narrative-1`).
    pub prompt_revision: String,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// What it cost, in millionths of a dollar (0 for a model with no known price).
    pub cost_micros: u64,
    /// From the call's start to its answer, in milliseconds.
    pub latency_ms: u64,
}

/// Something that happened in a run.
///
/// ```
/// let event: baton::RunEvent = baton::serde_json::from_str(
///     r#"{"kind": "approval_decided", "approval_id": "ap1", "decision": "granted", "by": "application"}"#,
/// ).unwrap();
/// assert_eq!(event.kind(), "approval_decided");
/// assert!(matches!(event, baton::RunEvent::ApprovalDecided { decision: baton::ApprovalDecision::Granted, .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEvent {
    /// The run began: the job and how it is run.
    RunStarted {
        /// The question.
        question: String,
        /// The explored root, absolute.
        root: String,
        /// The model's name.
        model: String,
        /// Subagents at once.
        agents: usize,
        /// Most subagents.
        max_subagents: usize,
        /// Per-subagent budget.
        budget: Budget,
        /// Repair turns allowed.
        repairs: u32,
        /// Shards asked for (none: one per agent, or one per MiB when that is more).
        #[serde(default)]
        shards: Option<usize>,
        /// The tools every subagent may call.
        tools: Vec<String>,
        /// Most waves of subagents (none: a log written before waves, read as the default).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_waves: Option<usize>,
        /// The task's kind, roles and subtasks, when it is not a plain exploration.
        #[serde(default, skip_serializing_if = "TaskSpec::is_plain")]
        task: TaskSpec,
    },
    /// The model playing a role, as configured now: logged when a run starts or resumes, and
    /// whenever it changes (a provider's fallback taken). No credentials.
    ModelConfigured {
        /// `subagents` (the run's model), `lead`, or the name of a role with a model of its
        /// own.
        role: String,
        /// Provider, model, base URL, context window, price, fallbacks in force.
        #[serde(flatten)]
        config: crate::model::ModelConfig,
    },
    /// The lead's own model took a turn: planning the subtasks (`plan`) or writing the run's
    /// handoff (`report`).
    LeadTurn {
        /// `plan` or `report`.
        purpose: String,
        /// What its calls spent.
        spent: Spent,
        /// `accepted`, or why its answer was not used.
        outcome: String,
        /// The run's handoff it wrote, when accepted (a `report` turn): what the report's
        /// settled conclusions are.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handoff: Option<crate::handoff::Handoff>,
    },
    /// A constraint binds the run from now on.
    ConstraintStated {
        /// Verbatim.
        text: String,
        /// Normalised form.
        normalised: String,
        /// Where it came from.
        provenance: String,
        /// Its typed rules, which the gate enforces (none: a standing condition only).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rules: Vec<crate::policy::Rule>,
        /// Its clauses no rule covers: carried verbatim, not enforced.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        untyped: Vec<String>,
        /// What the run said of it at the start (a place the tree does not hold, a place
        /// respelled as the tree spells it, a clause carried but not enforced).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// The plan was made or changed.
    PlanRevised {
        /// The subagents planned.
        subagents: Vec<PlannedSubagent>,
        /// Why.
        reason: String,
        /// Directories the plan could not cover (an ignore file there could not be read).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<String>,
        /// How many entries of the tree the plan's walk left out — hidden ones, ignored ones,
        /// links, names no citation could write — counting each top-most one once: no shard
        /// holds them, so no search covers them.
        #[serde(default, skip_serializing_if = "is_zero")]
        not_searched: usize,
        /// The first twenty of them, root-relative.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        not_searched_names: Vec<String>,
    },
    /// A subagent was spawned (again, after a resume).
    SubagentSpawned {
        /// Its id.
        subagent: String,
        /// Its role.
        role: RoleId,
        /// Its shard.
        scope: Vec<String>,
        /// What it was given.
        manifest: Manifest,
    },
    /// A subagent's model answered a turn: what the subagent has spent so far (its totals,
    /// exact at its end in `budget_spent`), and why the model stopped.
    ModelReturned {
        /// The subagent.
        subagent: String,
        /// Its totals after this turn.
        spent: Spent,
        /// Why the model stopped: `end`, `tool_use`, `max_tokens` or `refusal`.
        stop: crate::model::StopReason,
    },
    /// A tool call started; its effect is executing.
    ToolCalled {
        /// The subagent.
        subagent: String,
        /// The call's id (`sa1.3`), also the effect's intent id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
        /// The effect's state now.
        effect: EffectState,
        /// Whether the tool declares it only reads (so it may be run again); a tool that does
        /// not say so is taken to have effects.
        #[serde(default)]
        read_only: bool,
        /// A call with effects: its intent — SHA-256 of the tool's name, a newline and its
        /// arguments' JSON (keys sorted), as the model wrote them (before the log scrubs
        /// secrets from them).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        intent: String,
    },
    /// A tool call returned; what it showed.
    ToolReturned {
        /// The subagent.
        subagent: String,
        /// The call.
        call_id: String,
        /// Whether it failed.
        is_error: bool,
        /// SHA-256 of its output.
        content_digest: String,
        /// What it showed.
        observations: Vec<Observation>,
        /// The effect's state now.
        effect: EffectState,
    },
    /// The policy gate refused a tool call: it did not run (its `tool_returned` follows, an
    /// error). Logged before that return.
    ToolDenied {
        /// The subagent.
        subagent: String,
        /// The call.
        call_id: String,
        /// The refusal: the tool, the consequence, the constraint, its category.
        #[serde(flatten)]
        denial: crate::policy::Denial,
    },
    /// A tool call waits for the application's approval (its effect is awaiting_approval):
    /// the exact object, why, and until when.
    ApprovalRequested {
        /// The request.
        #[serde(flatten)]
        request: crate::policy::ApprovalRequest,
    },
    /// A request for approval was decided: granted, denied, expired or withdrawn.
    ApprovalDecided {
        /// The request.
        approval_id: String,
        /// The decision.
        #[serde(flatten)]
        decision: crate::policy::ApprovalDecision,
        /// Who decided: `application` (through the run's handle), `approver` (the builder's),
        /// or `run` (an expiry, a withdrawal).
        by: String,
    },
    /// A granted approval let one call run: it is used up.
    ApprovalConsumed {
        /// The request.
        approval_id: String,
        /// The subagent.
        subagent: String,
        /// The call it let run.
        call_id: String,
    },
    /// An effect changed state outside a call (recovery, reconciliation).
    EffectChanged {
        /// The effect (a call id).
        call_id: String,
        /// From.
        from: EffectState,
        /// To.
        to: EffectState,
        /// The observation behind it, if any.
        evidence: Option<String>,
        /// Why.
        note: String,
    },
    /// A handoff passed the contract.
    HandoffAccepted {
        /// The subagent.
        subagent: String,
        /// The handoff.
        handoff: Handoff,
        /// Repair turns it took.
        repairs: u32,
        /// SHA-256 of each cited file range's text, by source id.
        evidence_digests: BTreeMap<String, String>,
        /// Conclusions taken out because they alone broke the contract once the repairs were
        /// spent: never settled.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        dropped: Vec<crate::handoff::Dropped>,
    },
    /// A handoff broke the contract and went back for repair.
    HandoffRepairRequested {
        /// The subagent.
        subagent: String,
        /// The violations quoted back.
        violations: Vec<Violation>,
    },
    /// A handoff still broke the contract when the repairs ran out (`contract_unmet`).
    HandoffRejected {
        /// The subagent.
        subagent: String,
        /// Its violations.
        violations: Vec<Violation>,
        /// What it claimed: unverified leads at most.
        unverified: Handoff,
    },
    /// What a subagent spent, exactly.
    BudgetSpent {
        /// The subagent.
        subagent: String,
        /// Totals.
        spent: Spent,
    },
    /// A subagent ended.
    SubagentEnded {
        /// The subagent.
        subagent: String,
        /// How.
        state: SubagentState,
        /// Why, when not accepted.
        error: Option<String>,
    },
    /// A subagent's window was compacted (or compaction was refused: the window unchanged).
    WindowCompacted {
        /// The subagent.
        subagent: String,
        /// `compact`, `split` or `refuse`.
        decision: crate::compaction::Decision,
        /// Tokens before.
        tokens_before: u64,
        /// Tokens after.
        tokens_after: u64,
        /// Tokens freed by clearing tool results.
        cleared_tokens: u64,
        /// The pinned items carried verbatim.
        pinned: Vec<String>,
        /// Those of them that are constraints (which never retire): every later compaction of
        /// the subagent must carry them (`baton audit` checks it).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        constraints: Vec<String>,
        /// The pins a later turn settled since the subagent's previous compaction: every other
        /// pin that compaction carried must be carried again (`baton audit` checks it).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        retired: Vec<String>,
        /// Why, when refused.
        reason: Option<String>,
        /// The raw turns folded into summaries (bounded, with the digest of the whole), when
        /// any were: the summaries' markers point here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        folded: Option<crate::compaction::Folded>,
    },
    /// The ledger model classified a turn the rule pass flagged: what it added (a pin only
    /// when its text is a verbatim part of the turn), what was discarded, or why it failed
    /// (the rule pass's pins stand either way).
    LedgerClassified {
        /// The subagent.
        subagent: String,
        /// The turn (its arrival number in the window).
        turn: u64,
        /// Pins it added.
        accepted: u64,
        /// Items discarded: not binding, not verbatim, or a class the turn cannot carry.
        discarded: u64,
        /// Why its answer was not taken at all (a model error, an answer that is not JSON).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The call.
        #[serde(flatten)]
        call: HelperCall,
    },
    /// The summary model wrote a narrative of one summary; it was promoted into the window
    /// only when it passed the checks against the summary's skeleton.
    SummaryNarrated {
        /// The subagent.
        subagent: String,
        /// The messages the summary folded (`first..=last`, as its marker says).
        messages: String,
        /// The digest of the folded span's raw text (the `window_compacted` event's
        /// `folded.digest`).
        folded_digest: String,
        /// Whether it replaced the template in the window.
        promoted: bool,
        /// Why it was not promoted, one line each (empty when promoted).
        problems: Vec<String>,
        /// The call.
        #[serde(flatten)]
        call: HelperCall,
    },
    /// A source was withdrawn (`baton forget`): its text leaves every later context, brief
    /// and report; its tombstone stays. Earlier events are not rewritten.
    SourceForgotten {
        /// What stays of it.
        #[serde(flatten)]
        tombstone: super::forget::Tombstone,
    },
    /// The run is a fork: its events before this one are its parent's up to `at_seq`, as they
    /// were; from here on it goes its own way (on `question`, when given, instead of its
    /// parent's).
    RunForked {
        /// The run forked.
        parent: String,
        /// The parent's last event shared.
        at_seq: u64,
        /// That event's digest in the parent's log.
        parent_digest: String,
        /// The question the fork pursues, when not its parent's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        question: Option<String>,
    },
    /// The run is a merge of two branches: what they agreed on follows, each conflict an open
    /// item naming both.
    RunMerged {
        /// The branches, each with its last event and that event's digest.
        branches: Vec<super::branch::MergedBranch>,
        /// The conflicts found, one line each.
        conflicts: Vec<String>,
    },
    /// The run was resumed after the event `after_seq`.
    RunResumed {
        /// The last event before the resume.
        after_seq: u64,
    },
    /// On resume, cited text had changed since a handoff was accepted: the conclusions
    /// resting on it are no longer settled (they are open items, marked stale).
    EvidenceStale {
        /// The subagent whose handoff cited it.
        subagent: String,
        /// The sources whose text changed (or can no longer be read).
        sources: Vec<String>,
        /// The claims moved to open items.
        claims: Vec<String>,
    },
    /// The run ended.
    RunFinished {
        /// Whether it was cancelled.
        cancelled: bool,
    },
}

impl RunEvent {
    /// The event's kind as written in the log (`run_started`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            RunEvent::RunStarted { .. } => "run_started",
            RunEvent::ModelConfigured { .. } => "model_configured",
            RunEvent::LeadTurn { .. } => "lead_turn",
            RunEvent::ConstraintStated { .. } => "constraint_stated",
            RunEvent::PlanRevised { .. } => "plan_revised",
            RunEvent::SubagentSpawned { .. } => "subagent_spawned",
            RunEvent::ModelReturned { .. } => "model_returned",
            RunEvent::ToolCalled { .. } => "tool_called",
            RunEvent::ToolReturned { .. } => "tool_returned",
            RunEvent::ToolDenied { .. } => "tool_denied",
            RunEvent::ApprovalRequested { .. } => "approval_requested",
            RunEvent::ApprovalDecided { .. } => "approval_decided",
            RunEvent::ApprovalConsumed { .. } => "approval_consumed",
            RunEvent::EffectChanged { .. } => "effect_changed",
            RunEvent::HandoffAccepted { .. } => "handoff_accepted",
            RunEvent::HandoffRepairRequested { .. } => "handoff_repair_requested",
            RunEvent::HandoffRejected { .. } => "handoff_rejected",
            RunEvent::BudgetSpent { .. } => "budget_spent",
            RunEvent::SubagentEnded { .. } => "subagent_ended",
            RunEvent::WindowCompacted { .. } => "window_compacted",
            RunEvent::LedgerClassified { .. } => "ledger_classified",
            RunEvent::SummaryNarrated { .. } => "summary_narrated",
            RunEvent::SourceForgotten { .. } => "source_forgotten",
            RunEvent::RunForked { .. } => "run_forked",
            RunEvent::RunMerged { .. } => "run_merged",
            RunEvent::RunResumed { .. } => "run_resumed",
            RunEvent::EvidenceStale { .. } => "evidence_stale",
            RunEvent::RunFinished { .. } => "run_finished",
        }
    }

    /// The subagent the event is about, when it names one.
    pub fn subagent(&self) -> Option<&str> {
        match self {
            RunEvent::SubagentSpawned { subagent, .. }
            | RunEvent::ModelReturned { subagent, .. }
            | RunEvent::ToolCalled { subagent, .. }
            | RunEvent::ToolReturned { subagent, .. }
            | RunEvent::ToolDenied { subagent, .. }
            | RunEvent::HandoffAccepted { subagent, .. }
            | RunEvent::HandoffRepairRequested { subagent, .. }
            | RunEvent::HandoffRejected { subagent, .. }
            | RunEvent::BudgetSpent { subagent, .. }
            | RunEvent::SubagentEnded { subagent, .. }
            | RunEvent::WindowCompacted { subagent, .. }
            | RunEvent::LedgerClassified { subagent, .. }
            | RunEvent::SummaryNarrated { subagent, .. }
            | RunEvent::ApprovalConsumed { subagent, .. }
            | RunEvent::EvidenceStale { subagent, .. } => Some(subagent),
            RunEvent::ApprovalRequested { request } => Some(&request.subagent),
            _ => None,
        }
    }
}

/// An event as stored: its run, sequence number (from 1), time, and its digest chained to the
/// previous event's.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use baton::EventStore;
/// let store = baton::testing::MemoryStore::new();
/// let event = baton::RunEvent::RunFinished { cancelled: true };
/// store.append("r1", vec![(1, event.clone())]).await.unwrap().unwrap();
/// let logged = &store.events("r1").unwrap()[0];
/// assert_eq!((logged.run_id.as_str(), logged.seq, &logged.event), ("r1", 1, &event));
/// assert_eq!(logged.digest.len(), 64, "a SHA-256, chained to the event before");
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedEvent {
    /// The run.
    pub run_id: String,
    /// 1-based, gapless within the run.
    pub seq: u64,
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What happened.
    pub event: RunEvent,
    /// The previous event's digest (empty for the first).
    pub prev: String,
    /// SHA-256 over prev, run, seq, time and the event's JSON.
    pub digest: String,
}

/// The digest of one event given its predecessor's.
pub(crate) fn chain_digest(
    prev: &str,
    run_id: &str,
    seq: u64,
    at_ms: u64,
    payload: &str,
) -> String {
    let mut text = String::with_capacity(prev.len() + run_id.len() + payload.len() + 48);
    text.push_str(prev);
    text.push('\n');
    text.push_str(run_id);
    text.push('\n');
    text.push_str(&seq.to_string());
    text.push('\n');
    text.push_str(&at_ms.to_string());
    text.push('\n');
    text.push_str(payload);
    sha256_hex(text.as_bytes())
}

/// A `run_started` for unit tests: question `q`, root `/r`, grep only.
#[cfg(test)]
pub(crate) fn run_started_fixture() -> RunEvent {
    RunEvent::RunStarted {
        question: "q".into(),
        root: "/r".into(),
        model: "m".into(),
        agents: 1,
        max_subagents: 2,
        budget: crate::policy::Budget::default(),
        repairs: 2,
        shards: None,
        tools: vec!["grep".into()],
        max_waves: None,
        task: TaskSpec::default(),
    }
}
