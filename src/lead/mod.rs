//! The lead actor: plans a run (shards of the tree), spawns subagents linked to it with bounded
//! concurrency, supervises them, merges what they hand off, and replies with the report.
//!
//! # Guarantees
//! - The lead never blocks on a subagent: planning runs on a blocking thread and comes back as
//!   `Planned`; subagents report by message; a resume's log is projected and its evidence
//!   rechecked before the lead starts. It waits for the disk only when 8,192 appends are
//!   already queued for the writer (backpressure: it cannot get further ahead of what is
//!   durable), and for a reader of the run's events that fell [`crate::EVENTS_BUFFER`] behind
//!   (status waits with it; cancel does not: it releases the run from its readers).
//! - At most `agents` subagents run at once and at most `max_subagents` exist per run.
//! - A subagent that panics, errors or stops without a handoff is recorded as failed; the run
//!   still reports what the others handed off.
//! - Only a handoff that passed the contract is merged into the report.
//! - Every subagent's first context is compiled from the checkpoint for its role; its tools
//!   are its role profile's, never more.
//! - The verifier's check (a verifier over the conclusions of repaired handoffs) is planned at most
//!   once, after the last wave's explorers have ended, and never after `Cancel`.
//! - After `Cancel`, no subagent is spawned; running ones are stopped and recorded as
//!   cancelled; the report holds what was handed off before.

mod absence;
mod actor;
mod approvals;
mod code_lines;
mod handle;
mod journal;
mod leader;
mod merge;
pub use merge::merge_handoffs;

/// Most waves a command-line run works in unless told otherwise: the first plan and one
/// round of follow-ups (a library run keeps to one unless its builder says more).
pub const DEFAULT_MAX_WAVES: usize = 2;
mod parts;
mod plan;
mod plan_check;
mod questions;
mod ranking;
mod relevance;
mod report;
mod reports;
mod research_follow;
mod resume;
mod resume_docs;
mod start;
mod state;
mod verdict;
mod wave_lead;
mod waves;

use std::collections::BTreeMap;
use std::sync::Arc;

use ractor::RpcReplyPort;

use crate::checkpoint::{RunLog, StoreError};
use crate::context::RoleProfile;
use crate::contracts::RoleId;
use crate::handoff::Parsed;
use crate::model::Model;
use crate::policy::Budget;
use crate::report::{Report, SubagentSummary};
use crate::subagent::SubagentReport;
use crate::tools::{ToolRegistry, Workspace};
pub(crate) use actor::LeadActor;
pub(crate) use approvals::Oversight;
pub(crate) use handle::{LeadError, LeadHandle};
pub(crate) use resume::{restore, Resumption};
use state::LeadState;

/// The least time between two checkpoints taken while a run goes on.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// A constraint as the user gave it: verbatim, where from, and its typed form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stated {
    pub(crate) text: String,
    pub(crate) provenance: String,
    pub(crate) rules: Vec<crate::policy::Rule>,
    pub(crate) untyped: Vec<String>,
    /// What the run says of it at the start: a place it names that the tree does not hold, a
    /// place respelled as the tree spells it, a clause carried but not enforced.
    pub(crate) warnings: Vec<String>,
}

