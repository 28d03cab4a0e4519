//! The brief a person reads before resuming a run, derived from its checkpoint (pure): goal,
//! work done, evidence, unresolved effects, active constraints, requests for approval, budgets
//! and the next step — each item with the event it came from.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{Checkpoint, PlanStatus};

/// One line of the brief and the event behind it (0: derived from several).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BriefItem {
    /// The line.
    pub text: String,
    /// The event it came from.
    pub event: u64,
}

/// A run's brief.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Brief {
    /// The run.
    pub run_id: String,
    /// The events the checkpoint covers.
    pub events: (u64, u64),
    /// The goal.
    pub goal: BriefItem,
    /// Work done and to do.
    pub work: Vec<BriefItem>,
    /// Evidence accepted.
    pub evidence: Vec<BriefItem>,
    /// Effects not settled (executing, outcome unknown, awaiting approval).
    pub unresolved_effects: Vec<BriefItem>,
    /// Constraints in force.
    pub constraints: Vec<BriefItem>,
    /// Tool calls a constraint denied.
    #[serde(default)]
    pub denials: Vec<BriefItem>,
    /// Requests for the application's approval: waiting, or how they were decided.
    #[serde(default)]
    pub approvals: Vec<BriefItem>,
    /// A merge's conflicts between its branches, each an open item naming both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<BriefItem>,
    /// Sources withdrawn (`baton forget`): each tombstone — id, digest, classification,
    /// reason, the decisions it influenced — never its text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withdrawn: Vec<BriefItem>,
    /// Budgets, exact.
    pub budgets: Vec<BriefItem>,
    /// What to do next.
    pub next_step: String,
}

/// Derives the brief from a checkpoint.
pub fn brief(cp: &Checkpoint) -> Brief {
    let goal_event = cp.first_seq;
    let work = cp
        .plans
        .iter()
        .map(|p| BriefItem {
            text: format!(
                "{} [{}]: {}",
                p.subagent,
                p.scope.join(", "),
                match (p.status, p.outcome) {
                    (_, Some(state)) => state.label().to_string(),
                    (PlanStatus::Active, None) => "to do".to_string(),
                    (status, None) => format!("{status:?}").to_lowercase(),
                }
            ),
            event: p.event,
        })
        .collect();
    let evidence = cp
        .evidence
        .iter()
        .map(|e| BriefItem {
            text: match (&e.excerpt, e.stale) {
                (_, Some(at)) => format!(
                    "{} (stale: the cited text changed since it was accepted; found at event {at})",
                    e.source
                ),
                (Some(x), None) => format!("{} — {}", e.source, x),
                (None, None) => match cp.withdrawal_of(&e.source) {
                    Some(w) => format!(
                        "{} (tombstone, event {})",
                        super::unavailable(&w.tombstone),
                        w.event
                    ),
                    None => format!("{} (tombstone)", e.source),
                },
            },
            event: e.stale.unwrap_or(e.event),
        })
        .collect();
    let unresolved: Vec<BriefItem> = cp
        .effects
        .iter()
        .filter(|e| e.state.is_unresolved())
        .map(|e| BriefItem {
            text: format!(
                "{} ({} by {}): {} after {} attempt(s); {}",
                e.intent_id,
                e.tool,
                e.subagent,
                e.state.name(),
                e.attempts,
                e.allowed_recovery
            ),
            event: e.receipts.last().copied().unwrap_or(0),
        })
        .collect();
    let constraints = cp.constraints.iter().map(constraint_item).collect();
    let denials = cp.denials.iter().map(denial_item).collect();
    let approvals: Vec<BriefItem> = cp.approvals.iter().map(approval_item).collect();
    let waiting: Vec<&str> = cp
        .approvals
        .iter()
        .filter(|a| a.decision.is_none())
        .map(|a| a.id.as_str())
        .collect();
    let budgets = budget_items(cp);
    let to_do: Vec<&str> = cp
        .plans
        .iter()
        .filter(|p| p.status != PlanStatus::Completed && p.status != PlanStatus::Superseded)
        .map(|p| p.subagent.as_str())
        .collect();
    let next_step = match (cp.finished, to_do.is_empty(), unresolved.is_empty()) {
        (Some(false), _, _) => "none: the run finished".to_string(),
        _ if !waiting.is_empty() => format!(
            "resume {} from the application that decides its requests for approval ({}): `baton resume` cannot decide them",
            cp.run_id,
            waiting.join(", ")
        ),
        (_, _, false) => format!(
            "reconcile the {} unresolved effect(s) before repeating them, then `baton resume {}`",
            unresolved.len(),
            cp.run_id
        ),
        (_, true, _) if cp.plans.is_empty() => {
            format!("`baton resume {}`: it stopped before planning", cp.run_id)
        }
        (_, true, _) => format!("`baton resume {}` to write the final report", cp.run_id),
        (_, false, _) => format!("`baton resume {}`: runs {}", cp.run_id, to_do.join(", ")),
    };
    Brief {
        run_id: cp.run_id.clone(),
        events: (cp.first_seq, cp.last_seq),
        goal: BriefItem {
            text: cp.goal.clone(),
            event: goal_event,
        },
        work,
        evidence,
        unresolved_effects: unresolved,
        constraints,
        denials,
        approvals,
        withdrawn: withdrawn_items(cp),
        conflicts: cp
            .conflicts
            .iter()
            .map(|(text, event)| BriefItem {
                text: text.clone(),
                event: *event,
            })
            .collect(),
        budgets,
        next_step,
    }
}

