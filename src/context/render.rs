//! Rendering a checkpoint's fields as the lines of a compiled context, each item escaped as
//! data.

use super::{escape_data, select, state_name, Selection};
use crate::checkpoint::{Checkpoint, Delta, Field};

/// One rendered item of a field.
pub(super) struct Item {
    pub(super) id: Option<String>,
    pub(super) text: String,
    /// What stands in when the content does not fit (evidence).
    pub(super) identity: Option<String>,
    pub(super) tombstoned: bool,
}

fn short(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The items of one field, rendered as lines and escaped as data.
pub(super) fn render(
    field: Field,
    cp: &Checkpoint,
    delta: Option<&Delta>,
    pick: &Selection,
) -> Vec<Item> {
    render_raw(field, cp, delta, pick)
        .into_iter()
        .map(|item| Item {
            text: escape_data(item.text),
            identity: item.identity.map(escape_data),
            ..item
        })
        .collect()
}

/// The entries of `list` a selection picked for `field`, in order.
fn picked<'a, T>(pick: &'a Selection, field: Field, list: &'a [T]) -> Vec<&'a T> {
    match pick.of(field) {
        None => list.iter().collect(),
        Some(indices) => indices.iter().filter_map(|&i| list.get(i)).collect(),
    }
}

fn render_raw(field: Field, cp: &Checkpoint, delta: Option<&Delta>, pick: &Selection) -> Vec<Item> {
    match field {
        Field::Goal => vec![plain(format!("Goal: {}\n", cp.goal))],
        Field::Root => vec![plain(format!("Workspace root: {}\n", cp.root))],
        Field::Constraints => cp
            .constraints
            .iter()
            .map(|c| Item {
                id: Some(format!("event:{}", c.event)),
                text: format!("- {}\n", c.text),
                identity: None,
                tombstoned: false,
            })
            .collect(),
        Field::Evidence => evidence(cp, pick),
        Field::NegativeEvidence => negative_evidence(cp, pick),
        Field::Effects => effects(cp, pick),
        Field::Denials => denials(cp),
        Field::Approvals => cp
            .approvals
            .iter()
            .map(|a| {
                plain(format!(
                    "- {} {}: {} ({}; used: {})\n",
                    a.id,
                    a.decision.as_deref().unwrap_or("waiting"),
                    a.object,
                    a.reason,
                    a.consumed
                ))
            })
            .collect(),
        Field::Budgets => {
            let t = &cp.budgets.total;
            let l = &cp.budgets.limit;
            vec![plain(format!(
                "Budget per subagent: {} turns, {} tool calls, {} tokens. Spent in all: {} turns, {} tool calls, {} tokens.\n",
                l.model_turns, l.tool_calls, l.tokens, t.model_turns, t.tool_calls, t.tokens()
            ))]
        }
        Field::ToolRegistryRevision => vec![plain(format!(
            "Tool registry revision: {}\n",
            cp.tool_registry_revision
        ))],
        Field::Plans => plans(cp, pick),
        Field::Handoffs => handoffs(cp, pick),
        Field::Doubts => doubts(cp, pick),
        Field::RecentEvents => recent_events(delta),
    }
}

fn evidence(cp: &Checkpoint, pick: &Selection) -> Vec<Item> {
    let field = Field::Evidence;
    picked(pick, field, &cp.evidence)
    .into_iter()
    .map(|e| {
        let digest = short(&e.digest, 12);
        let identity = match cp.withdrawal_of(&e.source) {
            Some(w) => format!(
                "- {} [sha256 {digest}]\n",
                crate::checkpoint::unavailable(&w.tombstone)
            ),
            None => format!(
                "- {} [sha256 {digest}] (content not included; reread allowed)\n",
                e.source
            ),
        };
        Item {
            id: Some(e.source.clone()),
            text: match (&e.excerpt, e.stale) {
                // Text that changed since is not evidence: only where to reread.
                (_, Some(_)) => format!(
                    "- {} [sha256 {digest}] (stale: the text changed since it was accepted; reread it)\n",
                    e.source
                ),
                (Some(x), None) => format!("- {} [sha256 {digest}] {x}\n", e.source),
                (None, None) => identity.clone(),
            },
            identity: Some(identity),
            tombstoned: e.tombstone || e.excerpt.is_none(),
        }
    })
    .collect()
}

fn negative_evidence(cp: &Checkpoint, pick: &Selection) -> Vec<Item> {
    let field = Field::NegativeEvidence;
    picked(pick, field, &cp.negative_evidence)
        .into_iter()
        .map(|n| Item {
            id: Some(format!("call:{}", n.call_id)),
            text: format!(
                "- /{}/ in {}: no match ({} files searched) [call:{}]\n",
                n.pattern,
                n.scope.join(", "),
                n.files_searched,
                n.call_id
            ),
            identity: None,
            tombstoned: false,
        })
        .collect()
}

fn effects(cp: &Checkpoint, pick: &Selection) -> Vec<Item> {
    let field = Field::Effects;
    picked(pick, field, &cp.effects)
        .into_iter()
        .map(|e| Item {
            id: Some(e.intent_id.clone()),
            text: format!(
                "- {} {} by {}: {:?}, {} attempt(s); recovery: {}; repetition {}\n",
                e.intent_id,
                e.tool,
                e.subagent,
                e.state,
                e.attempts,
                e.allowed_recovery,
                if e.prohibited_repetition {
                    "prohibited"
                } else {
                    "allowed"
                }
            ),
            identity: None,
            tombstoned: false,
        })
        .collect()
}

fn plans(cp: &Checkpoint, pick: &Selection) -> Vec<Item> {
    let field = Field::Plans;
    picked(pick, field, &cp.plans)
        .into_iter()
        .map(|p| Item {
            id: Some(p.subagent.clone()),
            text: format!(
                "- {} [{}]: {:?}{}\n",
                p.subagent,
                p.scope.join(", "),
                p.status,
                p.outcome
                    .map(|o| format!(", {}", o.label()))
                    .unwrap_or_default()
            ),
            identity: None,
            tombstoned: false,
        })
        .collect()
}

fn doubts(cp: &Checkpoint, pick: &Selection) -> Vec<Item> {
    let field = Field::Doubts;
    picked(pick, field, &cp.handoffs.accepted)
        .into_iter()
        .flat_map(|h| h.doubted.iter())
        .map(|c| Item {
            id: Some(select::doubt_id(c)),
            // One JSON object a line: the claim and its sources exactly as handed off
            // (a claim's newlines, brackets or prefixes cannot change them), with `=` runs
            // that could read as a section marker escaped inside the string.
            text: format!(
                "- {}\n",
                serde_json::to_string(c)
                    .unwrap_or_default()
                    .replace("===", "\\u003d==")
            ),
            identity: None,
            tombstoned: false,
        })
        .collect()
}

fn recent_events(delta: Option<&Delta>) -> Vec<Item> {
    delta
        .map(|d| {
            d.events
                .iter()
                .map(|e| Item {
                    id: Some(format!("event:{}", e.seq)),
                    text: match &e.event {
                        crate::checkpoint::RunEvent::EffectChanged {
                            call_id,
                            from,
                            to,
                            note,
                            ..
                        } => format!(
                            "- [{}] effect_changed {call_id}: {} -> {} ({note})\n",
                            e.seq,
                            state_name(*from),
                            state_name(*to)
                        ),
                        other => format!("- [{}] {}\n", e.seq, other.kind()),
                    },
                    identity: None,
                    tombstoned: false,
                })
                .collect()
        })
        .unwrap_or_default()
}

fn denials(cp: &Checkpoint) -> Vec<Item> {
    cp.denials
        .iter()
        .map(|d| {
            plain(format!(
                "- {} {}: {} — denied by \"{}\"\n",
                d.subagent,
                d.call_id,
                d.consequence.describe(),
                crate::text::one_line(&d.constraint)
            ))
        })
        .collect()
}

fn handoffs(cp: &Checkpoint, pick: &Selection) -> Vec<Item> {
    let accepted_len = cp.handoffs.accepted.len();
    let (accepted, rejected): (Vec<_>, Vec<_>) = match pick.of(Field::Handoffs) {
        None => (
            cp.handoffs.accepted.iter().collect(),
            cp.handoffs.rejected.iter().collect(),
        ),
        Some(indices) => (
            indices
                .iter()
                .filter_map(|&i| cp.handoffs.accepted.get(i))
                .collect(),
            indices
                .iter()
                .filter(|&&i| i >= accepted_len)
                .filter_map(|&i| cp.handoffs.rejected.get(i - accepted_len))
                .collect(),
        ),
    };
    accepted
        .into_iter()
        .map(|h| Item {
            id: Some(h.subagent.clone()),
            text: format!(
                "- {}: accepted, {} conclusion(s), {} repair(s) [event {}]\n",
                h.subagent, h.conclusions, h.repairs, h.event
            ),
            identity: None,
            tombstoned: false,
        })
        .chain(rejected.into_iter().map(|h| Item {
            id: Some(h.subagent.clone()),
            text: format!(
            "- {}: rejected (contract unmet: {}) [event {}]\n",
            h.subagent,
            h.codes.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", "),
            h.event
        ),
            identity: None,
            tombstoned: false,
        }))
        .collect()
}

fn plain(text: String) -> Item {
    Item {
        id: None,
        text,
        identity: None,
        tombstoned: false,
    }
}

pub(super) fn heading(field: Field) -> String {
    format!("## {}\n", field.name())
}
