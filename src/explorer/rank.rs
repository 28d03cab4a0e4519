//! Pure ranking for the offline explorer: parsing tool outputs back, recognising definitions,
//! scoring hit lines, and finding where a definition's block ends.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;

use crate::source::leading_path;
pub(crate) use crate::source::path_factor;

/// `path:count` lines of a count-mode grep (a path may be quoted).
pub(crate) fn parse_counts(content: &str) -> Vec<(String, usize)> {
    content
        .lines()
        .filter(|l| !l.starts_with('['))
        .filter_map(|l| {
            let (path, rest) = leading_path(l)?;
            Some((path, rest.strip_prefix(':')?.trim().parse().ok()?))
        })
        .collect()
}

/// The `N files searched` figure a grep reports.
pub(crate) fn files_searched(content: &str) -> usize {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"(\d+) files searched").expect("static regex"));
    re.captures(content)
        .and_then(|c| c[1].parse().ok())
        .unwrap_or(0)
}

/// The `N files could not be searched` figure a grep reports (0 when it says none).
pub(crate) fn files_skipped(content: &str) -> usize {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re =
        RE.get_or_init(|| Regex::new(r"(\d+) files could not be searched").expect("static regex"));
    re.captures(content)
        .and_then(|c| c[1].parse().ok())
        .unwrap_or(0)
}

/// The `not searched: N hidden or ignored entries` figure a grep reports (0 when none).
pub(crate) fn not_searched(content: &str) -> usize {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"not searched: (\d+) hidden or ignored entries").expect("static regex")
    });
    re.captures(content)
        .and_then(|c| c[1].parse().ok())
        .unwrap_or(0)
}

/// `path:line:text` lines of a content-mode grep (a path may be quoted).
pub(crate) fn parse_hits(content: &str) -> Vec<(String, u32, String)> {
    content
        .lines()
        .filter_map(|l| {
            let (path, rest) = leading_path(l)?;
            let (number, text) = rest.strip_prefix(':')?.split_once(':')?;
            Some((path, number.parse().ok()?, text.to_string()))
        })
        .collect()
}

/// A read_file output: its path and numbered lines.
pub(crate) fn parse_read(content: &str) -> Option<(String, Vec<(u32, String)>)> {
    let mut lines = content.lines();
    let header = lines.next()?;
    // A quoted path ends where its quote does; a plain one holds no space.
    let path = if header.starts_with('"') {
        let (path, rest) = leading_path(header)?;
        rest.starts_with(" (lines ").then_some(path)?
    } else {
        header.split_once(" (lines ")?.0.to_string()
    };
    let numbered = lines
        .filter_map(|l| {
            let (number, text) = l.split_once('\t')?;
            Some((number.trim().parse().ok()?, text.to_string()))
        })
        .collect();
    Some((path, numbered))
}

/// What a definition line defines: its keyword and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Definition {
    pub(crate) keyword: String,
    /// The name, as matched against the question (`Debug for HeaderValue` for an impl).
    pub(crate) name: String,
    /// What the line says of it, verbatim — the text a claim quotes (`fmt::Debug for
    /// HeaderValue`, `From<StateID> for SmallIndex`).
    pub(crate) shown: String,
}

/// Recognises a definition: `fn`, `struct`, `enum`, `trait`, `impl`, `class`, `def`, `const`,
/// `static`, `type`, `mod`, `macro_rules!`, `union`, `interface`, `function`.
pub(crate) fn definition(line: &str) -> Option<Definition> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r"^\s*(?:#\[[^\]]*\]\s*)*(?:(?:pub(?:\([^)]*\))?|export|default|async|unsafe|extern(?:\s+\x22[^\x22]*\x22)?|const|static|abstract|final|public|private|protected)\s+)*(fn|struct|enum|trait|impl|class|def|const|static|type|mod|macro_rules!|union|interface|function|let)(?:\s*<[^>]*>)?\s+((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)",
        )
        .expect("static regex")
    });
    let c = re.captures(line)?;
    let keyword = c[1].to_string();
    if keyword == "let" {
        return None;
    }
    let named = c.get(2).expect("the regex has a name group");
    let mut name = c[2].rsplit("::").next().unwrap_or(&c[2]).to_string();
    let mut shown = name.clone();
    if keyword == "impl" {
        // `impl<T> Trait for Type` names the type; `impl Type` names itself.
        static FOR: OnceLock<Regex> = OnceLock::new();
        let for_re = FOR.get_or_init(|| {
            Regex::new(r"\bfor\s+(?:[A-Za-z_][A-Za-z0-9_]*::)*([A-Za-z_][A-Za-z0-9_]*)")
                .expect("static regex")
        });
        if let Some(f) = for_re.captures_at(line, named.end()) {
            name = format!("{name} for {}", &f[1]);
            shown = line[named.start()..f.get(1).map_or(named.end(), |m| m.end())].to_string();
        }
    }
    Some(Definition {
        keyword,
        name,
        shown,
    })
}

