//! The runs a server holds: starting and resuming them through the library (at most
//! `max_runs` at once), a tap on each run's log that says how far it has gone, its report
//! kept in memory and written under the state (`reports/`), and what any run of the state —
//! started here, by the command line, the library or another server — looks like to a client:
//! its state, counts, usage and report, its brief, its requests for approval. A run of the
//! state whose root is not under an allowed root is not shown (403), nor resumed.

use dashmap::DashMap;
use serde::Serialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use super::problem::Problem;
use super::request::{
    allowed_dir, allowed_model, check_limits, Constraint, Decision, DecisionRequest, ResumeRequest,
    RunKind, RunRequest,
};
use super::{ModelNames, ServerConfig};
use crate::checkpoint::{project, Checkpoint, EventStore, LoggedEvent, RunEvent, SqliteStore};
use crate::coordinator::{CoordinatorBuilder, RunControl, RunHandle, Task};
use crate::model::ModelSpec;
use crate::policy::{ApprovalError, ApprovalRequest, Budget};
use crate::report::{HandoffCounts, Report};

/// Seconds a client refused for too many runs is told to wait.
const RETRY_AFTER: u64 = 5;

/// How far a run this server holds has gone: the last event its tap read, and whether the
/// run has ended here (its report taken).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Seen {
    pub(super) seq: u64,
    pub(super) ended: bool,
    /// The tap could not read the log: followers look again for themselves.
    pub(super) blind: bool,
}

/// A run this server started or resumed and that has not ended.
pub(super) struct Live {
    control: RunControl,
    pub(super) seen: watch::Receiver<Seen>,
}

/// A run started (or resumed): its id, kind, and what the run said of its constraints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Started {
    /// The run's id.
    pub run_id: String,
    /// `explore` or `research`.
    pub kind: &'static str,
    /// What the run said of its constraints as it started (a place respelled, a constraint
    /// carried but not enforced).
    pub warnings: Vec<String>,
}

pub(super) struct Inner {
    pub(super) config: ServerConfig,
    /// Canonical allowed roots.
    roots: Vec<PathBuf>,
    models: Vec<ModelSpec>,
    pub(super) store: Arc<SqliteStore>,
    pub(super) live: DashMap<String, Live>,
    /// Reports of runs that ended here, or read back from `reports/`, with the sequence
    /// number of the run's last event when each was made.
    reports: DashMap<String, (u64, Arc<Report>)>,
    /// The kind and root of each run of the state seen in scope (its first event's).
    scopes: DashMap<String, (&'static str, String)>,
    /// Why a run that ended here has no report (its report could not be made or written).
    failures: DashMap<String, String>,
    /// Views of ended runs with their reports, by the sequence number of their last event:
    /// one is given again while the log has nothing after it (a resume logs more).
    views: DashMap<String, (u64, Arc<Value>)>,
    slots: Arc<Semaphore>,
}

/// Ended runs whose views and reports are kept in memory; beyond it the maps are emptied
/// (a report is read back from `reports/`, a view made again).
const KEPT: usize = 512;

/// Inserts into a map kept under [`KEPT`] entries: when full, it keeps only the entries
/// `pinned` names (a report that could not be written has no other copy).
fn keep<V>(map: &DashMap<String, V>, key: &str, value: V, pinned: impl Fn(&str) -> bool) {
    if map.len() >= KEPT {
        map.retain(|k, _| pinned(k));
    }
    map.insert(key.to_string(), value);
}

impl Inner {
    pub(super) fn new(
        config: ServerConfig,
        roots: Vec<PathBuf>,
        models: Vec<ModelSpec>,
        store: Arc<SqliteStore>,
    ) -> Inner {
        let slots = Arc::new(Semaphore::new(config.max_runs.max(1)));
        Inner {
            config,
            roots,
            models,
            store,
            live: DashMap::new(),
            reports: DashMap::new(),
            scopes: DashMap::new(),
            failures: DashMap::new(),
            views: DashMap::new(),
            slots,
        }
    }
}

/// A slot for one more run, or 429 with `Retry-After`.
fn slot(inner: &Inner) -> Result<OwnedSemaphorePermit, Problem> {
    Arc::clone(&inner.slots).try_acquire_owned().map_err(|_| {
        let mut p = Problem::new(
            429,
            "too_many_runs",
            format!(
                "{} runs are running, the most this server takes at once (--max-runs)",
                inner.config.max_runs
            ),
        );
        p.retry_after = Some(RETRY_AFTER);
        p
    })
}

/// Runs `f` on a blocking thread (the store and the corpus read files).
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Problem> + Send + 'static,
) -> Result<T, Problem> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Problem::internal(format!("a blocking task failed: {e}")))?
}

