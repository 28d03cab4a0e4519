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
    use baton::checkpoint::EventStore;
    let dir = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let child = baton()
        .arg("explore")
        .arg(dir.path())
        .arg("Where is next_delay defined?")
        .args([
            "--json",
            "--offline-latency-ms",
            "3000",
            "--agents",
            "1",
            "--state",
        ])
        .arg(state.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once a subagent is durably under way (its model call takes 3 s).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
        let Ok(store) = baton::SqliteStore::open(state.path()) else {
            continue;
        };
        let Some(run) = store.runs().ok().and_then(|r| r.into_iter().next()) else {
            continue;
        };
        let spawned = store
            .events(&run.run_id)
            .map(|e| e.iter().any(|e| e.event.kind() == "subagent_spawned"))
            .unwrap_or(false);
        if spawned {
            break;
        }
    }
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

fn validate_file(
    root: &std::path::Path,
    name: &str,
    content: &[u8],
    extra: &[&str],
) -> std::process::Output {
    let file = root.join(name);
    std::fs::write(&file, content).unwrap();
    baton()
        .arg("validate")
        .arg(&file)
        .arg("--root")
        .arg(root)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn validate_accepts_a_valid_handoff() {
    let dir = rust_tree();
    let text = "## Settled conclusions\n- `next_delay` doubles the delay. [src/net/retry.rs:18-21]\n## Open items\n## Hard constraints\n- none\n";
    let out = validate_file(dir.path(), "ok.md", text.as_bytes(), &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("valid (markdown form): 1 settled conclusion"));
}

#[test]
fn validate_lists_violations_with_lines_and_exits_1() {
    let dir = rust_tree();
    let text = "## Settled conclusions\n- `next_delay` triples it. [src/net/retry.rs:18-40]\n- see above\n## Open items\n";
    let out = validate_file(dir.path(), "bad.md", text.as_bytes(), &[]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("bad.md:2: [line_out_of_range]"), "{stdout}");
    assert!(stdout.contains("bad.md:3: [source_missing]"), "{stdout}");
    assert!(stdout.contains("[constraints_omitted]"), "{stdout}");
    assert!(stdout.trim_end().ends_with("violation(s)"), "{stdout}");
}

#[test]
fn validate_json_output_is_one_document() {
    let dir = rust_tree();
    let text = r#"{"settled_conclusions":[{"claim":"`RetryPolicy` is here","sources":["src/net/retry.rs:6"]}],"open_items":[]}"#;
    let out = validate_file(dir.path(), "h.json", text.as_bytes(), &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["form"], "json");
    assert_eq!(value["valid"], false);
    assert_eq!(value["violations"][0]["code"], "json_shape");
}

#[test]
fn validate_unusable_input_exits_2() {
    let dir = rust_tree();
    let out = validate_file(
        dir.path(),
        "latin1.md",
        b"## Settled conclusions\n\xe9\xff\n",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not UTF-8"));
    let out = validate_file(
        dir.path(),
        "prose.md",
        b"Just some notes about the code.\n",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither form"));
    let big = vec![b'a'; 2 * 1024 * 1024];
    let out = validate_file(dir.path(), "big.md", &big, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("limit"));
    let out = baton()
        .args(["validate", "/no/such/handoff.md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no such file"));
}

/// `--constraint-json`: a typed rule is enforced and reported with its provenance; JSON that
/// is not a rule is one line on stderr and exit 2, before any state is made.
#[test]
fn constraint_json_is_enforced_or_refused_in_one_line() {
    let dir = rust_tree();
    let state = tempfile::tempdir().unwrap();
    let out = baton()
        .arg("explore")
        .arg(dir.path())
        .arg("where is the retry delay computed?")
        .args([
            "--json",
            "--no-progress",
            "--constraint-json",
            r#"{"rule":"read_scope","only_under":["src/net"]}"#,
            "--state",
        ])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let constraint = &report["constraints"][0];
    assert_eq!(constraint["provenance"], "--constraint-json");
    assert_eq!(constraint["enforcement"], "enforced");
    for s in report["subagents"].as_array().unwrap() {
        assert!(s["scope"].as_str().unwrap().contains("src/net"), "{s}");
    }
    for bad in [
        "{not json",
        r#"{"rule":"read_scope"}"#,
        r#"{"rule":"read_scope","only_under":["../x"]}"#,
    ] {
        let fresh = tempfile::tempdir().unwrap();
        let never_made = fresh.path().join("state");
        let out = baton()
            .arg("explore")
            .arg(dir.path())
            .arg("where?")
            .args(["--constraint-json", bad, "--state"])
            .arg(&never_made)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("baton: --constraint-json:"), "{stderr}");
        assert!(!never_made.exists(), "{bad}");
    }
}

/// Issue 20, items 1 and 9 through `baton validate`: a quote under a `call:ID` cannot be
/// checked outside its run, so the handoff is not valid; a quote holding a zero-width space
/// and one holding a right-to-left override are printed escaped alike.
#[test]
fn validate_refuses_unchecked_call_quotes_and_escapes_invisible_characters_alike() {
    let dir = rust_tree();
    let text = "## Settled conclusions\n- `open_db` wipes the disk with `rm -rf /`. [call:sa1.2]\n- It reads `a\u{200B}b` and `c\u{202E}d`. [src/net/retry.rs:18]\n## Open items\n## Hard constraints\n- none\n";
    let out = validate_file(dir.path(), "calls.md", text.as_bytes(), &[]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("calls.md:2: [quote_unchecked]"), "{stdout}");
    assert!(stdout.contains("calls.md:3: [quote_not_found]"), "{stdout}");
    assert!(
        stdout.contains("a\\u{200b}b") && stdout.contains("c\\u{202e}d"),
        "{stdout}"
    );
    assert!(
        !stdout.contains('\u{200B}') && !stdout.contains('\u{202E}'),
        "{stdout}"
    );
}

/// The user's global git excludes file is not read: a file it ignores is still searched, and
/// one that is a FIFO does not hang the run.
#[cfg(unix)]
#[test]
fn the_global_git_excludes_file_is_not_read() {
    let dir = crate::support::tree(&[(
        "src/zeta.rs",
        "pub fn frobnicator_zeta() -> u32 {\n    7\n}\n",
    )]);
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let excludes = home.path().join("excludes");
    std::fs::write(&excludes, "*.rs\n").unwrap();
    std::fs::create_dir_all(home.path().join("xdg/git")).unwrap();
    std::fs::write(home.path().join("xdg/git/ignore"), "*.rs\n").unwrap();
    let fifo = home.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for file in [&excludes, &fifo] {
        std::fs::write(
            home.path().join(".gitconfig"),
            format!("[core]\n\texcludesFile = {}\n", file.display()),
        )
        .unwrap();
        let out = baton()
            .arg("explore")
            .arg(dir.path())
            .arg("where is frobnicator_zeta defined?")
            .args(["--no-progress", "--state"])
            .arg(home.path().join("state.db"))
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("xdg"))
            .env_remove("GIT_CONFIG_GLOBAL")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("[src/zeta.rs:1"), "{stdout}");
    }
}

