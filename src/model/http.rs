//! What the HTTP providers share: the client (rustls, connect / request / idle-stream
//! timeouts), one attempt's send with its error classified from the status and body, the
//! retry loop (exponential backoff with jitter, `retry-after` honoured, bounded attempts, the
//! shared [`Limiter`] before every attempt), and a server-sent-events reader.

pub(crate) use super::error_body::{
    classify, error_message, html_text, looks_like_html, one_line_cut,
};
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::Instrument;

use super::{ApiKey, ErrorKind, Limiter, ModelError, ModelResponse, Price};

message_error! {
    /// Why a provider's endpoint cannot be used: its base URL, or the client (one line).
    EndpointError
}

/// Retries of a failed call: only errors whose kind is retryable are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Most attempts in all (1: no retry).
    pub attempts: u32,
    /// The first backoff; each later one doubles, with jitter.
    pub base: Duration,
    /// The longest backoff, and the longest `retry-after` honoured.
    pub max_delay: Duration,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            attempts: 5,
            base: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl Retry {
    /// How long to wait before attempt `attempt + 1` after `error` (attempt counts from 1).
    pub(crate) fn delay(&self, attempt: u32, error: &ModelError) -> Duration {
        if let Some(after) = error.retry_after {
            return after.min(self.max_delay);
        }
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.max_delay);
        // Equal jitter: half fixed, half random, so siblings do not retry in step.
        capped / 2 + capped.mul_f64(jitter() / 2.0)
    }
}

/// A number in [0, 1) that differs from call to call.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// How a provider client talks HTTP.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Most time to connect.
    pub connect_timeout: Duration,
    /// Most time for a whole answer that is not streamed (under the model-call limit, so a
    /// hung answer is retried).
    pub request_timeout: Duration,
    /// Most time before a streamed answer's headers, and between two pieces of it.
    pub idle_timeout: Duration,
    /// Retries of retryable failures.
    pub retry: Retry,
    /// The process's rate limit, shared by every model call.
    pub limiter: Limiter,
    /// Stream answers (server-sent events); off: one JSON answer per call.
    pub stream: bool,
}

impl Default for HttpOptions {
    fn default() -> HttpOptions {
        HttpOptions {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(240),
            idle_timeout: Duration::from_secs(90),
            retry: Retry::default(),
            limiter: Limiter::none(),
            stream: true,
        }
    }
}

/// Most bytes of one answer read (a streamed one too).
const MAX_BODY_BYTES: usize = 32 << 20;

/// Most bytes of an error's body read.
const ERROR_BODY_BYTES: usize = 64 << 10;

/// Most characters of an error's message.
const MESSAGE_CHARS: usize = 600;

/// One provider's HTTP client.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    pub(crate) options: HttpOptions,
    pub(crate) provider: &'static str,
    pub(crate) key: Option<ApiKey>,
}

/// What both providers are: a model's name at an endpoint, its client, window and price.
pub(crate) struct Endpoint {
    pub(crate) http: Http,
    pub(crate) model: String,
    /// The base URL, checked (`base_url`).
    pub(crate) base: String,
    pub(crate) window: usize,
    pub(crate) price: Option<Price>,
}

impl std::fmt::Debug for Endpoint {
    /// The base URL without credentials: a password in it is not shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("provider", &self.http.provider)
            .field("model", &self.model)
            .field("base", &without_credentials(&self.base))
            .field("window", &self.window)
            .finish()
    }
}

impl Endpoint {
    /// `model` at `base_url` (or the provider's `default_url`), its window and price from the
    /// known models' table until set.
    pub(crate) fn new(
        provider: &'static str,
        model: &str,
        base_url: Option<&str>,
        default_url: &str,
        key: Option<ApiKey>,
        options: HttpOptions,
    ) -> Result<Endpoint, EndpointError> {
        Ok(Endpoint {
            base: base_url_of(base_url.unwrap_or(default_url))?,
            http: Http::new(provider, options, key)?,
            model: model.to_string(),
            window: super::known_context_window(model)
                .unwrap_or(super::price::UNKNOWN_CONTEXT_WINDOW),
            price: super::known_price(model),
        })
    }

    /// `provider:model`.
    pub(crate) fn name(&self) -> String {
        format!("{}:{}", self.http.provider, self.model)
    }

    /// The configuration as logged: the base URL without credentials.
    pub(crate) fn config(&self, fallbacks: Vec<super::Fallback>) -> super::ModelConfig {
        super::ModelConfig {
            provider: self.http.provider.into(),
            model: self.model.clone(),
            base_url: Some(without_credentials(&self.base)),
            context_window: self.window,
            price: self.price,
            fallbacks,
        }
    }

