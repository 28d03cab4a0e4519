//! Command-line interface: `baton explore` and `baton validate`, their flags, output and exit
//! codes.

/// Prints one error line on stderr, `baton: ` first, made terminal-safe: whatever it quotes
/// (a path, a file name, a model's words) cannot move the cursor or break the line.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cli::to_stderr(&format!(
            "baton: {}\n",
            $crate::cli::terminal_line(&format!($($arg)*))
        ))
    };
}

mod compact;
mod progress;
mod research;
mod runs;
mod serve;
mod stored;
mod validate;

use std::io::Write;
use std::time::Duration;

use baton::checkpoint::StoreError;
use baton::{Budget, CoordinatorBuilder, Report, RunError, SqliteStore, Task};
use clap::{Parser, Subcommand};

/// Exit code: the run finished.
pub(crate) const EXIT_DONE: i32 = 0;
/// Exit code: the run failed (no subagent handed off, or the runtime failed).
pub(crate) const EXIT_FAILED: i32 = 1;
/// Exit code: bad usage or input.
pub(crate) const EXIT_USAGE: i32 = 2;
/// Exit code: cancelled with Ctrl-C (the report of what was handed off is still printed).
const EXIT_CANCELLED: i32 = 130;

#[derive(Parser, Debug)]
#[command(
    name = "baton",
    version,
    about = "Actor-based subagent coordinator: parallel exploration whose reports can be checked line by line."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How traces go to stderr when BATON_LOG (a filter, e.g. `baton=debug`) turns them on:
    /// `text` or `json` (one object a line, each span as it closes).
    #[arg(long, global = true, value_enum, default_value_t = LogFormatArg::Text)]
    log_format: LogFormatArg,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LogFormatArg {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Explore a codebase in parallel and answer a question with cited lines.
    Explore(ExploreArgs),
    /// Research a folder of documents (HTML, Markdown, text) and answer a question with cited
    /// passages (the same flags as explore; ROOT is the corpus folder).
    Research(ExploreArgs),
    /// Build or refresh the search index of a folder of documents.
    Index(research::IndexArgs),
    /// Check a handoff file against the contract and a workspace (exit 0 valid, 1 invalid,
    /// 2 unusable input).
    Validate(validate::ValidateArgs),
    /// Continue a run that was killed, from its last durable event.
    Resume(ResumeArgs),
    /// List the runs in the state.
    Runs(runs::RunsArgs),
    /// Print the brief of a run: what a person reads before resuming it.
    Brief(runs::BriefArgs),
    /// Audit a run's fidelity: per compaction the mandatory fields retained and the tokens
    /// saved, each settled conclusion traced to its observations, per resume the state's
    /// accuracy and the work run again, the denials by consequence.
    Audit(runs::BriefArgs),
    /// Withdraw a source from a run: its text leaves every later context, brief and report;
    /// its tombstone (id, digest, classification, reason, the decisions it influenced) stays.
    Forget(stored::ForgetArgs),
    /// Fork a run at an event: a new run sharing its log up to there (`resume` continues it,
    /// on another question with --question).
    Fork(stored::ForkArgs),
    /// Merge two runs into a new one: what agrees kept once, each conflict an open item
    /// naming both.
    Merge(stored::MergeArgs),
    /// Compact a transcript (OpenAI chat JSONL) as a subagent's window would be (exit 3 when
    /// refused).
    Compact(compact::CompactArgs),
    /// Serve runs over HTTP (Server-Sent Events, an OpenAPI document at /openapi.json) and
    /// MCP over streamable HTTP at /mcp.
    Serve(serve::ServeArgs),
    /// Serve MCP over stdio, for coding agents (`claude mcp add baton -- baton mcp`).
    Mcp(serve::McpArgs),
    /// Print the context a subagent of a role would be given from the run's latest checkpoint,
    /// and its manifest (exit 3 when the role's mandatory fields exceed the budget).
    Context(runs::ContextArgs),
}

