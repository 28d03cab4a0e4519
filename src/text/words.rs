//! Words: the one word splitter and the one stop list the crate's text rules share.

/// A general English stop-word list: NLTK's `english` list (179 words; the forms with an
/// apostrophe are left out, as the question is split at apostrophes). Nothing is added for a
/// particular question.
pub(crate) const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "ain",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "couldn",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "ma",
    "me",
    "mightn",
    "more",
    "most",
    "mustn",
    "my",
    "myself",
    "needn",
    "no",
    "nor",
    "not",
    "now",
    "o",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "shan",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "wouldn",
    "y",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `word` (lower case) is on the stop list.
#[inline]
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// English conjunctions of several words, each as a whole a function word like those on the
/// stop list: `soon` in "as soon as" asks for no passage about soonness.
const CONJUNCTIONS: &str =
    r"(?i)\b(?:as soon as|as long as|as well as|as far as|in order to|even though|rather than)\b";

/// `text` with its multi-word conjunctions ([`CONJUNCTIONS`]) replaced by `;`, a break no
/// compound of adjacent words spans.
pub(crate) fn without_conjunctions(text: &str) -> std::borrow::Cow<'_, str> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(CONJUNCTIONS).expect("a valid pattern"))
        .replace_all(text, " ; ")
}

/// The words of a text: its maximal runs of alphanumeric characters, in order.
#[inline]
pub(crate) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_word_conjunctions_are_no_content() {
        assert_eq!(
            without_conjunctions("set to zero as soon as draining starts"),
            "set to zero  ;  draining starts"
        );
        assert_eq!(
            without_conjunctions("As long as it holds, and the soonest"),
            " ;  it holds, and the soonest"
        );
        // A word of one alone is content.
        assert_eq!(
            without_conjunctions("how long is the queue"),
            "how long is the queue"
        );
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }
}
