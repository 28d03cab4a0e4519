//! What a line of cited code is, pure: a comment or code (block comments and docstrings
//! opened above count), inside an open test module or not, which names it calls (searched
//! ones, and those worth tracing in a follow-up).

use std::sync::OnceLock;

use regex::Regex;

use super::relevance::LineMatches;

/// Whether a line is a comment (or a doc comment) rather than code: `//`, `/*`, a block
/// comment's ` * ` line, `# ` (not `#[…]`, `#define`, `#include`), `-- `, a docstring's `"""`.
/// `*ptr = …` and `#define X` are code.
pub(crate) fn is_comment(line: &str) -> bool {
    let t = line.trim_start();
    let then = |prefix: &str| {
        t.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '/', '!']))
    };
    t.starts_with("//")
        || t.starts_with("/*")
        || then("*")
        || then("#")
        || t.starts_with("##")
        || then("--")
        || t.starts_with("\"\"\"")
}

/// Per line of `cited`: whether it is a comment — a comment line, or a line inside a block
/// comment (`/* … */`) or, in Python, a docstring (`"""`) that the lines `before` opened. A
/// `/*` or `*/` inside a string (an odd number of `"` before it) is not one.
pub(super) fn comment_lines(path: &str, before: &str, cited: &str) -> Vec<bool> {
    let python = path.ends_with(".py") || path.ends_with(".pyi");
    let mut block = false;
    let mut doc = false;
    let step = |line: &str, block: &mut bool, doc: &mut bool| {
        let mut rest = line;
        let mut quotes = 0;
        while let Some(i) = rest.find(['"', '/', '*']) {
            let tail = &rest[i..];
            if python && tail.starts_with("\"\"\"") {
                *doc = !*doc;
                rest = &tail[3..];
                continue;
            }
            if tail.starts_with('"') {
                quotes += 1;
            } else if !*block && quotes % 2 == 0 && tail.starts_with("/*") {
                *block = true;
                rest = &tail[2..];
                continue;
            } else if *block && tail.starts_with("*/") {
                *block = false;
                rest = &tail[2..];
                continue;
            }
            rest = &tail[1..];
        }
    };
    for line in before.lines() {
        step(line, &mut block, &mut doc);
    }
    cited
        .lines()
        .map(|line| {
            let inside = block || doc;
            step(line, &mut block, &mut doc);
            inside || is_comment(line)
        })
        .collect()
}

/// The searched names the code of the first `cited` of `lines` calls (comments and
/// definitions passed over), lower-cased, one for each different search that finds one.
pub(super) fn called_searched(
    lines: &[&str],
    cited: usize,
    comments: &[bool],
    matched: &LineMatches<'_>,
) -> Vec<String> {
    let mut called: Vec<String> = Vec::new();
    let mut patterns: Vec<usize> = Vec::new();
    for n in (0..cited.min(lines.len())).filter(|n| !comments.get(*n).copied().unwrap_or(false)) {
        for name in searched_calls(lines[n], |name| matched.holds(n, name)) {
            // Two names one search found (`retry_delay`, `retry_count`) are one searched term.
            if let Some(p) = matched.holding(n, &name).filter(|p| !patterns.contains(p)) {
                patterns.push(p);
                called.push(name);
            }
        }
    }
    called
}

/// The names a line of code calls (`name(`, `name::<T>(`), in order; `fn load_config(`
/// defines the name, it does not call it.
fn calls(line: &str) -> impl Iterator<Item = &str> {
    static CALL: OnceLock<Regex> = OnceLock::new();
    let call = CALL.get_or_init(|| {
        Regex::new(r"([\p{XID_Start}_][\p{XID_Continue}]*)\s*(?:::<[^>]*>)?\(")
            .expect("a valid pattern")
    });
    call.captures_iter(line).filter_map(move |c| {
        let name = c.get(1)?;
        let before = line[..name.start()].trim_end();
        let defined = ["fn", "def", "function", "func"]
            .iter()
            .any(|k| before.ends_with(k));
        (!defined).then_some(name.as_str())
    })
}

/// The names a line of code calls that a search matched (`retry_delay(3)`), lower-cased:
/// each is a use.
pub(super) fn searched_calls(line: &str, searched: impl Fn(&str) -> bool) -> Vec<String> {
    calls(line)
        .filter(|name| searched(name))
        .map(str::to_lowercase)
        .collect()
}

/// Whether the lines before a place leave it inside a test module: a `#[cfg(test)]` whose
/// next item is a `mod … {` that no line at the left margin has closed since. (An item of
/// its own under `#[cfg(test)]` — a `use`, a helper — opens no module.)
pub(super) fn in_test_module(before: &str) -> bool {
    let lines: Vec<&str> = before.lines().collect();
    let Some(attr) = lines.iter().rposition(|l| l.trim() == "#[cfg(test)]") else {
        return false;
    };
    let mut rest = lines[attr + 1..].iter();
    let opens_module = rest
        .by_ref()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with("#["))
        .is_some_and(|l| {
            let t = l.trim_start();
            (t.starts_with("mod ") || t.starts_with("pub mod ") || t.starts_with("pub(crate) mod "))
                && t.trim_end().ends_with('{')
        });
    opens_module && !rest.any(|l| l.starts_with('}'))
}