/// Reads an input file of at most `limit` bytes as UTF-8, refusing — on a non-blocking open,
/// so nothing blocks — anything that is not a regular file (a FIFO, a socket, a device), and
/// reading at most `limit + 1` bytes, so a huge file costs bounded memory. The error is one
/// line naming the file.
pub(crate) fn read_input(
    path: &std::path::Path,
    limit: usize,
    what: &str,
) -> Result<String, String> {
    use std::io::Read;
    let shown = path.display();
    let (file, meta) = baton::open_regular_file(path).map_err(|e| match e {
        baton::NotRegular::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
            format!("{shown}: no such file")
        }
        baton::NotRegular::Io(e) => format!("{shown}: {e}"),
        baton::NotRegular::Directory => format!("{shown}: is a directory"),
        baton::NotRegular::Special => {
            format!("{shown}: not a regular file (a FIFO, socket or device is not read)")
        }
    })?;
    if meta.len() > limit as u64 {
        return Err(format!(
            "{shown}: {} bytes, over the {limit}-byte limit for {what}",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{shown}: {e}"))?;
    if bytes.len() > limit {
        return Err(format!("{shown}: over the {limit}-byte limit for {what}"));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{shown}: not UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Where runs are logged.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct StateArg {
    /// The state directory holding baton.db (the event log of every run).
    #[arg(long, env = "BATON_STATE", default_value = ".baton")]
    pub(crate) state: std::path::PathBuf,
}

impl StateArg {
    /// Opens the store, creating it if needed (a run writes); a one-line error on failure.
    pub(crate) fn open(&self) -> Result<std::sync::Arc<SqliteStore>, StoreError> {
        SqliteStore::open(&self.state).map(std::sync::Arc::new)
    }

    /// Opens a store that must exist (reading, or resuming a run in it): nothing is created.
    pub(crate) fn open_existing(&self) -> Result<std::sync::Arc<SqliteStore>, StoreError> {
        SqliteStore::open_existing(&self.state).map(std::sync::Arc::new)
    }
}

/// The exit code of a store error, after printing it as one line: what the user gave is wrong
/// (no such state or run, a state that cannot be opened) exits 2; damaged or unwritable state,
/// Writes to stderr; a stderr that cannot be written (full, a closed pipe) is let be: what
/// goes there is for the user, and its loss must not end the run or lose the report.
pub(crate) fn to_stderr(text: &str) {
    use std::io::Write as _;
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_all(text.as_bytes())
        .and_then(|_| stderr.flush());
}

/// or a run held by another process, exits 1.
pub(crate) fn store_error(e: &StoreError) -> i32 {
    say!("{e}");
    match e {
        StoreError::UnknownRun(_) | StoreError::Open { .. } | StoreError::Missing { .. } => {
            EXIT_USAGE
        }
        _ => EXIT_FAILED,
    }
}

/// Text from a run (a question, a claim, a path, a model's words) made safe for a terminal:
/// control characters other than newline and tab, and every invisible or bidirectional
/// character ([`baton::is_invisible`]: zero-width spaces, direction marks and overrides, the
/// line separators), are written as `\u{..}` escapes, so nothing printed can move the cursor,
/// retitle the window, hide or reorder what is shown.
pub(crate) fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t')
}

/// One line made safe for a terminal: [`terminal_safe`], line breaks escaped too, so an error
/// naming a path that holds one stays one line.
pub(crate) fn terminal_line(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| c == '\t')
}

/// A cell of the progress display: [`terminal_line`], tabs escaped too, so nothing a name
/// holds moves a column.
pub(crate) fn terminal_cell(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |_| false)
}

/// `text` scrubbed of every key the process holds ([`baton::model::scrub`]), then escaped.
fn escaped(text: &str, kept: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    match baton::model::scrub(text) {
        std::borrow::Cow::Borrowed(text) => escape_chars(text, kept),
        std::borrow::Cow::Owned(text) => {
            std::borrow::Cow::Owned(escape_chars(&text, kept).into_owned())
        }
    }
}

fn escape_chars(text: &str, kept: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    // Invisible and bidirectional characters are escaped alike: none can hide or reorder
    // what is shown.
    let unsafe_char = |c: char| (c.is_control() && !kept(c)) || baton::is_invisible(c);
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// How models are reached: shared by explore, resume, serve and mcp.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ConnectionArgs {
    /// The model's context window in tokens, instead of the known models' table (unknown
    /// models: 32,768).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1024..=100_000_000))]
    context_window: Option<u64>,
    /// A TOML file of prices (dollars per million tokens) and context windows that adds to or
    /// overrides the built-in table.
    /// (Also `BATON_PRICES`; an empty one is no file.)
    #[arg(long, value_name = "FILE")]
    prices: Option<std::path::PathBuf>,
    /// Most model requests a minute, shared by every subagent of the process (0: no limit).
    #[arg(long, env = "BATON_RPM", default_value_t = 0)]
    rpm: u64,
    /// Most model tokens (input plus output allowed) a minute, shared by every subagent of the
    /// process (0: no limit).
    #[arg(long, env = "BATON_TPM", default_value_t = 0)]
    tpm: u64,
    /// Retries of a model call that failed for a reason that may pass (429, 5xx, overloaded,
    /// a dropped connection), with exponential backoff or the provider's retry-after.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=20))]
    retries: u32,
    /// Ask providers for whole answers instead of streamed ones.
    #[arg(long)]
    no_stream: bool,
    /// Milliseconds added to every offline model call (demos, tests, benchmarks), at most a
    /// minute.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    offline_latency_ms: u64,
}

impl ConnectionArgs {
    /// The settings every model of the process is connected with; one line on error (a
    /// prices file that cannot be read).
    pub(crate) fn settings(&self) -> Result<baton::server::ModelSettings, String> {
        // The flag, else BATON_PRICES unless it is empty.
        let prices_file = self.prices.clone().or_else(|| {
            std::env::var_os("BATON_PRICES")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from)
        });
        let prices = match &prices_file {
            None => baton::model::PriceTable::default(),
            Some(path) => {
                let text = read_input(path, 1 << 20, "a prices file")
                    .map_err(|e| format!("--prices {e}"))?;
                baton::model::PriceTable::parse(&text)
                    .map_err(|e| format!("--prices {}: {e}", path.display()))?
            }
        };
        Ok(baton::server::ModelSettings {
            prices,
            http: baton::model::HttpOptions {
                limiter: baton::model::Limiter::per_minute(self.rpm, self.tpm),
                retry: baton::model::Retry {
                    attempts: self.retries + 1,
                    ..Default::default()
                },
                stream: !self.no_stream,
                ..Default::default()
            },
            context_window: self.context_window.map(|w| w as usize),
            offline_latency: Duration::from_millis(self.offline_latency_ms),
        })
    }
}

