//! The verdict on a handoff, pure: accept it, send it back for a repair turn, or reject it
//! (`contract_unmet`) once the repairs are spent.

use crate::handoff::{Handoff, Parsed, Violation};

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