impl super::Server {
    /// The canonical allowed roots.
    pub(super) fn inner_roots(&self) -> Vec<PathBuf> {
        self.inner.roots.clone()
    }

    fn builder(
        &self,
        model: Option<&str>,
        lead: Option<&str>,
        max_cost: Option<f64>,
        per_subagent: Option<f64>,
    ) -> Result<CoordinatorBuilder, Problem> {
        let inner = &self.inner;
        let model = allowed_model(&inner.models, "model", model.unwrap_or("offline"))?;
        let lead = lead
            .map(|l| allowed_model(&inner.models, "lead_model", l))
            .transpose()?;
        let models = super::RunModels {
            lead,
            ..super::RunModels::of(model)
        };
        let builder = inner
            .config
            .models
            .coordinator(&models, max_cost, per_subagent, ModelNames::FIELDS)
            .map_err(|e| Problem::bad("invalid_model", e))?;
        let mut builder = builder
            .store(Arc::clone(&inner.store) as Arc<dyn EventStore>)
            .index_dir(inner.config.state.clone());
        if let Some(dir) = &inner.config.roles {
            builder = builder.roles(dir.clone());
        }
        Ok(builder)
    }

    /// Starts a run: the request checked (fields, model, limits, root, constraints, the task
    /// against the tree) before a slot is taken and anything is written.
    pub async fn start(&self, request: RunRequest) -> Result<Started, Problem> {
        if request.question.trim().is_empty() {
            return Err(Problem::bad("invalid_body", "question: empty"));
        }
        check_limits(&request.limits)?;
        let (field, given) = match (request.kind, &request.root, &request.corpus) {
            (RunKind::Explore, Some(root), None) => ("root", root),
            (RunKind::Research, None, Some(corpus)) => ("corpus", corpus),
            (RunKind::Explore, _, _) => {
                return Err(Problem::bad(
                    "invalid_body",
                    "an explore run takes `root` (and no `corpus`)",
                ))
            }
            (RunKind::Research, _, _) => {
                return Err(Problem::bad(
                    "invalid_body",
                    "a research run takes `corpus` (and no `root`)",
                ))
            }
        };
        let dir = allowed_dir(&self.inner.roots, field, given)?;
        let limits = &request.limits;
        let mut builder = self.builder(
            request.model.as_deref(),
            request.lead_model.as_deref(),
            limits.max_cost,
            limits.max_cost_per_subagent,
        )?;
        for constraint in &request.constraints {
            builder = match constraint {
                Constraint::Text(text) => builder.constraint(text.clone()),
                Constraint::Rules(value) => {
                    let text = value.to_string();
                    let rules = crate::policy::rules_from_json(&text).map_err(|why| {
                        Problem::bad("invalid_constraint", format!("constraints: {why}"))
                    })?;
                    builder.constraint_rules(text, rules)
                }
            };
        }
        let budget = Budget::default();
        builder = builder
            .allow_unenforced(request.allow_unenforced)
            .agents(limits.agents.unwrap_or(4) as usize)
            .max_subagents(limits.max_subagents.unwrap_or(32) as usize)
            .max_waves(
                limits
                    .max_waves
                    .map_or(crate::lead::DEFAULT_MAX_WAVES, |w| w as usize),
            )
            .repairs(limits.repairs.unwrap_or(2))
            .budget(Budget {
                model_turns: limits.max_turns.unwrap_or(budget.model_turns),
                tool_calls: limits.max_tool_calls.unwrap_or(budget.tool_calls),
                tokens: limits.max_tokens.unwrap_or(budget.tokens),
            });
        if let Some(shards) = limits.shards {
            builder = builder.shards(shards as usize);
        }
        let task = match request.kind {
            RunKind::Explore => Task::explore(request.question.clone(), &dir),
            RunKind::Research => {
                builder = builder.corpus(self.open_corpus(dir.clone()).await?);
                Task::research(request.question.clone(), &dir)
            }
        };
        let coordinator = builder.build();
        let checked = coordinator.clone();
        let checked_task = task.clone();
        blocking(move || checked.check(&checked_task).map_err(Problem::from)).await?;
        let permit = slot(&self.inner)?;
        let handle = coordinator.start(task).await.map_err(Problem::from)?;
        Ok(self.hold(handle, request.kind.name(), permit).await)
    }

