//! What a clause no rule could be read from names — a place, a tool, a budget — and the typed
//! form that would say it: a constraint that names one and is not typed is refused at the
//! start of a run (unless the caller allows unenforced constraints), never silently carried
//! as a standing condition the gate does not know.

use std::sync::OnceLock;

use regex::Regex;

use super::{looks_like_host, path_like, place, tokens};

/// What an untyped clause names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Named {
    /// Places: paths, and plain names the tree holds where they read as a place.
    pub(crate) places: Vec<String>,
    /// The run's tools.
    pub(crate) tools: Vec<String>,
    /// Whether it states a limit (tool calls, tokens, turns, dollars).
    pub(crate) budget: bool,
}

impl Named {
    /// Whether it names nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.places.is_empty() && self.tools.is_empty() && !self.budget
    }

    /// What it names, for a message: `` `docs`, `grep`, a budget ``.
    pub(crate) fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .places
            .iter()
            .chain(&self.tools)
            .map(|n| format!("`{n}`"))
            .collect();
        if self.budget {
            parts.push("a budget".into());
        }
        parts.join(", ")
    }
}

/// Verbs of reading, and their -ing forms.
pub(super) const READING: &[&str] = &[
    "read",
    "reading",
    "look",
    "looking",
    "search",
    "searching",
    "grep",
    "list",
    "open",
    "access",
    "explore",
    "browse",
    "inspect",
    "examine",
    "scan",
    "view",
    "consult",
];

/// Verbs of changing what is there, and their -ing forms.
pub(super) const CHANGING: &[&str] = &[
    "modify",
    "modifying",
    "edit",
    "editing",
    "write",
    "writing",
    "change",
    "changing",
    "alter",
    "update",
    "overwrite",
    "delete",
    "remove",
    "create",
    "rename",
    "move",
];

/// The other words after which a plain name the tree holds reads as a place: "don't touch
/// the vendor", "avoid 'docs'", "anything in docs".
const BEFORE_A_PLACE: &[&str] = &[
    "touch", "touching", "enter", "avoid", "leave", "skip", "ignore", "exclude", "in", "under",
    "inside", "within", "from", "into", "outside", "beyond", "at", "to", "of", "the",
];

/// What `clause` names. `exists` says whether the tree holds a plain name (letter case aside).
pub(crate) fn named(clause: &str, tools: &[String], exists: &dyn Fn(&str) -> bool) -> Named {
    let raw: Vec<&str> = clause.split_whitespace().collect();
    let words = tokens(clause);
    let mut out = Named::default();
    for (i, word) in words.iter().enumerate() {
        let lower = word.to_lowercase();
        if tools.contains(&lower) {
            out.tools.push(lower);
            continue;
        }
        if !place(word) || word.contains("://") || looks_like_host(word) {
            continue;
        }
        let quoted = raw.iter().any(|r| {
            r.len() > word.len() && r.contains(word.as_str()) && r.contains(['\'', '"', '`'])
        });
        let after = i
            .checked_sub(1)
            .and_then(|p| words.get(p))
            .is_some_and(|p| {
                let p = p.to_lowercase();
                [READING, CHANGING, BEFORE_A_PLACE]
                    .iter()
                    .any(|list| list.contains(&p.as_str()))
            });
        let before_dir = words.get(i + 1).is_some_and(|n| {
            matches!(
                n.to_lowercase().as_str(),
                "directory" | "folder" | "dir" | "tree"
            )
        });
        let host_path = word.split('/').next().is_some_and(looks_like_host);
        if (path_like(word) && !host_path) || ((quoted || after || before_dir) && exists(word)) {
            out.places.push(
                word.trim_start_matches('/')
                    .trim_end_matches('/')
                    .to_string(),
            );
        }
    }
    static BUDGET: OnceLock<Regex> = OnceLock::new();
    let budget = BUDGET.get_or_init(|| {
        Regex::new(r"(?i)[$€£¥]\s?[0-9]|[0-9]\s?[$€£¥]|\b(?:[0-9][0-9,_]*(?:\.[0-9]+)?k?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|hundred|thousand|an?)\s*(?:tool calls?|calls|tokens|model turns|turns|dollars?|usd|eur|euros?|gbp|pounds|bucks|cents?|minutes?|mins?|seconds?|secs?|hours?|files|reads|requests|searches)\b")
            .expect("static regex")
    });
    out.budget = budget.is_match(clause);
    out.places.dedup();
    out.tools.dedup();
    out
}