/// The binary runs with glibc's mmap threshold fixed at 128 KiB, unless the variable is set
/// already: it is read from the running process's environment while it waits on a model.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_fixes_the_mmap_threshold_unless_it_is_set() {
    use std::net::TcpListener;
    let dir = rust_tree();
    let state = tempfile::tempdir().unwrap();
    for (given, seen) in [(None, "131072"), (Some("65536"), "65536")] {
        // A model server that takes the connection and never answers.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let mut cmd = baton();
        cmd.arg("explore")
            .arg(dir.path())
            .arg("where is the retry delay computed?")
            .args(["--model", "openai:gpt-4o-mini", "--no-progress", "--state"])
            .arg(state.path().join("state.db"))
            .env("OPENAI_API_KEY", "sk-test")
            .env("OPENAI_BASE_URL", &url)
            .env_remove("MALLOC_MMAP_THRESHOLD_")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Some(value) = given {
            cmd.env("MALLOC_MMAP_THRESHOLD_", value);
        }
        listener.set_nonblocking(true).unwrap();
        let mut child = cmd.spawn().unwrap();
        let started = std::time::Instant::now();
        let _held = loop {
            if let Ok((held, _)) = listener.accept() {
                break held;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("baton ended before calling its model: {status}");
            }
            assert!(started.elapsed().as_secs() < 60, "no model call");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let environ = std::fs::read(format!("/proc/{}/environ", child.id())).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        let vars: Vec<String> = environ
            .split(|b| *b == 0)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .filter(|v| v.starts_with("MALLOC_MMAP_THRESHOLD_="))
            .collect();
        assert_eq!(vars, [format!("MALLOC_MMAP_THRESHOLD_={seen}")]);
    }
}

