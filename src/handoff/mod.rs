//! The handoff contract: the three-section report a subagent hands back (Settled conclusions
//! with sources; Open items; Hard constraints), its markdown and JSON forms, and validation in
//! layers — structure, resolution, observation, quotation — with stable violation codes
//! (contracts/handoff.md).
//!
//! **Invariant:** a conclusion is settled only with no violation at all; a parsed
//! [`Handoff`] with violations is never treated as settled fact. Once the repairs are spent, a
//! handoff whose every violation is of some conclusion keeps the rest (`prune`); any other
//! violation rejects it whole.

mod codes;
mod files;
mod json;
mod markdown;
mod validate;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::source::SourceId;
use crate::text::{one_line, strip_fence};
pub use codes::{Layer, ViolationCode};
pub(crate) use markdown::reads_as_negative;
pub(crate) use validate::{quotes, unsupported};
pub use validate::{
    validate, Check, FileProblem, FileText, Files, MemoryFiles, WorkspaceFiles, FILE_CACHE_BYTES,
};

/// Largest handoff text accepted (bytes); a larger one is one `too_large` violation, unparsed.
pub const MAX_HANDOFF_BYTES: usize = 1024 * 1024;

/// A subagent's (or the lead's) report: settled conclusions, open items, hard constraints.
/// ```
/// let text = "## Settled conclusions\n- The delay doubles `doubled` [src/retry.rs:14]\n## Open items\n- is the cap configurable? (stuck on: no config file found)\n## Hard constraints\n- none\n";
/// let handoff = baton::parse_handoff(text).handoff;
/// assert_eq!(handoff.settled_conclusions[0].sources[0].to_string(), "src/retry.rs:14");
/// assert_eq!(handoff.open_items.len(), 1);
/// assert!(handoff.hard_constraints.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    /// Facts verified and safe to rely on, each with its sources.
    pub settled_conclusions: Vec<Conclusion>,
    /// What is unfinished, each saying where it is stuck.
    pub open_items: Vec<OpenItem>,
    /// Limits the lead must respect from now on; empty means `none`.
    pub hard_constraints: Vec<HardConstraint>,
}

/// What kind of fact a conclusion states.
/// ```
/// assert_eq!(baton::ConclusionKind::default(), baton::ConclusionKind::Finding);
/// let kind: baton::ConclusionKind = baton::serde_json::from_str("\"negative_evidence\"").unwrap();
/// assert_eq!(kind, baton::ConclusionKind::NegativeEvidence);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConclusionKind {
    /// Something found, cited where it stands.
    #[default]
    Finding,
    /// What was searched, where, and that it found nothing — cited by the search call.
    /// Not the same as "does not exist".
    NegativeEvidence,
}

impl ConclusionKind {
    fn is_finding(&self) -> bool {
        *self == ConclusionKind::Finding
    }
}

/// One settled conclusion.
/// ```
/// let handoff = baton::parse_handoff("## Settled conclusions\n- main starts it `fn main()` [src/main.rs:3]\n## Open items\n## Hard constraints\n- none\n").handoff;
/// let conclusion = &handoff.settled_conclusions[0];
/// assert!(conclusion.claim.starts_with("main starts it"));
/// assert_eq!(conclusion.kind, baton::ConclusionKind::Finding);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conclusion {
    /// The fact, stated (not pointed at).
    pub claim: String,
    /// Where it can be re-checked; at least one.
    pub sources: Vec<SourceId>,
    /// Finding (default) or negative evidence.
    #[serde(default, skip_serializing_if = "ConclusionKind::is_finding")]
    pub kind: ConclusionKind,
}

/// A finding citing one source, written in the source grammar (the lead's tests).
#[cfg(test)]
pub(crate) fn finding(claim: &str, source: &str) -> Conclusion {
    Conclusion {
        claim: claim.into(),
        sources: vec![SourceId::parse(source).expect("a source the tests write")],
        kind: ConclusionKind::Finding,
    }
}

impl Conclusion {
    /// The conclusion as one markdown bullet (its text on one line, sources in brackets).
    pub fn to_markdown(&self) -> String {
        let prefix = match self.kind {
            ConclusionKind::Finding => "",
            ConclusionKind::NegativeEvidence => "Negative evidence: ",
        };
        let sources: Vec<String> = self.sources.iter().map(|s| s.to_string()).collect();
        format!(
            "- {prefix}{} [{}]\n",
            claim_line(&self.claim),
            sources.join(", ")
        )
    }
}

