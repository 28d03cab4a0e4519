//! What a research question asks, word by word: the words worth searching for, the things
//! it names, whether it asks for a number — and the sentences read that define a term by the
//! question's words, so the corpus's own name for what the question describes is searched;
//! the queries a researcher runs; the search tool's counts of the chunks holding each word,
//! and each word's weight by them.

use std::collections::{BTreeMap, HashSet};

use super::{Exchange, Task};

/// The queries a researcher runs: its sub-question's words, then (for a sub-question of a
/// larger question) those words with the whole question's context — its words that no other
/// researcher's sub-question holds, so no two researchers run the same query —, then the code
/// names it holds, alone (a name several sub-questions hold, by one researcher only).
pub(super) fn queries(task: &Task) -> Vec<String> {
    let theirs: Vec<String> = task.others.iter().flat_map(|o| content_words(o)).collect();
    let mut out = vec![content_words(&task.question).join(" ")];
    if let Some(whole) = &task.whole {
        let mut words = content_words(&task.question);
        for w in content_words(whole) {
            if !words.contains(&w) && !theirs.contains(&w) {
                words.push(w);
            }
        }
        out.push(words.join(" "));
    }
    // The code names the question holds (`into_iter`, `Box::new`, `IntoIterator`), alone: every
    // page that speaks of them, whatever words it uses around them — a name of several words
    // as a phrase. A name several researchers' sub-questions hold is searched alone by one.
    let mut names: Vec<String> = Vec::new();
    let mut named = 0;
    for raw in task
        .question
        .split_whitespace()
        .filter(|w| is_identifier(w))
    {
        // (A name other sub-questions hold too is searched by the first of them, in text order:
        // every researcher decides alike from the same sub-questions.)
        let words: Vec<String> = content_words(raw)
            .into_iter()
            .filter(|w| {
                !task
                    .others
                    .iter()
                    .any(|o| o.as_str() < task.question.as_str() && content_words(o).contains(w))
            })
            .collect();
        named += words.len();
        match words.len() {
            0 => {}
            1 => names.extend(words),
            _ => names.push(format!("\"{}\"", words.join(" "))),
        }
    }
    names.dedup();
    if !names.is_empty() && named < content_words(&task.question).len() {
        out.push(names.join(" "));
    }
    out.retain(|q| !q.is_empty());
    out.dedup();
    out
}

/// Whether a word is written as a name in code: it holds `_`, `::` or `()`, a `!` before a
/// bracket or in backticks (`vec![…]`, `` `panic!` ``, not "Help!"), or a capital after a
/// small letter (`IntoIterator`, also a brand such as `GitHub`).
pub(super) fn is_identifier(w: &str) -> bool {
    let ticked = w.starts_with('`');
    let w = w.trim_matches(|c: char| !c.is_alphanumeric() && !"_()!".contains(c));
    let camel = w
        .chars()
        .zip(w.chars().skip(1))
        .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    let bang =
        w.contains("!(") || w.contains("![") || w.contains("!{") || (ticked && w.contains('!'));
    w.contains('_') || w.contains("::") || w.contains("()") || bang || camel
}

/// A text's words worth searching for: not stop words, not single letters.
pub(super) fn content_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut before = String::new();
    let text = crate::text::without_conjunctions(text);
    for w in text.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-') {
        let w = w.trim_matches('-');
        let lower = w.to_lowercase();
        let asks_count = is_count_ask(&before, &lower);
        if !lower.is_empty() {
            before.clone_from(&lower);
        }
        if lower.chars().count() < 2
            || crate::text::is_stop_word(&lower)
            || out.contains(&lower)
            || asks_count
        {
            continue;
        }
        out.push(lower);
    }
    out
}

/// Whether a word asks for a number with the word before it (`how many`, `how much`): no
/// content to search for — a sentence holding a number answers it.
fn is_count_ask(before: &str, word: &str) -> bool {
    before == "how" && matches!(word, "many" | "much")
}

/// Whether a question asks for a number (see [`is_count_ask`]).
pub(super) fn asks_count(question: &str) -> bool {
    let words: Vec<String> = crate::text::words(question)
        .map(str::to_lowercase)
        .collect();
    words.windows(2).any(|w| is_count_ask(&w[0], &w[1]))
}

/// The stem given to a sentence holding a number, for a question asking for one.
pub(super) const NUMBER: &str = "#number";

