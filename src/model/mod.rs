//! The `Model` trait — messages and tool specs in; text and/or tool calls plus usage out — and
//! its implementations. Nothing outside this module knows a provider's wire format.

mod anthropic;
mod error_body;
mod http;
mod limiter;
mod openai;
pub(crate) mod price;
mod scripted;
mod secret;
mod spec;
mod sse;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Text with every API key the process holds — as written, in either letter case, URL-encoded
/// or JSON-escaped — replaced by `[redacted]` (borrowed when none occurs): what an application
/// passes its own output through before it leaves the process.
pub use crate::redact::scrub;
use crate::tokens::{estimate_tokens, estimate_tokens_of_len};
pub use crate::transcript::Message;
use crate::transcript::{ToolCall, ToolSpec};
pub use anthropic::AnthropicModel;
pub use http::{EndpointError, HttpOptions, Retry};
pub use limiter::Limiter;
pub use openai::OpenAiModel;
pub use price::{
    known_context_window, known_price, CostLimitError, CostMeter, Price, PriceTable,
    PriceTableError, UNKNOWN_CONTEXT_WINDOW,
};
#[doc(hidden)]
pub use scripted::{ScriptedModel, ScriptedTurn};
pub use secret::ApiKey;
pub use spec::{connect_provider, ConnectError, Env, ModelSpec, Provider, SpecError};

/// Which tool the model must call this turn, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "name", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// No tool: the model answers in text.
    None,
    /// Some tool, the model picks which.
    Required,
    /// This tool.
    Tool(String),
}

/// What is sent to a model for one turn.
/// ```
/// let request = baton::ModelRequest::new("Be brief.".into(), vec![], Vec::new().into(), 128);
/// assert_eq!(request.max_tokens, 128);
/// assert!(request.tools.is_empty(), "no tools: it must answer in text");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// System text for the role.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call this turn; empty means it must answer in text. Shared:
    /// a request clones a pointer, not every schema.
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// Most tokens the answer may take.
    pub max_tokens: u32,
    /// Sampling temperature (none: the provider's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Which tool the model must call, if any.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Whether a text answer is a handoff: a provider that can asks for the contract's JSON
    /// form (`contracts/handoff.schema.json`); the contract still validates what comes back.
    #[serde(default)]
    pub handoff: bool,
}

impl ModelRequest {
    /// A request with the provider's defaults: no temperature, tool choice `auto`, a text
    /// answer that is not a handoff.
    /// ```
    /// let request = baton::ModelRequest::new(
    ///     "You answer briefly.".into(),
    ///     vec![baton::Message::User { text: "Where is main?".into() }],
    ///     Vec::new().into(),
    ///     256,
    /// );
    /// assert!(!request.handoff && request.temperature.is_none());
    /// assert!(request.estimated_tokens() > 0);
    /// ```
    pub fn new(
        system: String,
        messages: Vec<Message>,
        tools: std::sync::Arc<[ToolSpec]>,
        max_tokens: u32,
    ) -> ModelRequest {
        ModelRequest {
            system,
            messages,
            tools,
            max_tokens,
            temperature: None,
            tool_choice: ToolChoice::Auto,
            handoff: false,
        }
    }

    /// The input tokens reserved for the request before it is sent: its estimate with a
    /// quarter more, for tokenizers that count more than four bytes a token.
    pub fn reserved_input_tokens(&self) -> u64 {
        self.estimated_tokens().saturating_mul(5).div_ceil(4)
    }

    /// An estimate of the request's input tokens (about four bytes a token).
    pub fn estimated_tokens(&self) -> u64 {
        let bytes = self.system.len()
            + self.messages.iter().map(Message::text_len).sum::<usize>()
            + self.tools.iter().map(ToolSpec::text_len).sum::<usize>();
        estimate_tokens_of_len(bytes)
    }
}

/// Tokens used by one call, as the provider reported them (or estimated, where it did not).
/// ```
/// let usage = baton::Usage { input_tokens: 10, output_tokens: 5, ..Default::default() };
/// assert_eq!(usage.total(), 15);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens not read from or written to a cache.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Every input token (uncached, read from and written to the cache) plus output.
    /// ```
    /// let usage = baton::Usage { input_tokens: 100, output_tokens: 20, cache_read_tokens: 50, ..Default::default() };
    /// assert_eq!(usage.total(), 170);
    /// assert_eq!(usage.all_input(), 150);
    /// ```
    pub fn total(&self) -> u64 {
        self.all_input().saturating_add(self.output_tokens)
    }

    /// Every input token, cached or not (a server's numbers saturate rather than wrap).
    pub fn all_input(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    #[default]
    End,
    /// It called tools.
    ToolUse,
    /// It reached the answer's token limit: the text is cut, never a finished handoff.
    MaxTokens,
    /// It refused to answer.
    Refusal,
}

