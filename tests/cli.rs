//! The `baton` binary: exit codes, one-line errors, the report on stdout.

use std::process::Command;

use crate::support::rust_tree;

fn baton() -> Command {
    Command::new(env!("CARGO_BIN_EXE_baton"))
}

#[test]
fn missing_directory_exits_2_with_one_line() {
    let out = baton()
        .args(["explore", "/no/such/dir/anywhere", "where?"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no such directory"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn empty_question_exits_2_with_one_line() {
    let dir = rust_tree();
    let out = baton()
        .arg("explore")
        .arg(dir.path())
        .arg("   ")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("question is empty"), "{stderr}");
}

#[test]
fn bad_flag_exits_2() {
    let out = baton()
        .args(["explore", ".", "q", "--agents", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn markdown_report_on_stdout() {
    let dir = rust_tree();
    let out = baton()
        .arg("explore")
        .arg(dir.path())
        .arg("Where is next_delay defined?")
        .arg("--no-progress")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let report = baton::Handoff::parse(&stdout).expect("stdout is a valid handoff");
    assert!(stdout.starts_with("## Settled conclusions\n"));
    assert!(stdout.contains("[src/net/retry.rs:"), "{stdout}");
    assert!(!report.settled_conclusions.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("handed off"),
        "summary line on stderr: {stderr}"
    );
}

#[test]
fn json_report_is_one_document() {
    let dir = rust_tree();
    let out = baton()
        .arg("explore")
        .arg(dir.path())
        .arg("Where is next_delay defined?")
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    for key in [
        "run_id",
        "question",
        "root",
        "handoff",
        "subagents",
        "usage",
    ] {
        assert!(value.get(key).is_some(), "missing {key}");
    }
    let handoff = &value["handoff"];
    assert!(handoff["settled_conclusions"][0]["sources"][0]
        .as_str()
        .unwrap()
        .contains(':'));
    assert!(handoff["hard_constraints"].as_array().unwrap().is_empty());
    let sub = &value["subagents"][0];
    for key in ["id", "role", "scope", "state", "tool_calls", "tokens"] {
        assert!(sub.get(key).is_some(), "subagent missing {key}");
    }
    assert_eq!(sub["state"], "handed_off");
    for key in ["model_calls", "tool_calls", "tokens_in", "tokens_out"] {
        assert!(value["usage"][key].as_u64().unwrap() > 0, "usage.{key}");
    }
}

#[cfg(unix)]
#[test]
fn interrupt_cancels_and_still_prints_the_report() {
    let dir = rust_tree();
    let child = baton()
        .arg("explore")
        .arg(dir.path())
        .arg("Where is next_delay defined?")
        .args(["--json", "--offline-latency-ms", "3000", "--agents", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("the report is printed");
    assert_eq!(value["cancelled"], true);
}
