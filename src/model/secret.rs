//! `ApiKey`: a provider key that never shows itself — `Debug` and `Display` print `[redacted]`,
//! it does not serialise, `redact` takes it (in any of its common encodings) out of any text a
//! provider sends back, and the process's output is scrubbed of it (`crate::redact`).

use crate::redact::Redactor;

/// A provider's API key. Only the request that carries it reads it.
#[derive(Clone)]
pub struct ApiKey {
    key: String,
    redactor: Redactor,
}

impl PartialEq for ApiKey {
    fn eq(&self, other: &ApiKey) -> bool {
        self.key == other.key
    }
}

impl Eq for ApiKey {}

impl ApiKey {
    /// Wraps a key; an empty or blank one is none. The key is registered with the process's
    /// redaction, so no output of the process shows it.
    pub fn new(key: impl Into<String>) -> Option<ApiKey> {
        let key = key.into().trim().to_string();
        if key.is_empty() {
            return None;
        }
        crate::redact::register(&key);
        Some(ApiKey {
            redactor: Redactor::new([key.as_str()]),
            key,
        })
    }

    /// The key itself, for the one header that carries it.
    pub(crate) fn expose(&self) -> &str {
        &self.key
    }

    /// `text` with every occurrence of the key — as written, in either letter case,
    /// URL-encoded or JSON-escaped — replaced by `[redacted]` (a server may echo the key in an
    /// error, a model in its answer).
    pub(crate) fn redact(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    /// The key's redactor for a model's answers, when the key is long enough to be told from
    /// the words of an answer (a local server's placeholder key, `EMPTY` or `test`, would
    /// match paths, quotes and the handoff's own field names).
    pub(crate) fn answer_redactor(&self) -> Option<&Redactor> {
        (self.key.len() >= crate::redact::MIN_REGISTERED).then_some(&self.redactor)
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl std::fmt::Display for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_never_shows_itself() {
        let key = ApiKey::new("sk-secret-123").unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        assert_eq!(key.to_string(), "[redacted]");
        assert_eq!(format!("{:?}", Some(&key)), "Some(ApiKey([redacted]))");
        assert_eq!(key.redact("bad key sk-secret-123!"), "bad key [redacted]!");
        assert_eq!(
            key.redact("SK-SECRET-123 sk%2Dsecret"),
            "[redacted] sk%2Dsecret"
        );
        assert!(ApiKey::new("  ").is_none());
    }
}
