//! The parts of the lead's state, each holding what one decision needs: planning and spawning
//! (`Fleet`), the run's log (`Journal`), compiling contexts (`Contexts`), the lead model's
//! work (`LeadWork`), and who hears of the run (`Outside`). `LeadState` (state.rs) holds one
//! of each; the decisions are its methods, in the file of the decision.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use ractor::{ActorId, ActorRef, RpcReplyPort};
use tokio::sync::mpsc::Sender;

use super::plan::Shard;
use super::{journal, leader, merge};
use crate::checkpoint::{LoggedEvent, Projector, StoreError};
use crate::context::ContextIndex;
use crate::handoff::{Handoff, Violation, WorkspaceFiles};
use crate::policy::Spent;
use crate::report::{Report, SubagentSummary};
use crate::source::ObservationLog;
use crate::subagent::SubagentMsg;
use crate::tokens::{Bpe, CachedTokenizer};

/// One subagent of the run, from planned to ended.
pub(super) struct SubagentRecord {
    pub(super) summary: SubagentSummary,
    pub(super) shard: Shard,
    pub(super) actor: Option<ActorRef<SubagentMsg>>,
    pub(super) handoff: Option<Handoff>,
    /// The searches it ran, for the merge: all a finished subagent keeps of its observation
    /// log.
    pub(super) searches: Vec<merge::Search>,
    /// Its whole observation log, kept only while the lead's model is to write the report
    /// (its handoff is checked against what the subagents observed).
    pub(super) observations: Option<ObservationLog>,
    pub(super) spent: Spent,
    /// Violations quoted back in a repair turn not yet answered.
    pub(super) pending: Option<Vec<Violation>>,
    /// What a rejected handoff said: unverified leads at most.
    pub(super) unverified: Option<Handoff>,
    /// Conclusions taken out of an accepted handoff: they alone broke the contract.
    pub(super) dropped: Vec<crate::handoff::Dropped>,
}

impl SubagentRecord {
    /// Whether the lead doubts its findings until a verifier rereads them: its handoff passed
    /// only after a repair (or lost conclusions), or rests on corpus passages.
    pub(super) fn doubted(&self) -> bool {
        use crate::report::SubagentState;
        self.shard.role != crate::contracts::RoleId::VERIFIER
            && (matches!(
                self.summary.state,
                SubagentState::Repaired | SubagentState::PartlyAccepted
            ) || self
                .handoff
                .as_ref()
                .is_some_and(Handoff::rests_on_passages))
    }
}

/// Who hears of the run.
pub(super) struct Outside {
    /// Where the report goes, once asked for.
    pub(super) reply: Option<RpcReplyPort<Result<Report, StoreError>>>,
    pub(super) started: Instant,
    /// The run's span: every message is handled in it; each subagent's span is its child.
    pub(super) span: tracing::Span,
}

/// Planning and spawning: the run's subagents, who waits for a slot, what the plan covers.
#[derive(Default)]
pub(super) struct Fleet {
    pub(super) records: Vec<SubagentRecord>,
    /// Records waiting for a slot, in order.
    pub(super) queue: VecDeque<usize>,
    pub(super) by_actor: HashMap<ActorId, usize>,
    /// Each record's index by subagent id.
    pub(super) by_id: HashMap<String, usize>,
    /// Set once the plan is in.
    pub(super) planned: bool,
    pub(super) planning_error: Option<String>,
    /// The waves planned so far, in order (the first plan is wave 1).
    pub(super) waves: Vec<super::waves::WavePlan>,
    /// Each wave's subagents by id (a verifier is in none).
    pub(super) wave_of: HashMap<String, u32>,
    /// Why no further wave was planned, once that is decided.
    pub(super) stopped_because: Option<String>,
    /// Set once the second wave was considered.
    pub(super) second_wave_planned: bool,
    /// Set when a verifier was due but could not be spawned: why.
    pub(super) verifier_skipped: Option<String>,
    /// Directories the plan could not cover (logged with the plan, restored on resume).
    pub(super) left_out: Vec<String>,
    /// What the plan's walk left out of the tree (hidden and ignored entries, links): how
    /// many, and the first twenty (logged with the plan, restored on resume).
    pub(super) not_searched: (usize, Vec<String>),
}

/// The run's log: what is appended, what is acknowledged, when to checkpoint.
pub(super) struct Journal {
    /// Where each append's acknowledgement goes to be checked (none: the run is not logged):
    /// bounded, so the lead gets no further ahead of the watcher than it holds.
    pub(super) acks: Option<Sender<journal::Logged>>,
    /// Where the watcher publishes the durable events to the run's readers: the lead waits
    /// while one of them is too far behind.
    pub(super) feed: Option<Arc<crate::checkpoint::Feed>>,
    /// Acknowledgements and checkpoints handed over while a message is handled, sent
    /// (awaited) once it is.
    pub(super) pending: Vec<journal::Logged>,
    /// When the last checkpoint was taken (they are taken at most once a second — less often
    /// as they take longer to store, never while one is on its way — and at the end).
    pub(super) checkpointed: Option<Instant>,
    /// Whether a checkpoint is on its way to the store, and how long the last took.
    pub(super) pace: Arc<journal::CheckpointPace>,
    /// The watcher of the acknowledgements: the first failure, once every one has come.
    pub(super) acked: Option<tokio::task::JoinHandle<Result<(), StoreError>>>,
    /// Set when the run's log could not be written: the run stops and reports this instead.
    pub(super) log_failed: Option<StoreError>,
    pub(super) next_seq: u64,
    /// On a resumed run: the effect changes logged since the resume (each restarted subagent's
    /// delta).
    pub(super) since_resume: Vec<LoggedEvent>,
    /// Set on a resumed run: the last event before the resume.
    pub(super) resumed_after: Option<u64>,
}

/// What subagents' contexts are compiled from.
pub(super) struct Contexts {
    /// The workspace's files, read once per run for checking citations.
    pub(super) files: Arc<WorkspaceFiles>,
    /// The run's checkpoint, every event applied once as it is logged (from the log, on
    /// resume), for compiling contexts.
    pub(super) projector: Projector,
    /// The index contexts are selected through, synced with the projector before each spawn.
    pub(super) index: ContextIndex,
    /// Counts tokens for contexts, caching per block.
    pub(super) tokenizer: Arc<CachedTokenizer<Bpe>>,
    /// The question's content words, which every subagent's context is selected by.
    pub(super) question_terms: Vec<String>,
    /// The question without its binding sentences (they are constraints, not search terms):
    /// what briefs ask and contexts are selected by.
    pub(super) search_question: String,
}

/// The lead model's work.
#[derive(Default)]
pub(super) struct LeadWork {
    /// The lead model's turns (`plan`, `report`), in order.
    pub(super) lead_turns: Vec<(String, leader::LeadTurn)>,
    /// Set while the lead model writes the run's handoff.
    pub(super) synthesising: bool,
    /// Set while the lead model plans a wave's follow-ups.
    pub(super) following: bool,
    /// On a resume: the lead model the log names (its turns count in the report's usage
    /// even when this process has none).
    pub(super) earlier_lead: Option<String>,
    /// The lead model's work in flight (planning, a wave's follow-ups, or writing the
    /// handoff): aborted on cancel.
    pub(super) lead_task: Option<tokio::task::JoinHandle<()>>,
    /// The lead model's handoff, or why it was not used.
    pub(super) synthesis: Option<Result<Handoff, String>>,
}
