//! The server's errors: one [`Problem`] per refusal, written as `application/problem+json`
//! (RFC 9457) with a stable `code` a client can match on, and its one-line message.

use serde::Serialize;

/// Every code a problem carries, with its status and what it means: the `code` enum of
/// `contracts/openapi.json` and the README's table are this list (tested).
pub const CODES: &[(&str, u16, &str)] = &[
    ("invalid_json", 400, "the body is not JSON"),
    (
        "invalid_body",
        400,
        "a field is unknown, missing, of the wrong type or empty",
    ),
    (
        "forbidden_field",
        400,
        "a field names a host, URL, key, token, header or price",
    ),
    ("invalid_model", 400, "a model field is not a model spec"),
    (
        "model_not_allowed",
        400,
        "the model spec is not one the server allows",
    ),
    (
        "invalid_limit",
        400,
        "a limit is outside the command line's range",
    ),
    ("invalid_constraint", 400, "a constraint cannot be read"),
    ("invalid_root", 400, "the root cannot be opened as a tree"),
    ("invalid_corpus", 400, "the corpus cannot be indexed"),
    ("invalid_task", 400, "the library refused the task"),
    ("invalid_query", 400, "a query parameter cannot be read"),
    (
        "invalid_last_event_id",
        400,
        "Last-Event-ID is not a sequence number",
    ),
    (
        "invalid_handoff",
        400,
        "the handoff given to validate cannot be read",
    ),
    (
        "invalid_path",
        400,
        "a run or approval id in the path cannot be read",
    ),
    ("unauthorized", 401, "the bearer token is missing or wrong"),
    (
        "host_not_allowed",
        403,
        "a loopback server was asked under another host name",
    ),
    (
        "origin_not_allowed",
        403,
        "a web page of another origin sent the request",
    ),
    (
        "root_not_allowed",
        403,
        "the root or corpus is outside every allowed root (`..`, a link out)",
    ),
    ("root_not_directory", 403, "the root or corpus is a file"),
    ("root_not_found", 404, "the root or corpus does not exist"),
    ("run_not_found", 404, "no such run"),
    ("approval_not_found", 404, "no such request for approval"),
    ("no_route", 404, "no such route"),
    (
        "method_not_allowed",
        405,
        "the route does not take this method",
    ),
    ("run_live", 409, "the run is running: it cannot be resumed"),
    (
        "run_not_live",
        409,
        "the run is not running here: it cannot be cancelled or decided",
    ),
    ("run_in_use", 409, "another process holds the run"),
    (
        "approval_decided",
        409,
        "the request for approval was decided already",
    ),
    ("no_report", 409, "the run has no report here"),
    ("approval_expired", 410, "the request for approval expired"),
    ("body_too_large", 413, "the body is over the server's limit"),
    (
        "unsupported_media_type",
        415,
        "the body is not application/json",
    ),
    (
        "too_many_runs",
        429,
        "max-runs runs are running: try again after Retry-After seconds",
    ),
    (
        "internal",
        500,
        "the server failed: its state could not be read or written",
    ),
    ("run_damaged", 500, "the run's log is damaged"),
];

/// A refused or failed request: its HTTP status, a stable code, and one line saying why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The HTTP status.
    pub status: u16,
    /// A stable, machine-readable code (`model_not_allowed`, `root_not_allowed`, …).
    pub code: &'static str,
    /// One line for a person: what was wrong, naming the field or the path.
    pub detail: String,
    /// Seconds a client should wait before it tries again (429 only).
    #[serde(skip)]
    pub retry_after: Option<u64>,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl Problem {
    /// A problem of `status` with `code`; the detail is made one line and scrubbed of every
    /// secret the process holds.
    pub fn new(status: u16, code: &'static str, detail: impl Into<String>) -> Problem {
        debug_assert!(
            CODES.iter().any(|(c, st, _)| *c == code && *st == status),
            "{code} ({status}) is not in CODES"
        );
        let detail = crate::text::one_line(&crate::redact::scrub(&detail.into()));
        Problem {
            status,
            code,
            detail,
            retry_after: None,
        }
    }

    /// 400: the request cannot be used as it is.
    pub fn bad(code: &'static str, detail: impl Into<String>) -> Problem {
        Problem::new(400, code, detail)
    }

    /// 403: the request names a place or a model the server does not allow.
    pub fn forbidden(code: &'static str, detail: impl Into<String>) -> Problem {
        Problem::new(403, code, detail)
    }

    /// 404: no such run (or route).
    pub fn not_found(code: &'static str, detail: impl Into<String>) -> Problem {
        Problem::new(404, code, detail)
    }

    /// 409: the run is not in a state where this can be done.
    pub fn conflict(code: &'static str, detail: impl Into<String>) -> Problem {
        Problem::new(409, code, detail)
    }

    /// 500: the server failed (its state could not be read or written).
    pub fn internal(detail: impl Into<String>) -> Problem {
        Problem::new(500, "internal", detail)
    }

    /// The short title of its status.
    pub fn title(&self) -> &'static str {
        match self.status {
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            409 => "Conflict",
            410 => "Gone",
            413 => "Content Too Large",
            415 => "Unsupported Media Type",
            429 => "Too Many Requests",
            503 => "Service Unavailable",
            _ => "Internal Server Error",
        }
    }

    /// The problem document: `type`, `title`, `status`, `detail` and `code`.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({
            "type": format!("urn:baton:problem:{}", self.code),
            "title": self.title(),
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
        })
    }
}

/// A store error as the client sees it: an unknown run is 404, a run another process holds
/// 409, a damaged log 500 naming its last intact event, anything else 500.
impl From<crate::checkpoint::StoreError> for Problem {
    fn from(e: crate::checkpoint::StoreError) -> Problem {
        use crate::checkpoint::StoreError;
        match &e {
            StoreError::UnknownRun(_) => Problem::not_found("run_not_found", e.to_string()),
            StoreError::InUse(_) => Problem::conflict("run_in_use", e.to_string()),
            StoreError::Damaged { .. } => Problem::new(500, "run_damaged", e.to_string()),
            _ => Problem::internal(e.to_string()),
        }
    }
}

/// A run error as the client sees it: bad input (a constraint, a root, a task) is 400, a
/// store error as above, anything else 500.
impl From<crate::coordinator::RunError> for Problem {
    fn from(e: crate::coordinator::RunError) -> Problem {
        match e {
            crate::coordinator::RunError::Store(s) => Problem::from(s),
            e if e.is_bad_input() => Problem::bad("invalid_task", e.to_string()),
            e => Problem::internal(e.to_string()),
        }
    }
}
