//! `baton mcp`: the Model Context Protocol server (rmcp) over stdio, and over streamable HTTP
//! at `/mcp` on `baton serve`. Tools: `explore` and `research` (the report as
//! `structuredContent` matching the declared `outputSchema`, its markdown as text, progress
//! notifications as subagents end), `start_explore`, `start_research` and `get_run` (long
//! work as a handle), `validate_handoff` and `brief`. A failure is a result with `isError`
//! and its one line, never a dropped connection.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ProgressNotificationParam,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::problem::Problem;
use super::request::{allowed_dir, Constraint, Limits, RunKind, RunRequest};
use super::Server;
use crate::checkpoint::RunEvent;

/// The report's JSON schema (`contracts/report.schema.json`, compiled in): the
/// `outputSchema` of `explore` and `research`.
const REPORT_SCHEMA: &str = include_str!("../../contracts/report.schema.json");

fn report_schema() -> Arc<JsonObject> {
    Arc::new(serde_json::from_str(REPORT_SCHEMA).unwrap_or_default())
}

/// `explore`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExploreArgs {
    /// The tree to explore: absolute, or relative to the server's first allowed root.
    pub root: String,
    /// The question to answer.
    pub question: String,
    /// The subagents' model: a spec the server allows (default `offline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The run's limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// Constraints the run must respect: English text, or typed rules as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<Vec<Constraint>>,
}

/// `research`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResearchArgs {
    /// The folder of documents (HTML, Markdown, text): absolute, or relative to the server's
    /// first allowed root.
    pub corpus: String,
    /// The question to answer.
    pub question: String,
    /// The subagents' model: a spec the server allows (default `offline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The run's limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// Constraints the run must respect: English text, or typed rules as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<Vec<Constraint>>,
}

impl ExploreArgs {
    fn request(self) -> RunRequest {
        RunRequest {
            kind: RunKind::Explore,
            root: Some(self.root),
            corpus: None,
            question: self.question,
            model: self.model,
            lead_model: None,
            limits: self.limits.unwrap_or_default(),
            constraints: self.constraints.unwrap_or_default(),
            allow_unenforced: false,
        }
    }
}

impl ResearchArgs {
    fn request(self) -> RunRequest {
        RunRequest {
            kind: RunKind::Research,
            root: None,
            corpus: Some(self.corpus),
            question: self.question,
            model: self.model,
            lead_model: None,
            limits: self.limits.unwrap_or_default(),
            constraints: self.constraints.unwrap_or_default(),
            allow_unenforced: false,
        }
    }
}

/// A run's id.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// The run's id (what `start_explore` returned, or `baton runs` lists).
    pub run_id: String,
}

/// `validate_handoff`'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateArgs {
    /// The handoff, in its markdown or JSON form.
    pub handoff: String,
    /// The tree its sources are relative to: absolute, or relative to the first allowed root.
    pub root: String,
}

/// The MCP server: the tools over a [`Server`].
#[derive(Clone)]
pub struct BatonMcp {
    server: Server,
    tool_router: ToolRouter<BatonMcp>,
}

impl std::fmt::Debug for BatonMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatonMcp").finish_non_exhaustive()
    }
}

/// A failure as a tool result: `isError` with the one line.
fn failed(problem: Problem) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(problem.detail)])
}

/// Structured content with a text of its own, both scrubbed of every secret the process
/// holds (as every HTTP answer is).
fn structured(value: Value, text: String) -> CallToolResult {
    let mut result = CallToolResult::structured(crate::redact::scrubbed_value(value));
    result.content = vec![ContentBlock::text(crate::redact::scrubbed(text))];
    result
}

/// The progress message of a subagent that ended: what it handed off.
fn progress_message(subagent: &str, state: &str, handed: Option<(usize, usize)>) -> String {
    match handed {
        Some((conclusions, open)) => format!(
            "{subagent} {state}: {conclusions} settled conclusion(s), {open} open item(s) accepted"
        ),
        None => format!("{subagent} {state}: nothing accepted"),
    }
}

#[tool_router]
impl BatonMcp {
    /// The tools over `server`.
    pub fn new(server: Server) -> BatonMcp {
        BatonMcp {
            server,
            tool_router: Self::tool_router(),
        }
    }

