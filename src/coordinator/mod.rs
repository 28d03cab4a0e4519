//! The public entry point: a [`Coordinator`], built once with [`Coordinator::builder`] and run
//! many times, turns a [`Task`] into a [`Report`] by spawning a lead actor for each run; a
//! [`RunHandle`] follows one run — its id, its events, its approvals, its cancellation, its
//! report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::checkpoint::{EventStore, Feed, MemoryStore, RunLog, StoreError};
use crate::context::{Role, RoleProfile};
use crate::contracts::RoleId;
use crate::corpus::Corpus;
use crate::explorer::OfflineModel;
use crate::lead::{LeadArgs, LeadHandle, Resumption, RunConfig, Stated};
use crate::model::{ConnectError, Model, ModelSpec};
use crate::policy::{Approver, Budget, Rule, TimeLimits};
use crate::report::Report;
use crate::tools::{Tool, ToolRegistry, Workspace};

mod builder;
mod connect;
mod constraints;
mod error;
mod handle;
mod resume;
mod stored;
mod task;

pub use builder::CoordinatorBuilder;
pub use connect::connect;
pub use error::RunError;
pub use handle::{Canceller, RunControl, RunHandle};
pub use stored::MergeOutcome;
pub use task::{Job, Task};

/// How a role's model spec (`model = "…"` in a role's TOML) becomes a model.
/// ```
/// use std::sync::Arc;
/// // Every spec played by the offline explorer (a test's stand-in for real providers).
/// let connector: baton::Connector = Arc::new(|_spec: &baton::model::ModelSpec| {
///     Ok(Arc::new(baton::OfflineModel::new()) as Arc<dyn baton::Model>)
/// });
/// let spec = baton::model::ModelSpec::parse("openai:gpt-4o-mini").unwrap();
/// assert_eq!(connector(&spec).unwrap().name(), "offline");
/// let _coordinator = baton::Coordinator::builder().connector(connector).build();
/// ```
pub type Connector = Arc<dyn Fn(&ModelSpec) -> Result<Arc<dyn Model>, ConnectError> + Send + Sync>;

/// Runs tasks: the models, tools, roles and limits every run works within, and where runs are
/// logged. Cheap to clone; share one across an application.
///
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let coordinator = baton::Coordinator::builder().agents(2).build();
/// let report = coordinator
///     .run(baton::Task::explore("where is the retry delay computed?", dir.path()))
///     .await
///     .unwrap();
/// assert!(!report.handoff.settled_conclusions.is_empty());
/// # });
/// ```
#[derive(Clone)]
pub struct Coordinator {
    model: Arc<dyn Model>,
    lead_model: Option<Arc<dyn Model>>,
    /// The helper models of every subagent's window.
    helpers: crate::subagent::HelperModels,
    tools: ToolRegistry,
    agents: usize,
    max_subagents: usize,
    max_waves: usize,
    budget: Budget,
    repairs: u32,
    shards: Option<usize>,
    store: Option<Arc<dyn EventStore>>,
    /// Constraints given: the text, and the rules when given typed.
    constraints: Vec<(String, Option<Vec<Rule>>)>,
    /// A directory of role profiles (`*.toml`).
    role_dir: Option<PathBuf>,
    /// Roles given in code, in order (a later one of a name replaces an earlier).
    roles: Vec<Role>,
    limits: TimeLimits,
    /// The run's cost limit, in millionths of a dollar.
    max_cost: Option<u64>,
    /// One subagent's cost limit, in millionths of a dollar.
    subagent_max_cost: Option<u64>,
    /// Whether a constraint that names a place, a tool or a budget and cannot be typed is
    /// carried as a standing condition (with a warning) instead of refused.
    allow_unenforced: bool,
    /// Decides approval requests as they come (none: they wait for the run's handle).
    approver: Option<Arc<dyn Approver>>,
    /// Connects a role's model spec.
    connector: Option<Connector>,
    /// A research corpus opened already (a task naming its folder uses it).
    corpus: Option<Arc<Corpus>>,
    /// Under which directory research corpora's indexes are kept, each in
    /// [`Corpus::index_dir_in`] (none: in memory, built for each run).
    index_dir: Option<PathBuf>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("model", &self.model.name())
            .field("lead_model", &self.lead_model.as_ref().map(|m| m.name()))
            .field("helpers", &self.helpers)
            .field("tools", &self.tools)
            .field("agents", &self.agents)
            .field("max_subagents", &self.max_subagents)
            .field("max_waves", &self.max_waves)
            .field("budget", &self.budget)
            .field("repairs", &self.repairs)
            .field("shards", &self.shards)
            .field("roles", &self.roles)
            .field("role_dir", &self.role_dir)
            .field("constraints", &self.constraints.len())
            .field("limits", &self.limits)
            .field("max_cost_micros", &self.max_cost)
            .field("subagent_max_cost_micros", &self.subagent_max_cost)
            .field("allow_unenforced", &self.allow_unenforced)
            .field("logged", &self.store.is_some())
            .field("approver", &self.approver.is_some())
            .field("connector", &self.connector.is_some())
            .field(
                "corpus",
                &self.corpus.as_ref().map(|c| c.root().to_path_buf()),
            )
            .field("index_dir", &self.index_dir)
            .finish()
    }
}

