//! What a tool call is given besides its arguments — the run, the subagent and the call it
//! serves, the workspace when the job has one, the policy, its time limit — and its
//! [`Cancellation`], settled once: ended, or cancelled.

use std::sync::Arc;

use super::Workspace;
use crate::policy::Policy;

/// What a tool call is given besides its arguments: the run, the subagent and the call it
/// serves, the workspace when the job has one, its time limit and its cancellation.
/// ```
/// let context = baton::ToolContext::new("r1", "sa1", "sa1.3")
///     .with_time_limit(std::time::Duration::from_secs(5));
/// assert_eq!((context.run_id(), context.subagent(), context.call_id()), ("r1", "sa1", "sa1.3"));
/// assert!(context.workspace().is_none(), "a job with no workspace");
/// ```
#[derive(Clone)]
pub struct ToolContext {
    run_id: Arc<str>,
    subagent: Arc<str>,
    call_id: String,
    workspace: Option<Workspace>,
    policy: Arc<Policy>,
    time_limit: std::time::Duration,
    cancellation: Cancellation,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("run_id", &self.run_id)
            .field("subagent", &self.subagent)
            .field("call_id", &self.call_id)
            .field("workspace", &self.workspace.as_ref().map(Workspace::root))
            .field("time_limit", &self.time_limit)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context for a call of `run_id`'s subagent `subagent` with id `call_id`: no
    /// workspace, no constraint, the default tool time limit (120 s). A run makes its own;
    /// this is for calling a tool in a test.
    ///
    /// ```
    /// let cx = baton::ToolContext::new("run-1", "sa1", "sa1.1");
    /// assert_eq!(cx.call_id(), "sa1.1");
    /// assert!(cx.workspace().is_none());
    /// ```
    pub fn new(run_id: &str, subagent: &str, call_id: &str) -> ToolContext {
        ToolContext {
            run_id: run_id.into(),
            subagent: subagent.into(),
            call_id: call_id.to_string(),
            workspace: None,
            policy: Arc::new(Policy::default()),
            time_limit: crate::policy::TimeLimits::default().tool_call,
            cancellation: Cancellation::default(),
        }
    }

    /// The same context with a workspace: its policy is the one calls are judged by.
    /// ```
    /// let dir = baton::testing::fixture_tree();
    /// let workspace = baton::Workspace::open(dir.path()).unwrap();
    /// let cx = baton::ToolContext::new("r", "sa1", "sa1.1").with_workspace(workspace);
    /// assert!(cx.workspace().is_some());
    /// ```
    pub fn with_workspace(mut self, workspace: Workspace) -> ToolContext {
        self.policy = Arc::new(workspace.policy().clone());
        self.workspace = Some(workspace);
        self
    }

    /// The same context with another time limit.
    /// ```
    /// use std::time::Duration;
    /// let cx = baton::ToolContext::new("r", "sa1", "sa1.1").with_time_limit(Duration::from_secs(5));
    /// assert_eq!(cx.time_limit(), Duration::from_secs(5));
    /// ```
    pub fn with_time_limit(mut self, limit: std::time::Duration) -> ToolContext {
        self.time_limit = limit;
        self
    }

    /// The same context for another call of the same subagent.
    pub(crate) fn for_call(&self, call_id: &str) -> ToolContext {
        ToolContext {
            call_id: call_id.to_string(),
            cancellation: Cancellation::default(),
            ..self.clone()
        }
    }

    /// The same context under `policy` (no workspace: the policy alone).
    pub(crate) fn with_policy(mut self, policy: Arc<Policy>) -> ToolContext {
        if let Some(workspace) = &self.workspace {
            self.workspace = Some(workspace.under(Arc::clone(&policy)));
        }
        self.policy = policy;
        self
    }

    /// The run.
    /// ```
    /// assert_eq!(baton::ToolContext::new("run-7", "sa1", "sa1.1").run_id(), "run-7");
    /// ```
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The subagent calling.
    /// ```
    /// assert_eq!(baton::ToolContext::new("r", "sa2", "sa2.4").subagent(), "sa2");
    /// ```
    pub fn subagent(&self) -> &str {
        &self.subagent
    }

