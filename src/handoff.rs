//! The handoff contract: the three-section report a subagent hands back, its markdown and JSON
//! forms, and the structural check every handoff passes before the lead will look at it.
//!
//! **Invariant:** a parsed [`Handoff`] has every settled conclusion carrying at least one
//! well-formed [`SourceId`]; a text that would break that is a list of [`Violation`]s instead.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::source::SourceId;

/// A subagent's (or the lead's) report: settled conclusions, open items, hard constraints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoff {
    /// Facts verified and safe to rely on, each with its sources.
    pub settled_conclusions: Vec<Conclusion>,
    /// What is unfinished, each saying where it is stuck.
    pub open_items: Vec<OpenItem>,
    /// Limits the lead must respect from now on; empty means `none`.
    pub hard_constraints: Vec<HardConstraint>,
}

/// What kind of fact a conclusion states.
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conclusion {
    /// The fact, stated (not pointed at).
    pub claim: String,
    /// Where it can be re-checked; at least one.
    pub sources: Vec<SourceId>,
    /// Finding (default) or negative evidence.
    #[serde(default, skip_serializing_if = "ConclusionKind::is_finding")]
    pub kind: ConclusionKind,
}

/// One open item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenItem {
    /// What is unfinished.
    pub item: String,
    /// Where it is stuck.
    pub stuck_on: String,
}

/// One hard constraint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HardConstraint {
    /// The constraint, verbatim.
    pub constraint: String,
    /// Where it came from, if cited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceId>,
}

/// One way a handoff breaks the contract: a stable code, the 1-based line of the handoff text
/// (0 when not tied to a line) and a message a model can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// Stable code, e.g. `source_missing`.
    pub code: String,
    /// Line in the handoff text, 1-based; 0 for the whole handoff.
    pub line: usize,
    /// What to fix.
    pub message: String,
}

impl Violation {
    fn new(code: &str, line: usize, message: impl Into<String>) -> Violation {
        Violation {
            code: code.to_string(),
            line,
            message: message.into(),
        }
    }
}

const NEGATIVE_PREFIX: &str = "Negative evidence:";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    Settled,
    Open,
    Constraints,
}

impl Section {
    const ORDER: [Section; 3] = [Section::Settled, Section::Open, Section::Constraints];

    fn title(self) -> &'static str {
        match self {
            Section::Settled => "Settled conclusions",
            Section::Open => "Open items",
            Section::Constraints => "Hard constraints",
        }
    }

    /// Recognises a heading line leniently: `## Settled conclusions`, `**Open Items:**`,
    /// `HARD CONSTRAINTS:`.
    fn from_heading(line: &str) -> Option<Section> {
        let t = line.trim();
        let had_marker = t.starts_with('#') || t.starts_with("**") || t.ends_with(':');
        let cleaned: String = t
            .trim_start_matches('#')
            .trim()
            .trim_matches('*')
            .trim()
            .trim_end_matches(':')
            .trim_matches('*')
            .trim()
            .to_ascii_lowercase();
        let section = match cleaned.as_str() {
            "settled conclusions" | "settled conclusion" => Section::Settled,
            "open items" | "open item" => Section::Open,
            "hard constraints" | "hard constraint" => Section::Constraints,
            _ => return None,
        };
        (had_marker || t.eq_ignore_ascii_case(section.title())).then_some(section)
    }
}

/// Strips a list bullet (`-`, `*`, `+`, `1.`, `1)`) and returns the item text.
fn bullet_text(line: &str) -> Option<&str> {
    let t = line.trim_start();
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = t.strip_prefix(bullet) {
            return Some(rest.trim());
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let rest = &t[digits..];
        if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some(r.trim());
        }
    }
    None
}

fn is_none_marker(text: &str) -> bool {
    let t = text
        .trim()
        .trim_matches('*')
        .trim_matches('_')
        .trim_end_matches('.');
    t.eq_ignore_ascii_case("none")
}

/// Splits trailing `[a, b] [c]` groups off a conclusion. Returns the claim and the raw ids.
fn split_sources(text: &str) -> (String, Vec<String>) {
    let mut rest = text.trim_end().trim_end_matches('.').trim_end();
    let mut groups = Vec::new();
    while rest.ends_with(']') {
        let Some(open) = rest.rfind('[') else { break };
        groups.push(rest[open + 1..rest.len() - 1].to_string());
        rest = rest[..open].trim_end();
    }
    groups.reverse();
    let ids = groups
        .iter()
        .flat_map(|g| g.split([',', ';']))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let claim = rest
        .trim_end_matches([' ', '—', '-', ':'])
        .trim()
        .to_string();
    (claim, ids)
}

fn parse_sources(raw: &[String], line: usize, out: &mut Vec<Violation>) -> Vec<SourceId> {
    let mut sources = Vec::new();
    for text in raw {
        match SourceId::parse(text) {
            Ok(source) => sources.push(source),
            Err(e) => out.push(Violation::new("source_malformed", line, e.to_string())),
        }
    }
    sources
}