/// One open item.
/// ```
/// let handoff = baton::parse_handoff("## Settled conclusions\n## Open items\n- is the cap configurable? (stuck on: no config file found)\n## Hard constraints\n- none\n").handoff;
/// assert_eq!(handoff.open_items[0].stuck_on, "no config file found");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenItem {
    /// What is unfinished.
    pub item: String,
    /// Where it is stuck.
    pub stuck_on: String,
}

/// One hard constraint.
/// ```
/// let handoff = baton::parse_handoff("## Settled conclusions\n## Open items\n## Hard constraints\n- none\n").handoff;
/// assert!(handoff.hard_constraints.is_empty(), "`none`: there are none");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardConstraint {
    /// The constraint, verbatim.
    pub constraint: String,
    /// Where it came from, if cited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceId>,
}

/// One way a handoff breaks the contract: a stable code, the 1-based line of the handoff text
/// (0 when not tied to a line) and a message a model can act on.
/// ```
/// let parsed = baton::parse_handoff("## Open items\n## Hard constraints\n- none\n");
/// let v = &parsed.violations[0];
/// assert_eq!(v.code.as_str(), "section_missing");
/// assert_eq!(v.code.layer(), baton::Layer::Structure);
/// assert!(!v.message.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// Stable code, e.g. `source_missing`.
    pub code: ViolationCode,
    /// Line in the handoff text, 1-based; 0 for the whole handoff or a JSON item.
    pub line: usize,
    /// What to fix, in one line.
    pub message: String,
    /// The settled conclusion it concerns (0-based), when it concerns one alone: a handoff
    /// whose every violation is of some conclusion loses those conclusions, not the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<usize>,
}

impl Violation {
    pub(crate) fn new(code: ViolationCode, line: usize, message: impl Into<String>) -> Violation {
        Violation {
            code,
            line,
            message: message.into(),
            conclusion: None,
        }
    }
}

/// A settled conclusion taken out of a handoff that was otherwise kept: the repairs ran out
/// and only it broke the contract. It is never settled; the report lists it as an open item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    /// The conclusion as handed off.
    pub conclusion: Conclusion,
    /// What it broke.
    pub violations: Vec<Violation>,
}

/// A checked handoff with each conclusion that broke the contract taken out, when every
/// violation is of one conclusion (none of the sections, the form, or a hard constraint):
/// what is left, and what was taken out. None when a violation concerns more than a
/// conclusion — then the handoff stands or falls whole.
pub(crate) fn prune(parsed: &Parsed) -> Option<(Handoff, Vec<Dropped>)> {
    if parsed.violations.iter().any(|v| v.conclusion.is_none()) {
        return None;
    }
    let mut kept = parsed.handoff.clone();
    let mut dropped = Vec::new();
    let mut conclusions = Vec::with_capacity(kept.settled_conclusions.len());
    for (i, c) in kept.settled_conclusions.drain(..).enumerate() {
        let broke: Vec<Violation> = parsed
            .violations
            .iter()
            .filter(|v| v.conclusion == Some(i))
            .cloned()
            .collect();
        if broke.is_empty() {
            conclusions.push(c);
        } else {
            dropped.push(Dropped {
                conclusion: c,
                violations: broke,
            });
        }
    }
    kept.settled_conclusions = conclusions;
    Some((kept, dropped))
}

/// Ties the violations pushed since `from` to settled conclusion `index`.
pub(crate) fn of_conclusion(out: &mut [Violation], from: usize, index: usize) {
    for v in out.iter_mut().skip(from) {
        v.conclusion = Some(index);
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: [{}] {}", self.line, self.code, self.message)
        } else {
            write!(f, "[{}] {}", self.code, self.message)
        }
    }
}

/// Which form a handoff text was written in.
/// ```
/// let parsed = baton::parse_handoff("## Settled conclusions\n## Open items\n## Hard constraints\n- none\n");
/// assert_eq!(parsed.form, baton::Form::Markdown);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// `## Settled conclusions` / `## Open items` / `## Hard constraints`.
    Markdown,
    /// `{"settled_conclusions": [...], "open_items": [...], "hard_constraints": [...]}`.
    Json,
}

