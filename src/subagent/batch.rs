//! A batch of tool calls as a subagent runs it: which calls must wait for the application's
//! approval and why (the tool says so, the role reserves one of its effects, or a call of the
//! same intent had an unknown outcome), then each call in turn — through the gate and its time
//! limit, or not at all when its approval was denied, expired or withdrawn.

use std::collections::HashMap;

use serde_json::Value;
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::checkpoint::EffectState;
use crate::contracts::RoleId;
use crate::policy::{
    approval_reason, intent_digest, ApprovalDecision, Consequence, Effect, UnknownOutcomes,
};
use crate::tools::{ToolContext, ToolRegistry, ToolResult};
use crate::transcript::ToolCall;

/// What a subagent checks before a call runs: its role, the effects the role reserves for
/// approval, and the run's intents whose outcome is unknown.
#[derive(Clone)]
pub(crate) struct Oversee {
    pub(crate) role: RoleId,
    pub(crate) reserved: Vec<Effect>,
    pub(crate) unknown: UnknownOutcomes,
}

/// A call that must wait for the application's approval.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApprovalAsk {
    pub(crate) call_id: String,
    pub(crate) tool: String,
    pub(crate) arguments: Value,
    pub(crate) consequences: Vec<Consequence>,
    pub(crate) reason: String,
    /// The request names an earlier call of the same intent whose outcome is unknown: its
    /// grant covers repeating it.
    pub(crate) names_unknown: bool,
}

/// The decision a waiting call gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decided {
    pub(crate) approval_id: String,
    pub(crate) decision: ApprovalDecision,
    /// When the request expires (ms since the epoch): a grant is not used from then on.
    pub(crate) expires_ms: u64,
    /// The request named an unknown outcome of the call's intent: its grant covers repeating
    /// it.
    pub(crate) covers_unknown: bool,
}

/// One call's return: its result, whether it ran past its limit, and — when it did not run
/// for want of approval — the state its effect ends in.
#[derive(Debug, Clone)]
pub(crate) struct Returned {
    pub(crate) result: ToolResult,
    pub(crate) timed_out: bool,
    pub(crate) refused: Option<EffectState>,
}

/// The calls of a batch that must wait for approval: those the gate lets through (a denied
/// or malformed call fails as it is) and that need it.
pub(crate) fn asks(
    tools: &ToolRegistry,
    context: &ToolContext,
    oversee: &Oversee,
    calls: &[ToolCall],
) -> Vec<ApprovalAsk> {
    calls
        .iter()
        .filter_map(|call| {
            let admitted = tools.admit(call, context.policy()).ok()?;
            let earlier = (!admitted.read_only())
                .then(|| {
                    oversee
                        .unknown
                        .get(&intent_digest(&call.name, &call.arguments))
                        .map(|c| c.value().clone())
                })
                .flatten();
            let reason = approval_reason(
                &call.name,
                admitted.needs_approval(&call.arguments),
                oversee.role.as_str(),
                &oversee.reserved,
                (&admitted.consequences, admitted.read_only()),
                earlier.as_deref(),
            )?;
            Some(ApprovalAsk {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                consequences: admitted.consequences,
                reason,
                names_unknown: earlier.is_some(),
            })
        })
        .collect()
}

/// Runs a batch: the calls that wait for no approval first, in order, then each waiting call
/// as its decision comes (granted: it runs; otherwise not); the results in the batch's order.
/// Each call is reported as it starts (`report`; a granted one with the grant it uses), so the
/// log never says a call is executing, or a grant used, before it is. A call with effects
/// whose intent became unknown since the batch was planned — an earlier call of it, here or
/// in another subagent, ran past its limit — is not made without approval; one that runs past
/// its limit leaves its intent unknown.
pub(crate) async fn run_batch(
    run: BatchRun,
    calls: Vec<ToolCall>,
    spans: Vec<tracing::Span>,
    mut waiting: HashMap<String, oneshot::Receiver<Decided>>,
) -> Vec<Returned> {
    let mut out: Vec<Option<Returned>> = vec![None; calls.len()];
    let (asked, free): (Vec<_>, Vec<_>) = calls
        .into_iter()
        .zip(spans)
        .enumerate()
        .partition(|(_, (call, _))| waiting.contains_key(&call.id));
    for (i, (call, span)) in free {
        out[i] = Some(run.one(call, span, None).await);
    }
    let mut pending: Vec<_> = asked
        .into_iter()
        .filter_map(|(i, (call, span))| {
            let decision = waiting.remove(&call.id)?;
            Some((i, call, span, decision))
        })
        .collect();
    while !pending.is_empty() {
        let (k, decided) = std::future::poll_fn(|cx| {
            for (k, (.., decision)) in pending.iter_mut().enumerate() {
                if let std::task::Poll::Ready(decided) =
                    std::future::Future::poll(std::pin::Pin::new(decision), cx)
                {
                    return std::task::Poll::Ready((k, decided));
                }
            }
            std::task::Poll::Pending
        })
        .await;
        let (i, call, span, _) = pending.swap_remove(k);
        // A subagent dropped before a decision came is stopped anyway.
        let mut decided = decided.unwrap_or(Decided {
            approval_id: String::new(),
            decision: ApprovalDecision::Withdrawn {
                reason: "the run stopped waiting".into(),
            },
            expires_ms: 0,
            covers_unknown: false,
        });
        // A grant whose request expired while the call waited its turn is history.
        if decided.decision == ApprovalDecision::Granted
            && crate::checkpoint::now_ms() >= decided.expires_ms
        {
            decided.decision = ApprovalDecision::Expired;
        }
        out[i] = Some(if decided.decision == ApprovalDecision::Granted {
            let grant = (decided.approval_id, decided.covers_unknown);
            run.one(call, span, Some(grant)).await
        } else {
            not_run(call, &decided)
        });
    }
    out.into_iter().flatten().collect()
}