/// Splits `item — stuck: why` (also `stuck on:`, `- stuck:`) into its two parts.
fn split_open_item(text: &str) -> (String, String) {
    let lower = text.to_ascii_lowercase();
    for marker in ["stuck on:", "stuck:"] {
        if let Some(at) = lower.find(marker) {
            let item = text[..at]
                .trim_end()
                .trim_end_matches(['—', '-', ';', ',', '('])
                .trim_end()
                .to_string();
            let mut stuck = text[at + marker.len()..].trim();
            // `item (stuck: why)`: drop the parenthesis that closes the item's own.
            if stuck.ends_with(')') && stuck.matches(')').count() > stuck.matches('(').count() {
                stuck = stuck[..stuck.len() - 1].trim_end();
            }
            let stuck = stuck.to_string();
            return (item, stuck);
        }
    }
    (text.trim().to_string(), String::new())
}

impl Handoff {
    /// Parses either form: JSON when the text starts with `{`, markdown otherwise. Structural
    /// violations are all returned at once.
    pub fn parse(text: &str) -> Result<Handoff, Vec<Violation>> {
        let trimmed = strip_fence(text);
        if trimmed.starts_with('{') {
            Handoff::parse_json(trimmed)
        } else {
            Handoff::parse_markdown(trimmed)
        }
    }

    /// Parses the JSON form.
    pub fn parse_json(text: &str) -> Result<Handoff, Vec<Violation>> {
        let handoff: Handoff = serde_json::from_str(text).map_err(|e| {
            vec![Violation::new(
                "json_invalid",
                e.line(),
                format!("the JSON form does not match the contract: {e}"),
            )]
        })?;
        let mut violations = Vec::new();
        for (index, c) in handoff.settled_conclusions.iter().enumerate() {
            if c.claim.trim().is_empty() {
                violations.push(Violation::new(
                    "item_empty",
                    0,
                    format!("settled conclusion {} has an empty claim", index + 1),
                ));
            }
            if c.sources.is_empty() {
                violations.push(Violation::new(
                    "source_missing",
                    0,
                    format!("settled conclusion {} has no source", index + 1),
                ));
            }
        }
        if violations.is_empty() {
            Ok(handoff)
        } else {
            Err(violations)
        }
    }

