//! A compact o200k_base token counter: the vocabulary (OpenAI's tiktoken file, MIT, as
//! tiktoken-rs 0.12 ships it, embedded) decoded once into one byte buffer and one table of
//! about 7 MB, where a general-purpose encoder keeps about 50 MB of maps; the same
//! pre-tokenizer pattern and the same byte-pair merge, so the counts are tiktoken's (a test
//! compares them on generated and real text).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

/// The vocabulary: one base64 token and its rank a line.
const VOCABULARY: &str = include_str!("o200k_base.tiktoken");

/// o200k_base's pre-tokenizer.
const PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"\p{N}{1,3}",
    "|",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    "|",
    r"\s*[\r\n]+",
    "|",
    r"\s+(?!\S)",
    "|",
    r"\s+"
);

type Rank = u32;

/// FNV-1a: the table's keys are the fixed vocabulary, so a fast hash without a seed is enough.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

type Ranks = HashMap<&'static [u8], Rank, BuildHasherDefault<Fnv>>;

/// The decoded vocabulary and the compiled pattern.
struct Vocabulary {
    ranks: Ranks,
    /// The longest token's length: a longer span is never a token, so it is not looked up.
    longest: usize,
    pattern: fancy_regex::Regex,
}

/// Pieces at least this long are merged with a heap (as tiktoken does from 100 bytes): a
/// long run of one character class costs n log n, not n².
const LARGE_PIECE: usize = 100;

/// Standard base64 (with padding), or `None` for anything else.
fn base64(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c)? << (18 - 6 * i);
        }
        let produced = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => return None,
        };
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + produced]);
    }
    Some(out)
}

/// The vocabulary, decoded on first use; `None` if the embedded file or the pattern could not
/// be read (never, in a build whose tests passed).
fn vocabulary() -> Option<&'static Vocabulary> {
    static VOCAB: OnceLock<Option<Vocabulary>> = OnceLock::new();
    VOCAB
        .get_or_init(|| {
            let mut buffer = Vec::with_capacity(1 << 21);
            let mut entries = Vec::with_capacity(200_000);
            for line in VOCABULARY.lines() {
                let (token, rank) = line.split_once(' ')?;
                let bytes = base64(token)?;
                entries.push((buffer.len(), bytes.len(), rank.parse::<Rank>().ok()?));
                buffer.extend_from_slice(&bytes);
            }
            // One allocation for every token's bytes, kept for the life of the process.
            let buffer: &'static [u8] = Box::leak(buffer.into_boxed_slice());
            let mut ranks = HashMap::with_capacity_and_hasher(entries.len(), Default::default());
            let mut longest = 0;
            for (at, len, rank) in entries {
                ranks.insert(&buffer[at..at + len], rank);
                longest = longest.max(len);
            }
            let pattern = fancy_regex::Regex::new(PATTERN).ok()?;
            Some(Vocabulary {
                ranks,
                longest,
                pattern,
            })
        })
        .as_ref()
}

/// Tokens of one pre-tokenized piece: one if it is in the vocabulary, else the parts left
/// once the lowest-ranked adjacent pair has been merged until none is in it (tiktoken's
/// merge, leftmost first among equals).
fn piece_tokens(vocab: &Vocabulary, piece: &[u8]) -> usize {
    let ranks = &vocab.ranks;
    if piece.len() <= 1 || (piece.len() <= vocab.longest && ranks.contains_key(piece)) {
        return piece.len().min(1);
    }
    if piece.len() >= LARGE_PIECE {
        return large_piece_tokens(vocab, piece);
    }
    let rank_of = |bytes: &[u8]| ranks.get(bytes).copied().unwrap_or(Rank::MAX);
    // (start, rank of the pair that starts here)
    let mut parts: Vec<(usize, Rank)> = Vec::with_capacity(piece.len() + 1);
    let mut min = (Rank::MAX, usize::MAX);
    for i in 0..piece.len() - 1 {
        let rank = rank_of(&piece[i..i + 2]);
        if rank < min.0 {
            min = (rank, i);
        }
        parts.push((i, rank));
    }
    parts.push((piece.len() - 1, Rank::MAX));
    parts.push((piece.len(), Rank::MAX));
    let pair_rank = |parts: &[(usize, Rank)], i: usize| {
        if i + 3 < parts.len() {
            rank_of(&piece[parts[i].0..parts[i + 3].0])
        } else {
            Rank::MAX
        }
    };
    while min.0 != Rank::MAX {
        let i = min.1;
        if i > 0 {
            parts[i - 1].1 = pair_rank(&parts, i - 1);
        }
        parts[i].1 = pair_rank(&parts, i);
        parts.remove(i + 1);
        min = (Rank::MAX, usize::MAX);
        for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
            if rank < min.0 {
                min = (rank, i);
            }
        }
    }
    parts.len() - 1
}

