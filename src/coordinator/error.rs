//! [`RunError`]: why a run could not start or finish, bad input told apart from a failed run.

use crate::checkpoint::StoreError;
use crate::lead::LeadError;
use crate::model::ConnectError;

/// Why a run could not start or finish. Bad input is told apart from a failed run.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let err = baton::Coordinator::builder().build()
///     .run(baton::Task::explore("  ", dir.path())).await.unwrap_err();
/// assert!(matches!(err, baton::RunError::EmptyQuestion));
/// assert_eq!(err.to_string(), "the question is empty");
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The question is empty or only whitespace.
    #[error("the question is empty")]
    EmptyQuestion,
    /// The root does not exist or is not a directory.
    #[error("{path}: {reason}")]
    BadRoot {
        /// The root as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A setting is out of range, or the task names what the run does not have.
    #[error("{0}")]
    BadSetting(String),
    /// A role profile cannot be used.
    #[error(transparent)]
    Roles(#[from] crate::context::RoleError),
    /// A typed constraint cannot be used.
    #[error("constraint {text}: {reason}")]
    Constraint {
        /// The constraint, on one line.
        text: String,
        /// Why.
        #[source]
        reason: crate::policy::RuleError,
    },
    /// A role's model could not be connected.
    #[error("role `{role}`: {source}")]
    RoleModel {
        /// The role.
        role: String,
        /// Why.
        #[source]
        source: ConnectError,
    },
    /// The actors could not run.
    #[error("the run failed: {0}")]
    Runtime(String),
    /// The run's log could not be read or written.
    #[error("{0}")]
    Store(#[source] StoreError),
    /// A research corpus could not be indexed or read.
    #[error("{0}")]
    Corpus(#[source] crate::corpus::CorpusError),
    /// An operation on a stored run was refused (a source no conclusion cites, an empty
    /// reason, a source that does not parse): why, on one line.
    #[error("{0}")]
    Refused(String),
    /// Resuming needs a store to resume from.
    #[error("resuming needs the run's state (a store)")]
    NoStore,
}

impl From<LeadError> for RunError {
    fn from(e: LeadError) -> RunError {
        match e {
            LeadError::Store(e) => RunError::Store(e),
            other => RunError::Runtime(other.to_string()),
        }
    }
}

impl RunError {
    /// True when the error is the caller's input, not the run (exit code 2 in the CLI).
    /// ```
    /// let coordinator = baton::Coordinator::builder().build();
    /// let empty = coordinator.check(&baton::Task::explore("  ", ".")).unwrap_err();
    /// assert!(empty.is_bad_input());
    /// ```
    pub fn is_bad_input(&self) -> bool {
        match self {
            RunError::Runtime(_) => false,
            RunError::Store(e) => matches!(
                e,
                StoreError::UnknownRun(_) | StoreError::Open { .. } | StoreError::Missing { .. }
            ),
            _ => true,
        }
    }
}
