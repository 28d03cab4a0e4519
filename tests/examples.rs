//! The examples in examples/, run as a user runs them (`cargo run --example NAME`: here the
//! binaries `cargo test` built beside this one), each output checked; and each written with
//! baton alone — no dependency a user would have to add.

use std::path::PathBuf;
use std::process::Command;

/// The example binaries cargo built with the tests: `target/<profile>/examples/NAME`.
fn example(name: &str) -> Command {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/tests-HASH -> target/<profile>/examples/NAME
    let dir: PathBuf = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples"))
        .unwrap();
    let built = dir.join(name);
    if built.exists() {
        let mut command = Command::new(built);
        command.current_dir(env!("CARGO_MANIFEST_DIR"));
        command
    } else {
        // Not built beside the tests (a test runner that builds no examples): cargo runs it.
        let mut command = Command::new(env!("CARGO"));
        command
            .args(["run", "--quiet", "--example", name, "--"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        command
    }
}

/// Runs an example to its end: its stdout, after checking it exited 0.
fn run(name: &str, args: &[&str]) -> String {
    let out = example(name).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{name}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn embed_prints_every_event_in_order_then_the_report() {
    let out = run("embed", &[]);
    let events: Vec<(u64, &str)> = out
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let seq = parts.next()?.parse().ok()?;
            Some((seq, parts.next()?))
        })
        .collect();
    let seqs: Vec<u64> = events.iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{out}");
    assert_eq!(events.first().map(|e| e.1), Some("run_started"));
    assert_eq!(events.last().map(|e| e.1), Some("run_finished"));
    assert!(events.iter().any(|e| e.1 == "subagent_spawned"));
    assert!(out.contains("## Settled conclusions\n"), "{out}");
    // It answers about this repository: the quotation check is in the validator.
    assert!(out.contains("src/handoff/"), "{out}");
    assert!(out.contains("handed off"), "{out}");
}

#[test]
fn custom_tool_cites_its_records_and_the_contract_rejects_a_fabricated_one() {
    let out = run("custom_tool", &[]);
    assert!(
        out.contains("sa1: rejected by the contract: [record_not_observed] `ticket:T-9` was not returned by any of your tool calls"),
        "{out}"
    );
    assert!(
        out.contains("- T-2 blocks the release: it is labelled `blocker` and `the login page times out` [ticket:T-2]"),
        "{out}"
    );
    assert!(!out.contains("[ticket:T-9]\n"), "{out}");
    assert!(out.contains("sa1 triager repaired"), "{out}");
    assert!(out.contains("sa2 verifier handed off"), "{out}");
}

#[test]
fn custom_role_runs_a_security_reviewer_beside_the_explorers() {
    let out = run("custom_role", &[]);
    let reviewers: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(" security_reviewer tools: "))
        .collect();
    assert_eq!(reviewers.len(), 1, "{out}");
    assert!(reviewers[0].ends_with("tools: grep, read_file"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains(" explorer tools: list_dir, glob, grep, read_file")),
        "{out}"
    );
    // The reviewer's subtask is answered: where the key is read.
    assert!(out.contains("src/model/"), "{out}");
}

#[test]
fn custom_model_counts_the_calls_the_report_counts() {
    let out = run("custom_model", &[]);
    let count = |prefix: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{prefix} in {out}"))
    };
    let model = count("calls counted by the model:");
    assert!(model > 0);
    assert_eq!(model, count("calls counted by the report:"));
    assert!(out.contains("model: counting(offline)"), "{out}");
    assert!(out.contains("src/net/retry.rs"), "{out}");
}

#[test]
fn approval_grants_one_call_and_denies_another() {
    let out = run("approval", &[]);
    for line in [
        "ap1 asks: file_ticket {\"title\":\"login times out after the 2.4 upgrade\"}",
        "ap1 granted by the application",
        "ap1 used by sa1.1",
        "ap2 asks: file_ticket {\"title\":\"delete every closed ticket\"}",
        "ap2 denied by the application",
        "- The timeout is filed as T-4: `[open] login times out after the 2.4 upgrade` [ticket:T-4]",
        "tickets filed: login times out after the 2.4 upgrade",
    ] {
        assert!(out.lines().any(|l| l.starts_with(line)), "{line} in {out}");
    }
    // The denied call was never made: one ticket filed, that one.
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("tickets filed:"))
            .collect::<Vec<_>>(),
        ["tickets filed: login times out after the 2.4 upgrade"],
        "{out}"
    );
}

/// Every example is written with baton alone: each path it names starts at `baton`, `std` or
/// itself — a user copying one adds no dependency.
#[test]
fn the_examples_need_no_dependency_but_baton() {
    for name in [
        "embed",
        "custom_tool",
        "custom_role",
        "custom_model",
        "approval",
    ] {
        let path = format!("{}/examples/{name}.rs", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines().map(str::trim) {
            let Some(used) = line.strip_prefix("use ") else {
                continue;
            };
            let root = used
                .split("::")
                .next()
                .unwrap_or("")
                .trim_start_matches('{');
            assert!(
                ["baton", "std", "self", "super", "crate"].contains(&root),
                "{name}: `{line}` needs a dependency of its own"
            );
        }
        assert!(!text.contains("extern crate"), "{name}");
        // Attributes and paths written out name only baton.
        for crate_name in ["tokio::", "serde_json::", "async_trait::"] {
            for (at, _) in text.match_indices(crate_name) {
                assert!(
                    text[..at].ends_with("baton::"),
                    "{name}: `{crate_name}` used without baton:: at byte {at}"
                );
            }
        }
    }
}

/// The README's library section is built from `examples/embed.rs`: every line of its code
/// block is a line of the example, as written there.
#[test]
fn the_readme_s_library_code_is_the_embed_example_s() {
    let readme = include_str!("../README.md");
    let example = include_str!("../examples/embed.rs");
    let section = readme
        .split("## Using baton as a library")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap();
    let code: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("    "))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert!(code.len() >= 10, "{code:?}");
    let lines: Vec<&str> = example.lines().map(str::trim).collect();
    for line in code {
        assert!(
            lines.contains(&line),
            "`{line}` is not in examples/embed.rs"
        );
    }
}