    /// A research corpus opened (its index built or brought up to date under the state).
    async fn open_corpus(&self, dir: PathBuf) -> Result<Arc<crate::corpus::Corpus>, Problem> {
        let state = self.inner.config.state.clone();
        blocking(move || {
            let index = crate::corpus::Corpus::index_dir_in(&state, &dir);
            let (corpus, stats) = crate::corpus::Corpus::open(&dir, Some(&index), &|_, _| {})
                .map_err(|e| match e {
                    crate::corpus::CorpusError::BadRoot { .. } => {
                        Problem::bad("invalid_corpus", e.to_string())
                    }
                    e => Problem::internal(e.to_string()),
                })?;
            if stats.documents == 0 {
                return Err(Problem::bad(
                    "invalid_corpus",
                    "corpus: nothing indexed: no HTML, Markdown or text document",
                ));
            }
            Ok(Arc::new(corpus))
        })
        .await
    }

    /// Continues a run of the state from its last durable event (one this server does not
    /// hold running), with the models and cost limits the request names — only a run whose
    /// root is, canonicalised now, under an allowed root.
    pub async fn resume(&self, run_id: &str, request: ResumeRequest) -> Result<Started, Problem> {
        if self.inner.live.contains_key(run_id) {
            return Err(Problem::conflict(
                "run_live",
                format!("run {run_id} is running here"),
            ));
        }
        let (kind, root) = self.scope(run_id).await?;
        allowed_dir(&self.inner.roots, "root", &root)?;
        check_limits(&crate::server::request::Limits {
            max_cost: request.max_cost,
            max_cost_per_subagent: request.max_cost_per_subagent,
            ..Default::default()
        })?;
        let coordinator = self
            .builder(
                request.model.as_deref(),
                request.lead_model.as_deref(),
                request.max_cost,
                request.max_cost_per_subagent,
            )?
            .build();
        let permit = slot(&self.inner)?;
        let handle = coordinator.resume(run_id).await.map_err(Problem::from)?;
        Ok(self.hold(handle, kind, permit).await)
    }

    /// Keeps a started run: its controls in the live map, a tap on its log, its report kept
    /// and written when it ends; the slot is given back then.
    async fn hold(
        &self,
        handle: RunHandle,
        kind: &'static str,
        permit: OwnedSemaphorePermit,
    ) -> Started {
        let run_id = handle.run_id().to_string();
        let (tx, rx) = watch::channel(Seen::default());
        let mut first = rx.clone();
        self.inner.live.insert(
            run_id.clone(),
            Live {
                control: handle.control(),
                seen: rx,
            },
        );
        let warnings = handle.warnings().to_vec();
        let inner = Arc::clone(&self.inner);
        let id = run_id.clone();
        tokio::spawn(async move {
            // The tap reads as fast as the run logs: it never holds the run back.
            let mut events = handle.events();
            while let Some(read) = events.next().await {
                match read {
                    Ok(event) => tx.send_modify(|s| s.seq = event.seq),
                    Err(e) => {
                        // Followers read the store themselves from now on.
                        tracing::error!(run_id = %id, error = %e, "the run's log could not be followed");
                        tx.send_modify(|s| s.blind = true);
                        break;
                    }
                }
            }
            let seq = tx.borrow().seq;
            match handle.report().await {
                Ok(report) => {
                    match super::reports::save_report(&inner.config.state, &report, seq) {
                        Ok(()) => drop(inner.failures.remove(&id)),
                        Err(e) => {
                            tracing::error!(run_id = %id, error = %e, "the report could not be written");
                            keep(&inner.failures, &id, e, |_| false);
                        }
                    }
                    let unsaved = |k: &str| inner.failures.contains_key(k);
                    keep(&inner.reports, &id, (seq, Arc::new(report)), unsaved);
                }
                Err(e) => keep(&inner.failures, &id, e.to_string(), |_| false),
            }
            inner.live.remove(&id);
            tx.send_modify(|s| s.ended = true);
            drop(permit);
        });
        // Answered once the run's first event is durable: every route then finds the run.
        while !first.borrow_and_update().ended && first.borrow().seq == 0 {
            if first.changed().await.is_err() {
                break;
            }
        }
        Started {
            run_id,
            kind,
            warnings,
        }
    }