/// How the model plays (shared by explore and resume).
#[derive(clap::Args, Debug, Clone)]
struct ModelArgs {
    /// The model playing the subagents: `offline` (the deterministic local explorer),
    /// `anthropic:MODEL` (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) or `openai:MODEL`
    /// (OPENAI_API_KEY, optional for a local server; OPENAI_BASE_URL).
    #[arg(long, default_value = "offline")]
    model: String,
    /// The lead's own model (same forms as --model): it plans the subtasks, plans each wave's
    /// follow-ups from the planner's, and writes the report from the accepted handoffs.
    /// Without it the lead plans and merges deterministically.
    #[arg(long)]
    lead_model: Option<String>,
    /// A small model for every subagent's pinned ledger (same forms as --model, not
    /// offline): the turns the rule pass flags are sent to it off the subagent's path, and a
    /// pin it names is kept only when its text is a verbatim part of the turn. Without it
    /// the rule pass alone classifies.
    #[arg(long, value_name = "SPEC")]
    ledger_model: Option<String>,
    /// A model that rewrites each compaction summary as a narrative (same forms as --model,
    /// not offline): the narrative replaces the template only when it keeps every open item,
    /// constraint, fact and effect state of it verbatim and adds no outcome, closure or
    /// permission. Without it the templates stand.
    #[arg(long, value_name = "SPEC")]
    summary_model: Option<String>,
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The most the run's model calls may cost, in US dollars: no call goes out that could
    /// pass it, and no subagent starts whose first call could.
    #[arg(long, value_name = "DOLLARS", value_parser = dollars)]
    max_cost: Option<f64>,
    /// The most one subagent's model calls may cost, in US dollars.
    #[arg(long, value_name = "DOLLARS", value_parser = dollars)]
    max_cost_per_subagent: Option<f64>,
    /// No live progress display on stderr (the summary line is still printed).
    #[arg(long)]
    no_progress: bool,
    /// Print exactly one JSON document on stdout instead of the markdown report.
    #[arg(long)]
    json: bool,
    /// Print every settled conclusion and the findings ranked below the answers (the
    /// markdown report shows the first five settled findings).
    #[arg(long)]
    all: bool,
}

#[derive(clap::Args, Debug)]
struct ResumeArgs {
    /// The run's id (see `baton runs`).
    run: String,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    state: StateArg,
}

