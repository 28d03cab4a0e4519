//! The tool registry: what a model may call, each call normalised to an output plus the
//! observations it made (which files, which lines), recorded in the caller's observation log.

mod context;
mod corpus;
mod fs;
mod walk;
mod workspace;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use crate::fsio::read_text_file;
use crate::policy::{Consequence, Denial, Effect, Policy};
use crate::source::Observation;
use crate::transcript::{ToolCall, ToolSpec};
use context::CancelOnDrop;
pub use context::{Cancellation, ToolContext};
pub use corpus::{CorpusRead, CorpusSearch};
pub(crate) use walk::walk_files;
pub(crate) use workspace::SandboxError;
pub use workspace::Workspace;

/// What a tool gave back on success.
/// ```
/// let output = baton::ToolOutput::new("[open] login times out")
///     .observed(baton::Observation::record("ticket", "T-12", "[open] login times out"));
/// assert_eq!(output.observations.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text the model sees.
    pub content: String,
    /// What the call let the caller see, for the observation log: a handoff may cite only
    /// what is here (a file's lines, a record `kind:ID`, a URL, a document span).
    pub observations: Vec<Observation>,
}

impl ToolOutput {
    /// Output the model sees, with no observation yet.
    /// ```
    /// let out = baton::ToolOutput::new("3 tickets open");
    /// assert_eq!(out.content, "3 tickets open");
    /// assert!(out.observations.is_empty());
    /// ```
    pub fn new(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            observations: Vec::new(),
        }
    }

    /// The same output with one more observation (e.g. [`Observation::record`]).
    /// ```
    /// use baton::{Observation, ToolOutput};
    /// let out = ToolOutput::new("T-2: [open] the login page times out")
    ///     .observed(Observation::record("ticket", "T-2", "[open] the login page times out"));
    /// assert_eq!(out.observations.len(), 1);
    /// ```
    pub fn observed(mut self, observation: Observation) -> ToolOutput {
        self.observations.push(observation);
        self
    }
}

/// A failed call: a value, not a crash. The message is what the model sees.
/// ```
/// let error = baton::ToolError::new("no such ticket");
/// assert_eq!(error.message, "no such ticket");
/// assert!(!error.retryable);
/// assert!(baton::ToolError::retryable("busy").retryable);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// One line the model can act on.
    pub message: String,
    /// Whether calling again unchanged could succeed.
    pub retryable: bool,
    /// Set when the sandbox refused a file a constraint forbids (the gate's own refusals
    /// never reach the tool).
    pub denial: Option<Box<Denial>>,
}

impl ToolError {
    /// A failed call the model is told of: one line it can act on, not worth repeating
    /// unchanged.
    /// ```
    /// let error = baton::ToolError::new("no ticket `T-9`");
    /// assert_eq!(error.to_string(), "no ticket `T-9`");
    /// assert!(!error.retryable);
    /// ```
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            retryable: false,
            denial: None,
        }
    }

    /// A failed call that may succeed if made again unchanged (a busy service).
    /// ```
    /// assert!(baton::ToolError::retryable("the ticket service is busy").retryable);
    /// ```
    pub fn retryable(message: impl Into<String>) -> ToolError {
        ToolError {
            retryable: true,
            ..ToolError::new(message)
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> ToolError {
        ToolError::new(message)
    }
}

impl From<SandboxError> for ToolError {
    fn from(error: SandboxError) -> ToolError {
        let message = error.to_string();
        ToolError {
            message,
            retryable: false,
            denial: match error {
                SandboxError::Denied(denial) => Some(denial),
                _ => None,
            },
        }
    }
}

/// The result of one call as it goes back to the model and into the log.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = baton::ToolRegistry::empty();
/// let call = baton::ToolCall { id: "sa1.1".into(), name: "nope".into(), arguments: baton::json!({}) };
/// let result = registry.execute(&call, &baton::ToolContext::new("r", "sa1", "sa1.1")).await;
/// assert!(result.is_error && result.content.contains("no tool named `nope`"));
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool that was called.
    pub name: String,
    /// Output text, or the error message.
    pub content: String,
    /// True when the call failed.
    pub is_error: bool,
    /// What the call showed the caller.
    #[serde(default)]
    pub observations: Vec<Observation>,
    /// Set when a constraint denied the call: it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denial: Option<Box<Denial>>,
}

