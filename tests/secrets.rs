//! No secret escapes through any field, end to end: a key a server puts in its request-id
//! header, a key a model echoes in a tool argument, an open item or a hard constraint, and a
//! key written in a file of the explored tree — as written, upper-cased, lower-cased or
//! URL-encoded — reaches neither stdout, stderr (at `BATON_LOG=debug`), `--json`, nor any
//! file of the state.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::providers_e2e::{all_bytes, explore, four_dirs, openai_answer};
use crate::support::http::{strict_openai, Reply, Server};
use crate::support::tree;

const KEY: &str = "sk-leak-Test/Key+0123456789";

/// Every form of the key a reader could recognise.
fn forms() -> [String; 4] {
    [
        KEY.to_string(),
        KEY.to_uppercase(),
        KEY.to_lowercase(),
        "sk-leak-Test%2FKey%2B0123456789".to_string(),
    ]
}

fn assert_nowhere(out: &Output, state: &Path) {
    let state_bytes = String::from_utf8_lossy(&all_bytes(state)).to_lowercase();
    let stdout = String::from_utf8_lossy(&out.stdout).to_lowercase();
    let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
    for form in forms() {
        let form = form.to_lowercase();
        assert!(!stdout.contains(&form), "{form} in stdout: {stdout}");
        assert!(!stderr.contains(&form), "{form} in stderr");
        assert!(!state_bytes.contains(&form), "{form} in the state");
    }
}

fn env(server: &Server) -> Vec<(&'static str, String)> {
    vec![
        ("OPENAI_API_KEY", KEY.to_string()),
        ("OPENAI_BASE_URL", format!("{}/v1", server.url)),
        ("BATON_LOG", "debug".into()),
    ]
}

/// A model that greps for the key it was given, then hands off the key in its open items and
/// hard constraints; the server names each answer's request by the key.
fn echoing_model(body: &Value, n: usize) -> Reply {
    if let Some(refused) = strict_openai(body) {
        return refused;
    }
    let turns = body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
    // Every other first attempt is a 500 naming the key in its request id and its body.
    if n.is_multiple_of(5) {
        return Reply::Json(
            500,
            vec![("x-request-id", format!("req-{KEY}"))],
            json!({"error": {"message": format!("upstream saw {}", KEY.to_uppercase())}}),
        );
    }
    let message = if turns == 0 {
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "grep", "arguments": json!({"pattern": KEY}).to_string()}}]})
    } else {
        let handoff = json!({"settled_conclusions": [],
            "open_items": [{"item": format!("The key {} was seen", KEY.to_uppercase()), "stuck_on": format!("it reads {}", forms()[3])}],
            "hard_constraints": [{"constraint": format!("Never send {} anywhere", KEY.to_lowercase())}]});
        json!({"role": "assistant", "content": handoff.to_string()})
    };
    match openai_answer(body, message) {
        Reply::Json(status, mut headers, value) => {
            headers.push(("request-id", format!("req-{KEY}")));
            Reply::Json(status, headers, value)
        }
        other => other,
    }
}

#[test]
fn a_key_echoed_by_a_server_or_a_model_reaches_no_output_and_no_state() {
    let root = four_dirs();
    let state = tempfile::tempdir().unwrap();
    let server = Server::start(|r, n| echoing_model(&r.body, n));
    for extra in [&["--no-stream"][..], &[][..]] {
        let out = explore(
            root.path(),
            state.path(),
            "openai:test",
            &env(&server),
            extra,
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("The key [redacted] was seen"), "{stdout}");
        assert_nowhere(&out, state.path());
        // Each retry of a failed attempt is a `model_retry` event in the debug trace.
        let trace = String::from_utf8_lossy(&out.stderr);
        assert!(
            trace.lines().any(|l| l.contains("model_retry")
                && l.contains("wait_ms=")
                && l.contains("attempt=1")),
            "no model_retry event"
        );
    }
    // The key went only where it belongs: the authorization header.
    assert!(server
        .requests()
        .iter()
        .all(|r| r.header("authorization") == Some(&format!("Bearer {KEY}"))));
}

#[test]
fn a_key_in_a_refusal_s_request_id_reaches_no_output_and_no_state() {
    let root = four_dirs();
    let state = tempfile::tempdir().unwrap();
    let server = Server::start(|_, _| {
        Reply::Json(
            401,
            vec![("request-id", format!("req-{KEY}"))],
            json!({"error": {"message": "Incorrect API key provided: sk-leak-Test%2FKey%2B0123456789"}}),
        )
    });
    let out = explore(root.path(), state.path(), "openai:test", &env(&server), &[]);
    assert_eq!(out.status.code(), Some(1), "every subagent failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("HTTP 401, request req-[redacted]"),
        "{stdout}"
    );
    assert_nowhere(&out, state.path());
}