#[derive(clap::Args, Debug)]
struct ExploreArgs {
    /// The directory to explore.
    root: std::path::PathBuf,
    /// The question to answer.
    question: String,
    /// Subagents running at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    agents: u32,
    /// Most subagents one run may spawn.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    max_subagents: u32,
    /// Most waves: the first plan, then follow-ups planned from the checkpoint after each wave
    /// (names the first three answers use, at most two a wave, traced where they were not
    /// searched; in research, terms their passages name that no sub-question asked about).
    /// A run stops sooner when a wave adds
    /// no settled conclusion or the question asks only where something is.
    #[arg(long, default_value_t = baton::DEFAULT_MAX_WAVES as u32, value_parser = clap::value_parser!(u32).range(1..=100))]
    max_waves: u32,
    /// Shards (subagents) to split the tree into; default: one per agent, or one per MiB of files when that is more (at most --max-subagents, at most one per file).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    shards: Option<u32>,
    /// Most model turns per subagent.
    #[arg(long, default_value_t = Budget::default().model_turns, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    max_turns: u32,
    /// Most tool calls per subagent.
    #[arg(long, default_value_t = Budget::default().tool_calls, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    max_tool_calls: u32,
    /// Most tokens (input plus output, all turns) per subagent.
    #[arg(long, default_value_t = Budget::default().tokens, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    max_tokens: u64,
    /// Repair turns a subagent gets when its handoff breaks the contract.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10))]
    repairs: u32,
    /// A constraint the run must respect, verbatim (repeatable).
    #[arg(long = "constraint", value_name = "TEXT")]
    constraints: Vec<String>,
    /// A typed constraint the gate enforces, as JSON: one rule or an array, e.g.
    /// `{"rule":"read_scope","only_under":["src"]}` (repeatable; see the README).
    #[arg(long = "constraint-json", value_name = "JSON")]
    constraint_json: Vec<String>,
    /// Carry a --constraint that names a place, a tool or a budget but from which no rule
    /// could be read as a standing condition (not enforced, with a warning) instead of
    /// refusing the run.
    #[arg(long)]
    allow_unenforced: bool,
    /// Extra role profiles (`*.toml`) adding to or replacing the built-in ones.
    #[arg(long)]
    roles: Option<std::path::PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    state: StateArg,
}

/// Runs the command line; returns the exit code.
pub(crate) fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version print in full; a usage error is one line.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return EXIT_DONE;
        }
        Err(e) => {
            // clap's first paragraph, its lines joined (the usage and hints after it dropped).
            let text = e.to_string();
            let first: Vec<&str> = text
                .lines()
                .map(str::trim)
                .skip_while(|l| l.is_empty())
                .take_while(|l| !l.is_empty())
                .collect();
            say!("{}", first.join(" ").trim_start_matches("error: "));
            return EXIT_USAGE;
        }
    };
    let format = match cli.log_format {
        LogFormatArg::Text => baton::telemetry::LogFormat::Text,
        LogFormatArg::Json => baton::telemetry::LogFormat::Json,
    };
    // Held to the end: dropping it flushes what the OTLP exporter still buffers.
    let _telemetry = match baton::telemetry::init(format) {
        Ok(guard) => guard,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    let job = match cli.command {
        Command::Validate(args) => return validate::run(args),
        Command::Runs(args) => return runs::list(args),
        Command::Brief(args) => return runs::brief(args),
        Command::Audit(args) => return runs::audit(args),
        Command::Forget(args) => return stored::forget(args),
        Command::Fork(args) => return stored::fork(args),
        Command::Merge(args) => return stored::merge(args),
        Command::Context(args) => return runs::context(args),
        Command::Compact(args) => return compact::run(args),
        Command::Index(args) => return research::index(args),
        Command::Explore(args) => Job::Explore(args),
        Command::Research(args) => Job::Research(args),
        Command::Resume(args) => Job::Resume(args),
        Command::Serve(args) => Job::Serve(args),
        Command::Mcp(args) => Job::Mcp(args),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            say!("could not start the runtime: {e}");
            return EXIT_FAILED;
        }
    };
    let code = runtime.block_on(async move {
        match job {
            Job::Explore(args) => explore(args, None).await,
            Job::Research(args) => {
                // Bad model flags are said before a corpus is indexed.
                if let Err(e) = coordinator(&args.model) {
                    say!("{e}");
                    return EXIT_USAGE;
                }
                match research::open(&args.root, &args.state, !args.model.no_progress) {
                    Ok(corpus) => explore(args, Some(corpus)).await,
                    Err(code) => code,
                }
            }
            Job::Resume(args) => resume(args).await,
            Job::Serve(args) => serve::serve(args).await,
            Job::Mcp(args) => serve::mcp(args).await,
        }
    });
    // Everything the run logged is durable before it reports; a tool call still stuck in a
    // hung file system past its limit must not keep the process from exiting.
    runtime.shutdown_timeout(Duration::from_millis(500));
    code
}