/// The line each item starts on (0 when unknown, as in the JSON form).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ItemLines {
    pub(crate) settled: Vec<usize>,
    pub(crate) open: Vec<usize>,
    pub(crate) constraints: Vec<usize>,
}

/// A handoff text read as far as it goes: what it says, and its structural violations.
/// ```
/// let parsed = baton::parse_handoff("## Settled conclusions\n- a claim with no source\n## Open items\n## Hard constraints\n- none\n");
/// let codes: Vec<_> = parsed.violations.iter().map(|v| v.code.as_str()).collect();
/// assert_eq!(codes, ["source_missing"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// What the text says (best effort when there are violations).
    pub handoff: Handoff,
    /// The form it was written in.
    pub form: Form,
    /// Structure-layer violations.
    pub violations: Vec<Violation>,
    pub(crate) lines: ItemLines,
}

impl Parsed {
    pub(crate) fn settled_line(&self, index: usize) -> usize {
        self.lines.settled.get(index).copied().unwrap_or(0)
    }

    /// Whether the text looked like neither form: no section heading and not JSON.
    pub fn is_neither_form(&self) -> bool {
        self.form == Form::Markdown
            && self
                .violations
                .iter()
                .filter(|v| {
                    matches!(
                        v.code,
                        ViolationCode::SectionMissing | ViolationCode::ConstraintsOmitted
                    )
                })
                .count()
                == 3
    }
}

/// Phrases by which a conclusion points elsewhere instead of stating its fact.
const POINTERS: &[&str] = &[
    "see above",
    "see below",
    "as above",
    "see earlier",
    "as mentioned",
    "as noted",
    "as delivered",
    "as described earlier",
    "as stated earlier",
    "as before",
    "same as before",
    "details in the previous",
    "in the previous message",
    "in my previous",
    "see previous",
    "refer to the",
];

/// Whether a claim only points elsewhere: it holds a pointer phrase and, without it, fewer
/// than five words of its own.
fn only_points(claim: &str) -> bool {
    static PHRASES: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let phrases = PHRASES.get_or_init(|| {
        let alternation = POINTERS
            .iter()
            .map(|p| regex::escape(p))
            .collect::<Vec<_>>()
            .join("|");
        regex::Regex::new(&format!("(?i){alternation}")).expect("static regex")
    });
    let Some(found) = phrases.find(claim) else {
        return false;
    };
    let words = |text: &str| crate::text::words(text).count();
    words(&claim[..found.start()]) + words(&claim[found.end()..]) < 5
}

/// A settled conclusion that names no source at all (a malformed one is `source_malformed`).
pub(crate) fn source_missing(index: usize, line: usize) -> Violation {
    Violation::new(
        ViolationCode::SourceMissing,
        line,
        format!(
            "settled conclusion {} has no source: end it with [path:START-END]",
            index + 1
        ),
    )
}

/// The structural checks both forms share: empty items and pointers.
pub(crate) fn check_items(handoff: &Handoff, lines: &ItemLines, out: &mut Vec<Violation>) {
    let at = |list: &[usize], i: usize| list.get(i).copied().unwrap_or(0);
    for (i, c) in handoff.settled_conclusions.iter().enumerate() {
        let line = at(&lines.settled, i);
        let from = out.len();
        if c.claim.trim().is_empty() {
            out.push(Violation::new(
                ViolationCode::ItemEmpty,
                line,
                format!("settled conclusion {} states no fact", i + 1),
            ));
        } else if only_points(&c.claim) {
            out.push(Violation::new(
                ViolationCode::PointerOnly,
                line,
                format!(
                    "settled conclusion {} points elsewhere instead of stating the fact: state it here",
                    i + 1
                ),
            ));
        }
        of_conclusion(out, from, i);
    }
    for (i, o) in handoff.open_items.iter().enumerate() {
        if o.item.trim().is_empty() {
            out.push(Violation::new(
                ViolationCode::ItemEmpty,
                at(&lines.open, i),
                format!("open item {} is empty", i + 1),
            ));
        }
    }
    for (i, h) in handoff.hard_constraints.iter().enumerate() {
        if h.constraint.trim().is_empty() {
            out.push(Violation::new(
                ViolationCode::ItemEmpty,
                at(&lines.constraints, i),
                format!("hard constraint {} is empty", i + 1),
            ));
        }
    }
}

