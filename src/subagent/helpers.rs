//! The helper models of a subagent's window — the ledger model, which classifies the turns the
//! rule pass flags, and the summary model, which writes narratives of summaries — called off
//! the loop's path: the loop goes on while they answer, and what they answer is checked before
//! it changes anything (a verbatim pin, a narrative that passes its skeleton's checks). A
//! helper that fails, is slow or panics changes nothing: the rule pass's pins and the template
//! summaries stand.

use std::sync::Arc;
use std::time::Instant;

use ractor::ActorRef;
use tokio::task::JoinHandle;

use super::agent_loop::{AgentLoop, HelperAsk, HelperModes};
use super::{CatchPanic, SubagentMsg};
use crate::checkpoint::{HelperCall, RunEvent};
use crate::compaction::{
    ledger_prompt, Skeleton, LEDGER_PROMPT_REVISION, NARRATIVE_PROMPT_REVISION,
};
use crate::model::{CostMeter, Model, ModelRequest, ModelResponse};
use crate::transcript::Message;

/// Most tokens a helper's answer may take.
const HELPER_ANSWER_TOKENS: u32 = 2048;

/// The helper models a subagent's window may have (none: the rule pass and the templates).
#[derive(Clone, Default)]
pub(crate) struct HelperModels {
    /// Classifies the turns the rule pass flags (`--ledger-model`).
    pub(crate) ledger: Option<Arc<dyn Model>>,
    /// Writes narratives of summaries (`--summary-model`).
    pub(crate) summary: Option<Arc<dyn Model>>,
}

impl std::fmt::Debug for HelperModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HelperModels")
            .field("ledger", &self.ledger.as_ref().map(|m| m.name()))
            .field("summary", &self.summary.as_ref().map(|m| m.name()))
            .finish()
    }
}

impl HelperModels {
    /// What the loop queues work for.
    pub(crate) fn modes(&self) -> HelperModes {
        HelperModes {
            ledger: self.ledger.is_some(),
            narrate: self.summary.is_some(),
        }
    }

    fn model_for(&self, ask: &HelperAsk) -> Option<Arc<dyn Model>> {
        match ask {
            HelperAsk::Ledger { .. } => self.ledger.clone(),
            HelperAsk::Narrate { .. } => self.summary.clone(),
        }
    }
}

/// A helper's answer, back at the subagent.
pub(crate) struct Helped {
    ask: HelperAsk,
    model: String,
    reply: Result<ModelResponse, String>,
    cost_micros: u64,
    latency_ms: u64,
}

/// The request a helper is sent for `ask`.
fn request(ask: &HelperAsk) -> ModelRequest {
    let (system, user) = match ask {
        HelperAsk::Ledger {
            text, from_user, ..
        } => ledger_prompt(text, *from_user),
        HelperAsk::Narrate { template, .. } => {
            let body = template.split_once('\n').map_or("", |(_, b)| b);
            Skeleton::of(body).prompt()
        }
    };
    let mut request = ModelRequest::new(
        system,
        vec![Message::User { text: user }],
        Vec::new().into(),
        HELPER_ANSWER_TOKENS,
    );
    request.temperature = Some(0.0);
    request
}

/// Starts one task per queued ask whose model is set; each answer comes back to the subagent
/// as [`SubagentMsg::Helped`]. The calls reserve their cost on the run's meter like any other.
pub(crate) fn spawn(
    myself: &ActorRef<SubagentMsg>,
    models: &HelperModels,
    asks: Vec<HelperAsk>,
    cost: &Arc<CostMeter>,
    limit: std::time::Duration,
) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    for ask in asks {
        let Some(model) = models.model_for(&ask) else {
            continue;
        };
        let (me, cost) = (myself.clone(), Arc::clone(cost));
        tasks.push(tokio::spawn(async move {
            let started = Instant::now();
            let call = crate::model::call_metered(model.as_ref(), &cost, request(&ask), limit);
            let reply = match CatchPanic(Box::pin(call)).await {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(e)) => Err(e.to_string()),
                Err(panic) => Err(format!("the model call panicked: {panic}")),
            };
            let cost_micros = match (&reply, model.price()) {
                (Ok(r), Some(price)) => price.cost_micros(&r.usage),
                _ => 0,
            };
            let helped = Helped {
                ask,
                model: model.name(),
                reply,
                cost_micros,
                latency_ms: started.elapsed().as_millis().min(u128::from(u64::MAX)) as u64,
            };
            let _ = me.cast(SubagentMsg::Helped(Box::new(helped)));
        }));
    }
    tasks
}

/// Takes a helper's answer into the loop (a verbatim pin, a narrative that passed) and says
/// what the run's log records of it.
pub(crate) fn apply(agent: &mut AgentLoop, subagent: &str, helped: Helped) -> RunEvent {
    let (input_tokens, output_tokens) = helped
        .reply
        .as_ref()
        .map_or((0, 0), |r| (r.usage.input_tokens, r.usage.output_tokens));
    let call = |revision: &str| HelperCall {
        model: helped.model.clone(),
        prompt_revision: revision.to_string(),
        input_tokens,
        output_tokens,
        cost_micros: helped.cost_micros,
        latency_ms: helped.latency_ms,
    };
    match &helped.ask {
        HelperAsk::Ledger {
            turn,
            text,
            from_user,
        } => {
            let taken = helped.reply.as_ref().map_err(Clone::clone).and_then(|r| {
                agent
                    .on_ledger_answer(*turn, text, *from_user, &r.text)
                    .map_err(|e| e.to_string())
            });
            let (accepted, discarded, error) = match taken {
                Ok(pass) => (pass.accepted as u64, pass.discarded as u64, None),
                Err(why) => (0, 0, Some(crate::text::one_line(&why))),
            };
            RunEvent::LedgerClassified {
                subagent: subagent.to_string(),
                turn: *turn as u64,
                accepted,
                discarded,
                error,
                call: call(LEDGER_PROMPT_REVISION),
            }
        }
        HelperAsk::Narrate {
            template,
            folded_digest,
        } => {
            let problems = match &helped.reply {
                Ok(r) => agent.on_narrative(template, &r.text, &helped.model),
                Err(why) => vec![format!("the model failed: {}", crate::text::one_line(why))],
            };
            RunEvent::SummaryNarrated {
                subagent: subagent.to_string(),
                messages: folded_messages(template),
                folded_digest: folded_digest.clone(),
                promoted: problems.is_empty(),
                problems,
                call: call(NARRATIVE_PROMPT_REVISION),
            }
        }
    }
}

/// The `first..=last` a summary's marker says it folded.
fn folded_messages(template: &str) -> String {
    template
        .lines()
        .next()
        .and_then(|marker| marker.split("messages ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folded_range_is_read_from_the_marker() {
        let template = "[compacted: messages 1..=7 folded by extractive-2; raw turns: x]\n## Settled conclusions\n";
        assert_eq!(folded_messages(template), "1..=7");
        assert_eq!(folded_messages("no marker"), "");
    }
}
