//! Budgets bind before the spending, end to end, against a server that reports real usage
//! (each request's input counted at four bytes a token, as it arrives): no subagent spends
//! more tokens than `--max-tokens` or a typed token budget allows, and a budget the first
//! call cannot fit in sends nothing at all.

use serde_json::{json, Value};

use crate::providers_e2e::{explore, four_dirs, openai_answer};
use crate::support::http::{strict_openai, Reply, Server};

/// The input a request really holds, at four bytes a token.
fn real_input_tokens(body: &Value) -> u64 {
    let mut bytes = 0usize;
    for m in body["messages"].as_array().into_iter().flatten() {
        bytes += m["content"].as_str().map_or(0, str::len);
        bytes += m["tool_calls"].to_string().len();
    }
    bytes += body["tools"].to_string().len();
    (bytes as u64).div_ceil(4)
}

/// A model that greps, reads and greps again until told to hand off; its usage is the
/// request's real input and the answer's length.
fn spending_model(body: &Value) -> Reply {
    if let Some(refused) = strict_openai(body) {
        return refused;
    }
    let tools_offered = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let message = if tools_offered {
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "grep", "arguments": json!({"pattern": "fn "}).to_string()}}]})
    } else {
        json!({"role": "assistant", "content": json!({"settled_conclusions": [], "open_items": [{"item": "the budget ran out", "stuck_on": "told to hand off"}], "hard_constraints": []}).to_string()})
    };
    let output = message.to_string().len() as u64 / 4;
    let Reply::Json(status, headers, mut value) = openai_answer(body, message) else {
        unreachable!("whole answers are asked for")
    };
    value["usage"] = json!({"prompt_tokens": real_input_tokens(body), "completion_tokens": output});
    Reply::Json(status, headers, value)
}

fn run(extra: &[&str]) -> (std::process::Output, Server) {
    run_with(extra, None)
}

/// As [`run`], the server reporting `usage` instead of the real one when given.
fn run_with(extra: &[&str], usage: Option<Value>) -> (std::process::Output, Server) {
    let root = four_dirs();
    let state = tempfile::tempdir().unwrap();
    let server = Server::start(move |r, _| match (spending_model(&r.body), &usage) {
        (Reply::Json(status, headers, mut value), Some(usage)) => {
            value["usage"] = usage.clone();
            Reply::Json(status, headers, value)
        }
        (reply, _) => reply,
    });
    let env = [("OPENAI_BASE_URL", format!("{}/v1", server.url))];
    let mut args = vec!["--no-stream"];
    args.extend_from_slice(extra);
    let out = explore(root.path(), state.path(), "openai:test", &env, &args);
    (out, server)
}

fn report(out: &std::process::Output) -> baton::Report {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn no_subagent_spends_past_max_tokens() {
    // Room for a few calls of about 2,300 tokens in and up to 4,096 out each, not more.
    let (out, server) = run(&["--max-tokens", "12000"]);
    let report = report(&out);
    assert!(server.requests().len() >= 12);
    for s in &report.subagents {
        assert!(s.tokens <= 12_000, "{} spent {} tokens", s.id, s.tokens);
        assert!(s.model_turns >= 3, "{}: {} turns", s.id, s.model_turns);
        assert!(
            s.state.accepted(),
            "{} handed off within its budget: {:?}",
            s.id,
            s.error
        );
    }
}

#[test]
fn a_budget_the_first_call_cannot_fit_sends_nothing() {
    let (out, server) = run(&["--max-tokens", "1"]);
    assert_eq!(out.status.code(), Some(1), "no handoff: the run failed");
    assert!(server.requests().is_empty(), "a call was sent");
    let report = report(&out);
    assert!(report.subagents.iter().all(|s| s.tokens == 0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("token budget (1) would be passed"),
        "{stdout}"
    );
}

#[test]
fn a_typed_token_budget_reported_enforced_is_enforced() {
    let (out, server) = run(&["--constraint", "Use no more than 9000 tokens"]);
    let report = report(&out);
    let c = &report.constraints[0];
    assert_eq!(c.enforcement, baton::Enforcement::Enforced, "{c:?}");
    assert!(server.requests().len() >= 8);
    for s in &report.subagents {
        assert!(s.tokens <= 9000, "{} spent {} tokens", s.id, s.tokens);
    }
}

/// A usage that does not read as one — `{}`, zeros, negative numbers, strings — is no usage:
/// the call's tokens are estimated, so the budget still binds and the spend is not zero.
#[test]
fn unreadable_usage_is_estimated() {
    for usage in [
        json!({}),
        json!({"prompt_tokens": 0, "completion_tokens": 0}),
        json!({"prompt_tokens": -5, "completion_tokens": -1}),
        json!({"prompt_tokens": "2000", "completion_tokens": "10"}),
    ] {
        let (out, server) = run_with(&["--max-tokens", "12000"], Some(usage.clone()));
        let report = report(&out);
        assert!(server.requests().len() >= 4, "{usage}");
        for s in &report.subagents {
            assert!(
                s.tokens > 1000,
                "{usage}: {} counted {} tokens",
                s.id,
                s.tokens
            );
            assert!(
                s.tokens <= 12_000,
                "{usage}: {} spent {} tokens",
                s.id,
                s.tokens
            );
        }
    }
}
