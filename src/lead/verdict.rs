//! The verdict on a handoff: decided by a pure function (accept it, send it back for a repair
//! turn, or — once the repairs are spent — accept it without the conclusions that broke the
//! contract when only they did, else reject it, `contract_unmet`), then taken by the lead.

use std::collections::BTreeMap;

use super::state::LeadState;
use crate::checkpoint::RunEvent;
use crate::handoff::{prune, Dropped, Handoff, Parsed, Violation};
use crate::report::SubagentState;
use crate::subagent::SubagentMsg;

/// What the lead does with a checked handoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No violation left: its conclusions may be merged; those that broke the contract (once
    /// the repairs were spent) were taken out and are listed, never settled.
    Accept {
        handoff: Handoff,
        dropped: Vec<Dropped>,
    },
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
        Verdict::Accept {
            handoff: parsed.handoff,
            dropped: Vec::new(),
        }
    } else if repairs_used < repairs_allowed {
        Verdict::Repair(parsed.violations)
    } else if let Some((handoff, dropped)) = prune(&parsed) {
        Verdict::Accept { handoff, dropped }
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
        if self.fleet.records[index].summary.state.ended() {
            return;
        }
        let used = self.fleet.records[index].summary.repairs;
        let checked = verdict(parsed, used, self.config.repairs);
        let logged = match &checked {
            Verdict::Accept { handoff, dropped } => RunEvent::HandoffAccepted {
                subagent: id.to_string(),
                handoff: handoff.clone(),
                repairs: used,
                evidence_digests: digests,
                dropped: dropped.clone(),
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
        let record = &mut self.fleet.records[index];
        match checked {
            Verdict::Accept { handoff, dropped } => {
                record.handoff = Some(handoff);
                record.summary.violations =
                    dropped.iter().flat_map(|d| d.violations.clone()).collect();
                // A handoff that lost conclusions is doubted like a repaired one.
                let whole = dropped.is_empty();
                record.dropped = dropped;
                record.pending = None;
                self.stop_actor(index);
                let ended = match (whole, used) {
                    (false, _) => SubagentState::PartlyAccepted,
                    (true, 0) => SubagentState::HandedOff,
                    (true, _) => SubagentState::Repaired,
                };
                self.end_after(Some(logged), index, ended, None);
            }
            Verdict::Repair(violations) => {
                self.log(vec![logged]);
                let record = &mut self.fleet.records[index];
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
        assert!(
            matches!(verdict(good, 2, 2), Verdict::Accept { dropped, .. } if dropped.is_empty())
        );
    }

    /// Issue 20, item 8: once the repairs are spent, a violation in one conclusion takes that
    /// conclusion out, not the handoff; a violation of the sections still rejects it whole.
    #[test]
    fn a_broken_conclusion_is_taken_out_not_the_handoff() {
        let files = {
            let mut f = crate::handoff::MemoryFiles::new();
            f.insert(
                "src/a.rs",
                "pub struct SmallIndex(u32);\nimpl From<u32> for SmallIndex {}\n",
            );
            f
        };
        let check = crate::handoff::Check {
            files: Some(&files),
            ..Default::default()
        };
        let text = "## Settled conclusions\n- `pub struct SmallIndex` is defined here. [src/a.rs:1]\n- `From for SmallIndex` converts. [src/a.rs:2]\n## Open items\n## Hard constraints\n- none\n";
        let checked = || crate::handoff::validate(text, &check);
        assert!(matches!(verdict(checked(), 0, 1), Verdict::Repair(v) if v.len() == 1));
        let Verdict::Accept { handoff, dropped } = verdict(checked(), 1, 1) else {
            panic!("the rest of the handoff is kept")
        };
        assert_eq!(handoff.settled_conclusions.len(), 1);
        assert!(handoff.settled_conclusions[0]
            .claim
            .contains("pub struct SmallIndex"));
        assert_eq!(dropped.len(), 1);
        assert!(dropped[0].conclusion.claim.contains("From for SmallIndex"));
        assert_eq!(
            dropped[0].violations[0].code,
            crate::handoff::ViolationCode::QuoteNotFound
        );
        let no_tail = "## Settled conclusions\n- `pub struct SmallIndex` is defined here. [src/a.rs:1]\n- `From for SmallIndex` converts. [src/a.rs:2]\n";
        assert!(matches!(
            verdict(crate::handoff::validate(no_tail, &check), 1, 1),
            Verdict::Reject { .. }
        ));
    }
}
