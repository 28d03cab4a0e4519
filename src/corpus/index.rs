//! The search index on tantivy: one entry per chunk (its document's path, its line span, its
//! text and its headings indexed with positions, English stemming), BM25 with headings
//! boosted; one writer at a time.

use std::path::Path;
use std::time::{Duration, Instant};

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, QueryParser, RegexQuery, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED, STRING,
};
use tantivy::snippet::SnippetGenerator;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::CorpusError;

/// How much more a match in a chunk's headings (or its document's name) weighs than one in
/// its text.
pub(crate) const HEADING_BOOST: f32 = 2.0;
/// How long to wait for another process's writer before giving up.
const WRITER_WAIT: Duration = Duration::from_secs(30);

/// The fields of the index.
#[derive(Clone, Copy)]
pub(crate) struct Fields {
    pub(crate) path: Field,
    pub(crate) start: Field,
    pub(crate) end: Field,
    pub(crate) text: Field,
    pub(crate) heading: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let stemmed = |record| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("en_stem")
                .set_index_option(record),
        )
    };
    let fields = Fields {
        path: b.add_text_field("path", STRING | STORED),
        start: b.add_u64_field("start", STORED),
        end: b.add_u64_field("end", STORED),
        // Positions for phrase queries in the text; a heading is matched by its words.
        text: b.add_text_field("text", stemmed(IndexRecordOption::WithFreqsAndPositions)),
        heading: b.add_text_field("heading", stemmed(IndexRecordOption::WithFreqs)),
    };
    (b.build(), fields)
}

/// The index: on disk under the state directory, or in memory.
pub(crate) struct SearchIndex {
    index: Index,
    reader: IndexReader,
    pub(crate) fields: Fields,
}

/// One chunk to index.
pub(crate) struct NewChunk<'a> {
    pub(crate) path: &'a str,
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) text: &'a str,
    pub(crate) heading: &'a str,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawHit {
    pub(crate) path: String,
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) score: f32,
}

/// A new index's settings: the stored fields (a chunk's path and lines) compressed in blocks
/// of 64 KiB — a document's chunks repeat its path, and bigger blocks hold more of them.
fn settings(schema: Schema) -> tantivy::IndexBuilder {
    Index::builder()
        .schema(schema)
        .settings(tantivy::IndexSettings {
            docstore_blocksize: 1 << 16,
            ..Default::default()
        })
}

fn failed(what: &str) -> impl Fn(tantivy::TantivyError) -> CorpusError + '_ {
    move |e| CorpusError::Index(format!("{what}: {e}"))
}

