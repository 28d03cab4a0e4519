//! The lead model's part in waves (`--lead-model`): once the pure planner has proposed a
//! wave's follow-ups, the lead model is shown the answers so far and those follow-ups, and
//! plans the wave through the plan schema — which to run and how to ask each — bounded by the
//! planner's rules: at most the follow-ups the wave has room for, explorers only, each scope
//! one of the paths the planner found unsearched. An invalid plan gets one more turn; then,
//! or when the model fails, the planner's follow-ups stand, and the log says why.

use ractor::ActorRef;
use tracing::Instrument;

use super::leader::{self, Asked, LeadTurn, Subtask, Tree};
use super::plan::Shard;
use super::waves::{as_shards, FollowUp};
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
            f.paths
                .iter()
                .map(|p| super::plan_check::listed_name(p))
                .collect::<Vec<_>>()
                .join(", "),
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

/// The planner's rules a lead plan keeps, beyond the schema, its number and the listed paths:
/// each subtask traces one of the follow-ups' names — its question names it in backticks —
/// over that name's paths alone, and no two trace the same name. The problems, one a line.
pub(super) fn break_planners_rules(follow: &[FollowUp], subtasks: &[Subtask]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut traced: Vec<&str> = Vec::new();
    for (i, subtask) in subtasks.iter().enumerate() {
        let n = i + 1;
        let Some(f) = follow
            .iter()
            .find(|f| subtask.question.contains(&format!("`{}`", f.name)))
        else {
            let names: Vec<String> = follow.iter().map(|f| format!("`{}`", f.name)).collect();
            problems.push(format!(
                "subtask {n}: its `question` must name, in backticks, the one name it traces: {}",
                names.join(", ")
            ));
            continue;
        };
        if traced.contains(&f.name.as_str()) {
            problems.push(format!(
                "subtask {n}: `{}` is traced by an earlier subtask already",
                f.name
            ));
        }
        traced.push(&f.name);
        if let Some(beyond) = subtask.scope.iter().find(|p| !f.paths.contains(p)) {
            problems.push(format!(
                "subtask {n}: `{}` was searched in `{}` already: its scope may list only {}",
                f.name,
                crate::text::one_line(&beyond.chars().take(200).collect::<String>()),
                f.paths.join(", ")
            ));
        }
    }
    problems
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
        let Some(lead) = self.lead_model() else {
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
        let me = myself.clone();
        let fallback = as_shards(&follow, RoleId::EXPLORER);
        let standing = fallback.clone();
        let planning = async move {
            let tree = Tree::listed(&scope_of(&follow));
            let roles = [(RoleId::EXPLORER, explorer)];
            let rules = |subtasks: &[Subtask]| break_planners_rules(&follow, subtasks);
            let asked = Asked {
                question: &question,
                tree: Some(&tree),
                roles: &roles,
                max: follow.len(),
                wave: Some(&wave),
                rules: Some(&rules),
            };
            let (shards, _, turn) = leader::propose(&lead, &asked, standing, "").await;
            (shards, turn)
        };
        let task = async move {
            // A panic (a library's model) leaves the planner's follow-ups standing.
            let (shards, turn) = crate::subagent::CatchPanic(Box::pin(planning))
                .await
                .unwrap_or_else(|panic| {
                    let turn = LeadTurn {
                        outcome: format!("the lead model's task panicked: {panic}"),
                        ..LeadTurn::default()
                    };
                    (fallback, turn)
                });
            let _ = me.cast(LeadMsg::WavePlanned {
                shards,
                turn,
                last_added,
            });
        };
        let span = self.outside.span.clone();
        self.lead.lead_task = Some(tokio::spawn(task.instrument(span)));
    }

    /// The lead model planned the wave (or the planner's follow-ups stand): it is logged and
    /// spawned, the reason saying whose plan it is. Nothing comes of it once the run was
    /// cancelled.
    pub(super) async fn on_wave_planned(
        &mut self,
        myself: &ActorRef<LeadMsg>,
        shards: Vec<Shard>,
        turn: LeadTurn,
        last_added: usize,
    ) {
        if self.cancelled || !self.lead.following {
            return;
        }
        self.lead.lead_task = None;
        self.lead.following = false;
        let by = if turn.outcome.starts_with("accepted") {
            let name = self
                .config
                .lead_model
                .as_ref()
                .map(|m| m.name())
                .unwrap_or_default();
            format!("by the lead model {name}")
        } else {
            "by the planner: the lead model's plan was not used, its lead_turn says why".into()
        };
        self.lead_turn("follow-ups", turn);
        // Explorers whatever the plan said (the plan's check let no other role through).
        let shards = shards
            .into_iter()
            .map(|s| Shard {
                role: RoleId::EXPLORER,
                ..s
            })
            .collect();
        self.plan_follow_ups(shards, last_added, Some(&by));
        self.advance(myself).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::finding;

    fn follow_up(name: &str, paths: &[&str]) -> FollowUp {
        FollowUp {
            name: name.to_string(),
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

    /// Each subtask traces one of the planner's names, over that name's paths only, and no
    /// name twice: a question naming none, a path searched for its name already, or a name
    /// traced twice is a problem told back.
    #[test]
    fn a_lead_plan_traces_the_planners_names_over_their_paths_each_once() {
        let follow = [
            follow_up("flush_pages", &["b", "c/d.rs"]),
            follow_up("tick", &["b"]),
        ];
        let subtask = |scope: &[&str], question: &str| Subtask {
            scope: scope.iter().map(|p| p.to_string()).collect(),
            question: question.into(),
            role: RoleId::EXPLORER,
        };
        let ok = [
            subtask(&["c/d.rs"], "Who calls `flush_pages`?"),
            subtask(&["b"], "Where is `tick` defined?"),
        ];
        assert!(break_planners_rules(&follow, &ok).is_empty());
        let bad = [
            subtask(&["b"], "How does the engine start?"),
            subtask(&["c/d.rs"], "Where is `tick` defined?"),
            subtask(&["b"], "And `tick` again?"),
        ];
        let problems = break_planners_rules(&follow, &bad);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].starts_with("subtask 1: its `question` must name, in backticks, the one name it traces: `flush_pages`, `tick`"), "{problems:?}");
        assert!(
            problems[1].contains(
                "subtask 2: `tick` was searched in `c/d.rs` already: its scope may list only b"
            ),
            "{problems:?}"
        );
        assert!(
            problems[2].contains("subtask 3: `tick` is traced by an earlier subtask already"),
            "{problems:?}"
        );
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
