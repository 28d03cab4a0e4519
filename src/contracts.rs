//! The texts in `contracts/`, compiled in: the handoff contract every subagent is given (role
//! profiles are loaded by `context`).

/// The handoff contract every subagent is given.
pub(crate) const HANDOFF: &str = include_str!("../contracts/handoff.md");
