//! The lead model's plan checked, pure: the tree as the lead model is shown it (and the paths
//! a scope may name), and a proposed plan read against `contracts/plan.schema.json`, its bound,
//! the tree and the run's roles — every problem found, one line each.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::contracts::RoleId;

/// The plan's JSON Schema, given to the lead model.
pub(crate) const PLAN_SCHEMA: &str = include_str!("../../contracts/plan.schema.json");

/// The schema's bounds, which `check_plan` enforces (a test reads them from the schema).
pub(super) const MAX_SUBTASKS: usize = 1024;
pub(super) const MAX_SCOPE_PATHS: usize = 64;
pub(super) const MAX_PATH_CHARS: usize = 1024;
pub(super) const MAX_QUESTION_CHARS: usize = 2000;

/// Most problems of a plan reported (told back to the lead model, and logged).
pub(super) const MAX_PROBLEMS: usize = 20;

/// Most directories the tree listing shows the lead model.
const LISTED_DIRS: usize = 300;

/// A name as a listing shows it: as it is, or — holding a control or invisible character
/// that could forge a line of the listing — quoted with its escapes.
pub(super) fn listed_name(name: &str) -> std::borrow::Cow<'_, str> {
    if name
        .chars()
        .any(|c| c.is_control() || crate::source::is_invisible(c))
    {
        std::borrow::Cow::Owned(format!("{name:?}"))
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// Text of the model's plan told back in a problem: one line, at most 200 characters.
fn echoed(text: &str) -> String {
    crate::text::one_line(&listed_name(&text.chars().take(200).collect::<String>()))
}

/// The tree as the lead model is shown it, and the paths a scope may name.
pub(super) struct Tree {
    pub(super) summary: String,
    sizes: BTreeMap<String, u64>,
    paths: BTreeSet<String>,
}

impl Tree {
    /// From the planned files (already within the read scope): each directory with its file
    /// count and bytes. Directories above a read root are not paths a scope may name.
    pub(super) fn of(files: &[(String, u64)], roots: Option<&[String]>) -> Tree {
        let inside =
            |dir: &str| roots.is_none_or(|roots| roots.iter().any(|r| super::plan::within(dir, r)));
        let mut dirs: BTreeMap<String, (usize, u64)> = BTreeMap::new();
        let mut paths = BTreeSet::new();
        let mut sizes = BTreeMap::new();
        for (path, bytes) in files {
            paths.insert(path.clone());
            sizes.insert(path.clone(), *bytes);
            let parent = path.rsplit_once('/').map_or(".", |(d, _)| d).to_string();
            let e = dirs.entry(parent).or_default();
            e.0 += 1;
            e.1 += bytes;
            let mut dir = path.as_str();
            while let Some((up, _)) = dir.rsplit_once('/') {
                if inside(up) {
                    paths.insert(up.to_string());
                }
                dir = up;
            }
            if inside(".") {
                paths.insert(".".into());
            }
        }
        let mut summary = String::new();
        for (dir, (count, bytes)) in dirs.iter().take(LISTED_DIRS) {
            summary.push_str(&format!(
                "- {}/: {count} file(s), {bytes} bytes\n",
                listed_name(dir)
            ));
        }
        if dirs.len() > LISTED_DIRS {
            summary.push_str(&format!(
                "- … and {} more directories\n",
                dirs.len() - LISTED_DIRS
            ));
        }
        Tree {
            summary,
            sizes,
            paths,
        }
    }

    /// Only `paths`, each a scope of its own (a wave's follow-ups: the paths the planner
    /// found unsearched), listed one a line; nothing above or beside them may be named.
    pub(super) fn listed(paths: &[String]) -> Tree {
        let summary = paths
            .iter()
            .map(|p| format!("- {}\n", listed_name(p)))
            .collect();
        Tree {
            summary,
            sizes: BTreeMap::new(),
            paths: paths.iter().cloned().collect(),
        }
    }

    pub(super) fn bytes_under(&self, scope: &[String]) -> u64 {
        self.sizes
            .iter()
            .filter(|(p, _)| scope.iter().any(|s| super::plan::within(p, s)))
            .map(|(_, b)| b)
            .sum()
    }
}

/// A subtask the lead model proposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Subtask {
    pub(super) scope: Vec<String>,
    pub(super) question: String,
    pub(super) role: RoleId,
}

