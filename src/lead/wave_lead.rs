//! The lead model's part in waves (`--lead-model`): once the pure planner has proposed a
//! wave's follow-ups, the lead model is shown the answers so far and those follow-ups, and
//! plans the wave through the plan schema — which to run and how to ask each — bounded by the
//! planner's rules: at most the follow-ups the wave has room for, explorers only, each scope
//! one of the paths the planner found unsearched. An invalid plan gets one more turn; then,
//! or when the model fails, the planner's follow-ups stand, and the log says why.

use std::sync::Arc;

use ractor::ActorRef;
use tracing::Instrument;

use super::leader::{self, Asked, LeadModel, LeadTurn, Tree};
use super::plan::Shard;
use super::waves::FollowUp;
use super::{LeadMsg, LeadState};
use crate::contracts::RoleId;
use crate::handoff::Conclusion;

/// Answers the lead model is shown: the first few, what a reader reads.
const SHOWN_ANSWERS: usize = 5;

/// What the lead model is shown of the checkpoint: the answers so far (claim and sources,
/// best first) and the planner's follow-ups, each with why and where.
pub(super) fn digest(answers: &[Conclusion], follow: &[FollowUp]) -> String {
    let mut out = String::from("The answers so far, best first:\n");
    if answers.is_empty() {
        out.push_str("- none\n");
    }
    for c in answers.iter().take(SHOWN_ANSWERS) {
        let sources: Vec<String> = c.sources.iter().map(|s| s.to_string()).collect();
        out.push_str(&format!(
            "- {} [{}]\n",
            crate::text::one_line(&c.claim),
            sources.join(", ")
        ));
    }
    out.push_str("\nThe planner's follow-ups:\n");
    for f in follow {
        out.push_str(&format!(
            "- question: {}\n  scope: {}\n  because: {}\n",
            crate::text::one_line(&f.question),
            f.paths.join(", "),
            crate::text::one_line(&f.because)
        ));
    }
    out
}

/// Every path the follow-ups may search, each once, in order.
fn scope_of(follow: &[FollowUp]) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for p in follow.iter().flat_map(|f| &f.paths) {
        if !paths.contains(p) {
            paths.push(p.clone());
        }
    }
    paths
}

/// The planner's follow-ups as the shards a plan falls back to.
fn as_shards(follow: &[FollowUp]) -> Vec<Shard> {
    follow
        .iter()
        .map(|f| Shard {
            paths: f.paths.clone(),
            bytes: 0,
            role: RoleId::EXPLORER,
            question: Some(f.question.clone()),
        })
        .collect()
}

impl LeadState {
    /// Has the lead model plan the next wave from the planner's `follow` (off the actor; the
    /// plan comes back as `WavePlanned`). `last_added`: what the wave before it added.
    pub(super) fn ask_lead_to_follow(
        &mut self,
        myself: &ActorRef<LeadMsg>,
        answers: &[Conclusion],
        follow: Vec<FollowUp>,
        last_added: usize,
    ) {
        let Some(model) = self.config.lead_model.clone() else {
            return;
        };
        self.lead.following = true;
        let wave = digest(answers, &follow);
        let question = self.contexts.search_question.clone();
        let explorer = self
            .config
            .roles
            .get(&RoleId::EXPLORER)
            .map(|r| r.description.clone())
            .unwrap_or_default();
        let (meter, limits) = (Arc::clone(&self.config.cost), self.config.limits);
        let me = myself.clone();
        let task = async move {
            let lead = LeadModel {
                model,
                meter,
                limits,
            };
            let tree = Tree::listed(&scope_of(&follow));
            let roles = [(RoleId::EXPLORER, explorer)];
            let asked = Asked {
                question: &question,
                tree: Some(&tree),
                roles: &roles,
                max: follow.len(),
                wave: Some(&wave),
            };
            let fallback = as_shards(&follow);
            let (shards, reason, turn) =
                leader::propose(&lead, &asked, fallback, "the planner's follow-ups").await;
            let _ = me.cast(LeadMsg::WavePlanned {
                shards,
                reason,
                turn,
                last_added,
            });
        };
        let span = self.outside.span.clone();
        self.lead.lead_task = Some(tokio::spawn(task.instrument(span)));
    }