/// [`piece_tokens`] for a long piece: the same merges in the same order — the lowest rank
/// first, the leftmost of equals — found with a heap over the adjacent pairs (stale entries
/// skipped) and the parts kept as a linked list.
fn large_piece_tokens(vocab: &Vocabulary, piece: &[u8]) -> usize {
    use std::cmp::Reverse;
    let n = piece.len();
    let rank_of = |from: usize, to: usize| {
        if to - from > vocab.longest {
            Rank::MAX
        } else {
            vocab
                .ranks
                .get(&piece[from..to])
                .copied()
                .unwrap_or(Rank::MAX)
        }
    };
    // Part `i` (alive) spans i..next[i]; pair[i] is the rank of it joined with the next part.
    let mut next: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    let mut alive = vec![true; n];
    let mut pair = vec![Rank::MAX; n];
    let mut heap = std::collections::BinaryHeap::with_capacity(n);
    for (i, rank) in pair.iter_mut().enumerate().take(n - 1) {
        *rank = rank_of(i, i + 2);
        if *rank != Rank::MAX {
            heap.push(Reverse((*rank, i)));
        }
    }
    let mut parts = n;
    while let Some(Reverse((rank, i))) = heap.pop() {
        // A span from one start only grows, so a start never has the same rank twice: an
        // entry is current exactly when it matches.
        if !alive[i] || pair[i] != rank {
            continue;
        }
        let j = next[i];
        let k = next[j];
        alive[j] = false;
        next[i] = k;
        if k < n {
            prev[k] = i;
        }
        parts -= 1;
        pair[i] = if k < n {
            rank_of(i, next[k])
        } else {
            Rank::MAX
        };
        if pair[i] != Rank::MAX {
            heap.push(Reverse((pair[i], i)));
        }
        if i > 0 {
            let p = prev[i];
            pair[p] = rank_of(p, k);
            if pair[p] != Rank::MAX {
                heap.push(Reverse((pair[p], p)));
            }
        }
    }
    parts
}

/// o200k_base tokens in `text`, or `None` when the vocabulary could not be loaded. A piece
/// the pattern cannot match within its backtracking limit (not seen in practice) counts as
/// one token per four bytes, never a panic.
pub(crate) fn count(text: &str) -> Option<usize> {
    let vocab = vocabulary()?;
    let mut tokens = 0;
    let mut at = 0;
    for found in vocab.pattern.find_iter(text) {
        match found {
            Ok(m) => {
                tokens += piece_tokens(vocab, m.as_str().as_bytes());
                at = m.end();
            }
            Err(_) => {
                tokens += text.len().saturating_sub(at).div_ceil(4);
                break;
            }
        }
    }
    Some(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_the_vocabulary_forms() {
        assert_eq!(base64("IQ==").unwrap(), b"!");
        assert_eq!(base64("IGh0").unwrap(), b" ht");
        assert_eq!(base64("aGk=").unwrap(), b"hi");
        assert!(base64("a").is_none());
        assert!(base64("a*==").is_none());
    }

    #[test]
    fn the_vocabulary_loads_whole() {
        let vocab = vocabulary().unwrap();
        assert_eq!(vocab.ranks.len(), 199_998);
        assert_eq!(vocab.ranks.get(&b"!"[..]), Some(&0));
    }

    /// The counts are tiktoken-rs's, on generated text and on this crate's own sources.
    #[test]
    fn counts_match_tiktoken() {
        let reference = tiktoken_rs::o200k_base_singleton();
        let same = |text: &str| {
            assert_eq!(
                count(text).unwrap(),
                reference.encode_ordinary(text).len(),
                "{:?}",
                text.chars().take(200).collect::<String>()
            );
        };
        for text in [
            "",
            " ",
            "hello world",
            "  indented\n\n\nlines  \r\n",
            "fn main() { println!(\"{}\", 42); }",
            "Ünïcödé — “quotes” 日本語のテキスト 😀 emoji",
            "I'm sure they'll say it's the CAT'S fault'",
            "1234567890 3.14159 0x1F // comment /// doc",
        ] {
            same(text);
        }
        // Long pieces, merged with the heap: runs of one class, and words of many merges.
        for long in [
            "=".repeat(5_000),
            " ".repeat(3_000),
            "a".repeat(2_048),
            "ab".repeat(700),
            "internationalization".repeat(40),
            "xyzzyplughfrobnicate".repeat(30),
            "-_-".repeat(200),
        ] {
            same(&long);
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if let Ok(text) = std::fs::read_to_string(entry.path()) {
                same(&text);
                checked += 1;
            }
        }
        assert!(checked >= 5, "{checked}");
    }

    /// A 160,000-character run of one class is counted in seconds even in a debug build (n log
    /// n; the n² merge took 13 s a piece in a release build).
    #[test]
    fn a_long_run_of_one_class_is_counted_fast() {
        let started = std::time::Instant::now();
        for c in ["=", " ", "a"] {
            assert!(count(&c.repeat(160_000)).unwrap() > 0);
        }
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    }

    proptest::proptest! {
        /// Long pieces from a few letters, where many merges compete.
        #[test]
        fn counts_match_tiktoken_on_long_pieces(text in "[abnert]{100,600}") {
            let reference = tiktoken_rs::o200k_base_singleton();
            proptest::prop_assert_eq!(count(&text).unwrap(), reference.encode_ordinary(&text).len());
        }

        #[test]
        fn counts_match_tiktoken_on_any_text(text in "\\PC{0,200}") {
            let reference = tiktoken_rs::o200k_base_singleton();
            proptest::prop_assert_eq!(count(&text).unwrap(), reference.encode_ordinary(&text).len());
        }
    }
}
