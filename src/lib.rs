//! baton — an actor-based subagent coordinator.
//!
//! A lead actor splits a job, spawns isolated subagent actors that each work in their own
//! bounded context window, takes back from each a handoff that must pass a three-section
//! contract (Settled conclusions with sources; Open items; Hard constraints, `none` when there
//! are none), and merges what passed into one report whose every conclusion can be re-checked
//! line by line.
//!
//! # Bird's-eye view
//!
//! ```text
//! Task ─▶ Coordinator::start ─▶ LeadActor ──plan (shards)──▶ SubagentActor × N (≤ agents at once)
//!                                  ▲                          │ AgentLoop: model ⇄ tools
//!                                  │◀── SubagentReport::HandedOff ┘ (text + observation log)
//!                                  │    validate (4 layers) → accept | Repair(violations) | reject
//!                                  ▼
//!                     merge (pure) ─▶ Report (the lead's own handoff)
//! ```
//!
//! # Entry points
//! - Library: [`Coordinator`] (`new`, builder methods, `run` / `start`), [`Task`], [`Report`].
//! - Binary: `src/main.rs` → `cli` (`baton explore ROOT QUESTION`, `baton validate FILE`,
//!   `baton runs`, `baton brief RUN`, `baton resume RUN`, `baton context RUN --role ROLE`,
//!   `baton compact TRANSCRIPT`).
//!
//! # Code map
//! - `coordinator` — the public [`Coordinator`], [`Task`], [`RunHandle`], [`Canceller`],
//!   [`RunError`]. Validates input (empty question, missing root) before any actor starts;
//!   `Coordinator::check` does all of it without starting, so the CLI refuses bad input
//!   before it makes any state. `coordinator::constraints` checks the run's constraints
//!   against the tree: places respelled as the tree spells them, a place it does not hold a
//!   warning (`RunHandle::warnings`, the report), and a `--constraint` that names a place, a
//!   tool or a budget yet types to nothing refused with the typed form to use (unless
//!   `Coordinator::allow_unenforced`; the question's own sentences only warn).
//! - `lead` — `LeadMsg`, `RunConfig`, `LeadArgs` (`lead/mod.rs`); `lead::state` is the
//!   `LeadState` and its decisions (what to spawn, log, checkpoint, when the run is done);
//!   `lead::actor` the thin `LeadActor` turning messages into calls on it; `lead::plan`
//!   shards the tree by directory balanced by size and writes briefs (pure); `lead::verdict`
//!   decides accept / repair / reject on a checked handoff (pure) and takes the verdict (the
//!   verdict and the subagent's end in one append); once the repairs are spent, a handoff
//!   broken only in some conclusions is partly accepted without them (`handoff::prune`; they
//!   are logged with `handoff_accepted` and listed as open items); `lead::merge` merges accepted
//!   handoffs, lists rejected ones' claims as unverified leads, and derives negative evidence
//!   from the subagents' logged searches (pure); `lead::relevance` orders settled conclusions by
//!   the rarity of what they match (pure; a pattern is tried only on a claim holding one of its
//!   needles, the literals every match of it holds); `lead::report` builds the report and does the
//!   lead's file work off the actor (planning, evidence digests); `lead::handle` is the
//!   `LeadHandle` callers hold. **Invariant:** every handoff is validated (all four
//!   layers, off the actor) before the lead looks at it; only one with no violation is merged;
//!   a subagent that panics or stops without a handoff is recorded as failed and the run still
//!   reports. The lead never awaits a subagent inside a handler. No role may spawn subagents
//!   (there is no spawn tool). `lead::journal` builds the events the lead logs (every step)
//!   and watches every append's acknowledgement (`watch_acks`): the first failure stops the
//!   run and is its result — no report is given as if logged — and a checkpoint is stored
//!   only once what it covers is durable (at most once a second, and at the end; a run keeps
//!   its two latest);
//!   `lead::leader` is the lead's own model (`--lead-model`): it proposes the subtasks as a
//!   JSON plan checked against `contracts/plan.schema.json` (`check_plan`, pure; the shards
//!   stand when it fails twice) and writes the run's handoff from its compiled `lead` context,
//!   validated like a subagent's against the union of what the accepted subagents observed
//!   (`LeadState::synthesise`, in the same file, runs it before the run finishes, and
//!   `LeadState::unaffordable` is the spawn-time cost check); each turn is logged
//!   (`lead_turn`) and its usage reported apart (`Report::models`). The lead logs each model's
//!   configuration (`model_configured`) at start, on resume and at every fallback, and starts
//!   no subagent whose first call could pass the run's cost limit.
//!   `lead::resume` reads a log back into what a resumed run starts from (pure): ended
//!   subagents (and accepted handoffs) are kept, mid-flight ones redone, cut-off effects
//!   become outcome_unknown, and `Resumption::recheck` moves conclusions whose cited text
//!   changed since to open items (logged as `evidence_stale`). Every
//!   subagent's first context is compiled for its role (explorer, or verifier in the second
//!   wave) from the items relevant to it — selected through the lead's `ContextIndex` from
//!   the checkpoint the lead keeps one event at a time (`checkpoint::Projector`,
//!   `LeadState::context_for`; the contract goes after the role's text and before the
//!   checkpoint data, `plan::with_contract`, so the role's text and the contract are one
//!   prefix a provider can cache for the whole fan-out) — so it does not grow with the number of other subagents; its
//!   manifest goes to the log (the items left out as a count and an order-free sum of their
//!   hashes), and its tool set is its profile's; a finished subagent's actor handle is let
//!   go; tool calls and validations run in at most four blocking slots a core, a slot given
//!   back when its work passes its time limit (`tools::run_blocking`); a floor over the role's
//!   budget is
//!   raised up to the subagent's model's window (`Model::context_window`), no further.
//!   The lead builds the run's [`Policy`] from its checkpoint's constraints (logged at start,
//!   typed by the `Coordinator`; read back on resume), plans only what it lets be read (no
//!   shard wider than the read scope), gives each subagent a workspace under it and a budget
//!   capped by it, seeds a restarted subagent with its earlier denials, logs each denial as
//!   `tool_denied` before the call's return, and asks with the question's binding sentences
//!   left out (they are constraints, not search terms); the report's Hard constraints open
//!   with the run's constraints and whether each is enforced, and negative evidence names the
//!   read scope ("`src` only, as constrained").
//!   `LeadState::advance` plans the second wave once the first has ended: a verifier over the
//!   conclusions of repaired handoffs, which reach it as data (the checkpoint's `doubts`
//!   field), never in its brief (`lead::plan::verify_brief`); it counts against
//!   `max_subagents`. `lead::merge` (also public as [`merge_handoffs`]) indexes findings
//!   and open items as it merges, so each costs the same; it says "the whole
//!   tree" for a pattern's negative evidence only when every shard ran that same search
//!   (pattern and flags) over its whole share and no file was skipped, and leaves out an
//!   empty search whose words a matching search spells out (`source::shadowed`). A finished
//!   subagent keeps only its searches (`merge::Search`; a search of its whole shard holds no
//!   scope of its own) and its handoff — its whole observation log only while the lead's
//!   model is to write the report; a search that searched no file is an open item, not
//!   evidence; what the searches and the plan's walk left out (hidden, ignored, links) is
//!   named beside "the whole tree"; the report's Hard constraints list the run's
//!   constraints, then what the models reported (`merge::reported_constraints`,
//!   [`ReportedConstraint`]), marked and never in a run line's form. A checkpoint is taken
//!   only when none is on its way to the store, at most once a second and at least four
//!   times as long apart as the last took to store (`journal::CheckpointPace`).
//! - `subagent` — `SubagentActor`, `SubagentMsg`, and `SubagentReport`, what it tells its
//!   lead through the `Reporter` it is spawned with (it imports nothing of the lead); a tool's
//!   output stays with it, the lead gets its digest (`ToolReturn`); every model call and
//!   tool call has a time limit ([`TimeLimits`]: a tool past it is a tool error the model
//!   sees). `subagent::agent_loop::AgentLoop` is the
//!   sans-IO loop (`start` / `on_model` / `on_tools` / `on_repair` → `Step`); its pinned
//!   ledger takes each message as it arrives; it compacts its window before a request would
//!   fill the model's context window, logging the folded turns. **Invariant:** budgets (turns,
//!   tool calls, tokens, the subagent's cost cap) are reserved before a call: a call whose
//!   input estimate and answer could pass one, or that would be the last turn, is not sent as
//!   it is — the subagent is asked once to hand off in what is left, its answer's limit lowered
//!   to fit, then stopped, and nothing is sent when not even a short handoff fits; every tool call gets a result message, even one that was not run; no request
//!   goes out over the model's window — when compaction cannot bring it under, the loop ends
//!   with the reason.
//! - `handoff` — the contract: [`Handoff`], the markdown form (`handoff::markdown`), the JSON
//!   form (`handoff::json`), [`ViolationCode`]s with their [`Layer`] (`handoff::codes`, a wire
//!   format), and [`validate`] (`handoff::validate`: resolution against [`Files`] —
//!   [`WorkspaceFiles`] caches at most [`FILE_CACHE_BYTES`] of text —, observation
//!   against an [`ObservationLog`], quotation — also under a whole-file citation, and only
//!   against what was shown), [`repair_prompt`]; `handoff::unsupported` says what a claim
//!   states (quotes, symbols) that given lines do not hold (the offline verifier's test).
//!   **Invariant:** parsing and validating never panic and stay bounded
//!   ([`MAX_HANDOFF_BYTES`], JSON nesting 128); every violation is returned at once with its
//!   line, tied to its conclusion where it has one; a backticked quote is checked against
//!   the text its conclusion's sources show, whatever form the file citation takes (lines, or
//!   the whole file), and the lines a cited `call:ID` showed; a quote resting only on sources
//!   that keep no text (an empty search, a listing, a URL, a document, a record) is
//!   `quote_unchecked`; a finding citing an empty search is `negative_unmarked`; a quote is
//!   byte-exact within a line (only one spanning lines may join them with a space); a
//!   source in brackets inside a claim's text is `source_in_claim`. A claim's prose beyond its
//!   quotes and symbols is not checked.
//! - `source` — [`SourceId`] and its grammar (file — any name, in a quoted form when it holds
//!   a separator —, line range, URL, `doc:ID#span`, `event:ID`, `KIND:ID` records such as
//!   `call:sa1.3`); `source::observation`: the [`ObservationLog`] of what a subagent's tools
//!   showed it, one typed [`Observation`] per kind a tool can show (whole lines, the part of a
//!   cut line, a listing, a search with its flags, a document span, a URL, a record).
//!   **Invariant:** a source written and read back is the same source; a citation is observed
//!   only by an observation of its own kind.
//! - `checkpoint` (public) — the durable run: [`checkpoint::RunEvent`]s in an append-only,
//!   digest-chained log ([`checkpoint::EventStore`]: [`checkpoint::SqliteStore`] in WAL mode
//!   with `synchronous=FULL` and one group-commit writer thread behind a bounded queue,
//!   [`checkpoint::MemoryStore`] for tests), effect states with one table of legal transitions
//!   (`checkpoint::effect`), the projection to a [`checkpoint::Checkpoint`] (pure, or one event
//!   at a time with [`checkpoint::Projector`]; stored, it leaves out read-only calls that
//!   ended, keeping every unresolved effect and every one not to be repeated) and its `Delta`,
//!   the brief. Many processes
//!   share one store: every write takes the write lock up front (an immediate transaction)
//!   and retries on BUSY for up to 30 s; a run's head is read under the lock and must be where
//!   this process left it; a run is claimed by a file lock while a process runs or resumes it
//!   ([`checkpoint::RunClaim`]). Opening a store to write runs SQLite's `quick_check` and
//!   every run's digest chain on an existing file first, read-only, and refuses a damaged one; reading commands open it
//!   read-only (as an unchanging file when no WAL is beside it, so they create nothing and read
//!   a state on read-only media); every payload is scrubbed of the process's secrets
//!   (`redact::scrub`) before it is sealed. **Invariant:** no append is acknowledged before it is durable;
//!   an append refused for its run fails that run's later appends in the process and no other
//!   run's; a run whose append
//!   failed takes no more appends from the process; every read re-checks the chain and the
//!   run's head; a checkpoint is rebuilt
//!   from events only and an invalid one is never used; `outcome_unknown` never becomes
//!   `failed` without a reconciling observation; read-only opens create nothing.
//! - `compaction` (public) — a subagent window's compaction: occupancy trigger and
//!   tool-result clearing, keeping the items of results that cannot be reread
//!   (`compaction::clear`), the pinned ledger — whole sentences, classified as each turn
//!   arrives and retired when a later turn settles them, plus an optional small model's answer
//!   kept only where verbatim (`compaction::ledger`), irreducible items, the floor and the
//!   compact / split / refuse decision made before any summarising (`compaction::floor`), safe
//!   cut and split points (`compaction::cut`), the [`compaction::Summariser`] seam and the
//!   extractive one (`compaction::summary`), survival checks against facts taken from the raw
//!   window (`compaction::survival`), and [`compaction::Compactor`] tying them together (used
//!   by `AgentLoop` before every model request and by `baton compact`), linear in the window.
//!   **Invariant:** pins are verbatim and byte-identical across compactions, constraints never
//!   retire; no cut separates a tool call from its result, no split an error from its fix; a
//!   summary is never built from an earlier summary; a result is under the window or refused;
//!   a failed check leaves the window unchanged; what is not compacted comes back unchanged,
//!   with its index (`Compacted::kept`).
//! - `context` (public) — role profiles ([`context::RoleProfile`], `contracts/roles/*.toml`,
//!   `--roles DIR`; a profile may name any tool the run has, checked when it starts), the pure compiler [`context::compile`] from (checkpoint, delta, role,
//!   budget, tokenizer) to a [`context::Compiled`] context with its manifest (or
//!   [`context::compile_selected`] from a selection), relevance selection
//!   (`context::select`: [`context::ContextIndex`] follows the checkpoint one item at a time —
//!   items by path, by word, by subagent — and `select` picks a [`context::Focus`]'s items of
//!   a role's optional fields — by scope and words at most [`context::FIELD_CAP`] a field —,
//!   summing what it leaves out as an order-free [`context::ItemSum`]; mandatory fields are
//!   compiled whole), the floor ([`context::FloorError`]), the [`context::Tokenizer`]
//!   trait (o200k_base by default, counted by `context::bpe` — the embedded vocabulary in one
//!   compact table, tiktoken's counts —; a cache of at most 65,536 counts, by line chunks cut
//!   only where the pre-tokenizer never joins: [`context::line_chunks`]), binding sentences
//!   (`context::constraints`) and orientation on resume (`context::orientation`).
//!   **Invariant:** mandatory fields are never truncated — the
//!   compiler refuses instead; data cannot add a tool or a standing condition (tools come from
//!   the profile, constraints only from the checkpoint's `constraint_stated` events), nor close
//!   the data section or add an entry (`context::escape_data`: inner lines indented, marker
//!   text escaped).
//! - `model` (public) — the [`Model`] trait and its request/response types: a stop reason
//!   (`end`, `tool_use`, `max_tokens`, `refusal`), a typed [`ModelError`] (kind, provider,
//!   status, request id, `retry_after`; `retryable` read by the retry loop), usage with cache
//!   reads and writes, per-request max_tokens, temperature and tool choice, and `handoff` (the
//!   answer is a handoff: a provider asks for the contract's JSON form). `model::anthropic`
//!   ([`model::AnthropicModel`]: the Messages API, SSE streaming, a forced `submit_handoff`
//!   tool, cache breakpoints on the stable prefix) and `model::openai` ([`model::OpenAiModel`]:
//!   chat completions and the compatible servers' dialects, each fallback taken once, remembered
//!   and announced through `Model::take_config_change`) speak the wire formats over
//!   `model::http` (reqwest with rustls/ring; connect, request and idle-stream timeouts; the
//!   retry loop with backoff, jitter and `retry-after`; the shared [`model::Limiter`]; the
//!   `Endpoint` both providers are; provider-safe tool-call ids; no redirects) and
//!   `model::sse` (the server-sent-events parser, each byte scanned once); `model::price` holds the known models' prices and
//!   context windows, the `--prices` TOML table and the run's [`model::CostMeter`] (a call's
//!   estimate reserved before it is sent, settled after); `model::secret` the redacting
//!   [`model::ApiKey`] (every common encoding of the key; each key registers with `redact`,
//!   and the providers redact errors, request ids and the model's text — not its tool calls,
//!   which run as written and are scrubbed where logged; a key under 8 characters is taken out
//!   of errors only; a usage that does not read as one is estimated; a validation failure is
//!   never retried, whatever its status); `model::spec` parses `--model` and connects ([`model::connect`]).
//!   `model::offline` is the
//!   deterministic local explorer ([`OfflineModel`]), each turn a pure function of the
//!   transcript: `terms` (question → identifiers, compounds, literals, stems, abbreviations,
//!   examples), `survey` (count greps → line-based rarity of each term, files to read), `rank`
//!   (definitions, scoring hit lines, block ends), `follow` (callers of what was found),
//!   `conclude` (claims citing only lines it read, their quotes only bytes of those lines —
//!   a composed label loses its backticks; negative evidence); the words a question asks with
//!   (`terms::is_asking`: defining, locating, using, calling) and a kind noun beside an
//!   identifier or after `which`/`what` are never terms, a stem keeps both spellings of `-y`
//!   and `-ies`, a backticked token is an identifier, and without grep it settles nothing and
//!   says why; a term is
//!   mentioned only where a word or an identifier part starts (`terms::mention_pattern`); as a verifier it reads
//!   the doubted claims from its context's data section and confirms one only when the reread
//!   lines hold its quotes and symbols. **Invariant:** it cites nothing its own tool calls did
//!   not show it, and settles no location when too little of the question occurs. `model::scripted` ([`ScriptedModel`]) plays a script for tests. Nothing
//!   outside `model` knows a wire format. **Invariant:** no call is sent whose estimate could
//!   take the run past its cost limit; an API key appears in no output, log or state; a
//!   fallback is taken only on an error naming the unsupported field (or an empty stream),
//!   never to hide another error.
//! - `redact` — the process's secrets and their redaction in every common encoding (as
//!   written, either case, URL-encoded once or twice, JSON-escaped, hex, base64): [`model::scrub`] is what the event
//!   log's payloads, stdout, stderr and traces pass through. It imports nothing of the crate.
//! - `tools` — the [`Tool`] trait (a tool declares whether it only reads: `Tool::read_only`,
//!   false unless it says so; and what a call would touch: `Tool::consequences`, undeclared
//!   unless it says), [`ToolRegistry`] (`execute`, the only way a tool runs, passes the gate
//!   first: a denied call does not run and comes back as an error carrying its [`Denial`]),
//!   [`Workspace`] (the sandbox, carrying the run's [`Policy`]: it opens no file and walks no
//!   entry a constraint forbids, judged where the file really lies) and the
//!   read-only workspace tools list_dir, glob, grep, read_file (a glob's consequence is a
//!   search of its literal leading directories). **Invariant:** every path is
//!   resolved inside the root; `..` above it, absolute paths and symlinks leading out are
//!   refused; only regular files are read ([`open_regular_file`]: typed, then opened
//!   non-blocking and typed again), within a byte cap; an ignore file that is not a regular
//!   file of at most 1 MiB is never read — its directory is left out of the walk, counted as
//!   not searched and named in the report — and `.git/info/exclude` is never looked for;
//!   binary files are skipped; hidden entries, ignored ones, links and names no citation could
//!   write are left out and named (`Observation::Searched`'s `not_searched`); a scope reached
//!   through a link is judged and reported where it leads; output is capped and says so; what a tool records as seen is
//!   what it printed; file names are printed in the source grammar's form.
//! - `policy` (public) — typed constraints and the gate. `policy::rules`: [`Rule`]s (read and
//!   write scopes, network hosts, read-only, no programs, tool allow/deny lists, budgets)
//!   from JSON (`policy::rules_from_json`); `policy::english` (with `policy::english::named`,
//!   what an untyped clause names and the typed form that would say it): the same read deterministically
//!   and conservatively from common English phrasings clause by clause
//!   (`policy::parse_constraint`: a clause is typed only when the whole of it has one of a
//!   fixed set of shapes, one with two readings is not, and nothing of a constraint is typed
//!   when it states a condition or an untyped clause of it qualifies the rest; a plain name is
//!   a place only after a preposition of place and when the root holds it; what no rule
//!   covers stays `untyped`, a standing condition reported as not enforced). `policy::gate`: a
//!   call's [`Consequence`]s ([`Effect`] on a resource: a path in normal form —
//!   [`policy::normal_path`] —, a host, a program, or `undeclared`), the [`Policy`] built only
//!   from the checkpoint's constraints (or a log's: `Policy::from_log`, which a resume's
//!   rechecks run under), `Policy::judge` (allow, or a [`Denial`]: the
//!   constraint, its event, its [`Category`], a safe alternative), the per-file check the
//!   sandbox makes and the walk filter, and `Policy::offers_tool` (a tool a tools rule keeps
//!   from the run is not offered to a subagent's model; globs match in any letter case);
//!   `denied_too_often` (the same consequence denied 3
//!   times ends a subagent). [`Budget`], [`Spent`] and [`TimeLimits`], the pure budget
//!   decision; `Policy::cap` lowers a budget to the constraints'. **Invariant:** nothing but a
//!   `constraint_stated` event adds, changes or lifts a rule; a tool that does not declare its
//!   consequences is judged as touching anything.
//! - `report` — [`Report`], [`SubagentSummary`], [`SubagentState`] (`partly_accepted` among
//!   them), [`ReportedConstraint`], [`RunUsage`],
//!   [`ConstraintReport`] and [`Enforcement`] (each constraint: enforced, partly, not
//!   enforced), the denials: the `--json` wire format (fields may be added, never renamed).
//! - `event` — [`Event`], the stream a run emits (progress display, embedding apps).
//! - `telemetry` (public) — tracing: spans for the run, each subagent (its
//!   `subagent_spawned` seq), each model call (its turn) and each tool call (its call id), and
//!   a `logged` event per logged event (seq, kind), so a trace joins the event log;
//!   `telemetry::init` reads `BATON_LOG` (off when unset) and, with the `otlp` feature,
//!   `OTEL_EXPORTER_OTLP_ENDPOINT`.
//! - `contracts` — the texts of `contracts/` compiled in (handoff contract, role system text).
//! - `cli` (binary only) — argument parsing, `explore` / `resume` with the progress display,
//!   `validate`, `runs` / `brief` / `context`, `compact` (kept lines passed through byte for
//!   byte), the `--state` directory (read-only commands and `resume` never create it),
//!   reading input files (`cli::read_input`: regular files only, bounded), bounds on every
//!   number, one-line usage errors, text from runs made terminal-safe and scrubbed of secrets
//!   (`cli::terminal_safe`: control, invisible and bidirectional characters escaped alike),
//!   exit codes (`cli::store_error` for the store's); the progress display holds the running
//!   subagents' lines and the last few ended, and nothing when hidden.
//!
//! # Cross-cutting
//! - Errors: library errors are typed ([`RunError`], [`ToolError`], [`ModelError`]); tool
//!   failures and contract violations are values the model sees as text.
//! - Untrusted data: model output, tool results and file contents never change a tool set, a
//!   budget or a permission: the gate's rules come from `constraint_stated` events only.
//! - Tests run offline: temp-dir fixtures, the offline model, scripted models.