/// Reads a proposed plan (JSON, perhaps fenced) and checks it against the schema, the bound
/// `max`, the tree (each scope a path of it; no scope when there is none) and the run's roles
/// (a subtask without one takes the first): the subtasks, or every problem found, one line
/// each.
pub(super) fn check_plan(
    text: &str,
    max: usize,
    tree: Option<&Tree>,
    roles: &[RoleId],
) -> Result<Vec<Subtask>, Vec<String>> {
    let body = crate::text::strip_fence(text);
    let value: Value =
        serde_json::from_str(body).map_err(|e| vec![format!("the plan is not JSON ({e})")])?;
    let Some(object) = value.as_object() else {
        return Err(vec![
            "the plan must be a JSON object with a `subtasks` array".into(),
        ]);
    };
    let mut problems = Vec::new();
    for key in object.keys().filter(|k| *k != "subtasks") {
        problems.push(format!(
            "unknown key `{}`: the plan holds only `subtasks`",
            echoed(key)
        ));
    }
    let Some(items) = object.get("subtasks").and_then(Value::as_array) else {
        problems.push("`subtasks` must be an array".into());
        return Err(problems);
    };
    let bound = max.min(MAX_SUBTASKS);
    if items.is_empty() || items.len() > bound {
        problems.push(format!(
            "there are {} subtasks: give from 1 to {bound}",
            items.len()
        ));
        // Too many to be worth reading one by one.
        if items.len() > bound {
            return Err(problems);
        }
    }
    let mut subtasks = Vec::new();
    for (i, item) in items.iter().enumerate() {
        // A plan's problems are told back to the lead model and logged: a few are enough.
        if problems.len() >= MAX_PROBLEMS {
            problems.push("… and more problems past these".into());
            break;
        }
        let n = i + 1;
        let Some(o) = item.as_object() else {
            problems.push(format!("subtask {n} is not an object"));
            continue;
        };
        for key in o
            .keys()
            .filter(|k| !matches!(k.as_str(), "scope" | "question" | "role"))
        {
            problems.push(format!("subtask {n}: unknown key `{}`", echoed(key)));
        }
        let role = match o.get("role") {
            None => roles.first().cloned(),
            Some(Value::String(name)) => roles.iter().find(|r| r.as_str() == name).cloned(),
            Some(_) => None,
        };
        let role = role.unwrap_or_else(|| {
            let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
            problems.push(format!(
                "subtask {n}: `role` must be one of the run's roles: {}",
                names.join(", ")
            ));
            RoleId::EXPLORER
        });
        let question = o
            .get("question")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        if question.is_empty() || question.chars().count() > MAX_QUESTION_CHARS {
            problems.push(format!(
                "subtask {n}: `question` must be text of 1 to {MAX_QUESTION_CHARS} characters"
            ));
        }
        let scope = check_scope(n, o, tree, &mut problems);
        subtasks.push(Subtask {
            scope,
            question: question.to_string(),
            role,
        });
    }
    if problems.is_empty() {
        Ok(subtasks)
    } else {
        Err(problems)
    }
}

/// The plan's schema as the lead model is given it: a subtask's `role` one of the run's.
pub(super) fn plan_schema_for(roles: &[RoleId]) -> String {
    let Ok(mut schema) = serde_json::from_str::<Value>(PLAN_SCHEMA) else {
        return PLAN_SCHEMA.to_string();
    };
    if let Some(role) = schema.pointer_mut("/properties/subtasks/items/properties/role") {
        role["enum"] = roles.iter().map(|r| Value::from(r.as_str())).collect();
    }
    schema.to_string()
}

