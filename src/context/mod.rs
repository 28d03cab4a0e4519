//! Role-specific bounded contexts, compiled from one checkpoint (pure): the role's system text,
//! the checkpoint's data in a labelled data section, the constraints verbatim as standing
//! conditions, then the events after the checkpoint — within a token budget, with a manifest of
//! every field and item included or omitted and why.
//!
//! **Invariant:** mandatory fields are never truncated: when they do not fit, compiling fails
//! with a [`FloorError`] naming the floor, the budget and the fields. Evidence that does not fit
//! is replaced by its identity ("content not included; reread allowed"), never a paraphrase.
//! Text in the data section cannot add a tool, lift a constraint or change policy: the tools
//! come from the role profile alone.

mod orientation;
mod render;
mod role;
mod select;

use serde::{Deserialize, Serialize};

use crate::checkpoint::{Checkpoint, Delta};
pub use crate::checkpoint::{Field, ManifestEntry, Reason};
pub use crate::contracts::{RoleId, CONDITIONS_BEGIN, CONDITIONS_END, DATA_BEGIN, DATA_END};
use crate::tokens::Tokenizer;
pub use orientation::{state_name, Orientation};
use render::{heading, render};
pub use role::{load_roles, OptionalField, Role, RoleError, RoleProfile, KNOWN_TOOLS};
pub use select::{ContextIndex, Focus, ItemSum, Omitted, Selection, FIELD_CAP};

/// Data as the context shows it: every line after an item's first is indented, so nothing
/// inside an item can stand at the start of a line as a heading, an entry or a marker; a line
/// that opens like a section marker (`===`) and any marker text elsewhere get a backslash, so
/// no item can close the data section or open another.
pub(crate) fn escape_data(text: String) -> String {
    let inner_newline = text.trim_end_matches('\n').contains('\n');
    let marker_like = text.contains('=') && text.contains("===");
    if !inner_newline && !marker_like {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i > 0 {
            out.push_str("  ");
        }
        let mut line = line.to_string();
        for marker in [DATA_BEGIN, DATA_END, CONDITIONS_BEGIN, CONDITIONS_END] {
            if line.contains(marker) {
                line = line.replace(marker, &format!("\\{marker}"));
            }
        }
        if line.trim_start().starts_with("===") {
            out.push('\\');
        }
        out.push_str(&line);
    }
    out
}

/// A compiled context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compiled {
    /// The role.
    pub role: RoleId,
    /// The context text.
    pub text: String,
    /// The tools the role may call: from the profile, never from the data.
    pub tools: Vec<String>,
    /// Tokens of `text`, counted whole.
    pub tokens: usize,
    /// The budget it was compiled for.
    pub budget: usize,
    /// The tokenizer that counted.
    pub tokenizer: String,
    /// Every field and item, included or omitted.
    pub manifest: Vec<ManifestEntry>,
    /// The items a focused selection left out before the budget was applied (not in the
    /// manifest: a count and a sum of their hashes).
    #[serde(skip)]
    pub unselected: Omitted,
}

impl Compiled {
    /// The context as `baton context` prints it: its text, then its manifest — every field and
    /// item, included (`+`) or left out (`-`), with its tokens and why.
    pub fn render(&self) -> String {
        let mut text = self.text.clone();
        text.push_str(&format!(
            "\n--- manifest: {} of {} tokens ({}), tools: {} ---\n",
            self.tokens,
            self.budget,
            self.tokenizer,
            if self.tools.is_empty() {
                "none".to_string()
            } else {
                self.tools.join(", ")
            }
        ));
        for e in &self.manifest {
            let mark = if e.included { "+" } else { "-" };
            let item = e
                .item
                .as_deref()
                .map(|i| format!(" {i}"))
                .unwrap_or_default();
            let reason = match e.reason {
                Reason::Mandatory => "mandatory",
                Reason::Optional => "optional",
                Reason::IdentityOnly => "identity only: content not included, reread allowed",
                Reason::NotInRole => "not in role",
                Reason::OverBudget => "over budget",
                Reason::Tombstoned => "tombstoned",
                Reason::Empty => "empty",
            };
            text.push_str(&format!(
                "{mark} {}{item}: {} tokens ({reason})\n",
                e.field.name(),
                e.tokens
            ));
        }
        text
    }
}

/// The mandatory fields do not fit the budget: the context is refused, not truncated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("role {role}: the mandatory fields need {floor} tokens but the budget is {budget} ({})", fields.iter().map(|(f, t)| format!("{f} {t}")).collect::<Vec<_>>().join(", "))]
pub struct FloorError {
    /// The role.
    pub role: String,
    /// Tokens the system text and mandatory fields need.
    pub floor: usize,
    /// The budget.
    pub budget: usize,
    /// Each mandatory field and its tokens.
    pub fields: Vec<(String, usize)>,
}

