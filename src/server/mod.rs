//! The server: `baton serve` (HTTP with Server-Sent Events, `server/http.rs`) and `baton mcp`
//! (the Model Context Protocol over stdio, and over streamable HTTP at `/mcp`,
//! `server/mcp.rs`) — a translation of requests to the library API that decides nothing the
//! library does not. `server/request.rs` checks what a client sends (fields, models, limits,
//! roots), `server/runs.rs` keeps the runs this process started (their controls, a tap on each
//! run's log, their reports) and follows any run of the state, `server/problem.rs` is the
//! error every surface returns.

mod branches;
mod follow;
mod http;
mod mcp;
mod problem;
mod reports;
mod request;
mod runs;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use follow::Follower;
pub use http::{router, serve, Listening, ROUTES};
pub use mcp::{
    mcp_service, serve_stdio, BatonMcp, ExploreArgs, ResearchArgs, RunArgs, ValidateArgs,
};
pub use problem::{Problem, CODES};
pub use reports::{drop_report, load_report, save_report};
pub use request::{
    allowed_dir, allowed_model, check_limits, parse_body, spec_name, Constraint, Decision,
    DecisionRequest, ForgetRequest, ForkRequest, Limits, MergeRequest, ResumeRequest, RunKind,
    RunRequest,
};
pub use runs::Started;

use crate::coordinator::{Coordinator, CoordinatorBuilder};
use crate::model::{HttpOptions, ModelSpec, PriceTable, Provider};

/// How the server's runs reach their models: every base URL, key and price comes from here
/// (the server's environment and flags), never from a request.
#[derive(Debug, Clone, Default)]
pub struct ModelSettings {
    /// Prices and context windows (the built-in table, with `--prices` over it).
    pub prices: PriceTable,
    /// Timeouts, retries, rate limits, streaming.
    pub http: HttpOptions,
    /// A context window for every model, instead of the table's.
    pub context_window: Option<usize>,
    /// Added to every offline model call (demos, tests, benchmarks).
    pub offline_latency: Duration,
}

/// How the flags and fields that name models and cost limits are called where they came
/// from, so an error names what the user wrote: `--model` on the command line, `model` in a
/// request.
#[derive(Debug, Clone, Copy)]
pub struct ModelNames {
    /// The subagents' model.
    pub model: &'static str,
    /// The lead's model.
    pub lead_model: &'static str,
    /// The pinned ledger's model.
    pub ledger_model: &'static str,
    /// The summaries' model.
    pub summary_model: &'static str,
    /// The run's cost limit.
    pub max_cost: &'static str,
    /// One subagent's cost limit.
    pub max_cost_per_subagent: &'static str,
}

impl ModelNames {
    /// The command line's flags.
    pub const FLAGS: ModelNames = ModelNames {
        model: "--model",
        lead_model: "--lead-model",
        ledger_model: "--ledger-model",
        summary_model: "--summary-model",
        max_cost: "--max-cost",
        max_cost_per_subagent: "--max-cost-per-subagent",
    };
    /// A request's fields.
    pub const FIELDS: ModelNames = ModelNames {
        model: "model",
        lead_model: "lead_model",
        ledger_model: "ledger_model",
        summary_model: "summary_model",
        max_cost: "limits.max_cost",
        max_cost_per_subagent: "limits.max_cost_per_subagent",
    };
}

impl ModelSettings {
    /// A coordinator builder playing `model` (and `lead`, the lead's own model, when it is not
    /// offline), with the cost limits: one line naming the flag or field on error — an
    /// unknown model, a missing key, a bad base URL in the environment, a cost limit on a
    /// model with no known price.
    pub fn coordinator(
        &self,
        models: &RunModels,
        max_cost: Option<f64>,
        max_cost_per_subagent: Option<f64>,
        names: ModelNames,
    ) -> Result<CoordinatorBuilder, String> {
        let env = |name: &str| std::env::var(name).ok();
        let connect = |spec: &ModelSpec| {
            crate::coordinator::connect(
                spec,
                &env,
                &self.prices,
                self.context_window,
                self.http.clone(),
                self.offline_latency,
            )
        };
        let (model, lead) = (&models.model, models.lead.as_ref());
        let subagents = connect(model).map_err(|e| format!("{}: {e}", names.model))?;
        let mut builder = Coordinator::builder();
        // The models that cost something: the offline one costs nothing.
        let mut priced = Vec::new();
        if model.provider != Provider::Offline {
            priced.push(Arc::clone(&subagents));
        }
        // The offline lead is the deterministic one: no model of its own.
        if let Some(lead) = lead.filter(|l| l.provider != Provider::Offline) {
            let lead = connect(lead).map_err(|e| format!("{}: {e}", names.lead_model))?;
            priced.push(Arc::clone(&lead));
            builder = builder.lead_model(lead);
        }
        // The helper models answer in text: the offline explorer cannot be one.
        for (spec, name, ledger) in [
            (&models.ledger, names.ledger_model, true),
            (&models.summary, names.summary_model, false),
        ] {
            let Some(spec) = spec else { continue };
            if spec.provider == Provider::Offline {
                return Err(format!(
                    "{name}: the offline model cannot be a helper model (leave it out for the rules and templates)"
                ));
            }
            let helper = connect(spec).map_err(|e| format!("{name}: {e}"))?;
            priced.push(Arc::clone(&helper));
            builder = if ledger {
                builder.ledger_model(helper)
            } else {
                builder.summary_model(helper)
            };
        }
        if max_cost_per_subagent.is_some() && model.provider == Provider::Offline {
            return Err(format!(
                "{}: the subagents' offline model has no price (it costs nothing)",
                names.max_cost_per_subagent
            ));
        }
        if max_cost.is_some() || max_cost_per_subagent.is_some() {
            if priced.is_empty() {
                return Err(format!(
                    "{}: the offline model has no price (it costs nothing)",
                    names.max_cost
                ));
            }
            if let Some(unpriced) = priced.iter().find(|m| m.price().is_none()) {
                return Err(format!(
                    "{}: no price is known for {}: give one in a --prices file",
                    names.max_cost,
                    unpriced.name()
                ));
            }
        }
        builder = builder.model(subagents);
        if let Some(d) = max_cost {
            builder = builder.max_cost(d);
        }
        if let Some(d) = max_cost_per_subagent {
            builder = builder.subagent_max_cost(d);
        }
        Ok(builder)
    }
}

