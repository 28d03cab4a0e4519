//! The research corpus: a folder of documents (HTML, Markdown, plain text) converted to text,
//! chunked, and indexed for search; what the `search` and `read` tools show.
//!
//! A chunk's id is `doc:PATH#Lstart-end`: PATH relative to the corpus folder (`/`
//! separators), the span in lines of the document's text as [`Corpus::read`] shows it (not
//! of the file's bytes). The index is updated by content digest: a document whose digest
//! changed has its chunks deleted and added again; an unchanged document is not read twice.

mod chunk;
mod convert;
mod index;
mod manifest;
mod stem;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub(crate) use chunk::{Chunk, Layout};
pub(crate) use convert::Format;
pub(crate) use index::stems;
use index::{NewChunk, SearchIndex};
pub(crate) use manifest::{DocEntry, Manifest};

/// Why a corpus could not be opened, indexed or searched (one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorpusError {
    /// The folder is missing or not a folder.
    #[error("{path}: {reason}")]
    BadRoot {
        /// The folder as given.
        path: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The index could not be built, written or read.
    #[error("the search index: {0}")]
    Index(String),
}

/// What building or refreshing the index did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct IndexStats {
    /// Documents in the corpus (indexed now or before).
    pub documents: usize,
    /// Of them, read and indexed now (new or changed).
    pub indexed: usize,
    /// Documents gone since the last index, their chunks removed.
    pub removed: usize,
    /// Chunks in the index.
    pub chunks: u64,
    /// Bytes of the documents' files.
    pub bytes: u64,
    /// Pages kept out of search results as repeating other pages (a print-all page, an
    /// alias of another page), tables of contents, and redirects.
    pub repeats: usize,
    /// Files that are not documents or could not be read, by reason.
    pub skipped: BTreeMap<String, usize>,
    /// The first 1,000 entries left out that could hold a document (hidden, links, names a
    /// citation could not write, binary, too large or unreadable files), relative.
    pub left_out: Vec<String>,
    /// Milliseconds taken.
    pub millis: u64,
}

/// One search hit as the `search` tool shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hit {
    pub(crate) path: String,
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) headings: Vec<String>,
    pub(crate) snippet: String,
    pub(crate) score: f32,
}

impl Hit {
    /// The chunk's id, `PATH#Lstart-end` (cited as `doc:` and this).
    pub(crate) fn id(&self) -> String {
        chunk_id(&self.path, self.start, self.end)
    }
}

/// How a search's listing opens the line that says how many chunks hold each word of its
/// query.
pub(crate) const TERMS_LINE: &str = "terms (chunks holding each, of ";

/// A chunk's id: `PATH#Lstart-end`.
pub(crate) fn chunk_id(path: &str, start: u32, end: u32) -> String {
    format!("{path}#L{start}-{end}")
}

/// A span of a chunk id, `Lstart-end` (or `Lline`).
pub(crate) fn parse_span(span: &str) -> Option<(u32, u32)> {
    let rest = span.strip_prefix('L')?;
    let (a, b) = rest.split_once('-').unwrap_or((rest, rest));
    let (a, b) = (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?);
    (a >= 1 && a <= b).then_some((a, b))
}

/// An open corpus: its folder, its manifest and its search index.
pub struct Corpus {
    root: PathBuf,
    manifest: Manifest,
    index: SearchIndex,
    /// Documents laid out, as last read (at most [`LAYOUT_CACHE`]), with the length and
    /// modification time of the file they were read from.
    layouts: Mutex<HashMap<String, (FileStamp, Arc<Layout>)>>,
    /// Entries left out that could hold a document: how many, and the first names.
    left_out: (usize, Vec<String>),
}

/// A file's length and modification time: a cached layout stands while they do.
type FileStamp = (u64, Option<std::time::SystemTime>);

fn stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()))
}

impl std::fmt::Debug for Corpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Corpus")
            .field("root", &self.root)
            .field("documents", &self.manifest.docs.len())
            .finish()
    }
}