/// A tool a model can call: the application's own, or one of the built-in workspace tools —
/// they implement the same trait. Every call passes the policy gate first, judged by the
/// consequences the tool declares; what it returns carries the observations it made, so a
/// handoff citing them is checked like a citation of a file's lines.
///
/// ```
/// use baton::{async_trait, json, Observation, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Value};
///
/// /// Looks a ticket up in the application's own store.
/// struct Tickets;
///
/// #[async_trait]
/// impl Tool for Tickets {
///     fn spec(&self) -> ToolSpec {
///         ToolSpec {
///             name: "ticket".into(),
///             description: "The ticket of an id (T-1, T-2, ...)".into(),
///             parameters: json!({"type": "object", "required": ["id"],
///                                "properties": {"id": {"type": "string"}}}),
///         }
///     }
///     fn read_only(&self) -> bool {
///         true
///     }
///     fn consequences(&self, _arguments: &Value) -> Vec<baton::Consequence> {
///         Vec::new() // it touches nothing the gate governs
///     }
///     async fn call(&self, arguments: &Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         let id = arguments["id"].as_str().ok_or_else(|| ToolError::new("give an `id`"))?;
///         let text = format!("{id}: the login page times out");
///         Ok(ToolOutput::new(text.clone()).observed(Observation::record("ticket", id, &text)))
///     }
/// }
/// # let out = baton::tokio::runtime::Runtime::new().unwrap().block_on(
/// #     Tickets.call(&json!({"id": "T-1"}), &ToolContext::new("r", "sa1", "sa1.1"))).unwrap();
/// # assert!(out.content.contains("times out"));
/// ```
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The tool's name, description and JSON Schema of its arguments, for the model.
    fn spec(&self) -> ToolSpec;
    /// Whether every call only reads (so it may be run again after a crash). A tool that does
    /// not say so is taken to have effects: its cut-off calls are never repeated, and a call
    /// whose outcome is unknown is not made again with the same arguments without the
    /// application's approval.
    fn read_only(&self) -> bool {
        false
    }
    /// What a call with these arguments would touch, for the policy gate, which judges it
    /// before it runs. A tool that does not say is judged as touching anything
    /// ([`Effect::Undeclared`]): under any scope, network or read-only constraint it is
    /// denied. Arguments the tool would refuse may give none (the call then fails as the tool
    /// says); a tool touching nothing the gate governs (an in-memory store) gives none.
    fn consequences(&self, arguments: &Value) -> Vec<Consequence> {
        let _ = arguments;
        vec![Consequence {
            effect: Effect::Undeclared,
            resource: self.spec().name,
        }]
    }
    /// Whether a call with these arguments waits for the application's approval before it
    /// runs (the run logs the request; `RunHandle::approve` or the builder's approver
    /// decides). Default: no.
    fn needs_approval(&self, arguments: &Value) -> bool {
        let _ = arguments;
        false
    }
    /// Runs one call, on a task of its own. Past the context's time limit the call is
    /// abandoned (its task aborted, its cancellation set) and its effect is unknown — on a
    /// multi-thread runtime also when it blocks its thread (that thread stays taken until it
    /// returns; on a current-thread runtime nothing runs meanwhile): put blocking work in
    /// `tokio::task::spawn_blocking`.
    async fn call(&self, arguments: &Value, context: &ToolContext)
        -> Result<ToolOutput, ToolError>;
}

/// One of the built-in workspace tools: synchronous file work, run on a blocking thread.
pub(crate) trait WorkspaceTool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    fn consequences(&self, arguments: &Value) -> Vec<Consequence>;
    fn call(
        &self,
        workspace: &Workspace,
        call_id: &str,
        arguments: &Value,
    ) -> Result<ToolOutput, ToolError>;
}

/// A built-in workspace tool as a [`Tool`]: read-only, needing the job's workspace, its work
/// on a blocking slot ([`run_blocking`]).
struct Blocking(Arc<dyn WorkspaceTool>);

#[async_trait::async_trait]
impl Tool for Blocking {
    fn spec(&self) -> ToolSpec {
        self.0.spec()
    }

    fn read_only(&self) -> bool {
        true
    }

    fn consequences(&self, arguments: &Value) -> Vec<Consequence> {
        self.0.consequences(arguments)
    }

    async fn call(&self, arguments: &Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        blocking_call(&self.0, arguments, cx).await.0
    }
}

