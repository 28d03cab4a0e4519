//! Orientation on resume: the first turn of a subagent restarted by `baton resume` asks for a
//! bounded restatement of the goal, the constraints, its unresolved effects and its next
//! action; what it leaves out is compared with the checkpoint (pure) and sent again before any
//! tool call is allowed.

use serde::{Deserialize, Serialize};

use crate::checkpoint::{Checkpoint, EffectState};
use crate::text::normalise;

/// What a restarted subagent must have straight before it acts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Orientation {
    /// The goal.
    pub goal: String,
    /// The constraints, verbatim.
    pub constraints: Vec<String>,
    /// Its unresolved effects: (call id, state).
    pub effects: Vec<(String, EffectState)>,
}

/// The snake_case name of a state, as the event log writes it.
pub fn state_name(state: EffectState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl Orientation {
    /// What `subagent` must restate, from the checkpoint. None when there is nothing binding to
    /// restate (no constraint, no unresolved effect).
    pub fn for_subagent(cp: &Checkpoint, subagent: &str) -> Option<Orientation> {
        let effects: Vec<(String, EffectState)> = cp
            .effects
            .iter()
            .filter(|e| e.subagent == subagent)
            .filter(|e| e.state.is_unresolved())
            .map(|e| (e.intent_id.clone(), e.state))
            .collect();
        let constraints: Vec<String> = cp.constraints.iter().map(|c| c.text.clone()).collect();
        (!constraints.is_empty() || !effects.is_empty()).then(|| Orientation {
            goal: cp.goal.clone(),
            constraints,
            effects,
        })
    }

    /// The orientation request.
    pub fn prompt(&self) -> String {
        "Orientation: this run was resumed. Before any tool call, restate from your context, in \
         these four sections and nothing else: `## Goal`, `## Constraints` (each verbatim), \
         `## Unresolved effects` (each as `CALL_ID: state`), `## Next action`."
            .to_string()
    }

    /// What the answer leaves out: constraints not present verbatim (whitespace and case
    /// aside), effects whose id and state are not on one line.
    pub fn missing(&self, answer: &str) -> Vec<String> {
        let folded = normalise(answer);
        let mut out: Vec<String> = self
            .constraints
            .iter()
            .filter(|c| !folded.contains(&normalise(c)))
            .cloned()
            .collect();
        for (call, state) in &self.effects {
            let name = state_name(*state);
            if !answer
                .lines()
                .any(|l| l.contains(call.as_str()) && l.contains(&name))
            {
                out.push(format!("{call}: {name}"));
            }
        }
        out
    }

    /// The turn that sends back what was left out.
    pub fn resend(missing: &[String]) -> String {
        let mut text = String::from(
            "Your restatement left these out. They bind every step from now on, verbatim:\n",
        );
        for m in missing {
            text.push_str(&format!("- {m}\n"));
        }
        text.push_str("Now carry on with the task.");
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_constraint_or_effect_is_missing() {
        let o = Orientation {
            goal: "g".into(),
            constraints: vec!["Never touch /migrations.".into(), "Only read src.".into()],
            effects: vec![("sa1.2".into(), EffectState::OutcomeUnknown)],
        };
        let full = "## Goal\ng\n## Constraints\n- never touch  /migrations.\n- Only read src.\n## Unresolved effects\n- sa1.2: outcome_unknown\n## Next action\nx";
        assert!(o.missing(full).is_empty());
        let dropped = "## Goal\ng\n## Constraints\n- Only read src.\n## Unresolved effects\n- sa1.2: failed\n";
        assert_eq!(
            o.missing(dropped),
            vec![
                "Never touch /migrations.".to_string(),
                "sa1.2: outcome_unknown".to_string()
            ]
        );
        assert!(Orientation::resend(&o.missing(dropped)).contains("Never touch /migrations."));
    }
}
