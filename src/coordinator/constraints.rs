//! A run's constraints as the coordinator checks them before anything starts: the places
//! their rules name spelled as the tree spells them, a place the tree does not hold said as a
//! warning, and a constraint that names a place, a tool or a budget yet cannot be typed
//! refused with the typed form to use — or, when the caller allows it (and for the question's
//! own sentences), carried as a standing condition with a warning saying it is not enforced.

use std::path::Path;

use crate::lead::Stated;
use crate::policy::{named, typed_form, Rule};

/// The places of a rule that name a path (globs and the root aside).
fn places_mut(rule: &mut Rule) -> Vec<&mut String> {
    match rule {
        Rule::ReadScope {
            only_under,
            never_under,
        }
        | Rule::WriteScope {
            only_under,
            never_under,
        } => only_under
            .iter_mut()
            .chain(never_under.iter_mut())
            .filter(|p| p.as_str() != "." && !p.contains(['*', '?', '[', '{']))
            .collect(),
        _ => Vec::new(),
    }
}

/// `place` (root-relative) as the tree spells it: each part as it is when the tree holds it,
/// else the one entry beside it whose name differs only in letter case; none when the tree
/// holds no such entry (or two, told apart only by case).
pub(super) fn tree_spelling(root: &Path, place: &str) -> Option<String> {
    let mut at = root.to_path_buf();
    let mut spelled = Vec::new();
    for part in place.split('/').filter(|p| !p.is_empty() && *p != ".") {
        let exact = at.join(part);
        let name = if std::fs::symlink_metadata(&exact).is_ok() {
            part.to_string()
        } else {
            let lower = part.to_lowercase();
            let mut matches = std::fs::read_dir(&at)
                .ok()?
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.to_lowercase() == lower);
            let only = matches.next()?;
            if matches.next().is_some() {
                return None;
            }
            only
        };
        at.push(&name);
        spelled.push(name);
    }
    (!spelled.is_empty()).then(|| spelled.join("/"))
}

/// Checks one constraint against the tree: its places respelled as the tree spells them, a
/// warning for each the tree does not hold, and for each untyped clause that names a place,
/// a tool or a budget the message saying so. `Err` when such a clause must refuse the run.
pub(super) fn check(
    stated: &mut Stated,
    root: Option<&Path>,
    tools: &[String],
    allow_unenforced: bool,
) -> Result<(), String> {
    // A job with no tree has no places to spell or find.
    let spelling = |place: &str| root.and_then(|root| tree_spelling(root, place));
    for rule in stated.rules.iter_mut().filter(|_| root.is_some()) {
        for place in places_mut(rule) {
            let bare = place.trim_start_matches("**/").to_string();
            if bare.contains('/') || !place.starts_with("**/") {
                match spelling(&bare) {
                    Some(spelled) if spelled != bare => {
                        stated.warnings.push(format!(
                            "`{bare}` is read as `{spelled}`, as the tree spells it"
                        ));
                        *place = place.replacen(&bare, &spelled, 1);
                    }
                    Some(_) => {}
                    None => stated.warnings.push(format!(
                        "`{bare}` is not in the tree: the rule on it guards nothing there now"
                    )),
                }
            }
        }
    }
    // A cost limit is typed, but the gate sees no prices: it is not enforced as written.
    if stated.rules.iter().any(|r| !r.wholly_enforced()) {
        let shown = crate::text::one_line(&stated.text);
        if stated.provenance == "--constraint" && !allow_unenforced {
            return Err(format!(
                "--constraint {shown:?}: a cost limit is not enforced by the gate (it sees no prices); give it as --max-cost-per-subagent DOLLARS or --max-cost DOLLARS (with the models' prices), or pass --allow-unenforced to carry it only as a standing condition"
            ));
        }
        stated.warnings.push(format!(
            "\"{shown}\" sets a cost limit, which is not enforced: to enforce one, give --max-cost-per-subagent DOLLARS or --max-cost DOLLARS"
        ));
    }
    let exists = |name: &str| spelling(name).is_some();
    for clause in &stated.untyped {
        let found = named(clause, tools, &exists);
        if found.is_empty() {
            continue;
        }
        let forms = typed_form(clause, &found)
            .iter()
            .map(|f| format!("--constraint-json '{f}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let shown = crate::text::one_line(clause);
        if stated.provenance == "--constraint" && !allow_unenforced {
            return Err(format!(
                "--constraint {:?}: \"{shown}\" names {} but no rule could be read from it, so nothing would enforce it; give the rule itself ({forms}), or pass --allow-unenforced to carry it only as a standing condition",
                crate::text::one_line(&stated.text),
                found.describe()
            ));
        }
        stated.warnings.push(format!(
            "\"{shown}\" names {} but is not enforced (no rule could be read from it): to enforce it, {forms}",
            found.describe()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_is_spelled_as_the_tree_spells_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs/Guide")).unwrap();
        assert_eq!(tree_spelling(dir.path(), "DOCS"), Some("docs".into()));
        assert_eq!(
            tree_spelling(dir.path(), "docs/guide/"),
            Some("docs/Guide".into())
        );
        assert_eq!(tree_spelling(dir.path(), "vendor"), None);
    }
}
