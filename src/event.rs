//! The event stream a run emits while it works: plain serialisable data, in the past tense.

use serde::{Deserialize, Serialize};

use crate::contracts::RoleId;
use crate::report::SubagentState;

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The lead planned the run.
    RunPlanned {
        /// The run's id.
        run_id: String,
        /// How many subagents the plan has.
        subagents: usize,
    },
    /// A subagent was spawned for a scope.
    SubagentSpawned {
        /// Subagent id, e.g. `sa1`.
        id: String,
        /// Its role.
        role: RoleId,
        /// Its shard of the tree.
        scope: String,
    },
    /// A subagent made progress.
    SubagentProgressed {
        /// Subagent id.
        id: String,
        /// Tool calls so far.
        tool_calls: u32,
        /// Tokens so far.
        tokens: u64,
        /// What its model calls cost so far, in US dollars (none: the price is unknown).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The lead checked a subagent's handoff against the contract.
    HandoffChecked {
        /// Subagent id.
        id: String,
        /// Violations found (0: accepted).
        violations: usize,
        /// Repair turns it had before this handoff.
        repairs: u32,
    },
    /// A subagent ended.
    SubagentEnded {
        /// Subagent id.
        id: String,
        /// How it ended.
        state: SubagentState,
        /// Tool calls it made.
        tool_calls: u32,
        /// Tokens it used.
        tokens: u64,
        /// What its model calls cost, in US dollars (none: the price is unknown).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
}