/// A model's answer for one turn.
/// ```
/// let response = baton::ModelResponse::new("done".into(), vec![], baton::Usage::default());
/// assert_eq!(response.stop, baton::model::StopReason::End);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Text, possibly empty.
    pub text: String,
    /// Tool calls, possibly none.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used.
    pub usage: Usage,
    /// Why the model stopped.
    #[serde(default)]
    pub stop: StopReason,
}

impl ModelResponse {
    /// A finished answer: `text`, these tool calls (`tool_use` when there are any), `usage`.
    /// ```
    /// let call = baton::ToolCall { id: "c1".into(), name: "grep".into(), arguments: baton::json!({}) };
    /// let response = baton::ModelResponse::new(String::new(), vec![call], baton::Usage::default());
    /// assert_eq!(response.stop, baton::model::StopReason::ToolUse);
    /// ```
    pub fn new(text: String, tool_calls: Vec<ToolCall>, usage: Usage) -> ModelResponse {
        let stop = if tool_calls.is_empty() {
            StopReason::End
        } else {
            StopReason::ToolUse
        };
        ModelResponse {
            text,
            tool_calls,
            usage,
            stop,
        }
    }
}

/// What kind of failure a model call met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Too many requests (HTTP 429).
    RateLimited,
    /// The provider is overloaded (Anthropic's 529, an `overloaded_error`).
    Overloaded,
    /// The provider failed (HTTP 5xx).
    Server,
    /// The call took too long.
    Timeout,
    /// The connection failed or was cut (a stream that ended mid-message).
    Connection,
    /// The provider refused the request as malformed (HTTP 400, 404, 422).
    BadRequest,
    /// The key is missing, wrong or lacks permission (HTTP 401, 403).
    Auth,
    /// The request is longer than the model's context window.
    ContextTooLong,
    /// The run's or the subagent's cost limit would be passed by this call.
    CostLimit,
    /// Anything else (a scripted failure, a malformed answer).
    Other,
}

impl ErrorKind {
    /// Whether the same call may succeed if sent again later.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::RateLimited
                | ErrorKind::Overloaded
                | ErrorKind::Server
                | ErrorKind::Timeout
                | ErrorKind::Connection
        )
    }
}

/// A failed model call: the provider's message, never hidden, with what the provider said
/// about it.
/// ```
/// let error = baton::ModelError::new(baton::model::ErrorKind::Auth, "bad key");
/// assert!(!error.retryable(), "a wrong key stays wrong");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ModelError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What the provider (or the model implementation) said.
    pub message: String,
    /// The provider, e.g. `anthropic` (empty for a local model).
    pub provider: String,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// The provider's request id, when it sent one.
    pub request_id: Option<String>,
    /// How long the provider asked to wait before trying again.
    pub retry_after: Option<std::time::Duration>,
}

impl ModelError {
    /// An error of `kind` with `message` and nothing else known.
    /// ```
    /// use baton::model::ErrorKind;
    /// let error = baton::ModelError::new(ErrorKind::RateLimited, "slow down");
    /// assert!(error.retryable());
    /// assert!(error.to_string().contains("slow down"));
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ModelError {
        ModelError {
            kind,
            message: message.into(),
            provider: String::new(),
            status: None,
            request_id: None,
            retry_after: None,
        }
    }

    /// Whether the same call may succeed later (read by the providers' retry loop).
    pub fn retryable(&self) -> bool {
        self.kind.retryable()
    }

    fn describe(&self) -> String {
        let mut out = String::from("model error");
        if !self.provider.is_empty() {
            out.push_str(&format!(" from {}", self.provider));
        }
        if let Some(status) = self.status {
            out.push_str(&format!(" (HTTP {status}"));
            if let Some(id) = &self.request_id {
                out.push_str(&format!(", request {id}"));
            }
            out.push(')');
        } else if let Some(id) = &self.request_id {
            out.push_str(&format!(" (request {id})"));
        }
        out.push_str(": ");
        out.push_str(&self.message);
        out
    }
}