pub mod checkpoint;
pub mod compaction;
pub mod context;
mod contracts;
mod coordinator;
mod digest;
mod event;
mod explorer;
mod fsio;
mod handoff;
mod lead;
pub mod model;
pub mod policy;
mod redact;
mod report;
mod source;
mod subagent;
pub mod telemetry;
pub mod testing;
pub mod text;
pub mod tokens;
mod tools;
pub mod transcript;

pub use checkpoint::{
    delta, project, transition, Checkpoint, Delta, EffectState, EventStore, LoggedEvent, RunEvent,
    RunRow, SqliteStore, StoreError,
};
pub use contracts::RoleId;
pub use coordinator::{connect, Canceller, Coordinator, RunError, RunHandle, Task, EVENTS_BUFFER};
pub use event::Event;
pub use explorer::OfflineModel;
pub use fsio::{open_regular_file, NotRegular};
pub use handoff::{
    parse as parse_handoff, repair_prompt, validate, Check, Conclusion, ConclusionKind,
    FileProblem, FileText, Files, Form, Handoff, HardConstraint, Layer, OpenItem, Parsed,
    Violation, ViolationCode, WorkspaceFiles, FILE_CACHE_BYTES, MAX_HANDOFF_BYTES,
};
pub use lead::merge_handoffs;
pub use model::{Model, ModelError, ModelRequest, ModelResponse, Usage};
pub use policy::{Budget, Category, Consequence, Denial, Effect, Policy, Rule, Spent, TimeLimits};
pub use report::{
    ConstraintReport, Enforcement, HandoffCounts, ModelUsage, Report, ReportedConstraint, RunUsage,
    SubagentState, SubagentSummary,
};
pub use source::{is_invisible, Observation, ObservationLog, Shown, SourceId, SourceParseError};
pub use tokens::estimate_tokens;
pub use tools::{Tool, ToolError, ToolOutput, ToolRegistry, ToolResult, Workspace};
pub use transcript::{Message, ToolCall, ToolSpec};