/// Most documents kept laid out in memory.
const LAYOUT_CACHE: usize = 256;

/// A document read from disk, converted and laid out.
pub(crate) struct ReadDoc {
    pub(crate) entry: DocEntry,
    pub(crate) layout: Layout,
}

/// Reads one document's text: a regular file within the byte cap, not binary. `Err` names
/// why it is skipped.
pub(crate) fn read_text(path: &Path, rel: &str) -> Result<String, &'static str> {
    match crate::fsio::read_text_file(path, rel) {
        Ok(text) => Ok(text),
        Err(crate::fsio::ReadError::Binary(_)) => Err("binary"),
        Err(crate::fsio::ReadError::TooLarge { .. }) => Err("too large"),
        Err(crate::fsio::ReadError::Unreadable { .. }) => Err("unreadable"),
    }
}

/// A document's text converted and laid out, with its manifest entry (`digest`: its text's).
pub(crate) fn lay_out(text: &str, digest: String, format: Format) -> ReadDoc {
    let converted = convert::convert(text, format);
    let layout = chunk::layout(&converted.blocks);
    let chunks = layout
        .chunks
        .iter()
        .map(|c| chunk_body(&layout, c))
        .filter(|body| !body.is_empty())
        .map(|body| crate::digest::sha256_hex(body.as_bytes())[..12].to_string())
        .collect();
    ReadDoc {
        entry: DocEntry {
            digest,
            bytes: text.len() as u64,
            chunks,
            redirect: converted.redirect,
            navigation: converted.words >= 20 && converted.link_words * 10 >= converted.words * 6,
            repeat: false,
        },
        layout,
    }
}

/// Reads one document and lays it out. `Err` names why it is skipped.
pub(crate) fn read_doc(path: &Path, rel: &str, format: Format) -> Result<ReadDoc, &'static str> {
    let text = read_text(path, rel)?;
    let digest = crate::digest::sha256_hex(text.as_bytes());
    Ok(lay_out(&text, digest, format))
}

/// The corpus folder, canonical; a folder that is missing or not a folder refused.
fn checked_root(root: &Path) -> Result<PathBuf, CorpusError> {
    let bad = |reason: String| CorpusError::BadRoot {
        path: root.display().to_string(),
        reason,
    };
    let meta = std::fs::metadata(root).map_err(|e| {
        bad(match e.kind() {
            std::io::ErrorKind::NotFound => "no such directory".into(),
            _ => e.to_string(),
        })
    })?;
    if !meta.is_dir() {
        return Err(bad("not a directory".into()));
    }
    root.canonicalize().map_err(|e| bad(e.to_string()))
}

/// Runs index work, a panic of the index library (damaged files it trusted) made an error.
fn guarded<T>(work: impl FnOnce() -> Result<T, CorpusError>) -> Result<T, CorpusError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|_| {
        Err(CorpusError::Index(
            "the index is damaged: run `baton index` on the folder again".into(),
        ))
    })
}

/// Takes the index directory's lock (`DIR/lock`), waiting for another process's.
fn lock(dir: &Path) -> Result<std::fs::File, CorpusError> {
    let fail = |e: std::io::Error| CorpusError::Index(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("lock"))
        .map_err(fail)?;
    file.lock().map_err(fail)?;
    Ok(file)
}

/// A chunk's text without its heading lines, whitespace collapsed: what two pages repeating
/// each other share (the digest the repeat rule compares; empty for a chunk of headings only).
fn chunk_body(layout: &Layout, c: &Chunk) -> String {
    let text = layout.text(c.start, c.end);
    text.lines()
        .filter(|l| !is_heading_line(l))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A heading as laid out: `#` to `######` and a space.
pub(crate) fn is_heading_line(line: &str) -> bool {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&hashes) && line[hashes..].starts_with(' ')
}