/// What a provider has settled on for the rest of the run: a fallback taken because the
/// server did not support something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    /// What changed, e.g. `response_format: json_schema -> json_object`.
    pub change: String,
    /// What the server did that called for it.
    pub why: String,
}

/// How a model is configured, for the event log: no credentials.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// `offline`, `scripted`, `anthropic` or `openai`.
    pub provider: String,
    /// The model's name at the provider.
    pub model: String,
    /// The endpoint, without credentials (none for a local model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The context window, in tokens.
    pub context_window: usize,
    /// The price per million tokens, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
    /// Fallbacks in force.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<Fallback>,
}

/// A language model, local or remote. One call is one turn. Implement it with
/// `#[baton::async_trait]`; a provider's error is a [`ModelError`] of its [`ErrorKind`].
///
/// ```
/// use baton::{async_trait, Model, ModelError, ModelRequest, ModelResponse, Usage};
/// /// Hands off at once, with nothing settled.
/// struct Shrug;
/// #[async_trait]
/// impl Model for Shrug {
///     fn name(&self) -> String {
///         "shrug".into()
///     }
///     async fn complete(&self, _request: ModelRequest) -> Result<ModelResponse, ModelError> {
///         let text = "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n";
///         Ok(ModelResponse::new(text.into(), Vec::new(), Usage::default()))
///     }
/// }
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let report = baton::Coordinator::builder()
///     .model(std::sync::Arc::new(Shrug))
///     .role(baton::Role::new("worker"))
///     .build()
///     .run(baton::Task::job("anything?").roles(["worker"]))
///     .await
///     .unwrap();
/// assert_eq!(report.model, "shrug");
/// # });
/// ```
#[async_trait]
pub trait Model: Send + Sync {
    /// A short name for reports, e.g. `offline`.
    fn name(&self) -> String;
    /// The model's context window, in tokens: a subagent's window is compacted before a
    /// request would fill it.
    fn context_window(&self) -> usize {
        128_000
    }
    /// Plays one turn.
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError>;
    /// The model's price per million tokens, when known: costs are computed from it and a cost
    /// limit is enforced against it.
    fn price(&self) -> Option<Price> {
        None
    }
    /// How the model is configured now (fallbacks included), for the event log.
    fn config(&self) -> ModelConfig {
        ModelConfig {
            provider: self.name(),
            model: self.name(),
            base_url: None,
            context_window: self.context_window(),
            price: self.price(),
            fallbacks: Vec::new(),
        }
    }
    /// The configuration, once after it has changed (a fallback taken); none otherwise. Every
    /// change is given to exactly one caller, which logs it.
    fn take_config_change(&self) -> Option<ModelConfig> {
        None
    }
}

/// The tool a provider is asked to hand off through, where it takes a forced tool call.
pub(crate) const HANDOFF_TOOL: &str = "submit_handoff";

/// The contract's JSON form as a provider takes it: `contracts/handoff.schema.json` without
/// its document keys.
pub(crate) fn handoff_schema() -> serde_json::Value {
    static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let mut v: serde_json::Value =
                serde_json::from_str(include_str!("../../contracts/handoff.schema.json"))
                    .unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                for key in ["$schema", "$id", "title"] {
                    o.remove(key);
                }
            }
            v
        })
        .clone()
}

/// One call under the run's cost meter and a time limit: the call's estimate is reserved
/// first (a `cost_limit` error when it could pass the limit, and nothing is sent), settled with
/// what it cost once it returns.
pub(crate) async fn call_metered(
    model: &dyn Model,
    meter: &CostMeter,
    request: ModelRequest,
    limit: std::time::Duration,
) -> Result<ModelResponse, ModelError> {
    let price = model.price();
    let estimate = price.map_or(0, |p| p.estimate_micros(&request));
    meter
        .reserve(estimate)
        .await
        .map_err(|why| ModelError::new(ErrorKind::CostLimit, why.to_string()))?;
    // Settled whatever happens — a call aborted or panicking gives its reservation back.
    let mut held = Held {
        meter,
        estimate,
        cost: 0,
    };
    let reply = tokio::time::timeout(limit, model.complete(request)).await;
    if let Ok(Ok(r)) = &reply {
        held.cost = price.map_or(0, |p| p.cost_micros(&r.usage));
    }
    drop(held);
    reply.unwrap_or_else(|_| {
        Err(ModelError::new(
            ErrorKind::Timeout,
            format!(
                "the model call ran past its {} s limit",
                limit.as_secs_f64()
            ),
        ))
    })
}