/// The models a run is played with: the subagents', and optionally the lead's and the
/// helper models of every subagent's window.
#[derive(Debug, Clone, PartialEq)]
pub struct RunModels {
    /// The subagents' model.
    pub model: ModelSpec,
    /// The lead's own model (offline: the deterministic lead).
    pub lead: Option<ModelSpec>,
    /// The pinned ledger's model (`--ledger-model`).
    pub ledger: Option<ModelSpec>,
    /// The summaries' model (`--summary-model`).
    pub summary: Option<ModelSpec>,
}

impl RunModels {
    /// `model` alone: the deterministic lead, the rule pass and the templates.
    pub fn of(model: ModelSpec) -> RunModels {
        RunModels {
            model,
            lead: None,
            ledger: None,
            summary: None,
        }
    }
}

/// What a server is started with.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The state directory (its `baton.db` holds every run, whichever surface started it).
    pub state: PathBuf,
    /// Roots and corpora may lie only under these (none given: the current directory).
    pub allow_roots: Vec<PathBuf>,
    /// The model specs a request may name, besides `offline` (always allowed: it reaches no
    /// host and costs nothing).
    pub allow_models: Vec<String>,
    /// Runs at once; beyond it a start or resume is refused with 429.
    pub max_runs: usize,
    /// The bearer token every request but `/healthz` must carry (`BATON_TOKEN`).
    pub token: Option<String>,
    /// How runs reach their models.
    pub models: ModelSettings,
    /// How often an idle event stream sends a keep-alive comment.
    pub keep_alive: Duration,
    /// The largest request body taken, in bytes (larger: 413).
    pub body_limit: usize,
    /// Role profiles (`*.toml`) adding to or replacing the built-in ones for every run: a
    /// role may reserve effects for approval, decided over `/approvals`.
    pub roles: Option<PathBuf>,
}

impl ServerConfig {
    /// Defaults: state `.baton`, the current directory allowed, offline only, 8 runs at once,
    /// no token, 15 s keep-alives, 64 KiB bodies.
    pub fn new(state: impl Into<PathBuf>) -> ServerConfig {
        ServerConfig {
            state: state.into(),
            allow_roots: Vec::new(),
            allow_models: Vec::new(),
            max_runs: 8,
            token: None,
            models: ModelSettings::default(),
            keep_alive: Duration::from_secs(15),
            body_limit: 64 * 1024,
            roles: None,
        }
    }
}

/// A server's shared core: every surface (HTTP, MCP over stdio or HTTP) calls the same
/// methods. Cloned freely.
#[derive(Clone)]
pub struct Server {
    inner: Arc<runs::Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").finish_non_exhaustive()
    }
}

impl Server {
    /// A server on `config`: each allowed root canonical and a directory, each allowed model
    /// spec parsed and connectable (its key in the environment), the state opened (created
    /// if needed). One line on error.
    pub fn new(config: ServerConfig) -> Result<Server, String> {
        let mut roots = Vec::new();
        let given = if config.allow_roots.is_empty() {
            vec![std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?]
        } else {
            config.allow_roots.clone()
        };
        for root in given {
            let canonical = root
                .canonicalize()
                .map_err(|e| format!("--allow-root {}: {e}", root.display()))?;
            if !canonical.is_dir() {
                return Err(format!("--allow-root {}: not a directory", root.display()));
            }
            roots.push(canonical);
        }
        let mut models = vec![ModelSpec::parse("offline").map_err(|e| e.to_string())?];
        for text in &config.allow_models {
            let spec = ModelSpec::parse(text).map_err(|e| format!("--allow-model: {e}"))?;
            // Connected once now, so a missing key is said at start, not at the first run.
            config
                .models
                .coordinator(&RunModels::of(spec.clone()), None, None, ModelNames::FLAGS)
                .map_err(|e| format!("--allow-model {text}: {e}"))?;
            if !models.contains(&spec) {
                models.push(spec);
            }
        }
        if let Some(dir) = &config.roles {
            crate::context::load_roles(Some(dir)).map_err(|e| format!("--roles: {e}"))?;
        }
        let store =
            crate::checkpoint::SqliteStore::open(&config.state).map_err(|e| e.to_string())?;
        Ok(Server {
            inner: Arc::new(runs::Inner::new(config, roots, models, Arc::new(store))),
        })
    }

    /// The configuration it runs with (allowed roots as given).
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }
}
