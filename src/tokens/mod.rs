//! Token counting: a `Tokenizer` trait with a real BPE counter (tiktoken's o200k_base,
//! embedded: no download) as default, a cheap estimator, and a per-block cache so recompiling
//! after a small change counts only what changed.

mod bpe;

use std::hash::{Hash, Hasher};

/// Counts tokens.
pub trait Tokenizer: Send + Sync {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> usize;
    /// A short name for manifests.
    fn name(&self) -> &'static str;
    /// Whether a text's count is the sum of the counts of its lines, cut after a line break
    /// that a character other than whitespace or `/` follows ([`line_chunks`]): then a cache
    /// counts only the lines it has not seen.
    fn adds_up_by_line(&self) -> bool {
        false
    }
}

/// `text` cut after each line break that a character other than whitespace or `/` follows.
/// o200k_base's pre-tokenizer never joins across such a cut — no piece of it holds a line
/// break followed by such a character (a run of punctuation takes the breaks and slashes after
/// it, a run of whitespace the breaks) — so the counts of the chunks add up to the count of
/// the text.
pub fn line_chunks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut from = 0;
        let at = loop {
            let Some(i) = rest[from..].find('\n') else {
                break rest.len();
            };
            let cut = from + i + 1;
            match rest[cut..].chars().next() {
                Some(c) if !c.is_whitespace() && c != '/' => break cut,
                None => break rest.len(),
                _ => from = cut,
            }
        };
        let (chunk, tail) = rest.split_at(at);
        rest = tail;
        Some(chunk)
    })
}

/// OpenAI's o200k_base BPE (vocabulary embedded, counted by `context::bpe`, tiktoken's counts
/// in about 7 MB). Loaded once, lazily.
#[derive(Debug, Default, Clone, Copy)]
pub struct Bpe;

impl Tokenizer for Bpe {
    fn count(&self, text: &str) -> usize {
        bpe::count(text).unwrap_or_else(|| Estimate.count(text))
    }

    fn name(&self) -> &'static str {
        "o200k_base"
    }

    fn adds_up_by_line(&self) -> bool {
        true
    }
}

/// About four bytes a token: cheap, for when exact counts do not matter.
#[derive(Debug, Default, Clone, Copy)]
pub struct Estimate;

impl Tokenizer for Estimate {
    fn count(&self, text: &str) -> usize {
        text.len().div_ceil(4)
    }

    fn name(&self) -> &'static str {
        "estimate"
    }
}

/// About four bytes a token: the estimate used where no tokenizer is given.
#[inline]
pub fn estimate_tokens(text: &str) -> u64 {
    estimate_tokens_of_len(text.len())
}

#[inline]
pub(crate) fn estimate_tokens_of_len(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// Most counts a [`CachedTokenizer`] keeps.
pub const TOKEN_CACHE_ENTRIES: usize = 65_536;

/// A tokenizer with a cache of counts by block content — at most [`TOKEN_CACHE_ENTRIES`] of
/// them: past that the cache starts over.
pub struct CachedTokenizer<T: Tokenizer> {
    inner: T,
    cache: dashmap::DashMap<u64, usize>,
}

impl<T: Tokenizer> CachedTokenizer<T> {
    /// Caches `inner`'s counts.
    pub fn new(inner: T) -> CachedTokenizer<T> {
        CachedTokenizer {
            inner,
            cache: dashmap::DashMap::new(),
        }
    }

    /// Counts cached now.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }
}

impl<T: Tokenizer> std::fmt::Debug for CachedTokenizer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedTokenizer")
            .field("inner", &self.inner.name())
            .finish()
    }
}

impl<T: Tokenizer> CachedTokenizer<T> {
    fn count_block(&self, text: &str) -> usize {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let key = hasher.finish();
        if let Some(n) = self.cache.get(&key) {
            return *n;
        }
        let n = self.inner.count(text);
        if self.cache.len() >= TOKEN_CACHE_ENTRIES {
            self.cache.clear();
        }
        self.cache.insert(key, n);
        n
    }
}

impl<T: Tokenizer> Tokenizer for CachedTokenizer<T> {
    fn count(&self, text: &str) -> usize {
        if self.inner.adds_up_by_line() {
            line_chunks(text).map(|chunk| self.count_block(chunk)).sum()
        } else {
            self.count_block(text)
        }
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn adds_up_by_line(&self) -> bool {
        self.inner.adds_up_by_line()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bpe_counts_real_tokens_and_the_cache_agrees() {
        let text = "The lead compiles every context from the checkpoint.";
        let n = Bpe.count(text);
        assert!((8..=14).contains(&n), "{n}");
        let cached = CachedTokenizer::new(Bpe);
        assert_eq!(cached.count(text), n);
        assert_eq!(cached.count(text), n);
        assert_eq!(Estimate.count("abcdefgh"), 2);
    }

    #[test]
    fn line_chunks_cover_the_text_and_cut_only_before_a_non_space() {
        let text = "a\n- b\n  c\n/d\n\ne\n";
        let chunks: Vec<&str> = line_chunks(text).collect();
        assert_eq!(chunks.concat(), text);
        assert_eq!(chunks, ["a\n", "- b\n  c\n/d\n\n", "e\n"]);
        assert_eq!(line_chunks("").count(), 0);
    }

    /// A case proptest once shrank to: two newlines.
    #[test]
    fn two_newlines_count_as_the_whole_text_does() {
        let cached = CachedTokenizer::new(Bpe);
        assert_eq!(cached.count("\n\n"), Bpe.count("\n\n"));
    }

    proptest::proptest! {
        // Found cases are kept as tests above, not in a file at the top of the repository.
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]
        /// The cached count, line by line, is the count of the whole text.
        #[test]
        fn counting_by_line_chunks_is_exact(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "\n", "\r\n", " ", "  ", "\t", "/", "//", "- ", "## ", "]", ").", "===",
                    "word", "Word", "WORD", "x1", "123", "4567", "'s", "é", "\u{a0}", "\\",
                    "`code`", "[src/a.rs:1-3]", "=", ":", "\u{2028}", "日本",
                ]),
                0..40,
            )
        ) {
            let text: String = parts.concat();
            let cached = CachedTokenizer::new(Bpe);
            proptest::prop_assert_eq!(cached.count(&text), Bpe.count(&text), "{:?}", text);
        }
    }
}
