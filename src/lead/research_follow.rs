//! Research follow-ups, pure: the terms the passages of a research run's first answers name —
//! an option, a path, an attribute, a function — that no sub-question of the run asked about,
//! each a question for a researcher of the next wave.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;

use super::waves::{FollowUp, FOLLOWED_ANSWERS, MAX_FOLLOW_UPS};
use crate::handoff::Conclusion;
use crate::source::SourceId;

/// The terms a passage's text names, in order: what reads as code in prose — a flag
/// (`--broken-code`), a path (`mem::forget`), an attribute (`#[no_mangle]`,
/// `#[derive(Debug)]`), a call (`into_iter()`), a snake_case, SCREAMING_SNAKE or
/// inner-capital name (`catch_unwind`, `RUST_BACKTRACE`, `RwLock`). A URL or an email address
/// is an address, not a term: nothing in it is named.
pub(crate) fn named_terms(text: &str) -> Vec<String> {
    static ADDRESS: OnceLock<Regex> = OnceLock::new();
    let address = ADDRESS.get_or_init(|| {
        Regex::new(r"(?i)\b[a-z][a-z0-9+.-]*://\S+|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
            .expect("a valid pattern")
    });
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r#"(?x)
            \#!?\[[A-Za-z_][A-Za-z0-9_]*(?:\([^()\]\n]{0,80}\))?\]  # an attribute
            | (?:^|[\s("'])(--?[a-z][a-z0-9]*(?:-[a-z0-9]+)+|--[a-z][a-z0-9]+) # a flag
            | [A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+(?:\(\))? # a path
            | [A-Za-z_][A-Za-z0-9_]*\(\)                            # a call
            | \b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b                     # snake_case
            | \b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b                     # SCREAMING_SNAKE
            | \b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b                 # CamelCase
            "#,
        )
        .expect("a valid pattern")
    });
    let text = address.replace_all(text, " ");
    let mut out: Vec<String> = Vec::new();
    for c in re.captures_iter(&text) {
        let term = c
            .get(1)
            .unwrap_or_else(|| c.get(0).expect("the whole match"))
            .as_str()
            .trim();
        // A name longer than any a reader types is not followed.
        if term.chars().count() <= MAX_TERM_CHARS && !out.iter().any(|t| t == term) {
            out.push(term.to_string());
        }
    }
    out
}

/// The longest term followed, in characters.
const MAX_TERM_CHARS: usize = 80;

/// The text a research finding's claim gives of its passages: the claim without its
/// backticks (a sentence is quoted whole, or with its inline code in backticks).
fn passage_text(claim: &str) -> String {
    claim.replace('`', " ")
}

/// A term as compared with what was asked: lower case, without call parentheses.
fn key(term: &str) -> String {
    term.trim_end_matches("()").to_lowercase()
}

/// Whether `asked` (lower case) asks about `term` already: it holds the term, or every word
/// of it (`--edition` where the question says "edition").
fn asks_about(asked: &str, term: &str) -> bool {
    let k = key(term);
    // The whole term, not a part of a longer name (`evict_policy` in `evict_policy_table`).
    let name_char = |c: char| c.is_alphanumeric() || c == '_';
    let whole = asked.match_indices(&k).any(|(at, _)| {
        !asked[..at].chars().next_back().is_some_and(name_char)
            && !asked[at + k.len()..].chars().next().is_some_and(name_char)
    });
    if whole {
        return true;
    }
    // The asked text's words, a name (`evict_policy_table`) one word: a term's words asked
    // only inside a longer name are not asked.
    let words: BTreeSet<&str> = asked
        .split(|c: char| !name_char(c))
        .filter(|w| !w.is_empty())
        .collect();
    k.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .all(|w| words.contains(w))
}

/// The follow-ups of a research run: each term the passages of the first three answers (as
/// their claims give them) name that neither the question nor any sub-question asked about,
/// at most two, first named first. `asked`: the run's question and every sub-question
/// planned so far.
pub(crate) fn research_follow_ups(answers: &[Conclusion], asked: &[&str]) -> Vec<FollowUp> {
    let asked: Vec<String> = asked.iter().map(|q| q.to_lowercase()).collect();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for answer in answers.iter().take(FOLLOWED_ANSWERS) {
        for term in named_terms(&passage_text(&answer.claim)) {
            let k = key(&term);
            if out.len() >= MAX_FOLLOW_UPS {
                return out;
            }
            if k.len() < 3 || asked.iter().any(|q| asks_about(q, &term)) || !seen.insert(k) {
                continue;
            }
            let cited: Vec<String> = answer.sources.iter().map(SourceId::to_string).collect();
            out.push(FollowUp {
                question: format!("What is `{term}`?"),
                because: format!(
                    "`{term}` is named by a passage an answer quotes ({}) and no sub-question asked about it",
                    cited.join(", ")
                ),
                name: term,
                paths: Vec::new(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::finding;

    #[test]
    fn names_what_reads_as_code_in_prose() {
        assert_eq!(
            named_terms(
                "Use the --broken-code option; mem::forget is safe. Put #[no_mangle] on it, \
                 call into_iter() or catch_unwind, and take the RwLock. Plain words, a \
                 half-migrated crate and a -- dash are none. Set RUST_BACKTRACE, derive with \
                 #[derive(Debug)], pass \"--test-args\" on; https://example.com/a_b/c::d.html \
                 and me@mail_host.example name nothing."
            ),
            [
                "--broken-code",
                "mem::forget",
                "#[no_mangle]",
                "into_iter()",
                "catch_unwind",
                "RwLock",
                "RUST_BACKTRACE",
                "#[derive(Debug)]",
                "--test-args",
            ]
        );
        // A name no reader types is not followed.
        let long = format!("see {}_x here", "a".repeat(200));
        assert!(named_terms(&long).is_empty());
        assert!(named_terms("Nothing here reads as code.").is_empty());
    }

    #[test]
    fn a_term_the_question_or_a_sub_question_asked_is_not_followed() {
        let answers = [
            finding(
                "`Use catch_unwind at the boundary.` `See mem::forget and RwLock.`",
                "doc:a.html#L1-4",
            ),
            finding("`Also Mutex::lock() and RwLock.`", "doc:b.html#L2-3"),
        ];
        let f = research_follow_ups(&answers, &["How does catch_unwind work?"]);
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["mem::forget", "RwLock"], "at most two, in order");
        assert_eq!(f[0].question, "What is `mem::forget`?");
        assert!(f[0].because.contains("doc:a.html#L1-4"), "{}", f[0].because);
        assert!(f[0].paths.is_empty());
        // Asked already, in any case: nothing new to follow there.
        let f = research_follow_ups(
            &answers,
            &["How does catch_unwind work?", "what is `MEM::FORGET`?"],
        );
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["RwLock", "Mutex::lock()"]);
        // A term whose every word the question says is asked about already.
        let f = research_follow_ups(&answers, &["How do I use catch unwind with mem forget?"]);
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["RwLock", "Mutex::lock()"]);
        // A part of a name asked about is not asked about.
        let f = research_follow_ups(&answers, &["What is `mem::forget_all`? And `RwLocks`?"]);
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["catch_unwind", "mem::forget"]);
        // A sentence quoted with its inline code in backticks names its plain code too.
        let mixed = [finding(
            "When a build stopped, set retry_policy to `always` and resume it.",
            "doc:c.md#L1-2",
        )];
        let f = research_follow_ups(&mixed, &["How do I resume a stopped build?"]);
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["retry_policy"]);
    }
}