    /// The lead model planned the wave (or the planner's follow-ups stand): it is logged and
    /// spawned. Nothing comes of it once the run was cancelled.
    pub(super) async fn on_wave_planned(
        &mut self,
        myself: &ActorRef<LeadMsg>,
        shards: Vec<Shard>,
        reason: String,
        turn: LeadTurn,
        last_added: usize,
    ) {
        if self.cancelled || !self.lead.following {
            return;
        }
        self.lead.lead_task = None;
        self.lead.following = false;
        self.lead_turn("follow-ups", turn);
        let follow: Vec<FollowUp> = shards
            .into_iter()
            .map(|s| FollowUp {
                question: s.question.unwrap_or_default(),
                paths: s.paths,
                because: String::new(),
            })
            .collect();
        self.plan_follow_ups(follow, last_added, Some(&reason));
        self.advance(myself).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::finding;

    fn follow_up(name: &str, paths: &[&str]) -> FollowUp {
        FollowUp {
            question: format!("Where is `{name}` defined, and where is it called?"),
            paths: paths.iter().map(|p| p.to_string()).collect(),
            because: format!("an answer calls `{name}`"),
        }
    }

    /// The lead model is shown the answers (first few, with their sources) and every
    /// follow-up with its scope and why; the scopes it may name are theirs, each once.
    #[test]
    fn the_lead_model_sees_the_answers_and_the_planners_follow_ups() {
        let answers: Vec<Conclusion> = (1..=7)
            .map(|i| finding(&format!("answer {i}: `fn a{i}()`"), &format!("a.rs:{i}")))
            .collect();
        let follow = [
            follow_up("flush_pages", &["b", "c/d.rs"]),
            follow_up("tick", &["b"]),
        ];
        let text = digest(&answers, &follow);
        assert!(text.contains("- answer 1: `fn a1()` [a.rs:1]"), "{text}");
        assert!(text.contains("answer 5"), "{text}");
        assert!(!text.contains("answer 6"), "the first five only: {text}");
        assert!(
            text.contains("question: Where is `flush_pages` defined"),
            "{text}"
        );
        assert!(text.contains("scope: b, c/d.rs"), "{text}");
        assert!(text.contains("because: an answer calls `tick`"), "{text}");
        assert_eq!(scope_of(&follow), vec!["b".to_string(), "c/d.rs".into()]);
        assert!(digest(&[], &follow).starts_with("The answers so far, best first:\n- none\n"));
    }

    /// Bounded by the planner: a scope beyond the paths it listed (a parent, a sibling), a
    /// role other than explorer or more follow-ups than there is room for is refused.
    #[test]
    fn a_lead_plan_is_held_to_the_planners_paths_role_and_room() {
        let tree = Tree::listed(&["b".to_string(), "c/d.rs".into()]);
        let roles = [RoleId::EXPLORER];
        let ok = r#"{"subtasks": [{"scope": ["c/d.rs"], "question": "Who calls `tick`?"}]}"#;
        let plan = leader::check_plan(ok, 2, Some(&tree), &roles).unwrap();
        assert_eq!(plan[0].scope, vec!["c/d.rs".to_string()]);
        assert_eq!(plan[0].role, RoleId::EXPLORER);
        for (bad, why) in [
            (
                r#"{"subtasks": [{"scope": ["c"], "question": "q"}]}"#,
                "not a directory or file of the tree listed",
            ),
            (
                r#"{"subtasks": [{"scope": ["."], "question": "q"}]}"#,
                "not a directory or file of the tree listed",
            ),
            (
                r#"{"subtasks": [{"scope": ["e"], "question": "q"}]}"#,
                "not a directory or file of the tree listed",
            ),
            (
                r#"{"subtasks": [{"scope": ["b"], "question": "q", "role": "verifier"}]}"#,
                "`role` must be one of the run's roles: explorer",
            ),
            (
                r#"{"subtasks": [{"scope": ["b"], "question": "q"}, {"scope": ["b"], "question": "r"}, {"scope": ["b"], "question": "s"}]}"#,
                "there are 3 subtasks: give from 1 to 2",
            ),
        ] {
            let problems = leader::check_plan(bad, 2, Some(&tree), &roles).unwrap_err();
            assert!(
                problems.iter().any(|p| p.contains(why)),
                "{bad}: {problems:?}"
            );
        }
    }
}
