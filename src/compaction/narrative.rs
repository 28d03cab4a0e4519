//! Model narratives held to a skeleton. Compaction writes each summary from a deterministic
//! template; a summary model may then rewrite it as readable prose, but only around the
//! skeleton code took from the template — its open items and hard constraints word for word,
//! its irreducible items (identifiers, paths, numbers, quoted strings), its effect states — and
//! [`validate`] refuses a narrative that drops a fact, names an outcome the skeleton does not
//! (an unknown outcome called a failure), closes an open item or grants a permission. A refused
//! narrative is never promoted: the template stands.

use super::floor::irreducible;
use crate::text::{binds, sentences};

/// The revision of the summary model's instructions, recorded with every narrative.
pub const NARRATIVE_PROMPT_REVISION: &str = "narrative-1";

/// Effect states a summary may name: each one the skeleton names must stay, spelled exactly.
const EFFECT_STATES: &[&str] = &[
    "proposed",
    "denied",
    "awaiting_approval",
    "executing",
    "observed",
    "outcome_unknown",
    "reconciled",
    "completed",
    "failed",
    "stopped",
    "superseded",
];

/// Words that state how something ended: a narrative may use one only where its skeleton
/// does, so an unknown outcome is never told as a failure, nor an open item as done.
const OUTCOME_WORDS: &[&str] = &[
    "answered",
    "closed",
    "complete",
    "completed",
    "done",
    "error",
    "errored",
    "fail",
    "failed",
    "fails",
    "failure",
    "finished",
    "fixed",
    "resolved",
    "settled",
    "succeeded",
    "success",
    "successful",
    "successfully",
];

/// Words that grant: a narrative sentence holding one must be a sentence of the skeleton.
const PERMISSION_WORDS: &[&str] = &[
    "allow",
    "allowed",
    "approved",
    "authorised",
    "authorized",
    "can now",
    "free to",
    "granted",
    "lifted",
    "may",
    "no longer",
    "ok to",
    "okay to",
    "permission",
    "permitted",
];

/// What code took from a summary's template: what any narrative of it must keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skeleton {
    /// The template's text (the three sections).
    pub template: String,
    /// Its open items, verbatim: each must stay under Open items.
    pub open: Vec<String>,
    /// Its hard constraints, verbatim: each must stay under Hard constraints.
    pub constraints: Vec<String>,
    /// Its irreducible items (identifiers, paths, numbers, quoted strings), verbatim.
    pub facts: Vec<String>,
    /// The effect states it names.
    pub states: Vec<&'static str>,
}

/// The three sections of a summary: settled, open, constraints (each line's text, bullets
/// taken off; `none` dropped).
fn sections(text: &str) -> [Vec<String>; 3] {
    let mut out: [Vec<String>; 3] = Default::default();
    let mut at: Option<usize> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(heading) = trimmed.strip_prefix("## ") {
            at = match heading.trim().to_lowercase().as_str() {
                "settled conclusions" => Some(0),
                "open items" => Some(1),
                "hard constraints" => Some(2),
                _ => None,
            };
            continue;
        }
        let item = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
            .unwrap_or(trimmed)
            .trim();
        if let Some(i) = at {
            if !item.is_empty() && !item.eq_ignore_ascii_case("none") {
                out[i].push(item.to_string());
            }
        }
    }
    out
}

/// Whether `text` has all three section headings.
fn has_sections(text: &str) -> bool {
    let headings: Vec<String> = text
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("## ")
                .map(|h| h.trim().to_lowercase())
        })
        .collect();
    ["settled conclusions", "open items", "hard constraints"]
        .iter()
        .all(|h| headings.iter().any(|x| x == h))
}

/// The words of `text`, lower case.
fn lower_words(text: &str) -> Vec<String> {
    crate::text::words(text).map(str::to_lowercase).collect()
}

/// Whether `text` holds `cue` (one word or a phrase) as words.
fn holds_cue(words: &[String], cue: &str) -> bool {
    let cue: Vec<&str> = cue.split(' ').collect();
    words
        .windows(cue.len())
        .any(|w| w.iter().zip(&cue).all(|(a, b)| a == b))
}

impl Skeleton {
    /// The skeleton of a template summary (its three sections, as compaction wrote them).
    pub fn of(template: &str) -> Skeleton {
        let [_, open, constraints] = sections(template);
        let mut facts: Vec<String> = Vec::new();
        for item in irreducible(template) {
            let inside = open.iter().chain(&constraints).any(|o| o.contains(&item));
            if !inside && !facts.contains(&item) {
                facts.push(item);
            }
        }
        Skeleton {
            template: template.to_string(),
            open,
            constraints,
            facts,
            states: EFFECT_STATES
                .iter()
                .copied()
                .filter(|s| template.contains(s))
                .collect(),
        }
    }

