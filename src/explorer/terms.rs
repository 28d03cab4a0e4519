//! From a question in plain words to search terms: identifiers, compound-word variants
//! (snake, camel, kebab), word stems; stop words dropped.

use crate::text::is_stop_word;

/// One search term: what it is called in reports and the regex that finds it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Term {
    /// What kind of term it is.
    pub(crate) kind: TermKind,
    /// How the term is shown, e.g. `symlink` or `file type`.
    pub(crate) label: String,
    /// Regex for a case-insensitive grep.
    pub(crate) pattern: String,
    /// Prior weight: identifiers and compounds say more than single words.
    pub(crate) prior: f64,
    /// Whether the term comes from an example the question gives (`like inotify`, `such as
    /// --colr`): a question whose examples occur nowhere is not answered there.
    pub(crate) example: bool,
}

/// Where a term came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TermKind {
    /// A code-like token of the question (`next_delay`, `HeaderMap`).
    Identifier,
    /// Two adjacent words as one identifier (`file type` → `file_type`, `FileType`).
    Compound,
    /// One word, stemmed, with its usual abbreviation (`environment` → `env`).
    Word,
    /// A quoted string or a glob of the question, searched as written (`"on"`, `*.rs`).
    Literal,
}

/// Words and the abbreviations code uses for them.
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("allocat", "alloc"),
    ("argument", "arg"),
    ("asynchronous", "async"),
    ("attribute", "attr"),
    ("boolean", "bool"),
    ("buffer", "buf"),
    ("character", "char"),
    ("command", "cmd"),
    ("configur", "config"),
    ("context", "ctx"),
    ("description", "desc"),
    ("destination", "dst"),
    ("director", "dir"),
    ("environment", "env"),
    ("error", "err"),
    ("execut", "exec"),
    ("expression", "expr"),
    ("function", "fn"),
    ("identifier", "id"),
    ("implement", "impl"),
    ("index", "idx"),
    ("information", "info"),
    ("initializ", "init"),
    ("iterat", "iter"),
    ("length", "len"),
    ("library", "lib"),
    ("maximum", "max"),
    ("message", "msg"),
    ("minimum", "min"),
    ("number", "num"),
    ("parameter", "param"),
    ("position", "pos"),
    ("previous", "prev"),
    ("reference", "ref"),
    ("request", "req"),
    ("response", "resp"),
    ("source", "src"),
    ("specification", "spec"),
    ("string", "str"),
    ("synchroniz", "sync"),
    ("temporary", "tmp"),
    ("utilit", "util"),
    ("variable", "var"),
];

/// The stems of the words a question asks with — for where something is, what it does or
/// where it is used (`where is X defined`, `where does X live`, `how is X implemented`, `where
/// can I find X`, `where is X used`, `what calls X`, `is X referenced anywhere`) —
/// rather than what it is about. They are the question's syntax: never a term, so never
/// required where the answer stands and never an absence.
const ASKING: &[&str] = &[
    "anywher",
    "call",
    "declar",
    "declaration",
    "defin",
    "definition",
    "everywher",
    "exist",
    "find",
    "happen",
    "implement",
    "invok",
    "live",
    "locat",
    "location",
    "mean",
    "reach",
    "referenc",
    "resid",
    "show",
    "somewher",
    "use",
    "used",
    "uses",
    "using",
    "work",
];

/// The nouns that say what kind of thing an identifier is: beside one in a question they are
/// its description, not a word to find.
const KIND_NOUNS: &[&str] = &[
    "class",
    "const",
    "constant",
    "enum",
    "field",
    "fn",
    "function",
    "interface",
    "macro",
    "method",
    "module",
    "struct",
    "structure",
    "trait",
    "type",
    "variable",
];

/// The kinds of place a question may ask for after `which` or `what` (`which file`, `what
/// crate`), beside [`KIND_NOUNS`].
const PLACE_NOUNS: &[&str] = &[
    "crate",
    "directory",
    "file",
    "files",
    "folder",
    "line",
    "modules",
    "package",
    "part",
    "place",
];

/// Whether a word is one a question asks with ([`ASKING`]).
pub(crate) fn is_asking(word: &str) -> bool {
    ASKING.binary_search(&stem(word).as_str()).is_ok()
}