/// Names too common to trace: a language's prelude and its commonest methods.
const PRELUDE: &[&str] = &[
    "Some",
    "None",
    "Self",
    "self",
    "String",
    "Vec",
    "Option",
    "Result",
    "Box",
    "Arc",
    "Rc",
    "clone",
    "into",
    "unwrap",
    "expect",
    "iter",
    "push",
    "insert",
    "get",
    "len",
    "new",
    "from",
    "default",
    "format",
    "println",
    "write",
    "as_ref",
    "as_str",
    "to_string",
    "is_some",
    "is_none",
    "is_empty",
    "map",
    "and_then",
    "ok_or",
    "unwrap_or",
    "collect",
    "to_owned",
    "borrow",
    "lock",
    "Default",
    "Debug",
    "Clone",
    "return",
    "match",
    "true",
    "false",
    "write_all",
    "flush",
    "is_ok",
    "is_err",
    "from_millis",
    "from_secs",
    "sleep",
    "spawn",
    "join",
    "send",
    "recv",
    "read_to_string",
    "to_vec",
    "extend",
    "contains",
    "starts_with",
    "ends_with",
    "split",
    "trim",
    "parse",
    "with_capacity",
    "append",
    "remove",
    "print",
];

/// The names a finding's quoted code uses that are worth tracing: identifiers with an
/// underscore or an inner capital, or called (`name(`), at least four characters long.
pub(super) fn names_in(claim: &str) -> Vec<String> {
    static IDENT: OnceLock<Regex> = OnceLock::new();
    let ident = IDENT.get_or_init(|| {
        Regex::new(r"[\p{XID_Start}_][\p{XID_Continue}]*(\s*\()?").expect("a valid pattern")
    });
    let mut out = Vec::new();
    for (i, quoted) in claim.split('`').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        for m in ident.find_iter(quoted) {
            let text = m.as_str();
            let called = text.ends_with('(');
            let name = text.trim_end_matches('(').trim_end();
            let shaped = name.contains('_') && name.trim_matches('_').contains('_')
                || name.chars().skip(1).any(|c| c.is_ascii_uppercase())
                    && name.chars().any(|c| c.is_ascii_lowercase());
            if name.chars().count() >= 4
                && (shaped || called)
                && !PRELUDE.contains(&name)
                && !out.iter().any(|n: &String| n == name)
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The names the code of `cited` calls (`name(`), at least four characters long: the
/// callees a finding's lines lead to. Comment lines are passed over.
#[cfg(test)]
pub(super) fn callees_in(cited: &str) -> Vec<String> {
    callees_of(&calls_by_line(cited))
}

/// The different names of `calls` ([`calls_by_line`]), in order.
pub(super) fn callees_of(calls: &[(usize, String)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, name) in calls {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// Every call in the code of `cited` (comment lines and definitions passed over), with the
/// index of its line, in order.
pub(super) fn calls_by_line(cited: &str) -> Vec<(usize, String)> {
    const KEYWORDS: &[&str] = &[
        "while", "match", "return", "loop", "else", "assert", "panic",
    ];
    let mut out = Vec::new();
    for (n, line) in cited.lines().enumerate() {
        if is_comment(line) {
            continue;
        }
        for name in calls(line) {
            if name.chars().count() >= 4 && !PRELUDE.contains(&name) && !KEYWORDS.contains(&name) {
                out.push((n, name.to_string()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_told_from_code_in_every_common_form() {
        for comment in [
            "// x", "/// x", "  * x", " */", "# x", "#", "-- x", "/* x */",
        ] {
            assert!(is_comment(comment), "{comment}");
        }
        for code in [
            "*delay = next(*delay);",
            "#define RETRY 3",
            "#[test]",
            "x -= 1;",
        ] {
            assert!(!is_comment(code), "{code}");
        }
        // A block comment opened above, or a docstring in Python, holds the cited lines.
        let cited = "fn beta() {}\n*/\nfn gamma() {}\n";
        assert_eq!(comment_lines("a.rs", "/* old:", cited), [true, true, false]);
        assert_eq!(
            comment_lines("a.rs", "let g = \"**/*.rs\";", "fn beta() {}\n"),
            [false],
            "a /* inside a string opens nothing"
        );
        assert_eq!(comment_lines("a.py", "\"\"\"Doc.", "def beta():\n"), [true]);
        assert_eq!(comment_lines("a.rs", "\"\"\"", "fn beta() {}\n"), [false]);
    }

    #[test]
    fn only_a_test_module_still_open_makes_test_code() {
        assert!(in_test_module(
            "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() {\n"
        ));
        assert!(!in_test_module("#[cfg(test)]\nuse std::fmt;\nfn a() {\n"));
        assert!(!in_test_module("#[cfg(test)]\nmod tests {\n}\nfn a() {\n"));
        assert!(!in_test_module(""));
    }

    #[test]
    fn names_worth_tracing_are_taken_from_quoted_code() {
        let names = names_in(
            "In `start` (fn in a/run.rs), line 4: `let pages = flush_pages(&mut self.cache).unwrap();` — mentions `Some`",
        );
        assert_eq!(names, ["flush_pages"]);
        assert!(names_in("no quotes: flush_pages()").is_empty());
    }

    #[test]
    fn names_are_whole_unicode_identifiers() {
        assert_eq!(
            names_in("`démarrer_moteur()` calls `allumer_étincelle(x)`"),
            ["démarrer_moteur", "allumer_étincelle"]
        );
        assert_eq!(
            callees_in("    allumer_étincelle();\n"),
            ["allumer_étincelle"]
        );
    }
}
