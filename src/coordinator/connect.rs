//! `connect`: the model a `--model` spec names — the offline explorer, or a provider's model
//! over HTTP (`model::connect_provider`).

use std::sync::Arc;
use std::time::Duration;

use crate::explorer::OfflineModel;
use crate::model::{
    connect_provider, ConnectError, Env, HttpOptions, Model, ModelSpec, PriceTable, Provider,
};

/// Builds the model a spec names. `offline_latency` slows the offline model (demos, tests);
/// `window` overrides the model's context window; a missing key or a bad base URL is an
/// error naming the variable.
/// ```
/// use baton::model::{HttpOptions, ModelSpec, PriceTable};
/// let spec = ModelSpec::parse("offline").unwrap();
/// let no_env = |_: &str| None;
/// let model = baton::connect(&spec, &no_env, &PriceTable::default(), None, HttpOptions::default(),
///     std::time::Duration::ZERO).unwrap();
/// assert_eq!(model.name(), "offline");
/// let spec = ModelSpec::parse("anthropic:claude-sonnet-4-5").unwrap();
/// let Err(err) = baton::connect(&spec, &no_env, &PriceTable::default(), None,
///     HttpOptions::default(), std::time::Duration::ZERO) else { panic!("connected without a key") };
/// assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
/// ```
pub fn connect(
    spec: &ModelSpec,
    env: Env<'_>,
    prices: &PriceTable,
    window: Option<usize>,
    options: HttpOptions,
    offline_latency: Duration,
) -> Result<Arc<dyn Model>, ConnectError> {
    match spec.provider {
        Provider::Offline => Ok(Arc::new(
            OfflineModel::with_latency(offline_latency).with_window(window),
        )),
        _ => connect_provider(spec, env, prices, window, options),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--context-window` holds for the offline model too: compaction triggers against it.
    #[test]
    fn the_offline_model_takes_the_window_given() {
        let spec = ModelSpec::parse("offline").unwrap();
        let none = |_: &str| None;
        let connect_with = |window| {
            connect(
                &spec,
                &none,
                &PriceTable::default(),
                window,
                HttpOptions::default(),
                Duration::ZERO,
            )
            .unwrap()
            .context_window()
        };
        assert_eq!(connect_with(Some(1024)), 1024);
        assert_eq!(connect_with(None), 200_000);
    }
}
