//! One subagent actor: it owns its context window (an [`AgentLoop`]), performs the loop's
//! steps — model calls and tool runs — outside its message handler, and reports to the lead.
//!
//! # Guarantees
//! - A subagent sees only its own brief and its own tool results, never another's transcript.
//! - Model calls and tool runs never run inside `handle`: they are spawned and their results
//!   come back as messages, so `Cancel` is handled at once.
//! - A panic in a model call or a tool run fails the actor (the lead sees `ActorFailed`).
//! - It reports through the [`Reporter`] it was spawned with, in its own [`SubagentReport`]
//!   type: it knows nothing of the lead's messages.
//! - It hands off by `HandedOff` and waits for the lead's verdict: a `Repair` sends it back to
//!   work with the violations quoted; acceptance or rejection ends in a stop from the lead.
//!   When it cannot go on it reports `Failed` and waits to be stopped.
//! - A tool's output stays with the subagent: the lead is sent its digest and observations.
//! - Every tool call it makes goes through its [`ToolRegistry`] inside its [`Workspace`].

mod agent_loop;
mod batch;
mod helpers;

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::JoinHandle;
use tracing::Instrument;

pub(crate) use agent_loop::{AgentLoop, CompactionNote, Step, ANSWER_TOKENS};
use batch::Returned;
pub(crate) use batch::{ApprovalAsk, Decided, Oversee};
pub(crate) use helpers::HelperModels;

use crate::digest::sha256_hex;
use crate::handoff::Violation;
use crate::model::{CostMeter, Model, ModelConfig, ModelError, ModelResponse};
use crate::policy::{Budget, Spent, TimeLimits};
use crate::source::{Observation, ObservationLog};
use crate::tools::{ToolContext, ToolRegistry};

use crate::transcript::ToolCall;

/// What the subagent actor is told.
pub(crate) enum SubagentMsg {
    /// Take the next step of the loop.
    Step(Step),
    /// The model answered.
    ModelReplied(Result<ModelResponse, ModelError>),
    /// The tools ran (each with whether it ran past its time limit, or why it did not run).
    ToolsReturned(Vec<Returned>),
    /// The application decided a request for approval a call of this subagent waits on.
    ApprovalDecided { call_id: String, decided: Decided },
    /// Spawned work panicked.
    WorkPanicked(String),
    /// The lead found these violations in the handoff: repair it.
    Repair(Vec<Violation>),
    /// A helper model answered (or failed).
    Helped(Box<helpers::Helped>),
}

/// What a subagent tells its lead.
pub(crate) enum SubagentReport {
    /// Its model answered: its running totals, and why the model stopped.
    ModelReturned {
        spent: Spent,
        stop: crate::model::StopReason,
    },
    /// Its model's configuration changed (a fallback taken): the lead logs it.
    ModelConfigured { config: ModelConfig },
    /// These tool calls start now (`executing`), wait for the application's approval
    /// (`awaiting_approval`: `asks` says why), or are not made (`proposed`: an earlier call of
    /// their intent has an unknown outcome). With `durable`, the lead answers on it once what
    /// it logged of them is durable (a call with effects runs only then); dropped unanswered,
    /// the calls are not made.
    ToolCalls {
        calls: Vec<ToolCall>,
        state: crate::checkpoint::EffectState,
        asks: Vec<ApprovalAsk>,
        durable: Option<Durable>,
    },
    /// A call the application approved starts now: its grant is used. It runs once the lead
    /// answers on `durable` (the grant's use is durable), and not at all if it is dropped.
    GrantUsed {
        call_id: String,
        approval_id: String,
        durable: Durable,
    },
    /// Its window was compacted (or compaction was refused).
    WindowCompacted { note: CompactionNote },
    /// A helper model answered: what the log records of it (`ledger_classified`,
    /// `summary_narrated`).
    Helped { event: crate::checkpoint::RunEvent },
    /// Its tool calls returned.
    ToolsFinished { returned: Vec<ToolReturn> },
    /// It handed off this text; it waits for the verdict.
    HandedOff {
        text: String,
        observations: ObservationLog,
        spent: Spent,
    },
    /// It cannot go on.
    Failed {
        reason: String,
        observations: ObservationLog,
        spent: Spent,
    },
}

/// A tool call's return as the lead logs it: the digest of what the model was shown and what
/// it observed, not the text itself.
#[derive(Debug, Clone)]
pub(crate) struct ToolReturn {
    pub(crate) call_id: String,
    pub(crate) is_error: bool,
    /// It ran past its time limit: whether it took effect is unknown.
    pub(crate) timed_out: bool,
    pub(crate) content_digest: String,
    pub(crate) observations: Vec<Observation>,
    /// Set when a constraint denied the call.
    pub(crate) denial: Option<Box<crate::policy::Denial>>,
    /// Set when it did not run for want of approval: the state its effect ends in.
    pub(crate) refused: Option<crate::checkpoint::EffectState>,
}