impl SearchIndex {
    /// Opens the index in `dir` (created when missing, of another schema, or `scratch`), or
    /// one in memory; an index whose files fail their checksums is an error.
    pub(crate) fn open(
        dir: Option<&Path>,
        scratch: bool,
    ) -> Result<(SearchIndex, bool), CorpusError> {
        let (schema, fields) = schema();
        let (index, fresh) = match dir {
            None => (
                settings(schema)
                    .create_in_ram()
                    .map_err(failed("creating the index"))?,
                true,
            ),
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| {
                    CorpusError::Index(format!("{}: could not be created: {e}", dir.display()))
                })?;
                match Index::open_in_dir(dir).ok().filter(|_| !scratch) {
                    Some(index) if index.schema() == schema => {
                        let damaged = index
                            .validate_checksum()
                            .map_err(failed("checking the index"))?;
                        if !damaged.is_empty() {
                            return Err(CorpusError::Index(format!(
                                "{} index file(s) are damaged",
                                damaged.len()
                            )));
                        }
                        (index, false)
                    }
                    _ => {
                        // Missing or of another layout: started again.
                        clear_dir(dir)?;
                        let index = settings(schema)
                            .create_in_dir(dir)
                            .map_err(failed("creating the index"))?;
                        (index, true)
                    }
                }
            }
        };
        index
            .tokenizers()
            .register("en_stem", super::stem::analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(failed("opening the index"))?;
        Ok((
            SearchIndex {
                index,
                reader,
                fields,
            },
            fresh,
        ))
    }

    /// The one writer, waiting up to 30 s for another process's to finish.
    pub(crate) fn writer(&self) -> Result<IndexWriter, CorpusError> {
        let started = Instant::now();
        loop {
            match self.index.writer_with_num_threads(2, 160_000_000) {
                Ok(w) => return Ok(w),
                Err(tantivy::TantivyError::LockFailure(..)) if started.elapsed() < WRITER_WAIT => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(failed("taking the index's writer")(e)),
            }
        }
    }

    /// Removes every chunk of a document.
    pub(crate) fn delete(&self, writer: &IndexWriter, path: &str) {
        writer.delete_term(Term::from_field_text(self.fields.path, path));
    }

    /// Adds one chunk.
    pub(crate) fn add(
        &self,
        writer: &IndexWriter,
        chunk: &NewChunk<'_>,
    ) -> Result<(), CorpusError> {
        let mut doc = TantivyDocument::default();
        doc.add_text(self.fields.path, chunk.path);
        doc.add_u64(self.fields.start, u64::from(chunk.start));
        doc.add_u64(self.fields.end, u64::from(chunk.end));
        doc.add_text(self.fields.text, chunk.text);
        doc.add_text(self.fields.heading, chunk.heading);
        writer.add_document(doc).map_err(failed("adding a chunk"))?;
        Ok(())
    }

    /// Commits what the writer holds and reloads the reader.
    pub(crate) fn commit(&self, mut writer: IndexWriter) -> Result<(), CorpusError> {
        writer.commit().map_err(failed("committing the index"))?;
        writer
            .wait_merging_threads()
            .map_err(failed("merging the index"))?;
        self.reader.reload().map_err(failed("reloading the index"))
    }

    /// The best `limit` chunks for a query (BM25; phrases in double quotes; headings
    /// boosted) among the documents under `paths` (none: all) — the scope is part of the
    /// query, so ranking never pushes a chunk of it out —, each kept only when `keep` says
    /// so, and a snippet maker for them.
    pub(crate) fn search(
        &self,
        query: &str,
        paths: &[String],
        limit: usize,
        keep: &dyn Fn(&str) -> bool,
    ) -> Result<(Vec<RawHit>, Option<SnippetGenerator>), CorpusError> {
        let mut parser =
            QueryParser::for_index(&self.index, vec![self.fields.text, self.fields.heading]);
        parser.set_field_boost(self.fields.heading, HEADING_BOOST);
        let (words, _) = parser.parse_query_lenient(query);
        let parsed: Box<dyn Query> = match self.scope(paths)? {
            Some(scope) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, words.box_clone()),
                (Occur::Must, scope),
            ])),
            None => words.box_clone(),
        };
        let searcher = self.reader.searcher();
        // Pages that repeat others are left out after ranking: ask for more.
        let top = searcher
            .search(
                &*parsed,
                &TopDocs::with_limit((limit * 4).max(40)).order_by_score(),
            )
            .map_err(failed("searching"))?;
        let mut out = Vec::new();
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address).map_err(failed("reading a hit"))?;
            let text = |f| {
                doc.get_first(f)
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string()
            };
            let num = |f| doc.get_first(f).and_then(|v| v.as_u64()).unwrap_or(0) as u32;
            let path = text(self.fields.path);
            if !keep(&path) {
                continue;
            }
            out.push(RawHit {
                start: num(self.fields.start),
                end: num(self.fields.end),
                path,
                score,
            });
            if out.len() == limit {
                break;
            }
        }
        let snippets = SnippetGenerator::create(&searcher, &*words, self.fields.text)
            .ok()
            .map(|mut g| {
                g.set_max_num_chars(180);
                g
            });
        Ok((out, snippets))
    }

    /// A query matching the documents under `paths` (a document itself, or any below it);
    /// none for no paths or `.`.
    fn scope(&self, paths: &[String]) -> Result<Option<Box<dyn Query>>, CorpusError> {
        if paths.is_empty() || paths.iter().any(|p| p == ".") {
            return Ok(None);
        }
        let mut any: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for p in paths {
            any.push((
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.path, p),
                    IndexRecordOption::Basic,
                )),
            ));
            let below =
                RegexQuery::from_pattern(&format!("{}/.*", regex::escape(p)), self.fields.path)
                    .map_err(failed("a path filter"))?;
            any.push((Occur::Should, Box::new(below)));
        }
        Ok(Some(Box::new(BooleanQuery::new(any))))
    }

    /// How many chunks hold each stemmed term of a query, in the query's order, each once —
    /// chunks of the index now: those a refresh deleted are not counted, though a segment
    /// keeps them until it is merged.
    pub(crate) fn term_counts(&self, query: &str) -> Vec<(String, u64)> {
        let searcher = self.reader.searcher();
        let mut out: Vec<(String, u64)> = Vec::new();
        for term in stems(query) {
            if out.iter().any(|(t, _)| *t == term) {
                continue;
            }
            let term_of = Term::from_field_text(self.fields.text, &term);
            let n: u64 = searcher
                .segment_readers()
                .iter()
                .map(|segment| alive_holding(segment, self.fields.text, &term_of))
                .sum();
            out.push((term, n));
        }
        out
    }

    /// How many chunks the index holds.
    pub(crate) fn chunks(&self) -> u64 {
        self.reader.searcher().num_docs()
    }
}

/// How many chunks of a segment that are not deleted hold a term (0 when it cannot be read).
pub(super) fn alive_holding(segment: &tantivy::SegmentReader, field: Field, term: &Term) -> u64 {
    let Ok(inverted) = segment.inverted_index(field) else {
        return 0;
    };
    let counted = match segment.alive_bitset() {
        None => inverted.doc_freq(term),
        Some(alive) => inverted
            .read_postings(term, IndexRecordOption::Basic)
            .map(|p| p.map_or(0, |p| p.doc_freq_given_deletes(alive))),
    };
    u64::from(counted.unwrap_or(0))
}

/// A text's words as the index holds them: split at anything not a letter or digit, lower
/// case, English stems (tantivy's `en_stem`).
pub(crate) fn stems(text: &str) -> Vec<String> {
    let mut analyzer = super::stem::analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

/// Empties an index directory of tantivy's files (a stale layout), leaving other files.
fn clear_dir(dir: &Path) -> Result<(), CorpusError> {
    // A link put in the index's place is not followed: what it points to is not ours.
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(CorpusError::Index(format!(
            "{}: is a symbolic link, not the index's folder",
            dir.display()
        )));
    }
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CorpusError::Index(format!("{}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        // Only tantivy's files: its metadata, its lock files and its segments' files.
        let name = entry.file_name().to_string_lossy().into_owned();
        let tantivy = name == "meta.json"
            || name == ".managed.json"
            || name.starts_with(".tantivy-")
            || [
                ".idx",
                ".pos",
                ".term",
                ".store",
                ".fieldnorm",
                ".fast",
                ".del",
            ]
            .iter()
            .any(|e| name.ends_with(e));
        if tantivy && entry.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::remove_file(&path)
                .map_err(|e| CorpusError::Index(format!("{}: {e}", path.display())))?;
        }
    }
    Ok(())
}