/// What running a batch's calls takes: the tools, the context, the run's unknown intents,
/// and where each call's start is reported.
pub(crate) struct BatchRun {
    pub(crate) tools: ToolRegistry,
    pub(crate) context: ToolContext,
    pub(crate) unknown: UnknownOutcomes,
    pub(crate) report: super::Reporter,
}

impl BatchRun {
    /// One call: reported as started (a granted one with the grant it uses), run within its
    /// limit — or, with effects and an intent now unknown, not run unless its grant was asked
    /// for that (`grant`: the approval id, and whether its request named an unknown outcome).
    async fn one(
        &self,
        call: ToolCall,
        span: tracing::Span,
        grant: Option<(String, bool)>,
    ) -> Returned {
        // A call the gate refuses never starts: logged proposed, it ends denied or stopped.
        let admitted = match self.tools.admit(&call, self.context.policy()) {
            Ok(admitted) => admitted,
            Err(refused) => {
                if grant.is_none() {
                    self.proposed(&call);
                }
                let result = crate::tools::refused_result(&call, refused);
                let state = match result.denial {
                    Some(_) => EffectState::Denied,
                    None => EffectState::Stopped,
                };
                return Returned {
                    result,
                    timed_out: false,
                    refused: Some(state),
                };
            }
        };
        let intent = (!admitted.read_only()).then(|| intent_digest(&call.name, &call.arguments));
        let covered = grant
            .as_ref()
            .is_some_and(|(_, names_unknown)| *names_unknown);
        let earlier = intent
            .as_ref()
            .filter(|_| !covered)
            .and_then(|digest| self.unknown.get(digest).map(|c| c.value().clone()));
        if let Some(earlier) = earlier {
            // A granted call was logged already, awaiting approval.
            if grant.is_none() {
                self.proposed(&call);
            }
            return unknown_first(call, &earlier);
        }
        // A call with effects runs only once its start is durable: a crash while it runs is
        // then always read back as an unknown outcome, never as a call not made.
        let (durable, logged) = match intent.is_some() || grant.is_some() {
            true => {
                let (send, receive) = oneshot::channel();
                (Some(send), Some(receive))
            }
            false => (None, None),
        };
        (self.report)(match (grant, durable) {
            (Some((approval_id, _)), Some(durable)) => super::SubagentReport::GrantUsed {
                call_id: call.id.clone(),
                approval_id,
                durable,
            },
            (_, durable) => super::SubagentReport::ToolCalls {
                calls: vec![call.clone()],
                state: EffectState::Executing,
                asks: Vec::new(),
                durable,
            },
        });
        if let Some(logged) = logged {
            if logged.await.is_err() {
                return not_logged(call);
            }
        }
        // A panicking tool panics here, so the subagent's supervision sees it.
        let cx = self.context.for_call(&call.id);
        let (result, timed_out) = self
            .tools
            .run_admitted(&admitted, &call, &cx)
            .instrument(span)
            .await;
        if let (true, Some(digest)) = (timed_out, intent) {
            self.unknown.insert(digest, call.id);
        }
        Returned {
            result,
            timed_out,
            refused: None,
        }
    }
}

impl BatchRun {
    /// A call that will not be made is logged as proposed.
    fn proposed(&self, call: &ToolCall) {
        (self.report)(super::SubagentReport::ToolCalls {
            calls: vec![call.clone()],
            state: EffectState::Proposed,
            asks: Vec::new(),
            durable: None,
        });
    }
}

/// A call with effects not made because an earlier call of its intent has an unknown outcome:
/// the model is told to call it again to ask for the application's approval.
fn unknown_first(call: ToolCall, earlier: &str) -> Returned {
    Returned {
        result: ToolResult {
            call_id: call.id,
            name: call.name,
            content: format!(
                "error: not run: the outcome of an earlier call with the same arguments ({earlier}) is unknown, and repeating it could do it twice; call it again to ask the application's approval"
            ),
            is_error: true,
            observations: Vec::new(),
            denial: None,
        },
        timed_out: false,
        refused: Some(EffectState::Stopped),
    }
}

/// A call with effects not made because its start could not be logged durably (the run's log
/// failed, or the run ended).
fn not_logged(call: ToolCall) -> Returned {
    Returned {
        result: ToolResult {
            call_id: call.id,
            name: call.name,
            content: "error: not run: the run could not record the call before making it".into(),
            is_error: true,
            observations: Vec::new(),
            denial: None,
        },
        timed_out: false,
        refused: Some(EffectState::Stopped),
    }
}

/// The result of a call that waited for approval and did not get it.
fn not_run(call: ToolCall, decided: &Decided) -> Returned {
    let (why, state) = match &decided.decision {
        ApprovalDecision::Denied { reason } => (
            format!("the application denied it: {reason}"),
            EffectState::Denied,
        ),
        ApprovalDecision::Expired => (
            "the request for approval expired before it was decided".to_string(),
            EffectState::Stopped,
        ),
        ApprovalDecision::Withdrawn { reason } => (
            format!("its approval was withdrawn: {reason}"),
            EffectState::Stopped,
        ),
        ApprovalDecision::Granted => (String::new(), EffectState::Executing),
    };
    let id = if decided.approval_id.is_empty() {
        String::new()
    } else {
        format!(" ({})", decided.approval_id)
    };
    Returned {
        result: ToolResult {
            call_id: call.id,
            name: call.name,
            content: format!("error: not run{id}: {why}; do not call it again unchanged"),
            is_error: true,
            observations: Vec::new(),
            denial: None,
        },
        timed_out: false,
        refused: Some(state),
    }
}
