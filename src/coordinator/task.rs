//! A task: what a run is to find out, its job kind and its source — a tree to explore, or a
//! job over the application's own tools with no workspace at all — and the roles it fans out.

use std::path::{Path, PathBuf};

use crate::checkpoint::{Subtask, TaskSpec};
use crate::contracts::RoleId;

/// A job's kind and its source.
/// ```
/// let dir = baton::testing::fixture_tree();
/// let task = baton::Task::explore("where is next_delay?", dir.path());
/// assert!(matches!(task.kind(), baton::Job::Explore { root } if root == dir.path()));
/// assert_eq!(baton::Task::job("triage").kind(), &baton::Job::Custom);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// Explore the tree at this root: the tree is sharded among explorer subagents (and each
    /// other role the task lists gets one subtask over the whole of it).
    Explore {
        /// The directory explored.
        root: PathBuf,
    },
    /// A job over the application's own tools, with no workspace: each subtask is one
    /// subagent of its role.
    Custom,
    /// Research a folder of documents: researchers search and read its corpus index.
    Research {
        /// The folder.
        corpus: PathBuf,
    },
}

/// A job for a run: its question, its kind and source, and the roles it fans out.
///
/// ```
/// use baton::{Job, Task};
/// let explore = Task::explore("where is the retry delay computed?", ".");
/// assert!(matches!(explore.kind(), Job::Explore { .. }));
/// let custom = Task::job("which open tickets block the release?")
///     .subtask("triager", "read tickets T-1 to T-3 and say which block the release");
/// assert_eq!(custom.subtasks().len(), 1);
/// assert!(custom.root().is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    question: String,
    job: Job,
    roles: Vec<RoleId>,
    subtasks: Vec<Subtask>,
}

impl Task {
    /// Explores the tree at `root` to answer `question`: the tree is sharded among `explorer`
    /// subagents.
    /// ```
    /// let task = baton::Task::explore("where is the config loaded?", "/srv/app");
    /// assert_eq!(task.root(), Some(std::path::Path::new("/srv/app")));
    /// assert_eq!(task.fan_out(), ["explorer"]);
    /// ```
    pub fn explore(question: impl Into<String>, root: impl AsRef<Path>) -> Task {
        Task {
            question: question.into(),
            job: Job::Explore {
                root: root.as_ref().to_path_buf(),
            },
            roles: Vec::new(),
            subtasks: Vec::new(),
        }
    }

    /// Research a question over a folder of documents (HTML, Markdown, plain text): the lead
    /// splits it into sub-questions, one researcher each, with the corpus tools `search` and
    /// `read`.
    /// ```
    /// let task = baton::Task::research("what do docs say?", "/srv/docs");
    /// assert_eq!(task.corpus(), Some(std::path::Path::new("/srv/docs")));
    /// assert_eq!(task.root(), None, "no workspace");
    /// ```
    pub fn research(question: impl Into<String>, corpus: impl AsRef<Path>) -> Task {
        Task {
            question: question.into(),
            job: Job::Research {
                corpus: corpus.as_ref().to_path_buf(),
            },
            roles: Vec::new(),
            subtasks: Vec::new(),
        }
    }

    /// The corpus folder of a research task.
    pub fn corpus(&self) -> Option<&Path> {
        match &self.job {
            Job::Research { corpus } => Some(corpus),
            _ => None,
        }
    }

    /// A job over the application's own tools, with no workspace: give it subtasks
    /// ([`Task::subtask`]) or roles ([`Task::roles`], one subtask each).
    /// ```
    /// let task = baton::Task::job("which tickets block the release?").roles(["triager"]);
    /// assert!(task.root().is_none());
    /// assert_eq!(task.fan_out(), ["triager"]);
    /// ```
    pub fn job(question: impl Into<String>) -> Task {
        Task {
            question: question.into(),
            job: Job::Custom,
            roles: Vec::new(),
            subtasks: Vec::new(),
        }
    }

    /// The roles to fan out. Exploring, `explorer` shards the tree and every other role gets
    /// one subtask over the whole of it (a task that lists roles without `explorer` shards
    /// nothing); in a custom job each role gets one subtask asking the task's question.
    /// ```
    /// let task = baton::Task::explore("where are keys read?", ".")
    ///     .roles(["explorer", "security_reviewer", "explorer"]);
    /// assert_eq!(task.fan_out(), ["explorer", "security_reviewer"]);
    /// ```
    pub fn roles<R: Into<RoleId>>(mut self, roles: impl IntoIterator<Item = R>) -> Task {
        for role in roles {
            let role = role.into();
            if !self.roles.contains(&role) {
                self.roles.push(role);
            }
        }
        self
    }