/// Reads a handoff text in either form: JSON when it starts with `{`, markdown otherwise
/// (a surrounding ``` fence is ignored). Never panics; a text over [`MAX_HANDOFF_BYTES`] is one
/// `too_large` violation.
pub fn parse(text: &str) -> Parsed {
    if text.len() > MAX_HANDOFF_BYTES {
        return Parsed {
            handoff: Handoff::default(),
            form: Form::Markdown,
            violations: vec![Violation::new(
                ViolationCode::TooLarge,
                0,
                format!(
                    "the handoff is {} bytes, over the {MAX_HANDOFF_BYTES}-byte limit: hand off the three sections only",
                    text.len()
                ),
            )],
            lines: ItemLines::default(),
        };
    }
    let trimmed = strip_fence(text);
    if trimmed.starts_with('{') {
        json::parse(trimmed)
    } else {
        markdown::parse(trimmed)
    }
}

impl Handoff {
    /// Whether a finding rests on a corpus passage (cites a `doc:` source): a research
    /// handoff, whose findings a verifier rereads before the report stands on them.
    pub fn rests_on_passages(&self) -> bool {
        self.settled_conclusions.iter().any(|c| {
            c.kind == ConclusionKind::Finding
                && c.sources.iter().any(|s| matches!(s, SourceId::Doc { .. }))
        })
    }

    /// Parses either form, structure only: the handoff, or every structural violation.
    pub fn parse(text: &str) -> Result<Handoff, Vec<Violation>> {
        let parsed = parse(text);
        if parsed.violations.is_empty() {
            Ok(parsed.handoff)
        } else {
            Err(parsed.violations)
        }
    }

    /// Renders the markdown form; parsing it gives back this handoff when its texts are
    /// single-line (as every parsed handoff's are).
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("## Settled conclusions\n");
        for c in &self.settled_conclusions {
            out.push_str(&c.to_markdown());
        }
        out.push_str("## Open items\n");
        for o in &self.open_items {
            if o.stuck_on.is_empty() {
                let _ = writeln!(out, "- {}", one_line(&o.item));
            } else {
                let _ = writeln!(
                    out,
                    "- {} — stuck: {}",
                    one_line(&o.item),
                    one_line(&o.stuck_on)
                );
            }
        }
        out.push_str("## Hard constraints\n");
        if self.hard_constraints.is_empty() {
            out.push_str("- none\n");
        }
        for h in &self.hard_constraints {
            if h.sources.is_empty() {
                let _ = writeln!(out, "- {}", one_line(&h.constraint));
            } else {
                let sources: Vec<String> = h.sources.iter().map(|s| s.to_string()).collect();
                let _ = writeln!(
                    out,
                    "- {} [{}]",
                    one_line(&h.constraint),
                    sources.join(", ")
                );
            }
        }
        out
    }

    /// Renders the JSON form (one line).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }
}

/// The repair turn the lead sends back: every violation with its code and line, and what to
/// send instead.
/// ```
/// let parsed = baton::parse_handoff("## Settled conclusions\n- a claim with no source\n## Open items\n## Hard constraints\n- none\n");
/// let prompt = baton::repair_prompt(&parsed.violations);
/// assert!(prompt.contains("source_missing"), "{prompt}");
/// ```
pub fn repair_prompt(violations: &[Violation]) -> String {
    let mut text = String::from(
        "Your handoff does not meet the contract. Fix every point below and send the whole \
         handoff again — the three sections only, no narration:\n",
    );
    for v in violations {
        let _ = writeln!(text, "- {v}");
    }
    text
}

/// A claim on one line, its quotes as they were: each line break (and the whitespace around
/// it) one space, every other space and tab kept, none at the ends.
pub(crate) fn claim_line(text: &str) -> String {
    let breaks = |c: char| {
        matches!(
            c,
            '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    };
    if !text.contains(breaks) {
        return text.trim().to_string();
    }
    text.split(breaks)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