    /// The call's id (`sa1.3`): what a handoff cites as `call:sa1.3`.
    /// ```
    /// assert_eq!(baton::ToolContext::new("r", "sa2", "sa2.4").call_id(), "sa2.4");
    /// ```
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The job's workspace, when it has one (an explore job's tree; none for a job over the
    /// application's own tools).
    /// ```
    /// // A job over the application's own tools has no tree.
    /// assert!(baton::ToolContext::new("r", "sa1", "sa1.1").workspace().is_none());
    /// ```
    pub fn workspace(&self) -> Option<&Workspace> {
        self.workspace.as_ref()
    }

    /// How long the call may take: past it the call is abandoned, the model is told, and its
    /// effect is `outcome_unknown`.
    /// ```
    /// let cx = baton::ToolContext::new("r", "sa1", "sa1.1");
    /// assert_eq!(cx.time_limit(), baton::TimeLimits::default().tool_call);
    /// ```
    pub fn time_limit(&self) -> std::time::Duration {
        self.time_limit
    }

    /// Cancelled when the call is abandoned — its time limit passed, or its subagent was
    /// stopped (the run cancelled) while it ran — and ended when the call returned: work a tool
    /// started elsewhere can stop here, and its watcher ends either way.
    /// ```
    /// let cx = baton::ToolContext::new("r", "sa1", "sa1.1");
    /// assert!(!cx.cancellation().is_cancelled());
    /// cx.cancellation().cancel();
    /// assert!(cx.cancellation().is_cancelled());
    /// ```
    pub fn cancellation(&self) -> &Cancellation {
        &self.cancellation
    }

    /// The policy calls are judged by.
    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }
}

/// Where a tool call stands, for work it started elsewhere: running, then either ended (it
/// returned) or cancelled (it was abandoned). Settled once.
/// ```
/// let context = baton::ToolContext::new("r1", "sa1", "sa1.1");
/// assert!(!context.cancellation().is_cancelled());
/// ```
#[derive(Clone)]
pub struct Cancellation(Arc<tokio::sync::watch::Sender<u8>>);

/// A call running, ended, or cancelled.
const RUNNING: u8 = 0;
const ENDED: u8 = 1;
const CANCELLED: u8 = 2;

impl Default for Cancellation {
    fn default() -> Cancellation {
        Cancellation(Arc::new(tokio::sync::watch::Sender::new(RUNNING)))
    }
}

impl std::fmt::Debug for Cancellation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Cancellation")
            .field(&self.is_cancelled())
            .finish()
    }
}

impl Cancellation {
    /// Cancels the call, unless it has ended.
    /// ```
    /// let cancellation = baton::Cancellation::default();
    /// cancellation.cancel();
    /// assert!(cancellation.is_cancelled());
    /// ```
    pub fn cancel(&self) {
        self.settle(CANCELLED);
    }

    /// Marks the call ended, unless it was cancelled.
    pub(crate) fn end(&self) {
        self.settle(ENDED);
    }

    fn settle(&self, to: u8) {
        self.0.send_if_modified(|state| {
            let running = *state == RUNNING;
            if running {
                *state = to;
            }
            running
        });
    }

    /// Whether the call was cancelled.
    /// ```
    /// assert!(!baton::Cancellation::default().is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow() == CANCELLED
    }

    /// Waits until the call is cancelled (true) or has ended (false).
    ///
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let cx = baton::ToolContext::new("r", "sa1", "sa1.1");
    /// let watch = cx.cancellation().clone();
    /// let watcher = baton::tokio::spawn(async move { watch.cancelled().await });
    /// cx.cancellation().cancel();
    /// assert!(watcher.await.unwrap());
    /// # });
    /// ```
    pub async fn cancelled(&self) -> bool {
        let mut watching = self.0.subscribe();
        // The sender lives in `self`: the wait ends once the call is settled.
        let settled = watching.wait_for(|state| *state != RUNNING).await;
        settled.is_ok_and(|state| *state == CANCELLED)
    }
}

/// Settles a call's [`Cancellation`] when it is dropped: cancelled, unless the call ended.
pub(super) struct CancelOnDrop(pub(super) Cancellation);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}
