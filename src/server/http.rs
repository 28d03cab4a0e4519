//! `baton serve`: the HTTP routes on axum — runs started, listed, read, cancelled, resumed,
//! their briefs, approvals and events as Server-Sent Events (`id:` the sequence number,
//! `event:` the kind, `data:` the logged event; `Last-Event-ID` or `?after=` resumes with no
//! gap and no duplicate; keep-alives) — the MCP server at `/mcp`, and `/openapi.json`. Every
//! route but `/healthz` takes the bearer token when one is set; every error is
//! `application/problem+json`; one span per request carries the run's id.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};
use tracing::Instrument;

use super::problem::Problem;
use super::request::{
    parse_body, DecisionRequest, ForgetRequest, ForkRequest, MergeRequest, ResumeRequest,
    RunRequest,
};
use super::Server;

/// A route's path parameters; one that cannot be read (not UTF-8 once decoded) is 400
/// `invalid_path`, a problem like every other error.
struct Params<T>(T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned + Send> axum::extract::FromRequestParts<S>
    for Params<T>
{
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Problem> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Params(value)),
            Err(e) => Err(Problem::bad("invalid_path", e.body_text())),
        }
    }
}

/// The OpenAPI document of these routes (`contracts/openapi.json`, compiled in).
pub(crate) const OPENAPI: &str = include_str!("../../contracts/openapi.json");

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, self.body().to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// A JSON answer with its status.
fn answer(status: StatusCode, value: Value) -> Response {
    let text = crate::redact::scrubbed(value.to_string());
    let mut response = (status, text).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The routes of `server`: the HTTP API, `/openapi.json`, and the MCP server at `/mcp`
/// (taking requests only for loopback host names).
pub fn router(server: Server) -> Router {
    app(server, true)
}

/// The routes, the MCP server's host check loopback-only or (bound elsewhere, behind the
/// token) off.
fn app(server: Server, loopback: bool) -> Router {
    let mut api: Router<Server> = Router::new();
    for (path, _) in ROUTES.iter().filter(|(path, _)| *path != "/healthz") {
        api = api.route(path, handlers(path));
    }
    api = api.nest_service("/mcp", super::mcp::mcp_service(server.clone(), loopback));
    let api = api
        .route_layer(axum::middleware::from_fn_with_state(
            server.clone(),
            authorized,
        ))
        .route_layer(axum::middleware::from_fn_with_state(loopback, from_here));
    Router::new()
        .route("/healthz", handlers("/healthz"))
        .merge(api)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(traced))
        .with_state(server)
}

/// Every route of the HTTP API and its methods (`/mcp` aside: MCP's own), as the router is
/// built from it; `contracts/openapi.json` must describe exactly these.
pub const ROUTES: &[(&str, &[&str])] = &[
    ("/healthz", &["GET"]),
    ("/openapi.json", &["GET"]),
    ("/v1/runs", &["GET", "POST"]),
    ("/v1/runs/{id}", &["GET"]),
    ("/v1/runs/{id}/events", &["GET"]),
    ("/v1/runs/{id}/cancel", &["POST"]),
    ("/v1/runs/{id}/resume", &["POST"]),
    ("/v1/runs/{id}/brief", &["GET"]),
    ("/v1/runs/{id}/fork", &["POST"]),
    ("/v1/runs/{id}/merge", &["POST"]),
    ("/v1/runs/{id}/forget", &["POST"]),
    ("/v1/runs/{id}/approvals", &["GET"]),
    ("/v1/runs/{id}/approvals/{aid}", &["POST"]),
];

/// The handlers of one route of [`ROUTES`].
fn handlers(path: &str) -> axum::routing::MethodRouter<Server> {
    match path {
        "/healthz" => get(healthz),
        "/openapi.json" => get(openapi),
        "/v1/runs" => post(start).get(list),
        "/v1/runs/{id}" => get(run),
        "/v1/runs/{id}/events" => get(events),
        "/v1/runs/{id}/cancel" => post(cancel),
        "/v1/runs/{id}/resume" => post(resume),
        "/v1/runs/{id}/brief" => get(brief),
        "/v1/runs/{id}/fork" => post(fork),
        "/v1/runs/{id}/merge" => post(merge),
        "/v1/runs/{id}/forget" => post(forget),
        "/v1/runs/{id}/approvals" => get(approvals),
        "/v1/runs/{id}/approvals/{aid}" => post(decide),
        _ => axum::routing::MethodRouter::new(),
    }
}