impl ToolReturn {
    fn of(returned: &Returned) -> ToolReturn {
        let result = &returned.result;
        ToolReturn {
            call_id: result.call_id.clone(),
            is_error: result.is_error,
            timed_out: returned.timed_out,
            content_digest: sha256_hex(result.content.as_bytes()),
            observations: result.observations.clone(),
            denial: result.denial.clone(),
            refused: returned.refused,
        }
    }
}

/// Answered once what the lead logged of a report is durable.
pub(crate) type Durable = tokio::sync::oneshot::Sender<()>;

/// Where a subagent's reports go (the lead wraps them in its own message).
pub(crate) type Reporter = Arc<dyn Fn(SubagentReport) + Send + Sync>;

/// What a subagent is spawned with.
pub(crate) struct SubagentArgs {
    pub(crate) id: String,
    pub(crate) system: String,
    pub(crate) brief: String,
    pub(crate) budget: Budget,
    /// Set for a subagent restarted by a resume.
    pub(crate) orientation: Option<crate::context::Orientation>,
    /// Consequences denied to its earlier attempts (a resume): they count toward the bound.
    pub(crate) denied: Vec<crate::policy::Consequence>,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) tools: ToolRegistry,
    /// What its tool calls are given: the run, itself, the workspace if the job has one,
    /// the policy and the tool time limit.
    pub(crate) tool_context: ToolContext,
    /// What it checks before a call runs: its role, the effects the role reserves for
    /// approval, the run's intents whose outcome is unknown.
    pub(crate) oversee: Oversee,
    pub(crate) report: Reporter,
    pub(crate) limits: TimeLimits,
    /// The run's cost meter: every call reserves its estimate first.
    pub(crate) cost: Arc<CostMeter>,
    /// Most its own calls may cost, in millionths of a dollar.
    pub(crate) cost_cap: Option<u64>,
    /// Its run.
    pub(crate) run_id: String,
    /// The run's readers: a model call waits while one holds the run.
    pub(crate) feed: Option<Arc<crate::checkpoint::Feed>>,
    /// Its span (a child of the run's, carrying its `subagent_spawned` seq): its model and
    /// tool calls are spans under it.
    pub(crate) span: tracing::Span,
    /// The helper models of its window.
    pub(crate) helpers: HelperModels,
}

pub(crate) struct SubagentRun {
    id: String,
    agent: AgentLoop,
    model: Arc<dyn Model>,
    tools: ToolRegistry,
    tool_context: ToolContext,
    oversee: Oversee,
    /// Calls of the batch in flight waiting for approval: where each one's decision goes.
    waiting: std::collections::HashMap<String, tokio::sync::oneshot::Sender<Decided>>,
    report: Reporter,
    limits: TimeLimits,
    cost: Arc<CostMeter>,
    work: Option<Work>,
    finished: bool,
    run_id: String,
    feed: Option<Arc<crate::checkpoint::Feed>>,
    span: tracing::Span,
    helpers: HelperModels,
    /// The helper calls in flight (aborted when the subagent stops).
    helper_tasks: Vec<JoinHandle<()>>,
}

pub(crate) struct SubagentActor;

/// Runs `work` on the runtime; its value comes back as a message, a panic as `WorkPanicked`.
fn spawn_work<T, F>(myself: &ActorRef<SubagentMsg>, work: F, into_msg: fn(T) -> SubagentMsg) -> Work
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + Send + 'static,
{
    let me = myself.clone();
    // One task: the work, its panic caught where it is polled.
    let task = tokio::spawn(async move {
        let msg = match CatchPanic(Box::pin(work)).await {
            Ok(value) => into_msg(value),
            Err(text) => SubagentMsg::WorkPanicked(text),
        };
        let _ = me.cast(msg);
    });
    Work { task }
}

/// A future whose panic while polling becomes `Err` with the panic's message.
pub(crate) struct CatchPanic<F>(pub(crate) std::pin::Pin<Box<F>>);

impl<F: std::future::Future> std::future::Future for CatchPanic<F> {
    type Output = Result<F::Output, String>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(std::task::Poll::Ready(value)) => std::task::Poll::Ready(Ok(value)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(payload) => std::task::Poll::Ready(Err(payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string()))),
        }
    }
}

