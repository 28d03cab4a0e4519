//! `contracts/openapi.json` against the server: every route and method the router takes and
//! no other, every request body's fields as the server's types read them, and every status
//! and response field a real scenario over a loopback socket elicits — each one documented,
//! each documented one elicited.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use crate::support::rust_tree;
use crate::support::serve::{client, send, Answer, Serve};

const TOKEN: &str = "openapi-test-token";

fn doc() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/contracts/openapi.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A `$ref` followed to its schema.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")],
        None => schema,
    }
}

fn names(schema: &Value, key: &str) -> BTreeSet<String> {
    match key {
        "properties" => schema["properties"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default(),
        _ => schema[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// A request body type's fields and required fields, as serde reads it (schemars).
fn rust_fields<T: schemars::JsonSchema>() -> (BTreeSet<String>, BTreeSet<String>) {
    let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap();
    (names(&schema, "properties"), names(&schema, "required"))
}

#[test]
fn request_bodies_have_the_fields_the_server_reads() {
    use baton::server::{
        DecisionRequest, ForgetRequest, ForkRequest, Limits, MergeRequest, ResumeRequest,
        RunRequest,
    };
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    for (name, (props, required)) in [
        ("RunRequest", rust_fields::<RunRequest>()),
        ("Limits", rust_fields::<Limits>()),
        ("ResumeRequest", rust_fields::<ResumeRequest>()),
        ("DecisionRequest", rust_fields::<DecisionRequest>()),
        ("ForkRequest", rust_fields::<ForkRequest>()),
        ("MergeRequest", rust_fields::<MergeRequest>()),
        ("ForgetRequest", rust_fields::<ForgetRequest>()),
    ] {
        assert_eq!(names(&schemas[name], "properties"), props, "{name}: fields");
        assert_eq!(
            names(&schemas[name], "required"),
            required,
            "{name}: required"
        );
        assert_eq!(
            schemas[name]["additionalProperties"], false,
            "{name}: unknown fields refused"
        );
    }
}

/// One request of the scenario and what came back.
struct Seen {
    method: &'static str,
    route: &'static str,
    answer: Answer,
}

struct Scenario<'a> {
    client: reqwest::Client,
    serve: &'a Serve,
    seen: Vec<Seen>,
    /// A run of the state whose root is outside the server's allowed roots.
    outside: String,
}

impl Scenario<'_> {
    async fn go(
        &mut self,
        method: &'static str,
        route: &'static str,
        path: &str,
        body: Option<String>,
        auth: bool,
    ) -> &Answer {
        let headers: &[(&str, &str)] = if body.is_some() {
            &[("content-type", "application/json")]
        } else {
            &[]
        };
        self.go_with(method, route, path, body, auth, headers).await
    }

    /// As [`Scenario::go`], with these headers (and no content type unless they give one).
    async fn go_with(
        &mut self,
        method: &'static str,
        route: &'static str,
        path: &str,
        body: Option<String>,
        auth: bool,
        headers: &[(&str, &str)],
    ) -> &Answer {
        let url = self.serve.url(path);
        let mut request = match method {
            "GET" => self.client.get(url),
            _ => self.client.post(url),
        };
        if auth {
            request = request.bearer_auth(TOKEN);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        let answer = send(request).await;
        self.seen.push(Seen {
            method,
            route,
            answer,
        });
        &self.seen.last().unwrap().answer
    }

    /// Grants (or the first time, with `deny_one`, denies) what `run` waits on until it ends.
    async fn decide_until_done(&mut self, run: &str) {
        for _ in 0..2000 {
            let state = self
                .go(
                    "GET",
                    "/v1/runs/{id}",
                    &format!("/v1/runs/{run}"),
                    None,
                    true,
                )
                .await
                .body["state"]
                .clone();
            if state != "running" {
                return;
            }
            let pending = self
                .go(
                    "GET",
                    "/v1/runs/{id}/approvals",
                    &format!("/v1/runs/{run}/approvals"),
                    None,
                    true,
                )
                .await
                .body["approvals"]
                .clone();
            for request in pending.as_array().unwrap() {
                let aid = request["id"].as_str().unwrap().to_string();
                let path = format!("/v1/runs/{run}/approvals/{aid}");
                let granted = self
                    .go(
                        "POST",
                        "/v1/runs/{id}/approvals/{aid}",
                        &path,
                        Some(json!({"decision": "grant"}).to_string()),
                        true,
                    )
                    .await;
                assert_eq!(granted.status, 200, "{}", granted.body);
                let again = self
                    .go(
                        "POST",
                        "/v1/runs/{id}/approvals/{aid}",
                        &path,
                        Some(json!({"decision": "deny"}).to_string()),
                        true,
                    )
                    .await;
                assert_eq!(again.status, 409, "{}", again.body);
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("{run} did not end");
    }

    async fn settle(&mut self, run: &str) {
        for _ in 0..1200 {
            let answer = self
                .go(
                    "GET",
                    "/v1/runs/{id}",
                    &format!("/v1/runs/{run}"),
                    None,
                    true,
                )
                .await;
            if answer.body["state"] != "running" {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("{run} did not end");
    }
}

/// Every route of the scenario, its statuses: refusals, then two runs that wait on approvals.
/// Fork, merge and forget on a finished run `b`: each answered, each refusal a problem.
async fn branches(s: &mut Scenario<'_>, b: &str) {
    let post = |rest: &str| format!("/v1/runs/{b}/{rest}");
    let fork = s
        .go(
            "POST",
            "/v1/runs/{id}/fork",
            &post("fork"),
            Some(json!({"at": 3, "question": "where is the cache?"}).to_string()),
            true,
        )
        .await;
    assert_eq!(fork.status, 201, "{}", fork.body);
    let forked = fork.body["run_id"].as_str().unwrap().to_string();
    for body in [
        json!({"at": 100000}).to_string(),
        json!({"at": 3, "question": "x".repeat(4000)}).to_string(),
    ] {
        s.go(
            "POST",
            "/v1/runs/{id}/fork",
            &post("fork"),
            Some(body),
            true,
        )
        .await;
    }
    let outside = s.outside.clone();
    for with in [forked.as_str(), b, outside.as_str(), &"x".repeat(4000)] {
        let body = Some(json!({ "with": with }).to_string());
        s.go("POST", "/v1/runs/{id}/merge", &post("merge"), body, true)
            .await;
    }
    assert_eq!(s.seen[s.seen.len() - 4].answer.status, 201);
    let run = s
        .go("GET", "/v1/runs/{id}", &format!("/v1/runs/{b}"), None, true)
        .await;
    let cited = run.body["report"]["handoff"]["settled_conclusions"][0]["sources"][0]
        .as_str()
        .unwrap()
        .to_string();
    for (source, reason) in [
        (cited.as_str(), "licence withdrawn"),
        ("src/none.rs", "x"),
        (cited.as_str(), &"x".repeat(4000)),
    ] {
        let body = Some(json!({ "source": source, "reason": reason }).to_string());
        s.go("POST", "/v1/runs/{id}/forget", &post("forget"), body, true)
            .await;
    }
    let forgot = &s.seen[s.seen.len() - 3].answer;
    assert_eq!(forgot.status, 200, "{}", forgot.body);
    assert_eq!(forgot.body["tombstone"]["source"], cited.as_str());
}

async fn scenario(s: &mut Scenario<'_>) {
    let start = |root: &str| {
        Some(json!({"kind": "explore", "root": root, "question": "where is next_delay?", "limits": {"shards": 1}}).to_string())
    };
    s.go("GET", "/healthz", "/healthz", None, false).await;
    s.go("GET", "/openapi.json", "/openapi.json", None, true)
        .await;
    s.go("GET", "/openapi.json", "/openapi.json", None, false)
        .await;
    for (body, auth) in [
        (Some("{not json".to_string()), true),
        (start("/"), true),
        (start("missing"), true),
        (
            Some(json!({"kind": "explore", "root": ".", "question": "x".repeat(4000)}).to_string()),
            true,
        ),
        (start("."), false),
    ] {
        s.go("POST", "/v1/runs", "/v1/runs", body, auth).await;
    }
    s.go("GET", "/v1/runs", "/v1/runs?limit=x", None, true)
        .await;
    // What a web page could send: another Host or Origin (403), a body not JSON (415).
    for (route, methods) in baton::server::ROUTES
        .iter()
        .filter(|(r, _)| *r != "/healthz")
    {
        let path = route.replace("{id}", "run-x").replace("{aid}", "ap1");
        for method in *methods {
            for header in [("host", "evil.example"), ("origin", "http://evil.example")] {
                let answer = s.go_with(method, route, &path, None, true, &[header]).await;
                assert_eq!(
                    answer.status, 403,
                    "{method} {route} {header:?}: {}",
                    answer.body
                );
            }
            if *method == "POST" && !route.ends_with("/cancel") {
                let plain = [("content-type", "text/plain")];
                let answer = s
                    .go_with(method, route, &path, Some("{}".into()), true, &plain)
                    .await;
                assert_eq!(answer.status, 415, "{method} {route}: {}", answer.body);
            }
        }
    }
    s.go("GET", "/v1/runs", "/v1/runs", None, false).await;
    let unknown = "run-unknown";
    for (method, route, rest) in [
        ("GET", "/v1/runs/{id}", ""),
        ("GET", "/v1/runs/{id}/events", "/events"),
        ("POST", "/v1/runs/{id}/cancel", "/cancel"),
        ("POST", "/v1/runs/{id}/resume", "/resume"),
        ("GET", "/v1/runs/{id}/brief", "/brief"),
        ("GET", "/v1/runs/{id}/approvals", "/approvals"),
        ("POST", "/v1/runs/{id}/approvals/{aid}", "/approvals/ap1"),
        ("POST", "/v1/runs/{id}/fork", "/fork"),
        ("POST", "/v1/runs/{id}/merge", "/merge"),
        ("POST", "/v1/runs/{id}/forget", "/forget"),
    ] {
        let body = (method == "POST").then(|| json!({"decision": "grant"}).to_string());
        let body = match rest {
            "/resume" => Some("{}".into()),
            "/fork" => Some(json!({"at": 1}).to_string()),
            "/merge" => Some(json!({"with": "run-unknown"}).to_string()),
            "/forget" => Some(json!({"source": "src/lib.rs", "reason": "x"}).to_string()),
            _ => body,
        };
        // A run of the state outside the allowed roots (403), an id that is not UTF-8 (400).
        let outside = s.outside.clone();
        for id in [unknown, "%FF", outside.as_str()] {
            s.go(
                method,
                route,
                &format!("/v1/runs/{id}{rest}"),
                body.clone(),
                true,
            )
            .await;
        }
        s.go(
            method,
            route,
            &format!("/v1/runs/{unknown}{rest}"),
            body,
            false,
        )
        .await;
    }

    // Run B: every read waits for approval; each is granted.
    let b = s
        .go("POST", "/v1/runs", "/v1/runs", start("."), true)
        .await
        .body["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let decide = format!("/v1/runs/{b}/approvals/ap-none");
    s.go(
        "POST",
        "/v1/runs/{id}/approvals/{aid}",
        &decide,
        Some(json!({"decision": "maybe"}).to_string()),
        true,
    )
    .await;
    s.go(
        "POST",
        "/v1/runs/{id}/approvals/{aid}",
        &decide,
        Some(json!({"decision": "grant"}).to_string()),
        true,
    )
    .await;
    s.go(
        "POST",
        "/v1/runs/{id}/approvals/{aid}",
        &decide,
        Some(format!(
            "{{\"decision\":\"deny\",\"reason\":\"{}\"}}",
            "x".repeat(4000)
        )),
        true,
    )
    .await;
    s.decide_until_done(&b).await;
    branches(s, &b).await;
    s.go("GET", "/v1/runs", "/v1/runs?limit=1", None, true)
        .await;
    s.go(
        "GET",
        "/v1/runs/{id}/events",
        &format!("/v1/runs/{b}/events"),
        None,
        true,
    )
    .await;
    s.go(
        "GET",
        "/v1/runs/{id}/brief",
        &format!("/v1/runs/{b}/brief"),
        None,
        true,
    )
    .await;
    s.go(
        "POST",
        "/v1/runs/{id}/cancel",
        &format!("/v1/runs/{b}/cancel"),
        None,
        true,
    )
    .await;
    s.go(
        "POST",
        "/v1/runs/{id}/resume",
        &format!("/v1/runs/{b}/resume"),
        Some(json!({"model": "x", "extra": 1}).to_string()),
        true,
    )
    .await;
    s.go(
        "POST",
        "/v1/runs/{id}/resume",
        &format!("/v1/runs/{b}/resume"),
        Some(format!("{{\"model\":\"{}\"}}", "x".repeat(4000))),
        true,
    )
    .await;

    // Run A waits on its first approval: the one slot is taken.
    let a = s
        .go("POST", "/v1/runs", "/v1/runs", start("."), true)
        .await
        .body["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    // A run in progress cannot have a source withdrawn: it holds its log.
    s.go(
        "POST",
        "/v1/runs/{id}/forget",
        &format!("/v1/runs/{a}/forget"),
        Some(json!({"source": "src/net/retry.rs", "reason": "licence"}).to_string()),
        true,
    )
    .await;
    s.go("POST", "/v1/runs", "/v1/runs", start("."), true).await;
    s.go(
        "POST",
        "/v1/runs/{id}/resume",
        &format!("/v1/runs/{b}/resume"),
        Some("{}".into()),
        true,
    )
    .await;
    s.go(
        "POST",
        "/v1/runs/{id}/resume",
        &format!("/v1/runs/{a}/resume"),
        Some("{}".into()),
        true,
    )
    .await;
    s.go(
        "POST",
        "/v1/runs/{id}/cancel",
        &format!("/v1/runs/{a}/cancel"),
        None,
        true,
    )
    .await;
    s.settle(&a).await;
    // Resumed, then cancelled again.
    s.go(
        "POST",
        "/v1/runs/{id}/resume",
        &format!("/v1/runs/{a}/resume"),
        None,
        true,
    )
    .await;
    s.go(
        "POST",
        "/v1/runs/{id}/cancel",
        &format!("/v1/runs/{a}/cancel"),
        None,
        true,
    )
    .await;
    s.settle(&a).await;
    s.go(
        "GET",
        "/v1/runs/{id}/events",
        &format!("/v1/runs/{a}/events"),
        None,
        true,
    )
    .await;
    s.go(
        "GET",
        "/v1/runs/{id}/events",
        &format!("/v1/runs/{a}/events?after=x"),
        None,
        true,
    )
    .await;
}

#[test]
fn every_route_field_and_status_is_documented_and_every_documented_one_is_served() {
    let tree = rust_tree();
    let roles = tempfile::tempdir().unwrap();
    let explorer = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/contracts/roles/explorer.toml"
    ))
    .unwrap();
    std::fs::write(
        roles.path().join("explorer.toml"),
        explorer.replace("mandatory = [", "approve = [\"read\"]\nmandatory = ["),
    )
    .unwrap();
    let state = tempfile::tempdir().unwrap();
    let roles_dir = roles.path().display().to_string();
    // The command line runs on a tree the server does not allow, in the same state.
    let elsewhere = rust_tree();
    let outside_run = crate::support::serve::cli_explore(state.path(), elsewhere.path())["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let serve = Serve::start(
        state.path(),
        tree.path(),
        &[
            "--max-runs",
            "1",
            "--max-body-bytes",
            "2048",
            "--roles",
            &roles_dir,
        ],
        &[("BATON_TOKEN", TOKEN)],
    );
    let doc = doc();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let seen = runtime.block_on(async {
        let mut s = Scenario {
            client: client(),
            serve: &serve,
            seen: Vec::new(),
            outside: outside_run,
        };
        // The document served is the file.
        let served = s
            .go("GET", "/openapi.json", "/openapi.json", None, true)
            .await;
        assert_eq!(served.body, doc);
        // Routes: the router takes exactly the methods of ROUTES on each path, the document
        // exactly ROUTES.
        for (path, methods) in baton::server::ROUTES {
            let concrete = path.replace("{id}", "run-x").replace("{aid}", "ap1");
            for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
                let request = s
                    .client
                    .request(method.parse().unwrap(), serve.url(&concrete))
                    .bearer_auth(TOKEN);
                let answer = send(request).await;
                let routed = answer.status != 405 && answer.body["code"] != "no_route";
                assert_eq!(
                    routed,
                    methods.contains(&method),
                    "{method} {path}: {}",
                    answer.status
                );
            }
        }
        // `/mcp` is served (by the MCP transport: not the API's no_route).
        let mcp = send(s.client.post(serve.url("/mcp")).bearer_auth(TOKEN)).await;
        assert_ne!(mcp.body["code"], "no_route", "{}", mcp.status);
        assert_ne!(mcp.status, 404);
        scenario(&mut s).await;
        s.seen
    });
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(p, ops)| {
            ops.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.to_uppercase(), p.clone()))
        })
        .collect();
    let routed: BTreeSet<(String, String)> = baton::server::ROUTES
        .iter()
        .flat_map(|(p, ms)| ms.iter().map(move |m| (m.to_string(), p.to_string())))
        .collect();
    // `/mcp` is the MCP transport's (rmcp), nested beside the API: documented, not in ROUTES.
    let mcp: BTreeSet<(String, String)> = ["POST", "GET", "DELETE"]
        .iter()
        .map(|m| (m.to_string(), "/mcp".to_string()))
        .collect();
    assert_eq!(
        documented,
        routed.union(&mcp).cloned().collect(),
        "the document's routes are the router's"
    );

    // Statuses: each seen one documented, each documented one seen.
    let mut statuses: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for s in &seen {
        let key = (s.method.to_string(), s.route.to_string());
        let op = &doc["paths"][s.route][s.method.to_lowercase()];
        let status = s.answer.status.to_string();
        assert!(
            op["responses"].get(&status).is_some()
                || (s.answer.status >= 500 && op["responses"].get("default").is_some()),
            "{} {} answered {status}, undocumented: {}",
            s.method,
            s.route,
            s.answer.body
        );
        statuses.entry(key).or_default().insert(status.clone());
        // Fields: the body's top-level fields are the documented schema's.
        let response = &op["responses"][&status];
        let Some((media, content)) = response["content"]
            .as_object()
            .and_then(|c| c.iter().next())
        else {
            continue;
        };
        let schema = resolve(&doc, &content["schema"]);
        if media == "text/event-stream" || s.route == "/openapi.json" {
            continue;
        }
        let body = s
            .answer
            .body
            .as_object()
            .unwrap_or_else(|| panic!("{} {}: not JSON", s.method, s.route));
        let fields: BTreeSet<String> = body.keys().cloned().collect();
        assert_eq!(
            fields,
            names(schema, "properties"),
            "{} {} {status}: fields",
            s.method,
            s.route
        );
        assert!(names(schema, "required").is_subset(&fields));
        assert_eq!(
            s.answer.header("content-type"),
            Some(media.as_str()),
            "{} {}",
            s.method,
            s.route
        );
    }
    // Codes: each problem answered carries a listed code with its listed status.
    for s in seen.iter().filter(|s| s.answer.status >= 400) {
        let code = s.answer.body["code"].as_str().unwrap_or_default();
        assert!(
            baton::server::CODES
                .iter()
                .any(|(c, st, _)| *c == code && *st == s.answer.status),
            "{} {}: {} {code} is not listed",
            s.method,
            s.route,
            s.answer.status
        );
    }
    for (method, path) in &routed {
        let op = &doc["paths"][path][method.to_lowercase()];
        let listed: BTreeSet<String> = op["responses"]
            .as_object()
            .unwrap()
            .keys()
            // A request for approval expires after 15 minutes unanswered: 410 is shown at the
            // library (approvals::an_expired_approval_is_history_not_permission), not here.
            .filter(|k| *k != "default" && !(path.ends_with("{aid}") && *k == "410"))
            .cloned()
            .collect();
        let got = statuses
            .get(&(method.clone(), path.clone()))
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            listed, got,
            "{method} {path}: documented statuses against those served"
        );
    }
}

/// The string literals that follow each `Problem::` constructor in the server's source: the
/// codes it can answer with.
fn codes_in_source() -> BTreeSet<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/server");
    let mut codes = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for (at, _) in text.match_indices("Problem::") {
            let rest = &text[at..];
            let name_end = rest.find('(').unwrap_or(0);
            if !matches!(
                &rest[9..name_end],
                "new" | "bad" | "forbidden" | "not_found" | "conflict"
            ) {
                continue;
            }
            let args = &rest[name_end..rest.len().min(name_end + 200)];
            let Some(open) = args.find('"') else { continue };
            let close = args[open + 1..].find('"').unwrap() + open + 1;
            let code = &args[open + 1..close];
            if !code.is_empty() && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
                codes.insert(code.to_string());
            }
        }
    }
    codes
}

#[test]
fn every_error_code_is_listed_and_documented() {
    let listed: BTreeSet<String> = baton::server::CODES
        .iter()
        .map(|(c, _, _)| c.to_string())
        .collect();
    assert_eq!(listed.len(), baton::server::CODES.len(), "no code twice");
    let used = codes_in_source();
    assert!(used.len() >= 25, "the scan finds the codes: {used:?}");
    assert_eq!(used, listed, "codes the server's source uses against CODES");
    let doc = doc();
    let enumerated: BTreeSet<String> = doc["components"]["schemas"]["Problem"]["properties"]
        ["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(enumerated, listed, "the document's codes are CODES");
}
