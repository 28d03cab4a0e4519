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

/// Whether one sentence binds: it holds one of the binding words or phrases, as words (not
/// inside another word), in any letter case, with either apostrophe.
pub fn binds(sentence: &str) -> bool {
    static BINDS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    BINDS
        .get_or_init(|| {
            let alternation = BINDING
                .iter()
                .map(|p| regex::escape(p).replace('\'', "['\u{2019}]").replace(' ', r"\s+"))
                .collect::<Vec<_>>()
                .join("|");
            regex::Regex::new(&format!(r"(?i)(?:^|[^\p{{Alphabetic}}\p{{N}}])(?:{alternation})(?:$|[^\p{{Alphabetic}}\p{{N}}])"))
                .expect("static regex")
        })
        .is_match(sentence)
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
