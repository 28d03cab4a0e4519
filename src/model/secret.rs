//! `ApiKey`: a provider key that never shows itself — `Debug` and `Display` print `[redacted]`,
//! it does not serialise, and `redact` takes it out of any text a provider sends back.

/// A provider's API key. Only the request that carries it reads it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key; an empty or blank one is none.
    pub fn new(key: impl Into<String>) -> Option<ApiKey> {
        let key = key.into().trim().to_string();
        (!key.is_empty()).then_some(ApiKey(key))
    }

    /// The key itself, for the one header that carries it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]` (a server may echo the
    /// key in an error).
    pub(crate) fn redact(&self, text: &str) -> String {
        text.replace(&self.0, "[redacted]")
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
        assert!(ApiKey::new("  ").is_none());
    }
}
