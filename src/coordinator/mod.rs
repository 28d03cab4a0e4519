//! The public entry point: a `Coordinator` (built once, run many times) turns a `Task` into a
//! `Report` by spawning a lead actor for the run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc::Sender;

use crate::checkpoint::{EventStore, RunEvent, RunLog, StoreError};
use crate::event::Event;
use crate::explorer::OfflineModel;
use crate::lead::{restore, LeadArgs, LeadError, LeadHandle, Resumption, RunConfig, Stated};
use crate::model::Model;
use crate::policy::{Budget, Rule, TimeLimits};
use crate::report::{Report, SubagentSummary};
use crate::tools::{ToolRegistry, Workspace};

mod connect;
mod constraints;

pub use connect::connect;

/// Room in an event stream a caller makes for a run (`tokio::sync::mpsc::channel`): the run
/// waits for a listener that falls this far behind, and never drops an event.
pub const EVENTS_BUFFER: usize = 1024;

/// A job: a question about the tree at `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// What to find out.
    pub question: String,
    /// The directory to explore.
    pub root: PathBuf,
}

impl Task {
    /// A task for a question about a tree.
    pub fn new(question: impl Into<String>, root: impl AsRef<Path>) -> Task {
        Task {
            question: question.into(),
            root: root.as_ref().to_path_buf(),
        }
    }
}

