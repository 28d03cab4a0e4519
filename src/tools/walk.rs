//! The walk the workspace tools share: every non-ignored regular file under a tool's scopes,
//! never through a link inside them, with what it left out named (hidden and ignored entries,
//! links, names no citation could write, directories it could not read).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{ToolError, Workspace};

/// The ignore files the walker reads in a directory. (`.git/info/exclude` is not read: finding
/// it can mean following a `.git` file's `gitdir:` anywhere, reading files on the way.)
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];
/// The largest ignore file read; a larger one is not read (nor its directory walked).
const MAX_IGNORE_BYTES: u64 = 1024 * 1024;

/// An ignore file in `dir` the walker must not read: not a regular file (a FIFO would block
/// the walk, a device would never end) or over [`MAX_IGNORE_BYTES`].
fn unreadable_ignore_file(dir: &Path) -> Option<PathBuf> {
    IGNORE_FILES.iter().map(|name| dir.join(name)).find(|path| {
        std::fs::metadata(path).is_ok_and(|m| !m.is_file() || m.len() > MAX_IGNORE_BYTES)
    })
}

/// What a walk left out on its way, shared with the walker's filter.
#[derive(Default)]
pub(super) struct WalkLog {
    /// Directories whose ignore file could not be read: not walked.
    pub(super) unwalkable: Vec<PathBuf>,
    /// Hidden entries (a name starting with `.`): not walked.
    pub(super) hidden: Vec<PathBuf>,
    /// Entries a constraint forbids: outside what may be searched at all.
    pub(super) forbidden: std::collections::HashSet<PathBuf>,
}

/// A walker from `start` that honours ignore files yet never reads one that is not a regular
/// file of bounded size: one in `start` or above it is an error; one in a directory below
/// leaves that directory out, recorded in the log (at depth 1, nothing below is descended
/// into: a walk of depth 1 reads no ignore file below `start`). Hidden entries are left out
/// and recorded; entries the workspace's policy forbids are never yielded: a file it does not
/// let be read, a directory below which nothing may be.
pub(super) fn walker(
    ws: &Workspace,
    start: &Path,
    max_depth: Option<usize>,
    log: Arc<Mutex<WalkLog>>,
) -> Result<ignore::Walk, ToolError> {
    if let Some(bad) = start.ancestors().find_map(unreadable_ignore_file) {
        return Err(ToolError::invalid(format!(
            "{}: an ignore file that is not a regular file, or over {MAX_IGNORE_BYTES} bytes, is not read; the tree cannot be walked under it",
            bad.display()
        )));
    }
    let mut builder = ignore::WalkBuilder::new(start);
    builder
        .require_git(false)
        .git_exclude(false)
        // The user's global excludes file lies outside the tree and is read unguarded: not
        // read at all, so no file outside the root shapes (or hangs) a walk.
        .git_global(false)
        .hidden(false)
        .follow_links(false)
        .max_depth(max_depth)
        .sort_by_file_name(|a, b| a.cmp(b));
    let constrained = !ws.policy().is_empty();
    let descends = max_depth != Some(1);
    let ws = ws.clone();
    builder.filter_entry(move |entry| {
        if entry.depth() == 0 {
            return true;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let record = |f: &mut dyn FnMut(&mut WalkLog)| {
            if let Ok(mut log) = log.lock() {
                f(&mut log);
            }
        };
        if constrained && !ws.walk_keeps(entry.path(), is_dir) {
            record(&mut |l| {
                l.forbidden.insert(entry.path().to_path_buf());
            });
            return false;
        }
        if entry.file_name().to_string_lossy().starts_with('.') {
            record(&mut |l| l.hidden.push(entry.path().to_path_buf()));
            return false;
        }
        let unwalkable = descends && is_dir && unreadable_ignore_file(entry.path()).is_some();
        if unwalkable {
            record(&mut |l| l.unwalkable.push(entry.path().to_path_buf()));
        }
        !unwalkable
    });
    Ok(builder.build())
}

/// What a walk found: every non-ignored regular file, sorted, as (absolute, relative); the
/// directories it had to leave out (an ignore file there could not be read), relative; the
/// places it searched, where they really lie (a link's target, not the link); and what it did
/// not search — hidden and ignored entries, links, names no citation could write — as their
/// top-most relative paths, sorted.
pub(crate) struct Walked {
    pub(crate) files: Vec<(PathBuf, String)>,
    pub(crate) dirs_left_out: Vec<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) not_searched: Vec<String>,
}

