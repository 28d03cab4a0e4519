//! Tests of `policy::gate`.
use super::*;
use crate::policy::parse_constraint;

/// The policy of these constraints, typed from their text.
fn policy(texts: &[&str]) -> Policy {
    let tools = vec!["grep".to_string(), "read_file".to_string()];
    let entries: Vec<ConstraintEntry> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| ConstraintEntry {
            text: text.to_string(),
            normalised: text.to_lowercase(),
            provenance: "--constraint".into(),
            rules: parse_constraint(text, &tools, &|_| true).rules,
            untyped: Vec::new(),
            warnings: Vec::new(),
            event: i as u64 + 2,
        })
        .collect();
    Policy::from_constraints(&entries)
}

fn on(effect: Effect, resource: &str) -> [Consequence; 1] {
    [Consequence {
        effect,
        resource: resource.to_string(),
    }]
}

fn allows(p: &Policy, effect: Effect, resource: &str, read_only: bool) -> bool {
    p.judge("t", read_only, &on(effect, resource)).is_ok()
}

#[test]
fn paths_are_put_in_normal_form() {
    assert_eq!(normal_path("./a//b/../c").as_deref(), Some("a/c"));
    assert_eq!(normal_path("").as_deref(), Some("."));
    assert_eq!(normal_path("src/").as_deref(), Some("src"));
    assert_eq!(normal_path("\"a b.rs\"").as_deref(), Some("a b.rs"));
    // A backslash is part of a name, as on disk.
    assert_eq!(normal_path("a\\b").as_deref(), Some("a\\b"));
    for outside in ["../x", "a/../../x", "/etc/passwd", "\\x"] {
        assert_eq!(normal_path(outside), None, "{outside}");
    }
    // The gate takes a real path as written: no unquoting.
    assert_eq!(
        crate::text::lexical_path("\"a b.rs\"").as_deref(),
        Some("\"a b.rs\"")
    );
}

#[test]
fn an_only_scope_denies_outside_and_offers_the_scope() {
    let p = policy(&["Only read files under src/"]);
    assert!(allows(&p, Effect::Read, "src/a.rs", true));
    assert!(allows(&p, Effect::Search, "src/net", true));
    assert!(!allows(&p, Effect::Read, "srcs/a.rs", true));
    assert!(!allows(&p, Effect::Read, "../x", true));
    let denial = p.judge("grep", true, &on(Effect::Search, ".")).unwrap_err();
    assert_eq!(denial.category, Category::ReadScope);
    assert_eq!(denial.constraint_event, 2);
    assert_eq!(
        denial.alternative.as_deref(),
        Some("search under `src` instead")
    );
    assert!(denial.message().contains("Only read files under src/"));
    // Writing is not a read scope's business; a tool that does not say what it touches
    // cannot be shown to stay inside it.
    assert!(allows(&p, Effect::Write, "docs/x", false));
    assert!(!allows(&p, Effect::Undeclared, "tool", true));
    assert!(p.walk_keeps("src", true) && p.walk_keeps("src/a.rs", false));
    assert!(!p.walk_keeps("docs", true) && !p.walk_keeps("README.md", false));
    assert_eq!(p.read_roots(), Some(vec!["src".to_string()]));
}

/// Brackets and braces are part of a directory's name unless a `*` or `?` makes the
/// place a glob.
#[test]
fn a_bracketed_directory_is_a_directory() {
    let p = policy(&["never touch app/[slug]/"]);
    assert!(!allows(&p, Effect::Read, "app/[slug]/page.tsx", true));
    assert!(!p.walk_keeps("app/[slug]", true));
    assert!(allows(&p, Effect::Read, "app/s/page.tsx", true));
    let p = policy(&["Never read app/[slug]/*.tsx"]);
    assert!(!allows(&p, Effect::Read, "app/[slug]/page.tsx", true));
    assert!(allows(&p, Effect::Read, "app/[slug]/page.rs", true));
    // After the first wildcard, `[…]` and `{…}` are a glob's.
    let p = policy(&["Never read `app/*/{a,b}.tsx`"]);
    assert!(!allows(&p, Effect::Read, "app/x/a.tsx", true));
    assert!(allows(&p, Effect::Read, "app/x/c.tsx", true));
}

#[test]
fn two_only_scopes_leave_what_both_allow() {
    let p = policy(&["Only read files under src/", "only look at src/net"]);
    assert_eq!(p.read_roots(), Some(vec!["src/net".to_string()]));
    assert!(!allows(&p, Effect::Read, "src/a.rs", true));
    assert!(allows(&p, Effect::Read, "src/net/a.rs", true));
}

