//! The texts in `contracts/`, compiled in: the handoff contract every subagent is given (role
//! profiles are loaded by `context`).

/// The handoff contract every subagent is given.
pub(crate) const HANDOFF: &str = include_str!("../contracts/handoff.md");

/// The line that opens a verifier's task in its first message (the claims are data, in the
/// `doubts` field of its context).
pub(crate) const VERIFY_TASK: &str = "Task: verify the doubted claims.";