async fn not_found() -> Problem {
    Problem::not_found("no_route", "no such route")
}

async fn method_not_allowed() -> Problem {
    Problem::new(
        405,
        "method_not_allowed",
        "this route does not take that method",
    )
}

/// One span per request: its method, path, the run it names, and its status.
async fn traced(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let run_id = path
        .strip_prefix("/v1/runs/")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or("")
        .to_string();
    // The run's id is recorded once known: from the path, or by the route that starts it.
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        path = %path,
        run_id = tracing::field::Empty,
        status = tracing::field::Empty,
    );
    if !run_id.is_empty() {
        span.record("run_id", run_id.as_str());
    }
    let headers = request.headers();
    // A body is declared by its length (not zero) or sent in chunks.
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .is_some_and(|v| v.to_str().map_or(true, |v| v.trim() != "0"));
    let has_body = declared || headers.contains_key(header::TRANSFER_ENCODING);
    let read = Arc::new(AtomicBool::new(!has_body));
    let (parts, body) = request.into_parts();
    let body = Body::from_stream(Watched {
        inner: body.into_data_stream(),
        read: Arc::clone(&read),
    });
    let mut response = next
        .run(Request::from_parts(parts, body))
        .instrument(span.clone())
        .await;
    // An answer given before the body was read to its end (413, 401, 403, 415, a route that
    // takes none): the connection cannot carry another request, and a client that reused
    // it would see its next request cut off. It is closed after the answer.
    if !read.load(Ordering::Acquire) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    span.record("status", response.status().as_u16());
    tracing::info!(parent: &span, status = response.status().as_u16(), "answered");
    response
}

/// A request's body that says when it was read to its end.
struct Watched {
    inner: axum::body::BodyDataStream,
    read: Arc<AtomicBool>,
}

impl futures_util::Stream for Watched {
    type Item = Result<axum::body::Bytes, axum::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let next = std::pin::Pin::new(&mut self.inner).poll_next(cx);
        if let std::task::Poll::Ready(None) = next {
            self.read.store(true, Ordering::Release);
        }
        next
    }
}

