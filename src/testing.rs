//! Test doubles for users' own tests (and baton's): a model that plays a script, a store that
//! keeps the log in memory, files held in memory for checking a handoff, and a small tree on
//! disk to explore. None of them touches the network.

use std::path::{Path, PathBuf};

pub use crate::checkpoint::MemoryStore;
pub use crate::handoff::MemoryFiles;
pub use crate::model::{ScriptedModel, ScriptedTurn};

/// A directory of files made for a test, removed when it is dropped.
#[derive(Debug)]
pub struct FixtureTree {
    root: PathBuf,
}

impl FixtureTree {
    /// Writes `files` (root-relative path, content) under a new directory in the system's
    /// temporary directory.
    /// ```
    /// let tree = baton::testing::FixtureTree::new(&[("src/lib.rs", "pub fn f() {}\n")]).unwrap();
    /// assert!(tree.path().join("src/lib.rs").is_file());
    /// ```
    pub fn new(files: &[(&str, &str)]) -> std::io::Result<FixtureTree> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let root = std::env::temp_dir().join(format!(
            "baton-fixture-{}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            crate::checkpoint::now_ms()
        ));
        std::fs::create_dir(&root)?;
        let tree = FixtureTree { root };
        for (path, content) in files {
            let full = tree.root.join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(full, content)?;
        }
        Ok(tree)
    }

    /// Its root directory.
    /// ```
    /// let tree = baton::testing::fixture_tree();
    /// assert!(tree.path().join("src/net/retry.rs").is_file());
    /// ```
    pub fn path(&self) -> &Path {
        &self.root
    }
}

impl Drop for FixtureTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A small Rust crate to explore: a retry policy whose `next_delay` computes the delay between
/// attempts, a client that calls it, a cache, a test and a README.
///
/// # Panics
/// When the temporary directory cannot be written.
/// ```
/// let tree = baton::testing::fixture_tree();
/// let root = tree.path().to_path_buf();
/// assert!(root.join("Cargo.toml").is_file());
/// drop(tree);
/// assert!(!root.exists(), "removed when dropped");
/// ```
pub fn fixture_tree() -> FixtureTree {
    FixtureTree::new(&[
        ("Cargo.toml", "[package]\nname = \"netkit\"\nversion = \"0.1.0\"\n"),
        ("README.md", "# netkit\n\nCalls `RetryPolicy::next_delay` between attempts.\n"),
        ("src/lib.rs", "//! netkit.\npub mod net;\npub mod storage;\n"),
        ("src/net/mod.rs", "//! Networking.\npub mod client;\npub mod retry;\n"),
        (
            "src/net/retry.rs",
            "//! Retry policy for network calls.\n\nuse std::time::Duration;\n\n/// How long to wait between attempts.\npub struct RetryPolicy {\n    base_ms: u64,\n    cap_ms: u64,\n}\n\nimpl RetryPolicy {\n    /// The delay before attempt `attempt`: doubles per attempt up to the cap.\n    pub fn next_delay(&self, attempt: u32) -> Duration {\n        let doubled = self.base_ms.saturating_mul(1u64 << attempt.min(31));\n        Duration::from_millis(doubled.min(self.cap_ms))\n    }\n}\n",
        ),
        (
            "src/net/client.rs",
            "//! A client that retries.\nuse super::retry::RetryPolicy;\n\npub struct Client {\n    policy: RetryPolicy,\n}\n\nimpl Client {\n    pub fn wait_before(&self, attempt: u32) -> std::time::Duration {\n        self.policy.next_delay(attempt)\n    }\n}\n",
        ),
        (
            "src/storage/cache.rs",
            "//! An in-memory cache.\nuse std::collections::HashMap;\n\npub struct Cache {\n    entries: HashMap<String, Vec<u8>>,\n}\n",
        ),
        ("src/storage/mod.rs", "//! Storage.\npub mod cache;\n"),
        (
            "tests/retry_test.rs",
            "use netkit::net::retry::RetryPolicy;\n\n#[test]\nfn next_delay_is_capped() {\n    let p = RetryPolicy::new(10, 100);\n    assert_eq!(p.next_delay(9).as_millis(), 100);\n}\n",
        ),
    ])
    .expect("a fixture tree in the temporary directory")
}