    /// What the summary model is asked: its instructions, and the template with the facts it
    /// must keep.
    pub fn prompt(&self) -> (String, String) {
        let system = "You rewrite a summary of an agent's earlier turns as a short, readable \
            narrative for the agent that continues the work. Keep the three sections, each \
            under its heading: ## Settled conclusions, ## Open items, ## Hard constraints. \
            Copy word for word every open item (under Open items), every hard constraint \
            (under Hard constraints) and every fact listed; keep every effect state exactly \
            as written (outcome_unknown is not a failure). Do not say that anything failed, \
            succeeded or was resolved unless the summary says so, and add no permission, \
            rule or conclusion of your own. Answer with the three sections only."
            .to_string();
        let mut user = format!("The summary:\n{}\n", self.template.trim_end());
        if !self.facts.is_empty() {
            user.push_str("\nFacts to copy word for word:\n");
            for f in &self.facts {
                user.push_str(&format!("- {f}\n"));
            }
        }
        (system, user)
    }
}

/// What is wrong with a narrative of `skeleton`, one line each; empty when it may be promoted.
/// It must have the three sections; keep every open item verbatim under Open items (not
/// closed), every hard constraint verbatim under Hard constraints, every irreducible fact
/// verbatim and every effect state exactly; name no outcome the skeleton does not (an unknown
/// outcome told as a failure, an open item told as done); and hold no sentence that grants a
/// permission or binds unless the skeleton says it.
pub fn validate(narrative: &str, skeleton: &Skeleton) -> Vec<String> {
    let mut problems = Vec::new();
    if !has_sections(narrative) {
        problems.push(
            "it does not have the three sections (Settled conclusions, Open items, Hard constraints)"
                .to_string(),
        );
    }
    let [settled, open, constraints] = sections(narrative);
    let under = |items: &[String], text: &str| items.iter().any(|i| i.contains(text));
    for item in &skeleton.open {
        if !under(&open, item) {
            problems.push(format!(
                "the open item `{item}` is not under Open items, word for word"
            ));
        } else if under(&settled, item) {
            problems.push(format!("the open item `{item}` is told as settled"));
        }
    }
    for c in &skeleton.constraints {
        if !under(&constraints, c) {
            problems.push(format!(
                "the hard constraint `{c}` is not under Hard constraints, word for word"
            ));
        }
    }
    for fact in &skeleton.facts {
        if !narrative.contains(fact.as_str()) {
            problems.push(format!("the fact `{fact}` is dropped"));
        }
    }
    for state in &skeleton.states {
        if !narrative.contains(state) {
            problems.push(format!("the effect state `{state}` is not kept exactly"));
        }
    }
    let skeleton_words = lower_words(&skeleton.template);
    let words = lower_words(narrative);
    for word in OUTCOME_WORDS {
        if holds_cue(&words, word) && !holds_cue(&skeleton_words, word) {
            problems.push(format!(
                "it says `{word}`, an outcome the summary does not state"
            ));
        }
    }
    let skeleton_sentences: Vec<&str> = sentences(&skeleton.template);
    outcomes_per_fact(narrative, skeleton, &skeleton_sentences, &mut problems);
    for s in sentences(narrative) {
        let said = skeleton_sentences.iter().any(|k| k.contains(s.trim()));
        if said {
            continue;
        }
        let s_words = lower_words(s);
        let grants = PERMISSION_WORDS.iter().any(|p| holds_cue(&s_words, p));
        let quoted = skeleton.constraints.iter().any(|c| s.contains(c.as_str()));
        if grants || (binds(s) && !quoted) {
            problems.push(format!(
                "`{}` grants or binds where the summary does not",
                crate::text::one_line(s.trim())
            ));
        }
    }
    problems
}