impl Default for Coordinator {
    fn default() -> Coordinator {
        Coordinator {
            model: Arc::new(OfflineModel::new()),
            lead_model: None,
            helpers: crate::subagent::HelperModels::default(),
            tools: ToolRegistry::workspace(),
            agents: 4,
            max_subagents: 32,
            max_waves: 1,
            budget: Budget::default(),
            repairs: 2,
            shards: None,
            store: None,
            constraints: Vec::new(),
            role_dir: None,
            roles: Vec::new(),
            limits: TimeLimits::default(),
            max_cost: None,
            subagent_max_cost: None,
            allow_unenforced: false,
            approver: None,
            connector: None,
            corpus: None,
            index_dir: None,
        }
    }
}

/// A research run's document ids.
type DocIds = Arc<std::collections::HashSet<String>>;

/// The run's roles, by name.
type Roles = BTreeMap<RoleId, RoleProfile>;
/// The roles with a model of their own.
type RoleModels = BTreeMap<RoleId, Arc<dyn Model>>;

/// What `start` prepares off the runtime.
struct Prepared {
    question: String,
    workspace: Option<Workspace>,
    /// The run's tools: the coordinator's, and a research task's corpus tools.
    tools: ToolRegistry,
    /// A research task's documents, by id.
    doc_ids: Option<DocIds>,
    /// A research task's corpus folder, canonical.
    corpus_root: Option<PathBuf>,
    constraints: Vec<Stated>,
    roles: Roles,
    role_models: RoleModels,
}

impl Coordinator {
    /// A builder with the defaults: the offline model, the workspace tools (list_dir, glob,
    /// grep, read_file), 4 subagents at once, at most 32, the default budget, 2 repair turns,
    /// the built-in roles, no store (each run's log is kept in memory while its handle
    /// lives).
    ///
    /// ```
    /// let coordinator = baton::Coordinator::builder().agents(8).repairs(1).build();
    /// assert!(format!("{coordinator:?}").contains("agents: 8"));
    /// ```
    pub fn builder() -> CoordinatorBuilder {
        CoordinatorBuilder::new()
    }