    /// A run's kind (`explore`, `research` or `job`) and root, from its first event: 404 for
    /// an unknown run, 403 for one whose root is not under an allowed root (a run the command
    /// line made elsewhere on a shared state, or a job with no root).
    pub(super) async fn scope(&self, run_id: &str) -> Result<(&'static str, String), Problem> {
        if let Some(known) = self.inner.scopes.get(run_id) {
            return Ok(known.clone());
        }
        let store = Arc::clone(&self.inner.store);
        let id = run_id.to_string();
        let (kind, root) = blocking(move || {
            let first = store.events_after(&id, 0, 1)?;
            Ok(match first.first().map(|e| &e.event) {
                Some(RunEvent::RunStarted { task, root, .. }) => {
                    let kind = match () {
                        _ if task.corpus.is_some() => "research",
                        _ if task.custom => "job",
                        _ => "explore",
                    };
                    (kind, root.clone())
                }
                _ => ("explore", String::new()),
            })
        })
        .await?;
        if !self.in_scope(&root) {
            return Err(Problem::forbidden(
                "root_not_allowed",
                format!("run {run_id} is not under a root this server allows"),
            ));
        }
        keep(&self.inner.scopes, run_id, (kind, root.clone()), |_| false);
        Ok((kind, root))
    }

    /// Whether a run's logged root lies under an allowed root (compared by components: the
    /// logged root is the canonical one the run was started on).
    fn in_scope(&self, root: &str) -> bool {
        let root = Path::new(root);
        root.is_absolute()
            && self
                .inner
                .roots
                .iter()
                .any(|allowed| root.starts_with(allowed))
    }

