//! The JSON form: `{"settled_conclusions": [{claim, sources}], "open_items": [{item,
//! stuck_on}], "hard_constraints": [{constraint, sources?}]}` — all three keys required,
//! `hard_constraints: []` meaning none (contracts/handoff.schema.json).

use serde::Deserialize;

use super::{
    check_items, of_conclusion, source_missing, Conclusion, ConclusionKind, Form, Handoff,
    HardConstraint, ItemLines, OpenItem, Parsed, Violation, ViolationCode,
};
use crate::source::SourceId;

const KEYS: [&str; 3] = ["settled_conclusions", "open_items", "hard_constraints"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHandoff {
    settled_conclusions: Vec<RawConclusion>,
    open_items: Vec<OpenItem>,
    hard_constraints: Vec<RawConstraint>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConclusion {
    claim: String,
    sources: Vec<String>,
    #[serde(default)]
    kind: ConclusionKind,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConstraint {
    constraint: String,
    #[serde(default)]
    sources: Vec<String>,
}

fn parsed(handoff: Handoff, violations: Vec<Violation>) -> Parsed {
    Parsed {
        handoff,
        form: Form::Json,
        violations,
        lines: ItemLines::default(),
    }
}

fn sources(raw: Vec<String>, which: &str, out: &mut Vec<Violation>) -> Vec<SourceId> {
    raw.into_iter()
        .filter_map(|text| match SourceId::parse(&text) {
            Ok(s) => Some(s),
            Err(e) => {
                out.push(Violation::new(
                    ViolationCode::SourceMalformed,
                    0,
                    format!("{which}: {e}"),
                ));
                None
            }
        })
        .collect()
}

/// Reads the JSON form. Nesting deeper than serde_json's limit (128) is `json_invalid`.
pub(super) fn parse(text: &str) -> Parsed {
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return parsed(
                Handoff::default(),
                vec![Violation::new(
                    ViolationCode::JsonInvalid,
                    e.line(),
                    format!("the JSON form is not valid JSON: {e}"),
                )],
            )
        }
    };
    let Some(object) = value.as_object() else {
        return parsed(
            Handoff::default(),
            vec![Violation::new(
                ViolationCode::JsonShape,
                0,
                "the JSON form is an object with settled_conclusions, open_items, hard_constraints",
            )],
        );
    };
    let missing: Vec<Violation> = KEYS
        .iter()
        .filter(|k| !object.contains_key(**k))
        .map(|k| {
            Violation::new(
                ViolationCode::JsonShape,
                0,
                format!("the key `{k}` is missing; all three keys are required (`[]` when empty)"),
            )
        })
        .collect();
    if !missing.is_empty() {
        return parsed(Handoff::default(), missing);
    }
    let raw: RawHandoff = match serde_json::from_value(value) {
        Ok(raw) => raw,
        Err(e) => {
            return parsed(
                Handoff::default(),
                vec![Violation::new(
                    ViolationCode::JsonShape,
                    0,
                    format!("the JSON form does not match the contract: {e}"),
                )],
            )
        }
    };
    let mut violations = Vec::new();
    let settled_conclusions = raw
        .settled_conclusions
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let from = violations.len();
            if c.sources.is_empty() {
                violations.push(source_missing(i, 0));
            }
            let conclusion = Conclusion {
                claim: c.claim,
                sources: sources(
                    c.sources,
                    &format!("settled conclusion {}", i + 1),
                    &mut violations,
                ),
                kind: c.kind,
            };
            of_conclusion(&mut violations, from, i);
            conclusion
        })
        .collect();
    let hard_constraints = raw
        .hard_constraints
        .into_iter()
        .enumerate()
        .map(|(i, h)| HardConstraint {
            constraint: h.constraint,
            sources: sources(
                h.sources,
                &format!("hard constraint {}", i + 1),
                &mut violations,
            ),
        })
        .collect();
    let handoff = Handoff {
        settled_conclusions,
        open_items: raw.open_items,
        hard_constraints,
    };
    check_items(&handoff, &ItemLines::default(), &mut violations);
    parsed(handoff, violations)
}

#[cfg(test)]
mod tests {
    use super::super::parse as parse_any;
    use super::*;

    #[test]
    fn every_missing_key_is_reported() {
        let p = parse(r#"{"settled_conclusions": []}"#);
        assert_eq!(p.violations.len(), 2);
        assert!(p
            .violations
            .iter()
            .all(|v| v.code == ViolationCode::JsonShape));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let p = parse_any(&format!("{{\"settled_conclusions\": {deep}}}"));
        assert_eq!(p.violations[0].code, ViolationCode::JsonInvalid);
    }

    #[test]
    fn a_bad_source_is_malformed_not_a_parse_failure() {
        let p = parse(
            r#"{"settled_conclusions":[{"claim":"x is y","sources":["a b"]}],"open_items":[],"hard_constraints":[]}"#,
        );
        let codes: Vec<ViolationCode> = p.violations.iter().map(|v| v.code).collect();
        assert_eq!(codes, vec![ViolationCode::SourceMalformed]);
    }
}