/// Whether a sentence holds a number: digits (`7`, `10,000`, `1.5`; not a year, not a version
/// such as `1.34.0`, not an issue such as `#12`) or a number word (not "one", most often a
/// pronoun).
pub(super) fn holds_number(sentence: &str) -> bool {
    const WORDS: &[&str] = &[
        "zero",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "thousand",
        "million",
        "billion",
        "dozen",
        "once",
        "twice",
        "thrice",
    ];
    sentence.split_whitespace().any(|raw| {
        let w = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '#');
        if w.starts_with('#') {
            return false;
        }
        let digits = w.replace(',', "");
        let year = w.len() == 4 && (w.starts_with("19") || w.starts_with("20"));
        let number = !digits.is_empty()
            && digits.len() <= 12
            && digits.matches('.').count() <= 1
            && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
            && digits.chars().next().is_some_and(|c| c.is_ascii_digit())
            && !digits.ends_with('.');
        (number && !year) || WORDS.contains(&w.to_lowercase().as_str())
    })
}

/// The question's content words, each with whether it names a thing: an acronym or a number,
/// a word capitalised inside a sentence, or one holding `_`, `::` or `!`.
pub(super) fn question_words(question: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for sentence in crate::text::sentences(question) {
        let mut before = String::new();
        for (i, raw) in sentence.split_whitespace().enumerate() {
            let w = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '!');
            let asks_count = is_count_ask(&before, &w.to_lowercase());
            before = w.to_lowercase();
            if asks_count {
                continue;
            }
            let named = (w.len() >= 2
                && w.chars()
                    .filter(|c| c.is_alphabetic())
                    .all(char::is_uppercase))
                || (i > 0 && w.chars().next().is_some_and(char::is_uppercase))
                || w.contains(['_', '!'])
                || w.contains("::");
            for word in content_words(w) {
                if !out.iter().any(|(o, _)| *o == word) {
                    out.push((word, named));
                }
            }
        }
    }
    out
}

/// The verbs that join a term to its definition.
const DEFINES: &[&str] = &[" is ", " are ", " refers to ", " means "];
/// Words that end a term in a definition's subject (`the prelude of the standard library`).
const TERM_ENDS: &[&str] = &[
    "of", "in", "for", "on", "with", "from", "to", "that", "which", "used", "when", "by",
];
/// Most words in a definition's subject.
const SUBJECT_WORDS: usize = 8;
/// Most words in a defined term.
const TERM_WORDS: usize = 3;

/// A sentence defining a term (`The prelude of the standard library is the module containing
/// everything that is automatically imported in every module`): the term's words
/// (`prelude`) and the text defining it. None when the sentence defines nothing: no joining
/// verb after a short subject, or a subject without a word worth searching for.
pub(super) fn definition(sentence: &str) -> Option<(Vec<String>, &str)> {
    let (at, verb) = DEFINES
        .iter()
        .filter_map(|v| sentence.find(v).map(|at| (at, *v)))
        .min()?;
    let (subject, predicate) = (&sentence[..at], &sentence[at + verb.len()..]);
    let words: Vec<&str> = subject.split_whitespace().collect();
    if words.is_empty() || words.len() > SUBJECT_WORDS {
        return None;
    }
    let head: Vec<&str> = words
        .iter()
        .copied()
        .take_while(|w| !TERM_ENDS.contains(&w.to_lowercase().as_str()))
        .collect();
    let term = content_words(&head.join(" "));
    (!term.is_empty() && term.len() <= TERM_WORDS).then_some((term, predicate))
}

/// The weight of the whole question's words in a sub-question's, against its own.
pub(super) const CONTEXT_WEIGHT: f64 = 0.5;

/// One search hit as the search tool printed it.
pub(super) struct Listed {
    pub(super) id: String,
    pub(super) rank: usize,
}

/// The chunk ids a search printed, in rank order, and its term counts.
pub(super) fn parse_search(content: &str) -> (Vec<Listed>, BTreeMap<String, u64>, u64) {
    let mut hits = Vec::new();
    let mut counts = BTreeMap::new();
    let mut total = 0;
    for line in content.lines() {
        if let Some(rest) = line.strip_prefix(crate::corpus::TERMS_LINE) {
            if let Some((n, list)) = rest.split_once("): ") {
                total = n.parse().unwrap_or(0);
                for item in list.split(", ") {
                    if let Some((t, c)) = item.rsplit_once(' ') {
                        counts.insert(t.to_string(), c.parse().unwrap_or(0));
                    }
                }
            }
            continue;
        }
        let Some((num, rest)) = line.split_once(". doc:") else {
            continue;
        };
        let Ok(rank) = num.trim().parse::<usize>() else {
            continue;
        };
        let id = rest.split(" — ").next().unwrap_or(rest).trim().to_string();
        hits.push(Listed { id, rank });
    }
    (hits, counts, total)
}

