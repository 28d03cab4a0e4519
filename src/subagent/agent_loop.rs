//! The subagent's loop as a sans-IO state machine: it says what to do next (call the model,
//! run tools, finish) and is told what came back. No async, no actor: it can be tested,
//! serialised between steps and resumed.

use serde::{Deserialize, Serialize};

use crate::handoff::{Handoff, Violation};
use crate::model::{Message, ModelError, ModelRequest, ModelResponse};
use crate::policy::{Budget, Spent};
use crate::source::ObservationLog;
use crate::tools::{ToolCall, ToolResult, ToolSpec};

/// Most tokens a subagent's answer may take.
const ANSWER_TOKENS: u32 = 4096;

/// What the loop wants done next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Send this request to the model.
    CallModel(ModelRequest),
    /// Run these tool calls (ids already unique in the run).
    CallTools(Vec<ToolCall>),
    /// The loop is over.
    Finished(Outcome),
}

/// How a subagent's work ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Outcome {
    /// A handoff that passed the contract, after `repairs` repair turns.
    HandedOff { handoff: Handoff, repairs: u32 },
    /// The last answer still broke the contract when repairs ran out.
    Rejected {
        violations: Vec<Violation>,
        repairs: u32,
    },
    /// The model failed, or the subagent went over budget without handing off.
    Failed { reason: String },
}

/// The loop's state: the window, what was spent, what was seen.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct AgentLoop {
    id: String,
    system: String,
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
    budget: Budget,
    spent: Spent,
    observations: ObservationLog,
    repairs_allowed: u32,
    repairs_used: u32,
    calls_made: u32,
    /// Set once the subagent has been told to hand off: it gets no tools after that.
    handoff_demanded: bool,
}

impl AgentLoop {
    pub(crate) fn new(
        id: &str,
        system: String,
        brief: String,
        tools: Vec<ToolSpec>,
        budget: Budget,
        repairs_allowed: u32,
    ) -> AgentLoop {
        AgentLoop {
            id: id.to_string(),
            system,
            messages: vec![Message::User { text: brief }],
            tools,
            budget,
            spent: Spent::default(),
            observations: ObservationLog::default(),
            repairs_allowed,
            repairs_used: 0,
            calls_made: 0,
            handoff_demanded: false,
        }
    }

    pub(crate) fn spent(&self) -> Spent {
        self.spent
    }

    pub(crate) fn observations(&self) -> &ObservationLog {
        &self.observations
    }

    /// The first step.
    pub(crate) fn start(&mut self) -> Step {
        self.model_step()
    }

    /// The next model call, or a demand to hand off when a budget is used up.
    fn model_step(&mut self) -> Step {
        if let Some(limit) = self.budget.exhausted(&self.spent) {
            if self.handoff_demanded {
                return Step::Finished(Outcome::Failed {
                    reason: format!("over budget ({limit}) and did not hand off"),
                });
            }
            self.demand_handoff(&format!(
                "Budget used up ({limit}). Hand off now with what you have, in the three sections \
                 of the contract; no more tool calls."
            ));
        }
        Step::CallModel(ModelRequest {
            system: self.system.clone(),
            messages: self.messages.clone(),
            tools: if self.handoff_demanded {
                Vec::new()
            } else {
                self.tools.clone()
            },
            max_tokens: ANSWER_TOKENS,
        })
    }

    fn demand_handoff(&mut self, text: &str) {
        self.handoff_demanded = true;
        self.messages.push(Message::User {
            text: text.to_string(),
        });
    }

    /// The model answered (or failed).
    pub(crate) fn on_model(&mut self, result: Result<ModelResponse, ModelError>) -> Step {
        let response = match result {
            Ok(r) => r,
            Err(e) => {
                return Step::Finished(Outcome::Failed {
                    reason: e.to_string(),
                })
            }
        };
        self.spent.model_turns += 1;
        self.spent.tokens_in += response.usage.input_tokens;
        self.spent.tokens_out += response.usage.output_tokens;
        if !response.tool_calls.is_empty() {
            return self.on_tool_calls(response);
        }
        match Handoff::parse(&response.text) {
            Ok(handoff) => Step::Finished(Outcome::HandedOff {
                handoff,
                repairs: self.repairs_used,
            }),
            Err(violations) => {
                self.messages.push(Message::Assistant {
                    text: response.text,
                    tool_calls: Vec::new(),
                });
                if self.repairs_used >= self.repairs_allowed {
                    return Step::Finished(Outcome::Rejected {
                        violations,
                        repairs: self.repairs_used,
                    });
                }
                self.repairs_used += 1;
                self.messages.push(Message::User {
                    text: repair_prompt(&violations),
                });
                self.model_step()
            }
        }
    }