/// A light stem: plural, -ing, -ed, -er, -ion endings off, keeping at least four letters.
pub(crate) fn stem(word: &str) -> String {
    let w = word.to_ascii_lowercase();
    let suffixes = [
        "ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s", "e",
    ];
    for suffix in suffixes {
        if let Some(base) = w.strip_suffix(suffix) {
            if base.len() >= 4 && !(suffix == "s" && base.ends_with('s')) {
                return match suffix {
                    "ies" | "ied" => format!("{base}y"),
                    _ => base.to_string(),
                };
            }
        }
    }
    w
}

/// Splits an identifier into its lower-case parts: `check_symlink_loop`, `HeaderMap`,
/// `max-depth` → words.
fn identifier_parts(identifier: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for ch in identifier.chars() {
        if !ch.is_alphanumeric() {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if ch.is_uppercase() && previous_lower && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        previous_lower = ch.is_lowercase() || ch.is_ascii_digit();
        current.extend(ch.to_lowercase());
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

/// Whether a token looks like code rather than a word: snake_case, CamelCase, `a::b`, `f()`.
fn looks_like_identifier(token: &str) -> bool {
    let core = token.trim_end_matches("()");
    let has_inner_upper =
        core.chars().skip(1).any(char::is_uppercase) && core.chars().any(char::is_lowercase);
    core.contains('_') || core.contains("::") || has_inner_upper || token.ends_with("()")
}

/// A regex matching every spelling of a compound: `file_type`, `FileType`, `file-type`,
/// `file type`, and the parts of a path or a qualified name (`etc/shadow`, `file::type`,
/// `file.type`) — so that a compound found nowhere is not an absence a reader would misread.
fn compound_pattern(parts: &[String]) -> String {
    parts
        .iter()
        .map(|p| regex::escape(p))
        .collect::<Vec<_>>()
        .join("[_\\-\\s./:]{0,2}")
}

/// A stem as a regex for both its spellings: one that ends in `y` (`retry`, from `retries`)
/// also as `ie` (`RETRIES`, `retried`), so a stem never loses the word it was taken from. A
/// verb whose stem of five letters or more ends in `d` after a vowel or `n` (`decid`,
/// `collid`, `extend`) is also spelled with the `s` of its noun (`decision`, `collision`,
/// `extension`).
fn spelled(stem: &str) -> String {
    if let Some(base) = stem.strip_suffix('y') {
        if base.len() >= 3 {
            return format!("{}(?:y|ie)", regex::escape(base));
        }
    }
    if let Some(base) = stem.strip_suffix('d') {
        let before = base.chars().last().unwrap_or(' ');
        if stem.len() >= 5 && "aeioun".contains(before) {
            return format!("{}(?:d|s)", regex::escape(base));
        }
    }
    regex::escape(stem)
}

/// `word` (lower case) starting a word or an identifier part: after a non-word character or
/// `_`, or — its first letter upper case — right after a lower-case letter or a digit
/// (`Print` in `fingerPrint`). Its end is left open, for stems.
fn anchored(word: &str, spell: fn(&str) -> String) -> String {
    let mut chars = word.chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let rest: String = chars.collect();
    let whole = spell(word);
    if !first.is_ascii_alphabetic() {
        return format!("(?:\\b|_){whole}");
    }
    // The rest keeps the whole stem's two spellings (`etr(?:y|ie)` of `retry`).
    let rest = match whole.strip_prefix(first) {
        Some(tail) if word.len() > 1 => tail.to_string(),
        _ => regex::escape(&rest),
    };
    format!(
        "(?:(?:\\b|_){whole}|(?-i:[a-z0-9]{}){rest})",
        first.to_ascii_uppercase(),
    )
}

/// How a term is recognised on a line it is said to be on (`the cited lines mention …`, the
/// terms a hit line holds): as its search pattern, but each word and a compound's first word
/// only where a word or an identifier part starts — `print string` is not in
/// `fingerprint: String`.
pub(crate) fn mention_pattern(term: &Term) -> String {
    // Identifier parts are as written; a word's stem keeps both its spellings.
    let head: fn(&str) -> String = match term.kind {
        TermKind::Identifier | TermKind::Compound => regex::escape,
        _ => spelled,
    };
    let compound = |parts: &[String]| -> String {
        match parts.split_first() {
            Some((first, rest)) if !rest.is_empty() => {
                format!(
                    "{}[_\\-\\s./:]{{0,2}}{}",
                    anchored(first, head),
                    compound_pattern(rest)
                )
            }
            Some((first, _)) => anchored(first, head),
            None => String::new(),
        }
    };
    match term.kind {
        TermKind::Literal => term.pattern.clone(),
        TermKind::Identifier => compound(&identifier_parts(&term.label)),
        TermKind::Compound => {
            let words: Vec<String> = term.label.split(' ').map(stem).collect();
            let backward: Vec<String> = words.iter().rev().cloned().collect();
            format!("{}|{}", compound(&words), compound(&backward))
        }
        TermKind::Word => {
            let stemmed = stem(&term.label);
            match abbreviation(&stemmed) {
                // The abbreviation is anchored already.
                Some(short) if stemmed.len() > 3 => {
                    format!("{}|{short}", anchored(&stemmed, spelled))
                }
                _ if stemmed.len() > 3 => anchored(&stemmed, spelled),
                _ => term.pattern.clone(),
            }
        }
    }
}

/// A short word as a whole word or an identifier part: `env` in `add_env`, `EnvVar`,
/// `env_var`, but not in `environment`.
fn short_word_pattern(word: &str) -> String {
    format!("(?:\\b|_){}(?:\\b|_|(?-i:[A-Z]))", regex::escape(word))
}

fn word_pattern(word: &str) -> String {
    let stemmed = stem(word);
    let base = if stemmed.len() <= 3 {
        short_word_pattern(&stemmed)
    } else {
        spelled(&stemmed)
    };
    match abbreviation(&stemmed) {
        Some(short) => format!("{base}|{short}"),
        None => base,
    }
}

/// The usual abbreviation of a stemmed word, as a short-word pattern (`environment` → `env`).
fn abbreviation(stemmed: &str) -> Option<String> {
    ABBREVIATIONS
        .iter()
        .find(|(long, _)| {
            stemmed.starts_with(long) || (stemmed.len() >= 5 && long.starts_with(stemmed))
        })
        .map(|(_, short)| short_word_pattern(short))
}

/// Quoted strings (`"on"`, `'rust'`) and globs (`*.rs`) of the question, as regexes.
fn literal_terms(question: &str) -> Vec<Term> {
    static QUOTED: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let quoted = QUOTED.get_or_init(|| {
        regex::Regex::new(r#"(?:^|[\s(\[,:])(?:"([^"\n]{1,40})"|'([^'\n]{1,40})')"#)
            .expect("static regex")
    });
    let mut out = Vec::new();
    for c in quoted.captures_iter(question) {
        let inner = c
            .get(1)
            .or_else(|| c.get(2))
            .map(|m| m.as_str())
            .unwrap_or("");
        if inner.trim().is_empty() || inner.split_whitespace().count() > 3 {
            continue;
        }
        out.push(Term {
            kind: TermKind::Literal,
            label: format!("\"{inner}\""),
            pattern: format!("[\"']{}[\"']", regex::escape(inner)),
            example: false,
            prior: 2.0,
        });
    }
    for token in question.split_whitespace() {
        let t = token.trim_matches(|c: char| matches!(c, ',' | '?' | ')' | '(' | ';' | '`'));
        let t = t.trim_end_matches('.');
        let quoted = t.contains(['"', '\'']);
        let is_path = t.contains('/')
            && t.chars().filter(|c| c.is_alphanumeric()).count() >= 3
            && !t.contains('*');
        let is_glob = t.contains('*') && t.len() > 2;
        if (is_path || is_glob) && !quoted {
            out.push(Term {
                kind: TermKind::Literal,
                label: t.to_string(),
                pattern: regex::escape(t),
                example: false,
                prior: 2.0,
            });
        }
    }
    out
}

/// Code-like tokens, including backticked ones, as identifier terms.
fn identifier_terms(question: &str) -> Vec<Term> {
    let mut out = Vec::new();
    let raw_tokens: Vec<&str> = question
        .split(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | ',' | '?' | '('))
        .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric() && c != '_'))
        .filter(|t| !t.is_empty())
        .collect();
    // A backticked token is code as written, whatever its case (`RETRIES`, `open`).
    static TICKED: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let ticked =
        TICKED.get_or_init(|| regex::Regex::new(r"`([^`\s]{1,80})`").expect("static regex"));
    let ticked: Vec<&str> = ticked
        .captures_iter(question)
        .filter_map(|c| c.get(1))
        .map(|m| {
            m.as_str()
                .trim_matches(|c: char| !c.is_alphanumeric() && c != '_')
        })
        .collect();
    for token in &raw_tokens {
        if looks_like_identifier(token) || ticked.contains(token) {
            let last = token.rsplit("::").next().unwrap_or(token);
            let parts = identifier_parts(last);
            if !parts.is_empty() {
                out.push(Term {
                    kind: TermKind::Identifier,
                    label: last.to_string(),
                    pattern: compound_pattern(&parts),
                    example: false,
                    prior: 2.0,
                });
            }
        }
    }
    out
}

/// The question's content words in order, `None` where a word that is no search term (a stop
/// word, an asking word, a kind noun beside code, an identifier) breaks a compound.
fn content_words(question: &str) -> Vec<Option<String>> {
    // Plain words, in order; stop words break compounds. The phrases that introduce an
    // example (`for example`, `such as`, `like`) are the question's syntax, not its content.
    static MARKERS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let markers = MARKERS.get_or_init(|| {
        regex::Regex::new(&format!(r"(?i)\b(?:{EXAMPLE_MARKERS})")).expect("static regex")
    });
    let content = markers.replace_all(question, " ");
    let content = crate::text::without_conjunctions(&content);
    // Each piece, and whether it is code: an identifier is a term of its own, and a kind noun
    // beside one (`the SmallIndex type`, `function load_config`) says what it is, not what to
    // search for.
    let mut pieces: Vec<Option<(String, bool)>> = Vec::new();
    for token in content.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-') {
        for piece in token.split('-') {
            pieces.push(
                (!piece.is_empty())
                    .then(|| (piece.to_ascii_lowercase(), looks_like_identifier(piece))),
            );
        }
        if token.is_empty() {
            pieces.push(None);
        }
    }
    let code = |i: Option<usize>| {
        i.and_then(|i| pieces.get(i))
            .is_some_and(|p| p.as_ref().is_some_and(|(_, code)| *code))
    };
    let mut words: Vec<Option<String>> = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        let Some((lower, identifier)) = piece else {
            words.push(None);
            continue;
        };
        let beside_code = code(i.checked_sub(1)) || code(Some(i + 1));
        // `which module`, `what file`, `in which function`: the kind of place asked for.
        let asked_kind = i
            .checked_sub(1)
            .and_then(|j| pieces.get(j))
            .is_some_and(|p| p.as_ref().is_some_and(|(w, _)| w == "which" || w == "what"))
            && (KIND_NOUNS.contains(&lower.as_str()) || PLACE_NOUNS.contains(&lower.as_str()));
        if *identifier
            || lower.contains('_')
            || is_stop_word(lower)
            || is_asking(lower)
            || (beside_code && KIND_NOUNS.contains(&lower.as_str()))
            || asked_kind
            || lower.len() < 3
            || lower.chars().all(|c| c.is_ascii_digit())
        {
            words.push(None);
        } else {
            words.push(Some(lower.clone()));
        }
    }
    words
}

