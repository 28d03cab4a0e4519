//! A run in progress, as its caller holds it: its id, its events (the log, replayed then
//! followed live), the approvals it waits for, cancelling it, and its report.

use std::sync::Arc;

use super::RunError;
use crate::checkpoint::{EventStream, Feed};
use crate::lead::{LeadHandle, Oversight};
use crate::policy::{Approval, ApprovalError, ApprovalRequest};
use crate::report::{Report, SubagentSummary};

/// A run in progress.
///
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let coordinator = baton::Coordinator::builder().build();
/// let handle = coordinator
///     .start(baton::Task::explore("where is the retry delay computed?", dir.path()))
///     .await
///     .unwrap();
/// let mut events = handle.events();
/// let mut kinds = Vec::new();
/// while let Some(event) = events.next().await {
///     kinds.push(event.unwrap().event.kind());
/// }
/// assert_eq!(kinds.first(), Some(&"run_started"));
/// assert_eq!(kinds.last(), Some(&"run_finished"));
/// let report = handle.report().await.unwrap();
/// assert_eq!(report.run_id, events.run_id());
/// # });
/// ```
pub struct RunHandle {
    run_id: String,
    lead: LeadHandle,
    join: tokio::task::JoinHandle<()>,
    report: tokio::task::JoinHandle<Result<Report, RunError>>,
    feed: Arc<Feed>,
    oversight: Oversight,
    pub(super) warnings: Vec<String>,
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl RunHandle {
    pub(super) fn new(
        run_id: String,
        lead: LeadHandle,
        join: tokio::task::JoinHandle<()>,
        report: tokio::task::JoinHandle<Result<Report, RunError>>,
        feed: Arc<Feed>,
        oversight: Oversight,
    ) -> RunHandle {
        RunHandle {
            run_id,
            lead,
            join,
            report,
            feed,
            oversight,
            warnings: Vec::new(),
        }
    }

    /// The run's id (what `baton runs` lists and `Coordinator::resume` takes).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder().build()
    ///     .start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let id = handle.run_id().to_string();
    /// assert!(id.starts_with("run-"));
    /// assert_eq!(handle.report().await.unwrap().run_id, id);
    /// # });
    /// ```
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Every event of the run from its first: [`RunHandle::events_from`]`(0)`.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder().build()
    ///     .start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let mut events = handle.events();
    /// let first = events.next().await.unwrap().unwrap();
    /// assert_eq!((first.seq, first.event.kind()), (1, "run_started"));
    /// # });
    /// ```
    pub fn events(&self) -> EventStream {
        self.events_from(0)
    }

    /// Every event of the run after sequence number `after_seq`, each once and in order: those
    /// the log holds first, then each as the run logs it (once it is durable); the stream ends
    /// when the run has. A reader that stops and comes back with the last sequence number it
    /// read misses nothing and reads nothing twice. Bounded: the run waits while a reader is
    /// [`crate::EVENTS_BUFFER`] events behind what it published (a reader that stops reading
    /// holds the run within twice that, and the few events of the step in hand, past the later
    /// of where it joined and where it stopped) — nothing is dropped, and nothing grows without bound. A reader that is dropped is
    /// let go; `report` and `status` wait for a held run, `approve`, `deny` and `cancel` do
    /// not: a cancelled run waits for no reader, and a reader it did not wait for reads what it
    /// missed from the store.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder().build()
    ///     .start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// // Read three events, stop, and come back for the rest.
    /// let mut events = handle.events();
    /// for _ in 0..3 {
    ///     events.next().await.unwrap().unwrap();
    /// }
    /// let last = events.last_seq();
    /// drop(events);
    /// let mut rest = handle.events_from(last);
    /// assert_eq!(rest.next().await.unwrap().unwrap().seq, last + 1);
    /// # });
    /// ```
    pub fn events_from(&self, after_seq: u64) -> EventStream {
        self.feed.reader(after_seq)
    }

    /// Cancels the run: no more subagents start, running ones stop, requests for approval
    /// are withdrawn, the report keeps what was handed off.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use baton::testing::{ScriptedModel, ScriptedTurn};
    /// use baton::{async_trait, json, RunEvent, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Value};
    /// struct Send;
    /// #[async_trait]
    /// impl Tool for Send {
    ///     fn spec(&self) -> ToolSpec {
    ///         ToolSpec { name: "send".into(), description: "Send a mail.".into(),
    ///                    parameters: json!({"type": "object"}) }
    ///     }
    ///     fn needs_approval(&self, _: &Value) -> bool { true }
    ///     async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
    ///         Ok(ToolOutput::new("sent"))
    ///     }
    /// }
    /// let done = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";
    /// let model = ScriptedModel::new([ScriptedTurn::tool("send", json!({})), ScriptedTurn::text(done)]);
    /// let handle = baton::Coordinator::builder()
    ///     .model(Arc::new(model))
    ///     .tool(Send)
    ///     .role(baton::Role::new("mailer").tools(["send"]))
    ///     .build()
    ///     .start(baton::Task::job("mail the team").roles(["mailer"]))
    ///     .await
    ///     .unwrap();
    /// let mut events = handle.events();
    /// while let Some(event) = events.next().await {
    ///     if let RunEvent::ApprovalRequested { .. } = event.unwrap().event {
    ///         handle.cancel();
    ///     }
    /// }
    /// let report = handle.report().await.unwrap();
    /// assert!(report.cancelled);
    /// assert_eq!(report.subagents[0].state, baton::SubagentState::Cancelled);
    /// assert_eq!(report.usage.tool_calls, 0, "the mail was not sent");
    /// # });
    /// ```
    pub fn cancel(&self) {
        self.canceller().cancel();
    }

    /// A cheap handle for cancelling from elsewhere (a Ctrl-C handler).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder().build()
    ///     .start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let canceller = handle.canceller();
    /// baton::tokio::spawn(async move { canceller.cancel() });
    /// assert!(handle.report().await.is_ok());
    /// # });
    /// ```
    pub fn canceller(&self) -> Canceller {
        Canceller {
            feed: Arc::clone(&self.feed),
            lead: self.lead.clone(),
        }
    }

    /// What the run said of its constraints as it started (a place a rule names that the tree
    /// does not hold, a place respelled as the tree spells it, a constraint carried but not
    /// enforced), one line each; the report's Hard constraints say them too.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder()
    ///     .constraint("never read files under vendor/")
    ///     .build()
    ///     .start(baton::Task::explore("where is next_delay?", dir.path()))
    ///     .await
    ///     .unwrap();
    /// assert!(handle.warnings()[0].contains("`vendor` is not in the tree"));
    /// # });
    /// ```
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The subagents as they stand now; `None` once the run is over.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use baton::testing::{ScriptedModel, ScriptedTurn};
    /// use baton::{async_trait, json, RunEvent, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Value};
    /// struct Send;
    /// #[async_trait]
    /// impl Tool for Send {
    ///     fn spec(&self) -> ToolSpec {
    ///         ToolSpec { name: "send".into(), description: "Send a mail.".into(),
    ///                    parameters: json!({"type": "object"}) }
    ///     }
    ///     fn needs_approval(&self, _: &Value) -> bool { true }
    ///     async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
    ///         Ok(ToolOutput::new("sent"))
    ///     }
    /// }
    /// let done = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";
    /// let model = ScriptedModel::new([ScriptedTurn::tool("send", json!({})), ScriptedTurn::text(done)]);
    /// let handle = baton::Coordinator::builder()
    ///     .model(Arc::new(model))
    ///     .tool(Send)
    ///     .role(baton::Role::new("mailer").tools(["send"]))
    ///     .build()
    ///     .start(baton::Task::job("mail the team").roles(["mailer"]))
    ///     .await
    ///     .unwrap();
    /// let mut events = handle.events();
    /// while let Some(event) = events.next().await {
    ///     if let RunEvent::ApprovalRequested { request } = event.unwrap().event {
    ///         // The run waits on the mailer: it is running.
    ///         let now = handle.status().await.unwrap();
    ///         assert_eq!(now.len(), 1);
    ///         assert_eq!(now[0].state, baton::SubagentState::Running);
    ///         handle.deny(&request.id, "not today").await.unwrap();
    ///     }
    /// }
    /// # });
    /// ```
    pub async fn status(&self) -> Option<Vec<SubagentSummary>> {
        self.lead.status().await
    }

    /// The requests for approval the run waits on now, oldest first (also in the event
    /// stream as `approval_requested`).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use baton::testing::{ScriptedModel, ScriptedTurn};
    /// use baton::{async_trait, json, RunEvent, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Value};
    /// struct Send;
    /// #[async_trait]
    /// impl Tool for Send {
    ///     fn spec(&self) -> ToolSpec {
    ///         ToolSpec { name: "send".into(), description: "Send a mail.".into(),
    ///                    parameters: json!({"type": "object"}) }
    ///     }
    ///     fn needs_approval(&self, _: &Value) -> bool { true }
    ///     async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
    ///         Ok(ToolOutput::new("sent"))
    ///     }
    /// }
    /// let done = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";
    /// let model = ScriptedModel::new([ScriptedTurn::tool("send", json!({})), ScriptedTurn::text(done)]);
    /// let handle = baton::Coordinator::builder()
    ///     .model(Arc::new(model))
    ///     .tool(Send)
    ///     .role(baton::Role::new("mailer").tools(["send"]))
    ///     .build()
    ///     .start(baton::Task::job("mail the team").roles(["mailer"]))
    ///     .await
    ///     .unwrap();
    /// let mut events = handle.events();
    /// while let Some(event) = events.next().await {
    ///     if let RunEvent::ApprovalRequested { request } = event.unwrap().event {
    ///         assert_eq!(handle.approvals(), vec![request.clone()]);
    ///         handle.approve(&request.id).await.unwrap();
    ///         assert!(handle.approvals().is_empty());
    ///     }
    /// }
    /// # });
    /// ```
    pub fn approvals(&self) -> Vec<ApprovalRequest> {
        self.control().approvals()
    }

    /// Grants a request: the call it stands for runs, once. Refused when the request is
    /// unknown, decided already, or expired. `Ok` means the grant stands for the run from
    /// now on; the run then logs it (`approval_decided`) — a process killed before that
    /// resumes with the request still waiting, to be decided again.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use baton::testing::{ScriptedModel, ScriptedTurn};
    /// use baton::{async_trait, json, RunEvent, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Value};
    /// struct Send;
    /// #[async_trait]
    /// impl Tool for Send {
    ///     fn spec(&self) -> ToolSpec {
    ///         ToolSpec { name: "send".into(), description: "Send a mail.".into(),
    ///                    parameters: json!({"type": "object"}) }
    ///     }
    ///     fn needs_approval(&self, _: &Value) -> bool { true }
    ///     async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
    ///         Ok(ToolOutput::new("sent"))
    ///     }
    /// }
    /// let done = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";
    /// let model = ScriptedModel::new([ScriptedTurn::tool("send", json!({})), ScriptedTurn::text(done)]);
    /// let handle = baton::Coordinator::builder()
    ///     .model(Arc::new(model))
    ///     .tool(Send)
    ///     .role(baton::Role::new("mailer").tools(["send"]))
    ///     .build()
    ///     .start(baton::Task::job("mail the team").roles(["mailer"]))
    ///     .await
    ///     .unwrap();
    /// let mut events = handle.events();
    /// while let Some(event) = events.next().await {
    ///     if let RunEvent::ApprovalRequested { request } = event.unwrap().event {
    ///         handle.approve(&request.id).await.unwrap();
    ///         // A grant is given once.
    ///         assert!(handle.approve(&request.id).await.is_err());
    ///     }
    /// }
    /// assert_eq!(handle.report().await.unwrap().usage.tool_calls, 1);
    /// # });
    /// ```
    pub async fn approve(&self, id: &str) -> Result<(), ApprovalError> {
        self.decide(id, Approval::Grant)
    }

    /// Denies a request: the call does not run, and its subagent's model is told `reason`.
    /// Logged as a grant is (see [`RunHandle::approve`]).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use baton::testing::{ScriptedModel, ScriptedTurn};
    /// use baton::{async_trait, json, RunEvent, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Value};
    /// struct Send;
    /// #[async_trait]
    /// impl Tool for Send {
    ///     fn spec(&self) -> ToolSpec {
    ///         ToolSpec { name: "send".into(), description: "Send a mail.".into(),
    ///                    parameters: json!({"type": "object"}) }
    ///     }
    ///     fn needs_approval(&self, _: &Value) -> bool { true }
    ///     async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
    ///         Ok(ToolOutput::new("sent"))
    ///     }
    /// }
    /// let done = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";
    /// let model = ScriptedModel::new([ScriptedTurn::tool("send", json!({})), ScriptedTurn::text(done)]);
    /// let handle = baton::Coordinator::builder()
    ///     .model(Arc::new(model))
    ///     .tool(Send)
    ///     .role(baton::Role::new("mailer").tools(["send"]))
    ///     .build()
    ///     .start(baton::Task::job("mail the team").roles(["mailer"]))
    ///     .await
    ///     .unwrap();
    /// let mut events = handle.events();
    /// while let Some(event) = events.next().await {
    ///     if let RunEvent::ApprovalRequested { request } = event.unwrap().event {
    ///         handle.deny(&request.id, "not today").await.unwrap();
    ///     }
    /// }
    /// let report = handle.report().await.unwrap();
    /// assert_eq!(report.subagents[0].state, baton::SubagentState::HandedOff);
    /// # });
    /// ```
    pub async fn deny(&self, id: &str, reason: impl Into<String>) -> Result<(), ApprovalError> {
        self.decide(id, Approval::Deny(reason.into()))
    }

    /// Settles a request — at once, whatever the lead is busy with — then has the lead log it
    /// and tell the call (an expiry found here is logged too).
    fn decide(&self, id: &str, approval: Approval) -> Result<(), ApprovalError> {
        self.control().decide(id, approval)
    }

    /// What a server or another task holds of a running run while this handle waits for its
    /// report: cancelling it, its requests for approval and deciding them (a [`RunControl`],
    /// cloned freely).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder().build()
    ///     .start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let control = handle.control();
    /// assert!(control.approvals().is_empty(), "an exploration asks for none");
    /// let report = handle.report().await.unwrap();
    /// assert!(control.approve("ap-1").await.is_err(), "no such request, and the run is over");
    /// assert!(!report.run_id.is_empty());
    /// # });
    /// ```
    pub fn control(&self) -> RunControl {
        RunControl {
            canceller: self.canceller(),
            lead: self.lead.clone(),
            oversight: self.oversight.clone(),
        }
    }

    /// Waits for the report (an error when the run's log could not be written, or the run
    /// could not run).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder().build()
    ///     .start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let report = handle.report().await.unwrap();
    /// assert!(report.to_markdown().starts_with("## Settled conclusions"));
    /// assert!(report.to_json().unwrap().starts_with("{"));
    /// # });
    /// ```
    pub async fn report(self) -> Result<Report, RunError> {
        let report = match self.report.await {
            Ok(result) => result,
            Err(e) => Err(RunError::Runtime(format!("the run task ended: {e}"))),
        };
        let _ = self.join.await;
        report
    }
}

/// Cancels a run: no more subagents start, running ones stop, the report keeps what was
/// handed off.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let handle = baton::Coordinator::builder().build()
///     .start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
/// // Another thread (a signal handler, say) may hold it.
/// let canceller = handle.canceller();
/// std::thread::spawn(move || canceller.cancel()).join().unwrap();
/// let report = handle.report().await.unwrap();
/// assert_eq!(report.run_id.is_empty(), false);
/// # });
/// ```
#[derive(Clone)]
pub struct Canceller {
    feed: Arc<Feed>,
    lead: LeadHandle,
}

impl std::fmt::Debug for Canceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Canceller").finish_non_exhaustive()
    }
}