/// Runs `work` on tokio's blocking pool in a slot — at most four per core in the process, so a
/// fan-out of thousands of subagents does not start thousands of threads — and waits for it
/// at most `limit` from when it got its slot. The slot is given back when the work ends or
/// the limit passes, whichever is first: work stuck past its limit (a hung file system) runs
/// on in its thread, its result dropped, and never holds a slot others wait for.
/// With `refusable`, the work is not started when too many earlier calls are stuck (a tool
/// call: the model is told); without, it always runs (a validation: a verdict must come).
pub(crate) async fn run_blocking<T: Send + 'static>(
    limit: std::time::Duration,
    refusable: bool,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<Result<T, tokio::task::JoinError>, Blocked> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    /// Work past its limit still running in its thread.
    static ABANDONED: AtomicUsize = AtomicUsize::new(0);
    if refusable && ABANDONED.load(Ordering::Relaxed) >= MAX_ABANDONED {
        return Err(Blocked::TooManyStuck);
    }
    let slot = blocking_slot().await;
    let abandoned = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&abandoned);
    /// The caller's side: gone — past the limit, or dropped by a caller that stopped
    /// waiting — before the work ended, the work counts as stuck until it ends.
    struct Waiting(Arc<AtomicBool>);
    impl Drop for Waiting {
        fn drop(&mut self) {
            if !self.0.swap(true, Ordering::AcqRel) {
                ABANDONED.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
    // Whichever of "the work ended" and "the caller gave up" comes second settles the count:
    // a call given up on counts as stuck until its work ends.
    let task = tokio::task::spawn_blocking(move || {
        let value = work();
        if flag.swap(true, Ordering::AcqRel) {
            ABANDONED.fetch_sub(1, Ordering::AcqRel);
        }
        value
    });
    let waiting = Waiting(abandoned);
    let outcome = tokio::time::timeout(limit, task).await;
    drop(slot);
    drop(waiting);
    outcome.map_err(|_| Blocked::PastLimit)
}

/// Most calls left running past their limit before new blocking work is refused: threads
/// stuck in a hung file system never fill the blocking pool the run's own writes need.
const MAX_ABANDONED: usize = 64;

/// Why blocking work gave no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// It ran past its limit (its thread may run on).
    PastLimit,
    /// Too many earlier calls are still stuck past theirs: it was not started.
    TooManyStuck,
}

/// A slot for blocking work; see [`run_blocking`].
async fn blocking_slot() -> Option<tokio::sync::OwnedSemaphorePermit> {
    static SLOTS: std::sync::OnceLock<Arc<tokio::sync::Semaphore>> = std::sync::OnceLock::new();
    let slots = SLOTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Arc::new(tokio::sync::Semaphore::new((4 * cores).max(4)))
    });
    // The semaphore is never closed, so acquiring cannot fail; were it to, the work runs
    // without a slot.
    Arc::clone(slots).acquire_owned().await.ok()
}

/// A tool and its spec, taken once when it is registered.
struct Registered {
    spec: ToolSpec,
    tool: Arc<dyn Tool>,
    /// The synchronous form of a built-in workspace tool (resume reruns searches with it).
    blocking: Option<Arc<dyn WorkspaceTool>>,
}

impl Registered {
    fn new(tool: Arc<dyn Tool>) -> Arc<Registered> {
        Arc::new(Registered {
            spec: tool.spec(),
            tool,
            blocking: None,
        })
    }

    fn built_in(tool: Arc<dyn WorkspaceTool>) -> Arc<Registered> {
        Arc::new(Registered {
            spec: tool.spec(),
            tool: Arc::new(Blocking(Arc::clone(&tool))),
            blocking: Some(tool),
        })
    }
}

/// Most bytes of a tool's output the model is shown; the rest is cut, and the output says so.
pub const MAX_TOOL_OUTPUT: usize = 256 * 1024;

/// The set of tools one subagent may call.
/// ```
/// let registry = baton::ToolRegistry::workspace();
/// assert!(registry.names().contains(&"read_file".to_string()));
/// assert!(registry.read_only("grep"));
/// assert!(baton::ToolRegistry::empty().names().is_empty());
/// ```
#[derive(Clone)]
pub struct ToolRegistry {
    tools: Vec<Arc<Registered>>,
    /// The specs, shared by every request of every subagent given this registry.
    specs: Arc<[ToolSpec]>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// A call the gate let through: the tool to run, and what the call would touch.
pub(crate) struct Admitted<'a> {
    tool: &'a Registered,
    /// Its consequences, as the tool declared them.
    pub(crate) consequences: Vec<Consequence>,
}

