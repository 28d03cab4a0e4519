//! What models cost and how much they hold: a table of known models (price per million
//! tokens, context window), found by the longest prefix of the model's name, and a TOML file
//! that adds to it or overrides it (`--prices FILE`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{ModelRequest, Usage};

/// Why a prices file cannot be used (one line).
#[derive(Debug, thiserror::Error)]
pub enum PriceTableError {
    /// It is not the TOML table it should be: the parser's message, on one line.
    #[error("{0}")]
    Toml(String),
    /// An entry's value is out of range.
    #[error("{0}")]
    Invalid(String),
}

/// A call that would take the run past its cost limit, in millionths of a dollar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the run's cost limit (${:.4}) would be passed: ${:.4} spent, and this call may cost up to ${:.4}",
    dollars(*limit),
    dollars(*spent),
    dollars(*estimate)
)]
pub struct CostLimitError {
    /// The limit.
    pub limit: u64,
    /// Spent so far.
    pub spent: u64,
    /// What the call may cost.
    pub estimate: u64,
}

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input read from the prompt cache.
    #[serde(default)]
    pub cache_read: f64,
    /// Input written to the prompt cache.
    #[serde(default)]
    pub cache_write: f64,
}

impl Price {
    /// What `usage` cost, in millionths of a dollar (tokens × dollars per million tokens).
    pub fn cost_micros(&self, usage: &Usage) -> u64 {
        let micros = usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_tokens as f64 * self.cache_read
            + usage.cache_write_tokens as f64 * self.cache_write;
        micros.ceil().max(0.0) as u64
    }

    /// What `request` may cost, in millionths of a dollar: its estimated input (about four
    /// bytes a token, with a quarter more for tokenizers that count more) at the uncached price
    /// (or the cache-write price, when higher), and every answer token allowed. An estimate,
    /// not a bound: a provider's count of the input can still exceed it.
    pub fn estimate_micros(&self, request: &ModelRequest) -> u64 {
        let output = f64::from(request.max_tokens) * self.output;
        (self.input_estimate_micros(request) + output)
            .ceil()
            .max(0.0) as u64
    }

    /// What `request`'s reserved input may cost, in millionths of a dollar.
    pub(crate) fn input_estimate_micros(&self, request: &ModelRequest) -> f64 {
        request.reserved_input_tokens() as f64 * self.input.max(self.cache_write)
    }

    fn valid(&self) -> bool {
        [self.input, self.output, self.cache_read, self.cache_write]
            .iter()
            .all(|p| p.is_finite() && *p >= 0.0 && *p < 1e6)
    }
}

/// Dollars from millionths of a dollar.
pub(crate) fn dollars(micros: u64) -> f64 {
    micros as f64 / 1e6
}

/// (name prefix, price, context window). Prices as published when this table was written;
/// override them with `--prices FILE`.
const KNOWN: &[(&str, Price, usize)] = &[
    ("claude-opus-4-5", p(5.0, 25.0, 0.5, 6.25), 200_000),
    ("claude-opus-4", p(15.0, 75.0, 1.5, 18.75), 200_000),
    ("claude-sonnet-4", p(3.0, 15.0, 0.3, 3.75), 200_000),
    ("claude-3-7-sonnet", p(3.0, 15.0, 0.3, 3.75), 200_000),
    ("claude-3-5-sonnet", p(3.0, 15.0, 0.3, 3.75), 200_000),
    ("claude-3-opus", p(15.0, 75.0, 1.5, 18.75), 200_000),
    ("claude-3-haiku", p(0.25, 1.25, 0.03, 0.3), 200_000),
    ("claude-haiku-4-5", p(1.0, 5.0, 0.1, 1.25), 200_000),
    ("claude-3-5-haiku", p(0.8, 4.0, 0.08, 1.0), 200_000),
    ("gpt-5-nano", p(0.05, 0.4, 0.005, 0.0), 400_000),
    ("gpt-5-mini", p(0.25, 2.0, 0.025, 0.0), 400_000),
    ("gpt-5", p(1.25, 10.0, 0.125, 0.0), 400_000),
    ("gpt-4.1-nano", p(0.1, 0.4, 0.025, 0.0), 1_047_576),
    ("gpt-4.1-mini", p(0.4, 1.6, 0.1, 0.0), 1_047_576),
    ("gpt-4.1", p(2.0, 8.0, 0.5, 0.0), 1_047_576),
    ("gpt-4o-mini", p(0.15, 0.6, 0.075, 0.0), 128_000),
    ("gpt-4o-2024-05-13", p(5.0, 15.0, 0.0, 0.0), 128_000),
    ("gpt-4o", p(2.5, 10.0, 1.25, 0.0), 128_000),
    ("o4-mini", p(1.1, 4.4, 0.275, 0.0), 200_000),
    ("o3", p(2.0, 8.0, 0.5, 0.0), 200_000),
];

