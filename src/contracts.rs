//! The texts in `contracts/`, compiled in: what every subagent is told.

/// The handoff contract every subagent is given.
pub(crate) const HANDOFF: &str = include_str!("../contracts/handoff.md");

/// The explorer role's system text.
pub(crate) const EXPLORER_SYSTEM: &str = include_str!("../contracts/explorer.md");
