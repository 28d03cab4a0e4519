//! The tool registry: what a model may call, each call normalised to an output plus the
//! observations it made (which files, which lines), recorded in the caller's observation log.

mod fs;
mod walk;
mod workspace;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use crate::fsio::read_text_file;
use crate::policy::{Consequence, Denial, Effect};
use crate::source::Observation;
use crate::transcript::{ToolCall, ToolSpec};
pub(crate) use walk::walk_files;
pub(crate) use workspace::SandboxError;
pub use workspace::Workspace;

/// What a tool gave back on success.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text the model sees.
    pub content: String,
    /// What the call let the caller see, for the observation log.
    pub observations: Vec<Observation>,
}

/// A failed call: a value, not a crash. The message is what the model sees.
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
    pub(crate) fn invalid(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            retryable: false,
            denial: None,
        }
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

/// A tool a model can call. Tools are synchronous; the subagent runs them off the actor.
pub trait Tool: Send + Sync {
    /// The tool's description for the model.
    fn spec(&self) -> ToolSpec;
    /// Whether every call only reads (so it may be run again after a crash). A tool that does
    /// not say so is taken to have effects: its cut-off calls are never repeated.
    fn read_only(&self) -> bool {
        false
    }
    /// What a call with these arguments would touch, for the policy gate, which judges it
    /// before it runs. A tool that does not say is judged as touching anything
    /// ([`Effect::Undeclared`]): under any scope, network or read-only constraint it is
    /// denied. Arguments the tool would refuse may give none (the call then fails as the tool
    /// says).
    fn consequences(&self, arguments: &Value) -> Vec<Consequence> {
        let _ = arguments;
        vec![Consequence {
            effect: Effect::Undeclared,
            resource: self.spec().name,
        }]
    }
    /// Runs one call inside `workspace`.
    fn call(
        &self,
        workspace: &Workspace,
        call_id: &str,
        arguments: &Value,
    ) -> Result<ToolOutput, ToolError>;
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
    // Whichever of "the work ended" and "the caller gave up" comes second settles the count:
    // a call given up on counts as stuck until its work ends.
    let task = tokio::task::spawn_blocking(move || {
        let value = work();
        if flag.swap(true, Ordering::AcqRel) {
            ABANDONED.fetch_sub(1, Ordering::AcqRel);
        }
        value
    });
    let outcome = tokio::time::timeout(limit, task).await;
    drop(slot);
    outcome.map_err(|_| {
        if !abandoned.swap(true, Ordering::AcqRel) {
            ABANDONED.fetch_add(1, Ordering::AcqRel);
        }
        Blocked::PastLimit
    })
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
}

impl Registered {
    fn new(tool: Arc<dyn Tool>) -> Arc<Registered> {
        Arc::new(Registered {
            spec: tool.spec(),
            tool,
        })
    }
}

/// The set of tools one subagent may call.
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

impl ToolRegistry {
    /// The read-only workspace tools: list_dir, glob, grep, read_file.
    pub fn workspace() -> ToolRegistry {
        ToolRegistry::of(vec![
            Registered::new(Arc::new(fs::ListDir)),
            Registered::new(Arc::new(fs::Glob)),
            Registered::new(Arc::new(fs::Grep)),
            Registered::new(Arc::new(fs::ReadFile)),
        ])
    }

    fn of(tools: Vec<Arc<Registered>>) -> ToolRegistry {
        let specs = tools.iter().map(|t| t.spec.clone()).collect();
        ToolRegistry { tools, specs }
    }

    /// The tools of this registry that `names` lists (a role profile's tool set).
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
    pub fn empty() -> ToolRegistry {
        ToolRegistry::of(Vec::new())
    }

    /// Adds a tool, replacing one of the same name.
    pub fn with(mut self, tool: Arc<dyn Tool>) -> ToolRegistry {
        let tool = Registered::new(tool);
        self.tools.retain(|t| t.spec.name != tool.spec.name);
        self.tools.push(tool);
        ToolRegistry::of(self.tools)
    }

    /// The tools' names, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec.name.clone()).collect()
    }

    /// Whether the tool of that name declares it only reads (an unknown name does not).
    pub fn read_only(&self, name: &str) -> bool {
        self.tools
            .iter()
            .any(|t| t.spec.name == name && t.tool.read_only())
    }

    /// Every tool's spec, for a model request.
    pub fn specs(&self) -> Arc<[ToolSpec]> {
        Arc::clone(&self.specs)
    }

    /// Runs one call — the only way any tool runs. It first passes the gate: the call is
    /// normalised to its consequences (`Tool::consequences`) and judged by the workspace's
    /// policy; a denied call does not run and comes back as an error result carrying its
    /// [`Denial`]. An unknown tool or a failed call comes back as an error result, never a
    /// panic or an `Err`.
    pub fn execute(&self, workspace: &Workspace, call: &ToolCall) -> ToolResult {
        let outcome = match self.tools.iter().find(|t| t.spec.name == call.name) {
            // Arguments a model sent that are not a JSON object (a provider keeps text that is
            // not JSON as a string): a tool error the model can fix.
            Some(_) if !call.arguments.is_object() => Err(ToolError::invalid(format!(
                "the arguments are not a JSON object: {}; send an object such as {{\"path\": \"src/lib.rs\"}}",
                excerpt(&call.arguments)
            ))),
            // With no rule in force there is nothing to judge.
            Some(t) if workspace.policy().is_empty() => {
                t.tool.call(workspace, &call.id, &call.arguments)
            }
            Some(t) => {
                let consequences = t.tool.consequences(&call.arguments);
                match workspace
                    .policy()
                    .judge(&call.name, t.tool.read_only(), &consequences)
                {
                    Ok(()) => t.tool.call(workspace, &call.id, &call.arguments),
                    Err(denial) => Err(ToolError {
                        message: denial.message(),
                        retryable: false,
                        denial: Some(denial),
                    }),
                }
            }
            None => Err(ToolError::invalid(format!(
                "no tool named `{}`; the tools are: {}",
                call.name,
                self.names().join(", ")
            ))),
        };
        match outcome {
            Ok(output) => ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: output.content,
                is_error: false,
                observations: output.observations,
                denial: None,
            },
            Err(error) => ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: format!("error: {}", error.message),
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
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Work stuck past its limit gives its slot back: with every slot taken by stuck work,
    /// the next call still runs at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stuck_work_never_holds_a_slot_past_its_limit() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let slots = (4 * cores).max(4);
        let stuck: Vec<_> = (0..slots + 2)
            .map(|_| {
                tokio::spawn(run_blocking(Duration::from_millis(50), true, || {
                    std::thread::sleep(Duration::from_secs(3))
                }))
            })
            .collect();
        // Every stuck call has passed its limit; their threads sleep on for seconds.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let started = Instant::now();
        let quick = run_blocking(Duration::from_secs(10), true, || 42).await;
        assert_eq!(quick.unwrap().unwrap(), 42);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        for handle in stuck {
            assert!(handle.await.unwrap().is_err(), "past its limit");
        }
    }
}