impl Admitted<'_> {
    /// Whether the tool declares the call needs the application's approval.
    pub(crate) fn needs_approval(&self, arguments: &Value) -> bool {
        self.tool.tool.needs_approval(arguments)
    }

    /// Whether the tool declares it only reads.
    pub(crate) fn read_only(&self) -> bool {
        self.tool.tool.read_only()
    }
}

impl ToolRegistry {
    /// The read-only workspace tools: list_dir, glob, grep, read_file.
    /// ```
    /// assert_eq!(baton::ToolRegistry::workspace().names(), ["list_dir", "glob", "grep", "read_file"]);
    /// ```
    pub fn workspace() -> ToolRegistry {
        ToolRegistry::of(vec![
            Registered::built_in(Arc::new(fs::ListDir)),
            Registered::built_in(Arc::new(fs::Glob)),
            Registered::built_in(Arc::new(fs::Grep)),
            Registered::built_in(Arc::new(fs::ReadFile)),
        ])
    }

    fn of(tools: Vec<Arc<Registered>>) -> ToolRegistry {
        let specs = tools.iter().map(|t| t.spec.clone()).collect();
        ToolRegistry { tools, specs }
    }

    /// The tools of this registry that `names` lists (a role profile's tool set).
    /// ```
    /// let only = baton::ToolRegistry::workspace().only(&["grep".to_string()]);
    /// assert_eq!(only.names(), ["grep"]);
    /// ```
    pub fn only(&self, names: &[String]) -> ToolRegistry {
        if self.tools.iter().all(|t| names.contains(&t.spec.name)) {
            return self.clone();
        }
        ToolRegistry::of(
            self.tools
                .iter()
                .filter(|t| names.contains(&t.spec.name))
                .cloned()
                .collect(),
        )
    }

    /// An empty registry.
    /// ```
    /// assert!(baton::ToolRegistry::empty().names().is_empty());
    /// ```
    pub fn empty() -> ToolRegistry {
        ToolRegistry::of(Vec::new())
    }

    /// Adds a tool, replacing one of the same name.
    /// ```
    /// use std::sync::Arc;
    /// use baton::{async_trait, json, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolSpec, Value};
    /// struct Now;
    /// #[async_trait]
    /// impl Tool for Now {
    ///     fn spec(&self) -> ToolSpec {
    ///         ToolSpec { name: "now".into(), description: "The time.".into(), parameters: json!({"type": "object"}) }
    ///     }
    ///     async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
    ///         Ok(ToolOutput::new("noon"))
    ///     }
    /// }
    /// let tools = ToolRegistry::empty().with(Arc::new(Now)).with(Arc::new(Now));
    /// assert_eq!(tools.names(), ["now"], "one of a name");
    /// ```
    pub fn with(mut self, tool: Arc<dyn Tool>) -> ToolRegistry {
        let tool = Registered::new(tool);
        self.tools.retain(|t| t.spec.name != tool.spec.name);
        self.tools.push(tool);
        ToolRegistry::of(self.tools)
    }