#[test]
fn a_never_scope_denies_inside_and_walks_leave_it_out() {
    let p = policy(&["never touch /vendor", "Never read *.env files"]);
    assert!(!allows(&p, Effect::Read, "vendor/x.rs", true));
    assert!(!allows(&p, Effect::Search, "vendor/lib", true));
    assert!(!allows(&p, Effect::Write, "vendor/x.rs", false));
    assert!(allows(&p, Effect::Search, ".", true));
    assert!(!p.walk_keeps("vendor", true));
    assert!(!allows(&p, Effect::Read, "config/prod.env", true));
    assert!(!p.walk_keeps("config/prod.env", false));
    assert!(p.walk_keeps("config", true) && p.walk_keeps("config/app.toml", false));
    assert_eq!(p.read_exclusions(), vec!["*.env", "vendor"]);
}

#[test]
fn writes_network_programs_and_tools_are_judged_by_consequence() {
    let p = policy(&["don't modify anything in migrations"]);
    assert!(!allows(&p, Effect::Write, "migrations/001.sql", false));
    assert!(allows(&p, Effect::Write, "src/a.rs", false));
    assert!(allows(&p, Effect::Read, "migrations/001.sql", true));
    assert!(!allows(&p, Effect::Undeclared, "tool", false));
    assert!(allows(&p, Effect::Undeclared, "tool", true));

    let p = policy(&["read-only"]);
    for effect in [Effect::Write, Effect::Network, Effect::Spawn] {
        assert!(!allows(&p, effect, "x", true), "{effect:?}");
    }
    assert!(allows(&p, Effect::Read, "x", true));
    assert!(allows(&p, Effect::Undeclared, "tool", true));
    assert!(!allows(&p, Effect::Undeclared, "tool", false));

    let p = policy(&["Only connect to api.example.com"]);
    assert!(allows(&p, Effect::Network, "api.example.com", true));
    assert!(allows(&p, Effect::Network, "eu.API.example.com", true));
    let denial = p
        .judge("fetch", true, &on(Effect::Network, "evil.com"))
        .unwrap_err();
    assert_eq!(denial.category, Category::Network);
    assert!(denial.alternative.unwrap().contains("api.example.com"));

    // A tool allow list is the gate's business: the sandbox, which does not know the tool,
    // opens what the read scope allows.
    let p = policy(&["only use read_file and grep"]);
    assert!(p.judge("grep", true, &on(Effect::Search, "src")).is_ok());
    assert!(p.judge("glob", true, &on(Effect::Search, "src")).is_err());
    assert!(p.may_open("", "src/a.rs").is_ok());
    assert!(p.walk_keeps("src/a.rs", false));

    let p = policy(&["don't use grep"]);
    let denial = p
        .judge("grep", true, &on(Effect::Search, "src"))
        .unwrap_err();
    assert_eq!(denial.category, Category::Tool);
    // The call's own consequence is logged; the model is told the tool is forbidden.
    assert_eq!(denial.consequence, on(Effect::Search, "src")[0]);
    assert!(
        denial
            .message()
            .starts_with("denied: the tool `grep` is forbidden"),
        "{}",
        denial.message()
    );
    assert!(p.judge("read_file", true, &on(Effect::Read, "a")).is_ok());

    let p = policy(&["Don't run shell commands"]);
    assert!(!allows(&p, Effect::Spawn, "sh", false));
    assert!(allows(&p, Effect::Write, "a", false));
}

#[test]
fn budgets_lower_a_subagents_limits() {
    let p = policy(&["Use at most 5 tool calls", "no more than 9,000 tokens"]);
    let capped = p.cap(crate::policy::Budget::default());
    assert_eq!(capped.tool_calls, 5);
    assert_eq!(capped.tokens, 9_000);
    assert_eq!(
        capped.model_turns,
        crate::policy::Budget::default().model_turns
    );
    // A budget never raises a limit.
    let low = crate::policy::Budget {
        model_turns: 1,
        tool_calls: 2,
        tokens: 3,
    };
    assert_eq!(p.cap(low), low);
}

/// Under an `only` glob a search runs, and walks keep only the files it matches.
#[test]
fn an_only_glob_lets_searches_run_and_walks_keep_its_files() {
    let rules = crate::policy::rules_from_json(r#"{"rule":"read_scope","only_under":["**/*.rs"]}"#)
        .unwrap();
    let p = Policy::from_constraints(&[ConstraintEntry {
        text: "rust only".into(),
        normalised: "rust only".into(),
        provenance: "--constraint-json".into(),
        rules,
        untyped: Vec::new(),
        warnings: Vec::new(),
        event: 2,
    }]);
    assert!(allows(&p, Effect::Search, ".", true));
    assert!(allows(&p, Effect::Read, "src/a.rs", true));
    assert!(!allows(&p, Effect::Read, "README.md", true));
    assert!(p.walk_keeps("src", true) && p.walk_keeps("src/a.rs", false));
    assert!(!p.walk_keeps("README.md", false));
    assert_eq!(p.read_places(), Some(vec!["**/*.rs".to_string()]));
}