    /// The roles a run may use: the built-in profiles, those of the role directory, those
    /// given in code (each replacing one of its name), with the models of those that have
    /// one. The task's roles must be among them, each naming only the run's tools.
    fn role_profiles(
        &self,
        task: &Task,
        known: &[String],
    ) -> Result<(Roles, RoleModels), RunError> {
        let mut roles = crate::context::load_roles(self.role_dir.as_deref())?;
        let mut models = BTreeMap::new();
        for role in &self.roles {
            let profile = Role::from_profile(role.profile().clone())?
                .profile()
                .clone();
            if let Some(model) = role.own_model() {
                models.insert(profile.name.clone(), Arc::clone(model));
            } else {
                models.remove(&profile.name);
            }
            roles.insert(profile.name.clone(), profile);
        }
        // The lead's model is the builder's lead model, never a role's.
        models.remove(&RoleId::LEAD);
        let mut used = task.named_roles();
        if self.lead_model.is_some() {
            used.push(RoleId::LEAD);
        }
        for name in &used {
            let Some(role) = roles.get(name) else {
                return Err(RunError::BadSetting(format!(
                    "the task names the role `{name}`, which the run does not have (its roles: {})",
                    roles
                        .keys()
                        .map(|r| r.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            if let Some(tool) = role.unknown_tool(known) {
                return Err(RunError::BadSetting(format!(
                    "role `{}`: field `tools`: unknown tool `{tool}` (the run's tools: {})",
                    role.name,
                    known.join(", ")
                )));
            }
        }
        // A role's model from its profile's spec, unless one was given in code: for each role
        // the run may spawn (the verifier too). The lead's model is the builder's lead model.
        used.push(RoleId::VERIFIER);
        for (name, role) in &roles {
            let Some(spec) = role.model.as_deref() else {
                continue;
            };
            if models.contains_key(name) || !used.contains(name) || *name == RoleId::LEAD {
                continue;
            }
            let failed = |source| RunError::RoleModel {
                role: name.to_string(),
                source,
            };
            let spec = ModelSpec::parse(spec).map_err(|e| failed(ConnectError::Spec(e)))?;
            let model = match &self.connector {
                Some(connect) => connect(&spec),
                None => default_connect(&spec),
            }
            .map_err(failed)?;
            models.insert(name.clone(), model);
        }
        Ok((roles, models))
    }

    /// Claims a run in the store for this process, if runs are logged.
    fn claim(&self, run_id: &str) -> Result<Option<Arc<crate::checkpoint::RunClaim>>, RunError> {
        self.store
            .as_ref()
            .map(|store| store.claim(run_id).map(Arc::new))
            .transpose()
            .map_err(RunError::Store)
    }

    /// Starts a run. Its events are the run's log, read with [`RunHandle::events`]; its
    /// report comes from [`RunHandle::report`].
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let coordinator = baton::Coordinator::builder().build();
    /// let handle = coordinator.start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let report = handle.report().await.unwrap();
    /// assert!(!report.failed());
    /// # });
    /// ```
    pub async fn start(&self, task: Task) -> Result<RunHandle, RunError> {
        // The tree, the constraints, the role files and the run's lock file are file-system
        // work: done off the runtime.
        let this = self.clone();
        let mut spec = task.spec();
        let (prepared, run_id, claim) = tokio::task::spawn_blocking(move || {
            let prepared = this.prepare(&task)?;
            let run_id = new_run_id();
            let claim = this.claim(&run_id)?;
            Ok::<_, RunError>((prepared, run_id, claim))
        })
        .await
        .map_err(|e| RunError::Runtime(format!("starting the run failed: {e}")))??;
        let warnings = warnings_of(&prepared.constraints);
        // A research run logs its corpus canonical: it resumes from any directory.
        if let Some(root) = &prepared.corpus_root {
            spec.corpus = Some(root.display().to_string());
        }
        let config = RunConfig {
            run_id,
            question: prepared.question,
            workspace: prepared.workspace,
            doc_ids: prepared.doc_ids,
            task: spec,
            model: Arc::clone(&self.model),
            lead_model: self.lead_model.clone(),
            helpers: self.helpers.clone(),
            tools: prepared.tools,
            agents: self.agents,
            max_subagents: self.max_subagents,
            max_waves: self.max_waves,
            budget: self.budget,
            repairs: self.repairs,
            shards: self.shards,
            constraints: prepared.constraints,
            roles: prepared.roles,
            role_models: prepared.role_models,
            log: None,
            limits: self.limits,
            cost: Arc::new(crate::model::CostMeter::new(self.max_cost)),
            subagent_cost_cap: self.subagent_max_cost,
            approver: self.approver.clone(),
            oversight: crate::lead::Oversight::default(),
            _claim: claim,
        };
        let mut handle = self.launch(config, None, 0).await?;
        handle.warnings = warnings;
        Ok(handle)
    }

    /// The run's constraints, typed and checked against the tree (see
    /// `coordinator::constraints`): a `--constraint` naming a place, a tool or a budget that
    /// no rule could be read from is refused unless unenforced constraints are allowed.
    fn stated_constraints(
        &self,
        question: &str,
        root: Option<&Path>,
        tool_names: &[String],
    ) -> Result<Vec<Stated>, RunError> {
        // A plain name in a constraint is a place only when the root holds it (letter case
        // aside: the rule is spelled as the tree spells it).
        let tree = root.map(Path::to_path_buf);
        let is_path = move |name: &str| {
            tree.as_deref()
                .is_some_and(|root| constraints::tree_spelling(root, name).is_some())
        };
        let mut given: Vec<Stated> = Vec::new();
        for (text, rules) in &self.constraints {
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            given.push(match rules {
                Some(rules) => typed(text, rules, tool_names)?,
                None => stated(text, "--constraint", tool_names, &is_path),
            });
        }
        given.extend(
            crate::text::binding_sentences(question)
                .into_iter()
                .map(|s| stated(&s, "question", tool_names, &is_path)),
        );
        for stated in &mut given {
            constraints::check(stated, root, tool_names, self.allow_unenforced)
                .map_err(RunError::BadSetting)?;
        }
        Ok(given)
    }

    /// Checks a task as `start` would — the question, the root, the constraints, the roles —
    /// without starting anything or touching the store: a caller can refuse bad input before
    /// it makes any state. Returns the warnings the run would start with (a place a rule
    /// names that the tree does not hold, a constraint carried but not enforced).
    /// ```
    /// let coordinator = baton::Coordinator::builder().build();
    /// let missing = coordinator.check(&baton::Task::explore("where?", "/no/such/dir")).unwrap_err();
    /// assert_eq!(missing.to_string(), "/no/such/dir: no such directory");
    /// ```
    pub fn check(&self, task: &Task) -> Result<Vec<String>, RunError> {
        let prepared = self.prepare(task)?;
        Ok(warnings_of(&prepared.constraints))
    }

    /// The question, the workspace, the constraints and the roles of a task, each checked.
    fn prepare(&self, task: &Task) -> Result<Prepared, RunError> {
        if self.agents == 0
            || self.max_subagents == 0
            || self.max_waves == 0
            || self.shards == Some(0)
        {
            return Err(RunError::BadSetting(
                "--agents, --max-subagents and --max-waves must be at least 1".into(),
            ));
        }
        let question = task.question().trim().to_string();
        if question.is_empty() {
            return Err(RunError::EmptyQuestion);
        }
        let workspace = match task.root() {
            Some(root) => Some(Workspace::open(root).map_err(|e| RunError::BadRoot {
                path: root.display().to_string(),
                reason: match e.kind() {
                    std::io::ErrorKind::NotFound => "no such directory".to_string(),
                    _ => e.to_string(),
                },
            })?),
            None => None,
        };
        check_fan_out(task, workspace.as_ref(), self.max_subagents)?;
        let root = workspace.as_ref().map(Workspace::root);
        // A research task's corpus tools are named by its constraints as any other tool, and
        // its corpus's folders as places.
        let (tools, corpus) = self.run_tools(task)?;
        let corpus_root = corpus.as_ref().map(|(_, c)| c.root().to_path_buf());
        let places = root.or(corpus_root.as_deref());
        let constraints = self.stated_constraints(&question, places, &tools.names())?;
        let doc_ids = corpus.map(|(ids, _)| ids);
        let (roles, role_models) = self.role_profiles(task, &tools.names())?;
        Ok(Prepared {
            question,
            workspace,
            tools,
            doc_ids,
            corpus_root,
            constraints,
            roles,
            role_models,
        })
    }

    /// The run's tools: the coordinator's, with a research task's corpus tools (`search`,
    /// `read`) over its corpus — the one given to the builder when it is that folder, else
    /// the folder indexed now — and the corpus's document ids.
    #[allow(clippy::type_complexity)]
    fn run_tools(
        &self,
        task: &Task,
    ) -> Result<(ToolRegistry, Option<(DocIds, Arc<Corpus>)>), RunError> {
        let Some(folder) = task.corpus() else {
            return Ok((self.tools.clone(), None));
        };
        let same = |c: &&Arc<Corpus>| folder.canonicalize().is_ok_and(|f| f == c.root());
        let corpus = match self.corpus.as_ref().filter(same) {
            Some(c) => Arc::clone(c),
            None => {
                let dir = self
                    .index_dir
                    .as_deref()
                    .map(|d| Corpus::index_dir_in(d, folder));
                let (corpus, _) =
                    Corpus::open(folder, dir.as_deref(), &|_, _| {}).map_err(|e| match e {
                        crate::corpus::CorpusError::BadRoot { path, reason } => {
                            RunError::BadRoot { path, reason }
                        }
                        other => RunError::Corpus(other),
                    })?;
                Arc::new(corpus)
            }
        };
        let ids = Arc::new(corpus.ids());
        let opened = Arc::clone(&corpus);
        let tools = self
            .tools
            .clone()
            .with(Arc::new(crate::tools::CorpusSearch(Arc::clone(&corpus))))
            .with(Arc::new(crate::tools::CorpusRead(corpus)));
        Ok((tools, Some((ids, opened))))
    }

    /// Spawns the lead for a run whose log goes to the coordinator's store — or, with none,
    /// to one in memory that lives as long as the run's handle — and whose readers follow
    /// from `published` on.
    async fn launch(
        &self,
        mut config: RunConfig,
        resume: Option<Resumption>,
        published: u64,
    ) -> Result<RunHandle, RunError> {
        let store: Arc<dyn EventStore> = match &self.store {
            Some(store) => Arc::clone(store),
            None => Arc::new(MemoryStore::new()),
        };
        config.log = Some(RunLog::new(Arc::clone(&store), &config.run_id));
        let feed = Arc::new(Feed::new(&config.run_id, store, published));
        let run_id = config.run_id.clone();
        let oversight = config.oversight.clone();
        let (lead, join) = LeadHandle::spawn(LeadArgs {
            config,
            feed: Some(Arc::clone(&feed)),
            resume,
        })
        .await
        .map_err(RunError::Runtime)?;
        let runner = lead.clone();
        let report = tokio::spawn(async move { runner.run().await.map_err(RunError::from) });
        Ok(RunHandle::new(run_id, lead, join, report, feed, oversight))
    }

    /// Runs a task to the end: [`Coordinator::start`], then [`RunHandle::report`].
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let report = baton::Coordinator::builder().build()
    ///     .run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// assert!(report.handoff.settled_conclusions[0].claim.contains("next_delay"));
    /// # });
    /// ```
    pub async fn run(&self, task: Task) -> Result<Report, RunError> {
        self.start(task).await?.report().await
    }

    /// The brief of a logged run (one running in this process or not): its goal, work,
    /// evidence, unresolved effects, constraints, approvals and budgets, each with the event
    /// it came from, as `baton brief` prints it ([`crate::checkpoint::Brief::render`]).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// let dir = baton::testing::fixture_tree();
    /// let coordinator = baton::Coordinator::builder()
    ///     .store(Arc::new(baton::testing::MemoryStore::new()))
    ///     .build();
    /// let report = coordinator.run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let brief = coordinator.brief(&report.run_id).unwrap();
    /// assert_eq!(brief.next_step, "none: the run finished");
    /// # });
    /// ```
    pub fn brief(&self, run_id: &str) -> Result<crate::checkpoint::Brief, RunError> {
        let store = self.store.as_ref().ok_or(RunError::NoStore)?;
        let events = store.events(run_id).map_err(RunError::Store)?;
        let checkpoint = crate::checkpoint::project(run_id, &events);
        checkpoint.check().map_err(|e| {
            RunError::Store(StoreError::Damaged {
                run_id: run_id.to_string(),
                last_intact: checkpoint.last_seq,
                detail: e.to_string(),
            })
        })?;
        Ok(crate::checkpoint::brief(&checkpoint))
    }

    /// The events of a logged run (one running in this process or not), after `after_seq`,
    /// as the store holds them: the stream ends at the end of the log.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// let dir = baton::testing::fixture_tree();
    /// let coordinator = baton::Coordinator::builder()
    ///     .store(Arc::new(baton::testing::MemoryStore::new()))
    ///     .build();
    /// let report = coordinator.run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let mut events = coordinator.logged_events(&report.run_id, 0).unwrap();
    /// let mut kinds = Vec::new();
    /// while let Some(event) = events.next().await {
    ///     kinds.push(event.unwrap().event.kind());
    /// }
    /// assert_eq!(kinds.last(), Some(&"run_finished"));
    /// # });
    /// ```
    pub fn logged_events(
        &self,
        run_id: &str,
        after_seq: u64,
    ) -> Result<crate::checkpoint::EventStream, RunError> {
        let store = self.store.as_ref().ok_or(RunError::NoStore)?;
        store
            .events_after(run_id, after_seq, 0)
            .map_err(RunError::Store)?;
        let feed = Arc::new(Feed::closed(run_id, Arc::clone(store)));
        Ok(feed.reader(after_seq))
    }
}

/// Whether a task's fan-out can be run: it names something to fan out, no more subagents than
/// `max` (and room for at least one explorer when it shards the tree), and each subtask's
/// scope is a path of the tree (a job with no workspace gives none).
fn check_fan_out(task: &Task, workspace: Option<&Workspace>, max: usize) -> Result<(), RunError> {
    let bad = |why: String| Err(RunError::BadSetting(why));
    if task.named_roles().is_empty() {
        return bad("the job has nothing to fan out: give it a subtask or a role".into());
    }
    let spec = task.spec();
    let needed = spec.others() + usize::from(spec.shards_tree());
    if needed > max {
        return bad(format!(
            "the task fans out {needed} subagents at least, and --max-subagents is {max}"
        ));
    }
    for (n, subtask) in task.subtasks().iter().enumerate() {
        for path in &subtask.scope {
            let found = workspace.is_some_and(|w| w.resolve(path).is_ok());
            if !found {
                return bad(format!(
                    "subtask {} ({}): its scope `{}` is not a path of the tree",
                    n + 1,
                    subtask.role,
                    crate::text::one_line(path)
                ));
            }
        }
    }
    Ok(())
}

/// A role's model spec connected with the process's environment, the built-in prices and the
/// default HTTP options.
fn default_connect(spec: &ModelSpec) -> Result<Arc<dyn Model>, ConnectError> {
    let env = |name: &str| std::env::var(name).ok();
    connect(
        spec,
        &env,
        &crate::model::PriceTable::default(),
        None,
        crate::model::HttpOptions::default(),
        std::time::Duration::ZERO,
    )
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

/// A constraint given typed: its rules checked, each tools rule naming only the run's tools.
fn typed(text: &str, rules: &[Rule], tool_names: &[String]) -> Result<Stated, RunError> {
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
    for rule in &rules {
        if let Rule::Tools { allow, deny } = rule {
            if let Some(unknown) = allow.iter().chain(deny).find(|t| !tool_names.contains(t)) {
                return Err(bad(crate::policy::RuleError(format!(
                    "unknown tool `{unknown}` (the run's tools: {})",
                    tool_names.join(", ")
                ))));
            }
        }
    }
    Ok(Stated {
        text: text.to_string(),
        provenance: "--constraint-json".into(),
        rules,
        untyped: Vec::new(),
        warnings: Vec::new(),
    })
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

/// A tool for the builder: anything that is one, shared.
fn shared(tool: impl Tool + 'static) -> Arc<dyn Tool> {
    Arc::new(tool)
}