    /// Parses the markdown form: three headed sections in order, bullets beneath.
    pub fn parse_markdown(text: &str) -> Result<Handoff, Vec<Violation>> {
        let mut violations = Vec::new();
        let mut handoff = Handoff::default();
        let mut seen: Vec<Section> = Vec::new();
        let mut current: Option<Section> = None;
        let mut constraints_said_none = false;
        // (section, first line number, text) of every item, continuation lines folded in.
        let mut items: Vec<(Section, usize, String)> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let number = index + 1;
            if let Some(section) = Section::from_heading(raw) {
                if seen.contains(&section) {
                    violations.push(Violation::new(
                        "section_duplicated",
                        number,
                        format!("`{}` appears twice: merge them", section.title()),
                    ));
                } else if seen.last().is_some_and(|last| {
                    Section::ORDER.iter().position(|s| s == last)
                        > Section::ORDER.iter().position(|s| *s == section)
                }) {
                    violations.push(Violation::new(
                        "section_out_of_order",
                        number,
                        "sections go in this order: Settled conclusions, Open items, Hard constraints",
                    ));
                }
                seen.push(section);
                current = Some(section);
                continue;
            }
            let Some(section) = current else { continue };
            if raw.trim().is_empty() {
                continue;
            }
            if let Some(item) = bullet_text(raw) {
                if section == Section::Constraints && is_none_marker(item) {
                    constraints_said_none = true;
                    continue;
                }
                items.push((section, number, item.to_string()));
            } else if section == Section::Constraints && is_none_marker(raw) {
                constraints_said_none = true;
            } else if let Some(last) = items.last_mut().filter(|l| l.0 == section) {
                last.2.push(' ');
                last.2.push_str(raw.trim());
            } else {
                items.push((section, number, raw.trim().to_string()));
            }
        }
        for section in Section::ORDER {
            if !seen.contains(&section) {
                let code = if section == Section::Constraints {
                    "constraints_omitted"
                } else {
                    "section_missing"
                };
                violations.push(Violation::new(
                    code,
                    0,
                    format!(
                        "the `## {}` section is missing; all three sections are required{}",
                        section.title(),
                        if section == Section::Constraints {
                            " (write `- none` when there are none)"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
        for (section, line, text) in items {
            match section {
                Section::Settled => {
                    let (claim, raw) = split_sources(&text);
                    let (claim, kind) = match strip_prefix_ignore_case(&claim, NEGATIVE_PREFIX) {
                        Some(rest) => (rest.trim().to_string(), ConclusionKind::NegativeEvidence),
                        None => (claim, ConclusionKind::Finding),
                    };
                    if claim.is_empty() {
                        violations.push(Violation::new(
                            "item_empty",
                            line,
                            "a settled conclusion states no fact",
                        ));
                    }
                    if raw.is_empty() {
                        violations.push(Violation::new(
                            "source_missing",
                            line,
                            "this conclusion has no source: end it with [path:START-END]",
                        ));
                    }
                    let sources = parse_sources(&raw, line, &mut violations);
                    handoff.settled_conclusions.push(Conclusion {
                        claim,
                        sources,
                        kind,
                    });
                }
                Section::Open => {
                    let (item, stuck_on) = split_open_item(&text);
                    if item.is_empty() {
                        violations.push(Violation::new("item_empty", line, "an empty open item"));
                    }
                    handoff.open_items.push(OpenItem { item, stuck_on });
                }
                Section::Constraints => {
                    let (constraint, raw) = split_sources(&text);
                    let sources = parse_sources(&raw, line, &mut violations);
                    handoff.hard_constraints.push(HardConstraint {
                        constraint,
                        sources,
                    });
                }
            }
        }
        if seen.contains(&Section::Constraints)
            && handoff.hard_constraints.is_empty()
            && !constraints_said_none
        {
            violations.push(Violation::new(
                "constraints_empty",
                0,
                "`Hard constraints` is empty: write `- none` when there are none",
            ));
        }
        if violations.is_empty() {
            Ok(handoff)
        } else {
            Err(violations)
        }
    }

    /// Renders the markdown form; parsing it gives back this handoff.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("## Settled conclusions\n");
        for c in &self.settled_conclusions {
            let prefix = match c.kind {
                ConclusionKind::Finding => "",
                ConclusionKind::NegativeEvidence => "Negative evidence: ",
            };
            let sources: Vec<String> = c.sources.iter().map(|s| s.to_string()).collect();
            let _ = writeln!(
                out,
                "- {prefix}{} [{}]",
                one_line(&c.claim),
                sources.join(", ")
            );
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
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Removes a surrounding ``` fence, which models often add.
fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix("```") {
        let body = rest.split_once('\n').map(|x| x.1).unwrap_or("");
        return body.trim_end().trim_end_matches("```").trim();
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_round_trip() {
        let text = "## Settled conclusions\n- `next_delay` doubles the delay. [src/retry.rs:18-22]\n- Negative evidence: no match for `gzip` in src. [call:sa1.2]\n## Open items\n- Whether callers pass attempt > 31 — stuck: call sites not searched\n## Hard constraints\n- none\n";
        let h = Handoff::parse(text).unwrap();
        assert_eq!(h.settled_conclusions.len(), 2);
        assert_eq!(
            h.settled_conclusions[1].kind,
            ConclusionKind::NegativeEvidence
        );
        assert_eq!(h.open_items[0].stuck_on, "call sites not searched");
        assert_eq!(h.to_markdown(), text);
        assert_eq!(Handoff::parse(&h.to_markdown()).unwrap(), h);
    }

    #[test]
    fn parentheses_in_a_stuck_reason_survive() {
        let item = OpenItem {
            item: "x".into(),
            stuck_on: "only part occurs (a, b occur there)".into(),
        };
        let h = Handoff {
            open_items: vec![item.clone()],
            ..Handoff::default()
        };
        assert_eq!(
            Handoff::parse(&h.to_markdown()).unwrap().open_items[0],
            item
        );
        let h = Handoff::parse(
            "## Settled conclusions\n## Open items\n- y (stuck: z)\n## Hard constraints\n- none\n",
        )
        .unwrap();
        assert_eq!(h.open_items[0].stuck_on, "z");
    }

    #[test]
    fn lenient_headings_and_bullets() {
        let text = "**Settled Conclusions:**\n1. A fact [a.rs:1]\n# OPEN ITEMS\n* x - stuck on: y\nHARD CONSTRAINTS:\nNone.\n";
        let h = Handoff::parse(text).unwrap();
        assert_eq!(h.settled_conclusions[0].claim, "A fact");
        assert_eq!(h.open_items[0].item, "x");
        assert!(h.hard_constraints.is_empty());
    }

    #[test]
    fn missing_source_and_sections_are_all_reported() {
        let codes: Vec<String> = Handoff::parse("## Settled conclusions\n- a fact\n")
            .unwrap_err()
            .into_iter()
            .map(|v| v.code)
            .collect();
        assert!(codes.contains(&"source_missing".to_string()));
        assert!(codes.contains(&"section_missing".to_string()));
        assert!(codes.contains(&"constraints_omitted".to_string()));
    }

    #[test]
    fn json_form_parses_to_the_same_handoff() {
        let json = r#"{"settled_conclusions":[{"claim":"A","sources":["a.rs:1-2"]}],"open_items":[],"hard_constraints":[]}"#;
        let h = Handoff::parse(json).unwrap();
        assert_eq!(Handoff::parse(&h.to_markdown()).unwrap(), h);
        assert!(Handoff::parse(r#"{"settled_conclusions":[]}"#).is_err());
    }
}