/// The last line of the block a definition opens, from the lines that were read: brace
/// matching for brace languages, indentation for Python-like ones. Stops at the last line read.
pub(crate) fn block_end(lines: &[(u32, String)], start_index: usize) -> u32 {
    let Some((first_number, first)) = lines.get(start_index) else {
        return 0;
    };
    let last_read = lines.last().map(|l| l.0).unwrap_or(*first_number);
    let trimmed = first.trim_end();
    if trimmed.ends_with(':') && !trimmed.contains('{') {
        let indent = first.len() - first.trim_start().len();
        let mut end = *first_number;
        for (number, text) in &lines[start_index + 1..] {
            if text.trim().is_empty() {
                continue;
            }
            if text.len() - text.trim_start().len() <= indent {
                return end;
            }
            end = *number;
        }
        return end;
    }
    let mut depth: i64 = 0;
    let mut opened = false;
    for (number, text) in &lines[start_index..] {
        for ch in strip_strings(text).chars() {
            match ch {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                ';' if !opened && depth == 0 => return *number,
                _ => {}
            }
        }
        if opened && depth <= 0 {
            return *number;
        }
    }
    last_read
}

/// Removes string and char literals and `//` comments, so braces inside them are not counted.
fn strip_strings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            if c == '\\' {
                chars.next();
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '/' if chars.peek() == Some(&'/') => break,
            '\'' => {
                // A char literal like '{' or '\n'; a lifetime ('a) has no closing quote soon.
                let rest: String = chars.clone().take(3).collect();
                if rest.len() >= 2 && rest.chars().nth(1) == Some('\'') {
                    chars.next();
                    chars.next();
                } else if rest.starts_with('\\') && rest.chars().nth(2) == Some('\'') {
                    chars.next();
                    chars.next();
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// One hit line with the terms found on it.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    pub(crate) path: String,
    pub(crate) line: u32,
    pub(crate) text: String,
    pub(crate) terms: Vec<usize>,
}

/// A place worth reading: a hit line, its score, and how much of the question it covers.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub(crate) path: String,
    pub(crate) line: u32,
    pub(crate) score: f64,
    pub(crate) coverage: f64,
    /// Distinct terms within four lines of the hit, an identifier or literal counting two.
    pub(crate) close_terms: usize,
    pub(crate) definition: Option<Definition>,
    pub(crate) terms: Vec<usize>,
}

/// Lines either side of a hit whose terms count towards it.
const WINDOW: u32 = 12;

/// Scores every hit line: the weight of the distinct terms within the window around it, more
/// for a definition whose name holds a term, scaled by the file's kind. `weights[t]` is term
/// t's weight; coverage is the share of the total weight the window holds.
pub(crate) fn score_hits(
    hits: &[Hit],
    weights: &[f64],
    strength: &[usize],
    question_weight: f64,
    compiled: &[Regex],
) -> Vec<Candidate> {
    let total: f64 = question_weight.max(f64::EPSILON);
    let mut by_file: BTreeMap<&str, Vec<&Hit>> = BTreeMap::new();
    for hit in hits {
        by_file.entry(hit.path.as_str()).or_default().push(hit);
    }
    let mut out = Vec::new();
    for (path, file_hits) in by_file {
        let factor = path_factor(path);
        let path_lower = path.to_ascii_lowercase();
        for hit in &file_hits {
            // Each term counts by how close its nearest occurrence is to the hit line.
            let mut nearness = vec![0.0f64; weights.len()];
            for other in &file_hits {
                let distance = other.line.abs_diff(hit.line);
                let closeness = match distance {
                    0 => 1.0,
                    1..=4 => 0.7,
                    d if d <= WINDOW => 0.4,
                    _ => continue,
                };
                for t in &other.terms {
                    nearness[*t] = nearness[*t].max(closeness);
                }
            }
            // A term in the file's path (`suggestions.rs` for "suggest") is near every line.
            for (t, re) in compiled.iter().enumerate() {
                if weights[t] > 0.0 && re.is_match(&path_lower) {
                    nearness[t] = nearness[t].max(0.4);
                }
            }
            let present: Vec<bool> = nearness.iter().map(|n| *n > 0.0).collect();
            let covered: f64 = present
                .iter()
                .zip(weights)
                .filter(|(p, _)| **p)
                .map(|(_, w)| w)
                .sum();
            let near: f64 = nearness.iter().zip(weights).map(|(n, w)| n * w).sum();
            let mut score = near;
            let def = definition(&hit.text);
            if let Some(d) = &def {
                // The heaviest term the name holds (a compound and its own words are one
                // match, not three).
                let name_terms: f64 = compiled
                    .iter()
                    .zip(weights)
                    .filter(|(re, _)| re.is_match(&d.name))
                    .map(|(_, w)| *w)
                    .fold(0.0, f64::max);
                score += 1.5 * name_terms;
                if name_terms > 0.0 {
                    score += 0.5;
                }
            }
            out.push(Candidate {
                path: path.to_string(),
                line: hit.line,
                score: score * factor,
                coverage: covered / total,
                close_terms: nearness
                    .iter()
                    .zip(weights)
                    .zip(strength)
                    .filter(|((n, w), _)| **n >= 0.7 && **w > 0.0)
                    .map(|(_, s)| *s)
                    .sum(),
                definition: def,
                terms: hit.terms.clone(),
            });
        }
    }
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
            .then_with(|| a.line.cmp(&b.line))
    });
    out
}

