//! Effect states and the one table of legal transitions between them. Unknown never becomes
//! failed: `outcome_unknown` leaves only by `reconciled`, and only with a reconciling
//! observation.

use serde::{Deserialize, Serialize};

/// Where an effect (a tool call's consequence) stands.
/// ```
/// use baton::EffectState;
/// assert_eq!(baton::transition(EffectState::Executing, EffectState::Completed, None), Ok(EffectState::Completed));
/// // An unknown outcome is left only with a reconciling observation.
/// assert!(baton::transition(EffectState::OutcomeUnknown, EffectState::Reconciled, None).is_err());
/// assert!(baton::transition(EffectState::OutcomeUnknown, EffectState::Reconciled, Some("sa1.4")).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectState {
    /// Asked for, not yet allowed.
    Proposed,
    /// Refused by policy.
    Denied,
    /// Waiting for a person's approval.
    AwaitingApproval,
    /// Running now.
    Executing,
    /// Its result was seen, not yet classified.
    Observed,
    /// It may or may not have happened (the process died while it ran, a timeout).
    OutcomeUnknown,
    /// An observation settled what happened to an unknown outcome.
    Reconciled,
    /// It happened and succeeded.
    Completed,
    /// It happened and failed.
    Failed,
    /// Stopped before it ran.
    Stopped,
    /// Replaced by another intent.
    Superseded,
}

impl EffectState {
    /// Every state.
    pub const ALL: [EffectState; 11] = [
        EffectState::Proposed,
        EffectState::Denied,
        EffectState::AwaitingApproval,
        EffectState::Executing,
        EffectState::Observed,
        EffectState::OutcomeUnknown,
        EffectState::Reconciled,
        EffectState::Completed,
        EffectState::Failed,
        EffectState::Stopped,
        EffectState::Superseded,
    ];

    /// Its name as the log writes it (`outcome_unknown`).
    /// ```
    /// assert_eq!(baton::EffectState::OutcomeUnknown.name(), "outcome_unknown");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            EffectState::Proposed => "proposed",
            EffectState::Denied => "denied",
            EffectState::AwaitingApproval => "awaiting_approval",
            EffectState::Executing => "executing",
            EffectState::Observed => "observed",
            EffectState::OutcomeUnknown => "outcome_unknown",
            EffectState::Reconciled => "reconciled",
            EffectState::Completed => "completed",
            EffectState::Failed => "failed",
            EffectState::Stopped => "stopped",
            EffectState::Superseded => "superseded",
        }
    }

    /// Whether what happened is not settled yet: it may still run, may have run, or waits.
    pub fn is_unresolved(self) -> bool {
        matches!(
            self,
            EffectState::Executing
                | EffectState::OutcomeUnknown
                | EffectState::AwaitingApproval
                | EffectState::Observed
        )
    }

    /// Whether nothing can follow it.
    pub fn is_terminal(self) -> bool {
        TRANSITIONS.iter().all(|(from, _)| *from != self)
    }
}

use EffectState::*;

/// The legal transitions, all of them.
pub const TRANSITIONS: &[(EffectState, EffectState)] = &[
    (Proposed, Denied),
    (Proposed, AwaitingApproval),
    (Proposed, Executing),
    (Proposed, Stopped),
    (Proposed, Superseded),
    (AwaitingApproval, Executing),
    (AwaitingApproval, Denied),
    (AwaitingApproval, Stopped),
    (AwaitingApproval, Superseded),
    (Executing, Observed),
    (Executing, OutcomeUnknown),
    (Executing, Completed),
    (Executing, Failed),
    (Observed, Completed),
    (Observed, Failed),
    (OutcomeUnknown, Reconciled),
    (Reconciled, Completed),
    (Reconciled, Failed),
];

/// An illegal transition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EffectError {
    /// The table has no such edge.
    #[error("illegal effect transition {from:?} -> {to:?}")]
    Illegal {
        /// From.
        from: EffectState,
        /// To.
        to: EffectState,
    },
    /// Reconciling an unknown outcome needs the observation that settles it.
    #[error("outcome_unknown -> reconciled needs a reconciling observation")]
    NoEvidence,
}

/// Checks one transition; `evidence` names the observation behind it (required to reconcile).
/// ```
/// use baton::EffectState;
/// assert!(baton::transition(EffectState::Proposed, EffectState::Executing, None).is_ok());
/// assert!(baton::transition(EffectState::Completed, EffectState::Executing, None).is_err(), "no way back");
/// ```
pub fn transition(
    from: EffectState,
    to: EffectState,
    evidence: Option<&str>,
) -> Result<EffectState, EffectError> {
    if !TRANSITIONS.contains(&(from, to)) {
        return Err(EffectError::Illegal { from, to });
    }
    if from == OutcomeUnknown && evidence.is_none_or(|e| e.trim().is_empty()) {
        return Err(EffectError::NoEvidence);
    }
    Ok(to)
}

/// What recovery does to an effect found in `state` when the process had died: one that was
/// executing becomes outcome_unknown — never failed, never retried automatically.
pub fn on_recovery(state: EffectState) -> EffectState {
    match state {
        Executing => OutcomeUnknown,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_table_is_the_only_way() {
        for from in EffectState::ALL {
            for to in EffectState::ALL {
                let legal = TRANSITIONS.contains(&(from, to));
                assert_eq!(
                    transition(from, to, Some("obs")).is_ok(),
                    legal,
                    "{from:?} -> {to:?}"
                );
            }
        }
        assert_eq!(
            transition(OutcomeUnknown, Reconciled, None),
            Err(EffectError::NoEvidence)
        );
        assert!(transition(OutcomeUnknown, Failed, Some("obs")).is_err());
        assert_eq!(on_recovery(Executing), OutcomeUnknown);
        assert_eq!(on_recovery(Completed), Completed);
        assert!(Completed.is_terminal() && Failed.is_terminal() && !OutcomeUnknown.is_terminal());
    }

    fn state() -> impl Strategy<Value = EffectState> {
        proptest::sample::select(EffectState::ALL.to_vec())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

        /// Any sequence of attempted transitions: only legal ones apply, and a path from
        /// outcome_unknown to failed always passes a reconciliation with evidence.
        #[test]
        fn unknown_never_reaches_failed_without_reconciling(
            start in state(),
            steps in prop::collection::vec((state(), proptest::option::of("[a-z]{0,3}")), 0..30),
        ) {
            let mut current = start;
            let mut was_unknown = current == OutcomeUnknown;
            let mut reconciled = false;
            for (to, evidence) in steps {
                match transition(current, to, evidence.as_deref()) {
                    Ok(next) => {
                        prop_assert!(TRANSITIONS.contains(&(current, next)));
                        if current == OutcomeUnknown {
                            prop_assert_eq!(next, Reconciled);
                            prop_assert!(evidence.as_deref().is_some_and(|e| !e.is_empty()));
                            reconciled = true;
                        }
                        current = next;
                        was_unknown |= current == OutcomeUnknown;
                    }
                    Err(_) => prop_assert!(!TRANSITIONS.contains(&(current, to)) || current == OutcomeUnknown),
                }
                if was_unknown && current == Failed {
                    prop_assert!(reconciled);
                }
            }
        }
    }
}