    fn on_tool_calls(&mut self, response: ModelResponse) -> Step {
        let mut calls = response.tool_calls;
        for call in &mut calls {
            self.calls_made += 1;
            call.id = format!("{}.{}", self.id, self.calls_made);
        }
        self.messages.push(Message::Assistant {
            text: response.text,
            tool_calls: calls.clone(),
        });
        let left = self.budget.tool_calls_left(&self.spent) as usize;
        if self.handoff_demanded || calls.len() > left {
            // Calls that will not run still get a result, so no call is left unanswered.
            let run: Vec<ToolCall> = if self.handoff_demanded {
                Vec::new()
            } else {
                calls.iter().take(left).cloned().collect()
            };
            for call in calls.iter().skip(run.len()) {
                self.messages.push(Message::Tool {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: "error: not run: the tool-call budget is used up".into(),
                    is_error: true,
                });
            }
            if self.handoff_demanded {
                return Step::Finished(Outcome::Failed {
                    reason: "called tools after being told to hand off".into(),
                });
            }
            if run.is_empty() {
                return self.model_step();
            }
            return Step::CallTools(run);
        }
        Step::CallTools(calls)
    }

    /// The tools ran.
    pub(crate) fn on_tools(&mut self, results: Vec<ToolResult>) -> Step {
        self.spent.tool_calls += results.len() as u32;
        // Results go right after their call, before any "not run" placeholders.
        let insert_at = self
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
            .map(|i| i + 1)
            .unwrap_or(self.messages.len());
        for (position, result) in (insert_at..).zip(results) {
            self.observations.record(result.observations);
            self.messages.insert(
                position,
                Message::Tool {
                    call_id: result.call_id,
                    name: result.name,
                    content: result.content,
                    is_error: result.is_error,
                },
            );
        }
        self.model_step()
    }
}

/// The repair turn: every violation with its line, and what to send back.
pub(crate) fn repair_prompt(violations: &[Violation]) -> String {
    let mut text = String::from(
        "Your handoff does not meet the contract. Fix every point below and send the whole \
         handoff again (the three sections only):\n",
    );
    for v in violations {
        if v.line > 0 {
            text.push_str(&format!("- [{}] line {}: {}\n", v.code, v.line, v.message));
        } else {
            text.push_str(&format!("- [{}] {}\n", v.code, v.message));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Usage;
    use serde_json::json;

    fn answer(text: &str, calls: Vec<ToolCall>) -> Result<ModelResponse, ModelError> {
        Ok(ModelResponse {
            text: text.into(),
            tool_calls: calls,
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
            },
        })
    }

    fn grep_call() -> ToolCall {
        ToolCall {
            id: "x".into(),
            name: "grep".into(),
            arguments: json!({"pattern": "a"}),
        }
    }

    const GOOD: &str = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";

    #[test]
    fn repairs_then_accepts() {
        let mut l = AgentLoop::new("sa1", "s".into(), "b".into(), vec![], Budget::default(), 2);
        assert!(matches!(l.start(), Step::CallModel(_)));
        let step = l.on_model(answer("just prose", vec![]));
        let Step::CallModel(request) = step else {
            panic!("expected a repair turn")
        };
        let Message::User { text } = request.messages.last().unwrap() else {
            panic!()
        };
        assert!(text.contains("section_missing"));
        let step = l.on_model(answer(GOOD, vec![]));
        assert!(matches!(
            step,
            Step::Finished(Outcome::HandedOff { repairs: 1, .. })
        ));
    }

    #[test]
    fn rejected_when_repairs_run_out() {
        let mut l = AgentLoop::new("sa1", "s".into(), "b".into(), vec![], Budget::default(), 1);
        l.start();
        l.on_model(answer("prose", vec![]));
        let step = l.on_model(answer("more prose", vec![]));
        assert!(matches!(
            step,
            Step::Finished(Outcome::Rejected { repairs: 1, .. })
        ));
    }

    #[test]
    fn over_budget_is_asked_once_to_hand_off_then_stopped() {
        let budget = Budget {
            model_turns: 2,
            tool_calls: 10,
            tokens: 1_000_000,
        };
        let mut l = AgentLoop::new("sa1", "s".into(), "b".into(), vec![], budget, 0);
        l.start();
        let Step::CallTools(calls) = l.on_model(answer("", vec![grep_call()])) else {
            panic!()
        };
        assert_eq!(calls[0].id, "sa1.1");
        let results = vec![ToolResult {
            call_id: "sa1.1".into(),
            name: "grep".into(),
            content: "x".into(),
            is_error: false,
            observations: vec![],
        }];
        assert!(matches!(l.on_tools(results.clone()), Step::CallModel(_)));
        // Second turn uses up the budget: the next request carries the demand and no tools.
        let Step::CallTools(_) = l.on_model(answer("", vec![grep_call()])) else {
            panic!()
        };
        let Step::CallModel(request) = l.on_tools(results) else {
            panic!()
        };
        assert!(request.tools.is_empty());
        assert!(
            matches!(request.messages.last(), Some(Message::User { text }) if text.contains("Budget used up"))
        );
        // Calling tools anyway ends it.
        assert!(matches!(
            l.on_model(answer("", vec![grep_call()])),
            Step::Finished(Outcome::Failed { .. })
        ));
    }
}
