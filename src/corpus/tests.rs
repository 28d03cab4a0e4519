//! Tests of the corpus: indexing, repeats left out of search, incremental updates.

use super::*;

fn page(title: &str, body: &str) -> String {
    format!(
        "<html><head><title>{title}</title></head><body><nav><a href=\"a.html\">Home</a></nav><main><h1>{title}</h1>{body}</main></body></html>"
    )
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_corpus_is_indexed_searched_and_refreshed_by_digest() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let a = "<p>The gizmo spins clockwise when warm.</p><p>Other words here.</p>";
    let b = "<p>The widget hums at night.</p><p>More text again.</p>";
    write(dir.path(), "a.html", &page("Gizmo", a));
    write(dir.path(), "b/b.html", &page("Widget", b));
    write(
        dir.path(),
        "print.html",
        &page("All", &format!("<h1>Gizmo</h1>{a}<h1>Widget</h1>{b}")),
    );
    write(dir.path(), "notes.md", "# Notes\n\nThe sprocket is blue.\n");
    write(dir.path(), "logo.png", "\u{0}png");
    let (corpus, stats) = Corpus::open(dir.path(), Some(state.path()), &|_, _| {}).unwrap();
    assert_eq!(stats.documents, 4);
    assert_eq!(stats.indexed, 4);
    assert_eq!(stats.skipped.get("not a document"), Some(&1));
    assert_eq!(stats.repeats, 1, "print.html repeats the chapters");
    let hits = corpus.search("gizmo spins", &[], 5).unwrap();
    assert_eq!(hits[0].path, "a.html");
    assert!(hits.iter().all(|h| h.path != "print.html"));
    assert_eq!(hits[0].headings, vec!["Gizmo"]);
    let layout = corpus.layout("a.html").unwrap();
    assert!(layout
        .text(hits[0].start, hits[0].end)
        .contains("spins clockwise"));
    assert_eq!(
        corpus.search("sprocket", &["b".to_string()], 5).unwrap(),
        vec![]
    );
    assert_eq!(
        corpus.search("hums", &["b".to_string()], 5).unwrap()[0].path,
        "b/b.html"
    );
    drop(corpus);
    // Unchanged: nothing read again. Changed: that document only.
    let (_, again) = Corpus::open(dir.path(), Some(state.path()), &|_, _| {}).unwrap();
    assert_eq!(again.indexed, 0);
    write(
        dir.path(),
        "notes.md",
        "# Notes\n\nThe sprocket is green.\n",
    );
    std::fs::remove_file(dir.path().join("b/b.html")).unwrap();
    let (corpus, changed) = Corpus::open(dir.path(), Some(state.path()), &|_, _| {}).unwrap();
    assert_eq!((changed.indexed, changed.removed), (1, 1));
    // The removed page's chunks are gone (print.html, no longer repeating both chapters,
    // is searched again).
    let hums = corpus.search("hums", &[], 5).unwrap();
    assert!(hums.iter().all(|h| h.path == "print.html"), "{hums:?}");
    assert_eq!(
        corpus.search("green sprocket", &[], 5).unwrap()[0].path,
        "notes.md"
    );
}

#[test]
fn a_missing_folder_and_a_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = Corpus::open(&dir.path().join("nope"), None, &|_, _| {}).unwrap_err();
    assert!(e.to_string().ends_with("no such directory"), "{e}");
    write(dir.path(), "f.md", "x");
    let e = Corpus::open(&dir.path().join("f.md"), None, &|_, _| {}).unwrap_err();
    assert!(e.to_string().ends_with("not a directory"), "{e}");
}

#[test]
fn spans_parse() {
    assert_eq!(parse_span("L3-9"), Some((3, 9)));
    assert_eq!(parse_span("L4"), Some((4, 4)));
    assert_eq!(parse_span("L9-3"), None);
    assert_eq!(parse_span("L0-3"), None);
    assert_eq!(parse_span("x"), None);
}