/// Why a run could not start or finish. Bad input is told apart from a failed run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The question is empty or only whitespace.
    #[error("the question is empty")]
    EmptyQuestion,
    /// The root does not exist or is not a directory.
    #[error("{path}: {reason}")]
    BadRoot {
        /// The root as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A setting is out of range.
    #[error("{0}")]
    BadSetting(String),
    /// A role profile cannot be used.
    #[error(transparent)]
    Roles(#[from] crate::context::RoleError),
    /// A typed constraint cannot be used.
    #[error("constraint {text}: {reason}")]
    Constraint {
        /// The constraint, on one line.
        text: String,
        /// Why.
        #[source]
        reason: crate::policy::RuleError,
    },
    /// The actors could not run.
    #[error("the run failed: {0}")]
    Runtime(String),
    /// The run's log could not be read or written.
    #[error("{0}")]
    Store(#[source] StoreError),
    /// Resuming needs a store to resume from.
    #[error("resuming needs the run's state (a store)")]
    NoStore,
}

impl From<LeadError> for RunError {
    fn from(e: LeadError) -> RunError {
        match e {
            LeadError::Store(e) => RunError::Store(e),
            other => RunError::Runtime(other.to_string()),
        }
    }
}

impl RunError {
    /// True when the error is the caller's input, not the run (exit code 2 in the CLI).
    pub fn is_bad_input(&self) -> bool {
        match self {
            RunError::Runtime(_) => false,
            RunError::Store(e) => matches!(
                e,
                StoreError::UnknownRun(_) | StoreError::Open { .. } | StoreError::Missing { .. }
            ),
            _ => true,
        }
    }
}

/// Runs tasks: a model, tools, and the limits every run works within.
#[derive(Clone)]
pub struct Coordinator {
    model: Arc<dyn Model>,
    lead_model: Option<Arc<dyn Model>>,
    tools: ToolRegistry,
    agents: usize,
    max_subagents: usize,
    budget: Budget,
    repairs: u32,
    shards: Option<usize>,
    store: Option<Arc<dyn EventStore>>,
    /// Constraints given: the text, and the rules when given typed.
    constraints: Vec<(String, Option<Vec<Rule>>)>,
    roles: Option<PathBuf>,
    limits: TimeLimits,
    /// The run's cost limit, in millionths of a dollar.
    max_cost: Option<u64>,
    /// One subagent's cost limit, in millionths of a dollar.
    subagent_max_cost: Option<u64>,
    /// Whether a constraint that names a place, a tool or a budget and cannot be typed is
    /// carried as a standing condition (with a warning) instead of refused.
    allow_unenforced: bool,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("model", &self.model.name())
            .field("lead_model", &self.lead_model.as_ref().map(|m| m.name()))
            .field("tools", &self.tools)
            .field("agents", &self.agents)
            .field("max_subagents", &self.max_subagents)
            .field("budget", &self.budget)
            .field("repairs", &self.repairs)
            .field("logged", &self.store.is_some())
            .finish()
    }
}

impl Default for Coordinator {
    fn default() -> Coordinator {
        Coordinator {
            model: Arc::new(OfflineModel::new()),
            lead_model: None,
            tools: ToolRegistry::workspace(),
            agents: 4,
            max_subagents: 32,
            budget: Budget::default(),
            repairs: 2,
            shards: None,
            store: None,
            constraints: Vec::new(),
            roles: None,
            limits: TimeLimits::default(),
            max_cost: None,
            subagent_max_cost: None,
            allow_unenforced: false,
        }
    }
}

impl Coordinator {
    /// A coordinator with the offline model, the workspace tools, 4 agents at once, at most 32
    /// subagents, the default budget and 2 repair turns.
    pub fn new() -> Coordinator {
        Coordinator::default()
    }

    /// The model every subagent uses.
    pub fn model(mut self, model: Arc<dyn Model>) -> Coordinator {
        self.model = model;
        self
    }

    /// The lead's own model: it proposes the subtasks as a JSON plan (`contracts/plan.schema.json`)
    /// and writes the run's handoff from the accepted handoffs, checked by the same contract
    /// against what the subagents observed. Without one, the lead plans by sharding the tree and
    /// merges the handoffs itself, deterministically.
    pub fn lead_model(mut self, model: Arc<dyn Model>) -> Coordinator {
        self.lead_model = Some(model);
        self
    }

    /// The tools every subagent may call.
    pub fn tools(mut self, tools: ToolRegistry) -> Coordinator {
        self.tools = tools;
        self
    }

    /// How many subagents run at once.
    pub fn agents(mut self, agents: usize) -> Coordinator {
        self.agents = agents;
        self
    }

    /// The most subagents one run may spawn.
    pub fn max_subagents(mut self, max: usize) -> Coordinator {
        self.max_subagents = max;
        self
    }

    /// Each subagent's budget.
    pub fn budget(mut self, budget: Budget) -> Coordinator {
        self.budget = budget;
        self
    }

    /// Repair turns a subagent gets when its handoff breaks the contract.
    pub fn repairs(mut self, repairs: u32) -> Coordinator {
        self.repairs = repairs;
        self
    }

    /// Splits the tree into `shards` subagents (at most `max_subagents`, at most one per file)
    /// instead of one per agent and one more per MiB.
    pub fn shards(mut self, shards: usize) -> Coordinator {
        self.shards = Some(shards);
        self
    }

    /// A constraint the run must respect, verbatim (`--constraint`); binding sentences of the
    /// question (never, don't, always, only, must, from now on …) are added by themselves.
    ///
    /// The text is typed where it can be (`policy::parse_constraint`: "only read files under
    /// src/", "never touch /vendor", "no network access", "read-only" …) and the gate
    /// enforces its rules; what cannot be typed stays a standing condition, and the report
    /// says it is not enforced.
    pub fn constraint(mut self, text: impl Into<String>) -> Coordinator {
        self.constraints.push((text.into(), None));
        self
    }

    /// A typed constraint (`--constraint-json`): `text` is how it is shown (verbatim), the
    /// rules are what the gate enforces. A rule that says nothing, names a path leaving the
    /// root or names a tool the run does not have is refused when the run starts. An empty
    /// `text` is shown as the rules' JSON.
    pub fn constraint_rules(mut self, text: impl Into<String>, rules: Vec<Rule>) -> Coordinator {
        let mut text = text.into();
        if text.trim().is_empty() {
            text = serde_json::to_string(&rules).unwrap_or_else(|_| "typed rules".into());
        }
        self.constraints.push((text, Some(rules)));
        self
    }

    /// How long one model call and one tool call may take (default: 600 s and 120 s).
    pub fn time_limits(mut self, limits: TimeLimits) -> Coordinator {
        self.limits = limits;
        self
    }

    /// The most a run's model calls may cost, in US dollars: no call is sent whose estimate
    /// (its input at the model's price, and every answer token it may take) would pass it, and
    /// once a subagent's first call would, no more are spawned — the report says so in its open
    /// items. It needs the model's price ([`Model::price`]): with none, nothing is counted.
    pub fn max_cost(mut self, dollars: f64) -> Coordinator {
        self.max_cost = Some(micros(dollars));
        self
    }

    /// The most one subagent's model calls may cost, in US dollars: near it the subagent is
    /// asked to hand off, then stopped.
    pub fn subagent_max_cost(mut self, dollars: f64) -> Coordinator {
        self.subagent_max_cost = Some(micros(dollars));
        self
    }

    /// Carries a constraint that names a place, a tool or a budget but from which no rule
    /// could be read as a standing condition — not enforced, with a warning — instead of
    /// refusing the run (the default: such a constraint is a `RunError::BadSetting` saying
    /// the typed form to use).
    pub fn allow_unenforced(mut self, allow: bool) -> Coordinator {
        self.allow_unenforced = allow;
        self
    }

    /// Role profiles from `dir` (`*.toml`) add to or replace the built-in ones.
    pub fn roles(mut self, dir: impl Into<PathBuf>) -> Coordinator {
        self.roles = Some(dir.into());
        self
    }

    fn role_profiles(
        &self,
    ) -> Result<
        std::collections::BTreeMap<crate::contracts::RoleId, crate::context::RoleProfile>,
        RunError,
    > {
        let roles = crate::context::load_roles(self.roles.as_deref()).map_err(RunError::Roles)?;
        if !roles.contains_key(&crate::contracts::RoleId::EXPLORER) {
            return Err(RunError::BadSetting("no `explorer` role profile".into()));
        }
        let known = self.tools.names();
        for role in roles.values() {
            if let Some(tool) = role.unknown_tool(&known) {
                return Err(RunError::BadSetting(format!(
                    "role `{}`: field `tools`: unknown tool `{tool}` (the run's tools: {})",
                    role.name,
                    known.join(", ")
                )));
            }
        }
        Ok(roles)
    }

    /// Logs every run to `store` (an append-only, digest-chained event log) so it can be
    /// listed, briefed and resumed.
    pub fn store(mut self, store: Arc<dyn EventStore>) -> Coordinator {
        self.store = Some(store);
        self
    }

    /// Claims a run in the store for this process, if runs are logged.
    fn claim(&self, run_id: &str) -> Result<Option<Arc<crate::checkpoint::RunClaim>>, RunError> {
        self.store
            .as_ref()
            .map(|store| store.claim(run_id).map(Arc::new))
            .transpose()
            .map_err(RunError::Store)
    }

    /// Starts a run; events go to `events` while it works.
    pub async fn start(
        &self,
        task: Task,
        events: Option<Sender<Event>>,
    ) -> Result<RunHandle, RunError> {
        if self.agents == 0 || self.max_subagents == 0 || self.shards == Some(0) {
            return Err(RunError::BadSetting(
                "--agents and --max-subagents must be at least 1".into(),
            ));
        }
        // The tree, the constraints, the role files and the run's lock file are file-system
        // work: done off the runtime.
        let this = self.clone();
        let (question, workspace, constraints, roles, run_id, claim) =
            tokio::task::spawn_blocking(move || {
                let (question, workspace, constraints) = this.prepare(&task)?;
                // Everything the caller gave is checked before the run is claimed.
                let roles = this.role_profiles()?;
                let run_id = new_run_id();
                let claim = this.claim(&run_id)?;
                Ok::<_, RunError>((question, workspace, constraints, roles, run_id, claim))
            })
            .await
            .map_err(|e| RunError::Runtime(format!("starting the run failed: {e}")))??;
        let warnings = warnings_of(&constraints);
        let config = RunConfig {
            run_id,
            question,
            workspace,
            model: Arc::clone(&self.model),
            lead_model: self.lead_model.clone(),
            tools: self.tools.clone(),
            agents: self.agents,
            max_subagents: self.max_subagents,
            budget: self.budget,
            repairs: self.repairs,
            shards: self.shards,
            constraints,
            roles,
            log: None,
            limits: self.limits,
            cost: Arc::new(crate::model::CostMeter::new(self.max_cost)),
            subagent_cost_cap: self.subagent_max_cost,
            _claim: claim,
        };
        let mut handle = self.launch(config, events, None).await?;
        handle.warnings = warnings;
        Ok(handle)
    }

    /// The run's constraints, typed and checked against the tree (see
    /// `coordinator::constraints`): a `--constraint` naming a place, a tool or a budget that
    /// no rule could be read from is refused unless unenforced constraints are allowed.
    fn stated_constraints(
        &self,
        question: &str,
        workspace: &Workspace,
    ) -> Result<Vec<Stated>, RunError> {
        let tool_names = self.tools.names();
        // A plain name in a constraint is a place only when the root holds it (letter case
        // aside: the rule is spelled as the tree spells it).
        let root = workspace.root().to_path_buf();
        let is_path = move |name: &str| constraints::tree_spelling(&root, name).is_some();
        let mut given: Vec<Stated> = Vec::new();
        for (text, rules) in &self.constraints {
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            given.push(match rules {
                Some(rules) => {
                    let bad = |reason: crate::policy::RuleError| RunError::Constraint {
                        text: crate::text::one_line(text),
                        reason,
                    };
                    let rules: Vec<Rule> = rules
                        .iter()
                        .cloned()
                        .map(Rule::checked)
                        .collect::<Result<_, _>>()
                        .map_err(bad)?;
                    // A tools rule names tools the run has.
                    for rule in &rules {
                        if let Rule::Tools { allow, deny } = rule {
                            if let Some(unknown) =
                                allow.iter().chain(deny).find(|t| !tool_names.contains(t))
                            {
                                return Err(bad(crate::policy::RuleError(format!(
                                    "unknown tool `{unknown}` (the run's tools: {})",
                                    tool_names.join(", ")
                                ))));
                            }
                        }
                    }
                    Stated {
                        text: text.to_string(),
                        provenance: "--constraint-json".into(),
                        rules,
                        untyped: Vec::new(),
                        warnings: Vec::new(),
                    }
                }
                None => stated(text, "--constraint", &tool_names, &is_path),
            });
        }
        given.extend(
            crate::text::binding_sentences(question)
                .into_iter()
                .map(|s| stated(&s, "question", &tool_names, &is_path)),
        );
        let root = workspace.root();
        for stated in &mut given {
            constraints::check(stated, root, &tool_names, self.allow_unenforced)
                .map_err(RunError::BadSetting)?;
        }
        Ok(given)
    }

    /// Checks a task as `start` would — the question, the root, the constraints, the role
    /// profiles — without starting anything or touching the store: a caller can refuse bad
    /// input before it makes any state. Returns the warnings the run would start with (a place
    /// a rule names that the tree does not hold, a constraint carried but not enforced).
    pub fn check(&self, task: &Task) -> Result<Vec<String>, RunError> {
        let (_, _, constraints) = self.prepare(task)?;
        self.role_profiles()?;
        Ok(warnings_of(&constraints))
    }

    /// The question, the workspace and the constraints of a task, each checked.
    fn prepare(&self, task: &Task) -> Result<(String, Workspace, Vec<Stated>), RunError> {
        let question = task.question.trim().to_string();
        if question.is_empty() {
            return Err(RunError::EmptyQuestion);
        }
        let workspace = Workspace::open(&task.root).map_err(|e| RunError::BadRoot {
            path: task.root.display().to_string(),
            reason: match e.kind() {
                std::io::ErrorKind::NotFound => "no such directory".to_string(),
                _ => e.to_string(),
            },
        })?;
        let constraints = self.stated_constraints(&question, &workspace)?;
        Ok((question, workspace, constraints))
    }

    async fn launch(
        &self,
        mut config: RunConfig,
        events: Option<Sender<Event>>,
        resume: Option<Resumption>,
    ) -> Result<RunHandle, RunError> {
        config.log = self
            .store
            .as_ref()
            .map(|store| RunLog::new(Arc::clone(store), &config.run_id));
        let (lead, join) = LeadHandle::spawn(LeadArgs {
            config,
            events,
            resume,
        })
        .await
        .map_err(RunError::Runtime)?;
        let runner = lead.clone();
        let report = tokio::spawn(async move { runner.run().await.map_err(RunError::from) });
        Ok(RunHandle {
            lead,
            join,
            report,
            warnings: Vec::new(),
        })
    }

    /// Continues a run from its last durable event: subagents whose handoff was accepted (or
    /// rejected, or that failed) are not redone; those mid-flight start again from their brief;
    /// effects cut off while executing become outcome_unknown. The run keeps its id, question,
    /// root and limits; the model and tools are this coordinator's.
    pub async fn resume(
        &self,
        run_id: &str,
        events: Option<Sender<Event>>,
    ) -> Result<RunHandle, RunError> {
        // The log is read, folded and rechecked against the tree off the runtime.
        let this = self.clone();
        let id = run_id.to_string();
        let (claim, resumption, workspace, cost, roles) =
            tokio::task::spawn_blocking(move || this.read_for_resume(&id))
                .await
                .map_err(|e| RunError::Runtime(format!("reading the run failed: {e}")))??;
        let settings = resumption.settings.clone();
        let config = RunConfig {
            run_id: run_id.to_string(),
            question: settings.question,
            workspace,
            model: Arc::clone(&self.model),
            lead_model: self.lead_model.clone(),
            tools: self.tools.clone(),
            agents: settings.agents,
            max_subagents: settings.max_subagents,
            budget: settings.budget,
            repairs: settings.repairs,
            shards: settings.shards,
            constraints: Vec::new(),
            roles,
            log: None,
            limits: self.limits,
            cost: Arc::new(cost),
            subagent_cost_cap: self.subagent_max_cost,
            _claim: claim,
        };
        self.launch(config, events, Some(resumption)).await
    }

    /// What a resume starts from, read on a blocking thread: the run's claim, its log read
    /// back (rechecked against the tree as it is now, only where the run's constraints let
    /// files be read), its workspace, and what it has spent.
    #[allow(clippy::type_complexity)]
    fn read_for_resume(
        &self,
        run_id: &str,
    ) -> Result<
        (
            Option<Arc<crate::checkpoint::RunClaim>>,
            Resumption,
            Workspace,
            crate::model::CostMeter,
            std::collections::BTreeMap<crate::contracts::RoleId, crate::context::RoleProfile>,
        ),
        RunError,
    > {
        let store = self.store.as_ref().ok_or(RunError::NoStore)?;
        // The run must exist before a lock file is made for it; then the claim keeps another
        // process from resuming it while this one reads and continues it.
        store.events(run_id).map_err(RunError::Store)?;
        let claim = self.claim(run_id)?;
        let logged = store.events(run_id).map_err(RunError::Store)?;
        let resumption = restore(&logged).map_err(|e| {
            RunError::Store(StoreError::Damaged {
                run_id: run_id.to_string(),
                last_intact: logged.last().map(|e| e.seq).unwrap_or(0),
                detail: e,
            })
        })?;
        let settings = resumption.settings.clone();
        let workspace =
            Workspace::open(Path::new(&settings.root)).map_err(|e| RunError::BadRoot {
                path: settings.root.clone(),
                reason: e.to_string(),
            })?;
        // What was accepted is rechecked against the tree as it is now — only where the run's
        // constraints let files be read — and the log projected, off the runtime.
        let policy = Arc::new(crate::checkpoint::policy_of_log(&logged));
        // What the log says was spent counts against the cost limit of the resumed run.
        let cost = crate::model::CostMeter::new(self.max_cost);
        cost.settle(0, logged_cost(&logged));
        let mut resumption = resumption;
        resumption.prepare(&workspace.under(policy), run_id);
        let roles = self.role_profiles()?;
        Ok((claim, resumption, workspace, cost, roles))
    }

    /// Runs a task to the end.
    pub async fn run(&self, task: Task) -> Result<Report, RunError> {
        self.start(task, None).await?.wait().await
    }
}

/// A run in progress.
pub struct RunHandle {
    lead: LeadHandle,
    join: tokio::task::JoinHandle<()>,
    report: tokio::task::JoinHandle<Result<Report, RunError>>,
    warnings: Vec<String>,
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle").finish_non_exhaustive()
    }
}

