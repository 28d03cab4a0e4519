//! A batch of tool calls as a subagent runs it: which calls must wait for the application's
//! approval and why (the tool says so, the role reserves one of its effects, or a call of the
//! same intent had an unknown outcome), then each call in turn — through the gate and its time
//! limit, or not at all when its approval was denied, expired or withdrawn.

use std::collections::HashMap;

use serde_json::Value;
use tokio::sync::oneshot;
use tracing::Instrument;

use super::run_tool;
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
}

/// The decision a waiting call gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decided {
    pub(crate) approval_id: String,
    pub(crate) decision: ApprovalDecision,
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
                &admitted.consequences,
                earlier.as_deref(),
            )?;
            Some(ApprovalAsk {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                consequences: admitted.consequences,
                reason,
            })
        })
        .collect()
}

/// Runs a batch in order: a call waiting for approval runs only once it is granted; the
/// others run at once. A call with effects that ran past its limit leaves its intent unknown.
pub(crate) async fn run_batch(
    tools: ToolRegistry,
    context: ToolContext,
    calls: Vec<ToolCall>,
    spans: Vec<tracing::Span>,
    mut waiting: HashMap<String, oneshot::Receiver<Decided>>,
    unknown: UnknownOutcomes,
) -> Vec<Returned> {
    let mut out = Vec::with_capacity(calls.len());
    for (call, span) in calls.into_iter().zip(spans) {
        if let Some(decision) = waiting.remove(&call.id) {
            // A subagent dropped before a decision came is stopped anyway.
            let decided = decision.await.unwrap_or(Decided {
                approval_id: String::new(),
                decision: ApprovalDecision::Withdrawn {
                    reason: "the run stopped waiting".into(),
                },
            });
            if decided.decision != ApprovalDecision::Granted {
                out.push(not_run(call, &decided));
                continue;
            }
        }
        let intent = (!tools.read_only(&call.name))
            .then(|| (intent_digest(&call.name, &call.arguments), call.id.clone()));
        let (result, timed_out) = run_tool(&tools, &context, call).instrument(span).await;
        if let (true, Some((digest, id))) = (timed_out, intent) {
            unknown.insert(digest, id);
        }
        out.push(Returned {
            result,
            timed_out,
            refused: None,
        });
    }
    out
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
