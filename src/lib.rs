//! baton — an actor-based subagent coordinator.
//!
//! A lead actor splits a job, spawns isolated subagent actors that each work in their own
//! bounded context window, takes back from each a handoff that must pass a three-section
//! contract (Settled conclusions with sources; Open items; Hard constraints, `none` when there
//! are none), folds what passed into one durable checkpoint, and merges it into one report
//! whose every conclusion can be re-checked line by line.
//!
//! # Bird's-eye view
//!
//! ```text
//! Task ─▶ Coordinator::start ─▶ LeadActor ──plan (shards, role subtasks)──▶ SubagentActor × N
//!                                  ▲                          │ AgentLoop: model ⇄ tools (gate,
//!                                  │                          │ approvals, time limits)
//!                                  │◀── SubagentReport::HandedOff ┘ (text + observation log)
//!                                  │    validate (4 layers, off the actor) → accept | repair | reject
//!                                  ▼
//!          event log (append-only, digest-chained) ─▶ checkpoint ─▶ role-compiled contexts
//!                │                 ▼
//!                │    merge (pure) ─▶ Report (the lead's own handoff)
//!                ▼
//!          RunHandle::events: the durable log, replayed then followed live (the CLI's display)
//! ```
//!
//! # Entry points
//! - Library: [`Coordinator::builder`] → [`CoordinatorBuilder`] (models, tools, roles,
//!   constraints, limits, store, time limits, approver) → [`Coordinator`] (`check`, `start` →
//!   [`RunHandle`], `run`, `resume`, `logged_events`, `brief`); a [`Task`] names its [`Job`]
//!   kind and source (explore a tree, or a job over the application's own tools) and the
//!   roles and subtasks it fans out; a [`RunHandle`] gives the run's id, its events
//!   ([`EventStream`] of [`LoggedEvent`]s), its requests for approval, its cancellation and its
//!   [`Report`]. The traits an application implements — [`Model`], [`Tool`] (with its
//!   [`ToolContext`]), [`Approver`] — are written with the re-exported
//!   [`async_trait`](macro@async_trait); roles
//!   are [`Role`]s in code or TOML profiles; [`testing`] holds test doubles for users' own
//!   tests. The root re-exports those and the types their signatures name: the [`Handoff`]
//!   contract and [`validate`], the [`Checkpoint`] and its log ([`RunEvent`], [`EventStore`],
//!   [`SqliteStore`]), [`RoleId`], the policy's types, and `serde_json` (`json!`, [`Value`])
//!   and `tokio` — an application needs no dependency of its own to use any of it. The layer
//!   modules marked `pub` ([`checkpoint`], [`compaction`], [`context`], [`model`], [`policy`],
//!   [`telemetry`], [`text`], [`tokens`], [`transcript`]) are the binary's and the tests' way
//!   in; the rest is `pub(crate)`. `examples/` shows each use (embed, custom_tool, custom_role,
//!   custom_model, approval); `tests/examples.rs` runs each and checks its output.
//! - Binary: `src/main.rs` → `cli` (`baton explore ROOT QUESTION`, `baton research CORPUS
//!   QUESTION`, `baton index CORPUS`, `baton validate FILE`,
//!   `baton runs`, `baton brief RUN`, `baton resume RUN`, `baton context RUN --role ROLE`,
//!   `baton compact TRANSCRIPT`).
//!
//! # Layers
//!
//! Bottom up; a module imports only from layers below its own, and no two modules of one layer
//! import each other (`tests/architecture.rs` reads every `crate::` path in `src/` and fails
//! on an import against this order, a cycle, a file over 800 lines, a function over 120 or a
//! file without its `//!` line):
//!
//! | layer | modules |
//! |---|---|
//! | 0 | `redact`, [`text`], [`tokens`], `digest`, `fsio`, `contracts` |
//! | 1 | `source`, [`transcript`], [`telemetry`], `corpus` |
//! | 2 | [`policy`] |
//! | 3 | `tools` |
//! | 4 | `handoff` |
//! | 5 | [`model`] |
//! | 6 | [`compaction`] |
//! | 7 | [`checkpoint`] |
//! | 8 | [`context`] |
//! | 9 | `explorer` |
//! | 10 | `subagent` |
//! | 11 | `report` |
//! | 12 | `lead` |
//! | 13 | `coordinator`, [`testing`] |
//! | 14 | [`server`] |
//! | — | `cli` (the binary: it reaches the library as `baton::`) |
//!
//! Where this differs from the order in the design, on purpose:
//! - `tools` sits below `handoff`: a citation is resolved through the sandbox (`Workspace` and
//!   its policy), and the tools import only `policy`, `source`, `transcript` and `fsio`.
//! - `model` sits below `checkpoint`: the log records a model's configuration
//!   (`ModelConfigured` holds [`model::ModelConfig`]), and a provider needs only the
//!   transcript, the tokenizer's estimate, the text rules, the secrets' redaction, the policy's
//!   [`Spent`] and the markers of a compiled context (where a cache breakpoint goes).
//!   `compaction`, above it, imports nothing of it.
//! - `compaction` sits below `checkpoint`: the log records compaction's decisions
//!   (`WindowCompacted` holds [`compaction::Decision`] and [`compaction::Folded`]).
//! - `explorer` sits above `model`: it implements the [`Model`] trait (it finds a compiled
//!   context's data section by the markers in `contracts`); [`connect`] (in `coordinator`)
//!   builds it or a provider's model.
//! - `report` sits above `subagent`: it is what the lead tells its caller.
//!
//! # Code map
//!
//! ## Layer 0: shared rules, no imports from the crate
//! - `redact` — the process's secrets and their redaction in every common encoding (as
//!   written, either case, URL-encoded once or twice, JSON-escaped, hex, base64):
//!   [`model::scrub`] is what the event log's payloads, stdout, stderr and traces pass
//!   through.
//! - [`text`] — sentences (`text/sentences.rs`: a sentence never ends at an abbreviation; a
//!   wrapped line stays in its sentence) and the binding rule ([`text::binds`]: never, don't,
//!   always, only, must, from now on), the word splitter, the stop list and the conjunctions
//!   of several words (`text/words.rs`; the ledger keeps a list of its own of conversational words too common
//!   to tie a turn to a pin, and the explorer splits code tokens its own way), one-line forms,
//!   fence stripping, a path's lexical normal form and `within`.
//! - [`tokens`] — the [`tokens::Tokenizer`] trait, o200k_base counted by `tokens/bpe.rs` (the
//!   embedded vocabulary in one compact table; tiktoken's counts), the
//!   [`tokens::CachedTokenizer`] (at most [`tokens::TOKEN_CACHE_ENTRIES`] counts, by line
//!   chunks cut only where the pre-tokenizer never joins: [`tokens::line_chunks`]), and the
//!   estimate of about four bytes a token ([`tokens::Estimate`], [`tokens::estimate_tokens`]).
//! - `digest` — hex SHA-256, the one digest the log, the checkpoint and the tools share.
//! - `fsio` — [`open_regular_file`]: a file is opened only when it is a regular file, typed,
//!   opened non-blocking, then typed again (a FIFO or a device is refused, never waited on);
//!   `read_text_file` reads one as text within a byte cap (4 MiB), refusing binary content.
//! - `contracts` — the handoff contract every subagent is given (`contracts/handoff.md`,
//!   compiled in), the verifier's task line, the markers of a compiled context's data and
//!   standing conditions, and [`RoleId`] (built-in roles and users' alike). The other files of
//!   `contracts/` are compiled in where they are read: the role profiles by `context/role.rs`,
//!   `plan.schema.json` by `lead/plan_check.rs`, `handoff.schema.json` by `model/mod.rs`.
//!
//! ## Layer 1
//! - `source` — [`SourceId`] and its grammar (file — any name, in a quoted form when it holds
//!   a separator —, line range, URL, `doc:ID#span`, `event:ID`, `KIND:ID` records such as
//!   `call:sa1.3`); `source/observation.rs`: the [`ObservationLog`] of what a subagent's tools
//!   showed it, one typed [`Observation`] per kind a tool can show (whole lines, the part of a
//!   cut line, a listing, a search with its flags, a document span, a URL, a record), and the
//!   search kind (lines, file names or a corpus's passages: the log writes a glob's pattern as
//!   `glob:PATTERN` and a corpus query as `passages:QUERY`, and only this file reads those
//!   forms). **Invariant:** a source written and read back is the
//!   same source; a citation is observed only by an observation of its own kind.
//! - [`transcript`] — [`Message`] (user, assistant, tool, and `Compacted`: compaction's
//!   summary or ledger, told apart by its kind, not its words), [`ToolCall`], [`ToolSpec`],
//!   the call id grammar (`SUBAGENT.N`), and `transcript/chat.rs`: the OpenAI chat JSONL
//!   format read and written (a compaction's message is recognised there by its opening
//!   mark, as compaction writes it).
//! - `corpus` — the research corpus ([`Corpus`]): `corpus/convert.rs` turns HTML (only
//!   `<main>` when a page has one; navigation, headers, footers, asides, scripts, styles and
//!   hidden elements dropped; a `<meta http-equiv="refresh">` page is a redirect), Markdown
//!   and plain text into blocks (headings, paragraphs, list items, code); `corpus/chunk.rs`
//!   lays a document out as numbered lines and cuts chunks under one heading path of at most
//!   160 words, only between blocks or sentences; `corpus/index.rs` is the tantivy index (a
//!   chunk's path, span, text and headings with the document's name; English stems —
//!   `corpus/stem.rs`, tantivy's `en_stem` stemming each distinct word once —, positions for
//!   phrases in the text, BM25 with headings boosted ×2, a path scope made part of the query;
//!   checksums checked on open); `corpus/manifest.rs` keeps each document's
//!   content digest and its chunks' digests (a changed document's chunks deleted and added
//!   again, an unchanged one only read and digested) and marks the pages search leaves out:
//!   redirects, pages mostly of links (tables of contents), and pages whose chunks are at
//!   least 80% chunks of smaller pages or of a preferred copy (a print-all page, an `index`
//!   copy of a chapter); it walks the folder leaving out, counting and naming hidden entries,
//!   links, special files and names a citation could not write, and counting files that are
//!   not documents. [`Corpus::open`] works on an index directory one process at a time (a
//!   lock file) and rebuilds an index it finds damaged from nothing; a panic of the index
//!   library is an error. A chunk's id is `doc:PATH#Lstart-end`, in lines of the document as
//!   laid out. **Invariant:** a cited span's digest can be recomputed from the document on
//!   disk ([`Corpus::passage_digest`]); [`Corpus`] refuses to show a document whose digest
//!   changed since it was indexed.
//! - [`telemetry`] — tracing: spans for the run, each subagent (its `subagent_spawned` seq),
//!   each model call (its turn) and each tool call (its call id), and a `logged` event per
//!   logged event (seq, kind), so a trace joins the event log; [`telemetry::init`] reads
//!   `BATON_LOG` (off when unset) and, with the `otlp` feature,
//!   `OTEL_EXPORTER_OTLP_ENDPOINT`.
//!
//! ## Layer 2: [`policy`]
//! Typed constraints and the gate. `policy/rules.rs`: [`Rule`]s (read and write scopes,
//! network hosts, read-only, no programs, tool allow/deny lists, budgets) from JSON
//! ([`policy::rules_from_json`]); `policy/english.rs` (with `policy/english/named.rs`): the same read
//! deterministically and conservatively from common English phrasings clause by clause
//! ([`policy::parse_constraint`]: a clause is typed only when the whole of it has one of a
//! fixed set of shapes; what no rule covers stays untyped, a standing condition reported as
//! not enforced); `policy/gate.rs`: a call's [`Consequence`]s ([`Effect`] on a resource: a path
//! in normal form — [`policy::normal_path`] —, a host, a program, or `undeclared`), the
//! [`Policy`] built only from stated constraints ([`policy::ConstraintEntry`], with its
//! [`Enforcement`]), `Policy::judge` (allow, or a [`Denial`]: the constraint, its event, its
//! [`Category`], a safe alternative), the per-file check the sandbox makes, the walk filter,
//! and `Policy::offers_tool` (one `keeps_out` serves the judge and the offer). [`Budget`],
//! [`Spent`] and [`TimeLimits`] (model call, tool call, and how long a request for approval
//! stands), the pure budget decision; `Policy::cap` lowers a budget to the constraints'.
//! `policy/approval.rs`: [`ApprovalRequest`] (the exact object: tool, arguments and their
//! digest — the intent —, consequences, reason, expiry), [`Approval`] (what the application
//! says), [`ApprovalDecision`] (granted, denied, expired, withdrawn, as logged),
//! [`ApprovalError`], the [`Approver`] trait, and the pure decision of whether a call needs
//! approval (the tool says so; its role reserves one of its effects; a call of the same
//! intent with effects had an unknown outcome). **Invariant:** nothing but a
//! `constraint_stated` event adds, changes or lifts a rule, and nothing but the application's
//! decision grants an approval; a tool that does not declare its consequences is judged as
//! touching anything; the same consequence denied 3 times ends a subagent.
//!
//! ## Layer 3: `tools`
//! The async [`Tool`] trait (a tool declares whether it only reads — `Tool::read_only`, false
//! unless it says so —, what a call would touch — `Tool::consequences`, undeclared unless it
//! says —, and whether a call needs approval — `Tool::needs_approval`; `Tool::call` gets the
//! arguments and a [`ToolContext`] — `tools/context.rs`: run, subagent, call id, the
//! workspace when the job has one, the time limit, a [`Cancellation`] settled once, ended or
//! cancelled) — the application's tools and the built-in ones alike
//! (the built-ins are synchronous file work run on a blocking slot); [`ToolOutput`] carries
//! the observations a call made, stamped with its call id by the registry (a record's, a
//! URL's or a document's text kept up to [`MAX_OBSERVED_TEXT`] bytes, its digest always;
//! output cut at
//! [`MAX_TOOL_OUTPUT`]); [`ToolRegistry`] (`execute`, the only way a tool runs, passes the
//! gate first: a denied call does not run and comes back as an error carrying its [`Denial`]),
//! `tools/workspace.rs`: [`Workspace`] (the sandbox, carrying the run's [`Policy`]: it opens
//! no file and walks no entry a constraint forbids, judged where the file really lies), and
//! `tools/fs.rs`: the read-only workspace tools list_dir, glob, grep, read_file;
//! `tools/corpus.rs`: the corpus tools [`CorpusSearch`] (`search`: ranked chunk ids, headings,
//! snippets, and how many chunks hold each word; the documents the run forbids reading left
//! out and counted; logged as a search with its matches) and
//! [`CorpusRead`] (`read`: a chunk, a span, or the chunks around one; each whole chunk shown
//! logged as a document span with its text and digest);
//! `tools/walk.rs`: the walk they share (what it leaves out is named);
//! `tools::run_blocking` runs tool calls and validations in at most four blocking slots a
//! core, giving a slot back when its work passes its time limit. **Invariant:** every path is
//! resolved inside the root; `..` above it, absolute paths and symlinks leading out are
//! refused; only regular files are read, within a byte cap; an ignore file that is not a
//! regular file of at most 1 MiB is never read (its directory is left out of the walk, counted
//! as not searched and named in the report); binary files are skipped; hidden entries, ignored
//! ones, links and names no citation could write are left out and named; output is capped and
//! says so; what a tool records as seen is what it printed.
//!
//! ## Layer 4: `handoff`
//! The contract: [`Handoff`], the markdown form (`handoff/markdown.rs`), the JSON form
//! (`handoff/json.rs`), [`ViolationCode`]s with their [`Layer`] (`handoff/codes.rs`, a wire
//! format), `handoff/files.rs`: where cited files are read ([`Files`], [`FileText`];
//! [`WorkspaceFiles`] caches at most [`FILE_CACHE_BYTES`] of text, and refuses every file
//! citation of a job with no workspace), and [`validate`] (`handoff/validate.rs`: resolution,
//! observation against an [`ObservationLog`], quotation against what was shown — a file's
//! lines, or a record's text as its tool returned it), [`repair_prompt`].
//! **Invariant:** parsing and validating never panic and stay bounded
//! ([`MAX_HANDOFF_BYTES`], JSON nesting 128); every violation is returned at once with its
//! line, tied to its conclusion where it has one; a backticked quote is checked against the
//! text its conclusion's sources show (lines, a whole file, the lines a cited `call:ID`
//! showed, the text a tool showed of a cited record `kind:ID`, URL or document); a quote
//! resting only on sources that keep no
//! text is `quote_unchecked`; a finding
//! citing only searches must be marked negative evidence; a quote is byte-exact within a line;
//! a source in brackets inside a claim's text is `source_in_claim`. A claim's prose beyond its
//! quotes and symbols is not checked.
//!
//! ## Layer 5: [`model`]
//! The [`Model`] trait and its request/response types: a stop reason, a typed [`ModelError`]
//! (kind, provider, status, request id, `retry_after`), usage with cache reads and writes,
//! per-request max_tokens, temperature and tool choice, and `handoff` (the answer is a
//! handoff: a provider asks for the contract's JSON form). `model/anthropic.rs` (the Messages
//! API, SSE streaming, a forced `submit_handoff` tool, cache breakpoints on the stable prefix)
//! and `model/openai.rs` (chat completions and the compatible servers' dialects, each fallback
//! taken once, remembered and announced) speak the wire formats over `model/http.rs` (reqwest
//! with rustls/ring; connect, request and idle-stream timeouts; the retry loop with backoff,
//! jitter and `retry-after`; no redirects), `model/error_body.rs` (an error answer's message
//! and kind), `model/sse.rs` and the shared [`model::Limiter`] (`model/limiter.rs`); `model/price.rs` holds the
//! known models' prices and windows, the `--prices` table and the run's [`model::CostMeter`]
//! (a call's estimate reserved before it is sent, settled after); `model/secret.rs` the
//! redacting [`model::ApiKey`]; `model/spec.rs` parses `--model` and builds a provider's model
//! ([`model::connect_provider`]); `model/scripted.rs` is the scripted model of
//! [`testing`]. Nothing outside `model` knows a provider's wire format (the chat JSONL users
//! bring and take is `transcript`'s; the OpenAI provider writes its messages with it). **Invariant:** no call is sent
//! whose estimate could take the run past its cost limit; an API key appears in no output,
//! log or state; a fallback is taken only on an error naming the unsupported field (or an
//! empty stream), never to hide another error.
//!
//! ## Layer 6: [`compaction`]
//! A subagent window's compaction: occupancy trigger and tool-result clearing, keeping the
//! items of results that cannot be reread (`compaction/clear.rs`); the pinned ledger — whole
//! sentences classified by a rule pass as each turn arrives, retired when a later turn settles
//! them (`compaction/ledger.rs`; the turns it flags — a soft cue no rule pinned — go to a
//! ledger model when one is set, and `Ledger::observe_model_answer` keeps its answer only where
//! it is verbatim: it can add pins, never retire one); a summary model's narrative checked
//! against the skeleton code took from the template — open items, constraints, irreducible
//! facts, effect states, no outcome or permission the template lacks — and refused otherwise
//! (`compaction/narrative.rs`); irreducible items, the floor and the
//! compact / split / refuse decision made before any summarising (`compaction/floor.rs`); safe
//! cut and split points (`compaction/cut.rs`); the [`compaction::Summariser`] seam and the
//! extractive one (`compaction/summary.rs`); survival checks against facts taken from the raw
//! window (`compaction/survival.rs`); and [`compaction::Compactor`] tying them together
//! (`compaction/compact.rs`, used by the agent loop before every model request and by `baton
//! compact`), linear in the window. **Invariant:** pins are verbatim and byte-identical across
//! compactions, constraints never retire; no cut separates a tool call from its result, no
//! split an error from its fix; a summary is never built from an earlier summary; a result is
//! under the window or refused; a failed check leaves the window unchanged; what is not
//! compacted comes back unchanged, with its index.
//!
//! ## Layer 7: [`checkpoint`]
//! The durable run. `checkpoint/event.rs`: [`RunEvent`] and [`LoggedEvent`] (the event-log
//! wire format: each kind's JSON is in `contracts/events.md` and
//! `contracts/event.schema.json`; fields may be added, never renamed; the digest chain is
//! `sha256(prev "\n" run "\n" seq "\n" at_ms "\n" payload)`); `checkpoint/manifest.rs`: what a
//! compiled context held, as the log records it; `checkpoint/effect.rs`: effect states with
//! one table of legal transitions; `checkpoint/projection.rs`: the projection to a
//! [`Checkpoint`] (pure, or one event at a time with [`checkpoint::Projector`]; its JSON is
//! `contracts/checkpoint.schema.json`; stored, it leaves out read-only calls that ended) and
//! its [`Delta`]; `checkpoint/branch.rs`: branches — a fork keeps its parent's events up to
//! a sequence number, as they were, and names the parent, the event and its digest, followed
//! by every constraint and withdrawal the parent logged later; a merge keeps once what both
//! branches' semantic states agree on (settled conclusions on the same sources read alike,
//! constraints) and makes each conflict — and each effect left unresolved — an open item naming
//! the branches, never choosing by recency and never dropping a constraint or a withdrawal; `checkpoint/forget.rs`: withdrawn sources — the tombstone kept (id, digest,
//! classification, reason, the decisions it influenced), the conclusions citing one turned
//! into open items that name it and never its text, its evidence in the projection reduced to
//! identity and digest, shown everywhere as "content unavailable"; `checkpoint/brief.rs`: the
//! brief; `checkpoint/audit.rs`: the fidelity
//! audit ([`checkpoint::audit`]), pure — per compaction the pins it had to carry again (its
//! predecessor's, less those a later turn settled) and the tokens saved, each settled conclusion traced to the observations it rests on, per
//! resume the stored checkpoint against its events' projection and the calls run again, the
//! denials by consequence; `checkpoint/log.rs`: a run's
//! [`checkpoint::RunLog`]; `checkpoint/feed.rs`: a run's stream — the `Feed` the lead
//! publishes each durable event to, and the [`EventStream`] a reader follows: it joins the
//! feed when made, reads from the store what was published before (a page at a time, each
//! page chained), then what was published since, skipping nothing and nothing twice — what
//! its queue had no room for once the run was cancelled (released: it then waits for no
//! reader) it reads from the store;
//! `checkpoint/store.rs`: the [`EventStore`] trait (`events_after` pages through a log), sealing and
//! verifying the chain, the in-memory store of [`testing`] (also the log of a run started
//! without a store), [`StoreError`] (reads, writes and a poisoned lock apart) and
//! [`checkpoint::RunClaim`]; `checkpoint/lock.rs`: a run's claim, an exclusive lock on a
//! file beside the database that a claim waits out for a moment while a reader looks whether
//! the run is held ([`SqliteStore::held`]); `checkpoint/sqlite.rs`: the
//! [`SqliteStore`] (WAL, `synchronous=FULL`, a bounded queue whose backlog an async appender
//! waits below) and `checkpoint/writer.rs` its one group-commit writer thread (immediate
//! transactions, retried on BUSY for up to 30 s, a run's head read under the lock). Opening a
//! store to write runs `quick_check` and every run's digest chain first, read-only; reading
//! commands open it read-only (as an unchanging file when no WAL is beside it); every payload
//! is scrubbed of the process's secrets before it is sealed. **Invariant:** no append is
//! acknowledged before it is durable; an append refused for its run fails that run's later
//! appends in the process and no other run's; every read of a run's whole log re-checks the
//! chain and the run's head, and a page read (`events_after`) each event's digest and its link
//! to the event before it; a checkpoint is rebuilt from events only and an invalid one is never used;
//! `outcome_unknown` never becomes `failed` without a reconciling observation; read-only opens
//! create nothing; a reader of a run's stream is given only durable events, each once, in
//! order, and the run waits while a reader is [`EVENTS_BUFFER`] events behind what it
//! published.
//!
//! ## Layer 8: [`context`]
//! Roles (`context/role.rs`: [`context::RoleProfile`] from the built-in
//! `contracts/roles/*.toml` or `--roles DIR`, read from disk and checked when a run starts, or
//! built in code as a [`Role`] — with the limits of its subagents, the effects it reserves for
//! approval, and a model of its own; [`context::Compiled::render`] prints a context as
//! `baton context` does);
//! the compiler [`context::compile`] / [`context::compile_selected`], pure, from (checkpoint,
//! delta, role, budget, tokenizer) to a [`context::Compiled`] context with its manifest;
//! `context/render.rs` renders each field's items as escaped data; `context/select.rs`:
//! [`context::ContextIndex`] follows the checkpoint one item at a time and picks a
//! [`context::Focus`]'s items of a role's optional fields (at most [`context::FIELD_CAP`] a
//! field), summing what it leaves out as an order-free [`context::ItemSum`];
//! `context/orientation.rs`: orientation on resume. **Invariant:** mandatory fields are never
//! truncated — the compiler refuses instead ([`context::FloorError`]); data cannot add a tool
//! or a standing condition (tools come from the profile, constraints only from the
//! checkpoint's `constraint_stated` events), nor close the data section or add an entry
//! (inner lines indented, marker text escaped).
//!
//! ## Layer 9: `explorer`
//! The offline model ([`OfflineModel`]): a deterministic local explorer, each turn a pure
//! function of the request: `explorer/terms.rs` (question → identifiers, compounds, literals,
//! stems, abbreviations, examples), `explorer/survey.rs` (count greps → line-based rarity of
//! each term, files to read), `explorer/rank.rs` (definitions, scoring hit lines, block ends),
//! `explorer/follow.rs` (callers of what was found), `explorer/research.rs` (as a researcher,
//! offered `search` and `read` or one of them: searches its sub-question's words and, alone,
//! the code names it holds (one researcher per shared name), reads the best chunks and the best documents' openings, settles per
//! document its verbatim sentences holding enough of the sub-question's rarer words —
//! weighted by how many chunks hold each, the whole question's other words at half, a number
//! for a "how many"; alone or together, with their neighbours holding a question word (across
//! a code block) —; when a sentence read defines a term by the question's words, searches
//! again in that term and answers in it; else tests the absence with searches that must find
//! nothing and cites them as negative evidence), `explorer/asking.rs` (a research question's
//! words and queries, the things it names, a count asked for, definitions; the search tool's counts and
//! each word's weight by them), `explorer/conclude.rs` (claims citing only
//! lines it read, their quotes only bytes of those lines; negative evidence); as a verifier it reads the doubted claims from its context's data
//! section, rereads each cited range (`read_file`) or passage (`read`) and confirms one only
//! when the reread text holds its quotes and symbols; without
//! grep it settles nothing and says why. **Invariant:** it cites nothing its own tool calls did
//! not show it, and settles no location when too little of the question occurs.
//!
//! ## Layer 10: `subagent`
//! `SubagentActor`, its messages and `SubagentReport` (what it tells its lead through the
//! reporter it is spawned with: it imports nothing of the lead); a tool's output stays with
//! it, the lead gets its digest; every model call and tool call has a time limit.
//! `subagent/batch.rs`: a batch of tool calls — which must wait for the application's
//! approval and why, each waiting call run as its own decision comes and only once granted
//! (its grant reported used as it starts; denied, expired or withdrawn: not run, the model
//! told), a call with effects past its limit leaving its intent unknown for the whole run. The
//! sans-IO `subagent/agent_loop.rs` (`start` / `on_model` / `on_tools` / `on_repair` →
//! `Step`) feeds its pinned ledger each message as it arrives and compacts its window before
//! a request would fill the model's context window, as estimated at about four bytes a token;
//! it queues flagged turns and new summaries for the helper models, which
//! `subagent/helpers.rs` calls off the loop's path (metered, time-limited, a panic caught) and
//! applies as they come back, logging `ledger_classified` and `summary_narrated`.
//! **Invariant:** budgets (turns, tool calls, tokens, the subagent's cost cap) are reserved
//! before a call: a call that could pass one is not sent as it is — the subagent is asked
//! once to hand off in what is left, then stopped; every tool call gets a result message, even
//! one that was not run; when compaction cannot bring a request under the window, the loop
//! ends with the reason.
//!
//! ## Layer 11: `report`
//! [`Report`] ([`Report::to_markdown`], [`Report::to_json`]: what `baton explore` prints),
//! [`SubagentSummary`], [`SubagentState`] (the checkpoint's, shown), [`ReportedConstraint`],
//! [`RunUsage`], [`ModelUsage`], [`ConstraintReport`]: the `--json` wire format (fields may be
//! added, never renamed).
//!
//! ## Layer 12: `lead`
//! `lead/mod.rs`: `LeadMsg`, `RunConfig`, `LeadArgs`; `lead/actor.rs`: the `LeadActor`, which
//! only dispatches each message to a method of its state and then flushes what handling it
//! emitted; `lead/state.rs`: `LeadState`, one of each part of `lead/parts.rs` (`Fleet`:
//! planning and spawning; `Journal`: the log; `Contexts`: what contexts are compiled from;
//! `LeadWork`: the lead model's work; `Outside`: the reply, the span) — the
//! parts hold data grouped by the decision that reads them, and the decisions are
//! `LeadState`'s methods in the file of each decision — with the spawning, ending and
//! second-wave decisions; `lead/questions.rs`: a research question split into sub-questions
//! by its clauses (an opening frame given to each) and by two named things joined by `and`
//! (pure); `lead/reports.rs`: what the lead does with a plan and
//! each subagent report (the events it logs, the handoff check it starts off the actor);
//! `lead/verdict.rs`: accept / repair / reject on a checked handoff (pure) and its event;
//! `lead/journal.rs`: the events of planning, spawning and tools, the acknowledgement watcher
//! (the first failure stops the run and is its result) and the checkpoint pace (at most once
//! a second, never while one is on its way); `lead/plan.rs`: shards by directory balanced by
//! size, and briefs (pure); `lead/merge.rs`: accepted handoffs merged (pure; also public as
//! [`merge_handoffs`]); `lead/absence.rs`: negative evidence from the logged searches ("the
//! whole tree" only when every shard ran the same search over its whole share);
//! `lead/relevance.rs`: the rarity of what was searched (pure); `lead/ranking.rs`: the
//! report's order (pure): findings naming the question's subject (its rarest searched terms
//! a finding holds) first, then source before tests before docs, definitions and code before
//! uses before mentions (code calling two or more searched names ties them: code, not a
//! use), then weight; findings on overlapping lines merged; those naming the subject and
//! scoring at least half the best of the question's own findings answer; the rest are listed
//! as also found, each with its `rank_reason`; `lead/code_lines.rs`: what a cited line is
//! (pure): a comment or code, inside an open test module, the names it calls (searched ones;
//! those worth a follow-up);
//! `lead/waves.rs`: waves — after a wave ends, a pure planner proposes follow-ups from the
//! checkpoint (names the first three answers' claims or cited code use, the calls nearest
//! the quoted line first, two a wave, traced where no subagent searched them; a follow-up's
//! findings answer only with the traced name's definition, or a research follow-up's with its
//! best passage, a verifier's confirmation leaving them the follow-up's), logged as a plan
//! revision, until a wave adds no settled
//! conclusion, the question asks only where something is, the budget
//! (`--max-subagents`, `--max-cost`) or `--max-waves` runs out;
//! `lead/research_follow.rs`: a research run's follow-ups (pure): the terms the passages the
//! first three answers quote name (a flag, a path, an attribute, a call, a snake_case or
//! inner-capital name) that neither the question nor a sub-question asked about, two a wave;
//! `lead/wave_lead.rs`: with `--lead-model`, the lead model plans an exploration's wave from the planner's
//! follow-ups through the plan schema, held to their traced names (each once), those names'
//! paths, the explorer role and their number (the planner's stand when it fails or panics);
//! `lead/start.rs`: the run's start or resume logged, its policy taken, its planning started
//! off the actor; `lead/report.rs`: the report, the end of the run, and the planner's work
//! off the actor (`plan_task`: the tree walked and sharded among explorers, one subtask per
//! other role the task fans out, its own subtasks; evidence digests); `lead/leader.rs`: the
//! lead's own model (`--lead-model`: a JSON plan checked against
//! `contracts/plan.schema.json`, each subtask given one of the run's roles, and the run's
//! handoff, validated like a subagent's); `lead/plan_check.rs` (pure): the tree as the lead
//! model is shown it and its plan checked against the schema, the bound, the tree and the
//! run's roles; `lead/approvals.rs`: the run's requests for
//! approval — asked, listed for the handle, decided, expired, withdrawn when no call can use
//! them, a grant used by one call — rebuilt from the log on resume; `lead/resume.rs`: `restore` reads a log back into
//! what a resume starts from (pure), and `Resumption::prepare` rechecks accepted evidence and
//! empty searches against the tree as it is now (file reads and searches, on a blocking
//! thread); `lead/resume_docs.rs`: a research run's cited passages rechecked against its
//! corpus by their digests (a whole-document citation by every span of it that was read), its
//! empty corpus searches run again; `lead/handle.rs`: the `LeadHandle` callers hold. **Invariant:** every handoff is
//! validated (all four layers, off the actor) before the lead looks at it; only one with no
//! violation is merged (once the repairs are spent, one broken only in some conclusions is
//! partly accepted without them); a subagent that panics or stops without a handoff is
//! recorded as failed and the run still reports; the lead never awaits a subagent; no role may
//! spawn subagents; no report is given as if logged when an append failed; acknowledgements
//! and published events go through bounded channels, so a slow reader slows the run (until
//! it is cancelled) and none is dropped; nothing is logged after `run_finished`; a subagent is
//! offered only its role's tools; a call waiting for approval runs only once the application
//! granted it, and a grant is used once.
//!
//! ## Layer 13: `coordinator`
//! The public [`Coordinator`]; `coordinator/error.rs`: [`RunError`]; `coordinator/builder.rs`:
//! [`CoordinatorBuilder`]; `coordinator/task.rs`: [`Task`] and [`Job`];
//! `coordinator/handle.rs`: [`RunHandle`], [`Canceller`] and [`RunControl`] (cancel, approvals
//! and decisions apart from the handle, for a server); `coordinator/resume.rs`:
//! `Coordinator::resume` (the log read back, rechecked and counted, off the runtime; a
//! research run's corpus brought up to date and its cited passages rechecked);
//! `coordinator/stored.rs`: operations on stored runs — `Coordinator::forget` (the run claimed
//! while its withdrawal is logged), `Coordinator::fork`, `Coordinator::merge` and
//! [`MergeOutcome`]; `coordinator/connect.rs`:
//! [`connect`]; `coordinator/constraints.rs`:
//! the run's constraints checked against the tree (places respelled as the tree spells them,
//! a place it does not hold a warning, a `--constraint` that names a place, a tool or a budget
//! yet types to nothing refused). Bad input is refused before any state is made
//! (`Coordinator::check`: the question, the root, the constraints, and the roles the task
//! names — each must exist and name only the run's tools); the tree, the role files, the lock
//! and the log are read on blocking threads. A run started without a store logs to one in
//! memory that lives as long as its handle.
//!
//! [`testing`] (`src/testing.rs`) gathers the test doubles: the scripted model, the in-memory
//! store, files in memory, and a small tree on disk ([`testing::fixture_tree`]).
//!
//! ## Layer 14: [`server`]
//! `baton serve` and `baton mcp`, a translation of requests to the library that decides
//! nothing the library does not. `server/mod.rs`: [`server::ServerConfig`],
//! [`server::Server`] (the core every surface calls) and [`server::ModelSettings`] (how models
//! are reached: prices, HTTP options, windows; `ModelSettings::coordinator` builds the
//! command line's coordinator and a request's alike); `server/request.rs`: what a client
//! sends and its checks — a body's shape held to its type's schema (a field naming a URL,
//! key, token or price that the type does not declare refused at any depth, an array only
//! where the type declares one), a
//! model only by a spec the server allows, limits in the command line's ranges, a root or
//! corpus only under an allowed root after canonicalisation (`..`, a symlink out, a file
//! refused); `server/problem.rs`: [`server::Problem`], every error as
//! `application/problem+json` with a stable code from [`server::CODES`] (the OpenAPI
//! document's and the README's list); `server/runs.rs`: the runs this process
//! holds (at most `max_runs`, 429 beyond), a tap on each run's log (so no client holds a run
//! back), the views of ended runs and their reports kept while their log has nothing more
//! (the maps bounded), the state of any run of the state (running here or in another process
//! holding its claim, finished, cancelled, interrupted), and the scope of each: a run whose
//! logged root is not under an allowed root is not listed, shown or resumed (403);
//! `server/branches.rs`: fork, merge and forget on stored runs under allowed roots (the
//! library's operations; a run in progress holds its log, so a withdrawal from it is 409);
//! `server/reports.rs`: [`server::save_report`] / [`server::load_report`], a run's report kept
//! under the state (`reports/`) with the sequence number its log ended at, written by whoever
//! ends the run (the command line too); `server/follow.rs`: [`server::Follower`] (a run's
//! events from any point, no gap, no duplicate, ending with the run, or with what an
//! interrupted run logged); `server/http.rs`: the axum routes, Server-Sent Events
//! with `Last-Event-ID`, the bearer token compared in constant time, body caps, a span per
//! request carrying the run's id, path parameters read as problems too, `TCP_NODELAY` on
//! every connection, and `/openapi.json` (`contracts/openapi.json`, compiled in);
//! `server/mcp.rs`: the rmcp tools (`explore`, `research` with
//! `contracts/report.schema.json` as their output schema and progress notifications,
//! `start_explore`, `start_research`, `get_run`, `validate_handoff`, `brief`) over stdio and
//! streamable HTTP, every answer scrubbed of secrets.
//!
//! ## The binary: `cli`
//! Argument parsing, `explore` / `research` / `resume` with the progress display (`cli/progress.rs`, drawn
//! from the run's event stream alone),
//! `index` and the corpus `research` opens under the state directory (`cli/research.rs`),
//! `validate` (`cli/validate.rs`), `serve` and `mcp` (`cli/serve.rs`: flags to a server
//! configuration, `BATON_TOKEN` from the environment, `--roles` refused by `mcp` when a role
//! reserves effects for approval, as no MCP tool decides one; `mcp` waits for the runs it
//! started when its client leaves), a finished run's report kept under the state, `runs` / `brief` (a research run's cited passages read again: stale when they changed) / `context` / `audit` (`cli/runs.rs`; `runs` draws forks under their parents), `forget` / `fork` / `merge` (`cli/stored.rs`), `compact`
//! (`cli/compact.rs`: kept lines passed through byte for byte), the `--state` directory,
//! bounded input reads, one-line usage errors, text from runs made terminal-safe and scrubbed
//! of secrets, and exit codes.
//!
//! # Cross-cutting
//! - Errors: library errors are typed `thiserror` values with a one-line message
//!   ([`RunError`], [`StoreError`], [`ToolError`], [`ModelError`], [`model::ConnectError`],
//!   [`model::SpecError`], [`model::PriceTableError`], [`model::CostLimitError`],
//!   [`policy::RuleError`], [`context::RoleError`]); no public function returns a bare
//!   `String` error. Where the cause is one of the crate's own errors it is kept as the
//!   `source` ([`RunError::Store`], [`RunError::Roles`], [`RunError::Constraint`],
//!   [`model::ConnectError::BaseUrl`]); causes from TOML, SQLite, I/O, serde and the actor
//!   runtime are carried as their message (no public type names another crate's error). Tool failures and contract violations are values the model
//!   sees as text.
//! - Untrusted data: model output, tool results and file contents never change a tool set, a
//!   budget or a permission: the gate's rules come from `constraint_stated` events only.
//! - Tests run offline: temp-dir fixtures, the offline model, [`testing`]'s doubles.

