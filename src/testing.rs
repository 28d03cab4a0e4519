//! Test doubles for users' own tests (and baton's): a model that plays a script, a store that
//! keeps the log in memory, files held in memory for checking a handoff. None of them touches
//! the network or the disk.

pub use crate::checkpoint::MemoryStore;
pub use crate::handoff::MemoryFiles;
pub use crate::model::{ScriptedModel, ScriptedTurn};