/// Everything one run needs; built by the `Coordinator`.
#[derive(Clone)]
pub(crate) struct RunConfig {
    pub(crate) run_id: String,
    pub(crate) question: String,
    /// The tree explored (none: a job over the application's own tools).
    pub(crate) workspace: Option<Workspace>,
    /// A research run's document ids: a `doc:` citation of another is unknown.
    pub(crate) doc_ids: Option<Arc<std::collections::HashSet<String>>>,
    /// The task's kind, the roles it fans out and its subtasks.
    pub(crate) task: crate::checkpoint::TaskSpec,
    pub(crate) model: Arc<dyn Model>,
    /// The lead's own model (`--lead-model`): it plans the subtasks and writes the report from
    /// the accepted handoffs. None: the lead stays deterministic.
    pub(crate) lead_model: Option<Arc<dyn Model>>,
    /// The helper models of every subagent's window (`--ledger-model`, `--summary-model`).
    pub(crate) helpers: crate::subagent::HelperModels,
    pub(crate) tools: ToolRegistry,
    pub(crate) agents: usize,
    pub(crate) max_subagents: usize,
    /// Most waves: the first plan, then follow-ups planned from the checkpoint.
    pub(crate) max_waves: usize,
    pub(crate) budget: Budget,
    pub(crate) repairs: u32,
    /// Shards to split the tree into (none: one per agent, one more per MiB).
    pub(crate) shards: Option<usize>,
    /// Constraints given with the task, typed where they can be.
    pub(crate) constraints: Vec<Stated>,
    /// The role profiles subagents are compiled for (explorer, verifier, …).
    pub(crate) roles: BTreeMap<RoleId, RoleProfile>,
    /// The roles with a model of their own.
    pub(crate) role_models: BTreeMap<RoleId, Arc<dyn Model>>,
    /// Decides requests for approval as they come (none: the run's handle does).
    pub(crate) approver: Option<Arc<dyn crate::policy::Approver>>,
    /// What the run shares with its handle and its subagents: the requests for approval
    /// waiting, the intents whose outcome is unknown.
    pub(crate) oversight: Oversight,
    /// Where the run's events go (none: the run is not logged).
    pub(crate) log: Option<RunLog>,
    /// How long one model call and one tool call may take.
    pub(crate) limits: crate::policy::TimeLimits,
    /// The run's cost meter (with its limit, if any), shared by every subagent.
    pub(crate) cost: Arc<crate::model::CostMeter>,
    /// Most one subagent's model calls may cost, in millionths of a dollar.
    pub(crate) subagent_cost_cap: Option<u64>,
    /// This process's hold on the run, released when the lead stops.
    pub(crate) _claim: Option<Arc<crate::checkpoint::RunClaim>>,
}

impl RunConfig {
    /// What the run looked into, as logged and reported: the tree's root, a research run's
    /// corpus folder, or nothing for a job over the application's tools.
    pub(crate) fn shown_root(&self) -> String {
        match (&self.workspace, &self.task.corpus) {
            (Some(w), _) => w.root().display().to_string(),
            (None, Some(corpus)) => corpus.clone(),
            (None, None) => String::new(),
        }
    }
}

/// What the lead is told.
pub(crate) enum LeadMsg {
    /// Start the run; the report comes back on the port (an error when the run's log could
    /// not be written: no report is given as if it were logged).
    Run(RpcReplyPort<Result<Report, StoreError>>),
    /// An append to the run's log (or a checkpoint) failed: the run stops.
    LogFailed(StoreError),
    /// Planning finished.
    Planned(Result<report::Planned, String>),
    /// A subagent reported.
    Subagent { id: String, report: SubagentReport },
    /// A subagent's actor stopped (failed, with why). Its supervision event is turned into
    /// this message, so it is handled after every report the subagent sent before it.
    Stopped {
        actor: ractor::ActorId,
        failure: Option<String>,
    },
    /// A handoff was checked against the contract (off the actor).
    HandoffChecked {
        id: String,
        parsed: Parsed,
        digests: BTreeMap<String, String>,
    },
    /// The lead model wrote the run's handoff (or why it was not used).
    Synthesised {
        outcome: Result<crate::handoff::Handoff, String>,
        turn: leader::LeadTurn,
    },
    /// The lead model planned a wave's follow-ups (or the planner's stand, with why).
    WavePlanned {
        shards: Vec<plan::Shard>,
        turn: leader::LeadTurn,
        /// What the wave before it added.
        last_added: usize,
    },
    /// Stop spawning, stop the running subagents, report what was handed off.
    Cancel,
    /// A request for approval was settled outside the lead (by the run's handle or its
    /// approver): log it and tell its call.
    ApprovalSettled(String),
    /// A request for approval reached its expiry.
    ApprovalExpired(String),
    /// The subagents as they stand.
    Status(RpcReplyPort<Vec<SubagentSummary>>),
}

/// What the lead is spawned with.
pub(crate) struct LeadArgs {
    pub(crate) config: RunConfig,
    /// Where the run's durable events are published to its readers (none: the run is not
    /// logged, so it has no stream).
    pub(crate) feed: Option<Arc<crate::checkpoint::Feed>>,
    /// Set when resuming a run from its log.
    pub(crate) resume: Option<Resumption>,
}
