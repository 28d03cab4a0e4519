//! Secrets and their redaction: a secret (an API key) is found in a text in any of its common
//! encodings — as written, upper- or lower-cased, URL-encoded (once or twice), JSON-escaped,
//! hex, base64 (standard or URL-safe, padded or not) — and replaced by
//! `[redacted]`. The process keeps a registry of the secrets it holds, and every text that
//! leaves it — the event log's payloads, stdout, stderr, traces — passes [`scrub`] on the way.

use std::borrow::Cow;
use std::sync::RwLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// What a secret is replaced by.
pub(crate) const REDACTED: &str = "[redacted]";

/// The shortest secret the process-wide registry takes: a shorter one would match ordinary
/// words of the texts it scrubs (a key's own errors are still redacted of it, see
/// [`Redactor`]).
pub(crate) const MIN_REGISTERED: usize = 8;

/// The forms a secret may take in a text: as written, URL-encoded (each byte outside the
/// unreserved set as `%XX`; and that again), JSON-escaped (quotes, backslashes, control
/// characters, and `/` as `\/`), hex, base64 (standard and URL-safe, with and without its
/// padding). Letter case is matched loosely, so upper- and lower-cased forms are found too.
fn forms(secret: &str) -> Vec<String> {
    let mut out = vec![secret.to_string()];
    let mut url = String::with_capacity(secret.len() * 3);
    for b in secret.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    out.push(url.replace("%20", "+"));
    // Twice URL-encoded (a URL inside a URL's query).
    out.push(url.replace('%', "%25"));
    out.push(url);
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    out.push(hex);
    let standard = base64(secret.as_bytes(), b"+/");
    out.push(standard.trim_end_matches('=').to_string());
    out.push(
        base64(secret.as_bytes(), b"-_")
            .trim_end_matches('=')
            .to_string(),
    );
    out.push(standard);
    if let Ok(json) = serde_json::to_string(secret) {
        let inner = json[1..json.len() - 1].to_string();
        out.push(inner.replace('/', "\\/"));
        out.push(inner);
    }
    out.sort();
    out.dedup();
    out
}

/// `bytes` in base64 with these two last letters of the alphabet (`+/` standard, `-_` for
/// URLs), padded with `=`.
fn base64(bytes: &[u8], last: &[u8; 2]) -> String {
    const LETTERS: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let letter = |i: u32| -> char {
        let i = (i & 63) as usize;
        char::from(*LETTERS.get(i).unwrap_or(&last[i & 1]))
    };
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(letter(n >> (18 - 6 * i)));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Finds any form of a set of secrets in a text.
#[derive(Clone)]
pub(crate) struct Redactor {
    matcher: Option<AhoCorasick>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redactor([redacted])")
    }
}

impl Redactor {
    /// A redactor of these secrets (empty ones are left out).
    pub(crate) fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Redactor {
        let patterns: Vec<String> = secrets
            .into_iter()
            .filter(|s| !s.is_empty())
            .flat_map(forms)
            .collect();
        let matcher = (!patterns.is_empty())
            .then(|| {
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&patterns)
                    .ok()
            })
            .flatten();
        Redactor { matcher }
    }

    /// `text` with every form of every secret replaced by `[redacted]`; borrowed when none
    /// occurs.
    pub(crate) fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.replaced(text) {
            Some(out) => Cow::Owned(out),
            None => Cow::Borrowed(text),
        }
    }

    /// `text` redacted, when a secret occurs in it.
    fn replaced(&self, text: &str) -> Option<String> {
        let m = self.matcher.as_ref().filter(|m| m.is_match(text))?;
        let mut out = String::with_capacity(text.len());
        m.replace_all_with(text, &mut out, |_, _, out| {
            out.push_str(REDACTED);
            true
        });
        Some(out)
    }
}

/// The secrets the process holds, and their redactor.
static REGISTRY: RwLock<Option<(Vec<String>, Redactor)>> = RwLock::new(None);

/// Adds a secret the process holds to those [`scrub`] takes out (one shorter than eight bytes
/// is not registered: it would match ordinary text).
pub(crate) fn register(secret: &str) {
    if secret.len() < MIN_REGISTERED {
        return;
    }
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    let mut secrets = registry.take().map(|(s, _)| s).unwrap_or_default();
    if !secrets.iter().any(|s| s == secret) {
        secrets.push(secret.to_string());
    }
    let redactor = Redactor::new(secrets.iter().map(String::as_str));
    *registry = Some((secrets, redactor));
}

/// `text` with every registered secret, in any of its forms, replaced by `[redacted]`;
/// borrowed (and free) when the process holds none.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let registry = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    match registry.as_ref() {
        Some((_, redactor)) => match redactor.replaced(text) {
            Some(out) => Cow::Owned(out),
            None => Cow::Borrowed(text),
        },
        None => Cow::Borrowed(text),
    }
}

/// `text`, scrubbed in place of a copy: the same string when no secret occurs in it.
pub(crate) fn scrubbed(text: String) -> String {
    match scrub(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(out) => out,
    }
}

/// A JSON value with every string in it (keys too) scrubbed as [`scrub`] does.
pub(crate) fn scrubbed_value(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(scrubbed(s)),
        Value::Array(items) => Value::Array(items.into_iter().map(scrubbed_value).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (scrubbed(k), scrubbed_value(v)))
                .collect(),
        ),
        other => other,
    }
}

/// A writer that scrubs what passes through it (stderr's traces); each write is scrubbed
/// whole, and a tracing line is written in one.
pub(crate) struct ScrubbingWriter<W>(pub(crate) W);

impl<W: std::io::Write> std::io::Write for ScrubbingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => self.0.write_all(scrub(text).as_bytes())?,
            Err(_) => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_common_form_of_a_secret_is_redacted() {
        let key = "sk-Te/st+Key=0123";
        let r = Redactor::new([key]);
        for text in [
            "sk-Te/st+Key=0123",
            "SK-TE/ST+KEY=0123",
            "sk-te/st+key=0123",
            "sk-Te%2Fst%2BKey%3D0123",
            "sk-te%2fst%2bkey%3d0123",
            "sk-Te\\/st+Key=0123",
            "sk-Te%252Fst%252BKey%253D0123",
            "736b2d54652f73742b4b65793d30313233",
            "736B2D54652F73742B4B65793D30313233",
            "c2stVGUvc3QrS2V5PTAxMjM=",
            "c2stVGUvc3QrS2V5PTAxMjM",
        ] {
            let text = format!("id req-{text}!");
            assert_eq!(r.redact(&text), "id req-[redacted]!", "{text}");
        }
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        assert!(matches!(
            Redactor::new([""]).redact("x"),
            Cow::Borrowed("x")
        ));
    }

    #[test]
    fn the_registry_scrubs_what_it_holds_and_nothing_short() {
        register("sk-registry-test-0042");
        register("short");
        assert_eq!(scrub("a SK-REGISTRY-TEST-0042 b"), "a [redacted] b");
        assert_eq!(scrub("a short b"), "a short b");
        let mut out = Vec::new();
        std::io::Write::write_all(
            &mut ScrubbingWriter(&mut out),
            b"key=sk-registry-test-0042\n",
        )
        .unwrap();
        assert_eq!(out, b"key=[redacted]\n");
    }
}