impl Corpus {
    /// Opens a corpus folder, building its index in `index_dir` (none: in memory) or bringing
    /// it up to date; `progress` is told (done, total) as documents are read. One process at
    /// a time works on an index directory (the others wait); an index found damaged — its
    /// checksums, a file missing, a commit that cannot be made — is rebuilt from nothing.
    pub fn open(
        root: &Path,
        index_dir: Option<&Path>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<(Corpus, IndexStats), CorpusError> {
        let root = checked_root(root)?;
        let _lock = index_dir.map(lock).transpose()?;
        let build = |scratch| guarded(|| Corpus::build(&root, index_dir, progress, scratch));
        match build(false) {
            Err(CorpusError::Index(_)) if index_dir.is_some() => build(true),
            other => other,
        }
    }

    /// Indexes `root` into `index_dir`, from nothing when `scratch`.
    fn build(
        root: &Path,
        index_dir: Option<&Path>,
        progress: &dyn Fn(usize, usize),
        scratch: bool,
    ) -> Result<(Corpus, IndexStats), CorpusError> {
        let started = Instant::now();
        let root = root.to_path_buf();
        let (index, fresh) =
            SearchIndex::open(index_dir.map(|d| d.join("tantivy")).as_deref(), scratch)?;
        let manifest_path = index_dir.map(|d| d.join("manifest.json"));
        let old = match (&manifest_path, fresh) {
            // An index whose manifest is missing, damaged or of another version holds chunks
            // nothing accounts for: it is rebuilt from nothing (`open` retries from scratch).
            (Some(p), false) => Manifest::load(p).ok_or_else(|| {
                CorpusError::Index("the index's manifest is missing or of another version".into())
            })?,
            _ => Manifest::default(),
        };
        let mut walked = manifest::walk(&root);
        let mut manifest = Manifest::default();
        let mut stats = IndexStats::default();
        let mut left_out = Vec::new();
        let writer = index.writer()?;
        let total = walked.docs.len();
        let mut changed = false;
        for (n, (rel, format)) in walked.docs.iter().enumerate() {
            progress(n, total);
            let text = match read_text(&root.join(rel), rel) {
                Ok(text) => text,
                Err(why) => {
                    left_out.push((why, rel.clone()));
                    continue;
                }
            };
            stats.bytes += text.len() as u64;
            let digest = crate::digest::sha256_hex(text.as_bytes());
            // Unchanged since the last index: its entry stands, its text is not laid out.
            if let Some(kept) = old.docs.get(rel).filter(|e| e.digest == digest) {
                manifest.docs.insert(rel.clone(), kept.clone());
                continue;
            }
            let doc = lay_out(&text, digest, *format);
            changed = true;
            stats.indexed += 1;
            // A new index holds nothing to delete (a delete is checked against every chunk).
            if !fresh {
                index.delete(&writer, rel);
            }
            let name = rel.replace(['/', '-', '_', '.'], " ");
            for c in &doc.layout.chunks {
                let heading = format!("{} {name}", c.headings.join(" "));
                index.add(
                    &writer,
                    &NewChunk {
                        path: rel,
                        start: c.start,
                        end: c.end,
                        text: &doc.layout.text(c.start, c.end),
                        heading: &heading,
                    },
                )?;
            }
            manifest.docs.insert(rel.clone(), doc.entry);
        }
        progress(total, total);
        for (why, rel) in left_out {
            walked.skip(why, &rel);
        }
        walked.left_out.sort();
        stats.skipped = walked.skipped;
        stats.left_out = walked.left_out;
        for gone in old.docs.keys().filter(|k| !manifest.docs.contains_key(*k)) {
            index.delete(&writer, gone);
            stats.removed += 1;
            changed = true;
        }
        if changed || fresh {
            index.commit(writer)?;
        } else {
            drop(writer);
        }
        manifest.mark_repeats();
        if let Some(p) = &manifest_path {
            manifest.save(p)?;
        }
        stats.documents = manifest.docs.len();
        stats.repeats = manifest.docs.values().filter(|d| d.hidden()).count();
        stats.chunks = index.chunks();
        stats.millis = started.elapsed().as_millis() as u64;
        Ok((
            Corpus {
                root,
                manifest,
                index,
                layouts: Mutex::new(HashMap::new()),
                left_out: (
                    stats
                        .skipped
                        .iter()
                        .filter(|(why, _)| *why != "not a document")
                        .map(|(_, n)| n)
                        .sum(),
                    stats.left_out.clone(),
                ),
            },
            stats,
        ))
    }

    /// Where the index of the folder `root` is kept under a state directory:
    /// `STATE/corpus/KEY`, KEY taken from the digest of the folder's canonical path.
    pub fn index_dir_in(state: &Path, root: &Path) -> PathBuf {
        let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let digest = crate::digest::sha256_hex(canonical.to_string_lossy().as_bytes());
        state.join("corpus").join(&digest[..16])
    }

    /// The corpus folder (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How many documents it holds.
    pub fn documents(&self) -> usize {
        self.manifest.docs.len()
    }

    /// The documents' paths, each a `doc:` id.
    pub(crate) fn ids(&self) -> HashSet<String> {
        self.manifest.docs.keys().cloned().collect()
    }

    /// Whether a document is searchable (not a repeat, a table of contents or a redirect).
    pub(crate) fn searchable(&self, path: &str) -> bool {
        self.manifest.docs.get(path).is_some_and(|d| !d.hidden())
    }

    /// A search's best chunks as the `search` tool prints them: how many chunks hold each
    /// word, then each chunk's id, headings and snippet.
    pub fn search_text(&self, query: &str, limit: usize) -> Result<String, CorpusError> {
        let hits = self.search(query, &[], limit)?;
        Ok(self.listing(query, &hits))
    }

    /// The terms line and the hits, as the `search` tool prints them.
    pub(crate) fn listing(&self, query: &str, hits: &[Hit]) -> String {
        let (counts, chunks) = self.term_counts(query);
        let mut out = String::new();
        if !counts.is_empty() {
            let list: Vec<String> = counts.iter().map(|(t, n)| format!("{t} {n}")).collect();
            out.push_str(&format!("{TERMS_LINE}{chunks}): {}\n", list.join(", ")));
        }
        for (i, hit) in hits.iter().enumerate() {
            out.push_str(&format!(
                "{}. doc:{} — {}\n   {}\n",
                i + 1,
                hit.id(),
                hit.headings.join(" > "),
                hit.snippet
            ));
        }
        out
    }

    /// The entries left out of the index under `paths` (none: all) that could hold a
    /// document: how many, and the first twenty names.
    pub(crate) fn left_out_under(&self, paths: &[String]) -> (usize, Vec<String>) {
        if paths.is_empty() {
            return (
                self.left_out.0,
                self.left_out.1.iter().take(20).cloned().collect(),
            );
        }
        let under: Vec<&String> = self
            .left_out
            .1
            .iter()
            .filter(|n| paths.iter().any(|p| crate::text::within(n, p)))
            .collect();
        (under.len(), under.into_iter().take(20).cloned().collect())
    }

    /// A search as JSON: `{"terms": [[stem, chunks]], "chunks": N, "hits": [{"id", "score",
    /// "headings", "snippet"}]}`.
    pub fn search_json(&self, query: &str, limit: usize) -> Result<serde_json::Value, CorpusError> {
        let hits = self.search(query, &[], limit)?;
        let (terms, chunks) = self.term_counts(query);
        Ok(serde_json::json!({
            "terms": terms,
            "chunks": chunks,
            "hits": hits.iter().map(|h| serde_json::json!({
                "id": format!("doc:{}", h.id()),
                "score": h.score,
                "headings": h.headings,
                "snippet": h.snippet,
            })).collect::<Vec<_>>(),
        }))
    }

    /// How many searchable documents lie under `paths` (none: the whole corpus).
    pub(crate) fn searchable_under(&self, paths: &[String]) -> usize {
        self.manifest
            .docs
            .iter()
            .filter(|(p, d)| {
                !d.hidden() && (paths.is_empty() || paths.iter().any(|s| crate::text::within(p, s)))
            })
            .count()
    }

    /// How many chunks hold each stemmed word of a query, and how many chunks there are.
    pub(crate) fn term_counts(&self, query: &str) -> (Vec<(String, u64)>, u64) {
        guarded(|| Ok((self.index.term_counts(query), self.index.chunks()))).unwrap_or_default()
    }

    /// The best chunks for a query among the searchable documents under `paths` (none:
    /// all), with their snippets.
    pub(crate) fn search(
        &self,
        query: &str,
        paths: &[String],
        limit: usize,
    ) -> Result<Vec<Hit>, CorpusError> {
        let keep = |p: &str| {
            self.searchable(p)
                && (paths.is_empty() || paths.iter().any(|s| crate::text::within(p, s)))
        };
        let (raw, snippets) = guarded(|| self.index.search(query, paths, limit, &keep))?;
        let mut out = Vec::new();
        for hit in raw {
            let layout = self.layout(&hit.path).ok();
            let text = layout
                .as_ref()
                .map(|l| l.text(hit.start, hit.end))
                .unwrap_or_default();
            let snippet = snippets
                .as_ref()
                .map(|g| g.snippet(&text).fragment().to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| text.chars().take(180).collect());
            let headings = layout
                .as_ref()
                .and_then(|l| l.chunks.iter().find(|c| c.start == hit.start))
                .map(|c| c.headings.clone())
                .unwrap_or_default();
            out.push(Hit {
                snippet: crate::text::one_line(&snippet),
                headings,
                path: hit.path,
                start: hit.start,
                end: hit.end,
                score: hit.score,
            });
        }
        Ok(out)
    }

    /// A document as it reads now, laid out; an error when it is not in the corpus, no longer
    /// reads, or changed since it was indexed.
    pub(crate) fn layout(&self, path: &str) -> Result<Arc<Layout>, String> {
        let Some(entry) = self.manifest.docs.get(path) else {
            return Err(format!("`{path}` is not a document of the corpus"));
        };
        let file = self.root.join(path);
        let now = stamp(&file);
        let cached = self.layouts.lock().ok().and_then(|m| m.get(path).cloned());
        if let Some((_, layout)) = cached.filter(|(at, _)| Some(*at) == now) {
            return Ok(layout);
        }
        let format = Format::of(path).ok_or_else(|| format!("`{path}` is not a document"))?;
        let doc = read_doc(&file, path, format)
            .map_err(|why| format!("`{path}` no longer reads ({why})"))?;
        if doc.entry.digest != entry.digest {
            return Err(format!(
                "`{path}` changed since the corpus was indexed: run the research again to refresh it"
            ));
        }
        let layout = Arc::new(doc.layout);
        if let (Ok(mut m), Some(now)) = (self.layouts.lock(), now) {
            if m.len() >= LAYOUT_CACHE {
                m.clear();
            }
            m.insert(path.to_string(), (now, Arc::clone(&layout)));
        }
        Ok(layout)
    }

    /// The digest of a cited span's text as the document reads now on disk (none: it no
    /// longer reads). Used to find evidence gone stale.
    pub(crate) fn current_digest(&self, path: &str, span: Option<&str>) -> Option<String> {
        Corpus::passage_digest(&self.root, path, span)
    }

    /// The SHA-256 of a passage (`path` under the corpus folder `root`, lines `span` as
    /// `Lstart-end`, none: the whole document) as the document reads on disk now — what
    /// `read` showed of it, if it did not change —; none when it no longer reads. Reads the
    /// document only: no index is opened or made.
    pub fn passage_digest(root: &Path, path: &str, span: Option<&str>) -> Option<String> {
        let format = Format::of(path)?;
        let doc = read_doc(&root.join(path), path, format).ok()?;
        let text = match span.and_then(parse_span) {
            Some((a, b)) => doc.layout.text(a, b),
            None => doc.layout.lines.join("\n"),
        };
        Some(crate::digest::sha256_hex(text.as_bytes()))
    }
}

#[cfg(test)]
mod tests;