/// A stderr that cannot be written (a full device) loses the summary line, never the report,
/// and is no panic: the run exits as it would have.
#[cfg(target_os = "linux")]
#[test]
fn a_stderr_that_cannot_be_written_is_no_panic_and_keeps_the_report() {
    let dir = crate::support::rust_tree();
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    let out = baton()
        .args(["explore", "--no-progress"])
        .arg(dir.path())
        .arg("where is the retry delay computed?")
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("## Settled conclusions"));
    // Bad input too: its one line is lost, its exit code is not.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = baton()
        .args(["explore", "/no/such/dir", "q"])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A run's lock file that is a FIFO or a link is refused with one line, never waited on or
/// followed.
#[cfg(unix)]
#[test]
fn a_lock_file_that_is_a_fifo_or_a_link_is_refused() {
    let dir = crate::support::rust_tree();
    let state = tempfile::tempdir().unwrap();
    let out = baton()
        .args(["explore", "--no-progress", "--json", "--state"])
        .arg(state.path())
        .arg(dir.path())
        .arg("where is the retry delay computed?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = report["run_id"].as_str().unwrap().to_string();
    let locks = state.path().join("locks");
    let lock = std::fs::read_dir(&locks)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(&lock).unwrap();
    let made = Command::new("mkfifo").arg(&lock).status();
    if !made.is_ok_and(|s| s.success()) {
        return;
    }
    let resume = |state: &std::path::Path| {
        let mut child = baton()
            .args(["resume", "--no-progress", "--state"])
            .arg(state)
            .arg(&run)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        for _ in 0..300 {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
                return (status.code(), err);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = child.kill();
        panic!("resume waited on the lock file");
    };
    let (code, err) = resume(state.path());
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("not a regular file") || err.contains("lock"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // A link in the lock's place is not followed: its target is not created.
    std::fs::remove_file(&lock).unwrap();
    let target = state.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, &lock).unwrap();
    let (code, err) = resume(state.path());
    assert_eq!(code, Some(1), "{err}");
    assert!(!target.exists());
}

/// A `--roles` explorer that reserves effects for approval is refused: nothing on the command
/// line could decide a request, and each call would wait until it expired.
#[test]
fn an_explorer_role_that_needs_approvals_is_refused() {
    let tree = crate::support::rust_tree();
    let roles = tempfile::tempdir().unwrap();
    let explorer = include_str!("../contracts/roles/explorer.toml");
    std::fs::write(
        roles.path().join("explorer.toml"),
        explorer.replacen(
            "\n\n[[optional]]",
            "\napprove = [\"write\"]\n\n[[optional]]",
            1,
        ),
    )
    .unwrap();
    let out = baton()
        .arg("explore")
        .arg(tree.path())
        .arg("where is next_delay?")
        .arg("--roles")
        .arg(roles.path())
        .args(["--no-progress", "--state"])
        .arg(tree.path().join(".state"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("role `explorer`: field `approve`: the command line cannot decide"),
        "{said}"
    );
    assert_eq!(said.lines().count(), 1, "{said}");
}