    /// An answer that does not read as the provider's format.
    pub(crate) fn malformed(&self, message: impl std::fmt::Display) -> ModelError {
        self.http
            .error(ErrorKind::Server, format!("malformed answer: {message}"))
    }
}

/// What came back from one attempt.
pub(crate) enum Answer {
    /// A whole JSON body.
    Json(Value),
    /// A stream of server-sent events.
    Stream(Box<Events>),
}

impl Http {
    pub(crate) fn new(
        provider: &'static str,
        options: HttpOptions,
        key: Option<ApiKey>,
    ) -> Result<Http, String> {
        // reqwest is built without a default crypto provider: ring is installed once.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // No redirects: a key header must not follow one to another origin.
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("could not build the HTTP client: {}", e.without_url()))?;
        Ok(Http {
            client,
            options,
            provider,
            key,
        })
    }

    /// An error of this provider: any key in its message redacted first, then the message
    /// put on one line and cut (so a key can never be cut out of reach of the redaction).
    pub(crate) fn error(&self, kind: ErrorKind, message: impl Into<String>) -> ModelError {
        let message = self.redacted(&message.into());
        ModelError {
            provider: self.provider.to_string(),
            message: one_line_cut(&message, MESSAGE_CHARS),
            ..ModelError::new(kind, "")
        }
    }

    fn transport_error(&self, e: reqwest::Error) -> ModelError {
        let kind = if e.is_timeout() {
            ErrorKind::Timeout
        } else {
            ErrorKind::Connection
        };
        let e = e.without_url();
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        self.error(kind, text)
    }

    /// Sends one POST and reads its status: an error status becomes a typed error with the
    /// provider's message, status, request id and `retry-after`.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Value,
        stream: bool,
    ) -> Result<Answer, ModelError> {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        let mut request = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .body(bytes);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        // A whole answer has the request timeout; a stream's headers, like each later piece of
        // it, the idle timeout.
        let wait = if stream {
            self.options.idle_timeout
        } else {
            request = request.timeout(self.options.request_timeout);
            self.options.request_timeout
        };
        let response = match tokio::time::timeout(wait, request.send()).await {
            Err(_) => {
                return Err(self.error(
                    ErrorKind::Timeout,
                    format!("no answer within {} s", wait.as_secs_f64()),
                ))
            }
            Ok(sent) => sent.map_err(|e| self.transport_error(e))?,
        };
        let status = response.status().as_u16();
        // A header the server chose may hold anything, a key too: it is redacted like a
        // message, whole, before it is cut (a cut key would not be found).
        let request_id = ["request-id", "x-request-id"]
            .iter()
            .find_map(|h| response.headers().get(*h))
            .and_then(|v| v.to_str().ok())
            .map(|v| self.redacted(v).chars().take(128).collect::<String>());
        let retry_after = retry_after(response.headers());
        if (300..400).contains(&status) {
            return Err(self.redirected(&response, status, request_id));
        }
        if !(200..300).contains(&status) {
            return Err(self
                .error_status(response, status, request_id, retry_after)
                .await);
        }
        let json_body = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        // A server that ignores `stream` and answers whole is read whole.
        if stream && !json_body {
            return Ok(Answer::Stream(Box::new(Events {
                response,
                parser: super::sse::SseParser::default(),
                read: 0,
                idle: self.options.idle_timeout,
                done: false,
                request_id,
            })));
        }
        let bytes = self.read_all(response, MAX_BODY_BYTES).await?;
        serde_json::from_slice(&bytes)
            .map(Answer::Json)
            .map_err(|e| {
                let mut error = self.error(
                    ErrorKind::Server,
                    format!(
                        "the answer is not JSON ({e}): {}",
                        String::from_utf8_lossy(&bytes[..bytes.len().min(ERROR_BODY_BYTES)])
                    ),
                );
                error.status = Some(status);
                error.request_id = request_id.clone();
                error
            })
    }

    /// A redirect: not followed (a key stays with its origin), an error naming where it leads.
    fn redirected(
        &self,
        response: &reqwest::Response,
        status: u16,
        request_id: Option<String>,
    ) -> ModelError {
        let to = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(|l| {
                response.url().join(l).map_or_else(
                    |_| "(not a URL)".into(),
                    |u| without_credentials(u.as_str()),
                )
            })
            .unwrap_or_else(|| "(no location given)".into());
        let mut error = self.error(
            ErrorKind::BadRequest,
            format!("the server redirected to {to}, and redirects are not followed (a key stays with its origin): set the base URL to where it leads"),
        );
        error.status = Some(status);
        error.request_id = request_id;
        error
    }

    /// An error status: what the body says, if it comes within the idle timeout (its first
    /// bytes, up to the cap, whatever its length), as a typed error.
    async fn error_status(
        &self,
        response: reqwest::Response,
        status: u16,
        request_id: Option<String>,
        retry_after: Option<Duration>,
    ) -> ModelError {
        // What the body says, if it comes within the idle timeout: its first bytes, up to
        // the cap, whatever its length.
        let html = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("html"));
        let bytes = self.read_prefix(response, ERROR_BODY_BYTES).await;
        let text = String::from_utf8_lossy(&bytes);
        let (message, kind_hint) = if html || looks_like_html(&text) {
            let page = html_text(&text);
            let page = if page.is_empty() {
                format!(
                    "an HTML page with no text in its first {} KiB",
                    bytes.len().div_ceil(1024)
                )
            } else {
                page
            };
            (page, String::new())
        } else {
            error_message(&text)
        };
        let mut error = self.error(classify(status, &message, &kind_hint), message);
        error.status = Some(status);
        error.request_id = request_id;
        error.retry_after = retry_after;
        error
    }

    /// The first `limit` bytes of a body (all of it when shorter), each piece within the
    /// idle timeout; what came before a failure or a timeout is kept.
    async fn read_prefix(&self, mut response: reqwest::Response, limit: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while out.len() < limit {
            match tokio::time::timeout(self.options.idle_timeout, response.chunk()).await {
                Ok(Ok(Some(chunk))) => {
                    let room = limit - out.len();
                    out.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                _ => break,
            }
        }
        out
    }

    /// `text` with this provider's key taken out.
    pub(crate) fn redacted(&self, text: &str) -> String {
        match &self.key {
            Some(key) => key.redact(text),
            None => text.to_string(),
        }
    }

    /// A model's answer with this provider's key taken out of its text (the handoff, a
    /// lead's plan or report; a model may echo a key it was shown). Tool calls are left as the
    /// model wrote them — they run as written, and what they show is checked against what
    /// they read; the event log, the report and every output are scrubbed of the key where
    /// they leave the process ([`crate::redact`]).
    fn redact_response(&self, response: &mut ModelResponse) {
        let Some(redactor) = self.key.as_ref().and_then(ApiKey::answer_redactor) else {
            return;
        };
        if let std::borrow::Cow::Owned(text) = redactor.redact(&response.text) {
            response.text = text;
        }
    }

    /// Reads a whole body of at most `limit` bytes, each piece within the idle timeout.
    async fn read_all(
        &self,
        mut response: reqwest::Response,
        limit: usize,
    ) -> Result<Vec<u8>, ModelError> {
        let mut out = Vec::new();
        loop {
            let idle = self.options.idle_timeout;
            match tokio::time::timeout(idle, response.chunk()).await {
                Err(_) => {
                    return Err(self.error(
                        ErrorKind::Timeout,
                        format!("the answer was idle for {} s", idle.as_secs_f64()),
                    ))
                }
                Ok(Ok(Some(chunk))) => {
                    if out.len() + chunk.len() > limit {
                        return Err(self.error(
                            ErrorKind::Server,
                            format!("the answer is over {limit} bytes"),
                        ));
                    }
                    out.extend_from_slice(&chunk);
                }
                Ok(Ok(None)) => return Ok(out),
                Ok(Err(e)) => return Err(self.transport_error(e)),
            }
        }
    }

    /// Runs `attempt` until it succeeds, fails for good, or the attempts run out: each
    /// attempt waits for the shared limiter first; a retryable failure waits its backoff (or
    /// the provider's `retry-after`). The last error names the attempts made.
    pub(crate) async fn with_retries<F, Fut>(
        &self,
        model: &str,
        tokens: u64,
        mut attempt: F,
    ) -> Result<ModelResponse, ModelError>
    where
        F: FnMut(u32) -> Fut,
        Fut: std::future::Future<Output = Result<ModelResponse, ModelError>>,
    {
        let retry = self.options.retry;
        let mut n = 1;
        loop {
            self.options.limiter.acquire(tokens).await;
            let span = tracing::debug_span!(
                "model_request",
                provider = self.provider,
                model,
                attempt = n,
                status = tracing::field::Empty,
                latency_ms = tracing::field::Empty,
                input_tokens = tracing::field::Empty,
                output_tokens = tracing::field::Empty,
                cache_read_tokens = tracing::field::Empty,
                stop = tracing::field::Empty,
            );
            let started = Instant::now();
            let result = attempt(n).instrument(span.clone()).await;
            span.record("latency_ms", started.elapsed().as_millis() as u64);
            match result {
                Ok(mut response) => {
                    self.redact_response(&mut response);
                    span.record("status", "ok");
                    span.record("input_tokens", response.usage.all_input());
                    span.record("output_tokens", response.usage.output_tokens);
                    span.record("cache_read_tokens", response.usage.cache_read_tokens);
                    span.record("stop", format!("{:?}", response.stop).as_str());
                    return Ok(response);
                }
                Err(mut error) => {
                    // A key the server echoed back goes no further, whatever path built the
                    // error.
                    error.message = self.redacted(&error.message);
                    error.request_id = error.request_id.map(|id| self.redacted(&id));
                    span.record("status", error.status.unwrap_or(0));
                    if !error.retryable() || n >= retry.attempts.max(1) {
                        if n > 1 {
                            error.message = format!("{} (after {n} attempts)", error.message);
                        }
                        return Err(error);
                    }
                    let wait = retry.delay(n, &error);
                    tracing::debug!(
                        parent: &span,
                        provider = self.provider,
                        model,
                        attempt = n,
                        wait_ms = wait.as_millis() as u64,
                        error = %error,
                        "model_retry"
                    );
                    tokio::time::sleep(wait).await;
                    n += 1;
                }
            }
        }
    }
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return seconds(ms / 1000.0);
    }
    text("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(seconds)
}