/// A one-line error message as a type of its own, with `From<String>` and `From<&str>`.
macro_rules! message_error {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
        #[error("{0}")]
        pub struct $name(pub String);

        impl From<String> for $name {
            fn from(message: String) -> $name {
                $name(message)
            }
        }

        impl From<&str> for $name {
            fn from(message: &str) -> $name {
                $name(message.to_string())
            }
        }
    };
}

pub mod checkpoint;
pub mod compaction;
pub mod context;
mod contracts;
mod coordinator;
mod corpus;
mod digest;
mod explorer;
mod fsio;
mod handoff;
mod lead;
pub mod model;
pub mod policy;
mod redact;
mod report;
pub mod server;
mod source;
mod subagent;
pub mod telemetry;
pub mod testing;
pub mod text;
pub mod tokens;
mod tools;
pub mod transcript;

/// The `async_trait` attribute the [`Model`], [`Tool`] and [`Approver`] traits are written
/// with: implement them with `#[baton::async_trait]`, no dependency of your own needed.
pub use async_trait::async_trait;
/// JSON values, as tool arguments and outputs carry them (`baton::json!`, `baton::Value`).
pub use serde_json::{self, json, Value};
/// The async runtime baton runs on, for a program that has none of its own:
/// `#[baton::tokio::main(crate = "baton::tokio")]`.
pub use tokio;

