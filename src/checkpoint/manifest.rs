//! What a compiled context held, as the log records it: the checkpoint's fields, and for each
//! field or item whether it was included and why.

use serde::{Deserialize, Serialize};

/// A checkpoint field a context can hold.
/// ```
/// let role = baton::Role::new("reviewer").mandatory([baton::Field::Goal, baton::Field::Evidence]);
/// let _ = role;
/// assert_eq!(baton::serde_json::to_value(baton::Field::NegativeEvidence).unwrap(), "negative_evidence");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// The question.
    Goal,
    /// The explored root.
    Root,
    /// Constraints in force (always verbatim, as standing conditions).
    Constraints,
    /// Evidence accepted, with digests.
    Evidence,
    /// Searches that found nothing.
    NegativeEvidence,
    /// Effects and their states.
    Effects,
    /// Denials.
    Denials,
    /// Approvals.
    Approvals,
    /// Budgets.
    Budgets,
    /// The tool registry revision.
    ToolRegistryRevision,
    /// The plan.
    Plans,
    /// Handoffs accepted and rejected.
    Handoffs,
    /// Claims the lead doubts (the findings of handoffs that passed only after repair, or that
    /// rest on corpus passages), for a verifier to reread.
    Doubts,
    /// Events after the checkpoint.
    RecentEvents,
}

impl Field {
    /// Every field, in the order a context lists them.
    pub const ALL: [Field; 14] = [
        Field::Goal,
        Field::Root,
        Field::Constraints,
        Field::Evidence,
        Field::NegativeEvidence,
        Field::Effects,
        Field::Denials,
        Field::Approvals,
        Field::Budgets,
        Field::ToolRegistryRevision,
        Field::Plans,
        Field::Handoffs,
        Field::Doubts,
        Field::RecentEvents,
    ];

    /// The field's name in profiles and manifests.
    pub fn name(self) -> &'static str {
        match self {
            Field::Goal => "goal",
            Field::Root => "root",
            Field::Constraints => "constraints",
            Field::Evidence => "evidence",
            Field::NegativeEvidence => "negative_evidence",
            Field::Effects => "effects",
            Field::Denials => "denials",
            Field::Approvals => "approvals",
            Field::Budgets => "budgets",
            Field::ToolRegistryRevision => "tool_registry_revision",
            Field::Plans => "plans",
            Field::Handoffs => "handoffs",
            Field::Doubts => "doubts",
            Field::RecentEvents => "recent_events",
        }
    }
}

/// Why a field or item is in the manifest as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Included: the role must see it.
    Mandatory,
    /// Included: optional, and it fit.
    Optional,
    /// Its content did not fit: its identity is included, with "reread allowed".
    IdentityOnly,
    /// Omitted: the role does not see this field.
    NotInRole,
    /// Omitted: it did not fit the budget.
    OverBudget,
    /// Its excerpt was dropped in the checkpoint: identity only.
    Tombstoned,
    /// The field has nothing in it.
    Empty,
}

/// One line of the manifest: a field (or one item of it), whether it is in the context, its
/// tokens, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// The field.
    pub field: Field,
    /// The item (a source id, a call id, a subagent), when the entry is about one.
    pub item: Option<String>,
    /// Whether it is in the context.
    pub included: bool,
    /// Its tokens in the context (0 when omitted).
    pub tokens: usize,
    /// Why.
    pub reason: Reason,
}
