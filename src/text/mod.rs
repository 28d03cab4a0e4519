//! Text rules the crate shares, at the bottom of the layers: sentences and the binding rule,
//! words and the stop list, one-line forms, fence stripping, and path normal form.

mod sentences;
mod words;

pub(crate) use sentences::sentences;
pub use sentences::{binding_sentences, binds, normalise, without_binding};
pub(crate) use words::{is_stop_word, without_conjunctions, words};

/// A text on one line: every run of whitespace as one space, none at the ends.
#[inline]
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Removes a surrounding ``` fence, which models often add.
#[inline]
pub(crate) fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix("```") {
        let body = rest.split_once('\n').map(|x| x.1).unwrap_or("");
        return body.trim_end().trim_end_matches("```").trim();
    }
    t
}

/// A root-relative path in normal form, taken as written: `/` separators (a backslash or a
/// quote is part of a name, as on disk), no `.` or empty parts, `..` taken back, `.` for the
/// root. `None` for an absolute path or one that climbs above the root. The gate judges
/// resources this way, so a real file's name is never re-read as another path.
#[inline]
pub(crate) fn lexical_path(text: &str) -> Option<String> {
    if text.starts_with('/') || text.starts_with('\\') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            _ => parts.push(part),
        }
    }
    Some(if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    })
}

/// Whether `path` is `prefix` or below it (both in normal form; `.` holds everything).
#[inline]
pub(crate) fn within(path: &str, prefix: &str) -> bool {
    prefix == "."
        || path == prefix
        || (path.len() > prefix.len()
            && path.starts_with(prefix)
            && path.as_bytes()[prefix.len()] == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_holds_a_path_under_its_prefix_and_not_a_sibling_sharing_its_letters() {
        assert!(within("src/a.rs", "src"));
        assert!(within("src", "src"));
        assert!(within("anything", "."));
        assert!(!within("srcx/a.rs", "src"));
        assert!(!within("sr", "src"));
    }
}