    /// Runs a request to its end, sending progress as each subagent ends when the client
    /// asked for it; the report, or the failure.
    async fn run_to_end(
        &self,
        request: RunRequest,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let started = match self.server.start(request).await {
            Ok(s) => s,
            Err(p) => return failed(p),
        };
        let token = ctx.meta.get_progress_token();
        if let Ok(mut follower) = self.server.follow(&started.run_id, 0).await {
            let mut handed = std::collections::HashMap::new();
            let mut ended = 0u32;
            while let Some(Ok(event)) = follower.next().await {
                match event.event {
                    RunEvent::HandoffAccepted {
                        subagent, handoff, ..
                    } => {
                        handed.insert(
                            subagent,
                            (handoff.settled_conclusions.len(), handoff.open_items.len()),
                        );
                    }
                    RunEvent::SubagentEnded {
                        subagent, state, ..
                    } => {
                        ended += 1;
                        if let Some(token) = &token {
                            let message = progress_message(
                                &subagent,
                                state.label(),
                                handed.get(&subagent).copied(),
                            );
                            let param =
                                ProgressNotificationParam::new(token.clone(), f64::from(ended))
                                    .with_message(message);
                            // A client gone does not stop the run: its report is kept.
                            let _ = ctx.peer.notify_progress(param).await;
                        }
                    }
                    _ => {}
                }
            }
        }
        match self.server.wait(&started.run_id).await {
            Ok(report) => match serde_json::to_value(&*report) {
                Ok(value) => structured(value, report.to_markdown()),
                Err(e) => failed(Problem::internal(e.to_string())),
            },
            Err(p) => failed(p),
        }
    }

    /// Explore a codebase in parallel and answer a question with conclusions whose every
    /// cited line was checked against the source.
    #[tool(
        description = "Explore a codebase in parallel and answer a question: every settled conclusion cites file lines that were read and checked. Returns the report (structured) and its markdown; sends progress as subagents hand off.",
        output_schema = report_schema()
    )]
    async fn explore(
        &self,
        args: Parameters<ExploreArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run_to_end(args.0.request(), ctx).await)
    }

    /// Research a folder of documents.
    #[tool(
        description = "Research a folder of documents (HTML, Markdown, text) and answer a question: every settled conclusion cites passages that were read and checked. Returns the report (structured) and its markdown; sends progress as subagents hand off.",
        output_schema = report_schema()
    )]
    async fn research(
        &self,
        args: Parameters<ResearchArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run_to_end(args.0.request(), ctx).await)
    }

    /// Start an exploration and return at once with its run id.
    #[tool(
        description = "Start an exploration and return its run id at once; poll get_run for its state and report."
    )]
    async fn start_explore(
        &self,
        args: Parameters<ExploreArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.start(args.0.request()).await)
    }

    /// Start a research run and return at once with its run id.
    #[tool(
        description = "Start a research run over a folder of documents and return its run id at once; poll get_run for its state and report."
    )]
    async fn start_research(
        &self,
        args: Parameters<ResearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.start(args.0.request()).await)
    }

    async fn start(&self, request: RunRequest) -> CallToolResult {
        match self.server.start(request).await {
            Ok(started) => {
                let text = format!("started {} run {}", started.kind, started.run_id);
                let value = json!({
                    "run_id": started.run_id, "kind": started.kind, "state": "running",
                    "warnings": started.warnings,
                });
                structured(value, text)
            }
            Err(p) => failed(p),
        }
    }

    /// A run's state, counts and usage, and its report when done.
    #[tool(
        description = "A run's state (running, finished, cancelled, interrupted), counts, usage and cost, and its report when done."
    )]
    async fn get_run(&self, args: Parameters<RunArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(match self.server.run(&args.0.run_id).await {
            Ok(value) => {
                let report =
                    serde_json::from_value::<crate::report::Report>(value["report"].clone());
                let text = match report {
                    Ok(report) => report.to_markdown(),
                    Err(_) => format!(
                        "run {} is {}",
                        args.0.run_id,
                        value["state"].as_str().unwrap_or("?")
                    ),
                };
                structured(value, text)
            }
            Err(p) => failed(p),
        })
    }

    /// Check a handoff against the contract and a tree.
    #[tool(
        description = "Check a handoff (markdown or JSON form) against the three-section contract and a tree: structure, that each cited file and line exists, and that each quote is in the lines cited. Returns the verdict with each violation's code and line."
    )]
    async fn validate_handoff(
        &self,
        args: Parameters<ValidateArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = args.0;
        let roots = self.server.inner_roots();
        let checked = tokio::task::spawn_blocking(move || validate_handoff(&roots, &args))
            .await
            .map_err(|e| Problem::internal(e.to_string()))
            .and_then(|r| r);
        Ok(match checked {
            Ok((value, text)) => structured(value, text),
            Err(p) => failed(p),
        })
    }

    /// A run's brief.
    #[tool(
        description = "A run's brief: its checkpoint as a person reads it before resuming (goal, constraints, what is settled, open, unknown)."
    )]
    async fn brief(&self, args: Parameters<RunArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(match self.server.brief(&args.0.run_id).await {
            Ok(value) => {
                let text = value["markdown"].as_str().unwrap_or_default().to_string();
                structured(value, text)
            }
            Err(p) => failed(p),
        })
    }
}