/// A request for approval: what it is for, why, and where it stands.
fn approval_item(a: &super::ApprovalEntry) -> BriefItem {
    BriefItem {
        text: format!(
            "{} ({}, {} by {}): {}{}; {}",
            a.id,
            a.object,
            a.call_id,
            a.subagent,
            a.decision.as_deref().unwrap_or("waiting"),
            if a.consumed { ", used" } else { "" },
            crate::text::one_line(&a.reason)
        ),
        event: a.event,
    }
}

/// A constraint, where it came from and what of it is enforced.
fn constraint_item(c: &crate::policy::ConstraintEntry) -> BriefItem {
    BriefItem {
        text: format!(
            "{} (from {}; {})",
            crate::text::one_line(&c.text),
            c.provenance,
            match c.enforcement() {
                crate::policy::Enforcement::NotEnforced => "not enforced".to_string(),
                _ => format!(
                    "enforced: {}",
                    c.rules
                        .iter()
                        .map(|r| r.describe())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            }
        ),
        event: c.event,
    }
}

/// A denial: who, which call, what it would have touched, and by which constraint.
fn denial_item(d: &super::DenialEntry) -> BriefItem {
    BriefItem {
        text: format!(
            "{} {} ({}): {} denied by \"{}\" ({:?})",
            d.subagent,
            d.call_id,
            crate::text::one_line(&d.tool),
            d.consequence.describe(),
            crate::text::one_line(&d.constraint),
            d.category
        ),
        event: d.event,
    }
}

/// Each subagent's spending against the limit, and the total.
fn budget_items(cp: &Checkpoint) -> Vec<BriefItem> {
    let mut budgets: Vec<BriefItem> = cp
        .budgets
        .per_subagent
        .iter()
        .map(|(id, s)| BriefItem {
            text: format!(
                "{id}: {} turns, {} tool calls, {} tokens (limit {} / {} / {})",
                s.model_turns,
                s.tool_calls,
                s.tokens(),
                cp.budgets.limit.model_turns,
                cp.budgets.limit.tool_calls,
                cp.budgets.limit.tokens
            ),
            event: 0,
        })
        .collect();
    let t = &cp.budgets.total;
    budgets.push(BriefItem {
        text: format!(
            "total: {} turns, {} tool calls, {} tokens",
            t.model_turns,
            t.tool_calls,
            t.tokens()
        ),
        event: 0,
    });
    budgets
}

/// The tombstones of the withdrawn sources, one line each.
fn withdrawn_items(cp: &Checkpoint) -> Vec<BriefItem> {
    cp.withdrawn
        .iter()
        .map(|w| {
            let t = &w.tombstone;
            let decisions: Vec<String> = t.decisions.iter().map(u64::to_string).collect();
            BriefItem {
                text: format!(
                    "{} [sha256 {}; {}; {} conclusion(s) of events {}]",
                    super::unavailable(t),
                    if t.digest.is_empty() {
                        "unrecorded"
                    } else {
                        &t.digest
                    },
                    t.classification,
                    t.conclusions,
                    decisions.join(", ")
                ),
                event: w.event,
            }
        })
        .collect()
}

impl Brief {
    /// The brief as text for a person.
    pub fn render(&self) -> String {
        let mut out = format!(
            "# Brief of {} (events {}..{})\n\nGoal: {} [event {}]\n",
            self.run_id,
            self.events.0,
            self.events.1,
            line(&self.goal.text),
            self.goal.event
        );
        let section = |out: &mut String, title: &str, items: &[BriefItem]| {
            let _ = writeln!(out, "\n## {title}");
            if items.is_empty() {
                out.push_str("- none\n");
            }
            for item in items {
                let text = line(&item.text);
                if item.event > 0 {
                    let _ = writeln!(out, "- {text} [event {}]", item.event);
                } else {
                    let _ = writeln!(out, "- {text}");
                }
            }
        };
        section(&mut out, "Work", &self.work);
        section(&mut out, "Evidence", &self.evidence);
        section(&mut out, "Unresolved effects", &self.unresolved_effects);
        section(&mut out, "Active constraints", &self.constraints);
        let title = format!("Denials ({})", self.denials.len());
        section(&mut out, &title, &self.denials);
        if !self.approvals.is_empty() {
            section(&mut out, "Requests for approval", &self.approvals);
        }
        if !self.conflicts.is_empty() {
            section(&mut out, "Conflicts between branches", &self.conflicts);
        }
        if !self.withdrawn.is_empty() {
            section(&mut out, "Withdrawn sources", &self.withdrawn);
        }
        section(&mut out, "Budgets", &self.budgets);
        let _ = writeln!(out, "\n## Next step\n{}", self.next_step);
        out
    }
}

/// An item on one line: a line break in a path, a question or a reason is written as its
/// `\u{..}` escape, so nothing a run holds can start a line — or a heading — of the brief.
fn line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\n', '\r']) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.replace('\n', "\\u{a}").replace('\r', "\\u{d}"))
}
