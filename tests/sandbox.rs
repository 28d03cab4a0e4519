//! The workspace sandbox: no tool reaches outside the explored root.

use baton::{ToolCall, ToolRegistry, Workspace};
use serde_json::json;

use crate::support::tree;

fn run(ws: &Workspace, name: &str, arguments: serde_json::Value) -> baton::ToolResult {
    crate::support::execute(
        &ToolRegistry::workspace(),
        ws,
        ToolCall {
            id: "t.1".into(),
            name: name.into(),
            arguments,
        },
    )
}

#[test]
fn parent_paths_are_refused() {
    let outer = tree(&[("secret.txt", "top secret\n"), ("root/a.txt", "a\n")]);
    let ws = Workspace::open(&outer.path().join("root")).unwrap();
    for tool in ["read_file", "list_dir"] {
        let r = run(&ws, tool, json!({"path": "../secret.txt"}));
        assert!(r.is_error, "{tool}: {}", r.content);
        assert!(
            r.content.contains("leaves the workspace root"),
            "{}",
            r.content
        );
    }
    let r = run(&ws, "grep", json!({"pattern": "secret", "paths": [".."]}));
    assert!(r.is_error && !r.content.contains("top secret"));
    // A glob from `/` or through `..` is refused, not answered "no files match".
    for pattern in ["/etc/*", "../**", "src/../../*"] {
        let r = run(&ws, "glob", json!({ "pattern": pattern }));
        assert!(
            r.is_error && r.content.contains("leaves the root"),
            "{pattern}: {}",
            r.content
        );
    }
}

#[test]
fn absolute_paths_are_refused() {
    let dir = tree(&[("a.txt", "a\n")]);
    let ws = Workspace::open(dir.path()).unwrap();
    let absolute = dir.path().join("a.txt").display().to_string();
    let r = run(&ws, "read_file", json!({"path": absolute}));
    assert!(
        r.is_error && r.content.contains("absolute"),
        "{}",
        r.content
    );
    let r = run(&ws, "read_file", json!({"path": "/etc/passwd"}));
    assert!(r.is_error && !r.content.contains("root:"), "{}", r.content);
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_root_are_refused() {
    let outer = tree(&[
        ("outside/secret.txt", "top secret\n"),
        ("root/a.txt", "a\n"),
    ]);
    let root = outer.path().join("root");
    std::os::unix::fs::symlink(
        outer.path().join("outside/secret.txt"),
        root.join("link.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outer.path().join("outside"), root.join("dirlink")).unwrap();
    let ws = Workspace::open(&root).unwrap();
    let r = run(&ws, "read_file", json!({"path": "link.txt"}));
    assert!(
        r.is_error && r.content.contains("outside the workspace"),
        "{}",
        r.content
    );
    let r = run(&ws, "read_file", json!({"path": "dirlink/secret.txt"}));
    assert!(
        r.is_error && !r.content.contains("top secret"),
        "{}",
        r.content
    );
    // Walking tools never follow the links either.
    let r = run(&ws, "grep", json!({"pattern": "secret"}));
    assert!(!r.content.contains("top secret"), "{}", r.content);
    let r = run(
        &ws,
        "grep",
        json!({"pattern": "secret", "paths": ["dirlink"]}),
    );
    assert!(r.is_error, "{}", r.content);
}

#[test]
fn reads_are_numbered_capped_and_observed() {
    let body: String = (1..=500).map(|i| format!("line {i}\n")).collect();
    let dir = tree(&[("big.txt", body.as_str()), ("bin.dat", "a\0b")]);
    let ws = Workspace::open(dir.path()).unwrap();
    let r = run(
        &ws,
        "read_file",
        json!({"path": "big.txt", "start_line": 10, "end_line": 12}),
    );
    assert!(r.content.contains("    10\tline 10") && r.content.contains("    12\tline 12"));
    assert!(!r.content.contains("line 13"));
    assert_eq!(
        r.observations,
        vec![baton::Observation::Lines {
            call_id: "t.1".into(),
            path: "big.txt".into(),
            start: 10,
            end: 12
        }]
    );
    let r = run(
        &ws,
        "read_file",
        json!({"path": "big.txt", "start_line": 1, "end_line": 500}),
    );
    assert!(r.content.contains("stopped at line 400"));
    let r = run(&ws, "read_file", json!({"path": "bin.dat"}));
    assert!(r.is_error && r.content.contains("binary"));
    let r = run(&ws, "grep", json!({"pattern": "line", "max_matches": 5}));
    assert!(
        r.content.contains("output capped: 5 of 500"),
        "{}",
        r.content
    );
}

#[test]
fn gitignored_files_are_not_searched() {
    let dir = tree(&[
        (".gitignore", "target/\n"),
        ("target/out.txt", "needle\n"),
        ("src/a.txt", "needle\n"),
    ]);
    let ws = Workspace::open(dir.path()).unwrap();
    let r = run(&ws, "grep", json!({"pattern": "needle"}));
    assert!(r.content.contains("src/a.txt:1:needle"));
    assert!(!r.content.contains("target/out.txt"), "{}", r.content);
}