/// An item chosen for the context: its field, its id, its text, why, and its tokens.
type Chosen = (Field, Option<String>, String, Reason, usize);

/// Compiles the context of `role` from a checkpoint (and the events after it) within `budget`
/// tokens as `tokenizer` counts them, from every item of the checkpoint.
pub fn compile(
    cp: &Checkpoint,
    delta: Option<&Delta>,
    role: &RoleProfile,
    budget: usize,
    tokenizer: &dyn Tokenizer,
) -> Result<Compiled, FloorError> {
    compile_selected(cp, delta, role, budget, tokenizer, &Selection::everything())
}

/// Compiles as [`compile`] does, from the items `pick` selected (a subagent's: see
/// [`ContextIndex::select`]); what it left out is the result's `unselected`.
pub fn compile_selected(
    cp: &Checkpoint,
    delta: Option<&Delta>,
    role: &RoleProfile,
    budget: usize,
    tokenizer: &dyn Tokenizer,
    pick: &Selection,
) -> Result<Compiled, FloorError> {
    let count = |t: &str| tokenizer.count(t);
    let system = format!("{}\n\n", role.system.trim());
    let frame = format!("{DATA_BEGIN}\n{DATA_END}\n\n{CONDITIONS_BEGIN}\n{CONDITIONS_END}\n");
    let mut manifest = Vec::new();
    // (field, item, text, reason) chosen, in the order chosen.
    let mut chosen: Vec<Chosen> = Vec::new();

    // The floor: system text, frame, and every mandatory field whole.
    let mut floor = count(&system) + count(&frame);
    let mut mandatory_tokens = Vec::new();
    // Mandatory fields whole, whatever the selection: they are never cut.
    for field in &role.mandatory {
        let items = render(*field, cp, delta, &Selection::everything());
        let mut field_tokens = if *field == Field::Constraints {
            0
        } else {
            count(&heading(*field))
        };
        for item in items {
            let t = count(&item.text);
            field_tokens += t;
            chosen.push((*field, item.id, item.text, Reason::Mandatory, t));
        }
        floor += field_tokens;
        mandatory_tokens.push((field.name().to_string(), field_tokens));
    }
    if floor > budget {
        return Err(FloorError {
            role: role.name.to_string(),
            floor,
            budget,
            fields: mandatory_tokens,
        });
    }

    // Optional fields by priority, item by item while they fit.
    let mut left = budget - floor;
    let mut optional = role.optional.clone();
    optional.sort_by_key(|o| o.priority);
    for OptionalField { field, .. } in optional {
        let items = render(field, cp, delta, pick);
        if items.is_empty() {
            manifest.push(ManifestEntry {
                field,
                item: None,
                included: false,
                tokens: 0,
                reason: Reason::Empty,
            });
            continue;
        }
        let head = count(&heading(field));
        if head > left {
            // Not even the heading fits: the field, and each of its items, left out.
            manifest.push(ManifestEntry {
                field,
                item: None,
                included: false,
                tokens: 0,
                reason: Reason::OverBudget,
            });
            manifest.extend(
                items
                    .into_iter()
                    .filter(|i| i.id.is_some())
                    .map(|i| ManifestEntry {
                        field,
                        item: i.id,
                        included: false,
                        tokens: 0,
                        reason: Reason::OverBudget,
                    }),
            );
            continue;
        }
        left -= head;
        place(field, items, &mut left, &mut chosen, &mut manifest, &count);
    }
    for field in Field::ALL {
        let in_role =
            role.mandatory.contains(&field) || role.optional.iter().any(|o| o.field == field);
        if !in_role {
            manifest.push(ManifestEntry {
                field,
                item: None,
                included: false,
                tokens: 0,
                reason: Reason::NotInRole,
            });
        }
    }

    fit(
        role,
        budget,
        tokenizer,
        pick,
        &system,
        chosen,
        manifest,
        mandatory_tokens,
    )
}