    /// Where a run stands: `running` (here, or in another process holding its claim),
    /// `finished`, `cancelled` or `interrupted` (nobody runs it: resume it).
    fn state_of(&self, run_id: &str, finished: Option<bool>) -> &'static str {
        if self.inner.live.contains_key(run_id) {
            return "running";
        }
        match finished {
            Some(false) => "finished",
            Some(true) => "cancelled",
            None => match self.inner.store.held(run_id) {
                Ok(true) => "running",
                _ => "interrupted",
            },
        }
    }

    /// A run's events, their projection and its state, read so that a run ending during the
    /// read is seen as ended with its report kept (the report is kept before the run leaves
    /// the live map, and a run elsewhere releases its claim after its last event).
    async fn settled_view(
        &self,
        run_id: &str,
    ) -> Result<(Vec<LoggedEvent>, Checkpoint, &'static str), Problem> {
        let mut tries = 0;
        loop {
            tries += 1;
            let live_before = self.inner.live.contains_key(run_id);
            let store = Arc::clone(&self.inner.store);
            let id = run_id.to_string();
            let events = blocking(move || Ok(store.events(&id)?)).await?;
            let cp = project(run_id, &events);
            let state = self.state_of(run_id, cp.finished);
            // Ended here, or its claim let go, while the events were read: read them again.
            let ended_meanwhile = (live_before && state != "running") || state == "interrupted";
            if !ended_meanwhile || tries >= 2 {
                return Ok((events, cp, state));
            }
        }
    }

    /// A run as a client sees it: state, counts, usage and cost, the report when done.
    pub async fn run(&self, run_id: &str) -> Result<Value, Problem> {
        let (kind, _) = self.scope(run_id).await?;
        let kept = self.inner.views.get(run_id).map(|v| v.clone());
        if let Some((seq, view)) = kept {
            let store = Arc::clone(&self.inner.store);
            let id = run_id.to_string();
            let more = blocking(move || Ok(store.events_after(&id, seq, 1)?)).await?;
            if more.is_empty() && !self.inner.live.contains_key(run_id) {
                return Ok(Value::clone(&view));
            }
        }
        let view = self.made_view(run_id, kind).await?;
        if matches!(view["state"].as_str(), Some("finished" | "cancelled"))
            && view["report"].is_object()
        {
            let seq = view["events"].as_u64().unwrap_or(0);
            keep(
                &self.inner.views,
                run_id,
                (seq, Arc::new(view.clone())),
                |_| false,
            );
        }
        Ok(view)
    }

    /// A run's view made from its log.
    async fn made_view(&self, run_id: &str, kind: &str) -> Result<Value, Problem> {
        let (events, cp, state) = self.settled_view(run_id).await?;
        let outcomes: Vec<_> = cp.plans.iter().filter_map(|p| p.outcome).collect();
        let counts = HandoffCounts::of(&outcomes);
        let total = cp.budgets.total;
        let (report, report_error) = match state {
            "finished" | "cancelled" => match self.report_of(run_id, cp.last_seq).await? {
                Some(report) => (Some(report), None),
                None => (None, Some(self.inner.failures.get(run_id).map_or_else(
                    || format!("no report is kept for run {run_id} as its log ends now: resume it to make one"),
                    |f| f.clone(),
                ))),
            },
            _ => (None, self.inner.failures.get(run_id).map(|f| f.clone())),
        };
        let (question, root) = match events.first().map(|e| &e.event) {
            Some(RunEvent::RunStarted { question, root, .. }) => (question.clone(), root.clone()),
            _ => (String::new(), String::new()),
        };
        Ok(json!({
            "run_id": run_id,
            "kind": kind,
            "question": question,
            "root": root,
            "state": state,
            "events": cp.last_seq,
            "subagents": {
                "planned": cp.plans.len(),
                "ended": outcomes.len(),
                "handoffs": counts,
            },
            "usage": {
                "model_turns": total.model_turns,
                "tool_calls": total.tool_calls,
                "tokens_in": total.tokens_in,
                "tokens_out": total.tokens_out,
                "cost_usd": total.cost_micros as f64 / 1e6,
            },
            "report": report.as_deref(),
            "report_error": report_error,
            "links": links(run_id),
        }))
    }

    /// The report of a run whose log ends at `seq`: kept in memory, else read back from
    /// `reports/` (whoever ended the run wrote it) — only one made when the log ended there.
    /// An error when a kept report cannot be read.
    pub async fn report_of(&self, run_id: &str, seq: u64) -> Result<Option<Arc<Report>>, Problem> {
        if let Some(kept) = self.inner.reports.get(run_id).filter(|k| k.0 == seq) {
            return Ok(Some(Arc::clone(&kept.1)));
        }
        let state = self.inner.config.state.clone();
        let id = run_id.to_string();
        let read =
            blocking(move || super::reports::load_report(&state, &id).map_err(Problem::internal))
                .await?;
        let Some((made_at, report)) = read.filter(|(made_at, _)| *made_at == seq) else {
            return Ok(None);
        };
        let report = Arc::new(report);
        let unsaved = |k: &str| self.inner.failures.contains_key(k);
        keep(
            &self.inner.reports,
            run_id,
            (made_at, Arc::clone(&report)),
            unsaved,
        );
        Ok(Some(report))
    }

    /// Waits for a run this server holds to end; then its report (or why it has none).
    pub async fn wait(&self, run_id: &str) -> Result<Arc<Report>, Problem> {
        let seen = self.inner.live.get(run_id).map(|l| l.seen.clone());
        if let Some(mut seen) = seen {
            while !seen.borrow_and_update().ended {
                if seen.changed().await.is_err() {
                    break;
                }
            }
        }
        // The report this server kept when the run ended here.
        if let Some(kept) = self.inner.reports.get(run_id) {
            return Ok(Arc::clone(&kept.1));
        }
        Err(match self.inner.failures.get(run_id) {
            Some(why) => Problem::internal(why.clone()),
            None => Problem::conflict("no_report", format!("run {run_id} has no report here")),
        })
    }

    /// How many runs this server holds running.
    pub fn running(&self) -> usize {
        self.inner.live.len()
    }

    /// Waits for every run this server holds to end.
    pub async fn wait_all(&self) {
        let seen: Vec<_> = self.inner.live.iter().map(|l| l.seen.clone()).collect();
        for mut seen in seen {
            while !seen.borrow_and_update().ended {
                if seen.changed().await.is_err() {
                    break;
                }
            }
        }
    }

    /// The runs of the state under an allowed root, newest first: `limit` (1–200) from
    /// `offset`. A run's state comes from its last event (a `run_finished` ends it) and its
    /// claim.
    pub async fn list(&self, offset: usize, limit: usize) -> Result<Value, Problem> {
        let store = Arc::clone(&self.inner.store);
        let mut rows = blocking(move || Ok(store.runs()?)).await?;
        rows.retain(|row| self.in_scope(&row.root));
        let limit = limit.clamp(1, 200);
        let mut runs = Vec::new();
        for row in rows.iter().skip(offset).take(limit) {
            let store = Arc::clone(&self.inner.store);
            let (id, last) = (row.run_id.clone(), row.last_seq);
            let finished = blocking(move || {
                let tail = store.events_after(&id, last.saturating_sub(1), 1)?;
                Ok(match tail.first().map(|e| &e.event) {
                    Some(RunEvent::RunFinished { cancelled }) => Some(*cancelled),
                    _ => None,
                })
            })
            .await?;
            runs.push(json!({
                "run_id": row.run_id,
                "question": row.question,
                "root": row.root,
                "state": self.state_of(&row.run_id, finished),
                "started_ms": row.started_ms,
                "events": row.last_seq,
                "links": links(&row.run_id),
            }));
        }
        let end = offset.saturating_add(limit);
        let next = (end < rows.len()).then(|| format!("/v1/runs?offset={end}&limit={limit}"));
        Ok(json!({ "runs": runs, "total": rows.len(), "next": next }))
    }

    /// Cancels a run this server holds.
    pub async fn cancel(&self, run_id: &str) -> Result<(), Problem> {
        let control = self.inner.live.get(run_id).map(|l| l.control.clone());
        match control {
            Some(control) => {
                control.cancel();
                Ok(())
            }
            None => Err(self.not_live(run_id).await),
        }
    }

    /// Why a run cannot be acted on here: unknown (404), out of scope (403), or not running
    /// in this server (409).
    async fn not_live(&self, run_id: &str) -> Problem {
        match self.scope(run_id).await {
            Ok(_) => Problem::conflict(
                "run_not_live",
                format!("run {run_id} is not running in this server"),
            ),
            Err(problem) => problem,
        }
    }

    /// A run's brief: what a person reads before resuming it.
    pub async fn brief(&self, run_id: &str) -> Result<Value, Problem> {
        self.scope(run_id).await?;
        let store = Arc::clone(&self.inner.store);
        let id = run_id.to_string();
        blocking(move || {
            let coordinator = crate::coordinator::Coordinator::builder()
                .store(store as Arc<dyn EventStore>)
                .build();
            let brief = coordinator.brief(&id).map_err(Problem::from)?;
            Ok(json!({ "run_id": id, "markdown": brief.render(), "brief": brief }))
        })
        .await
    }

    /// The requests for approval a run this server holds waits on (none for another run).
    pub async fn approvals(&self, run_id: &str) -> Result<Vec<ApprovalRequest>, Problem> {
        let control = self.inner.live.get(run_id).map(|l| l.control.clone());
        if let Some(control) = control {
            return Ok(control.approvals());
        }
        self.scope(run_id).await?;
        Ok(Vec::new())
    }

    /// Grants or denies a request of a run this server holds.
    pub async fn decide(
        &self,
        run_id: &str,
        approval: &str,
        decision: DecisionRequest,
    ) -> Result<(), Problem> {
        let control = self.inner.live.get(run_id).map(|l| l.control.clone());
        let Some(control) = control else {
            return Err(self.not_live(run_id).await);
        };
        let decided = match decision.decision {
            Decision::Grant => control.approve(approval).await,
            Decision::Deny => {
                control
                    .deny(approval, decision.reason.unwrap_or_else(|| "denied".into()))
                    .await
            }
        };
        decided.map_err(|e| match e {
            ApprovalError::Unknown(_) => Problem::not_found("approval_not_found", e.to_string()),
            ApprovalError::Expired(_) => Problem::new(410, "approval_expired", e.to_string()),
            _ => Problem::conflict("approval_decided", e.to_string()),
        })
    }
}

/// The routes of a run.
pub(super) fn links(run_id: &str) -> Value {
    let base = format!("/v1/runs/{run_id}");
    json!({
        "self": base,
        "events": format!("{base}/events"),
        "brief": format!("{base}/brief"),
        "cancel": format!("{base}/cancel"),
        "resume": format!("{base}/resume"),
        "approvals": format!("{base}/approvals"),
    })
}
