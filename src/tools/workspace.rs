//! The sandbox: one explored root, and the only way any tool turns a path into a file.

use crate::fsio::read_text_file;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::policy::Policy;

/// Why a path was refused or a file could not be used. The message is the text a model sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SandboxError {
    #[error("path `{0}` is absolute: give a path relative to the workspace root")]
    Absolute(String),
    #[error("path `{0}` leaves the workspace root")]
    Escapes(String),
    #[error("path `{0}` does not exist in the workspace")]
    NotFound(String),
    #[error("path `{0}` is a symbolic link to somewhere outside the workspace root")]
    SymlinkOutside(String),
    #[error(transparent)]
    Read(#[from] crate::fsio::ReadError),
    #[error("{}", .0.message())]
    Denied(Box<crate::policy::Denial>),
}

/// The explored tree: an absolute, canonical root. Every path a tool touches is resolved here.
/// A subagent's workspace carries the run's [`Policy`]: the gate judges every call by it, and
/// no file it forbids is opened or walked, wherever the path that led there pointed.
/// ```
/// let dir = baton::testing::fixture_tree();
/// let workspace = baton::Workspace::open(dir.path()).unwrap();
/// assert!(workspace.root().is_absolute());
/// assert!(workspace.read_to_string("../outside").is_err(), "nothing outside the root");
/// ```
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    policy: Arc<Policy>,
}

impl Workspace {
    /// Opens a workspace at `root`, which must be an existing directory.
    pub fn open(root: &Path) -> Result<Workspace, std::io::Error> {
        let canonical = fs::canonicalize(root)?;
        if !canonical.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        Ok(Workspace {
            root: canonical,
            policy: Arc::new(Policy::default()),
        })
    }

    /// The same tree under `policy`.
    pub fn under(&self, policy: Arc<Policy>) -> Workspace {
        Workspace {
            root: self.root.clone(),
            policy,
        }
    }

    /// The policy every call in this workspace is judged by (empty: nothing is constrained).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Whether a walk keeps the entry at `absolute` (a path inside the root).
    pub(crate) fn walk_keeps(&self, absolute: &Path, is_dir: bool) -> bool {
        self.policy.is_empty() || self.policy.walk_keeps(&self.relative(absolute), is_dir)
    }

    /// The sandbox's refusal of a file the policy forbids to read (`absolute`: where it
    /// really lies).
    pub(crate) fn may_open(&self, absolute: &Path) -> Result<(), SandboxError> {
        if self.policy.is_empty() {
            return Ok(());
        }
        self.policy
            .may_open("", &self.relative(absolute))
            .map_err(SandboxError::Denied)
    }

    /// The sandbox's refusal of a search under the directory at `absolute` (where it really
    /// lies: a link's target) that a constraint forbids.
    pub(crate) fn may_search(&self, absolute: &Path) -> Result<(), SandboxError> {
        self.may(crate::policy::Effect::Search, absolute)
    }

    /// The sandbox's refusal of a listing of the directory at `absolute` (where it really
    /// lies) that a constraint forbids.
    pub(crate) fn may_list(&self, absolute: &Path) -> Result<(), SandboxError> {
        self.may(crate::policy::Effect::List, absolute)
    }

    fn may(&self, effect: crate::policy::Effect, absolute: &Path) -> Result<(), SandboxError> {
        if self.policy.is_empty() {
            return Ok(());
        }
        self.policy
            .may("", effect, &self.relative(absolute))
            .map_err(SandboxError::Denied)
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path a model gave as a tool argument: as written first (a name may begin or
    /// end with a space, or be quoted itself); when no such file exists, a path copied from a
    /// tool's output in the quoted form (`"a b.rs"`) is unquoted, and surrounding whitespace
    /// is dropped. A citation is never resolved this leniently (`Workspace::resolve`).
    pub(crate) fn resolve_argument(&self, relative: &str) -> Result<PathBuf, SandboxError> {
        let exact = self.resolve(relative);
        if !matches!(exact, Err(SandboxError::NotFound(_))) {
            return exact;
        }
        match crate::source::unquoted_path(relative) {
            Some(path) => self.resolve(&path),
            None if relative.trim() != relative => self.resolve(relative.trim()),
            None => exact,
        }
    }

    /// Resolves a path exactly as written inside the root, following symlinks, and refuses
    /// anything that is absolute, climbs above the root, or is a link that lands outside it.
    pub(crate) fn resolve(&self, trimmed: &str) -> Result<PathBuf, SandboxError> {
        let candidate = Path::new(trimmed);
        if candidate.is_absolute() || trimmed.starts_with('\\') {
            return Err(SandboxError::Absolute(trimmed.to_string()));
        }
        let mut lexical = PathBuf::new();
        for component in candidate.components() {
            match component {
                Component::Normal(part) => lexical.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !lexical.pop() {
                        return Err(SandboxError::Escapes(trimmed.to_string()));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(SandboxError::Absolute(trimmed.to_string()))
                }
            }
        }
        let joined = self.root.join(&lexical);
        let real = fs::canonicalize(&joined).map_err(|_| {
            if fs::symlink_metadata(&joined).is_ok() {
                SandboxError::SymlinkOutside(trimmed.to_string())
            } else {
                SandboxError::NotFound(trimmed.to_string())
            }
        })?;
        if !real.starts_with(&self.root) {
            return Err(SandboxError::SymlinkOutside(trimmed.to_string()));
        }
        Ok(real)
    }

    /// Whether a path inside the root can be cited: its part below the root is UTF-8.
    pub(crate) fn citable(&self, absolute: &Path) -> bool {
        absolute
            .strip_prefix(&self.root)
            .map(|rel| rel.to_str().is_some())
            .unwrap_or(false)
    }

    /// The root-relative form of an absolute path inside the root, with `/` separators.
    pub(crate) fn relative(&self, absolute: &Path) -> String {
        let rel = absolute.strip_prefix(&self.root).unwrap_or(absolute);
        let text = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if text.is_empty() {
            ".".to_string()
        } else {
            text
        }
    }

    /// Reads a text file for a tool an application registers: resolved inside the root as
    /// the workspace tools resolve a path argument, refused when a constraint forbids where
    /// it really lies (a denial the model sees), binary or over 4 MiB; invalid UTF-8 is
    /// replaced. A tool reading through here gets the sandbox's checks; one reading with
    /// `std::fs` is judged only by the consequences it declares.
    pub fn read_to_string(&self, relative: &str) -> Result<String, crate::tools::ToolError> {
        Ok(self.read_text(relative)?.1)
    }

    /// Reads a text file inside the root: refuses binary files, oversized files and invalid
    /// UTF-8 is replaced lossily.
    pub(crate) fn read_text(&self, relative: &str) -> Result<(PathBuf, String), SandboxError> {
        let path = self.resolve_argument(relative)?;
        self.may_open(&path)?;
        let shown = self.relative(&path);
        let text = read_text_file(&path, &shown)?;
        Ok((path, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_components_that_stay_inside_are_allowed() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("a/b")).unwrap();
        fs::write(dir.path().join("a/x.txt"), "x").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let p = ws.resolve("a/b/../x.txt").unwrap();
        assert_eq!(ws.relative(&p), "a/x.txt");
        assert!(matches!(
            ws.resolve("a/../../x"),
            Err(SandboxError::Escapes(_))
        ));
    }
}
