//! A converted document as numbered lines, and its chunks: consecutive blocks under one
//! heading, at most [`CHUNK_WORDS`] words, cut only between blocks or between sentences.

use super::convert::Block;

/// Most words of a chunk (a longer block is cut between sentences, a code block between
/// lines).
pub(crate) const CHUNK_WORDS: usize = 160;

/// A document as the corpus tools show it: its lines (1-based when cited), and its chunks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) lines: Vec<String>,
    pub(crate) chunks: Vec<Chunk>,
}

/// One chunk: a span of lines under a heading path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// First and last line, 1-based, inclusive.
    pub(crate) start: u32,
    pub(crate) end: u32,
    /// The headings above it, outermost first.
    pub(crate) headings: Vec<String>,
}

impl Layout {
    /// The text of lines `start..=end` (1-based), joined by newlines.
    pub(crate) fn text(&self, start: u32, end: u32) -> String {
        let from = (start.max(1) - 1) as usize;
        let to = (end as usize).min(self.lines.len());
        if from >= to {
            return String::new();
        }
        self.lines[from..to].join("\n")
    }
}

/// A block's lines as shown: a heading with `#`s, an item with `- `, a paragraph as one line
/// per group of sentences of at most [`CHUNK_WORDS`] words, a code block fenced.
fn block_lines(block: &Block) -> Vec<String> {
    match block {
        Block::Heading(level, text) => vec![format!("{} {text}", "#".repeat(*level as usize))],
        Block::Item(text) => split_words(text)
            .into_iter()
            .enumerate()
            .map(|(i, t)| if i == 0 { format!("- {t}") } else { t })
            .collect(),
        Block::Para(text) => split_words(text),
        Block::Code(code) => {
            let mut out = vec!["```".to_string()];
            out.extend(code.lines().map(str::to_string));
            out.push("```".to_string());
            out
        }
    }
}

/// A text as lines of whole sentences, each at most [`CHUNK_WORDS`] words; a "sentence" of
/// more than [`CHUNK_WORDS`] words (text with no sentence end: a table flattened, a minified
/// line) is cut between words.
fn split_words(text: &str) -> Vec<String> {
    if text.split_whitespace().count() <= CHUNK_WORDS {
        return vec![text.to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    let mut words = 0;
    let pieces = crate::text::sentences(text)
        .into_iter()
        .flat_map(|sentence| {
            let all: Vec<&str> = sentence.split_whitespace().collect();
            if all.len() <= CHUNK_WORDS {
                vec![sentence.to_string()]
            } else {
                all.chunks(CHUNK_WORDS).map(|c| c.join(" ")).collect()
            }
        });
    for sentence in pieces {
        let sentence = sentence.as_str();
        let n = sentence.split_whitespace().count();
        match out.last_mut() {
            Some(line) if words + n <= CHUNK_WORDS => {
                line.push(' ');
                line.push_str(sentence);
                words += n;
            }
            _ => {
                out.push(sentence.to_string());
                words = n;
            }
        }
    }
    out
}

/// Lays a document out: numbered lines (a blank line between blocks) and its chunks.
pub(crate) fn layout(blocks: &[Block]) -> Layout {
    let mut out = Layout::default();
    let mut headings: Vec<(u8, String)> = Vec::new();
    // The chunk being built: its first line, last line, words.
    let mut open: Option<(u32, u32, usize)> = None;
    let path = |h: &[(u8, String)]| h.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>();
    for block in blocks {
        if !out.lines.is_empty() {
            out.lines.push(String::new());
        }
        if let Block::Heading(level, text) = block {
            if let Some((s, e, _)) = open.take() {
                out.chunks.push(Chunk {
                    start: s,
                    end: e,
                    headings: path(&headings),
                });
            }
            headings.retain(|(l, _)| l < level);
            headings.push((*level, text.clone()));
        }
        for line in block_lines(block) {
            let n = line.split_whitespace().count();
            out.lines.push(line);
            let at = out.lines.len() as u32;
            open = match open {
                Some((s, _, w)) if w + n <= CHUNK_WORDS || w == 0 => Some((s, at, w + n)),
                Some((s, e, _)) => {
                    out.chunks.push(Chunk {
                        start: s,
                        end: e,
                        headings: path(&headings),
                    });
                    Some((at, at, n))
                }
                None => Some((at, at, n)),
            };
        }
    }
    if let Some((s, e, _)) = open {
        out.chunks.push(Chunk {
            start: s,
            end: e,
            headings: path(&headings),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_headings_and_stay_bounded() {
        let long: String = (0..60)
            .map(|i| format!("Sentence number {i} is here."))
            .collect::<Vec<_>>()
            .join(" ");
        let blocks = vec![
            Block::Heading(1, "Top".into()),
            Block::Para("Intro text.".into()),
            Block::Heading(2, "Sub".into()),
            Block::Para(long),
            Block::Item("an item".into()),
            Block::Heading(2, "Other".into()),
            Block::Code("a\nb".into()),
        ];
        let l = layout(&blocks);
        assert_eq!(l.lines[0], "# Top");
        assert_eq!(l.chunks[0].start, 1);
        assert_eq!(l.chunks[0].headings, vec!["Top"]);
        // Every chunk within the cap, cut at sentence ends, and under its headings.
        for c in &l.chunks {
            let text = l.text(c.start, c.end);
            assert!(text.split_whitespace().count() <= CHUNK_WORDS + 3, "{text}");
        }
        assert!(l.chunks.iter().any(|c| c.headings == vec!["Top", "Sub"]));
        let last = l.chunks.last().unwrap();
        assert_eq!(last.headings, vec!["Top", "Other"]);
        assert!(l.text(last.start, last.end).contains("```\na\nb\n```"));
        // One run of words with no sentence end is cut between words.
        let run = vec![Block::Para(vec!["word"; 1000].join(" "))];
        let cut = layout(&run);
        assert_eq!(cut.lines.len(), 1000usize.div_ceil(CHUNK_WORDS));
        assert!(cut.chunks.len() > 1);
        for line in &l.lines {
            if line.starts_with("Sentence") {
                assert!(line.ends_with("here."), "{line}");
            }
        }
    }
}