fn seconds(s: f64) -> Option<Duration> {
    (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(86_400.0)))
}

/// Reads server-sent events from a response, each piece within the idle timeout.
pub(crate) struct Events {
    response: reqwest::Response,
    parser: super::sse::SseParser,
    read: usize,
    idle: Duration,
    done: bool,
    pub(crate) request_id: Option<String>,
}

impl Events {
    /// Bytes of the stream read so far.
    pub(crate) fn bytes_read(&self) -> usize {
        self.read
    }

    /// The next event; none when the stream has ended.
    pub(crate) async fn next(
        &mut self,
        http: &Http,
    ) -> Result<Option<super::sse::Event>, ModelError> {
        loop {
            if let Some(event) = self.parser.take(self.done) {
                return Ok(Some(event));
            }
            if self.done {
                return Ok(None);
            }
            let chunk = tokio::time::timeout(self.idle, self.response.chunk()).await;
            match chunk {
                Err(_) => {
                    return Err(http.error(
                        ErrorKind::Timeout,
                        format!("the stream was idle for {} s", self.idle.as_secs_f64()),
                    ))
                }
                Ok(Err(e)) => return Err(http.transport_error(e)),
                Ok(Ok(None)) => self.done = true,
                Ok(Ok(Some(bytes))) => {
                    self.read += bytes.len();
                    if self.read > MAX_BODY_BYTES {
                        return Err(http.error(
                            ErrorKind::Server,
                            format!("the stream is over {MAX_BODY_BYTES} bytes"),
                        ));
                    }
                    self.parser.push(&bytes);
                }
            }
        }
    }
}