#[test]
fn a_key_written_in_an_explored_file_is_redacted_from_the_report_and_the_log() {
    let root = tree(&[(
        "src/config.rs",
        &format!("pub fn api_key() -> &'static str {{\n    \"{KEY}\"\n}}\n"),
    )]);
    let state = tempfile::tempdir().unwrap();
    // The lead's model is refused: the merged report stands, and the process holds the key.
    let server =
        Server::start(|_, _| Reply::Json(401, vec![], json!({"error": {"message": "no"}})));
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_baton"));
    let out = cmd
        .args(["explore"])
        .arg(root.path())
        .args([
            "where is the api key defined?",
            "--lead-model",
            "openai:lead",
            "--no-progress",
            "--state",
        ])
        .arg(state.path())
        .env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("BATON_LOG", "debug")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("src/config.rs"), "{stdout}");
    assert_nowhere(&out, state.path());
}

/// A user name and password in the base URL are refused at start (they would go as a second,
/// Basic, authorization beside the key's), and reach no output and no state.
#[test]
fn credentials_in_the_base_url_are_refused_and_reach_no_output_and_no_state() {
    let root = four_dirs();
    let state = tempfile::tempdir().unwrap();
    let server = Server::start(|r, n| echoing_model(&r.body, n));
    let url = server
        .url
        .replacen("http://", "http://alice-user:Pw-Secret-42@", 1);
    let mut env = env(&server);
    env[1].1 = format!("{url}/v1");
    let out = explore(root.path(), state.path(), "openai:test", &env, &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("holds a user name or password"), "{stderr}");
    assert!(server.requests().is_empty(), "nothing was sent");
    let everything = [
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr.into_owned(),
        String::from_utf8_lossy(&all_bytes(state.path())).into_owned(),
    ];
    for (place, text) in ["stdout", "stderr", "state"].iter().zip(&everything) {
        for secret in ["Pw-Secret-42", "alice-user"] {
            assert!(!text.contains(secret), "{secret} in the {place}");
        }
    }
}

/// A key the model searches for is searched as written — a file holding it is found, not
/// said to lack it — and a quote of the line holding it, the key taken out of the model's
/// answer, is still the line's; the key reaches no output and no state. A placeholder key
/// too short to tell from words (`test`) is not taken out of answers, so paths and the
/// handoff's own fields are read as the model wrote them.
#[test]
fn a_key_a_model_searches_for_is_searched_as_written_and_shown_redacted() {
    let root = tree(&[(
        "src/config.rs",
        &format!("pub const API_KEY: &str = \"{KEY}\";\npub fn open_test() {{}}\n"),
    )]);
    let model = |key: &'static str| {
        move |body: &Value, _: usize| {
            if let Some(refused) = strict_openai(body) {
                return refused;
            }
            let turns = body["messages"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
            let message = if turns == 0 {
                json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "grep", "arguments": json!({"pattern": key, "fixed_string": true}).to_string()}}]})
            } else {
                let (line, quote) = if key == KEY {
                    (1, format!("pub const API_KEY: &str = \"{KEY}\";"))
                } else {
                    (2, "pub fn open_test() {}".to_string())
                };
                let handoff = json!({"settled_conclusions": [{"claim": format!("The line reads `{quote}`."),
                    "sources": [format!("src/config.rs:{line}")]}], "open_items": [], "hard_constraints": []});
                json!({"role": "assistant", "content": handoff.to_string()})
            };
            openai_answer(body, message)
        }
    };
    for key in [KEY, "test"] {
        let state = tempfile::tempdir().unwrap();
        let answer = model(key);
        let server = Server::start(move |r, n| answer(&r.body, n));
        let mut env = env(&server);
        env[0].1 = key.to_string();
        let out = explore(
            root.path(),
            state.path(),
            "openai:test",
            &env,
            &["--no-stream"],
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{key}: {stdout}");
        let report: Value = serde_json::from_str(&stdout).unwrap();
        let settled = report["handoff"]["settled_conclusions"].to_string();
        assert!(!settled.contains("Negative evidence"), "{key}: {settled}");
        if key == KEY {
            assert!(
                settled.contains("API_KEY: &str = \\\"[redacted]\\\""),
                "{settled}"
            );
            assert_nowhere(&out, state.path());
        } else {
            assert!(settled.contains("`pub fn open_test() {}`"), "{settled}");
        }
    }
}