/// Every non-ignored regular file under the given scopes. Respects .gitignore (inside or
/// outside a git repository) and never follows a symbolic link inside a scope; a scope that is
/// a link is judged, and searched, where it leads. Hidden entries, ignored ones, links and
/// names that are not UTF-8 (no citation could name them) are left out and named in
/// [`Walked::not_searched`].
pub(crate) fn walk_files(workspace: &Workspace, scopes: &[String]) -> Result<Walked, ToolError> {
    let log = Arc::new(Mutex::new(WalkLog::default()));
    let mut files = Vec::new();
    let mut real_scopes = Vec::new();
    let mut not_searched = Vec::new();
    for scope in scopes {
        let start = workspace.resolve_argument(scope)?;
        let real = workspace.relative(&start);
        if start.is_file() {
            workspace.may_open(&start)?;
            files.push((start.clone(), real.clone()));
            real_scopes.push(real);
            continue;
        }
        // The gate judged the place as written; one reached through a link is judged again
        // where it really lies, and reported as that place.
        if crate::policy::normal_path(scope).as_deref() != Some(real.as_str()) {
            workspace.may_search(&start)?;
        }
        real_scopes.push(real);
        let mut yielded: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
        let mut dirs = Vec::new();
        for entry in walker(workspace, &start, None, Arc::clone(&log))? {
            // A directory that could not be read (no permission, a path too long) was not
            // searched, and is named so: it is never part of "the whole tree".
            let entry = match entry {
                Ok(entry) => entry,
                // An ignore file's bad line is the walker's to skip, not a place unsearched.
                Err(e) if !e.is_io() => continue,
                Err(e) => {
                    not_searched.push(error_path(&e).unwrap_or_else(|| start.clone()));
                    continue;
                }
            };
            let kind = entry.file_type();
            let path = entry.into_path();
            yielded.insert(path.clone());
            match kind {
                Some(t) if t.is_dir() => dirs.push(path),
                // A name that is not UTF-8 cannot be written in a citation: it is left out.
                Some(t) if t.is_file() && workspace.citable(&path) => {
                    let rel = workspace.relative(&path);
                    files.push((path, rel));
                }
                _ => not_searched.push(path),
            }
        }
        // What the walker passed over unseen: ignored by an ignore file.
        let seen = log.lock().map(|l| {
            l.hidden
                .iter()
                .chain(&l.unwalkable)
                .chain(&l.forbidden)
                .cloned()
                .collect::<std::collections::HashSet<_>>()
        });
        let seen = seen.unwrap_or_default();
        for dir in &dirs {
            for child in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = child.path();
                if !yielded.contains(&path) && !seen.contains(&path) {
                    not_searched.push(path);
                }
            }
        }
    }
    let (dirs_left_out, hidden) = log
        .lock()
        .map(|l| (l.unwalkable.clone(), l.hidden.clone()))
        .unwrap_or_default();
    not_searched.extend(hidden);
    let mut not_searched: Vec<String> =
        not_searched.iter().map(|p| workspace.relative(p)).collect();
    not_searched.sort();
    not_searched.dedup();
    files.sort_by(|a, b| a.1.cmp(&b.1));
    files.dedup_by(|a, b| a.1 == b.1);
    Ok(Walked {
        files,
        dirs_left_out: dirs_left_out
            .iter()
            .map(|p| workspace.relative(p))
            .collect(),
        scopes: real_scopes,
        not_searched,
    })
}

/// The path an I/O error of the walk is about, if it names one.
fn error_path(e: &ignore::Error) -> Option<PathBuf> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        _ => None,
    }
}