/// How many chunks hold each stemmed word the searches printed, and how many chunks there
/// are (at least 1).
pub(super) struct Counts {
    pub(super) held: BTreeMap<String, u64>,
    pub(super) chunks: u64,
}

impl Counts {
    pub(super) fn of(searches: &[&Exchange<'_>]) -> Counts {
        let mut held = BTreeMap::new();
        let mut chunks = 1u64;
        for ex in searches {
            let (_, c, n) = parse_search(ex.content);
            held.extend(c);
            chunks = chunks.max(n);
        }
        Counts { held, chunks }
    }

    /// Whether a word's stem is in no chunk (a word no search counted is not known unseen).
    pub(super) fn unseen(&self, stem: &str) -> bool {
        self.held.get(stem).copied() == Some(0)
    }
}

/// A question word's stem and weight, and whether the sub-question itself holds it (else it
/// is the whole question's context).
pub(super) struct Weight {
    pub(super) stem: String,
    pub(super) w: f64,
    pub(super) own: bool,
}

/// Each question word's weight: how rare it is among the corpus's chunks (the search tool's
/// counts), by its stem.
pub(super) fn weights(task: &Task, counts: &Counts, foreign: bool) -> Vec<Weight> {
    let total = counts.chunks;
    let mut out: Vec<Weight> = Vec::new();
    // A sub-question's words count whole; the rest of the whole question — its context, not
    // what another researcher's sub-question asks — counts at [`CONTEXT_WEIGHT`].
    let theirs: HashSet<String> = task
        .others
        .iter()
        .flat_map(|o| crate::corpus::stems(o))
        .collect();
    let context = task
        .whole
        .as_deref()
        .map(question_words)
        .unwrap_or_default();
    let words = question_words(&task.question)
        .into_iter()
        .map(|(w, named)| (w, named, 1.0))
        .chain(
            context
                .into_iter()
                .map(|(w, named)| (w, named, CONTEXT_WEIGHT)),
        );
    for (word, named, share) in words {
        for stem in crate::corpus::stems(&word) {
            if share < 1.0 && theirs.contains(&stem) {
                continue;
            }
            if out.iter().any(|o| o.stem == stem) {
                continue;
            }
            let df = counts.held.get(&stem).copied().unwrap_or(0);
            // A word in no chunk: a paraphrase the corpus words otherwise is left out; a thing
            // the question names (an acronym, a name, an identifier) that the corpus never
            // mentions counts fully against every passage.
            let w = match (df, named) {
                (0, false) if !foreign => 0.0,
                _ => share * ((total as f64 + 1.0) / (df as f64 + 1.0)).ln().max(0.1),
            };
            out.push(Weight {
                stem,
                w,
                own: share == 1.0,
            });
        }
    }
    // A sub-question whose own words are all paraphrases the corpus words otherwise ("where
    // is it kept?") is asked by its context: the context's words count as its own, whole.
    if !out.iter().any(|w| w.own && w.w > 0.0) {
        for w in out.iter_mut().filter(|w| !w.own) {
            w.w /= CONTEXT_WEIGHT;
            w.own = true;
        }
    }
    // A question asking "how many" is answered by a number: one weighs as its rarest word.
    if asks_count(&task.question) {
        let w = out
            .iter()
            .filter(|w| w.own)
            .map(|w| w.w)
            .fold(0.0, f64::max);
        out.push(Weight {
            stem: NUMBER.into(),
            w,
            own: true,
        });
    }
    out
}

/// Whether the question is foreign to the corpus: its sub-question names a thing (see
/// [`question_words`]) that no chunk holds, or a third of the whole question's words are in no
/// chunk (a sub-question of one paraphrased word is not foreign by it).
pub(super) fn foreign(task: &Task, counts: &Counts) -> bool {
    let unseen = |w: &str| crate::corpus::stems(w).iter().any(|s| counts.unseen(s));
    let named = question_words(&task.question)
        .iter()
        .any(|(w, named)| *named && unseen(w));
    let words = question_words(task.whole.as_deref().unwrap_or(&task.question));
    let share = words.iter().filter(|(w, _)| unseen(w)).count() * 3 >= words.len().max(1);
    named || share
}

/// The searches that test an absence: every word the question names and the corpus never
/// mentions, alone; else the question's three rarest words, all required.
pub(super) fn absence_queries(task: &Task, counts: &Counts) -> Vec<String> {
    let weights: Vec<Weight> = weights(task, counts, true)
        .into_iter()
        .filter(|w| w.own && w.w > 0.0 && w.stem != NUMBER)
        .collect();
    let unseen: Vec<String> = weights
        .iter()
        .filter(|w| counts.unseen(&w.stem))
        .map(|w| format!("+{}", w.stem))
        .collect();
    if !unseen.is_empty() {
        return unseen;
    }
    let mut ranked: Vec<&Weight> = weights.iter().collect();
    ranked.sort_by(|a, b| b.w.total_cmp(&a.w));
    let rare: Vec<String> = ranked
        .iter()
        .take(3)
        .map(|w| format!("+{}", w.stem))
        .collect();
    if rare.is_empty() {
        Vec::new()
    } else {
        vec![rare.join(" ")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_many_asks_for_a_number_and_is_no_word_to_search() {
        assert!(asks_count("When it fails, how many tries are made?"));
        assert!(asks_count("How much memory does it take?"));
        assert!(!asks_count("Many tries are made: which ones?"));
        assert_eq!(content_words("how many tries"), vec!["tries"]);
        assert_eq!(content_words("many tries"), vec!["many", "tries"]);
        // A conjunction of several words is no content either.
        assert_eq!(
            content_words("zero as soon as draining starts"),
            vec!["zero", "draining", "starts"]
        );
        let words: Vec<String> = question_words("How many tries are made?")
            .into_iter()
            .map(|(w, _)| w)
            .collect();
        assert_eq!(words, vec!["tries", "made"]);
    }

    #[test]
    fn a_number_is_a_count_not_a_year_a_version_or_an_issue() {
        for yes in [
            "Each ferry carries at most 40 cars.",
            "The kettle boils twice a day.",
            "The archive keeps 10,000 letters.",
            "A lap takes 1.5 minutes.",
            "Seventeen gulls nest on the roof.",
        ] {
            assert!(holds_number(yes), "{yes}");
        }
        for no in [
            "The ferry service started in 1998.",
            "The tool 2.10.3 fixed it.",
            "See the ticket (#4521) for details.",
            "One may also walk there.",
        ] {
            assert!(!holds_number(no), "{no}");
        }
    }

    #[test]
    fn code_names_are_told_from_words() {
        for w in [
            "into_iter",
            ".into_iter()",
            "Box::new",
            "`matches!`",
            "vec![1]",
            "IntoIterator",
            "len()",
        ] {
            assert!(is_identifier(w), "{w}");
        }
        for w in [
            "Iterator",
            "FFI",
            "Help!",
            "containers",
            "2021",
            "half-migrated",
        ] {
            assert!(!is_identifier(w), "{w}");
        }
    }

    #[test]
    fn a_definition_names_its_term() {
        let (term, predicate) =
            definition("The scullery of the old house is the room where every dish is washed.")
                .unwrap();
        assert_eq!(term, vec!["scullery"]);
        assert!(predicate.starts_with("the room where"));
        assert_eq!(
            definition("A tide table means the hours are known.")
                .unwrap()
                .0,
            vec!["tide", "table"]
        );
        // No short subject, or no word worth searching in it: no definition.
        assert!(definition("It is the room where dishes are washed.").is_none());
        assert!(definition("Nothing here defines anything at all.").is_none());
        assert!(definition(
            "When the last ferry of the evening leaves the harbour at dusk, it is dark."
        )
        .is_none());
    }

    fn task(question: &str) -> Task {
        Task {
            question: question.into(),
            whole: None,
            others: Vec::new(),
            scope: Vec::new(),
            orienting: false,
            verify: Vec::new(),
        }
    }

    #[test]
    fn the_code_names_a_question_holds_are_searched_alone_too() {
        let asked = queries(&task(
            "Calling .drain_all() on some queues began returning copies. Which queues, and Table::clear?",
        ));
        assert_eq!(asked.len(), 2, "{asked:?}");
        assert_eq!(asked[1], "drain_all \"table clear\"");
        // A question naming no code, or nothing but code, is searched once.
        assert_eq!(
            queries(&task("Which containers yield owned values?")).len(),
            1
        );
        assert_eq!(queries(&task("Box::new?")).len(), 1);
        // A name two researchers' sub-questions hold is searched alone by one of them.
        let mut first = task("What does drain_all return on queues?");
        first.others = vec!["What does drain_all return on stacks?".into()];
        assert_eq!(queries(&first).len(), 2, "{:?}", queries(&first));
        let mut second = task("What does drain_all return on stacks?");
        second.others = vec!["What does drain_all return on queues?".into()];
        assert_eq!(queries(&second).len(), 1, "{:?}", queries(&second));
    }
}
