//! Where cited files are read from: a file's text indexed by line, the [`Files`] seam, files
//! held in memory, and a workspace's files read through its sandbox (none for a job with no
//! workspace) and cached within a bound.

use std::collections::HashMap;
use std::sync::Arc;

use crate::fsio::read_text_file;
use crate::tools::{SandboxError, Workspace};

/// A file's text with its line starts, for cheap line ranges.
/// ```
/// let text = baton::FileText::new("one\ntwo\nthree\n".into());
/// assert_eq!(text.line_count(), 3);
/// assert_eq!(text.lines(2, 3), "two\nthree\n");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileText {
    text: String,
    starts: Vec<usize>,
}

impl FileText {
    /// Indexes `text` by line.
    pub fn new(text: String) -> FileText {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1)
                .filter(|i| *i < text.len()),
        );
        if text.is_empty() {
            starts.clear();
        }
        FileText { text, starts }
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// How many lines the file has.
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// Lines `first..=last` (1-based), as one string; empty when out of range.
    pub fn lines(&self, first: u32, last: u32) -> &str {
        let (first, last) = (first as usize, last as usize);
        if first == 0 || last < first || last > self.starts.len() {
            return "";
        }
        let start = self.starts[first - 1];
        let end = self.starts.get(last).copied().unwrap_or(self.text.len());
        &self.text[start..end]
    }
}

/// Why a cited file cannot be used.
/// ```
/// use baton::Files;
/// let files = baton::testing::MemoryFiles::new();
/// assert_eq!(files.text("src/none.rs").unwrap_err(), baton::FileProblem::NotFound);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileProblem {
    /// No such file.
    NotFound,
    /// Absolute, or leaving the root (also by a symlink).
    OutsideRoot(String),
    /// Binary, too large, or unreadable.
    Unreadable(String),
    /// The job has no workspace: there are no files to cite.
    NoWorkspace,
}

/// Where cited files are read from.
/// ```
/// use baton::Files;
/// let mut files = baton::testing::MemoryFiles::new();
/// files.insert("src/a.rs", "fn a() {}\n");
/// assert_eq!(files.text("src/a.rs").unwrap().text(), "fn a() {}\n");
/// ```
pub trait Files: Send + Sync {
    /// The text of a root-relative file.
    fn text(&self, path: &str) -> Result<Arc<FileText>, FileProblem>;
}

/// Files held in memory (tests, benchmarks, embedding applications).
#[derive(Debug, Clone, Default)]
pub struct MemoryFiles {
    files: HashMap<String, Arc<FileText>>,
}

impl MemoryFiles {
    /// No files.
    pub fn new() -> MemoryFiles {
        MemoryFiles::default()
    }

    /// Adds a file.
    pub fn insert(&mut self, path: &str, text: &str) {
        self.files
            .insert(path.to_string(), Arc::new(FileText::new(text.to_string())));
    }
}

impl Files for MemoryFiles {
    fn text(&self, path: &str) -> Result<Arc<FileText>, FileProblem> {
        if path.starts_with('/') || path.split('/').any(|p| p == "..") {
            return Err(FileProblem::OutsideRoot(path.to_string()));
        }
        self.files.get(path).cloned().ok_or(FileProblem::NotFound)
    }
}

/// Most bytes of file text a [`WorkspaceFiles`] keeps cached.
pub const FILE_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// The files of a workspace, read through its sandbox and cached for the life of the value —
/// at most [`FILE_CACHE_BYTES`] of text: past that the cache starts over (a file is then read
/// again), so a run citing a thousand files holds no more.
/// ```
/// use baton::Files;
/// let dir = baton::testing::fixture_tree();
/// let files = baton::WorkspaceFiles::new(baton::Workspace::open(dir.path()).unwrap());
/// assert!(files.text("src/net/retry.rs").is_ok());
/// assert!(matches!(files.text("../etc/passwd"), Err(baton::FileProblem::OutsideRoot(_))));
/// ```
#[derive(Debug)]
pub struct WorkspaceFiles {
    workspace: Option<Workspace>,
    cache: dashmap::DashMap<String, Result<Arc<FileText>, FileProblem>>,
    cached_bytes: std::sync::atomic::AtomicUsize,
}

impl WorkspaceFiles {
    /// Reads from `workspace`.
    pub fn new(workspace: Workspace) -> WorkspaceFiles {
        WorkspaceFiles::of(Some(workspace))
    }

    /// Reads from `workspace`, if the job has one (none: every file citation is refused, as
    /// there are no files).
    pub fn of(workspace: Option<Workspace>) -> WorkspaceFiles {
        WorkspaceFiles {
            workspace,
            cache: dashmap::DashMap::new(),
            cached_bytes: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Bytes of file text cached now.
    pub fn cached_bytes(&self) -> usize {
        self.cached_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn load(&self, path: &str) -> Result<Arc<FileText>, FileProblem> {
        let Some(workspace) = &self.workspace else {
            return Err(FileProblem::NoWorkspace);
        };
        // A file a constraint forbids is not looked at — not even whether it exists — as
        // written, and again where it really lies.
        let policy = workspace.policy();
        if let Some(Err(denial)) = crate::policy::normal_path(path)
            .filter(|_| !policy.is_empty())
            .map(|p| policy.may_open("", &p))
        {
            return Err(FileProblem::Unreadable(denial.message()));
        }
        let real = workspace.resolve(path).map_err(|e| match e {
            SandboxError::NotFound(_) => FileProblem::NotFound,
            SandboxError::Absolute(_)
            | SandboxError::Escapes(_)
            | SandboxError::SymlinkOutside(_) => FileProblem::OutsideRoot(e.to_string()),
            other => FileProblem::Unreadable(other.to_string()),
        })?;
        workspace
            .may_open(&real)
            .map_err(|e| FileProblem::Unreadable(e.to_string()))?;
        let text =
            read_text_file(&real, path).map_err(|e| FileProblem::Unreadable(e.to_string()))?;
        Ok(Arc::new(FileText::new(text)))
    }
}

impl Files for WorkspaceFiles {
    fn text(&self, path: &str) -> Result<Arc<FileText>, FileProblem> {
        use std::sync::atomic::Ordering;
        if let Some(hit) = self.cache.get(path) {
            return hit.value().clone();
        }
        let loaded = self.load(path);
        let bytes = loaded.as_ref().map_or(0, |t| t.text.len()) + path.len();
        if self.cached_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes > FILE_CACHE_BYTES {
            self.cache.clear();
            self.cached_bytes.store(bytes, Ordering::Relaxed);
        }
        self.cache.insert(path.to_string(), loaded.clone());
        loaded
    }
}