/// The contract's verdict on a handoff against a tree under an allowed root.
fn validate_handoff(
    roots: &[std::path::PathBuf],
    args: &ValidateArgs,
) -> Result<(Value, String), Problem> {
    if args.handoff.len() > crate::handoff::MAX_HANDOFF_BYTES {
        return Err(Problem::bad(
            "invalid_body",
            format!(
                "handoff: over the {}-byte limit",
                crate::handoff::MAX_HANDOFF_BYTES
            ),
        ));
    }
    let root = allowed_dir(roots, "root", &args.root)?;
    let workspace = crate::tools::Workspace::open(&root)
        .map_err(|e| Problem::bad("invalid_root", format!("root {}: {e}", root.display())))?;
    let files = crate::handoff::WorkspaceFiles::new(workspace);
    let no_corpus = std::collections::HashSet::new();
    let check = crate::handoff::Check {
        files: Some(&files),
        observations: None,
        docs: Some(&no_corpus),
    };
    let parsed = crate::handoff::validate(&args.handoff, &check);
    if parsed.is_neither_form() {
        return Err(Problem::bad(
            "invalid_handoff",
            "handoff: neither form of a handoff (no section headings, not JSON)",
        ));
    }
    let valid = parsed.violations.is_empty();
    let form = match parsed.form {
        crate::handoff::Form::Markdown => "markdown",
        crate::handoff::Form::Json => "json",
    };
    let mut text = String::new();
    for v in &parsed.violations {
        text.push_str(&format!("line {}: [{}] {}\n", v.line, v.code, v.message));
    }
    text.push_str(&format!(
        "{} ({form} form): {} violation(s)",
        if valid { "valid" } else { "invalid" },
        parsed.violations.len()
    ));
    let value = json!({
        "valid": valid, "form": form, "violations": parsed.violations, "handoff": parsed.handoff,
    });
    Ok((value, text))
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for BatonMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("baton", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "baton explores code and researches documents with parallel subagents; every settled conclusion cites sources that were read and checked line by line. Use explore/research for answers, start_*/get_run for long runs.",
            )
    }
}

/// The MCP server over streamable HTTP, for `/mcp`: host names checked against loopback
/// unless the server is bound elsewhere (where the bearer token guards it).
pub fn mcp_service(
    server: Server,
    loopback: bool,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    BatonMcp,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let mut config = StreamableHttpServerConfig::default().with_max_request_body_bytes(
        server
            .config()
            .body_limit
            .max(crate::handoff::MAX_HANDOFF_BYTES * 2),
    );
    if !loopback {
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(BatonMcp::new(server.clone())),
        Arc::new(Default::default()),
        config,
    )
}

/// Serves the MCP server on stdin and stdout until the client closes them.
pub async fn serve_stdio(server: Server) -> Result<(), String> {
    let running = BatonMcp::new(server)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("mcp: {e}"))?;
    running.waiting().await.map_err(|e| format!("mcp: {e}"))?;
    Ok(())
}