/// One optional field's items, placed while they fit in `left`: an item with an identity
/// (evidence) is kept at least as its identity when every identity fits, then upgraded to its
/// content in order while that fits; what does not fit goes to the manifest as over budget.
fn place(
    field: Field,
    items: Vec<render::Item>,
    left: &mut usize,
    chosen: &mut Vec<Chosen>,
    manifest: &mut Vec<ManifestEntry>,
    count: &impl Fn(&str) -> usize,
) {
    // Items with an identity (evidence) are all kept at least as their identity when that
    // fits, then upgraded to their content in order while it fits.
    // Each identity counted once.
    let identity_counts: Vec<Option<usize>> = items
        .iter()
        .map(|i| i.identity.as_ref().map(|t| count(t)))
        .collect();
    let identities: usize = identity_counts.iter().flatten().sum();
    let mut reserved = if identities <= *left { identities } else { 0 };
    *left -= reserved;
    for (item, identity_tokens) in items.into_iter().zip(identity_counts) {
        let reserve = if reserved > 0 {
            identity_tokens.unwrap_or(0)
        } else {
            0
        };
        reserved -= reserve;
        let room = *left + reserve;
        let full = count(&item.text);
        let (text, reason, tokens) = if item.tombstoned {
            match (item.identity, identity_tokens) {
                (Some(identity), Some(t)) => (identity, Reason::Tombstoned, t),
                _ => (item.text, Reason::Tombstoned, full),
            }
        } else if full <= room {
            (item.text, Reason::Optional, full)
        } else if let (Some(identity), Some(t)) = (item.identity, identity_tokens) {
            (identity, Reason::IdentityOnly, t)
        } else {
            (String::new(), Reason::OverBudget, usize::MAX)
        };
        if tokens <= room {
            *left = room - tokens;
            chosen.push((field, item.id, text, reason, tokens));
        } else {
            *left = room;
            manifest.push(ManifestEntry {
                field,
                item: item.id,
                included: false,
                tokens: 0,
                reason: Reason::OverBudget,
            });
        }
    }
}

/// The chosen items assembled, dropping optional items last in until the whole, counted at
/// once, fits; refused when only mandatory items are left and it still does not.
#[allow(clippy::too_many_arguments)]
fn fit(
    role: &RoleProfile,
    budget: usize,
    tokenizer: &dyn Tokenizer,
    pick: &Selection,
    system: &str,
    mut chosen: Vec<Chosen>,
    manifest: Vec<ManifestEntry>,
    mandatory_tokens: Vec<(String, usize)>,
) -> Result<Compiled, FloorError> {
    let count = |t: &str| tokenizer.count(t);
    let mut manifest = manifest;
    // Assemble, then make sure the whole, counted at once, fits (drop optional items last in).
    loop {
        let text = assemble(system, &chosen);
        let tokens = count(&text);
        let over = tokens > budget;
        let droppable = chosen.iter().rposition(|c| c.3 != Reason::Mandatory);
        match (over, droppable) {
            (true, Some(i)) => {
                let (field, item, _, _, _) = chosen.remove(i);
                manifest.push(ManifestEntry {
                    field,
                    item,
                    included: false,
                    tokens: 0,
                    reason: Reason::OverBudget,
                });
            }
            (true, None) => {
                return Err(FloorError {
                    role: role.name.to_string(),
                    floor: tokens,
                    budget,
                    fields: mandatory_tokens,
                })
            }
            (false, _) => {
                let mut entries: Vec<ManifestEntry> = chosen
                    .iter()
                    .map(|(field, item, _, reason, t)| ManifestEntry {
                        field: *field,
                        item: item.clone(),
                        included: true,
                        tokens: *t,
                        reason: *reason,
                    })
                    .collect();
                entries.extend(manifest);
                return Ok(Compiled {
                    role: role.name.clone(),
                    text,
                    tools: role.tools.clone(),
                    tokens,
                    budget,
                    tokenizer: tokenizer.name().to_string(),
                    manifest: entries,
                    unselected: pick.omitted,
                });
            }
        }
    }
}

/// The context text: system, data section (fields in their fixed order), standing conditions,
/// recent events.
fn assemble(system: &str, chosen: &[Chosen]) -> String {
    let mut out =
        String::with_capacity(system.len() + chosen.iter().map(|c| c.2.len()).sum::<usize>() + 512);
    out.push_str(system);
    out.push_str(DATA_BEGIN);
    out.push('\n');
    for field in Field::ALL {
        if matches!(field, Field::Constraints | Field::RecentEvents) {
            continue;
        }
        let items: Vec<&str> = chosen
            .iter()
            .filter(|c| c.0 == field)
            .map(|c| c.2.as_str())
            .collect();
        if items.is_empty() {
            continue;
        }
        out.push_str(&heading(field));
        for text in items {
            out.push_str(text);
        }
    }
    out.push_str(DATA_END);
    out.push_str("\n\n");
    out.push_str(CONDITIONS_BEGIN);
    out.push('\n');
    for c in chosen.iter().filter(|c| c.0 == Field::Constraints) {
        out.push_str(&c.2);
    }
    out.push_str(CONDITIONS_END);
    out.push('\n');
    let recent: Vec<&str> = chosen
        .iter()
        .filter(|c| c.0 == Field::RecentEvents)
        .map(|c| c.2.as_str())
        .collect();
    if !recent.is_empty() {
        out.push_str("\n## Events since the checkpoint\n");
        for text in recent {
            out.push_str(text);
        }
    }
    out
}