/// The typed rules, as `--constraint-json` takes them, that would say what `clause` names:
/// a read scope for reading verbs, a write scope for changing ones, both for touching ones;
/// `only_under` for an "only", "outside" or "beyond", else `never_under`; a tools rule; a
/// budget rule with its limits left to fill in.
pub(crate) fn typed_form(clause: &str, named: &Named) -> Vec<String> {
    let lower = format!(" {} ", tokens(clause).join(" ").to_lowercase());
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(&format!(" {w} ")));
    let (write, read) = (has(CHANGING), has(READING));
    let only = has(&["only", "outside", "beyond", "but", "except", "besides"]);
    let mut out = Vec::new();
    if !named.places.is_empty() {
        let places = serde_json::to_string(&named.places).unwrap_or_default();
        let key = if only { "only_under" } else { "never_under" };
        let scopes: &[&str] = match (read, write) {
            (true, false) => &["read_scope"],
            (false, true) => &["write_scope"],
            _ => &["read_scope", "write_scope"],
        };
        for scope in scopes {
            out.push(format!(r#"{{"rule":"{scope}","{key}":{places}}}"#));
        }
    }
    if !named.tools.is_empty() {
        let tools = serde_json::to_string(&named.tools).unwrap_or_default();
        let key = if only { "allow" } else { "deny" };
        out.push(format!(r#"{{"rule":"tools","{key}":{tools}}}"#));
    }
    if named.budget {
        out.push(r#"{"rule":"budget","tool_calls":N,"tokens":N,"model_turns":N}"#.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<String> {
        ["list_dir", "glob", "grep", "read_file"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn exists(name: &str) -> bool {
        ["src", "docs", "vendor"].contains(&name.to_lowercase().as_str())
    }

    #[test]
    fn places_tools_and_budgets_are_found_where_they_read_as_such() {
        let of = |clause: &str| named(clause, &tools(), &exists);
        assert_eq!(of("never read 'docs'").places, ["docs"]);
        assert_eq!(of("never read docs").places, ["docs"]);
        assert_eq!(of("Don't read the docs folder, ever").places, ["docs"]);
        assert_eq!(of("don't touch docs/ unless asked").places, ["docs"]);
        assert_eq!(of("never use grep on big files").tools, ["grep"]);
        assert!(of("Keep the final answer under 300 tokens").budget);
        assert!(of("Don't spend more than 10 minutes").budget);
        assert!(of("don't read more than 3 files").budget);
        for limit in [
            "budget: €3",
            "spend at most 2$",
            "use at most two dollars",
            "spend at most 2 EUR",
            "at most 2 bucks",
            "read at most ten files",
            "must finish in under an hour",
        ] {
            assert!(of(limit).budget, "{limit}");
        }
        assert!(of("we ship on Fridays").is_empty());
        assert!(of("stay within budget").is_empty());
        assert!(of("Don't connect to evil.com").is_empty());
        assert!(of("don't open https://evil.com/page").is_empty());
        assert!(of("it is private").is_empty());
        assert_eq!(
            typed_form("never read 'docs'", &of("never read 'docs'")),
            [r#"{"rule":"read_scope","never_under":["docs"]}"#]
        );
        assert_eq!(
            typed_form(
                "don't edit docs unless asked",
                &of("don't edit docs unless asked")
            ),
            [r#"{"rule":"write_scope","never_under":["docs"]}"#]
        );
        assert_eq!(
            typed_form(
                "keep out of docs/ for now",
                &of("keep out of docs/ for now")
            )
            .len(),
            2
        );
    }
}