#[test]
fn a_damaged_index_is_rebuilt_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    for i in 0..30 {
        write(
            dir.path(),
            &format!("d{i}.md"),
            &format!("# Doc {i}\n\nThe retry budget of shard {i} is kept here.\n"),
        );
    }
    let (corpus, _) = Corpus::open(dir.path(), Some(state.path()), &|_, _| {}).unwrap();
    drop(corpus);
    let tantivy = state.path().join("tantivy");
    let mut damaged = 0;
    for entry in std::fs::read_dir(&tantivy).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "idx" || e == "term") {
            let mut bytes = std::fs::read(&path).unwrap();
            for b in bytes.iter_mut().take(64) {
                *b ^= 0xff;
            }
            std::fs::write(&path, bytes).unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 0);
    let (corpus, stats) = Corpus::open(dir.path(), Some(state.path()), &|_, _| {}).unwrap();
    assert_eq!(stats.indexed, 30, "rebuilt from nothing");
    assert_eq!(corpus.search("retry budget", &[], 3).unwrap().len(), 3);
}

#[test]
fn a_scoped_search_finds_what_ranks_low_in_the_whole_corpus() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..60 {
        write(
            dir.path(),
            &format!("top/t{i}.md"),
            &format!("# Gizmo {i}\n\nGizmo gizmo gizmo, the gizmo of page {i}.\n"),
        );
    }
    write(
        dir.path(),
        "deep/x.md",
        "# Notes\n\nA long page that mentions the gizmo once among many other words of its own.\n",
    );
    let (corpus, _) = Corpus::open(dir.path(), None, &|_, _| {}).unwrap();
    let whole = corpus.search("gizmo", &[], 5).unwrap();
    assert!(whole.iter().all(|h| h.path.starts_with("top/")));
    let scoped = corpus.search("gizmo", &["deep".to_string()], 5).unwrap();
    assert_eq!(scoped.len(), 1);
    assert_eq!(scoped[0].path, "deep/x.md");
    let one = corpus
        .search("gizmo", &["deep/x.md".to_string()], 5)
        .unwrap();
    assert_eq!(one.len(), 1);
}

#[cfg(unix)]
#[test]
fn a_link_in_place_of_the_manifest_s_temporary_file_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.md",
        "# A\n\nThe retry budget is kept here.\n",
    );
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("precious.txt");
    std::fs::write(&target, "keep me").unwrap();
    std::os::unix::fs::symlink(&target, state.path().join("manifest.json.tmp")).unwrap();
    let (corpus, stats) = Corpus::open(dir.path(), Some(state.path()), &|_, _| {}).unwrap();
    assert_eq!(stats.documents, 1);
    drop(corpus);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    assert!(state.path().join("manifest.json").is_file());
    assert!(!state.path().join("manifest.json").is_symlink());
}

#[test]
fn a_deleted_chunk_is_not_counted_as_holding_a_word() {
    use tantivy::schema::{Schema, TEXT};
    let mut schema = Schema::builder();
    let text = schema.add_text_field("text", TEXT);
    let index = tantivy::Index::create_in_ram(schema.build());
    let mut writer: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
    writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    writer
        .add_document(tantivy::doc!(text => "zephyr one"))
        .unwrap();
    writer
        .add_document(tantivy::doc!(text => "zephyr two"))
        .unwrap();
    writer.commit().unwrap();
    writer.delete_term(tantivy::Term::from_field_text(text, "one"));
    writer.commit().unwrap();
    let reader = index.reader().unwrap();
    let searcher = reader.searcher();
    let zephyr = tantivy::Term::from_field_text(text, "zephyr");
    // The segment still lists the deleted document; the count leaves it out.
    assert_eq!(searcher.doc_freq(&zephyr).unwrap(), 2);
    let counted: u64 = searcher
        .segment_readers()
        .iter()
        .map(|s| super::index::alive_holding(s, text, &zephyr))
        .sum();
    assert_eq!(counted, 1);
}