/// The search terms for a question, most specific first, without duplicates.
pub(crate) fn terms(question: &str) -> Vec<Term> {
    let mut out: Vec<Term> = Vec::new();
    let mut push = |term: Term| {
        if !out.iter().any(|t| t.pattern == term.pattern) {
            out.push(term);
        }
    };
    for literal in literal_terms(question) {
        push(literal);
    }
    for term in identifier_terms(question) {
        push(term);
    }
    let words = content_words(question);
    // Compounds of adjacent content words: `file type` -> file_type / FileType.
    for pair in words.windows(2) {
        if let [Some(a), Some(b)] = pair {
            // Each stem as it is (not `spelled`): what a compound spells out must stay
            // plain words, so that a quoted phrase it found is not called absent.
            let forward = compound_pattern(&[stem(a), stem(b)]);
            let backward = compound_pattern(&[stem(b), stem(a)]);
            push(Term {
                kind: TermKind::Compound,
                label: format!("{a} {b}"),
                pattern: format!("{forward}|{backward}"),
                example: false,
                prior: 1.5,
            });
        }
    }
    for word in words.iter().flatten() {
        push(Term {
            kind: TermKind::Word,
            label: word.clone(),
            pattern: word_pattern(word),
            example: false,
            prior: 1.0,
        });
    }
    let (example_words, example_literals) = examples(question);
    for term in &mut out {
        term.example = match term.kind {
            TermKind::Word => example_words.contains(&term.label),
            TermKind::Literal => example_literals
                .iter()
                .any(|l| term.label.contains(l.as_str())),
            _ => false,
        };
    }
    out
}

