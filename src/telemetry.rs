//! Tracing: the run, each subagent, each model call and each tool call is a span carrying the
//! run id, the subagent id and the event sequence numbers the log uses (a subagent's span its
//! `subagent_spawned` seq; a tool call's span its call id, which its `tool_called` event
//! holds; every logged event a `logged` debug event with its seq), so a trace and the event
//! log join. Off unless `BATON_LOG` (env-filter syntax, e.g. `baton=debug`) is set: then
//! spans and events go to stderr as text or JSON lines. With the `otlp` cargo feature and
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans are also exported over OTLP/HTTP (JSON).

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// The environment variable holding the filter.
pub const LOG_ENV: &str = "BATON_LOG";

/// How spans and events are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line: each event, and each span as it closes, with its fields and
    /// those of the spans around it.
    Json,
}

/// Flushes what is still buffered (the OTLP exporter's last batch) when dropped.
#[must_use = "dropping the guard at once flushes nothing later"]
pub struct TelemetryGuard {
    #[cfg(feature = "otlp")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(provider) = self.provider.take() {
            // An exporter that cannot reach its endpoint at exit loses spans, never the run.
            let _ = provider.shutdown();
        }
    }
}

message_error! {
    /// Why tracing could not be set up (one line, naming the variable at fault).
    TelemetryError
}

/// Installs the process's subscriber from `BATON_LOG` (nothing when it is unset or empty, so
/// tracing costs one relaxed load per callsite) and, with the `otlp` feature, the OTLP
/// exporter when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. An unreadable filter is an error naming
/// it.
pub fn init(format: LogFormat) -> Result<TelemetryGuard, TelemetryError> {
    let filter = match std::env::var_os(LOG_ENV) {
        None => String::new(),
        Some(value) => value
            .into_string()
            .map_err(|_| format!("{LOG_ENV}: not valid UTF-8"))?,
    };
    let guard = TelemetryGuard {
        #[cfg(feature = "otlp")]
        provider: None,
    };
    #[cfg(feature = "otlp")]
    let otlp = otlp_provider()?;
    #[cfg(not(feature = "otlp"))]
    let otlp: Option<()> = None;
    if filter.trim().is_empty() && otlp.is_none() {
        return Ok(guard);
    }
    let env_filter = |text: &str| {
        tracing_subscriber::EnvFilter::builder()
            .parse(text)
            .map_err(|e| format!("{LOG_ENV}: `{text}` is not a filter: {e}"))
    };
    // Every line is scrubbed of the keys the process holds on its way out.
    let scrubbed_stderr = || crate::redact::ScrubbingWriter(std::io::stderr());
    let stderr = if filter.trim().is_empty() {
        None
    } else {
        let spans = tracing_subscriber::fmt::format::FmtSpan::CLOSE;
        let layer = match format {
            LogFormat::Text => tracing_subscriber::fmt::layer()
                .with_writer(scrubbed_stderr)
                .with_span_events(spans)
                .boxed(),
            LogFormat::Json => tracing_subscriber::fmt::layer()
                .json()
                .with_writer(scrubbed_stderr)
                .with_span_events(spans)
                .with_current_span(true)
                .with_span_list(false)
                .boxed(),
        };
        Some(layer.with_filter(env_filter(&filter)?))
    };
    let registry = tracing_subscriber::registry().with(stderr);
    #[cfg(feature = "otlp")]
    {
        let mut guard = guard;
        let layer = match &otlp {
            Some(provider) => {
                use opentelemetry::trace::TracerProvider as _;
                let filter = if filter.trim().is_empty() {
                    "baton=info".to_string()
                } else {
                    filter.clone()
                };
                Some(
                    tracing_opentelemetry::layer()
                        .with_tracer(provider.tracer("baton"))
                        .with_filter(env_filter(&filter)?),
                )
            }
            None => None,
        };
        registry
            .with(layer)
            .try_init()
            .map_err(|e| format!("tracing: {e}"))?;
        guard.provider = otlp;
        Ok(guard)
    }
    #[cfg(not(feature = "otlp"))]
    {
        let _ = otlp;
        registry.try_init().map_err(|e| format!("tracing: {e}"))?;
        Ok(guard)
    }
}

/// The OTLP/HTTP (JSON) exporter, batching on its own thread, when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set.
#[cfg(feature = "otlp")]
fn otlp_provider() -> Result<Option<opentelemetry_sdk::trace::SdkTracerProvider>, String> {
    use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
    let set = |name: &str| match std::env::var_os(name) {
        None => Ok(false),
        Some(value) => value
            .into_string()
            .map(|v| !v.trim().is_empty())
            .map_err(|_| format!("{name}: not valid UTF-8")),
    };
    if !set("OTEL_EXPORTER_OTLP_ENDPOINT")? && !set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")? {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpJson)
        .with_timeout(std::time::Duration::from_secs(10))
        .with_headers(Default::default())
        .build()
        .map_err(|e| format!("OTLP exporter: {e}"))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("baton")
        .build();
    Ok(Some(
        opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build(),
    ))
}
