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
    /// ```
    /// let coordinator: baton::Coordinator = baton::Coordinator::builder().build();
    /// assert!(format!("{coordinator:?}").contains("model: \"offline\""));
    /// ```
    pub fn build(self) -> Coordinator {
        self.inner
    }

    /// The model every subagent uses (a role with a model of its own aside). Default: the
    /// offline explorer.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use baton::testing::{ScriptedModel, ScriptedTurn};
    /// let done = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";
    /// let report = baton::Coordinator::builder()
    ///     .model(Arc::new(ScriptedModel::new([ScriptedTurn::text(done)])))
    ///     .role(baton::Role::new("worker"))
    ///     .build()
    ///     .run(baton::Task::job("anything?").roles(["worker"]))
    ///     .await
    ///     .unwrap();
    /// assert_eq!(report.model, "scripted");
    /// # });
    /// ```
    pub fn model(mut self, model: Arc<dyn Model>) -> CoordinatorBuilder {
        self.inner.model = model;
        self
    }

    /// The lead's own model: it proposes the subtasks as a JSON plan (`contracts/plan.schema.json`)
    /// — assigning each one of the roles the task names — and writes the run's handoff from the accepted
    /// handoffs, checked by the same contract against what the subagents observed. Without
    /// one, the lead plans by sharding the tree (and one subtask per other role) and merges
    /// the handoffs itself, deterministically.
    /// ```
    /// use std::sync::Arc;
    /// let lead = Arc::new(baton::testing::ScriptedModel::new([]));
    /// let coordinator = baton::Coordinator::builder().lead_model(lead).build();
    /// assert!(format!("{coordinator:?}").contains("lead_model: Some(\"scripted\")"));
    /// ```
    pub fn lead_model(mut self, model: Arc<dyn Model>) -> CoordinatorBuilder {
        self.inner.lead_model = Some(model);
        self
    }

    /// A small model for the pinned ledger of every subagent's window: each turn the rule
    /// pass flags (a sentence that may bind and that no rule pinned) is sent to it off the
    /// subagent's path, and a pin it names is kept only when its text is a verbatim part of
    /// the turn. Its answers, costs and latencies are logged (`ledger_classified`); an error
    /// leaves the rule pass's pins standing. Default: none, the rule pass alone.
    /// ```
    /// use std::sync::Arc;
    /// let small = Arc::new(baton::testing::ScriptedModel::new([]));
    /// let coordinator = baton::Coordinator::builder().ledger_model(small).build();
    /// assert!(format!("{coordinator:?}").contains("ledger: Some(\"scripted\")"));
    /// ```
    pub fn ledger_model(mut self, model: Arc<dyn Model>) -> CoordinatorBuilder {
        self.inner.helpers.ledger = Some(model);
        self
    }

    /// A model that rewrites each compaction summary of a subagent's window as a narrative.
    /// Compaction still writes the summary from its template; the narrative replaces it only
    /// when it keeps the template's skeleton — every open item, hard constraint and
    /// irreducible fact verbatim, every effect state exactly — and states no outcome,
    /// closure or permission the template does not. Each narrative is logged
    /// (`summary_narrated`) with its model, prompt revision, folded range and why it was
    /// refused. Default: none, the templates.
    /// ```
    /// use std::sync::Arc;
    /// let writer = Arc::new(baton::testing::ScriptedModel::new([]));
    /// let coordinator = baton::Coordinator::builder().summary_model(writer).build();
    /// assert!(format!("{coordinator:?}").contains("summary: Some(\"scripted\")"));
    /// ```
    pub fn summary_model(mut self, model: Arc<dyn Model>) -> CoordinatorBuilder {
        self.inner.helpers.summary = Some(model);
        self
    }

    /// The tools subagents may call (each role is offered those of them its profile names).
    /// Default: the workspace tools list_dir, glob, grep and read_file.
    /// ```
    /// let only_reading = baton::ToolRegistry::workspace()
    ///     .only(&["grep".to_string(), "read_file".to_string()]);
    /// let coordinator = baton::Coordinator::builder().tools(only_reading).build();
    /// // The built-in explorer names list_dir and glob too: a task fanning it out is refused.
    /// let refused = coordinator.check(&baton::Task::explore("where?", ".")).unwrap_err();
    /// assert!(refused.to_string().contains("unknown tool `list_dir`"));
    /// ```
    pub fn tools(mut self, tools: ToolRegistry) -> CoordinatorBuilder {
        self.inner.tools = tools;
        self
    }

    /// One more tool, beside those given (replacing one of the same name): offered to the
    /// roles that name it.
    /// ```
    /// use baton::{async_trait, json, Role, Task, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Value};
    /// struct Clock;
    /// #[async_trait]
    /// impl Tool for Clock {
    ///     fn spec(&self) -> ToolSpec {
    ///         ToolSpec { name: "clock".into(), description: "The time.".into(),
    ///                    parameters: json!({"type": "object"}) }
    ///     }
    ///     async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
    ///         Ok(ToolOutput::new("noon"))
    ///     }
    /// }
    /// let coordinator = baton::Coordinator::builder()
    ///     .tool(Clock)
    ///     .role(Role::new("timekeeper").tools(["clock"]))
    ///     .build();
    /// assert!(coordinator.check(&Task::job("what time is it?").roles(["timekeeper"])).is_ok());
    /// ```
    pub fn tool(mut self, tool: impl Tool + 'static) -> CoordinatorBuilder {
        self.inner.tools = self.inner.tools.with(shared(tool));
        self
    }

    /// A role its tasks may fan out (replacing a built-in or earlier one of its name).
    /// ```
    /// use baton::{Role, Task};
    /// let coordinator = baton::Coordinator::builder()
    ///     .role(Role::new("reviewer").tools(["grep", "read_file"]))
    ///     .build();
    /// let task = Task::explore("where are keys read?", ".").roles(["explorer", "reviewer"]);
    /// assert!(coordinator.check(&task).is_ok());
    /// // A role the run does not have is refused before anything starts.
    /// assert!(coordinator.check(&Task::explore("q", ".").roles(["auditor"])).is_err());
    /// ```
    pub fn role(mut self, role: Role) -> CoordinatorBuilder {
        self.inner.roles.push(role);
        self
    }

    /// Role profiles from `dir` (`*.toml`) add to or replace the built-in ones (roles given
    /// in code replace those).
    /// ```
    /// let dir = std::env::temp_dir().join(format!("baton-roles-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("auditor.toml"), r#"
    /// name = "auditor"
    /// description = "Reads the tree for secrets."
    /// system = "You are an auditor."
    /// budget = 4000
    /// tools = ["grep", "read_file"]
    /// mandatory = ["goal", "constraints"]
    /// "#).unwrap();
    /// let coordinator = baton::Coordinator::builder().roles(&dir).build();
    /// assert!(coordinator.check(&baton::Task::explore("q", ".").roles(["auditor"])).is_ok());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn roles(mut self, dir: impl Into<PathBuf>) -> CoordinatorBuilder {
        self.inner.role_dir = Some(dir.into());
        self
    }

    /// How a role's `model = "SPEC"` becomes a model. Default: [`crate::connect`] with the
    /// process's environment (keys, base URLs), the built-in prices and the default HTTP
    /// options.
    /// ```
    /// use std::sync::Arc;
    /// // Every role's model spec is played by the offline explorer, whatever it names.
    /// let offline: baton::Connector = Arc::new(|_spec: &baton::model::ModelSpec| {
    ///     Ok(Arc::new(baton::OfflineModel::new()) as Arc<dyn baton::Model>)
    /// });
    /// let mut profile = baton::Role::new("reviewer").tools(["grep"]).profile().clone();
    /// profile.model = Some("anthropic:claude-haiku-4-5".into());
    /// let coordinator = baton::Coordinator::builder()
    ///     .connector(offline)
    ///     .role(baton::Role::from_profile(profile).unwrap())
    ///     .build();
    /// // No key is needed: the connector gives the model.
    /// assert!(coordinator.check(&baton::Task::explore("q", ".").roles(["reviewer"])).is_ok());
    /// ```
    pub fn connector(mut self, connector: Connector) -> CoordinatorBuilder {
        self.inner.connector = Some(connector);
        self
    }

    /// How many subagents run at once. Default 4.
    /// ```
    /// let coordinator = baton::Coordinator::builder().agents(16).build();
    /// assert!(format!("{coordinator:?}").contains("agents: 16"));
    /// ```
    pub fn agents(mut self, agents: usize) -> CoordinatorBuilder {
        self.inner.agents = agents;
        self
    }

    /// The most subagents one run may spawn. Default 32.
    /// ```
    /// let coordinator = baton::Coordinator::builder().max_subagents(1000).build();
    /// assert!(format!("{coordinator:?}").contains("max_subagents: 1000"));
    /// ```
    pub fn max_subagents(mut self, max: usize) -> CoordinatorBuilder {
        self.inner.max_subagents = max;
        self
    }

    /// Most waves a run works in (default 1: the plan alone; the command line's default is
    /// [`DEFAULT_MAX_WAVES`](crate::DEFAULT_MAX_WAVES)): the first plan, then follow-ups
    /// planned from the checkpoint after each wave ends.
    /// ```
    /// let coordinator = baton::Coordinator::builder().max_waves(1).build();
    /// assert!(format!("{coordinator:?}").contains("max_waves: 1"));
    /// ```
    pub fn max_waves(mut self, max: usize) -> CoordinatorBuilder {
        self.inner.max_waves = max;
        self
    }

    /// Each subagent's budget (a role's own limits aside).
    /// ```
    /// let budget = baton::Budget { model_turns: 4, tool_calls: 10, tokens: 50_000 };
    /// let coordinator = baton::Coordinator::builder().budget(budget).build();
    /// assert!(format!("{coordinator:?}").contains("model_turns: 4"));
    /// ```
    pub fn budget(mut self, budget: Budget) -> CoordinatorBuilder {
        self.inner.budget = budget;
        self
    }

    /// Repair turns a subagent gets when its handoff breaks the contract. Default 2.
    /// ```
    /// let coordinator = baton::Coordinator::builder().repairs(0).build();
    /// assert!(format!("{coordinator:?}").contains("repairs: 0"));
    /// ```
    pub fn repairs(mut self, repairs: u32) -> CoordinatorBuilder {
        self.inner.repairs = repairs;
        self
    }

    /// Splits the tree into `shards` explorers (at most `max_subagents`, at most one per
    /// file) instead of one per agent and one more per MiB.
    /// ```
    /// let coordinator = baton::Coordinator::builder().shards(8).build();
    /// assert!(format!("{coordinator:?}").contains("shards: Some(8)"));
    /// ```
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
    /// ```
    /// let dir = baton::testing::fixture_tree();
    /// let coordinator = baton::Coordinator::builder()
    ///     .constraint("only read files under src/")
    ///     .constraint("never read files under vendor/")
    ///     .build();
    /// // The tree holds no vendor/: the rule guards nothing there, and the run says so.
    /// let warnings = coordinator.check(&baton::Task::explore("where?", dir.path())).unwrap();
    /// assert!(warnings.iter().any(|w| w.contains("`vendor` is not in the tree")));
    /// ```
    pub fn constraint(mut self, text: impl Into<String>) -> CoordinatorBuilder {
        self.inner.constraints.push((text.into(), None));
        self
    }

    /// A typed constraint (`--constraint-json`): `text` is how it is shown (verbatim), the
    /// rules are what the gate enforces. A rule that says nothing, names a path leaving the
    /// root or names a tool the run does not have is refused when the run starts. An empty
    /// `text` is shown as the rules' JSON.
    /// ```
    /// let rules = baton::policy::rules_from_json(r#"{"rule": "tools", "deny": ["glob"]}"#).unwrap();
    /// let coordinator = baton::Coordinator::builder().constraint_rules("", rules).build();
    /// assert!(coordinator.check(&baton::Task::explore("where?", ".")).is_ok());
    /// let unknown = baton::policy::rules_from_json(r#"{"rule": "tools", "deny": ["shell"]}"#).unwrap();
    /// let refused = baton::Coordinator::builder().constraint_rules("", unknown).build();
    /// assert!(refused.check(&baton::Task::explore("where?", ".")).is_err());
    /// ```
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
    /// ```
    /// use std::time::Duration;
    /// let limits = baton::TimeLimits {
    ///     tool_call: Duration::from_secs(10),
    ///     approval: Duration::from_secs(60),
    ///     ..baton::TimeLimits::default()
    /// };
    /// let coordinator = baton::Coordinator::builder().time_limits(limits).build();
    /// assert!(format!("{coordinator:?}").contains("approval: 60s"));
    /// ```
    pub fn time_limits(mut self, limits: TimeLimits) -> CoordinatorBuilder {
        self.inner.limits = limits;
        self
    }

    /// The most a run's model calls may cost, in US dollars: no call is sent whose estimate
    /// (its input at the model's price, and every answer token it may take) would pass it, and
    /// once a subagent's first call would, no more are spawned — the report says so in its open
    /// items. It needs the model's price ([`Model::price`]): with none, nothing is counted.
    /// ```
    /// let coordinator = baton::Coordinator::builder().max_cost(0.50).build();
    /// assert!(format!("{coordinator:?}").contains("max_cost_micros: Some(500000)"));
    /// ```
    pub fn max_cost(mut self, dollars: f64) -> CoordinatorBuilder {
        self.inner.max_cost = Some(micros(dollars));
        self
    }

    /// The most one subagent's model calls may cost, in US dollars: near it the subagent is
    /// asked to hand off, then stopped.
    /// ```
    /// let coordinator = baton::Coordinator::builder().subagent_max_cost(0.05).build();
    /// assert!(format!("{coordinator:?}").contains("subagent_max_cost_micros: Some(50000)"));
    /// ```
    pub fn subagent_max_cost(mut self, dollars: f64) -> CoordinatorBuilder {
        self.inner.subagent_max_cost = Some(micros(dollars));
        self
    }

    /// Carries a constraint that names a place, a tool or a budget but from which no rule
    /// could be read as a standing condition — not enforced, with a warning — instead of
    /// refusing the run (the default: such a constraint is a `RunError::BadSetting` saying
    /// the typed form to use).
    /// ```
    /// let dir = baton::testing::fixture_tree();
    /// let task = baton::Task::explore("where?", dir.path());
    /// let strict = baton::Coordinator::builder().constraint("leave src alone when you can").build();
    /// assert!(strict.check(&task).is_err(), "it names a place and types to no rule");
    /// let lenient = baton::Coordinator::builder()
    ///     .constraint("leave src alone when you can")
    ///     .allow_unenforced(true)
    ///     .build();
    /// let warnings = lenient.check(&task).unwrap();
    /// assert!(warnings.iter().any(|w| w.contains("not enforced")));
    /// ```
    pub fn allow_unenforced(mut self, allow: bool) -> CoordinatorBuilder {
        self.inner.allow_unenforced = allow;
        self
    }

    /// A research corpus opened already ([`crate::corpus::Corpus::open`]): a research task naming
    /// its folder searches it as it is, without indexing it again.
    pub fn corpus(mut self, corpus: Arc<crate::corpus::Corpus>) -> CoordinatorBuilder {
        self.inner.corpus = Some(corpus);
        self
    }

    /// The directory under which a research task's corpus index is kept and brought up to
    /// date — each folder's in its own [`crate::Corpus::index_dir_in`] (`DIR/corpus/KEY`, as
    /// `baton research --state DIR` keeps it); none: built in memory for each run.
    pub fn index_dir(mut self, dir: impl Into<std::path::PathBuf>) -> CoordinatorBuilder {
        self.inner.index_dir = Some(dir.into());
        self
    }

    /// Logs every run to `store` (an append-only, digest-chained event log) so it can be
    /// listed, briefed, resumed and replayed by another process. Without one, each run's log
    /// is kept in memory for as long as its handle lives (large fan-outs: give a
    /// [`crate::SqliteStore`]).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use baton::EventStore;
    /// let dir = baton::testing::fixture_tree();
    /// let store = Arc::new(baton::testing::MemoryStore::new());
    /// let coordinator = baton::Coordinator::builder().store(store.clone()).build();
    /// let report = coordinator.run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// assert_eq!(store.runs().unwrap()[0].run_id, report.run_id);
    /// assert!(coordinator.brief(&report.run_id).unwrap().render().contains("## Evidence"));
    /// # });
    /// ```
    pub fn store(mut self, store: Arc<dyn EventStore>) -> CoordinatorBuilder {
        self.inner.store = Some(store);
        self
    }

    /// Decides requests for approval as they come, in the application's place; without one
    /// they wait for [`crate::RunHandle::approve`] or [`crate::RunHandle::deny`] (or expire).
    /// ```
    /// use std::sync::Arc;
    /// use baton::{async_trait, Approval, ApprovalRequest, Approver};
    /// /// Grants what only writes under `out/`.
    /// struct OutOnly;
    /// #[async_trait]
    /// impl Approver for OutOnly {
    ///     async fn decide(&self, request: &ApprovalRequest) -> Approval {
    ///         if request.consequences.iter().all(|c| c.resource.starts_with("out/")) {
    ///             Approval::Grant
    ///         } else {
    ///             Approval::Deny("only out/ may be written".into())
    ///         }
    ///     }
    /// }
    /// let coordinator = baton::Coordinator::builder().approver(Arc::new(OutOnly)).build();
    /// assert!(format!("{coordinator:?}").contains("approver: true"));
    /// ```
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> CoordinatorBuilder {
        self.inner.approver = Some(approver);
        self
    }
}