pub use checkpoint::{
    delta, project, transition, Checkpoint, Delta, EffectState, EventStore, EventStream,
    LoggedEvent, RunEvent, RunRow, SqliteStore, StoreError, Subtask, EVENTS_BUFFER,
};
pub use context::{Field, Role, RoleProfile};
pub use contracts::RoleId;
pub use coordinator::{
    connect, Canceller, Connector, Coordinator, CoordinatorBuilder, Job, MergeOutcome, RunControl,
    RunError, RunHandle, Task,
};
pub use corpus::{Corpus, CorpusError, IndexStats};
pub use explorer::OfflineModel;
/// For the binary: bounded reads of the files it is given.
#[doc(hidden)]
pub use fsio::{open_regular_file, NotRegular};
pub use handoff::{
    parse as parse_handoff, repair_prompt, validate, Check, Conclusion, ConclusionKind,
    FileProblem, FileText, Files, Form, Handoff, HardConstraint, Layer, OpenItem, Parsed,
    Violation, ViolationCode, WorkspaceFiles, FILE_CACHE_BYTES, MAX_HANDOFF_BYTES,
};
pub use lead::{merge_handoffs, DEFAULT_MAX_WAVES};
pub use model::{Model, ModelError, ModelRequest, ModelResponse, Usage};
pub use policy::{
    Approval, ApprovalDecision, ApprovalError, ApprovalRequest, Approver, Budget, Category,
    Consequence, Denial, Effect, Policy, Rule, Spent, TimeLimits,
};
pub use report::{
    AlsoFound, ConstraintReport, Enforcement, HandoffCounts, ModelUsage, Report,
    ReportedConstraint, RunUsage, SubagentState, SubagentSummary, Wave, SHOWN_CONCLUSIONS,
};
/// For the binary: the characters it escapes in what it prints.
#[doc(hidden)]
pub use source::is_invisible;
pub use source::{
    Observation, ObservationLog, Shown, SourceId, SourceParseError, MAX_OBSERVED_TEXT,
};
pub use tools::{
    Cancellation, CorpusRead, CorpusSearch, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry,
    ToolResult, Workspace, MAX_TOOL_OUTPUT,
};
pub use transcript::{Message, ToolCall, ToolSpec};