impl RunHandle {
    /// A cheap handle for cancelling from elsewhere (a Ctrl-C handler).
    pub fn canceller(&self) -> Canceller {
        Canceller {
            lead: self.lead.clone(),
        }
    }

    /// What the run said of its constraints as it started (a place a rule names that the tree
    /// does not hold, a place respelled as the tree spells it, a constraint carried but not
    /// enforced), one line each; the report's Hard constraints say them too.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The subagents as they stand now; `None` once the run is over.
    pub async fn status(&self) -> Option<Vec<SubagentSummary>> {
        self.lead.status().await
    }

    /// Waits for the report.
    pub async fn wait(self) -> Result<Report, RunError> {
        let report = match self.report.await {
            Ok(result) => result,
            Err(e) => Err(RunError::Runtime(format!("the run task ended: {e}"))),
        };
        let _ = self.join.await;
        report
    }
}

/// Cancels a run: no more subagents start, running ones stop, the report keeps what was
/// handed off.
#[derive(Clone)]
pub struct Canceller {
    lead: LeadHandle,
}

impl std::fmt::Debug for Canceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Canceller").finish_non_exhaustive()
    }
}

impl Canceller {
    /// Cancels the run.
    pub fn cancel(&self) {
        self.lead.cancel();
    }
}

fn new_run_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("run-{:x}-{:x}{n}", nanos / 1_000_000, std::process::id())
}

