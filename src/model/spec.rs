//! `--model PROVIDER:MODEL`: which model plays a role, and `connect_provider`, which builds a
//! provider's model from the spec, the environment (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`,
//! `OPENAI_BASE_URL`), the price table and the HTTP options.

use std::sync::Arc;

use super::{AnthropicModel, ApiKey, HttpOptions, Model, OpenAiModel, PriceTable};

/// A model's provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// The deterministic local explorer.
    Offline,
    /// Anthropic's Messages API.
    Anthropic,
    /// An OpenAI-compatible chat completions endpoint.
    OpenAi,
}

/// `offline`, `anthropic:MODEL` or `openai:MODEL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// The provider.
    pub provider: Provider,
    /// The model's name at the provider (empty for offline).
    pub model: String,
}

impl ModelSpec {
    /// Parses a spec; the error says what is accepted.
    pub fn parse(text: &str) -> Result<ModelSpec, SpecError> {
        let text = text.trim();
        if text == "offline" {
            return Ok(ModelSpec {
                provider: Provider::Offline,
                model: String::new(),
            });
        }
        let (name, model) = text.split_once(':').unwrap_or((text, ""));
        let provider = match name {
            "anthropic" => Provider::Anthropic,
            "openai" => Provider::OpenAi,
            _ => {
                return Err(SpecError(format!(
                    "`{text}` is not a model: use offline, anthropic:MODEL or openai:MODEL"
                )))
            }
        };
        if model.trim().is_empty() || model.chars().any(char::is_control) {
            return Err(SpecError(format!(
                "`{text}` names no model: use {name}:MODEL"
            )));
        }
        Ok(ModelSpec {
            provider,
            model: model.trim().to_string(),
        })
    }
}

/// Reads one environment variable; none when unset or empty. Given as a function so tests
/// and embedders need not touch the process's environment.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Why a `--model` spec cannot be read: what is accepted, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

/// Why a provider's model could not be built (one line, naming the variable at fault; the key
/// itself is never shown).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// A key holds a character an HTTP header cannot carry.
    #[error("{0} holds a character an HTTP header cannot carry (a space, a control character or non-ASCII)")]
    KeyNotHeaderSafe(&'static str),
    /// Anthropic needs a key and none is set.
    #[error("ANTHROPIC_API_KEY is not set: anthropic:MODEL needs an API key")]
    MissingAnthropicKey,
    /// A base URL that cannot be used.
    #[error("{var}: {reason}")]
    BaseUrl {
        /// The variable that holds it.
        var: &'static str,
        /// Why it cannot be used.
        #[source]
        reason: super::EndpointError,
    },
    /// The offline model is not a provider's: the explorer builds it (`baton::connect`).
    #[error("the offline model is not reached over HTTP")]
    Offline,
    /// The spec itself cannot be read (a role's `model`).
    #[error("model {0}")]
    Spec(#[source] SpecError),
}

/// Builds the model a provider's spec names. `window` overrides the context window; a missing
/// key or a bad base URL is an error naming the variable.
pub fn connect_provider(
    spec: &ModelSpec,
    env: Env<'_>,
    prices: &PriceTable,
    window: Option<usize>,
    options: HttpOptions,
) -> Result<Arc<dyn Model>, ConnectError> {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    // A key goes in a header: only visible ASCII can (the key itself is never shown).
    let key = |name: &'static str| -> Result<Option<ApiKey>, ConnectError> {
        match var(name) {
            Some(k) if k.trim().chars().any(|c| !c.is_ascii_graphic()) => {
                Err(ConnectError::KeyNotHeaderSafe(name))
            }
            k => Ok(k.and_then(ApiKey::new)),
        }
    };
    let provider = match spec.provider {
        Provider::Offline => return Err(ConnectError::Offline),
        Provider::Anthropic => "anthropic",
        Provider::OpenAi => "openai",
    };
    let price = prices.price(provider, &spec.model);
    let window = window
        .or_else(|| prices.context_window(provider, &spec.model))
        .unwrap_or(super::price::UNKNOWN_CONTEXT_WINDOW);
    match spec.provider {
        Provider::Anthropic => {
            let key = key("ANTHROPIC_API_KEY")?.ok_or(ConnectError::MissingAnthropicKey)?;
            let base = var("ANTHROPIC_BASE_URL");
            let model = AnthropicModel::new(&spec.model, key, base.as_deref(), options).map_err(
                |reason| ConnectError::BaseUrl {
                    var: "ANTHROPIC_BASE_URL",
                    reason,
                },
            )?;
            Ok(Arc::new(model.with_window(window).with_price(price)))
        }
        _ => {
            let key = key("OPENAI_API_KEY")?;
            let base = var("OPENAI_BASE_URL");
            let model =
                OpenAiModel::new(&spec.model, key, base.as_deref(), options).map_err(|reason| {
                    ConnectError::BaseUrl {
                        var: "OPENAI_BASE_URL",
                        reason,
                    }
                })?;
            Ok(Arc::new(model.with_window(window).with_price(price)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_or_say_what_is_accepted() {
        assert_eq!(
            ModelSpec::parse("offline").unwrap().provider,
            Provider::Offline
        );
        let s = ModelSpec::parse("anthropic:claude-sonnet-4-5").unwrap();
        assert_eq!(
            (s.provider, s.model.as_str()),
            (Provider::Anthropic, "claude-sonnet-4-5")
        );
        for bare in ["openai:", "openai"] {
            let e = ModelSpec::parse(bare).unwrap_err().to_string();
            assert!(e.ends_with("names no model: use openai:MODEL"), "{e}");
        }
        assert!(ModelSpec::parse("gemini:x")
            .unwrap_err()
            .to_string()
            .contains("anthropic:MODEL"));
    }

    /// Connects `spec` with this environment and window, the defaults otherwise.
    fn try_connect(
        spec: &str,
        env: Env<'_>,
        window: Option<usize>,
    ) -> Result<Arc<dyn Model>, String> {
        let spec = ModelSpec::parse(spec).unwrap();
        let options = HttpOptions::default();
        connect_provider(&spec, env, &PriceTable::default(), window, options)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_missing_key_names_its_variable_and_a_window_is_taken() {
        let none = |_: &str| None;
        let e = try_connect("anthropic:claude-sonnet-4-5", &none, None)
            .err()
            .unwrap();
        assert!(e.contains("ANTHROPIC_API_KEY"));
        let m = try_connect("openai:llama3", &none, Some(8192)).unwrap();
        assert_eq!(m.context_window(), 8192);
        assert_eq!(m.price(), None);
        // An unknown model without a window given: 32,768 tokens.
        let m = try_connect("openai:llama3", &none, None).unwrap();
        assert_eq!(m.context_window(), 32_768);
        let control = |k: &str| (k == "OPENAI_API_KEY").then(|| "sk-AB\u{1}CD".to_string());
        let e = try_connect("openai:llama3", &control, None).err().unwrap();
        assert!(e.contains("OPENAI_API_KEY") && !e.contains("sk-AB"), "{e}");
        let bad = |k: &str| (k == "OPENAI_BASE_URL").then(|| "ftp://x".to_string());
        let e = try_connect("openai:llama3", &bad, None).err().unwrap();
        assert!(e.contains("OPENAI_BASE_URL"), "{e}");
    }
}