/// Work in flight: the task doing it, which reports it back.
pub(crate) struct Work {
    task: JoinHandle<()>,
}

impl Work {
    fn abort(&self) {
        self.task.abort();
    }
}

impl SubagentRun {
    fn progress(&self) -> Spent {
        self.agent.spent()
    }

    fn perform(&mut self, myself: &ActorRef<SubagentMsg>, step: Step) {
        for note in self.agent.take_compactions() {
            (self.report)(SubagentReport::WindowCompacted { note });
        }
        let asks = self.agent.take_asks();
        if !asks.is_empty() {
            self.helper_tasks.retain(|t| !t.is_finished());
            let limit = self.limits.model_call;
            let started = helpers::spawn(myself, &self.helpers, asks, &self.cost, limit);
            self.helper_tasks.extend(started);
        }
        match step {
            Step::CallModel(request) => {
                let model = Arc::clone(&self.model);
                let limit = self.limits.model_call;
                // No call goes out that could take the run past its cost limit.
                let cost = Arc::clone(&self.cost);
                let report = Arc::clone(&self.report);
                let feed = self.feed.clone();
                let span = tracing::info_span!(
                    parent: &self.span,
                    "model_call",
                    run_id = %self.run_id,
                    subagent = %self.id,
                    turn = self.agent.spent().model_turns + 1,
                );
                self.work = Some(spawn_work(
                    myself,
                    async move {
                        // A run held by a reader spends nothing more until it reads.
                        if let Some(feed) = feed {
                            feed.unheld().await;
                        }
                        let call =
                            crate::model::call_metered(model.as_ref(), &cost, request, limit);
                        let reply = call.instrument(span).await;
                        if let Some(config) = model.take_config_change() {
                            report(SubagentReport::ModelConfigured { config });
                        }
                        reply
                    },
                    SubagentMsg::ModelReplied,
                ));
            }
            Step::CallTools(calls) => {
                let asks = batch::asks(&self.tools, &self.tool_context, &self.oversee, &calls);
                let mut waiting = std::collections::HashMap::new();
                self.waiting.clear();
                for ask in &asks {
                    let (send, receive) = tokio::sync::oneshot::channel();
                    self.waiting.insert(ask.call_id.clone(), send);
                    waiting.insert(ask.call_id.clone(), receive);
                }
                // The calls that wait for approval are logged waiting now; the others as
                // each starts.
                if !asks.is_empty() {
                    let asked = calls
                        .iter()
                        .filter(|c| waiting.contains_key(&c.id))
                        .cloned()
                        .collect();
                    (self.report)(SubagentReport::ToolCalls {
                        calls: asked,
                        state: crate::checkpoint::EffectState::AwaitingApproval,
                        asks,
                        durable: None,
                    });
                }
                let run = batch::BatchRun {
                    tools: self.tools.clone(),
                    context: self.tool_context.clone(),
                    unknown: std::sync::Arc::clone(&self.oversee.unknown),
                    report: Arc::clone(&self.report),
                };
                // Spans made here, so nothing is copied for them when tracing is off.
                let spans: Vec<tracing::Span> = calls
                    .iter()
                    .map(|call| {
                        tracing::info_span!(
                            parent: &self.span,
                            "tool_call",
                            run_id = %self.run_id,
                            subagent = %self.id,
                            call_id = %call.id,
                            tool = %call.name,
                        )
                    })
                    .collect();
                self.work = Some(spawn_work(
                    myself,
                    batch::run_batch(run, calls, spans, waiting),
                    SubagentMsg::ToolsReturned,
                ));
            }
            Step::HandOff(text) => {
                self.work = None;
                (self.report)(SubagentReport::HandedOff {
                    text,
                    observations: self.agent.observations().clone(),
                    spent: self.progress(),
                });
            }
            Step::Failed(reason) => {
                self.finished = true;
                self.work = None;
                (self.report)(SubagentReport::Failed {
                    reason,
                    observations: self.agent.observations().clone(),
                    spent: self.progress(),
                });
            }
        }
    }
}

