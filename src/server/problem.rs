//! The server's errors: one [`Problem`] per refusal, written as `application/problem+json`
//! (RFC 9457) with a stable `code` a client can match on, and its one-line message.

use serde::Serialize;

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