/// The bearer token, when the server has one: compared in constant time (both digested, so
/// neither the length nor any prefix shows in the time taken).
async fn authorized(State(server): State<Server>, request: Request, next: Next) -> Response {
    if let Some(token) = &server.config().token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            // The scheme's name is case-insensitive (RFC 9110).
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map_or("", |(_, token)| token.trim());
        if !same_secret(given, token) {
            return Problem::new(
                401,
                "unauthorized",
                "a bearer token is required (Authorization: Bearer …)",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// What a web page could send on a user's behalf, refused: on a loopback server (no token a
/// browser would not send), a `Host` or `Origin` other than loopback's is 403 (DNS
/// rebinding, a cross-site request); everywhere, a body that is not `application/json` is
/// 415 (a cross-site form or `text/plain` post needs no preflight).
async fn from_here(State(loopback): State<bool>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if loopback {
        // Every Host given, and the request line's own in absolute form, names loopback.
        let line = request.uri().authority().map(|a| a.as_str());
        let mut hosts = headers
            .get_all(header::HOST)
            .iter()
            .map(|v| v.to_str().ok())
            .chain(line.map(Some));
        if hosts.any(|h| !h.is_some_and(loopback_host)) {
            return Problem::forbidden(
                "host_not_allowed",
                "the Host header is not this loopback server's",
            )
            .into_response();
        }
        let from_loopback = |o: &str| {
            o.strip_prefix("http://")
                .or_else(|| o.strip_prefix("https://"))
                .is_some_and(loopback_host)
        };
        let mut origins = headers.get_all(header::ORIGIN).iter();
        if origins.any(|o| !o.to_str().is_ok_and(from_loopback)) {
            return Problem::forbidden(
                "origin_not_allowed",
                "a request from a web page of another origin",
            )
            .into_response();
        }
    }
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0");
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if has_body && !json {
        return Problem::new(
            415,
            "unsupported_media_type",
            "the body must be application/json",
        )
        .into_response();
    }
    next.run(request).await
}

/// Whether `host` (a Host header or an origin's authority: a name or address and an optional
/// port) names the loopback interface.
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether two secrets are equal, in time that depends on neither.
fn same_secret(given: &str, token: &str) -> bool {
    let a = crate::digest::sha256_hex(given.as_bytes());
    let b = crate::digest::sha256_hex(token.as_bytes());
    a.bytes()
        .zip(b.bytes())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// A body read whole within the server's cap: 413 beyond it (said before it is read when
/// the length is declared); a body that cannot be read to its end (cut off, badly chunked)
/// is no JSON: 400 `invalid_json`, not 413.
async fn read_body(server: &Server, headers: &HeaderMap, body: Body) -> Result<Vec<u8>, Problem> {
    let limit = server.config().body_limit;
    let too_large = || {
        Problem::new(
            413,
            "body_too_large",
            format!("the body is over the {limit}-byte limit"),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut out = Vec::new();
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = futures_util::StreamExt::next(&mut chunks).await {
        let chunk = chunk.map_err(|e| {
            Problem::bad(
                "invalid_json",
                format!("the body could not be read to its end (cut off, or badly chunked): {e}"),
            )
        })?;
        if out.len() + chunk.len() > limit {
            return Err(too_large());
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

async fn healthz() -> Response {
    answer(
        StatusCode::OK,
        json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }),
    )
}

async fn openapi() -> Response {
    let mut response = OPENAPI.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn start(
    State(server): State<Server>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let bytes = read_body(&server, &headers, body).await?;
    let request: RunRequest = parse_body(&bytes)?;
    let started = server.start(request).await?;
    tracing::Span::current().record("run_id", started.run_id.as_str());
    Ok(started_answer(&started))
}

fn started_answer(started: &super::Started) -> Response {
    let mut value = serde_json::to_value(started).unwrap_or_default();
    value["links"] = super::runs::links(&started.run_id);
    let mut response = answer(StatusCode::ACCEPTED, value);
    if let Ok(location) = HeaderValue::from_str(&format!("/v1/runs/{}", started.run_id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Page {
    #[serde(default)]
    offset: usize,
    #[serde(default = "default_limit")]
    limit: usize,
}

fn default_limit() -> usize {
    50
}

async fn list(
    State(server): State<Server>,
    page: Result<Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, Problem> {
    let Query(page) = page.map_err(|e| Problem::bad("invalid_query", e.body_text()))?;
    if !(1..=200).contains(&page.limit) {
        return Err(Problem::bad(
            "invalid_query",
            format!("limit: {} is not in 1..=200", page.limit),
        ));
    }
    Ok(answer(
        StatusCode::OK,
        server.list(page.offset, page.limit).await?,
    ))
}

async fn run(
    State(server): State<Server>,
    Params(id): Params<String>,
) -> Result<Response, Problem> {
    Ok(answer(StatusCode::OK, server.run(&id).await?))
}

async fn cancel(
    State(server): State<Server>,
    Params(id): Params<String>,
) -> Result<Response, Problem> {
    server.cancel(&id).await?;
    Ok(answer(
        StatusCode::ACCEPTED,
        json!({ "run_id": id, "state": "cancelling" }),
    ))
}

async fn resume(
    State(server): State<Server>,
    Params(id): Params<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let request: ResumeRequest = body_of(&server, &headers, body).await?;
    let started = server.resume(&id, request).await?;
    Ok(started_answer(&started))
}

async fn brief(
    State(server): State<Server>,
    Params(id): Params<String>,
) -> Result<Response, Problem> {
    Ok(answer(StatusCode::OK, server.brief(&id).await?))
}

/// A request's body, read within the server's cap and held to `R`'s shape.
async fn body_of<R: serde::de::DeserializeOwned + schemars::JsonSchema>(
    server: &Server,
    headers: &HeaderMap,
    body: Body,
) -> Result<R, Problem> {
    let bytes = read_body(server, headers, body).await?;
    parse_body(&bytes)
}

async fn fork(
    State(server): State<Server>,
    Params(id): Params<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let request: ForkRequest = body_of(&server, &headers, body).await?;
    Ok(answer(
        StatusCode::CREATED,
        server.fork(&id, request).await?,
    ))
}

async fn merge(
    State(server): State<Server>,
    Params(id): Params<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let request: MergeRequest = body_of(&server, &headers, body).await?;
    Ok(answer(
        StatusCode::CREATED,
        server.merge(&id, request).await?,
    ))
}

async fn forget(
    State(server): State<Server>,
    Params(id): Params<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let request: ForgetRequest = body_of(&server, &headers, body).await?;
    Ok(answer(StatusCode::OK, server.forget(&id, request).await?))
}

async fn approvals(
    State(server): State<Server>,
    Params(id): Params<String>,
) -> Result<Response, Problem> {
    let pending = server.approvals(&id).await?;
    Ok(answer(
        StatusCode::OK,
        json!({ "run_id": id, "approvals": pending }),
    ))
}

async fn decide(
    State(server): State<Server>,
    Params((id, aid)): Params<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let decision: DecisionRequest = body_of(&server, &headers, body).await?;
    let word = match decision.decision {
        super::Decision::Grant => "granted",
        super::Decision::Deny => "denied",
    };
    server.decide(&id, &aid, decision).await?;
    Ok(answer(
        StatusCode::OK,
        json!({ "run_id": id, "approval": aid, "decision": word }),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct After {
    after: Option<u64>,
}

/// Where a stream starts: after `Last-Event-ID` (a reconnect), else `?after=`, else the
/// first event.
fn start_after(headers: &HeaderMap, query: &After) -> Result<u64, Problem> {
    match headers.get("last-event-id") {
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                Problem::bad(
                    "invalid_last_event_id",
                    "Last-Event-ID: not a sequence number",
                )
            }),
        None => Ok(query.after.unwrap_or(0)),
    }
}

async fn events(
    State(server): State<Server>,
    Params(id): Params<String>,
    query: Result<Query<After>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let Query(query) = query.map_err(|e| Problem::bad("invalid_query", e.body_text()))?;
    let after = start_after(&headers, &query)?;
    let follower = server.follow(&id, after).await?;
    let stream = futures_util::stream::unfold(Some(follower), |state| async move {
        let mut follower = state?;
        match follower.next().await? {
            Ok(event) => {
                let data =
                    crate::redact::scrubbed(serde_json::to_string(&event).unwrap_or_default());
                let sse = Event::default()
                    .id(event.seq.to_string())
                    .event(event.event.kind())
                    .data(data);
                Some((Ok::<_, Infallible>(sse), Some(follower)))
            }
            Err(problem) => {
                let sse = Event::default()
                    .event("error")
                    .data(problem.body().to_string());
                Some((Ok(sse), None))
            }
        }
    });
    let keep_alive = KeepAlive::new().interval(server.config().keep_alive);
    Ok(Sse::new(stream).keep_alive(keep_alive).into_response())
}

/// A server listening: where, and the task serving it.
#[derive(Debug)]
pub struct Listening {
    /// The address bound (the port chosen when 0 was asked for).
    pub addr: SocketAddr,
    /// Serves until the process ends, or fails.
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Binds `addr` and serves `server` on it, with the MCP server at `/mcp`. A non-loopback
/// address needs a token (refused otherwise, one line).
pub async fn serve(server: Server, addr: SocketAddr) -> Result<Listening, String> {
    if !addr.ip().is_loopback() && server.config().token.is_none() {
        return Err(format!(
            "--addr {addr}: binding beyond loopback needs BATON_TOKEN (a bearer token every request must carry)"
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--addr {addr}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("--addr {addr}: {e}"))?;
    let app = app(server, addr.ip().is_loopback());
    // No Nagle delay: an event written just after the stream's headers goes out at once,
    // not after the client's delayed acknowledgement (some 40 ms).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY could not be set");
        }
    });
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(Listening { addr, task })
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_loopback_names_and_addresses_are_loopback_hosts() {
        for host in [
            "localhost",
            "LOCALHOST:7878",
            "127.0.0.1",
            "127.0.0.1:80",
            "127.3.4.5:1",
            "[::1]",
            "[::1]:7878",
        ] {
            assert!(super::loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:7878",
            "localhost.evil.example",
            "10.0.0.1:7878",
            "[::2]:1",
            "",
            "127.0.0.1.evil.example",
        ] {
            assert!(!super::loopback_host(host), "{host}");
        }
    }

    #[test]
    fn secrets_compare_equal_only_when_equal() {
        assert!(super::same_secret("s3cret", "s3cret"));
        assert!(!super::same_secret("s3cre", "s3cret"));
        assert!(!super::same_secret("", "s3cret"));
    }
}