#[ractor::async_trait]
impl Actor for SubagentActor {
    type Msg = SubagentMsg;
    type State = SubagentRun;
    type Arguments = SubagentArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SubagentMsg>,
        args: SubagentArgs,
    ) -> Result<SubagentRun, ActorProcessingErr> {
        let mut agent = AgentLoop::new(
            &args.id,
            args.system,
            args.brief,
            args.tools.specs(),
            args.budget,
        )
        .with_window(args.model.context_window())
        .with_orientation(args.orientation)
        .with_denied(&args.denied)
        .with_price(args.model.price(), args.cost_cap)
        .with_helpers(args.helpers.modes());
        let first = agent.start();
        myself.cast(SubagentMsg::Step(first))?;
        Ok(SubagentRun {
            id: args.id,
            agent,
            model: args.model,
            tools: args.tools,
            tool_context: args.tool_context,
            oversee: args.oversee,
            waiting: std::collections::HashMap::new(),
            report: args.report,
            limits: args.limits,
            cost: args.cost,
            work: None,
            finished: false,
            run_id: args.run_id,
            feed: args.feed,
            span: args.span,
            helpers: args.helpers,
            helper_tasks: Vec::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<SubagentMsg>,
        message: SubagentMsg,
        state: &mut SubagentRun,
    ) -> Result<(), ActorProcessingErr> {
        if state.finished {
            return Ok(());
        }
        let step = match message {
            SubagentMsg::Step(step) => step,
            SubagentMsg::ModelReplied(result) => {
                let stop = result.as_ref().ok().map(|r| r.stop);
                let step = state.agent.on_model(result);
                if let Some(stop) = stop {
                    (state.report)(SubagentReport::ModelReturned {
                        spent: state.agent.spent(),
                        stop,
                    });
                }
                step
            }
            SubagentMsg::ToolsReturned(results) => {
                (state.report)(SubagentReport::ToolsFinished {
                    returned: results.iter().map(ToolReturn::of).collect(),
                });
                state
                    .agent
                    .on_tools(results.into_iter().map(|r| r.result).collect())
            }
            SubagentMsg::ApprovalDecided { call_id, decided } => {
                if let Some(waiting) = state.waiting.remove(&call_id) {
                    let _ = waiting.send(decided);
                }
                return Ok(());
            }
            SubagentMsg::Repair(violations) => state.agent.on_repair(&violations),
            SubagentMsg::Helped(helped) => {
                let event = helpers::apply(&mut state.agent, &state.id, *helped);
                (state.report)(SubagentReport::Helped { event });
                return Ok(());
            }
            SubagentMsg::WorkPanicked(text) => {
                return Err(format!("subagent {} panicked: {text}", state.id).into());
            }
        };
        state.perform(&myself, step);
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<SubagentMsg>,
        state: &mut SubagentRun,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(work) = state.work.take() {
            work.abort();
        }
        for task in state.helper_tasks.drain(..) {
            task.abort();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Tool, ToolError, ToolOutput};

    use crate::transcript::ToolSpec;

    /// A tool that takes longer than the limit the test sets, and notes whether it was told
    /// it was abandoned.
    struct Slow(Arc<std::sync::atomic::AtomicBool>);

    #[async_trait::async_trait]
    impl Tool for Slow {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "slow".into(),
                description: "takes its time".into(),
                parameters: serde_json::json!({"type": "object"}),
            }
        }
        async fn call(
            &self,
            _arguments: &serde_json::Value,
            cx: &ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            let told = Arc::clone(&self.0);
            let cancellation = cx.cancellation().clone();
            // Work the tool started elsewhere learns of the abandonment.
            tokio::spawn(async move {
                cancellation.cancelled().await;
                told.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            Ok(ToolOutput::new("done at last"))
        }
    }

    /// A tool call past its limit comes back at the limit as a tool error naming it, its
    /// cancellation set; within the limit, the tool's own result.
    #[tokio::test]
    async fn a_tool_call_past_its_limit_is_a_tool_error() {
        let told = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let tools = ToolRegistry::empty().with(Arc::new(Slow(Arc::clone(&told))));
        let call = || ToolCall {
            id: "sa1.1".into(),
            name: "slow".into(),
            arguments: serde_json::json!({}),
        };
        let cx = |ms| {
            ToolContext::new("r", "sa1", "sa1.0")
                .with_time_limit(std::time::Duration::from_millis(ms))
        };
        let began = std::time::Instant::now();
        let (late, timed_out) = tools.execute_within(&call(), &cx(100)).await;
        assert!(began.elapsed() < std::time::Duration::from_millis(400));
        assert!(late.is_error && timed_out);
        assert!(
            late.content.contains("past its 0.1 s limit"),
            "{}",
            late.content
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(told.load(std::sync::atomic::Ordering::SeqCst), "cancelled");
        told.store(false, std::sync::atomic::Ordering::SeqCst);
        let (timely, timed_out) = tools.execute_within(&call(), &cx(10_000)).await;
        assert!(!timely.is_error && !timed_out);
        assert_eq!(timely.content, "done at last");
        assert!(!told.load(std::sync::atomic::Ordering::SeqCst));
    }
}