/// A constraint given as text, typed where it can be.
fn stated(
    text: &str,
    provenance: &str,
    tools: &[String],
    is_path: &dyn Fn(&str) -> bool,
) -> Stated {
    let typed = crate::policy::parse_constraint(text, tools, is_path);
    Stated {
        text: text.to_string(),
        provenance: provenance.to_string(),
        rules: typed.rules,
        untyped: typed.untyped,
        warnings: Vec::new(),
    }
}

/// Every warning of the run's constraints, each naming its constraint.
fn warnings_of(constraints: &[Stated]) -> Vec<String> {
    constraints
        .iter()
        .flat_map(|c| {
            c.warnings.iter().map(move |w| {
                format!(
                    "constraint \"{}\" ({}): {w}",
                    crate::text::one_line(&c.text),
                    c.provenance
                )
            })
        })
        .collect()
}

/// Millionths of a dollar from dollars (negative and non-numbers are 0).
fn micros(dollars: f64) -> u64 {
    if dollars.is_finite() && dollars > 0.0 {
        (dollars * 1e6).round().min(u64::MAX as f64) as u64
    } else {
        0
    }
}

/// What a run's log says its model calls cost, in millionths of a dollar: every subagent that
/// ended (`budget_spent`) and every turn of the lead's model (`lead_turn`). A subagent cut off
/// mid-flight logged nothing of what it spent.
fn logged_cost(events: &[crate::checkpoint::LoggedEvent]) -> u64 {
    events
        .iter()
        .map(|e| match &e.event {
            RunEvent::BudgetSpent { spent, .. } | RunEvent::LeadTurn { spent, .. } => {
                spent.cost_micros
            }
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::LoggedEvent;
    use crate::policy::Spent;

    fn logged(event: RunEvent) -> LoggedEvent {
        LoggedEvent {
            run_id: "r".into(),
            seq: 1,
            at_ms: 0,
            event,
            prev: String::new(),
            digest: String::new(),
        }
    }

    #[test]
    fn a_resume_counts_what_the_log_says_was_spent() {
        let spent = |cost_micros| Spent {
            cost_micros,
            ..Spent::default()
        };
        let events = vec![
            logged(RunEvent::BudgetSpent {
                subagent: "sa1".into(),
                spent: spent(1200),
            }),
            logged(RunEvent::LeadTurn {
                purpose: "plan".into(),
                spent: spent(300),
                outcome: "accepted".into(),
                handoff: None,
            }),
            logged(RunEvent::RunResumed { after_seq: 2 }),
        ];
        assert_eq!(logged_cost(&events), 1500);
        assert_eq!(micros(0.0015), 1500);
        assert_eq!(micros(-1.0), 0);
    }
}