/// A provider-safe tool-call id (only `[A-Za-z0-9_-]`), one to one: `_` and every other
/// character become `_` and its hex code and `_`, so `sa1.2` is `sa1_2e_2`.
pub(crate) fn safe_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            out.push(c);
        } else {
            out.push_str(&format!("_{:x}_", c as u32));
        }
    }
    if out.is_empty() {
        out.push_str("_0_");
    }
    out
}

/// A tool call's arguments from the text a model sent: the JSON object, `{}` when empty, or
/// the text itself (as a JSON string) when it is not JSON — a tool error the model is shown.
pub(crate) fn arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// A base URL checked: http or https, no query or fragment; credentials are never logged
/// ([`without_credentials`]).
pub(crate) fn base_url_of(text: &str) -> Result<String, String> {
    let url =
        reqwest::Url::parse(text.trim()).map_err(|e| format!("the base URL is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`{}` is not an http or https URL",
            without_credentials(text)
        ));
    }
    // Credentials in the URL would go as a second, Basic, authorization beside the key's.
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "`{}` holds a user name or password: give the key in the provider's key variable",
            without_credentials(text)
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "`{}` holds a query or fragment: give the endpoint's base path only",
            without_credentials(text)
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

/// A URL with any user name, password, query and fragment taken out (a key may ride in any
/// of them).
pub(crate) fn without_credentials(text: &str) -> String {
    match reqwest::Url::parse(text.trim()) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.as_str().trim_end_matches('/').to_string()
        }
        // Not a URL: nothing of it is shown.
        Err(_) => "(not a URL)".to_string(),
    }
}

#[cfg(test)]
mod tests;
