//! `baton index CORPUS` and the corpus `baton research` opens: the folder's search index
//! built or brought up to date under the state directory, with a progress bar on stderr.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use super::{StateArg, EXIT_DONE, EXIT_FAILED, EXIT_USAGE};

#[derive(clap::Args, Debug)]
pub(crate) struct IndexArgs {
    /// The folder of documents (HTML, Markdown, plain text).
    corpus: std::path::PathBuf,
    /// Print the figures as one JSON document on stdout.
    #[arg(long)]
    json: bool,
    /// Also run a search and print its best chunks (as the researchers' `search` tool ranks
    /// them).
    #[arg(long, value_name = "QUERY")]
    search: Option<String>,
    /// Do not draw the progress bar.
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    state: StateArg,
}

/// Opens a corpus with its index under the state directory; the exit code on failure (the
/// error printed as one line: a folder that is missing or not a folder, or holding no
/// document, exits 2; an index that cannot be written, 1).
fn open_corpus(
    root: &Path,
    state: &StateArg,
    show: bool,
) -> Result<(baton::Corpus, baton::IndexStats), i32> {
    let bar = if show {
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr())
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("indexing {bar:30} {pos}/{len} documents")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    // A state that is not a directory — or under a file, or a dangling link — is bad input,
    // said as the run's store says it.
    let nearest = state
        .state
        .ancestors()
        .find(|p| p.symlink_metadata().is_ok());
    if nearest.is_some_and(|p| !p.is_dir()) {
        say!(
            "{}",
            baton::StoreError::Open {
                path: state.state.display().to_string(),
                reason: "it is not a directory".into(),
            }
        );
        return Err(EXIT_USAGE);
    }
    let dir = baton::Corpus::index_dir_in(&state.state, root);
    let opened = baton::Corpus::open(root, Some(&dir), &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    match opened {
        Ok(opened) => Ok(opened),
        Err(e @ baton::CorpusError::BadRoot { .. }) => {
            say!("{e}");
            Err(EXIT_USAGE)
        }
        Err(e) => {
            say!("{e}");
            Err(EXIT_FAILED)
        }
    }
}

/// One line of what indexing found.
fn summary(root: &Path, stats: &baton::IndexStats) -> String {
    let skipped: Vec<String> = stats
        .skipped
        .iter()
        .map(|(why, n)| format!("{n} {why}"))
        .collect();
    format!(
        "{}: {} documents ({} read now, {} removed), {} chunks, {} bytes, {} kept out of search (repeats, contents pages, redirects), {} ms{}",
        root.display(),
        stats.documents,
        stats.indexed,
        stats.removed,
        stats.chunks,
        stats.bytes,
        stats.repeats,
        stats.millis,
        if skipped.is_empty() {
            String::new()
        } else {
            format!("; skipped: {}", skipped.join(", "))
        }
    )
}

/// `baton index CORPUS`.
pub(crate) fn index(args: IndexArgs) -> i32 {
    let (corpus, stats) = match open_corpus(&args.corpus, &args.state, !args.no_progress) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let text = if let Some(query) = &args.search {
        let found = if args.json {
            corpus.search_json(query, 10).map(|v| v.to_string())
        } else {
            corpus.search_text(query, 10)
        };
        match found {
            Ok(text) if args.json => text,
            Ok(text) => super::terminal_safe(&text).trim_end().to_string(),
            Err(e) => {
                say!("{e}");
                return EXIT_FAILED;
            }
        }
    } else if args.json {
        serde_json::to_string(&stats).unwrap_or_default()
    } else {
        super::terminal_safe(&summary(&args.corpus, &stats)).into_owned()
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|_| out.flush()) {
        say!("could not write the figures: {e}");
        return EXIT_FAILED;
    }
    EXIT_DONE
}

/// The corpus `baton research` searches: indexed or refreshed now; a folder with no document
/// is refused (exit 2), saying what was skipped.
pub(crate) fn open(root: &Path, state: &StateArg, show: bool) -> Result<Arc<baton::Corpus>, i32> {
    let (corpus, stats) = open_corpus(root, state, show)?;
    if show {
        super::to_stderr(&format!(
            "{}\n",
            super::terminal_line(&summary(root, &stats))
        ));
    }
    if stats.documents == 0 {
        say!(
            "{}: nothing indexed: no HTML, Markdown or text document{}",
            root.display(),
            match summary(root, &stats).split_once("; skipped: ") {
                Some((_, s)) => format!(" (skipped: {s})"),
                None => String::new(),
            }
        );
        return Err(EXIT_USAGE);
    }
    Ok(Arc::new(corpus))
}
