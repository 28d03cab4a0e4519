//! Tests of `policy::english`.
use super::*;
use crate::policy::rules::build::{budget, read, write};

fn none_hosts() -> Rule {
    Rule::Network {
        allowed_hosts: vec![],
    }
}

/// The plain names the tests' tree holds at its root.
fn in_tree(name: &str) -> bool {
    [
        "src",
        "docs",
        "vendor",
        "tests",
        "migrations",
        "third_party",
        "generated",
        "web",
        "budget",
        "main",
        "api",
    ]
    .contains(&name)
}

fn tools() -> Vec<String> {
    ["list_dir", "glob", "grep", "read_file"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The read-scope shapes that are typed, each to the rules it states, with nothing left over.
#[test]
fn common_phrasings_are_typed() {
    let cases: Vec<(&str, Vec<Rule>)> = vec![
        ("Only read files under src/", vec![read(&["src"], &[])]),
        ("only look at src/net", vec![read(&["src/net"], &[])]),
        (
            "Do not read anything outside src",
            vec![read(&["src"], &[])],
        ),
        (
            "Do not search outside the src directory",
            vec![read(&["src"], &[])],
        ),
        ("Don't look anywhere but src/", vec![read(&["src"], &[])]),
        (
            "Do not read anything other than src/",
            vec![read(&["src"], &[])],
        ),
        ("Don't read files besides src/", vec![read(&["src"], &[])]),
        (
            "Do not look at anything apart from src/",
            vec![read(&["src"], &[])],
        ),
        ("Do not read beyond src/", vec![read(&["src"], &[])]),
        (
            "Don't leave src/",
            vec![read(&["src"], &[]), write(&["src"], &[])],
        ),
        (
            "never touch /vendor",
            vec![read(&[], &["vendor"]), write(&[], &["vendor"])],
        ),
        (
            "Stay out of `third_party/`",
            vec![read(&[], &["third_party"]), write(&[], &["third_party"])],
        ),
        (
            "don't modify anything in migrations",
            vec![write(&[], &["migrations"])],
        ),
        ("Never edit files under docs.", vec![write(&[], &["docs"])]),
        ("No changes under docs/ please", vec![write(&[], &["docs"])]),
        ("Never modify anything.", vec![write(&[], &["."])]),
        ("Don't write to disk", vec![write(&[], &["."])]),
        ("Never read *.env files", vec![read(&[], &["*.env"])]),
        (
            "Never read files matching the glob *.env",
            vec![read(&[], &["*.env"])],
        ),
        (
            "Never read secrets.json or .env files",
            vec![read(&[], &["**/secrets.json", "*.env", ".env*"])],
        ),
        (
            "Never modify anything under /migrations, /vendor or /docs",
            vec![write(&[], &["migrations", "vendor", "docs"])],
        ),
        (
            "Don't read from docs or tests",
            vec![read(&[], &["docs", "tests"])],
        ),
        (
            "Never read from docs, vendor or tests",
            vec![read(&[], &["docs", "vendor", "tests"])],
        ),
        (
            "Don't touch anything in vendor, third_party, or generated",
            vec![
                read(&[], &["vendor", "third_party", "generated"]),
                write(&[], &["vendor", "third_party", "generated"]),
            ],
        ),
        ("no network access", vec![none_hosts()]),
        (
            "Only connect to api.example.com",
            vec![Rule::Network {
                allowed_hosts: vec!["api.example.com".into()],
            }],
        ),
        (
            "No network access except api.example.com",
            vec![Rule::Network {
                allowed_hosts: vec!["api.example.com".into()],
            }],
        ),
    ];
    assert_typed(cases);
}

/// The other typed shapes — read-only, no programs, tool lists, budgets, hosts, places off
/// limits — each to the rules it states, with nothing left over.
#[test]
fn common_phrasings_of_tools_budgets_and_places_are_typed() {
    let cases: Vec<(&str, Vec<Rule>)> = vec![
        ("read-only", vec![Rule::NoEffects]),
        ("This run is read only.", vec![Rule::NoEffects]),
        ("Don't run shell commands", vec![Rule::NoSpawn]),
        (
            "don't use grep",
            vec![Rule::Tools {
                allow: vec![],
                deny: vec!["grep".into()],
            }],
        ),
        (
            "Never use GREP",
            vec![Rule::Tools {
                allow: vec![],
                deny: vec!["grep".into()],
            }],
        ),
        (
            "Only use read_file and grep",
            vec![Rule::Tools {
                allow: vec!["read_file".into(), "grep".into()],
                deny: vec![],
            }],
        ),
        (
            "Use at most 20 tool calls",
            vec![budget(Some(20), None, None)],
        ),
        (
            "fewer than 10 tool calls",
            vec![budget(Some(9), None, None)],
        ),
        (
            "no more than 50,000 tokens",
            vec![budget(None, Some(50_000), None)],
        ),
        ("Spend under $2.50", vec![budget(None, None, Some(2.5))]),
        // Clauses: at sentences, `;`, a comma or "and"/"or" before a clause of its own.
        (
            "Only read files under src/ and use at most 20 tool calls",
            vec![read(&["src"], &[]), budget(Some(20), None, None)],
        ),
        (
            "Only read files under src/, no network access",
            vec![read(&["src"], &[]), none_hosts()],
        ),
        (
            "Only read files under src/ and no network access",
            vec![read(&["src"], &[]), none_hosts()],
        ),
        (
            "stay within src/",
            vec![read(&["src"], &[]), write(&["src"], &[])],
        ),
        (
            "Stay away from docs/",
            vec![read(&[], &["docs"]), write(&[], &["docs"])],
        ),
        ("Never read .env", vec![read(&[], &["**/.env"])]),
        ("Don't read the docs folder", vec![read(&[], &["docs"])]),
        ("never modify anything in docs", vec![write(&[], &["docs"])]),
        ("never read .md files", vec![read(&[], &["*.md", ".md*"])]),
        ("Never read \"docs/\".", vec![read(&[], &["docs"])]),
        (
            "at most 20 tool calls, under $2",
            vec![budget(Some(20), None, None), budget(None, None, Some(2.0))],
        ),
        (
            "Never read files under docs. Never touch vendor/",
            vec![
                read(&[], &["docs"]),
                read(&[], &["vendor"]),
                write(&[], &["vendor"]),
            ],
        ),
        (
            "Only read and write files under src/",
            vec![read(&["src"], &[]), write(&["src"], &[])],
        ),
        // Issue 20, item 6: common phrasings that were left untyped.
        (
            "Avoid docs/",
            vec![read(&[], &["docs"]), write(&[], &["docs"])],
        ),
        ("Avoid reading anything in docs", vec![read(&[], &["docs"])]),
        (
            "please avoid editing vendor/",
            vec![write(&[], &["vendor"])],
        ),
        ("Reading docs/ is forbidden", vec![read(&[], &["docs"])]),
        (
            "Editing files under docs is not allowed",
            vec![write(&[], &["docs"])],
        ),
        (
            "docs/ is off limits",
            vec![read(&[], &["docs"]), write(&[], &["docs"])],
        ),
        ("Never, ever read docs/", vec![read(&[], &["docs"])]),
        ("Don't ever read docs/", vec![read(&[], &["docs"])]),
        // As written: letter case follows the tree where the run starts (the coordinator).
        ("NEVER READ DOCS/", vec![read(&[], &["DOCS"])]),
    ];
    assert_typed(cases);
}

/// Each text typed to exactly these rules, with nothing left over.
fn assert_typed(cases: Vec<(&str, Vec<Rule>)>) {
    for (text, rules) in cases {
        let typed = parse(text, &tools(), &in_tree);
        assert_eq!(typed.rules, rules, "{text}");
        assert!(typed.untyped.is_empty(), "{text}: {:?}", typed.untyped);
    }
}

/// A condition, a contrast, a double negative, a quantity, a budget about something else,
/// a host deny-list or two readings at once: not typed — never a wrong rule claimed as
/// enforced.
#[test]
fn what_reads_two_ways_is_not_typed() {
    for text in [
        "Always use British spelling",
        "The mustard must be yellow.",
        "Cite every claim twice",
        "Never guess.",
        "Never answer in French.",
        "Always answer in English.",
        "Do not touch src/ except src/net/",
        "Do not read tests except tests/fixtures",
        "Never use read_file on docs/",
        "Only read src/ but not docs/",
        "Only read src/ except src/generated",
        "Only read src/ minus src/generated",
        "Don't look anywhere not in src/",
        "Don't read files that are not in src/",
        "Don't read files that aren't in src/",
        "Never read anything that isn't in src/",
        "Don't read files unless they're in src/",
        "Do not open files that do not live in src/",
        "Read whatever you want but never modify src/",
        "You can read anything but only write to out/",
        "Don't use any tool except grep",
        "No network except github.com but not gist.github.com",
        "Don't connect to evil.com",
        "Keep the final answer under 300 tokens",
        "Each summary at most 100 tokens",
        "Use at most 100 tool calls in total",
        "at most 20 tool calls and 50k tokens",
        "Do not read files larger than 1MB",
        "Never read more than 3 files under src/",
        "Don't read anything in docs/ unless it's README.md",
        "Only read files under src/ within 5 minutes",
        "read anything but never modify src/",
        "Look anywhere but never edit docs/",
        "Don't read tests, the answer is in src",
        "Never read docs/, src/ is fine",
        "Only read src/, docs/ is off limits",
        "Don't look outside src/, including tests/",
        "Don't read outside src/, e.g. docs/ or vendor/",
        "Don't read outside src/ except src/generated",
        "Don't forget to look in docs/",
        "Reading docs/ is not prohibited",
        "Reading docs/ is no longer forbidden",
        "Never modify the HTTP client",
        "Don't change the fetch logic",
        "Never touch the process module",
        "This is not a read-only task",
        "Only look at Rust files",
        "Only read files in the current directory",
        "Don't look beyond the first match",
        "Never look in hidden directories",
        "Don't look at Python files",
        "Don't read test files in src/",
        "Never edit main.rs in src/bin",
        "Only read files under src/ that end in .rs",
        "Use at most 5 tool calls unless you need more",
        "At most 10 calls to grep",
        "Don't use grep for everything",
        "No network access, only localhost",
        "stay within budget",
        "stay in scope",
        "don't leave comments",
        "don't read anything outside the working directory",
        "don't read anything outside the codebase",
        "only look at the diff",
        "only look at errors",
        "never read anything but Rust",
        "don't search the web",
        "never commit to main",
        "don't change the API",
        "don't update dependencies",
        "don't touch prod",
        "don't read binaries",
        "don't go into detail",
        "don't read the README",
        "never read files matching secret",
        "don't delete files in migrations",
        "don't create files",
        "Unless the user asks, never modify migrations",
        "If possible, don't read docs/",
        "Except for README.md, don't read outside src/",
        "Never touch vendor",
        "never read docs",
        "only read a.rs",
        "stay within budget",
        "don't leave main",
        "never write to main",
        "no edits to main",
        "don't access the api",
        "don't open https://evil.com/page",
        "never access http://localhost:8080/admin",
        "never browse github.com/foo",
        "only consult docs.rs",
        "As long as the tests pass, don't modify docs",
        "In case of doubt, don't read vendor",
        "Where possible, don't read vendor/",
        "Ideally, never read docs/",
        "By default, don't read vendor/",
        "For now, don't read vendor/",
        "Initially, stay within src/",
        "If the user asks, modify docs. Otherwise, never modify docs.",
        "Don't read vendor/, not yet",
        "Aside from README.md, don't read outside src/",
        "With the exception of README.md, don't read outside src/",
        "Don't read outside src/. The one exception is README.md.",
        "Never modify docs/. Except docs/CHANGELOG.md.",
        "Stay out of vendor/, read vendor/README.md only",
        "Only read src/, use docs/ only as a last resort",
        "Never touch vendor/. Reading it is fine.",
        "Only read src/ and look at docs/",
    ] {
        let typed = parse(text, &tools(), &in_tree);
        assert!(typed.rules.is_empty(), "{text}: {:?}", typed.rules);
        assert!(!typed.untyped.is_empty(), "{text}");
    }
}

/// Clause by clause: the typed part is enforced, the rest is said to be untyped.
#[test]
fn the_untyped_part_of_a_constraint_is_kept() {
    let cases: Vec<(&str, Vec<Rule>, Vec<&str>)> = vec![
        (
            "Only look at src/net; we always ship on Fridays.",
            vec![read(&["src/net"], &[])],
            vec!["we always ship on Fridays"],
        ),
        (
            "Never look at tests, only src",
            vec![],
            vec!["Never look at tests, only src"],
        ),
        // An untyped clause holding a tool, a place or an exception leaves nothing typed:
        // the typed clauses alone would say something else.
        (
            "Do not use grep, use read_file instead",
            vec![],
            vec!["Do not use grep, use read_file instead"],
        ),
        (
            "Don't run shell commands or read outside src/",
            vec![],
            vec!["Don't run shell commands or read outside src/"],
        ),
        (
            "Only read src/ and skip src/generated",
            vec![],
            vec!["Only read src/ and skip src/generated"],
        ),
        // Issue 20, item 6: an explanation in parentheses or after a dash is a clause of its
        // own, carried as a standing condition; the rule it explains is typed.
        (
            "Never read docs/ (it is private)",
            vec![read(&[], &["docs"])],
            vec!["it is private"],
        ),
        (
            "Never read docs/ \u{2014} it is private",
            vec![read(&[], &["docs"])],
            vec!["it is private"],
        ),
        (
            "Never read docs/ (because they are drafts)",
            vec![read(&[], &["docs"])],
            vec!["because they are drafts"],
        ),
        // Not an explanation: the parenthesis qualifies the place, so nothing is typed.
        (
            "Never read docs/ (the generated ones)",
            vec![],
            vec!["Never read docs/ the generated ones"],
        ),
        (
            "Never read docs/ \u{2014} except docs/README.md",
            vec![],
            vec!["Never read docs/ \u{2014} except docs/README.md"],
        ),
    ];
    for (text, rules, untyped) in cases {
        let typed = parse(text, &tools(), &in_tree);
        assert_eq!(typed.rules, rules, "{text}");
        assert_eq!(typed.untyped, untyped, "{text}");
    }
}