    /// The tools' names, in registration order.
    /// ```
    /// assert_eq!(baton::ToolRegistry::workspace().names()[0], "list_dir");
    /// ```
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec.name.clone()).collect()
    }

    /// Whether the tool of that name declares it only reads (an unknown name does not).
    /// ```
    /// let tools = baton::ToolRegistry::workspace();
    /// assert!(tools.read_only("grep"));
    /// assert!(!tools.read_only("rm"));
    /// ```
    pub fn read_only(&self, name: &str) -> bool {
        self.tools
            .iter()
            .any(|t| t.spec.name == name && t.tool.read_only())
    }

    /// Every tool's spec, for a model request.
    /// ```
    /// let specs = baton::ToolRegistry::workspace().specs();
    /// assert!(specs.iter().any(|s| s.name == "read_file" && s.parameters["type"] == "object"));
    /// ```
    pub fn specs(&self) -> Arc<[ToolSpec]> {
        Arc::clone(&self.specs)
    }

    /// The gate, before a call runs: the tool is known, its arguments are a JSON object, and
    /// the policy allows its consequences — or the error result the model gets instead (a
    /// denied call carries its [`Denial`]).
    pub(crate) fn admit(
        &self,
        call: &ToolCall,
        policy: &Policy,
    ) -> Result<Admitted<'_>, ToolError> {
        let Some(t) = self.tools.iter().find(|t| t.spec.name == call.name) else {
            return Err(ToolError::invalid(format!(
                "no tool named `{}`; the tools are: {}",
                call.name,
                self.names().join(", ")
            )));
        };
        // Arguments a model sent that are not a JSON object (a provider keeps text that is
        // not JSON as a string): a tool error the model can fix.
        if !call.arguments.is_object() {
            return Err(ToolError::invalid(format!(
                "the arguments are not a JSON object: {}; send an object such as {{\"path\": \"src/lib.rs\"}}",
                excerpt(&call.arguments)
            )));
        }
        let consequences = t.tool.consequences(&call.arguments);
        // With no rule in force there is nothing to judge.
        if !policy.is_empty() {
            policy
                .judge(&call.name, t.tool.read_only(), &consequences)
                .map_err(|denial| ToolError {
                    message: denial.message(),
                    retryable: false,
                    denial: Some(denial),
                })?;
        }
        Ok(Admitted {
            tool: t,
            consequences,
        })
    }

    /// Runs one call — the only way any tool runs. It first passes the gate: the call is
    /// normalised to its consequences (`Tool::consequences`) and judged by the context's
    /// policy; a denied call does not run and comes back as an error result carrying its
    /// [`Denial`]. An unknown tool or a failed call comes back as an error result, never a
    /// panic or an `Err`. What the tool observed is stamped with the call's id; its output is
    /// cut at [`MAX_TOOL_OUTPUT`] bytes.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use baton::{json, ToolCall, ToolContext, ToolRegistry, Workspace};
    /// let dir = baton::testing::fixture_tree();
    /// let cx = ToolContext::new("r", "sa1", "sa1.1").with_workspace(Workspace::open(dir.path()).unwrap());
    /// let call = ToolCall { id: "sa1.1".into(), name: "read_file".into(), arguments: json!({"path": "src/net/retry.rs"}) };
    /// let result = ToolRegistry::workspace().execute(&call, &cx).await;
    /// assert!(!result.is_error && result.content.contains("next_delay"));
    /// let unknown = ToolCall { name: "rm".into(), ..call };
    /// assert!(ToolRegistry::workspace().execute(&unknown, &cx).await.is_error);
    /// # });
    /// ```
    pub async fn execute(&self, call: &ToolCall, context: &ToolContext) -> ToolResult {
        let outcome = match self.admit(call, context.policy()) {
            Ok(admitted) => admitted.tool.tool.call(&call.arguments, context).await,
            Err(refused) => Err(refused),
        };
        finish(call, outcome)
    }

    /// A call as a subagent makes it: [`ToolRegistry::admit`], then
    /// [`ToolRegistry::run_admitted`] (a refused call's cancellation is ended).
    #[cfg(test)]
    pub(crate) async fn execute_within(
        &self,
        call: &ToolCall,
        context: &ToolContext,
    ) -> (ToolResult, bool) {
        match self.admit(call, context.policy()) {
            Err(refused) => {
                context.cancellation().end();
                (refused_result(call, refused), false)
            }
            Ok(admitted) => self.run_admitted(&admitted, call, context).await,
        }
    }

    /// Runs a call the gate admitted ([`ToolRegistry::admit`]) within its context's time
    /// limit, as a subagent does: past it the call is abandoned — its cancellation set, its
    /// future dropped — and comes back as a tool error the model sees, the second value true
    /// (its effect is then unknown). A built-in tool's limit runs from when its call gets a
    /// blocking slot, not while it waits for one. The call's cancellation is settled either
    /// way: ended, or cancelled (also when this future is dropped, the subagent stopped).
    pub(crate) async fn run_admitted(
        &self,
        admitted: &Admitted<'_>,
        call: &ToolCall,
        context: &ToolContext,
    ) -> (ToolResult, bool) {
        let settled = CancelOnDrop(context.cancellation().clone());
        let limit = context.time_limit();
        let (outcome, timed_out) = match &admitted.tool.blocking {
            Some(tool) => blocking_call(tool, &call.arguments, context).await,
            None => own_call(&admitted.tool.tool, &call.arguments, context, limit).await,
        };
        if timed_out {
            settled.0.cancel();
        } else {
            settled.0.end();
        }
        (finish(call, outcome), timed_out)
    }
}

/// The result of a call the gate refused (no such tool, arguments that are not an object, a
/// constraint's denial): what the model is shown; the call did not run.
pub(crate) fn refused_result(call: &ToolCall, refused: ToolError) -> ToolResult {
    finish(call, Err(refused))
}