/// Picks up to `most` candidates, best first, no two within `gap` lines of each other in the
/// same file, each scoring at least `relative` of the best, covering at least `coverage` and
/// with `close_needed` strength of terms within four lines.
pub(crate) fn pick(
    candidates: &[Candidate],
    most: usize,
    gap: u32,
    relative: f64,
    coverage: f64,
    close_needed: usize,
) -> Vec<Candidate> {
    let Some(best) = candidates.first() else {
        return Vec::new();
    };
    let floor = best.score * relative;
    let eligible: Vec<&Candidate> = candidates
        .iter()
        .take_while(|c| c.score >= floor)
        // Settled only with enough of the question and enough of its terms together.
        .filter(|c| c.coverage >= coverage && c.close_terms >= close_needed)
        .collect();
    let mut picked: Vec<Candidate> = Vec::new();
    // First the best place of each file, then second places, so one file cannot take all.
    for round in 0..most {
        for c in &eligible {
            if picked.len() >= most {
                return picked;
            }
            let same_file = picked.iter().filter(|p| p.path == c.path).count();
            let near = picked
                .iter()
                .any(|p| p.path == c.path && p.line.abs_diff(c.line) <= gap);
            if same_file == round && !near {
                picked.push((*c).clone());
            }
        }
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_definitions() {
        let d = definition("    pub(crate) async fn check_symlink_loop(").unwrap();
        assert_eq!(
            (d.keyword.as_str(), d.name.as_str()),
            ("fn", "check_symlink_loop")
        );
        let d = definition("impl<T: Clone> fmt::Debug for HeaderValue {").unwrap();
        assert_eq!(d.name, "Debug for HeaderValue");
        assert_eq!(d.shown, "fmt::Debug for HeaderValue");
        // Issue 20, item 8: what a claim quotes is on the line, generics and all.
        let d = definition("impl From<StateID> for SmallIndex {").unwrap();
        assert_eq!(d.shown, "From<StateID> for SmallIndex");
        assert!("impl From<StateID> for SmallIndex {".contains(&d.shown));
        assert_eq!(definition("class Retry(Base):").unwrap().name, "Retry");
        assert_eq!(
            definition("def next_delay(self, n):").unwrap().keyword,
            "def"
        );
        assert!(definition("    let x = 3;").is_none());
        assert!(definition("    // fn in a comment").is_none());
        assert!(definition("default = [\"std\"]").is_none());
        assert_eq!(definition("macro_rules! ok {").unwrap().name, "ok");
        assert_eq!(definition("pub struct Map<K, V> {").unwrap().name, "Map");
    }

    #[test]
    fn block_ends_by_braces_and_indentation() {
        let rust: Vec<(u32, String)> = [
            "fn a() {",
            "    let s = \"}\";",
            "    if x { y }",
            "}",
            "fn b() {}",
        ]
        .iter()
        .enumerate()
        .map(|(i, l)| (i as u32 + 10, l.to_string()))
        .collect();
        assert_eq!(block_end(&rust, 0), 13);
        let py: Vec<(u32, String)> = ["def f(x):", "    return x", "", "def g():"]
            .iter()
            .enumerate()
            .map(|(i, l)| (i as u32 + 1, l.to_string()))
            .collect();
        assert_eq!(block_end(&py, 0), 2);
        let constant = vec![(5, "pub const MAX: u32 = 7;".to_string())];
        assert_eq!(block_end(&constant, 0), 5);
    }

    #[test]
    fn parses_tool_outputs() {
        assert_eq!(
            parse_hits("src/a.rs:12:fn x() {\n[output capped]"),
            vec![("src/a.rs".into(), 12, "fn x() {".into())]
        );
        assert_eq!(
            parse_counts("a.rs:3\nb/c.rs:1\n[4 matching]"),
            vec![("a.rs".into(), 3), ("b/c.rs".into(), 1)]
        );
        let (path, lines) =
            parse_read("src/a.rs (lines 3-4 of 9)\n     3\tx\n     4\ty\n").unwrap();
        assert_eq!(path, "src/a.rs");
        assert_eq!(lines, vec![(3, "x".into()), (4, "y".into())]);
    }
}