const fn p(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
    Price {
        input,
        output,
        cache_read,
        cache_write,
    }
}

/// The context window assumed for a model the table does not know: small enough for most
/// local servers; `--context-window` sets the real one.
pub const UNKNOWN_CONTEXT_WINDOW: usize = 32_768;

fn known(model: &str) -> Option<&'static (&'static str, Price, usize)> {
    KNOWN
        .iter()
        .filter(|(prefix, _, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
}

/// The published price of a known model.
pub fn known_price(model: &str) -> Option<Price> {
    known(model).map(|k| k.1)
}

/// The context window of a known model.
pub fn known_context_window(model: &str) -> Option<usize> {
    known(model).map(|k| k.2)
}

/// One entry of a prices file.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    input: f64,
    output: f64,
    #[serde(default)]
    cache_read: f64,
    #[serde(default)]
    cache_write: f64,
    #[serde(default)]
    context_window: Option<usize>,
}

/// Prices and windows from a TOML file, each table named `provider:model` or `model`:
///
/// ```toml
/// ["openai:gpt-4o"]
/// input = 2.5          # dollars per million uncached input tokens
/// output = 10.0
/// cache_read = 1.25    # optional, default 0
/// cache_write = 0.0    # optional, default 0
/// context_window = 128000  # optional
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    entries: HashMap<String, Entry>,
}

impl PriceTable {
    /// Parses a prices file; the error names what is wrong in one line.
    pub fn parse(text: &str) -> Result<PriceTable, PriceTableError> {
        let entries: HashMap<String, Entry> = toml::from_str(text)
            .map_err(|e| PriceTableError::Toml(crate::text::one_line(&e.to_string())))?;
        for (name, entry) in &entries {
            let price = p(
                entry.input,
                entry.output,
                entry.cache_read,
                entry.cache_write,
            );
            if !price.valid() {
                return Err(PriceTableError::Invalid(format!(
                    "`{name}`: a price must be a number from 0 to 1,000,000 dollars per million tokens"
                )));
            }
            if entry
                .context_window
                .is_some_and(|w| !(1024..=100_000_000).contains(&w))
            {
                return Err(PriceTableError::Invalid(format!(
                    "`{name}`: context_window must be from 1,024 to 100,000,000 tokens"
                )));
            }
        }
        Ok(PriceTable { entries })
    }

    /// The entry for `provider:model`: by the longest prefix of the name, a
    /// `provider:`-qualified key before a bare one (so `gpt-4o` covers `gpt-4o-2024-08-06`, as
    /// the built-in table does).
    fn entry(&self, provider: &str, model: &str) -> Option<&Entry> {
        let qualified = format!("{provider}:{model}");
        let longest = |name: &str, qualified_keys: bool| {
            self.entries
                .iter()
                .filter(|(k, _)| k.contains(':') == qualified_keys && name.starts_with(k.as_str()))
                .max_by_key(|(k, _)| k.len())
                .map(|(_, e)| e)
        };
        longest(&qualified, true).or_else(|| longest(model, false))
    }

    /// The price of `provider:model`: this table's, else the known one.
    pub fn price(&self, provider: &str, model: &str) -> Option<Price> {
        self.entry(provider, model)
            .map(|e| p(e.input, e.output, e.cache_read, e.cache_write))
            .or_else(|| known_price(model))
    }

