//! What the index holds, by document: its content digest, its chunks' spans and digests, and
//! whether search leaves it out (a redirect, a table of contents, a page repeating others);
//! and the walk that finds a corpus's documents.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{CorpusError, Format};

/// The manifest's layout version: an index whose manifest has another is rebuilt from nothing.
const VERSION: u32 = 5;
/// Most bytes of a manifest read.
const MAX_MANIFEST_BYTES: u64 = 1 << 30;
/// A page whose chunks are at least this share repeats of other pages' repeats them.
const REPEAT_SHARE: f64 = 0.8;

/// One document as indexed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DocEntry {
    /// SHA-256 of its text.
    pub(crate) digest: String,
    pub(crate) bytes: u64,
    /// Its chunks' bodies (text without heading lines, whitespace runs as one space), each
    /// as the first 12 hex digits of its SHA-256 — enough to tell repeated chunks apart; a
    /// chunk of headings only has none. Written as one string, the digests end to end.
    #[serde(with = "end_to_end")]
    pub(crate) chunks: Vec<String>,
    /// A page that only redirects to another (written only when it does).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) redirect: bool,
    /// A page that is mostly links: a table of contents.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) navigation: bool,
    /// A page repeating other pages (set by [`Manifest::mark_repeats`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) repeat: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The chunk digests as one string: 12 hex digits each, end to end (a manifest holds one
/// for every chunk of the corpus, so separators would be a tenth of its size).
mod end_to_end {
    use serde::{Deserialize, Deserializer, Serializer};

    const WIDTH: usize = 12;

    pub(super) fn serialize<S: Serializer>(digests: &[String], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&digests.concat())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        let text = String::deserialize(d)?;
        if text.len() % WIDTH != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(serde::de::Error::custom(
                "chunk digests are 12 hex digits each",
            ));
        }
        Ok(text
            .as_bytes()
            .chunks(WIDTH)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect())
    }
}

impl DocEntry {
    /// Whether search leaves it out.
    pub(crate) fn hidden(&self) -> bool {
        self.redirect || self.navigation || self.repeat
    }
}

/// The documents indexed, by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    #[serde(default)]
    pub(crate) version: u32,
    pub(crate) docs: BTreeMap<String, DocEntry>,
}

impl Manifest {
    /// Reads a manifest; none when missing, unreadable or of another version.
    pub(crate) fn load(path: &Path) -> Option<Manifest> {
        use std::io::Read as _;
        let (file, _) = crate::fsio::open_regular_file(path).ok()?;
        let mut text = String::new();
        file.take(MAX_MANIFEST_BYTES)
            .read_to_string(&mut text)
            .ok()?;
        let m: Manifest = serde_json::from_str(&text).ok()?;
        (m.version == VERSION).then_some(m)
    }

    /// Writes it (a temporary file renamed over the old one).
    pub(crate) fn save(&self, path: &Path) -> Result<(), CorpusError> {
        let fail = |e: std::io::Error| CorpusError::Index(format!("{}: {e}", path.display()));
        let text = serde_json::to_string(&Manifest {
            version: VERSION,
            docs: self.docs.clone(),
        })
        .map_err(|e| CorpusError::Index(e.to_string()))?;
        // A link left in the temporary file's place is removed, never written through.
        let tmp = path.with_extension("json.tmp");
        match std::fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(fail(e)),
            _ => {}
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(fail)?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(fail)?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(fail)
    }

