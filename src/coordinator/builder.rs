//! The coordinator's builder: every setting a run works within — models, tools, roles, policy,
//! limits, the store, time limits, approvals — set once, checked when a run starts.

use std::path::PathBuf;
use std::sync::Arc;

use super::{micros, shared, Connector, Coordinator};
use crate::checkpoint::EventStore;
use crate::context::Role;
use crate::model::Model;
use crate::policy::{Approver, Budget, Rule, TimeLimits};
use crate::tools::{Tool, ToolRegistry};

/// Builds a [`Coordinator`]: start from [`Coordinator::builder`], set what differs from the
/// defaults, then [`CoordinatorBuilder::build`].
///
/// ```
/// use std::sync::Arc;
/// use baton::{Budget, Coordinator, Role};
///
/// let coordinator = Coordinator::builder()
///     .model(Arc::new(baton::OfflineModel::new()))
///     .agents(2)
///     .max_subagents(8)
///     .budget(Budget { model_turns: 8, tool_calls: 40, tokens: 200_000 })
///     .constraint("never read files under vendor/")
///     .role(Role::new("reviewer").tools(["grep", "read_file"]))
///     .store(Arc::new(baton::testing::MemoryStore::new()))
///     .build();
/// # let _ = coordinator;
/// ```
#[derive(Clone, Debug, Default)]
pub struct CoordinatorBuilder {
    inner: Coordinator,
}

impl CoordinatorBuilder {
    pub(super) fn new() -> CoordinatorBuilder {
        CoordinatorBuilder::default()
    }

    /// The coordinator.
    pub fn build(self) -> Coordinator {
        self.inner
    }

    /// The model every subagent uses (a role with a model of its own aside). Default: the
    /// offline explorer.
    pub fn model(mut self, model: Arc<dyn Model>) -> CoordinatorBuilder {
        self.inner.model = model;
        self
    }

    /// The lead's own model: it proposes the subtasks as a JSON plan (`contracts/plan.schema.json`)
    /// — assigning each a role the run has — and writes the run's handoff from the accepted
    /// handoffs, checked by the same contract against what the subagents observed. Without
    /// one, the lead plans by sharding the tree (and one subtask per other role) and merges
    /// the handoffs itself, deterministically.
    pub fn lead_model(mut self, model: Arc<dyn Model>) -> CoordinatorBuilder {
        self.inner.lead_model = Some(model);
        self
    }

    /// The tools subagents may call (each role is offered those of them its profile names).
    /// Default: the workspace tools list_dir, glob, grep and read_file.
    pub fn tools(mut self, tools: ToolRegistry) -> CoordinatorBuilder {
        self.inner.tools = tools;
        self
    }

    /// One more tool, beside those given (replacing one of the same name): offered to the
    /// roles that name it.
    pub fn tool(mut self, tool: impl Tool + 'static) -> CoordinatorBuilder {
        self.inner.tools = self.inner.tools.with(shared(tool));
        self
    }

    /// A role its tasks may fan out (replacing a built-in or earlier one of its name).
    pub fn role(mut self, role: Role) -> CoordinatorBuilder {
        self.inner.roles.push(role);
        self
    }

    /// Role profiles from `dir` (`*.toml`) add to or replace the built-in ones (roles given
    /// in code replace those).
    pub fn roles(mut self, dir: impl Into<PathBuf>) -> CoordinatorBuilder {
        self.inner.role_dir = Some(dir.into());
        self
    }

    /// How a role's `model = "SPEC"` becomes a model. Default: [`crate::connect`] with the
    /// process's environment (keys, base URLs), the built-in prices and the default HTTP
    /// options.
    pub fn connector(mut self, connector: Connector) -> CoordinatorBuilder {
        self.inner.connector = Some(connector);
        self
    }

    /// How many subagents run at once. Default 4.
    pub fn agents(mut self, agents: usize) -> CoordinatorBuilder {
        self.inner.agents = agents;
        self
    }

    /// The most subagents one run may spawn. Default 32.
    pub fn max_subagents(mut self, max: usize) -> CoordinatorBuilder {
        self.inner.max_subagents = max;
        self
    }