    /// The context window of `provider:model`: this table's, else the known one.
    pub fn context_window(&self, provider: &str, model: &str) -> Option<usize> {
        self.entry(provider, model)
            .and_then(|e| e.context_window)
            .or_else(|| known_context_window(model))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The estimate reserved before a call: its input (about four bytes a token, a quarter
    /// more) at the higher of the input and cache-write prices, and every answer token it may
    /// take at the output price.
    #[test]
    fn an_estimate_is_the_reserved_input_at_the_higher_price_and_every_answer_token() {
        let request = ModelRequest::new("s".repeat(4000), Vec::new(), Vec::new().into(), 4096);
        assert_eq!(request.estimated_tokens(), 1000);
        assert_eq!(request.reserved_input_tokens(), 1250);
        let cheap_cache = Price {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 1.0,
        };
        assert_eq!(cheap_cache.estimate_micros(&request), 1250 * 3 + 4096 * 15);
        let dear_cache = Price {
            cache_write: 3.75,
            ..cheap_cache
        };
        assert_eq!(
            dear_cache.estimate_micros(&request),
            (1250.0f64 * 3.75 + 4096.0 * 15.0).ceil() as u64
        );
    }

    #[test]
    fn the_longest_known_prefix_wins() {
        assert_eq!(known_price("gpt-4o-mini-2024-07-18").unwrap().input, 0.15);
        assert_eq!(known_price("gpt-4o-2024-08-06").unwrap().input, 2.5);
        assert_eq!(known_context_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known_price("llama3"), None);
    }

    #[test]
    fn a_file_overrides_and_adds() {
        let table = PriceTable::parse(
            "[\"openai:gpt-4o\"]\ninput = 1.0\noutput = 2.0\n[local]\ninput = 0\noutput = 0\ncontext_window = 8192\n",
        )
        .unwrap();
        assert_eq!(table.price("openai", "gpt-4o").unwrap().input, 1.0);
        // A file's entry covers dated names too, before the built-in table.
        assert_eq!(
            table.price("openai", "gpt-4o-2024-08-06").unwrap().input,
            1.0
        );
        assert_eq!(table.price("anthropic", "gpt-4o").unwrap().input, 2.5);
        assert_eq!(table.context_window("openai", "local"), Some(8192));
        assert!(PriceTable::parse("[x]\ninput = -1\noutput = 0\n").is_err());
        assert!(PriceTable::parse("[x]\ninput = 1\n").is_err());
        assert!(PriceTable::parse("[x]\ninput = 1\noutput = 1\nwindow = 3\n").is_err());
    }

    #[test]
    fn cost_is_tokens_times_price_per_million() {
        let price = p(3.0, 15.0, 0.3, 3.75);
        let usage = Usage {
            input_tokens: 1000,
            output_tokens: 100,
            cache_read_tokens: 10_000,
            cache_write_tokens: 0,
        };
        // 3000 + 1500 + 3000 micro-dollars.
        assert_eq!(price.cost_micros(&usage), 7500);
    }
}

/// What a run has spent on models and reserved for calls in flight, against its cost limit
/// (none: no limit, still counted). Shared by every subagent of the run.
#[derive(Debug, Default)]
pub struct CostMeter {
    limit: Option<u64>,
    state: std::sync::Mutex<(u64, u64)>,
}

impl CostMeter {
    /// A meter with this limit in millionths of a dollar (none: no limit).
    pub fn new(limit: Option<u64>) -> CostMeter {
        CostMeter {
            limit,
            state: std::sync::Mutex::new((0, 0)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, u64)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The limit, in millionths of a dollar.
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Spent so far, in millionths of a dollar.
    pub fn spent(&self) -> u64 {
        self.lock().0
    }

    /// Whether a call estimated at `estimate` fits with what is spent (calls in flight will
    /// settle below their reservations).
    pub fn affords(&self, estimate: u64) -> bool {
        let spent = self.lock().0;
        self.limit
            .is_none_or(|l| spent.saturating_add(estimate) <= l)
    }

    /// Reserves `estimate` for a call about to be sent when it fits with what is spent and
    /// reserved; `Ok(false)` when it would fit once the calls in flight settle (try again
    /// then); an error saying why when what is spent already leaves no room.
    pub fn try_reserve(&self, estimate: u64) -> Result<bool, CostLimitError> {
        let mut s = self.lock();
        if let Some(limit) = self.limit {
            if s.0.saturating_add(estimate) > limit {
                return Err(CostLimitError {
                    limit,
                    spent: s.0,
                    estimate,
                });
            }
            if s.0.saturating_add(s.1).saturating_add(estimate) > limit {
                return Ok(false);
            }
        }
        s.1 = s.1.saturating_add(estimate);
        Ok(true)
    }

    /// Reserves `estimate` for a call about to be sent, waiting while calls in flight hold the
    /// room it needs; an error when what is spent already leaves none.
    pub async fn reserve(&self, estimate: u64) -> Result<(), CostLimitError> {
        while !self.try_reserve(estimate)? {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// Settles a reservation with what the call cost.
    pub fn settle(&self, estimate: u64, cost: u64) {
        let mut s = self.lock();
        s.1 = s.1.saturating_sub(estimate);
        s.0 = s.0.saturating_add(cost);
    }
}

#[cfg(test)]
mod meter_tests {
    use super::*;

    #[tokio::test]
    async fn reservations_hold_room_until_settled_and_spending_closes_it() {
        let m = std::sync::Arc::new(CostMeter::new(Some(100)));
        m.reserve(60).await.unwrap();
        // Room held by a call in flight: a second call waits, not fails.
        assert_eq!(m.try_reserve(50), Ok(false));
        let waiting = {
            let m = std::sync::Arc::clone(&m);
            tokio::spawn(async move { m.reserve(50).await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(60)).await;
        assert!(!waiting.is_finished());
        m.settle(60, 20);
        waiting.await.unwrap().unwrap();
        assert_eq!(m.spent(), 20);
        // What is spent leaves no room: an error naming the limit.
        m.settle(50, 70);
        assert!(m.affords(10) && !m.affords(11));
        assert!(m
            .try_reserve(11)
            .unwrap_err()
            .to_string()
            .contains("$0.0001"));
        let free = CostMeter::new(None);
        free.reserve(u64::MAX).await.unwrap();
        assert!(free.affords(u64::MAX));
    }
}