/// The phrases that introduce an example, as a regex alternation.
const EXAMPLE_MARKERS: &str = r"(?:like|such as|for example|for instance)\b|e\.g\.";

/// The words and literals of the examples a question gives: the text after `like`, `such as`,
/// `for example`, `for instance`, `e.g.` up to the next `)`, `;`, `?`, sentence end, or `,` (unless a list of quoted
/// strings goes on).
fn examples(question: &str) -> (Vec<String>, Vec<String>) {
    static MARKER: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let marker = MARKER.get_or_init(|| {
        regex::Regex::new(&format!(
            r#"(?i)\b(?:{EXAMPLE_MARKERS})[\s:]+((?:[^),;?]|,\s*["'])+)"#
        ))
        .expect("static regex")
    });
    let mut words = Vec::new();
    let mut literals = Vec::new();
    for c in marker.captures_iter(question) {
        let phrase = c[1].split(". ").next().unwrap_or("");
        for literal in literal_terms(phrase) {
            literals.push(literal.label.trim_matches('"').to_string());
        }
        for token in phrase.split(|ch: char| !ch.is_alphanumeric() && ch != '_') {
            let lower = token.to_ascii_lowercase();
            if lower.len() >= 3
                && !is_stop_word(&lower)
                && !lower.chars().all(|ch| ch.is_ascii_digit())
            {
                words.push(lower);
            }
        }
    }
    (words, literals)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 9, item 16: the stop list is general English: the words of a question about code
    /// ("crate", "place", "keep") are searched for; only function words are dropped. Issue
    /// 20, item 8: the words it asks with ("defined", "implemented", "located") are its
    /// syntax, not its content: never terms, so never required, never an absence.
    #[test]
    fn a_general_stop_list_keeps_the_questions_content_words() {
        let labels: Vec<String> =
            terms("Where is the crate's place defined, and how does it keep them?")
                .into_iter()
                .map(|t| t.label)
                .collect();
        for word in ["crate", "place", "keep"] {
            assert!(labels.iter().any(|l| l == word), "{word} in {labels:?}");
        }
        for word in [
            "where",
            "the",
            "and",
            "how",
            "does",
            "them",
            "defined",
            "place defined",
        ] {
            assert!(!labels.iter().any(|l| l == word), "{word} in {labels:?}");
        }
        for asking in [
            "which module defines load_config_file?",
            "in which module is load_config_file located?",
            "what file is load_config_file in?",
            "where is load_config_file called?",
            "how does load_config_file reach it?",
            "where is load_config_file defined?",
            "where is load_config_file declared?",
            "how is load_config_file implemented?",
            "where is load_config_file located?",
            "where does load_config_file live?",
            "where can I find the definition of load_config_file?",
        ] {
            let labels: Vec<String> = terms(asking).into_iter().map(|t| t.label).collect();
            assert_eq!(labels, ["load_config_file"], "{asking}");
        }
        let mut sorted = ASKING.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, ASKING, "sorted for binary search");
    }

    /// Issue 20, item 9: a term is mentioned where a word or an identifier part starts, not
    /// inside another word.
    #[test]
    fn mentions_match_whole_words_or_identifier_parts() {
        let mention = |question: &str, label: &str| {
            let t = terms(question)
                .into_iter()
                .find(|t| t.label == label)
                .unwrap();
            regex::RegexBuilder::new(&mention_pattern(&t))
                .case_insensitive(true)
                .build()
                .unwrap()
        };
        let printed = mention("where is the printed string stored?", "printed string");
        assert!(!printed.is_match("    pub fingerprint: String,"));
        assert!(printed.is_match("fn print_string()"));
        assert!(printed.is_match("let PrintString = 1;"));
        assert!(printed.is_match("the print string"));
        let word = mention("where is it printed?", "printed");
        assert!(!word.is_match("fingerprint"));
        assert!(
            word.is_match("fingerPrint") && word.is_match("print_all") && word.is_match("Printing")
        );
        let id = mention("where is next_delay?", "next_delay");
        assert!(id.is_match("fn next_delay(") && id.is_match("NextDelay"));
        assert!(!id.is_match("fn pnext_delay("));
    }

    #[test]
    fn examples_are_marked() {
        let t = terms("Does it watch directories for changes (like inotify) as files change?");
        let marked: Vec<&str> = t
            .iter()
            .filter(|t| t.example)
            .map(|t| t.label.as_str())
            .collect();
        assert_eq!(marked, vec!["inotify"]);
        let t = terms("Which spellings (like \"on\", \"off\") are accepted?");
        assert!(t.iter().filter(|t| t.example).count() >= 2);
        assert!(terms("Where is the parser?").iter().all(|t| !t.example));
        // A word that only begins like a marker is a word.
        assert!(terms("where is the likelihood computed?")
            .iter()
            .any(|t| t.label == "likelihood"));
        // The phrase that introduces an example is not searched for.
        let t = terms("Does it draw bars, for example with the OSC escape, or such as spinners?");
        assert!(!t.iter().any(
            |t| ["example", "such", "for example"].contains(&t.label.as_str())
                || t.label.contains("example")
        ));
        assert!(t.iter().any(|t| t.label == "spinners" && t.example));
    }

    #[test]
    fn questions_become_terms() {
        let t = terms("Where is `RetryPolicy::next_delay` and how do symbolic links get followed?");
        let labels: Vec<&str> = t.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels[0], "next_delay");
        assert!(labels.contains(&"symbolic links"));
        assert!(labels.contains(&"followed"));
        assert!(!labels.contains(&"where"));
        let compound = t.iter().find(|t| t.label == "symbolic links").unwrap();
        let re = regex::RegexBuilder::new(&compound.pattern)
            .case_insensitive(true)
            .build()
            .unwrap();
        assert!(re.is_match("fn SymbolicLink"));
        assert!(re.is_match("symbolic_link"));
        assert_eq!(stem("redrawing"), "redraw");
        assert_eq!(stem("entries"), "entry");
        // A stem cut from `-ies` still finds the word as written.
        let retries = terms("where is RETRIES defined?");
        let word = retries.iter().find(|t| t.label == "retries").unwrap();
        for pattern in [word.pattern.clone(), mention_pattern(word)] {
            let re = regex::RegexBuilder::new(&pattern)
                .case_insensitive(true)
                .build()
                .unwrap();
            assert!(re.is_match("pub const RETRIES: u32") && re.is_match("fn retry()"));
            assert!(!re.is_match("retro"), "{pattern}");
        }
        let uses: Vec<String> = terms("is TIMEOUT referenced anywhere, called or used?")
            .into_iter()
            .map(|t| t.label)
            .collect();
        assert_eq!(uses, ["timeout"]);
        assert_eq!(stem("class"), "class");
        // A verb in -de finds its noun in -sion, and still itself.
        for (question, label, noun, verb) in [
            (
                "which names collide?",
                "collide",
                "hash collisions",
                "if keys collide",
            ),
            (
                "where do we decide routes?",
                "decide",
                "route_decision",
                "decided here",
            ),
        ] {
            let t = terms(question);
            let word = t.iter().find(|t| t.label == label).unwrap();
            for pattern in [word.pattern.clone(), mention_pattern(word)] {
                let re = regex::RegexBuilder::new(&pattern)
                    .case_insensitive(true)
                    .build()
                    .unwrap();
                assert!(re.is_match(noun) && re.is_match(verb), "{pattern}");
                assert!(!re.is_match("collie") && !re.is_match("decay"), "{pattern}");
            }
        }
        // A conjunction of several words gives no term.
        let labels: Vec<String> = terms("what resets the length as soon as draining starts?")
            .into_iter()
            .map(|t| t.label)
            .collect();
        assert!(!labels.iter().any(|l| l.contains("soon")), "{labels:?}");
        assert!(labels.contains(&"draining".to_string()), "{labels:?}");
    }
}