    /// Marks the pages that repeat others: a page whose chunks are, for at least 80%, chunks
    /// of other pages that are smaller than it (a print-all page gathers its chapters), or of
    /// a page of the same size that is preferred to it (two copies of one page: the one not
    /// named `index`, then the shorter path, then the first in order, is kept).
    pub(crate) fn mark_repeats(&mut self) {
        let mut holders: HashMap<&str, Vec<&str>> = HashMap::new();
        for (path, doc) in &self.docs {
            if doc.redirect {
                continue;
            }
            for c in &doc.chunks {
                holders.entry(c.as_str()).or_default().push(path);
            }
        }
        let size = |p: &str| self.docs.get(p).map_or(0, |d| d.chunks.len());
        let rank = |p: &str| {
            let name = p.rsplit('/').next().unwrap_or(p);
            (name.starts_with("index."), p.len(), p.to_string())
        };
        let mut repeats = Vec::new();
        for (path, doc) in &self.docs {
            // Chunks of headings only say nothing of what a page repeats.
            let n = doc.chunks.len();
            if n < 2 || doc.redirect {
                continue;
            }
            let repeated = doc
                .chunks
                .iter()
                .filter(|c| {
                    holders.get(c.as_str()).is_some_and(|hs| {
                        hs.iter().any(|h| {
                            *h != path && (size(h) < n || (size(h) == n && rank(h) < rank(path)))
                        })
                    })
                })
                .count();
            if repeated as f64 >= REPEAT_SHARE * n as f64 {
                repeats.push(path.clone());
            }
        }
        for doc in self.docs.values_mut() {
            doc.repeat = false;
        }
        for path in repeats {
            if let Some(d) = self.docs.get_mut(&path) {
                d.repeat = true;
            }
        }
    }
}

/// Most names of entries left out kept (all are counted).
pub(crate) const LEFT_OUT_NAMES: usize = 1000;

/// A corpus's documents and what was left out.
#[derive(Default)]
pub(crate) struct Walked {
    /// Relative paths (`/` separators), sorted, with their formats.
    pub(crate) docs: Vec<(String, Format)>,
    /// Entries left out, by reason.
    pub(crate) skipped: BTreeMap<String, usize>,
    /// The first [`LEFT_OUT_NAMES`] entries left out that could hold a document (not files
    /// of other kinds), relative.
    pub(crate) left_out: Vec<String>,
}

impl Walked {
    /// Counts an entry left out, and keeps its name unless it is a file of another kind.
    pub(crate) fn skip(&mut self, why: &str, name: &str) {
        *self.skipped.entry(why.into()).or_default() += 1;
        if why != "not a document" && self.left_out.len() < LEFT_OUT_NAMES {
            self.left_out.push(name.to_string());
        }
    }
}

/// Walks a corpus folder: regular files with a document's name. Hidden entries, links,
/// special files and names a citation could not write (holding `#`, `,`, brackets,
/// backticks, whitespace or control characters, or not UTF-8) are left out, counted and
/// named; files of other kinds are counted.
pub(crate) fn walk(root: &Path) -> Walked {
    let mut out = Walked::default();
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        let shown = if rel.is_empty() { "." } else { rel.as_str() };
        let Ok(entries) = std::fs::read_dir(&dir) else {
            out.skip("unreadable", shown);
            continue;
        };
        for entry in entries.flatten() {
            let raw = entry.file_name();
            let lossy = raw.to_string_lossy();
            let path = if rel.is_empty() {
                lossy.to_string()
            } else {
                format!("{rel}/{lossy}")
            };
            let Some(name) = raw.to_str() else {
                out.skip("unwritable name", &path);
                continue;
            };
            if name.starts_with('.') {
                out.skip("hidden", &path);
                continue;
            }
            // `#` ends a document id; `,`, `;`, brackets, backticks and whitespace end a cited
            // source in a handoff.
            if name.chars().any(|c| {
                matches!(c, '#' | ',' | ';' | '[' | ']' | '`')
                    || c.is_whitespace()
                    || c.is_control()
            }) {
                out.skip("unwritable name", &path);
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                out.skip("unreadable", &path);
                continue;
            };
            if kind.is_symlink() {
                out.skip("link", &path);
            } else if kind.is_dir() {
                stack.push((entry.path(), path));
            } else if !kind.is_file() {
                out.skip("not a regular file", &path);
            } else {
                match Format::of(name) {
                    Some(f) => out.docs.push((path, f)),
                    None => out.skip("not a document", &path),
                }
            }
        }
    }
    out.docs.sort();
    out.left_out.sort();
    out
}
