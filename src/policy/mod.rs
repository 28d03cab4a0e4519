//! Policy: typed constraints and the gate every tool call passes (`policy::rules`,
//! `policy::english`, `policy::gate`); budgets — the limits one subagent works within, what it has spent, and
//! the pure decision of whether it may go on.

mod approval;
mod english;
mod gate;
mod rules;

use serde::{Deserialize, Serialize};

pub(crate) use approval::{approval_reason, intent_digest, UnknownOutcomes};
pub use approval::{Approval, ApprovalDecision, ApprovalError, ApprovalRequest, Approver};
pub use english::parse as parse_constraint;
pub(crate) use english::{named, typed_form};
pub use gate::{normal_path, Category, Consequence, Denial, Effect, Policy};
pub use rules::{from_json as rules_from_json, Rule, RuleError, Typed};

/// How many times one subagent may be denied the same consequence: at this count it is
/// ended, the denial its reason.
pub const DENIALS_BEFORE_STOP: u32 = 3;

/// Whether a consequence denied `count` times to one subagent ends it.
pub fn denied_too_often(count: u32) -> bool {
    count >= DENIALS_BEFORE_STOP
}

/// Per-subagent limits.
/// ```
/// let budget = baton::Budget { model_turns: 20, ..baton::Budget::default() };
/// let _coordinator = baton::Coordinator::builder().budget(budget).build();
/// assert!(budget.tool_calls > 0 && budget.tokens > 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Most model turns (calls).
    pub model_turns: u32,
    /// Most tool calls.
    pub tool_calls: u32,
    /// Most tokens, input plus output, over all turns.
    pub tokens: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            model_turns: 12,
            tool_calls: 60,
            tokens: 400_000,
        }
    }
}

/// How long one call may take: a model call past its limit is a failed call; a tool call past
/// its limit is a tool error the model sees (its effect unknown); a request for approval not
/// decided within its limit expires (the call does not run).
/// ```
/// let limits = baton::TimeLimits::default();
/// assert_eq!(limits.approval, std::time::Duration::from_secs(15 * 60));
/// let quick = baton::TimeLimits { tool_call: std::time::Duration::from_secs(5), ..limits };
/// let _coordinator = baton::Coordinator::builder().time_limits(quick).build();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeLimits {
    /// Most time for one model call.
    pub model_call: std::time::Duration,
    /// Most time for one tool call.
    pub tool_call: std::time::Duration,
    /// How long a request for the application's approval stands before it expires.
    pub approval: std::time::Duration,
}

impl Default for TimeLimits {
    fn default() -> TimeLimits {
        TimeLimits {
            model_call: std::time::Duration::from_secs(600),
            tool_call: std::time::Duration::from_secs(120),
            approval: std::time::Duration::from_secs(900),
        }
    }
}

/// What one subagent has spent so far.
/// ```
/// let spent = baton::Spent { model_turns: 2, tool_calls: 3, ..Default::default() };
/// assert_eq!(spent.tokens_in + spent.tokens_out, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spent {
    /// Model turns taken.
    pub model_turns: u32,
    /// Tool calls run.
    pub tool_calls: u32,
    /// Input tokens.
    pub tokens_in: u64,
    /// Output tokens.
    pub tokens_out: u64,
    /// Of the input tokens, those read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of the input tokens, those written to the provider's prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// What its model calls cost, in millionths of a US dollar (0 when the price is unknown).
    #[serde(default)]
    pub cost_micros: u64,
}

impl Spent {
    /// Input plus output tokens.
    pub fn tokens(&self) -> u64 {
        self.tokens_in.saturating_add(self.tokens_out)
    }
}

impl Budget {
    /// The limit that is used up, if any: a subagent at a limit may take no further step of
    /// that kind.
    pub fn exhausted(&self, spent: &Spent) -> Option<String> {
        if spent.model_turns >= self.model_turns {
            Some(format!("{} model turns", self.model_turns))
        } else if spent.tokens() >= self.tokens {
            Some(format!("{} tokens", self.tokens))
        } else if spent.tool_calls >= self.tool_calls {
            Some(format!("{} tool calls", self.tool_calls))
        } else {
            None
        }
    }

    /// How many more tool calls may run.
    pub fn tool_calls_left(&self, spent: &Spent) -> u32 {
        self.tool_calls.saturating_sub(spent.tool_calls)
    }
}

/// A constraint in force, verbatim, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConstraintEntry {
    /// Verbatim.
    pub text: String,
    /// Normalised.
    pub normalised: String,
    /// Where it came from.
    pub provenance: String,
    /// Its typed rules, which the gate enforces (none: a standing condition only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    /// Its clauses no rule covers: carried verbatim, not enforced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untyped: Vec<String>,
    /// What the run said of it at the start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The event that stated it.
    pub event: u64,
}

impl ConstraintEntry {
    /// Whether the gate enforces it: no rule enforced, every rule wholly enforced and no clause
    /// left untyped, or some of it.
    pub fn enforcement(&self) -> Enforcement {
        let enforced = self.rules.iter().filter(|r| r.enforced()).count();
        if enforced == 0 {
            Enforcement::NotEnforced
        } else if self.rules.iter().all(|r| r.wholly_enforced()) && self.untyped.is_empty() {
            Enforcement::Enforced
        } else {
            Enforcement::Partly
        }
    }
}

/// Whether the gate enforces a constraint.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let report = baton::Coordinator::builder()
///     .constraint("Never use grep.")
///     .build()
///     .run(baton::Task::explore("where is next_delay?", dir.path()))
///     .await
///     .unwrap();
/// assert!(report.constraints.iter().all(|c| c.enforcement == baton::Enforcement::Enforced));
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// Every clause is typed, and the gate or the budget enforces it.
    Enforced,
    /// Some clauses are typed and enforced; the others are standing conditions.
    Partly,
    /// Nothing of it could be typed: a standing condition, carried verbatim but not enforced.
    NotEnforced,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults the README gives: 12 model turns, 60 tool calls and 400,000 tokens a
    /// subagent; 600 s a model call, 120 s a tool call.
    #[test]
    fn the_defaults_are_the_documented_ones() {
        let b = Budget::default();
        assert_eq!((b.model_turns, b.tool_calls, b.tokens), (12, 60, 400_000));
        let t = TimeLimits::default();
        assert_eq!(t.model_call, std::time::Duration::from_secs(600));
        assert_eq!(t.tool_call, std::time::Duration::from_secs(120));
    }

    #[test]
    fn each_limit_is_enforced() {
        let budget = Budget {
            model_turns: 2,
            tool_calls: 3,
            tokens: 100,
        };
        let mut spent = Spent::default();
        assert_eq!(budget.exhausted(&spent), None);
        spent.tool_calls = 3;
        assert!(budget.exhausted(&spent).unwrap().contains("tool calls"));
        spent.tokens_in = 100;
        assert!(budget.exhausted(&spent).unwrap().contains("tokens"));
        spent.model_turns = 2;
        assert!(budget.exhausted(&spent).unwrap().contains("turns"));
        assert_eq!(budget.tool_calls_left(&spent), 0);
    }
}