/// A reservation on the meter, settled with `cost` when it is dropped.
struct Held<'a> {
    meter: &'a CostMeter,
    estimate: u64,
    cost: u64,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.meter.settle(self.estimate, self.cost);
    }
}

/// Adds one call's usage (and its cost at `price`) to what was spent.
pub(crate) fn charge(spent: &mut crate::policy::Spent, usage: &Usage, price: Option<Price>) {
    spent.model_turns = spent.model_turns.saturating_add(1);
    spent.tokens_in = spent.tokens_in.saturating_add(usage.all_input());
    spent.tokens_out = spent.tokens_out.saturating_add(usage.output_tokens);
    spent.cache_read_tokens = spent
        .cache_read_tokens
        .saturating_add(usage.cache_read_tokens);
    spent.cache_write_tokens = spent
        .cache_write_tokens
        .saturating_add(usage.cache_write_tokens);
    if let Some(price) = price {
        spent.cost_micros = spent.cost_micros.saturating_add(price.cost_micros(usage));
    }
}

/// A call's usage estimated from what was sent and what came back, for a server that reported
/// none it could be read by (missing, not numbers, or no input at all): a budget binds on the
/// estimate rather than on nothing.
pub(crate) fn estimated_usage(request: &ModelRequest, text: &str, calls: &[ToolCall]) -> Usage {
    Usage {
        input_tokens: request.estimated_tokens(),
        output_tokens: estimate_tokens(text).saturating_add(
            calls
                .iter()
                .map(|c| estimate_tokens(&c.arguments.to_string()) + 4)
                .sum::<u64>(),
        ),
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A priced model that counts its calls and reports 1,000 tokens in and 100 out.
    struct Counting(AtomicU32);

    #[async_trait]
    impl Model for Counting {
        fn name(&self) -> String {
            "counting".into()
        }
        async fn complete(&self, _: ModelRequest) -> Result<ModelResponse, ModelError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            let usage = Usage {
                input_tokens: 1000,
                output_tokens: 100,
                ..Usage::default()
            };
            Ok(ModelResponse::new("ok".into(), Vec::new(), usage))
        }
        fn price(&self) -> Option<Price> {
            Some(Price {
                input: 1.0,
                output: 1.0,
                cache_read: 0.0,
                cache_write: 0.0,
            })
        }
    }

    #[tokio::test]
    async fn no_call_is_sent_that_what_is_spent_leaves_no_room_for() {
        let model = Counting(AtomicU32::new(0));
        let request = ModelRequest::new("s".into(), Vec::new(), Vec::new().into(), 100);
        let estimate = model.price().unwrap().estimate_micros(&request);
        // Room for the first call and what it costs (1,100), not for a second estimate.
        let meter = CostMeter::new(Some(1100 + estimate - 1));
        let limit = std::time::Duration::from_secs(5);
        call_metered(&model, &meter, request.clone(), limit)
            .await
            .unwrap();
        assert_eq!(meter.spent(), 1100);
        let e = call_metered(&model, &meter, request, limit)
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::CostLimit);
        assert_eq!(
            model.0.load(Ordering::SeqCst),
            1,
            "the second call was not sent"
        );
    }

    /// A model that never answers.
    struct Hung;

    #[async_trait]
    impl Model for Hung {
        fn name(&self) -> String {
            "hung".into()
        }
        async fn complete(&self, _: ModelRequest) -> Result<ModelResponse, ModelError> {
            std::future::pending().await
        }
        fn price(&self) -> Option<Price> {
            Counting(AtomicU32::new(0)).price()
        }
    }

    #[tokio::test]
    async fn an_aborted_call_gives_its_reservation_back() {
        let meter = std::sync::Arc::new(CostMeter::new(Some(1_000_000)));
        let request = ModelRequest::new("s".into(), Vec::new(), Vec::new().into(), 100);
        let estimate = Hung.price().unwrap().estimate_micros(&request);
        let m = std::sync::Arc::clone(&meter);
        let call = tokio::spawn(async move {
            call_metered(&Hung, &m, request, std::time::Duration::from_secs(60)).await
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // Held by the call in flight...
        assert_eq!(meter.try_reserve(1_000_000 - estimate + 1), Ok(false));
        call.abort();
        let _ = call.await;
        // ...and given back when it is aborted.
        assert_eq!(meter.try_reserve(1_000_000), Ok(true));
        assert_eq!(meter.spent(), 0);
    }
}