    /// One more subtask: a subagent of `role` answering `question` (besides the task's).
    /// ```
    /// let task = baton::Task::job("release?").subtask("triager", "Read T-1 and T-2.");
    /// assert_eq!(task.subtasks()[0].question, "Read T-1 and T-2.");
    /// assert!(task.fan_out().is_empty(), "subtasks given, nothing else fanned out");
    /// ```
    pub fn subtask(mut self, role: impl Into<RoleId>, question: impl Into<String>) -> Task {
        self.subtasks.push(Subtask {
            role: role.into(),
            question: question.into(),
            scope: Vec::new(),
        });
        self
    }

    /// One more subtask over part of the tree (exploring): `scope` lists root-relative paths,
    /// kept in normal form (`./src/` is `src`, `src/../tests` is `tests`; the root is `.`).
    /// ```
    /// let task = baton::Task::explore("q", ".")
    ///     .subtask_in("reviewer", "what do the tests check?", ["./src/../tests/", "."]);
    /// assert_eq!(task.subtasks()[0].scope, ["tests", "."]);
    /// ```
    pub fn subtask_in<S: Into<String>>(
        mut self,
        role: impl Into<RoleId>,
        question: impl Into<String>,
        scope: impl IntoIterator<Item = S>,
    ) -> Task {
        self.subtasks.push(Subtask {
            role: role.into(),
            question: question.into(),
            // A path leaving the root is kept as given: the run refuses it by that name.
            scope: scope
                .into_iter()
                .map(|p| {
                    let p: String = p.into();
                    crate::text::lexical_path(&p).unwrap_or(p)
                })
                .collect(),
        });
        self
    }

    /// What the run is to find out.
    /// ```
    /// assert_eq!(baton::Task::job("why?").question(), "why?");
    /// ```
    pub fn question(&self) -> &str {
        &self.question
    }

    /// Its kind and source.
    /// ```
    /// assert_eq!(baton::Task::job("why?").kind(), &baton::Job::Custom);
    /// ```
    pub fn kind(&self) -> &Job {
        &self.job
    }

    /// The tree it explores, if it does.
    /// ```
    /// assert!(baton::Task::explore("q", "src").root().is_some());
    /// ```
    pub fn root(&self) -> Option<&Path> {
        match &self.job {
            Job::Explore { root } => Some(root),
            Job::Custom | Job::Research { .. } => None,
        }
    }

    /// The roles it fans out (none given: an explore task's `explorer`).
    /// ```
    /// assert_eq!(baton::Task::explore("q", ".").fan_out(), ["explorer"]);
    /// assert!(baton::Task::job("q").fan_out().is_empty());
    /// ```
    pub fn fan_out(&self) -> Vec<RoleId> {
        if self.roles.is_empty() && self.subtasks.is_empty() && self.root().is_some() {
            vec![RoleId::EXPLORER]
        } else if self.roles.is_empty() && self.subtasks.is_empty() && self.corpus().is_some() {
            vec![RoleId::RESEARCHER]
        } else {
            self.roles.clone()
        }
    }

    /// Its subtasks given one by one.
    /// ```
    /// assert!(baton::Task::explore("q", ".").subtasks().is_empty());
    /// ```
    pub fn subtasks(&self) -> &[Subtask] {
        &self.subtasks
    }

    /// Every role the task names (fanned out or in a subtask), once each.
    pub(crate) fn named_roles(&self) -> Vec<RoleId> {
        let mut out = self.fan_out();
        for s in &self.subtasks {
            if !out.contains(&s.role) {
                out.push(s.role.clone());
            }
        }
        out
    }

    /// The task as the log keeps it (so a run killed before it planned plans the same way on
    /// resume).
    pub(crate) fn spec(&self) -> TaskSpec {
        TaskSpec {
            custom: !matches!(self.job, Job::Explore { .. }),
            corpus: self.corpus().map(|c| c.display().to_string()),
            roles: self.roles.clone(),
            subtasks: self.subtasks.clone(),
        }
    }

    /// The task a log's `run_started` describes.
    pub(crate) fn from_spec(question: &str, root: &str, spec: &TaskSpec) -> Task {
        let task = if let Some(corpus) = &spec.corpus {
            Task::research(question, corpus)
        } else if spec.custom {
            Task::job(question)
        } else {
            Task::explore(question, root)
        };
        Task {
            roles: spec.roles.clone(),
            subtasks: spec.subtasks.clone(),
            ..task
        }
    }
}