    /// Each subagent's budget (a role's own limits aside).
    pub fn budget(mut self, budget: Budget) -> CoordinatorBuilder {
        self.inner.budget = budget;
        self
    }

    /// Repair turns a subagent gets when its handoff breaks the contract. Default 2.
    pub fn repairs(mut self, repairs: u32) -> CoordinatorBuilder {
        self.inner.repairs = repairs;
        self
    }

    /// Splits the tree into `shards` explorers (at most `max_subagents`, at most one per
    /// file) instead of one per agent and one more per MiB.
    pub fn shards(mut self, shards: usize) -> CoordinatorBuilder {
        self.inner.shards = Some(shards);
        self
    }

    /// A constraint the run must respect, verbatim (`--constraint`); binding sentences of the
    /// question (never, don't, always, only, must, from now on …) are added by themselves.
    ///
    /// The text is typed where it can be (`policy::parse_constraint`: "only read files under
    /// src/", "never touch /vendor", "no network access", "read-only" …) and the gate
    /// enforces its rules; what cannot be typed stays a standing condition, and the report
    /// says it is not enforced.
    pub fn constraint(mut self, text: impl Into<String>) -> CoordinatorBuilder {
        self.inner.constraints.push((text.into(), None));
        self
    }

    /// A typed constraint (`--constraint-json`): `text` is how it is shown (verbatim), the
    /// rules are what the gate enforces. A rule that says nothing, names a path leaving the
    /// root or names a tool the run does not have is refused when the run starts. An empty
    /// `text` is shown as the rules' JSON.
    pub fn constraint_rules(
        mut self,
        text: impl Into<String>,
        rules: Vec<Rule>,
    ) -> CoordinatorBuilder {
        let mut text = text.into();
        if text.trim().is_empty() {
            text = serde_json::to_string(&rules).unwrap_or_else(|_| "typed rules".into());
        }
        self.inner.constraints.push((text, Some(rules)));
        self
    }

    /// How long one model call and one tool call may take, and how long a request for
    /// approval stands (default: 600 s, 120 s and 900 s).
    pub fn time_limits(mut self, limits: TimeLimits) -> CoordinatorBuilder {
        self.inner.limits = limits;
        self
    }

    /// The most a run's model calls may cost, in US dollars: no call is sent whose estimate
    /// (its input at the model's price, and every answer token it may take) would pass it, and
    /// once a subagent's first call would, no more are spawned — the report says so in its open
    /// items. It needs the model's price ([`Model::price`]): with none, nothing is counted.
    pub fn max_cost(mut self, dollars: f64) -> CoordinatorBuilder {
        self.inner.max_cost = Some(micros(dollars));
        self
    }

    /// The most one subagent's model calls may cost, in US dollars: near it the subagent is
    /// asked to hand off, then stopped.
    pub fn subagent_max_cost(mut self, dollars: f64) -> CoordinatorBuilder {
        self.inner.subagent_max_cost = Some(micros(dollars));
        self
    }

    /// Carries a constraint that names a place, a tool or a budget but from which no rule
    /// could be read as a standing condition — not enforced, with a warning — instead of
    /// refusing the run (the default: such a constraint is a `RunError::BadSetting` saying
    /// the typed form to use).
    pub fn allow_unenforced(mut self, allow: bool) -> CoordinatorBuilder {
        self.inner.allow_unenforced = allow;
        self
    }

    /// Logs every run to `store` (an append-only, digest-chained event log) so it can be
    /// listed, briefed, resumed and replayed by another process. Without one, each run's log
    /// is kept in memory for as long as its handle lives (large fan-outs: give a
    /// [`crate::SqliteStore`]).
    pub fn store(mut self, store: Arc<dyn EventStore>) -> CoordinatorBuilder {
        self.inner.store = Some(store);
        self
    }

    /// Decides requests for approval as they come, in the application's place; without one
    /// they wait for [`crate::RunHandle::approve`] or [`crate::RunHandle::deny`] (or expire).
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> CoordinatorBuilder {
        self.inner.approver = Some(approver);
        self
    }
}
