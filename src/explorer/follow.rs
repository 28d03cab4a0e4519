//! Following a call: for the functions the explorer settled on, find who calls them — the
//! link a "how does A reach B" question needs — and pick the call site worth reading.

use super::conclude::{enclosing, read_lines};
use super::rank::{self, Candidate};
use super::Exchange;

/// Most settled functions whose callers are searched.
const MOST_CALLEES: usize = 2;

/// A function the explorer settled on, with its block (as far as was read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Callee {
    pub(super) name: String,
    pub(super) path: String,
    pub(super) start: u32,
    pub(super) end: u32,
}

/// Where a callee is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CallSite {
    pub(super) callee: String,
    pub(super) path: String,
    pub(super) line: u32,
}

/// The functions among the picks (definitions of `fn`, `def`, `function`), best first.
pub(super) fn callees(picks: &[Candidate], reads: &[&Exchange<'_>]) -> Vec<Callee> {
    picks
        .iter()
        .filter_map(|p| {
            let def = p.definition.as_ref()?;
            if !matches!(def.keyword.as_str(), "fn" | "def" | "function") || def.name.len() < 3 {
                return None;
            }
            let end = read_lines(reads, &p.path, p.line)
                .and_then(|lines| enclosing(&lines, p.line))
                .map(|(_, _, end)| end)
                .unwrap_or(p.line);
            Some(Callee {
                name: def.name.clone(),
                path: p.path.clone(),
                start: p.line,
                end,
            })
        })
        .take(MOST_CALLEES)
        .collect()
}

/// The regex (case-sensitive) for a call of `name`: `name(`, `.name(`, `Type::name(`.
pub(super) fn caller_pattern(name: &str) -> String {
    format!("\\b{}\\s*\\(", regex::escape(name))
}

/// The call site most worth reading: not the callee itself, not another definition of the
/// same name; source before tests; then the one with most of the question around it
/// (`near(path, line)` counts the question's terms near a line); the callee's own file
/// breaks ties.
pub(super) fn best_site(
    callee: &Callee,
    grep_content: &str,
    near: &dyn Fn(&str, u32) -> usize,
) -> Option<CallSite> {
    let mut best: Option<(f64, CallSite)> = None;
    for (path, line, text) in rank::parse_hits(grep_content) {
        let inside_callee = path == callee.path && line >= callee.start && line <= callee.end;
        if inside_callee || rank::definition(&text).is_some() {
            continue;
        }
        let same_file = if path == callee.path { 0.5 } else { 0.0 };
        let score = rank::path_factor(&path) * (1.0 + near(&path, line) as f64) + same_file;
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((
                score,
                CallSite {
                    callee: callee.name.clone(),
                    path,
                    line,
                },
            ));
        }
    }
    best.map(|(_, site)| site)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callee_itself_and_other_definitions_are_not_call_sites() {
        let callee = Callee {
            name: "skip_entry".into(),
            path: "src/walk.rs".into(),
            start: 10,
            end: 20,
        };
        let grep = "src/walk.rs:12:    self.skip_entry(x)\nsrc/walk.rs:30:    fn skip_entry(&self) {\ntests/t.rs:5:    w.skip_entry(y)\nsrc/walk.rs:50:        if self.skip_entry(&ent) {\n";
        let near = |_: &str, line: u32| usize::from(line == 50);
        let site = best_site(&callee, grep, &near).unwrap();
        assert_eq!((site.path.as_str(), site.line), ("src/walk.rs", 50));
        let re = regex::Regex::new(&caller_pattern("skip_entry")).unwrap();
        assert!(re.is_match("if self.skip_entry (&ent)"));
        assert!(!re.is_match("should_skip_entry(x)"));
    }
}