/// An outcome word said of a fact must be said of it in the summary: a sentence naming a
/// fact (an identifier, a path, a number) may use the word only if some sentence of the
/// template names that fact with it too — so a template that says one step failed does not
/// let a narrative say another, whose outcome is unknown, failed as well.
fn outcomes_per_fact(
    narrative: &str,
    skeleton: &Skeleton,
    template: &[&str],
    problems: &mut Vec<String>,
) {
    let template: Vec<(&str, Vec<String>)> =
        template.iter().map(|t| (*t, lower_words(t))).collect();
    for s in sentences(narrative) {
        let words = lower_words(s);
        for word in OUTCOME_WORDS.iter().filter(|w| holds_cue(&words, w)) {
            let unsaid = skeleton
                .facts
                .iter()
                .filter(|f| s.contains(f.as_str()))
                .find(|f| {
                    !template
                        .iter()
                        .any(|(t, tw)| t.contains(f.as_str()) && holds_cue(tw, word))
                });
            if let Some(fact) = unsaid {
                let line = format!("it says `{word}` of `{fact}`, which the summary does not");
                if !problems.contains(&line) {
                    problems.push(line);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "## Settled conclusions\n- The migration `0042_add_index` ran on db-7 and its outcome_unknown state was logged.\n- `retry_delay` doubles per attempt up to 30 s.\n## Open items\n- Did the index build finish on db-7?\n## Hard constraints\n- Never edit src/big.rs.\n";

    fn narrative(body: &str) -> String {
        body.to_string()
    }

    #[test]
    fn a_faithful_narrative_passes() {
        let skeleton = Skeleton::of(TEMPLATE);
        assert!(skeleton.facts.iter().any(|f| f.contains("0042_add_index")));
        assert_eq!(skeleton.open, vec!["Did the index build finish on db-7?"]);
        assert_eq!(skeleton.constraints, vec!["Never edit src/big.rs."]);
        assert_eq!(skeleton.states, vec!["outcome_unknown"]);
        let good = narrative("## Settled conclusions\nWe ran the migration `0042_add_index` on db-7; its state is outcome_unknown, so nobody knows yet whether it took. `retry_delay` doubles per attempt up to 30 s.\n## Open items\n- Did the index build finish on db-7?\n## Hard constraints\n- Never edit src/big.rs.\n");
        assert_eq!(validate(&good, &skeleton), Vec::<String>::new());
    }

    #[test]
    fn an_unknown_outcome_told_as_a_failure_is_refused() {
        let skeleton = Skeleton::of(TEMPLATE);
        let bad = narrative("## Settled conclusions\nThe migration `0042_add_index` failed on db-7 (outcome_unknown). `retry_delay` doubles per attempt up to 30 s.\n## Open items\n- Did the index build finish on db-7?\n## Hard constraints\n- Never edit src/big.rs.\n");
        let problems = validate(&bad, &skeleton);
        assert!(
            problems.iter().any(|p| p.contains("`failed`")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_failure_said_of_one_step_is_not_lent_to_another() {
        let template = "## Settled conclusions\n- The build of `web_ui` failed at step 4.\n- The deploy of `api_gw` is outcome_unknown.\n## Open items\n- Did `api_gw` come up?\n## Hard constraints\n- none\n";
        let skeleton = Skeleton::of(template);
        let faithful = "## Settled conclusions\nThe build of `web_ui` failed at step 4, and the deploy of `api_gw` is outcome_unknown.\n## Open items\n- Did `api_gw` come up?\n## Hard constraints\n- none\n";
        let problems = validate(faithful, &skeleton);
        // The joined sentence says `failed` of `api_gw` too: refused, as it should be.
        assert!(
            problems.iter().any(|p| p.contains("it says `failed` of `")),
            "{problems:?}"
        );
        let apart = "## Settled conclusions\nThe build of `web_ui` failed at step 4. The deploy of `api_gw` is outcome_unknown.\n## Open items\n- Did `api_gw` come up?\n## Hard constraints\n- none\n";
        assert_eq!(validate(apart, &skeleton), Vec::<String>::new());
        let lent = "## Settled conclusions\nThe build of `web_ui` failed at step 4. The deploy of `api_gw` failed too (outcome_unknown).\n## Open items\n- Did `api_gw` come up?\n## Hard constraints\n- none\n";
        let problems = validate(lent, &skeleton);
        assert!(
            problems.iter().any(|p| p.contains("it says `failed` of `")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_dropped_constraint_a_closed_item_and_a_permission_are_refused() {
        let skeleton = Skeleton::of(TEMPLATE);
        let dropped = "## Settled conclusions\nThe migration `0042_add_index` ran on db-7, outcome_unknown. `retry_delay` doubles per attempt up to 30 s.\n## Open items\n- Did the index build finish on db-7?\n## Hard constraints\n- none\n";
        assert!(validate(dropped, &skeleton)
            .iter()
            .any(|p| p.contains("Never edit src/big.rs.")));
        let closed = "## Settled conclusions\nThe migration `0042_add_index` ran on db-7, outcome_unknown. `retry_delay` doubles per attempt up to 30 s. Did the index build finish on db-7? It did.\n## Open items\n- none\n## Hard constraints\n- Never edit src/big.rs.\n";
        assert!(validate(closed, &skeleton)
            .iter()
            .any(|p| p.contains("is not under Open items")));
        let granted = "## Settled conclusions\nThe migration `0042_add_index` ran on db-7, outcome_unknown. `retry_delay` doubles per attempt up to 30 s. You may now edit the tests.\n## Open items\n- Did the index build finish on db-7?\n## Hard constraints\n- Never edit src/big.rs.\n";
        assert!(validate(granted, &skeleton)
            .iter()
            .any(|p| p.contains("grants or binds")));
        let no_sections = "The migration `0042_add_index` ran.";
        assert!(validate(no_sections, &skeleton)
            .iter()
            .any(|p| p.contains("three sections")));
    }

    #[test]
    fn a_dropped_fact_or_state_is_refused() {
        let skeleton = Skeleton::of(TEMPLATE);
        let lossy = "## Settled conclusions\nA migration ran on a database. The delay doubles.\n## Open items\n- Did the index build finish on db-7?\n## Hard constraints\n- Never edit src/big.rs.\n";
        let problems = validate(lossy, &skeleton);
        assert!(
            problems.iter().any(|p| p.contains("0042_add_index")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("`outcome_unknown`")),
            "{problems:?}"
        );
    }
}
