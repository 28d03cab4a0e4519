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

/// The question without its binding sentences — they become constraints, not search terms —
/// or the whole question when every sentence binds.
pub fn without_binding(text: &str) -> String {
    let kept: Vec<&str> = sentences(text).into_iter().filter(|s| !binds(s)).collect();
    if kept.is_empty() {
        text.trim().to_string()
    } else {
        kept.join(" ")
    }
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

/// Words after which a `.` does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "approx", "cf", "dr", "e.g", "eg", "esp", "etc", "fig", "i.e", "ie", "inc", "incl", "jr",
    "ltd", "mr", "mrs", "ms", "no", "pp", "sr", "st", "viz", "vol", "vs",
];

/// Whether a line opens a new item of its own: a list bullet, a numbered item, a heading, a
/// quote or a fence.
fn opens_item(line: &str) -> bool {
    let t = line.trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    ["- ", "* ", "+ ", "> ", "#", "```", "|"]
        .iter()
        .any(|b| t.starts_with(b))
        || (digits > 0 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") ")))
}

/// The sentences of a text, verbatim (trimmed). A sentence ends at `.`, `!` or `?` before
/// whitespace — never at an abbreviation (`e.g.`, `etc.`, `vs.`), nor at a mark standing alone
/// before a word in lower case (`the ? operator`) — at a blank line, and at a
/// line break before or after a line that opens an item (a bullet, a numbered item, a
/// heading) or after a line ending in `:`. Any other line break is inside a sentence (a
/// wrapped line): "Never modify anything under\n/migrations; the pipeline applies them." is
/// one sentence, whole. Where in doubt, a sentence is longer, never cut.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    fn push<'t>(text: &'t str, from: usize, to: usize, out: &mut Vec<&'t str>) {
        let s = text[from..to].trim();
        if !s.trim_matches(|c: char| !c.is_alphanumeric()).is_empty() {
            out.push(s);
        }
    }
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let end = match b {
            b'\n' => {
                let line = text[start..i].rsplit('\n').next().unwrap_or("");
                let next = text[i + 1..].split('\n').next().unwrap_or("");
                next.trim().is_empty()
                    || line.trim().is_empty()
                    || line.trim_end().ends_with(':')
                    || opens_item(next)
                    || opens_item(line)
            }
            b'.' | b'!' | b'?' => {
                // A mark standing alone before a word in lower case (`the ? operator`) is a
                // symbol, not an end; before a capital (`loaded ? Never`) or the end it ends.
                let alone = i > 0 && bytes[i - 1].is_ascii_whitespace();
                let lower_next = text[i + 1..]
                    .trim_start()
                    .chars()
                    .next()
                    .is_some_and(char::is_lowercase);
                let before_space = !(alone && lower_next)
                    && bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace());
                // The word before is looked at only where a sentence could end, so a long run
                // of dots costs linear time.
                let abbreviation = before_space && *b == b'.' && {
                    let word = text[start..i]
                        .rsplit(|c: char| c.is_whitespace() || c == '(')
                        .next()
                        .unwrap_or("")
                        .to_ascii_lowercase();
                    ABBREVIATIONS.contains(&word.as_str())
                };
                before_space && !abbreviation
            }
            _ => false,
        };
        if end {
            push(text, start, i + 1, &mut out);
            start = i + 1;
        }
    }
    push(text, start, text.len(), &mut out);
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
        assert_eq!(
            sentences("Do not modify the files under /src unless\nThe owner agrees. Never write to shared paths, e.g. /tmp."),
            vec![
                "Do not modify the files under /src unless\nThe owner agrees.",
                "Never write to shared paths, e.g. /tmp."
            ]
        );
        // A wrapped line and an abbreviation do not end a sentence; a new item does.
        assert_eq!(
            sentences("Never modify anything under\n/migrations; the pipeline applies them.\n- Keep the config, e.g. the prod settings.\nWhy? Because."),
            vec![
                "Never modify anything under\n/migrations; the pipeline applies them.",
                "- Keep the config, e.g. the prod settings.",
                "Why?",
                "Because."
            ]
        );
        // A mark standing alone is a symbol.
        assert_eq!(
            sentences("The ? operator converts the error. It returns early."),
            vec!["The ? operator converts the error.", "It returns early."]
        );
        assert_eq!(
            binding_sentences("Where is the config loaded ? Never read src/main.rs."),
            vec!["Never read src/main.rs."]
        );
        assert!(binds("Don't touch the cache."));
        assert!(binds("From now on, cite every line."));
        assert_eq!(normalise("  Never   Modify "), "never modify");
    }
}
