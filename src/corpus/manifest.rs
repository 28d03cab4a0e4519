//! What the index holds, by document: its content digest, its chunks' spans and digests, and
//! whether search leaves it out (a redirect, a table of contents, a page repeating others);
//! and the walk that finds a corpus's documents.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{CorpusError, Format};

/// The manifest's layout version: another one is rebuilt.
const VERSION: u32 = 3;
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
    /// chunk of headings only has none.
    pub(crate) chunks: Vec<String>,
    /// A page that only redirects to another.
    pub(crate) redirect: bool,
    /// A page that is mostly links: a table of contents.
    pub(crate) navigation: bool,
    /// A page repeating other pages (set by [`Manifest::mark_repeats`]).
    #[serde(default)]
    pub(crate) repeat: bool,
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
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(fail)?;
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

/// A corpus's documents and what was left out.
pub(crate) struct Walked {
    /// Relative paths (`/` separators), sorted, with their formats.
    pub(crate) docs: Vec<(String, Format)>,
    /// Entries left out, by reason.
    pub(crate) skipped: BTreeMap<String, usize>,
}

/// Walks a corpus folder: regular files with a document's name. Hidden entries, links,
/// special files and names a citation could not write (holding `#`, whitespace or control
/// characters, or not UTF-8) are left out and counted; so are files of other kinds.
pub(crate) fn walk(root: &Path) -> Walked {
    let mut out = Walked {
        docs: Vec::new(),
        skipped: BTreeMap::new(),
    };
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            *out.skipped.entry("unreadable".into()).or_default() += 1;
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let skip =
                |out: &mut Walked, why: &str| *out.skipped.entry(why.into()).or_default() += 1;
            let Some(name) = name.to_str() else {
                skip(&mut out, "unwritable name");
                continue;
            };
            if name.starts_with('.') {
                skip(&mut out, "hidden");
                continue;
            }
            if name
                .chars()
                .any(|c| c == '#' || c.is_whitespace() || c.is_control())
            {
                skip(&mut out, "unwritable name");
                continue;
            }
            let path = if rel.is_empty() {
                name.to_string()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(kind) = entry.file_type() else {
                skip(&mut out, "unreadable");
                continue;
            };
            if kind.is_symlink() {
                skip(&mut out, "link");
            } else if kind.is_dir() {
                stack.push((entry.path(), path));
            } else if !kind.is_file() {
                skip(&mut out, "not a regular file");
            } else {
                match Format::of(name) {
                    Some(f) => out.docs.push((path, f)),
                    None => skip(&mut out, "not a document"),
                }
            }
        }
    }
    out.docs.sort();
    out
}
