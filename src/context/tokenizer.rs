//! Token counting: a `Tokenizer` trait with a real BPE counter (tiktoken's o200k_base,
//! embedded: no download) as default, a cheap estimator, and a per-block cache so recompiling
//! after a small change counts only what changed.

use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

/// Counts tokens.
pub trait Tokenizer: Send + Sync {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> usize;
    /// A short name for manifests.
    fn name(&self) -> &'static str;
}

/// OpenAI's o200k_base BPE (tiktoken-rs, vocabulary embedded). Loaded once, lazily (~0.2 s).
#[derive(Debug, Default, Clone, Copy)]
pub struct Bpe;

impl Tokenizer for Bpe {
    fn count(&self, text: &str) -> usize {
        static BPE: OnceLock<Option<&'static tiktoken_rs::CoreBPE>> = OnceLock::new();
        match BPE.get_or_init(|| Some(tiktoken_rs::o200k_base_singleton())) {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            None => Estimate.count(text),
        }
    }

    fn name(&self) -> &'static str {
        "o200k_base"
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

impl<T: Tokenizer> Tokenizer for CachedTokenizer<T> {
    fn count(&self, text: &str) -> usize {
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

    fn name(&self) -> &'static str {
        self.inner.name()
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
}
