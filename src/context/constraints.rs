//! Binding sentences, by a deterministic rule pass: a sentence of the question that says
//! never, don't, do not, always, only, must or from now on binds the run, verbatim.

/// Words and phrases that make a sentence binding.
const BINDING: &[&str] = &[
    "never",
    "don't",
    "dont",
    "do not",
    "always",
    "only",
    "must",
    "from now on",
];

/// The binding sentences of `text`, verbatim (trimmed), in order.
pub fn binding_sentences(text: &str) -> Vec<String> {
    sentences(text)
        .into_iter()
        .filter(|s| binds(s))
        .map(str::to_string)
        .collect()
}

/// Whether one sentence binds.
pub fn binds(sentence: &str) -> bool {
    let lower = sentence.to_lowercase().replace('\u{2019}', "'");
    BINDING.iter().any(|phrase| {
        lower.match_indices(phrase).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + phrase.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

/// The normalised form of a constraint: lower case, whitespace runs as one space.
pub fn normalise(text: &str) -> String {
    text.to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sentences of a text, verbatim (trimmed): split at `.`, `!`, `?` before whitespace and at
/// line ends — never inside a sentence: "Never modify /migrations; the pipeline applies them."
/// is one sentence, whole.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let end = match b {
            b'\n' => true,
            b'.' | b'!' | b'?' => bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()),
            _ => false,
        };
        if end {
            let s = text[start..=i].trim();
            if !s.trim_matches(|c: char| !c.is_alphanumeric()).is_empty() {
                out.push(s);
            }
            start = i + 1;
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_sentences_are_kept_verbatim() {
        let q = "Where is the retry delay computed? Never modify anything under /migrations. Only look at src/net; we always ship on Fridays.";
        assert_eq!(
            binding_sentences(q),
            vec![
                "Never modify anything under /migrations.",
                "Only look at src/net; we always ship on Fridays."
            ]
        );
        assert!(!binds("The mustard is yellow."));
        assert!(binds("Don't touch the cache."));
        assert!(binds("From now on, cite every line."));
        assert_eq!(normalise("  Never   Modify "), "never modify");
    }
}
