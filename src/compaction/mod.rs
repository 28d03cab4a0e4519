//! Compaction of a subagent's window: the trigger on occupancy and light compaction that clears
//! old tool results (`clear`), the pinned ledger of binding items classified as turns arrive
//! and retired as later turns settle them (`ledger`), the irreducible floor of a span and the
//! compact / split / refuse decision made from floors before any summarising (`floor`), cut
//! points that never separate a tool call from its result (`cut`), the pluggable summariser and
//! the deterministic extractive one (`summary`), model narratives held to the skeleton
//! code took from a summary (`narrative`), survival checks against facts taken from the
//! raw window (`survival`), and one compaction end to end (`compact`).
//!
//! **Invariant:** a pinned item is carried verbatim and never paraphrased; a constraint never
//! retires; a cut never falls between an assistant's tool calls and their results; a summary is
//! built from its span's own turns, never from an earlier summary; a failed check — a fact
//! missing, or a result over the window — leaves the window as it was.

mod clear;
mod compact;
mod cut;
mod floor;
mod ledger;
mod narrative;
mod summary;
mod survival;

pub use clear::{
    clear_tool_results, is_pure_read, should_compact, Cleared, DEFAULT_KEEP_TOOL_RESULTS,
    DEFAULT_MIN_CLEARED, DEFAULT_THRESHOLD,
};
pub use compact::{
    compact, ledger_of, Compacted, Compactor, Decision, Folded, Options, RawTurns, FOLDED_TEXT_MAX,
};
pub use cut::{reports_error, safe_cuts, split_cuts, split_point};
pub use floor::{decide, floor, irreducible, FloorDecision, DEFAULT_MARGIN_PERCENT};
pub use ledger::{
    classify, flagged, ledger_prompt, Ledger, ModelPass, ModelPassError, Pin, PinClass,
    LEDGER_PROMPT_REVISION,
};
pub use narrative::{validate, Skeleton, NARRATIVE_PROMPT_REVISION};
pub use summary::{message_text, Extractive, Summariser, LONG_SENTENCE, SUMMARISER};
pub use survival::{survival, Facts, Survival};