enum Job {
    Explore(ExploreArgs),
    Research(ExploreArgs),
    Resume(ResumeArgs),
    Serve(serve::ServeArgs),
    Mcp(serve::McpArgs),
}

/// A cost in dollars: a number above 0.
fn dollars(text: &str) -> Result<f64, String> {
    match text.trim().trim_start_matches('$').parse::<f64>() {
        Ok(d) if d.is_finite() && d > 0.0 && d < 1e9 => Ok(d),
        _ => Err(format!("`{text}` is not an amount of dollars above 0")),
    }
}

/// The coordinator the flags describe, or a one-line error (exit 2): an unknown model, a
/// missing key, a bad base URL or prices file, a cost limit for a model with no known price.
fn coordinator(args: &ModelArgs) -> Result<CoordinatorBuilder, String> {
    let spec = baton::model::ModelSpec::parse(&args.model).map_err(|e| format!("--model: {e}"))?;
    let parse = |text: &Option<String>, flag: &str| {
        text.as_deref()
            .map(|t| baton::model::ModelSpec::parse(t).map_err(|e| format!("{flag}: {e}")))
            .transpose()
    };
    let models = baton::server::RunModels {
        model: spec,
        lead: parse(&args.lead_model, "--lead-model")?,
        ledger: parse(&args.ledger_model, "--ledger-model")?,
        summary: parse(&args.summary_model, "--summary-model")?,
    };
    args.connection.settings()?.coordinator(
        &models,
        args.max_cost,
        args.max_cost_per_subagent,
        baton::server::ModelNames::FLAGS,
    )
}

