//! The index's words: split at anything not a letter or digit, lower case, English stems —
//! tantivy's `en_stem` word for word, but that words of 40 to 199 bytes are kept —, each
//! distinct word stemmed once per analyzer (a corpus
//! repeats its words; the stemmer was a fifth of indexing's CPU time).

use std::collections::HashMap;

use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer, Token, TokenFilter, TokenStream,
    Tokenizer,
};

/// Longest word indexed, in bytes (tantivy's `en_stem` drops words of 40 or more: long
/// identifiers, compounds and runs of CJK text would be unsearchable).
const LONGEST_WORD: usize = 200;
/// Most distinct words one analyzer remembers before it starts again.
const REMEMBERED: usize = 1 << 17;

/// The analyzer the index registers as `en_stem` and [`super::index::stems`] uses.
pub(crate) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(LONGEST_WORD))
        .filter(LowerCaser)
        .filter(RememberedStems)
        .build()
}

/// The English stemmer as a token filter that remembers each word's stem.
#[derive(Clone, Copy)]
struct RememberedStems;

impl TokenFilter for RememberedStems {
    type Tokenizer<T: Tokenizer> = StemFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> StemFilter<T> {
        StemFilter {
            inner: tokenizer,
            memo: Memo::default(),
        }
    }
}

/// The stemmer and the stems it gave.
struct Memo {
    stemmer: frostem::Stemmer,
    stems: HashMap<String, String>,
}

impl Default for Memo {
    fn default() -> Memo {
        Memo {
            stemmer: frostem::Stemmer::new(frostem::Algorithm::English),
            stems: HashMap::new(),
        }
    }
}

impl Clone for Memo {
    /// A copy starts with nothing remembered (each indexing thread has its own).
    fn clone(&self) -> Memo {
        Memo::default()
    }
}

#[derive(Clone)]
pub(crate) struct StemFilter<T> {
    inner: T,
    memo: Memo,
}

impl<T: Tokenizer> Tokenizer for StemFilter<T> {
    type TokenStream<'a> = StemStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        StemStream {
            tail: self.inner.token_stream(text),
            memo: &mut self.memo,
        }
    }
}

pub(crate) struct StemStream<'a, T> {
    tail: T,
    memo: &'a mut Memo,
}

impl<T: TokenStream> TokenStream for StemStream<'_, T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        if let Some(stem) = self.memo.stems.get(&token.text) {
            token.text.clear();
            token.text.push_str(stem);
            return true;
        }
        let stem = self.memo.stemmer.stem(&token.text).into_owned();
        if self.memo.stems.len() >= REMEMBERED {
            self.memo.stems.clear();
        }
        let word = std::mem::replace(&mut token.text, stem.clone());
        self.memo.stems.insert(word, stem);
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    /// The same words as tantivy's own `en_stem`, remembered or not.
    #[test]
    fn stems_are_tantivys_en_stem() {
        let text = "Running runners ran; the RUNNING dogs' generalizations, generalization \
                    and connected connections — running again, 2024 édition naïve";
        let mut ours = super::analyzer();
        let mut theirs = tantivy::tokenizer::TokenizerManager::default()
            .get("en_stem")
            .unwrap();
        let words = |a: &mut tantivy::tokenizer::TextAnalyzer| {
            let mut s = a.token_stream(text);
            let mut out = Vec::new();
            while s.advance() {
                out.push((s.token().text.clone(), s.token().position));
            }
            out
        };
        let expected = words(&mut theirs);
        assert!(expected.iter().any(|(w, _)| w == "run"));
        // Twice: the second time every word is remembered.
        assert_eq!(words(&mut ours), expected);
        assert_eq!(words(&mut ours), expected);
    }

    /// A long identifier or compound is a word of the index (`en_stem` would drop it, and a
    /// search for it would find nothing).
    #[test]
    fn long_words_are_kept() {
        let word = "AbstractSingletonProxyFactoryBeanConfigurationManager";
        let stems = crate::corpus::stems(&format!("the {word} class"));
        assert_eq!(stems.len(), 3, "{stems:?}");
        assert!(stems[1].starts_with("abstractsingletonproxy"), "{stems:?}");
        assert_eq!(crate::corpus::stems(&"x".repeat(250)), Vec::<String>::new());
    }
}