impl Canceller {
    /// Cancels the run.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let handle = baton::Coordinator::builder().build()
    ///     .start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// let canceller = handle.canceller();
    /// canceller.cancel();
    /// assert!(handle.report().await.is_ok());
    /// # });
    /// ```
    pub fn cancel(&self) {
        // The run no longer waits for its readers, so the cancellation reaches it.
        self.feed.release();
        self.lead.cancel();
    }
}

/// A running run's controls, apart from its handle ([`RunHandle::control`]): cancel it, list
/// its requests for approval, grant or deny them — the same as the handle's own methods.
#[derive(Clone)]
pub struct RunControl {
    canceller: Canceller,
    lead: LeadHandle,
    oversight: Oversight,
}

impl std::fmt::Debug for RunControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunControl").finish_non_exhaustive()
    }
}

impl RunControl {
    /// Cancels the run ([`Canceller::cancel`]).
    pub fn cancel(&self) {
        self.canceller.cancel();
    }

    /// The requests for approval the run waits on ([`RunHandle::approvals`]).
    pub fn approvals(&self) -> Vec<ApprovalRequest> {
        self.oversight.pending()
    }

    /// Grants a request ([`RunHandle::approve`]).
    pub async fn approve(&self, id: &str) -> Result<(), ApprovalError> {
        self.decide(id, Approval::Grant)
    }

    /// Denies a request ([`RunHandle::deny`]).
    pub async fn deny(&self, id: &str, reason: impl Into<String>) -> Result<(), ApprovalError> {
        self.decide(id, Approval::Deny(reason.into()))
    }

    fn decide(&self, id: &str, approval: Approval) -> Result<(), ApprovalError> {
        let decided = self.oversight.decide(id, approval, "application");
        if matches!(decided, Ok(()) | Err(ApprovalError::Expired(_))) {
            self.lead.settled(id);
        }
        decided
    }
}