/// An application's tool's call, on its own task: its limit holds even when the call blocks
/// its thread (the task is abandoned at the limit, aborted when this future is dropped). A
/// panic in it is this future's panic, as if the call had run here.
async fn own_call(
    tool: &Arc<dyn Tool>,
    arguments: &Value,
    context: &ToolContext,
    limit: std::time::Duration,
) -> (Result<ToolOutput, ToolError>, bool) {
    let (tool, arguments, cx) = (Arc::clone(tool), arguments.clone(), context.clone());
    let task = tokio::spawn(async move { tool.call(&arguments, &cx).await });
    let _abort = AbortOnDrop(task.abort_handle());
    match tokio::time::timeout(limit, task).await {
        Ok(Ok(outcome)) => (outcome, false),
        Ok(Err(join)) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
        Ok(Err(_)) => (
            Err(ToolError::new(
                "the call was stopped before it returned; whether it took effect is unknown",
            )),
            true,
        ),
        Err(_) => (Err(past_limit(limit)), true),
    }
}

/// Aborts a task when dropped (a no-op once it has ended).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl ToolRegistry {
    /// Runs a built-in workspace tool's call on this thread (blocking), through the same
    /// gate: how a resume reruns a search. Any other tool is an error result.
    pub(crate) fn execute_blocking(&self, call: &ToolCall, workspace: &Workspace) -> ToolResult {
        let outcome = self.admit(call, workspace.policy()).and_then(|admitted| {
            match &admitted.tool.blocking {
                Some(tool) => tool.call(workspace, &call.id, &call.arguments),
                None => Err(ToolError::invalid(format!(
                    "`{}` cannot be run here",
                    call.name
                ))),
            }
        });
        finish(call, outcome)
    }
}

/// A built-in tool's call on a blocking slot, its time limit counted from when it got it;
/// whether it ran past it.
async fn blocking_call(
    tool: &Arc<dyn WorkspaceTool>,
    arguments: &Value,
    context: &ToolContext,
) -> (Result<ToolOutput, ToolError>, bool) {
    let Some(workspace) = context.workspace().cloned() else {
        return (
            Err(ToolError::new(format!(
                "`{}` works on files, and this job has no workspace",
                tool.spec().name
            ))),
            false,
        );
    };
    let limit = context.time_limit();
    let (tool, id, arguments) = (
        Arc::clone(tool),
        context.call_id().to_string(),
        arguments.clone(),
    );
    match run_blocking(limit, true, move || tool.call(&workspace, &id, &arguments)).await {
        Ok(Ok(outcome)) => (outcome, false),
        Ok(Err(panicked)) => std::panic::resume_unwind(panicked.into_panic()),
        Err(Blocked::TooManyStuck) => (Err(ToolError::new(
            "too many earlier tool calls are stuck past their time limit (a hung file system?); this call was not run",
        )), false),
        Err(Blocked::PastLimit) => (Err(past_limit(limit)), true),
    }
}

/// What the model is told of a call abandoned at its time limit.
fn past_limit(limit: std::time::Duration) -> ToolError {
    ToolError::new(format!(
        "the tool ran past its {} s limit; whether it took effect is unknown; narrow the call (a smaller path, a more specific pattern)",
        limit.as_secs_f64()
    ))
}

/// A call's outcome as its result: observations stamped with the call and bounded, the
/// output cut to [`MAX_TOOL_OUTPUT`], an error's denial naming the tool.
fn finish(call: &ToolCall, outcome: Result<ToolOutput, ToolError>) -> ToolResult {
    match outcome {
        Ok(output) => ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: capped(output.content),
            is_error: false,
            observations: output
                .observations
                .into_iter()
                .map(|o| o.made_by(&call.id).bounded())
                .collect(),
            denial: None,
        },
        Err(error) => ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: capped(format!("error: {}", error.message)),
            is_error: true,
            observations: Vec::new(),
            // The sandbox does not know which tool asked.
            denial: error.denial.map(|mut d| {
                d.tool = call.name.clone();
                d
            }),
        },
    }
}

/// A tool's output within [`MAX_TOOL_OUTPUT`] bytes, cut at a character boundary with a note.
fn capped(mut content: String) -> String {
    if content.len() <= MAX_TOOL_OUTPUT {
        return content;
    }
    let mut at = MAX_TOOL_OUTPUT;
    while !content.is_char_boundary(at) {
        at -= 1;
    }
    let left = content.len() - at;
    content.truncate(at);
    content.push_str(&format!("\n[output cut: {left} more bytes not shown]"));
    content
}

/// At most 200 characters of a value, as JSON text.
fn excerpt(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() {
        format!("`{cut}…`")
    } else {
        format!("`{cut}`")
    }
}

#[cfg(test)]
mod tests;