/// A subtask's scope checked against the tree: each path one of it, each once (none when the
/// job has no tree, and then it must give none).
fn check_scope(
    n: usize,
    o: &serde_json::Map<String, Value>,
    tree: Option<&Tree>,
    problems: &mut Vec<String>,
) -> Vec<String> {
    let Some(tree) = tree else {
        // A job with no workspace: a subtask has no scope.
        if o.contains_key("scope") {
            problems.push(format!(
                "subtask {n}: this job has no tree: give no `scope`"
            ));
        }
        return Vec::new();
    };
    let scope: Vec<&str> = o
        .get("scope")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|p| p.as_str().unwrap_or("")).collect())
        .unwrap_or_default();
    if scope.is_empty() || scope.len() > MAX_SCOPE_PATHS {
        problems.push(format!(
            "subtask {n}: `scope` must list 1 to {MAX_SCOPE_PATHS} paths"
        ));
    }
    let mut paths = Vec::new();
    for raw in scope {
        let path = raw.trim().trim_start_matches("./").trim_end_matches('/');
        let path = if path.is_empty() { "." } else { path };
        if raw.chars().count() > MAX_PATH_CHARS || !tree.paths.contains(path) {
            problems.push(format!(
                "subtask {n}: `{}` is not a directory or file of the tree listed",
                echoed(raw)
            ));
        } else if !paths.iter().any(|p| p == path) {
            paths.push(path.to_string());
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPLORER: &[RoleId] = &[RoleId::EXPLORER];

    fn tree() -> Tree {
        Tree::of(
            &[
                ("src/net/retry.rs".into(), 100),
                ("src/net/client.rs".into(), 50),
                ("docs/guide.md".into(), 10),
            ],
            None,
        )
    }

    #[test]
    fn a_plan_is_checked_against_the_tree_and_the_bound() {
        let t = tree();
        let ok = check_plan(
            "```json\n{\"subtasks\": [{\"scope\": [\"src/net/\"], \"question\": \"Where is the retry?\"}, {\"scope\": [\"./docs\", \"docs\"], \"question\": \"What do the docs say?\"}]}\n```",
            4,
            Some(&t),
            EXPLORER,
        )
        .unwrap();
        assert_eq!(ok[0].scope, vec!["src/net"]);
        assert_eq!(ok[1].scope, vec!["docs"], "a path named twice is kept once");
        assert_eq!(t.bytes_under(&ok[0].scope), 150);
        let bad = check_plan(
            r#"{"subtasks": [{"scope": ["vendor"], "question": ""}, {"scope": [], "question": "q", "why": 1}], "notes": "x"}"#,
            2,
            Some(&t),
            EXPLORER,
        )
        .unwrap_err();
        let text = bad.join("\n");
        for needle in [
            "unknown key `notes`",
            "`vendor` is not",
            "subtask 1: `question`",
            "subtask 2: `scope`",
            "subtask 2: unknown key `why`",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
        assert!(check_plan("not json", 3, Some(&t), EXPLORER).unwrap_err()[0].contains("not JSON"));
        // Too many subtasks is one problem; junk items are reported a few at a time.
        let many = format!("{{\"subtasks\": [{}]}}", vec!["1"; 5000].join(","));
        assert_eq!(
            check_plan(&many, 4, Some(&t), EXPLORER).unwrap_err(),
            vec!["there are 5000 subtasks: give from 1 to 4".to_string()]
        );
        let junk = format!("{{\"subtasks\": [{}]}}", vec!["1"; 50].join(","));
        assert_eq!(
            check_plan(&junk, 64, Some(&t), EXPLORER).unwrap_err().len(),
            MAX_PROBLEMS + 1
        );
    }

    #[test]
    fn under_a_read_scope_only_paths_inside_it_may_be_named() {
        let t = Tree::of(
            &[("src/net/retry.rs".into(), 1)],
            Some(&["src/net".to_string()]),
        );
        assert!(check_plan(
            r#"{"subtasks": [{"scope": ["src/net"], "question": "q"}]}"#,
            2,
            Some(&t),
            EXPLORER
        )
        .is_ok());
        for outside in [".", "src"] {
            let plan = format!(r#"{{"subtasks": [{{"scope": ["{outside}"], "question": "q"}}]}}"#);
            assert!(
                check_plan(&plan, 2, Some(&t), EXPLORER).is_err(),
                "{outside} is wider than the read scope"
            );
        }
    }

    /// A job with no tree: a subtask gives no scope; its role is one of the run's, the
    /// first when it names none.
    #[test]
    fn a_job_s_plan_has_no_scope_and_roles_of_the_run() {
        let roles = [RoleId::from("triager"), RoleId::from("filer")];
        let ok = check_plan(
            r#"{"subtasks": [{"question": "a"}, {"question": "b", "role": "filer"}]}"#,
            4,
            None,
            &roles,
        )
        .unwrap();
        assert_eq!(ok[0].role, "triager");
        assert_eq!(ok[1].role, "filer");
        assert!(ok.iter().all(|s| s.scope.is_empty()));
        let bad = check_plan(
            r#"{"subtasks": [{"question": "a", "scope": ["src"]}, {"question": "b", "role": "x"}]}"#,
            4,
            None,
            &roles,
        )
        .unwrap_err()
        .join("\n");
        assert!(bad.contains("subtask 1: this job has no tree"), "{bad}");
        assert!(
            bad.contains("subtask 2: `role` must be one of the run's roles: triager, filer"),
            "{bad}"
        );
    }

    /// The schema the lead model is given names the run's roles.
    #[test]
    fn the_plan_schema_given_names_the_run_s_roles() {
        let schema: Value =
            serde_json::from_str(&plan_schema_for(&["explorer".into(), "reviewer".into()]))
                .unwrap();
        assert_eq!(
            schema["properties"]["subtasks"]["items"]["properties"]["role"]["enum"],
            serde_json::json!(["explorer", "reviewer"])
        );
    }

    #[test]
    fn the_checker_enforces_the_schema_file_s_bounds() {
        let schema: Value = serde_json::from_str(PLAN_SCHEMA).unwrap();
        let subtasks = &schema["properties"]["subtasks"];
        let item = &subtasks["items"]["properties"];
        assert_eq!(subtasks["maxItems"], MAX_SUBTASKS);
        assert_eq!(item["scope"]["maxItems"], MAX_SCOPE_PATHS);
        assert_eq!(item["scope"]["items"]["maxLength"], MAX_PATH_CHARS);
        assert_eq!(item["question"]["maxLength"], MAX_QUESTION_CHARS);
        assert_eq!(schema["required"], serde_json::json!(["subtasks"]));
        assert_eq!(
            subtasks["items"]["required"],
            serde_json::json!(["question"])
        );
    }
}
