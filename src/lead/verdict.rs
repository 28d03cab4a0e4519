//! The verdict on a handoff: decided by a pure function (accept it, send it back for a repair
//! turn, or reject it — `contract_unmet` — once the repairs are spent), then taken by the lead.

use std::collections::BTreeMap;

use super::state::LeadState;
use crate::checkpoint::RunEvent;
use crate::event::Event;
use crate::handoff::{Handoff, Parsed, Violation};
use crate::report::SubagentState;
use crate::subagent::SubagentMsg;

/// What the lead does with a checked handoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No violation: its conclusions may be merged.
    Accept(Handoff),
    /// Violations, and a repair turn left: quote them back.
    Repair(Vec<Violation>),
    /// Violations and no repair left: nothing of it is settled; its claims are at most
    /// unverified leads.
    Reject {
        violations: Vec<Violation>,
        unverified: Handoff,
    },
}

/// Decides on a checked handoff given the repairs already used and allowed.
pub(crate) fn verdict(parsed: Parsed, repairs_used: u32, repairs_allowed: u32) -> Verdict {
    if parsed.violations.is_empty() {
        Verdict::Accept(parsed.handoff)
    } else if repairs_used < repairs_allowed {
        Verdict::Repair(parsed.violations)
    } else {
        Verdict::Reject {
            violations: parsed.violations,
            unverified: parsed.handoff,
        }
    }
}

impl LeadState {
    /// Takes the verdict on a checked handoff: accepted or rejected ends the subagent (the
    /// verdict and the end in one append); a repair sends the violations back to it.
    pub(super) fn take_verdict(
        &mut self,
        id: &str,
        parsed: Parsed,
        digests: BTreeMap<String, String>,
    ) {
        let Some(index) = self.index_of(id) else {
            return;
        };
        if self.records[index].summary.state.ended() {
            return;
        }
        let used = self.records[index].summary.repairs;
        let checked = verdict(parsed, used, self.config.repairs);
        self.emit(Event::HandoffChecked {
            id: id.to_string(),
            violations: match &checked {
                Verdict::Accept(_) => 0,
                Verdict::Repair(v) | Verdict::Reject { violations: v, .. } => v.len(),
            },
            repairs: used,
        });
        let logged = match &checked {
            Verdict::Accept(handoff) => RunEvent::HandoffAccepted {
                subagent: id.to_string(),
                handoff: handoff.clone(),
                repairs: used,
                evidence_digests: digests,
            },
            Verdict::Repair(violations) => RunEvent::HandoffRepairRequested {
                subagent: id.to_string(),
                violations: violations.clone(),
            },
            Verdict::Reject {
                violations,
                unverified,
            } => RunEvent::HandoffRejected {
                subagent: id.to_string(),
                violations: violations.clone(),
                unverified: unverified.clone(),
            },
        };
        let record = &mut self.records[index];
        match checked {
            Verdict::Accept(handoff) => {
                record.handoff = Some(handoff);
                record.pending = None;
                self.stop_actor(index);
                let ended = if used == 0 {
                    SubagentState::HandedOff
                } else {
                    SubagentState::Repaired
                };
                self.end_after(Some(logged), index, ended, None);
            }
            Verdict::Repair(violations) => {
                self.log(vec![logged]);
                let record = &mut self.records[index];
                record.summary.repairs += 1;
                record.pending = Some(violations.clone());
                if let Some(actor) = &record.actor {
                    let _ = actor.cast(SubagentMsg::Repair(violations));
                }
            }
            Verdict::Reject {
                violations,
                unverified,
            } => {
                record.summary.violations = violations;
                record.unverified = Some(unverified);
                record.pending = None;
                self.stop_actor(index);
                let why = format!("contract unmet after {used} repair turn(s)");
                self.end_after(Some(logged), index, SubagentState::Rejected, Some(why));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::parse;

    #[test]
    fn repairs_until_spent_then_rejects() {
        let bad = || parse("## Settled conclusions\n- a fact\n");
        assert!(matches!(verdict(bad(), 0, 2), Verdict::Repair(v) if !v.is_empty()));
        assert!(matches!(verdict(bad(), 1, 2), Verdict::Repair(_)));
        let Verdict::Reject { unverified, .. } = verdict(bad(), 2, 2) else {
            panic!("rejected once the repairs are spent")
        };
        assert_eq!(unverified.settled_conclusions[0].claim, "a fact");
        let good = parse("## Settled conclusions\n## Open items\n## Hard constraints\n- none\n");
        assert!(matches!(verdict(good, 2, 2), Verdict::Accept(_)));
    }
}
