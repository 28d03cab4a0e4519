//! The markdown form: three headed sections in order, bullets beneath, sources in square
//! brackets at the end of a conclusion. Lenient where formatting differs harmlessly (heading
//! level, bold, trailing colon, letter case, `-` `*` `1.` bullets, `None.`), strict where
//! meaning is at stake.

use super::{
    check_items, of_conclusion, source_missing, Conclusion, ConclusionKind, Form, Handoff,
    HardConstraint, ItemLines, OpenItem, Parsed, Violation, ViolationCode,
};
use crate::source::SourceId;

const NEGATIVE_PREFIX: &str = "Negative evidence:";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    Settled,
    Open,
    Constraints,
}

impl Section {
    const ORDER: [Section; 3] = [Section::Settled, Section::Open, Section::Constraints];

    fn rank(self) -> usize {
        Section::ORDER.iter().position(|s| *s == self).unwrap_or(0)
    }

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
    // Emphasis and a closing period in either order: `**None**.`, `_None._`, `None.`.
    let t = text.trim().trim_matches(|c| matches!(c, '*' | '_' | '.'));
    t.eq_ignore_ascii_case("none")
}

/// Where the source group that `text` ends with opens: scanning back from its final `]`,
/// skipping quoted file names (JSON string literals, whose inner quotes are escaped), to the
/// `[` that opens it.
fn group_start(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = bytes.len().checked_sub(1)?;
    if bytes[i] != b']' {
        return None;
    }
    let escaped = |at: usize| {
        bytes[..at]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count()
            % 2
            == 1
    };
    let mut quoted = false;
    while i > 0 {
        i -= 1;
        match bytes[i] {
            b'"' if !escaped(i) => quoted = !quoted,
            b'[' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// Splits the inside of a source group at `,` and `;` outside quoted file names.
fn split_group(group: &str) -> Vec<String> {
    if !group.contains('"') {
        return group
            .split([',', ';'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
    }
    let mut ids = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = group.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if quoted => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ',' | ';' if !quoted => ids.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    ids.push(current);
    ids.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Splits trailing `[a, b] [c]` groups off a conclusion. Returns the claim and the raw ids.
fn split_sources(text: &str) -> (String, Vec<String>) {
    let mut rest = text.trim_end().trim_end_matches('.').trim_end();
    let mut groups = Vec::new();
    // An unbalanced quote (a malformed id) falls back to the nearest `[`.
    let open_of =
        |t: &str| group_start(t).or_else(|| t.ends_with(']').then(|| t.rfind('[')).flatten());
    while let Some(open) = open_of(rest) {
        groups.push(&rest[open + 1..rest.len() - 1]);
        rest = rest[..open].trim_end();
    }
    groups.reverse();
    let ids = groups.iter().flat_map(|g| split_group(g)).collect();
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
            Err(e) => out.push(Violation::new(
                ViolationCode::SourceMalformed,
                line,
                e.to_string(),
            )),
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

/// Whether a finding whose claim is `claim` would read back, in the markdown form, as
/// negative evidence: a claim starting with the prefix that marks one.
pub(crate) fn reads_as_negative(claim: &str) -> bool {
    strip_prefix_ignore_case(claim.trim_start(), NEGATIVE_PREFIX).is_some()
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// A violation for each section missing.
fn missing_sections(seen: &[Section], violations: &mut Vec<Violation>) {
    for section in Section::ORDER {
        if !seen.contains(&section) {
            let (code, hint) = if section == Section::Constraints {
                (
                    ViolationCode::ConstraintsOmitted,
                    " (write `- none` when there are none)",
                )
            } else {
                (ViolationCode::SectionMissing, "")
            };
            violations.push(Violation::new(
                code,
                0,
                format!(
                    "the `## {}` section is missing; all three sections are required{hint}",
                    section.title()
                ),
            ));
        }
    }
}

/// The handoff the items make, and the line of each item.
fn read_items(
    items: Vec<(Section, usize, String)>,
    violations: &mut Vec<Violation>,
) -> (Handoff, ItemLines) {
    let mut handoff = Handoff::default();
    let mut lines = ItemLines::default();
    for (section, line, text) in items {
        match section {
            Section::Settled => {
                let (claim, raw) = split_sources(&text);
                let (claim, kind) = match strip_prefix_ignore_case(&claim, NEGATIVE_PREFIX) {
                    Some(rest) => (rest.trim().to_string(), ConclusionKind::NegativeEvidence),
                    None => (claim, ConclusionKind::Finding),
                };
                let (index, from) = (handoff.settled_conclusions.len(), violations.len());
                if raw.is_empty() {
                    violations.push(source_missing(index, line));
                }
                let sources = parse_sources(&raw, line, violations);
                of_conclusion(violations, from, index);
                handoff.settled_conclusions.push(Conclusion {
                    claim,
                    sources,
                    kind,
                });
                lines.settled.push(line);
            }
            Section::Open => {
                let (item, stuck_on) = split_open_item(&text);
                handoff.open_items.push(OpenItem { item, stuck_on });
                lines.open.push(line);
            }
            Section::Constraints => {
                let (constraint, raw) = split_sources(&text);
                let sources = parse_sources(&raw, line, violations);
                handoff.hard_constraints.push(HardConstraint {
                    constraint,
                    sources,
                });
                lines.constraints.push(line);
            }
        }
    }
    (handoff, lines)
}

/// Reads the markdown form. Every structural violation is reported, with its line.
pub(super) fn parse(text: &str) -> Parsed {
    let mut violations = Vec::new();
    let mut seen: Vec<Section> = Vec::new();
    let mut current: Option<Section> = None;
    let mut constraints_said_none = false;
    let mut narration_line = None;
    // (section, first line number, text) of every item, continuation lines folded in.
    let mut items: Vec<(Section, usize, String)> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        if let Some(section) = Section::from_heading(raw) {
            if seen.contains(&section) {
                violations.push(Violation::new(
                    ViolationCode::SectionDuplicated,
                    number,
                    format!("`{}` appears twice: merge them into one", section.title()),
                ));
            } else if seen.last().is_some_and(|last| last.rank() > section.rank()) {
                violations.push(Violation::new(
                    ViolationCode::SectionOutOfOrder,
                    number,
                    "sections go in this order: Settled conclusions, Open items, Hard constraints",
                ));
            }
            seen.push(section);
            current = Some(section);
            continue;
        }
        if raw.trim().is_empty() {
            continue;
        }
        let Some(section) = current else {
            narration_line.get_or_insert(number);
            continue;
        };
        // `- none` (or `None.`) says a section is empty, whichever section it is under; a
        // `None` line after an item of the section goes on that item.
        let continues = bullet_text(raw).is_none() && items.last().is_some_and(|l| l.0 == section);
        if !continues && is_none_marker(bullet_text(raw).unwrap_or(raw)) {
            constraints_said_none |= section == Section::Constraints;
            continue;
        }
        if let Some(item) = bullet_text(raw) {
            items.push((section, number, item.to_string()));
        } else if let Some(last) = items.last_mut().filter(|l| l.0 == section) {
            last.2.push(' ');
            last.2.push_str(raw.trim());
        } else {
            items.push((section, number, raw.trim().to_string()));
        }
    }
    if let (Some(line), false) = (narration_line, seen.is_empty()) {
        violations.push(Violation::new(
            ViolationCode::TextOutsideSections,
            line,
            "text before the first section: pass back the three sections only, no narration",
        ));
    }
    missing_sections(&seen, &mut violations);
    let (handoff, lines) = read_items(items, &mut violations);
    check_items(&handoff, &lines, &mut violations);
    if seen.contains(&Section::Constraints)
        && handoff.hard_constraints.is_empty()
        && !constraints_said_none
    {
        violations.push(Violation::new(
            ViolationCode::ConstraintsEmpty,
            0,
            "`Hard constraints` is empty: write `- none` when there are none",
        ));
    }
    violations.sort_by_key(|v| (v.line == 0, v.line));
    Parsed {
        handoff,
        form: Form::Markdown,
        violations,
        lines,
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
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

    /// `- none` or `None.` says a section is empty under any heading: it is never an item.
    #[test]
    fn none_empties_any_section() {
        for text in [
            "## Settled conclusions\n- none\n## Open items\n- None.\n## Hard constraints\n- none\n",
            "## Settled conclusions\nNone.\n## Open items\n* **none**\n## Hard constraints\nNone\n",
        ] {
            let parsed = parse(text);
            assert!(
                parsed.violations.is_empty(),
                "{text}: {:?}",
                parsed.violations
            );
            let h = Handoff::parse(text).unwrap();
            assert!(h.settled_conclusions.is_empty(), "{text}");
            assert!(h.open_items.is_empty(), "{text}: {:?}", h.open_items);
            assert!(h.hard_constraints.is_empty(), "{text}");
        }
        // The marker with emphasis and a period in either order.
        let h = Handoff::parse(
            "## Settled conclusions\n- **None**.\n## Open items\n- _None_.\n## Hard constraints\n- none\n",
        )
        .unwrap();
        assert!(h.settled_conclusions.is_empty() && h.open_items.is_empty());
        // A `None` line after an item goes on it, as any line there does.
        let h = Handoff::parse(
            "## Settled conclusions\n## Open items\n- Whether a caller handles a returned\n  None\n  (stuck: callers not read)\n## Hard constraints\n- none\n",
        )
        .unwrap();
        assert_eq!(
            h.open_items[0].item,
            "Whether a caller handles a returned None"
        );
        // An item that only starts with the word is an item.
        let h = Handoff::parse(
            "## Settled conclusions\n## Open items\n- none of the callers were read (stuck: time)\n## Hard constraints\n- none\n",
        )
        .unwrap();
        assert_eq!(h.open_items.len(), 1);
    }

    #[test]
    fn violations_carry_their_lines() {
        let parsed = parse("Here is my handoff.\n## Settled conclusions\n- a fact\n## Open items\n## Hard constraints\n");
        let found: Vec<(ViolationCode, usize)> =
            parsed.violations.iter().map(|v| (v.code, v.line)).collect();
        assert!(found.contains(&(ViolationCode::TextOutsideSections, 1)));
        assert!(found.contains(&(ViolationCode::SourceMissing, 3)));
        assert!(found.contains(&(ViolationCode::ConstraintsEmpty, 0)));
    }
}