async fn resume(args: ResumeArgs) -> i32 {
    // A mistyped state is not created: the run must already be in it, its log intact (a
    // damaged one is named with its last intact event) — read before anything is written.
    let (store, events) = match runs::open_for_writing(&args.state, &args.run) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let coordinator = match coordinator(&args.model) {
        // A research run's corpus index is the one `baton research` keeps in the state.
        Ok(c) => c.store(store).index_dir(args.state.state.clone()),
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    let started = coordinator.build().resume(&args.run).await;
    // The display follows what the resumed run does, from its first event on.
    let resumed_after = events.last().map_or(0, |e| e.seq);
    let show = !args.model.no_progress;
    finish(
        started,
        resumed_after,
        show,
        args.model.printed(),
        &args.state.state,
    )
    .await
}

/// Explores a tree — or, given its opened corpus, researches a folder of documents.
async fn explore(args: ExploreArgs, corpus: Option<std::sync::Arc<baton::Corpus>>) -> i32 {
    if args.question.trim().is_empty() {
        say!("the question is empty");
        return EXIT_USAGE;
    }
    if !args.root.is_dir() {
        let why = if args.root.exists() {
            "not a directory"
        } else {
            "no such directory"
        };
        say!("{}: {why}", args.root.display());
        return EXIT_USAGE;
    }
    let mut typed = Vec::new();
    for text in &args.constraint_json {
        match baton::policy::rules_from_json(text) {
            Ok(rules) => typed.push((text.trim().to_string(), rules)),
            Err(why) => {
                say!("--constraint-json: {why}");
                return EXIT_USAGE;
            }
        }
    }
    // Every flag is checked before the state is opened (and perhaps created).
    let mut coordinator = match coordinator(&args.model) {
        Ok(c) => c,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    if let Some(shards) = args.shards {
        coordinator = coordinator.shards(shards as usize);
    }
    for c in &args.constraints {
        coordinator = coordinator.constraint(c.clone());
    }
    for (text, rules) in typed {
        coordinator = coordinator.constraint_rules(text, rules);
    }
    if let Some(dir) = &args.roles {
        if let Err(e) = approvals_undecidable(dir) {
            say!("{e}");
            return EXIT_USAGE;
        }
        coordinator = coordinator.roles(dir.clone());
    }
    coordinator = coordinator.allow_unenforced(args.allow_unenforced);
    // The task is checked — its constraints against the tree too — before any state is made.
    let task = match corpus {
        Some(corpus) => {
            coordinator = coordinator
                .corpus(corpus)
                .index_dir(args.state.state.clone());
            Task::research(args.question.clone(), &args.root)
        }
        None => Task::explore(args.question.clone(), &args.root),
    };
    match coordinator.clone().build().check(&task) {
        Ok(warnings) => {
            for warning in warnings {
                say!("warning: {warning}");
            }
        }
        Err(e) => return report_error(&e),
    }
    let store = match args.state.open() {
        Ok(s) => s,
        Err(e) => return store_error(&e),
    };
    let coordinator = coordinator
        .store(store)
        .agents(args.agents as usize)
        .max_subagents(args.max_subagents as usize)
        .max_waves(args.max_waves as usize)
        .budget(Budget {
            model_turns: args.max_turns,
            tool_calls: args.max_tool_calls,
            tokens: args.max_tokens,
        })
        .repairs(args.repairs)
        .build();
    let started = coordinator.start(task).await;
    let show = !args.model.no_progress;
    finish(started, 0, show, args.model.printed(), &args.state.state).await
}

/// The roles `baton explore` spawns may not reserve effects for approval: nothing on the
/// command line could decide a request, and each call would wait until it expired.
pub(crate) fn approvals_undecidable(dir: &std::path::Path) -> Result<(), String> {
    let roles = baton::context::load_roles(Some(dir)).map_err(|e| e.to_string())?;
    for name in [
        baton::RoleId::EXPLORER,
        baton::RoleId::VERIFIER,
        baton::RoleId::RESEARCHER,
    ] {
        if let Some(role) = roles.get(&name).filter(|r| !r.approve.is_empty()) {
            return Err(format!(
                "--roles: role `{}`: field `approve`: the command line cannot decide requests for approval; use the library (RunHandle::approve, an Approver) or leave `approve` out",
                role.name
            ));
        }
    }
    Ok(())
}

/// Follows a run — the live display drawn from its events after `after` (Ctrl-C cancels it) —
/// then prints its report, keeps it under the state for the servers, and maps it to an exit
/// code.
async fn finish(
    started: Result<baton::RunHandle, RunError>,
    after: u64,
    show: bool,
    json: Printed,
    state: &std::path::Path,
) -> i32 {
    let handle = match started {
        Ok(h) => h,
        Err(e) => return report_error(&e),
    };
    let display = progress::spawn(handle.events_from(after), show);
    let canceller = handle.canceller();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            say!("cancelling — press Ctrl-C again to quit at once");
            canceller.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(EXIT_CANCELLED);
            }
        }
    });
    let result = handle.report().await;
    let last_seq = display.await.unwrap_or(0);
    let report = match result {
        Ok(report) => report,
        Err(e) => return report_error(&e),
    };
    // Kept where `baton serve` and `baton mcp` give it from (with the log's last event, so a
    // later resume's log is never answered with this report).
    let kept = baton::server::save_report(state, &report, last_seq);
    // The report first: a stderr that cannot be written loses the summary line, not the
    // report.
    let printed = print_report(&report, json);
    to_stderr(&format!("{}\n", terminal_safe(&report.summary_line())));
    if let Err(e) = printed {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            say!("could not write the report: {e}");
            return EXIT_FAILED;
        }
    }
    if let Err(e) = kept {
        say!("could not keep the report under the state: {e}");
        return EXIT_FAILED;
    }
    if report.cancelled {
        EXIT_CANCELLED
    } else if report.failed() {
        EXIT_FAILED
    } else {
        EXIT_DONE
    }
}

fn report_error(e: &RunError) -> i32 {
    say!("{e}");
    if e.is_bad_input() {
        EXIT_USAGE
    } else {
        EXIT_FAILED
    }
}

/// How a report is printed: one JSON document, or markdown (capped unless `--all`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Printed {
    pub(crate) json: bool,
    pub(crate) all: bool,
}

impl ModelArgs {
    pub(crate) fn printed(&self) -> Printed {
        Printed {
            json: self.json,
            all: self.all,
        }
    }
}

fn print_report(report: &Report, how: Printed) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if how.json {
        let text = report.to_json().map_err(std::io::Error::other)?;
        writeln!(out, "{text}")?;
    } else {
        write!(out, "{}", terminal_safe(&report.to_markdown_shown(how.all)))?;
    }
    out.flush()
}
