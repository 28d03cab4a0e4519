//! A research question split into sub-questions that do not overlap (pure): by clauses — a
//! question sentence holding two asks joined by `, and` / `; ` / `, or` before a question
//! word —, then by named things — a clause naming two of them joined by `and` (two years,
//! two names) is asked once for each. An ask opening on a frame (`When X, how many …, and what
//! …?`) gives its frame to every clause: the later ones speak of what it names. The sentences
//! that are no question are context, given with each sub-question.

/// Most sub-questions (researchers) for one question.
pub(crate) const MOST_SUB_QUESTIONS: usize = 4;

/// Words that open an ask.
const ASKS: &[&str] = &[
    "what", "which", "when", "where", "why", "how", "who", "whom", "whose", "does", "do", "did",
    "is", "are", "was", "were", "can", "could", "should", "will", "would", "has", "have",
];

/// The sub-questions of a question; one (the question) when it has a single ask.
pub(crate) fn sub_questions(question: &str) -> Vec<String> {
    let sentences = crate::text::sentences(question);
    let asks: Vec<&str> = sentences
        .iter()
        .copied()
        .filter(|s| s.trim_end().ends_with('?'))
        .collect();
    if asks.is_empty() {
        return vec![question.trim().to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    for ask in &asks {
        let frame = frame(ask);
        for (i, clause) in clauses(ask).into_iter().enumerate() {
            for one in by_named_things(&clause) {
                // The first clause holds the frame already.
                let one = match frame {
                    Some(f) if i > 0 => format!("{f}, {one}"),
                    _ => one,
                };
                if !out.contains(&one) {
                    out.push(one);
                }
            }
        }
    }
    out.truncate(MOST_SUB_QUESTIONS);
    if out.len() <= 1 {
        return vec![question.trim().to_string()];
    }
    out
}

/// Words that open a frame: a clause saying under what the ask holds.
const FRAMES: &[&str] = &[
    "when", "if", "after", "before", "once", "while", "since", "whenever", "unless",
];

/// An ask's frame: its opening clause up to the comma before its first ask word, when it
/// opens on a frame word (`When rustdoc pulls call sites, how many …` → `When rustdoc pulls
/// call sites`).
fn frame(ask: &str) -> Option<&str> {
    let ask = ask.trim();
    let mut words = ask.split_whitespace().map(str::to_lowercase);
    let first = words.next()?;
    // `When is …` asks; `When the cache …` frames.
    let second = words.next()?;
    if !FRAMES.contains(&first.as_str()) || ASKS.contains(&second.as_str()) {
        return None;
    }
    ask.match_indices(',').find_map(|(at, _)| {
        let next = ask[at + 1..].split_whitespace().next()?.to_lowercase();
        ASKS.contains(&next.as_str()).then(|| ask[..at].trim())
    })
}

/// An ask split where `, and` / `; ` / `, or` / `, but` is followed by a question word.
fn clauses(ask: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = ask.trim();
    'outer: loop {
        for (at, _) in rest.match_indices([',', ';']) {
            let after = rest[at + 1..].trim_start();
            let after = ["and ", "or ", "but ", "also "]
                .iter()
                .find_map(|j| after.strip_prefix(j))
                .unwrap_or(if rest.as_bytes()[at] == b';' {
                    after
                } else {
                    ""
                });
            let first = after.split_whitespace().next().unwrap_or("").to_lowercase();
            if ASKS.contains(&first.as_str()) {
                out.push(finish(&rest[..at]));
                rest = after;
                continue 'outer;
            }
        }
        out.push(finish(rest));
        return out;
    }
}

/// A clause ending as a question.
fn finish(clause: &str) -> String {
    let c = clause.trim().trim_end_matches(['?', ',', ';', ' ']);
    format!("{c}?")
}

/// A thing named: a number of two or more digits, or a word with a capital letter after its
/// first (`RwLock`), or holding `_` or `::`.
fn named(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !c.is_alphanumeric());
    (w.len() >= 2 && w.chars().all(|c| c.is_ascii_digit()))
        || w.chars().skip(1).any(|c| c.is_uppercase())
        || w.contains('_')
        || w.contains("::")
}

/// A clause naming two things joined by `and` (`with the 2021 edition and with the 2024
/// edition`): one clause for each, the other's words left out.
fn by_named_things(clause: &str) -> Vec<String> {
    let words: Vec<&str> = clause.split_whitespace().collect();
    let Some(and) = words.iter().position(|w| *w == "and") else {
        return vec![clause.to_string()];
    };
    let left = words[..and].iter().rposition(|w| named(w));
    let right = words[and + 1..]
        .iter()
        .position(|w| named(w))
        .map(|p| and + 1 + p);
    let (Some(l), Some(r)) = (left, right) else {
        return vec![clause.to_string()];
    };
    // Only near the `and`: two things of one list, not two halves of a long sentence.
    if and - l > 4 || r - and > 5 {
        return vec![clause.to_string()];
    }
    // The right side runs to the clause's end; the left side's own words start at the
    // preposition opening it (`with the 2021 edition`), if one is near.
    let start = words[..=l]
        .iter()
        .rposition(|w| {
            matches!(
                w.to_lowercase().as_str(),
                "with" | "in" | "for" | "on" | "from" | "to" | "between" | "under" | "of"
            )
        })
        .filter(|p| l - p <= 3)
        .unwrap_or(l);
    let first: Vec<&str> = words[..and].to_vec();
    let second: Vec<&str> = words[..start]
        .iter()
        .chain(words[and + 1..].iter())
        .copied()
        .collect();
    let (a, b) = (finish(&first.join(" ")), finish(&second.join(" ")));
    if a == b {
        return vec![clause.to_string()];
    }
    vec![a, b]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_with_two_asks_is_two_sub_questions() {
        assert_eq!(
            sub_questions("The build broke after the upgrade. What flag is needed now, and which other settings change?"),
            vec!["What flag is needed now?", "which other settings change?"]
        );
        assert_eq!(
            sub_questions("Where is the cache kept?"),
            vec!["Where is the cache kept?"]
        );
        assert_eq!(sub_questions("no question mark"), vec!["no question mark"]);
    }

    #[test]
    fn a_frame_is_given_to_every_clause() {
        assert_eq!(
            sub_questions("When the cache is full, how many entries are dropped, and what happens to the rest?"),
            vec![
                "When the cache is full, how many entries are dropped?",
                "When the cache is full, what happens to the rest?"
            ]
        );
        // A question word opening the ask is no frame.
        assert_eq!(
            sub_questions("When is the cache cleared, and which flag empties it?"),
            vec!["When is the cache cleared?", "which flag empties it?"]
        );
        assert_eq!(
            sub_questions(
                "When is the cache cleared, how is it refilled, and which flag empties it?"
            ),
            vec![
                "When is the cache cleared, how is it refilled?",
                "which flag empties it?"
            ]
        );
    }

    #[test]
    fn two_named_things_are_asked_once_each() {
        assert_eq!(
            sub_questions("Which traits were added with the 2021 release and with the 2024 release, and why does that break code?"),
            vec![
                "Which traits were added with the 2021 release?",
                "Which traits were added with the 2024 release?",
                "why does that break code?"
            ]
        );
    }
}
