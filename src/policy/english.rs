//! Constraints in English, read as typed rules — deterministically and conservatively: a
//! clause is typed only when it has one of the shapes below, and anything else (a condition,
//! a contrast, a double negative, a quantity, two kinds of rule at once) stays a standing
//! condition, reported as not enforced. A wrong rule claimed as enforced is worse than none.

use super::rules::{Rule, Typed};

/// Reads a constraint's text as typed rules, clause by clause: a clause ends at a sentence's
/// end, at `;`, at a `,` when what follows says something of its own (a verb, or a word such
/// as "only", "not", "no" — "…under /migrations, /vendor or /docs" stays one clause), and at
/// "and" / "or" when a verb or such a word follows. `tools` are the names of the tools the run
/// has: only they can be named by a tool rule.
pub fn parse(text: &str, tools: &[String]) -> Typed {
    let mut typed = Typed::default();
    for clause in clauses(text, tools) {
        let rules = parse_clause(&clause, tools);
        if rules.is_empty() {
            typed.untyped.push(clause);
        }
        typed.rules.extend(rules);
    }
    typed
}

/// Words that start a clause of their own after "and", "or" or a comma.
const CLAUSE_STARTS: &[&str] = &[
    "use", "spend", "keep", "skip", "ignore", "no", "never", "don't", "dont", "do", "only", "not",
    "at", "make", "stay", "avoid", "access", "connect", "run", "call", "limit",
];

fn starts_clause(word: &str) -> bool {
    CLAUSE_STARTS.contains(&word)
        || READ_VERBS.contains(&word)
        || WRITE_VERBS.contains(&word)
        || TOUCH_VERBS.contains(&word)
}

/// The clauses of a constraint's text (see [`parse`]), trimmed, each holding a letter or digit
/// (a tool's name after "and" does not start one: "only use read_file and grep").
fn clauses(text: &str, tools: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for sentence in crate::context::sentences_of(text) {
        for part in sentence.split(';') {
            let mut current: Option<String> = None;
            for piece in part.split(',') {
                let own = words(piece).iter().any(|(w, _)| starts_clause(w));
                match current.as_mut() {
                    Some(c) if !own => {
                        c.push(',');
                        c.push_str(piece);
                    }
                    _ => {
                        out.extend(current.take());
                        current = Some(piece.to_string());
                    }
                }
            }
            out.extend(current);
        }
    }
    // "and" / "or" followed by a clause's first word ends the clause before it — not after
    // a verb ("read and write under src/" is one clause).
    let mut split = Vec::new();
    for clause in out {
        let raw: Vec<&str> = clause.split_whitespace().collect();
        let lower: Vec<String> = words(&clause).into_iter().map(|(w, _)| w).collect();
        let mut current: Vec<&str> = Vec::new();
        for (i, word) in raw.iter().enumerate() {
            let cut = matches!(lower[i].as_str(), "and" | "or")
                && lower
                    .get(i + 1)
                    .is_some_and(|n| starts_clause(n) && !tools.iter().any(|t| t == n))
                && i >= 1
                && !starts_clause(&lower[i - 1]);
            if cut {
                split.push(current.join(" "));
                current.clear();
            } else {
                current.push(word);
            }
        }
        split.push(current.join(" "));
    }
    split
        .into_iter()
        .map(|c| c.trim().to_string())
        .filter(|c| c.chars().any(char::is_alphanumeric))
        .collect()
}

/// Words of a clause in lower case, with where each came from in the clause.
fn words(clause: &str) -> Vec<(String, &str)> {
    clause
        .split_whitespace()
        .map(|raw| {
            let bare = raw.trim_matches(|c: char| {
                matches!(
                    c,
                    ',' | '.' | ';' | ':' | '!' | '?' | '(' | ')' | '"' | '\'' | '`' | '\u{2019}'
                )
            });
            (bare.to_lowercase().replace('\u{2019}', "'"), raw)
        })
        .collect()
}

const NEGATIONS: &[&str] = &[
    "never", "don't", "dont", "not", "no", "without", "avoid", "mustn't", "cannot", "can't",
    "nothing",
];
const READ_VERBS: &[&str] = &[
    "read",
    "reads",
    "reading",
    "look",
    "looking",
    "search",
    "searching",
    "grep",
    "list",
    "open",
    "inspect",
    "explore",
    "view",
    "browse",
    "scan",
    "consult",
    "see",
    "examine",
    "access",
];
const WRITE_VERBS: &[&str] = &[
    "modify",
    "modifying",
    "edit",
    "edits",
    "editing",
    "write",
    "writes",
    "writing",
    "change",
    "changes",
    "changing",
    "delete",
    "deleting",
    "remove",
    "create",
    "alter",
    "update",
    "overwrite",
    "rename",
    "move",
    "commit",
];
const TOUCH_VERBS: &[&str] = &["touch", "touching", "stay", "go", "enter", "leave"];
/// Words after which a plain word is a place (and "other than", "out of").
const PREPOSITIONS: &[&str] = &[
    "under",
    "in",
    "inside",
    "within",
    "from",
    "at",
    "into",
    "outside",
    "below",
    "beneath",
    "but",
    "except",
    "besides",
    "beyond",
    "excluding",
    "leave",
];
/// Words that turn a negated clause into an `only` one: "nothing outside src", "anywhere
/// but src", "other than", "besides", "apart from", "beyond", "don't leave src".
const ONLY_CONNECTIVES: &[&str] = &[
    "outside",
    "except",
    "but",
    "than",
    "besides",
    "apart",
    "beyond",
    "excluding",
    "minus",
    "leave",
];
/// What may stand between a verb and a connective: "read anything outside", "look anywhere
/// but", "read files besides".
const GENERIC: &[&str] = &[
    "anything",
    "anywhere",
    "everything",
    "files",
    "file",
    "the",
    "a",
    "any",
    "at",
    "in",
    "stuff",
    "else",
    "other",
    "code",
];
/// Words that make a clause conditional, comparative or contrastive: not typed.
const AMBIGUOUS: &[&str] = &[
    "unless",
    "if",
    "when",
    "whenever",
    "while",
    "whereas",
    "however",
    "instead",
    "otherwise",
    "larger",
    "smaller",
    "bigger",
    "longer",
    "shorter",
    "older",
    "newer",
    "more",
    "fewer",
    "less",
];
/// Words after a preposition that are not a place.
const NOT_PLACES: &[&str] = &[
    "the",
    "a",
    "an",
    "any",
    "all",
    "this",
    "that",
    "files",
    "file",
    "directory",
    "directories",
    "folder",
    "folders",
    "dir",
    "tree",
    "anything",
    "everything",
    "order",
    "case",
    "general",
    "particular",
    "place",
    "mind",
    "it",
    "them",
    "there",
    "here",
    "way",
    "code",
    "repo",
    "repository",
    "workspace",
    "project",
    "other",
    "from",
    "of",
    "what",
    "is",
    "most",
    "least",
    "only",
    "apart",
    "you",
    "your",
    "our",
    "my",
    "and",
    "or",
    "nor",
];

fn has(words: &[(String, &str)], set: &[&str]) -> bool {
    words.iter().any(|(w, _)| set.contains(&w.as_str()))
}

/// Negations in a clause: "never", "not", "no", "nothing", "without", any "…n't".
fn negations(words: &[(String, &str)]) -> usize {
    words
        .iter()
        .filter(|(w, _)| NEGATIONS.contains(&w.as_str()) || w.ends_with("n't"))
        .count()
}

/// A tool of the run named as one: backticked, or after "use", "call", "run", "invoke"
/// (with at most one word between), before "tool", or after "and" / "or".
fn named_tools(w: &[(String, &str)], tools: &[String]) -> Vec<String> {
    let verbs = [
        "use", "using", "call", "calling", "run", "invoke", "tool", "tools",
    ];
    tools
        .iter()
        .filter(|t| {
            w.iter().enumerate().any(|(i, (word, raw))| {
                word == &t.to_lowercase()
                    && (raw.contains('`')
                        || (i >= 1 && verbs.contains(&w[i - 1].0.as_str()))
                        || (i >= 2 && verbs.contains(&w[i - 2].0.as_str()))
                        || w.get(i + 1).is_some_and(|(n, _)| n.starts_with("tool"))
                        || (i >= 2 && matches!(w[i - 1].0.as_str(), "and" | "or" | "nor")))
            })
        })
        .cloned()
        .collect()
}

fn parse_clause(clause: &str, tools: &[String]) -> Vec<Rule> {
    let w = words(clause);
    let lower = clause.to_lowercase().replace('\u{2019}', "'");
    let negs = negations(&w) + usize::from(lower.contains("stay out"));
    let negated = negs > 0;
    let only = has(&w, &["only", "exclusively"]);
    let places = places_in(&w);
    // Budgets: "at most 20 tool calls", "no more than 50,000 tokens", "under $2".
    if let Some(found) = budget(&lower) {
        let about_something_else = has(
            &w,
            &[
                "answer",
                "answers",
                "summary",
                "summaries",
                "response",
                "output",
                "reply",
                "report",
                "final",
                "total",
                "overall",
                "across",
                "altogether",
                "whole",
                "each",
                "per",
                "file",
                "files",
                "document",
                "documents",
                "line",
                "lines",
                "words",
                "characters",
                "minute",
                "minutes",
                "second",
                "seconds",
                "hour",
                "hours",
            ],
        );
        return match found {
            Some(rule) if !about_something_else && places.is_empty() => vec![rule],
            _ => Vec::new(),
        };
    }
    // A condition, a comparison, a double negative or a contrast: not typed.
    let contrast = w.iter().enumerate().any(|(i, (word, _))| {
        word == "but"
            && !(i >= 1
                && matches!(
                    w[i - 1].0.as_str(),
                    "anything" | "anywhere" | "everything" | "nothing" | "all" | "files" | "file"
                ))
    });
    if has(&w, AMBIGUOUS) || negs > 1 || contrast {
        return Vec::new();
    }
    // Network.
    let network_words = [
        "network", "internet", "online", "offline", "http", "https", "web", "url", "urls", "host",
        "hosts", "download", "fetch",
    ];
    let hosts: Vec<String> = w
        .iter()
        .map(|(word, _)| word.as_str())
        .filter(|word| looks_like_host(word))
        .map(str::to_string)
        .collect();
    let reaching = ["connect", "reach", "contact", "call", "send", "talk"];
    if has(&w, &network_words) || (!hosts.is_empty() && has(&w, &reaching)) {
        let except = has(&w, &["except", "besides", "excluding"]) || lower.contains("other than");
        let rule = match (only, negated, hosts.is_empty()) {
            (true, false, false) => Some(hosts),
            // "No network except api.example.com"
            (false, true, false) if except => Some(hosts),
            (false, true, true) if !except => Some(Vec::new()),
            (false, false, true) if lower.contains("offline") => Some(Vec::new()),
            // "Don't connect to evil.com": a host deny-list is not a rule here.
            _ => None,
        };
        return match rule {
            Some(allowed_hosts) if places.is_empty() => vec![Rule::Network { allowed_hosts }],
            _ => Vec::new(),
        };
    }
    // Programs.
    let programs = [
        "command",
        "commands",
        "shell",
        "program",
        "programs",
        "process",
        "processes",
        "execute",
    ];
    if negated && has(&w, &programs) {
        return if places.is_empty() && !only {
            vec![Rule::NoSpawn]
        } else {
            Vec::new()
        };
    }
    let connective = w
        .iter()
        .position(|(word, _)| ONLY_CONNECTIVES.contains(&word.as_str()));
    // Tools named by the run's own tool names.
    let named = named_tools(&w, tools);
    if !named.is_empty() && (negated || only) {
        if !places.is_empty() || (negated && only) || connective.is_some() {
            return Vec::new();
        }
        return vec![if negated {
            Rule::Tools {
                allow: Vec::new(),
                deny: named,
            }
        } else {
            Rule::Tools {
                allow: named,
                deny: Vec::new(),
            }
        }];
    }
    // Read-only.
    let read_only_phrase = lower.contains("read-only")
        || has(&w, &["readonly"])
        || (lower.contains("read only") && places.is_empty())
        || lower.contains("no side effect")
        || lower.contains("no effect");
    if read_only_phrase {
        return if places.is_empty() {
            vec![Rule::NoEffects]
        } else {
            Vec::new()
        };
    }
    scope_rules(&w, &lower, &places, negated, only, connective)
}

/// A read or write scope clause: "only read under X", "never touch X", "do not read anything
/// outside X", "don't modify anything in X", "never modify anything".
fn scope_rules(
    w: &[(String, &str)],
    lower: &str,
    places: &[String],
    negated: bool,
    only: bool,
    connective: Option<usize>,
) -> Vec<Rule> {
    let reads = has(w, READ_VERBS);
    let writes = has(w, WRITE_VERBS) || lower.contains("make no change");
    // A place with no verb ("never answer in French") is not a scope.
    let touches = has(w, TOUCH_VERBS);
    let stay = lower.contains("stay");
    if !reads && !writes && !touches {
        return Vec::new();
    }
    // A quantity ("never read more than 3 files") is not a scope.
    let counted = w.iter().any(|(word, raw)| {
        word.chars().any(|c| c.is_ascii_digit()) && !places.iter().any(|p| raw.contains(p.as_str()))
    });
    if counted {
        return Vec::new();
    }
    if places.is_empty() {
        // "Don't modify anything": no writes at all.
        return if writes && negated && !only && !reads && connective.is_none() {
            vec![write_scope(Vec::new(), vec![".".into()])]
        } else {
            Vec::new()
        };
    }
    // "Only src except src/gen", "only … but not …": read two ways, not typed.
    if only && (negated || connective.is_some()) {
        return Vec::new();
    }
    if !negated && !only && !stay {
        return Vec::new();
    }
    // "Do not read anything outside src", "anywhere but src", "don't leave src": only the
    // places after the connective, and only generic words between the verb and it ("don't
    // touch src except src/net", "do not read tests except tests/x" are not typed).
    let connective = connective.filter(|_| negated);
    if let Some(at) = connective {
        let verb = w[..at].iter().rposition(|(word, _)| {
            READ_VERBS.contains(&word.as_str())
                || WRITE_VERBS.contains(&word.as_str())
                || TOUCH_VERBS.contains(&word.as_str())
        });
        let between_generic = match verb {
            Some(v) => w[v + 1..at]
                .iter()
                .all(|(word, _)| GENERIC.contains(&word.as_str())),
            None => w[at].0 == "leave",
        };
        if !between_generic || !places_in(&w[..at]).is_empty() {
            return Vec::new();
        }
    }
    let is_only = only || connective.is_some() || (!negated && stay);
    let (only_under, never_under): (Vec<String>, Vec<String>) = if is_only {
        (places.to_vec(), Vec::new())
    } else {
        // A file's name without a directory is forbidden at any depth, as an ignore file
        // reads it: "never read secrets.json or .env files".
        let anywhere = places
            .iter()
            .map(|p| {
                let name_only = !p.contains('/') && (p.starts_with('.') || has_extension(p));
                if name_only && !p.contains('*') {
                    format!("**/{p}")
                } else {
                    p.clone()
                }
            })
            .collect();
        (Vec::new(), anywhere)
    };
    let mut rules = Vec::new();
    if reads || touches {
        rules.extend(
            Rule::ReadScope {
                only_under: only_under.clone(),
                never_under: never_under.clone(),
            }
            .checked()
            .ok(),
        );
    }
    if writes || touches {
        rules.extend(write_scope(only_under, never_under).checked().ok());
    }
    rules
}

fn write_scope(only_under: Vec<String>, never_under: Vec<String>) -> Rule {
    Rule::WriteScope {
        only_under,
        never_under,
    }
}

fn has_extension(word: &str) -> bool {
    word.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    })
}

/// The places a run of words names: a backticked path, a word holding `/`, a glob wildcard
/// or a file extension, a plain word right after "under", "in", "outside", "but"… (or "out
/// of", "other than"), and a plain word in a list after one ("docs, vendor or tests").
fn places_in(words: &[(String, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut last_place: Option<usize> = None;
    for (i, (word, raw)) in words.iter().enumerate() {
        let quoted = raw.contains('`');
        let path_like = !word.contains('$')
            && (word.contains('/')
                || word.contains(['*', '?'])
                || (word.starts_with('.')
                    && word.len() > 1
                    && word[1..]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                || (has_extension(word) && !word.starts_with("e.g") && !word.starts_with("i.e")));
        let preposition = |j: usize| {
            PREPOSITIONS.contains(&words[j].0.as_str())
                || (words[j].0 == "of" && j >= 1 && words[j - 1].0 == "out")
                || (words[j].0 == "than" && j >= 1 && words[j - 1].0 == "other")
                || (words[j].0 == "from" && j >= 1 && words[j - 1].0 == "apart")
        };
        let after_preposition = (1..=3).any(|back| {
            i >= back
                && preposition(i - back)
                && words[i - back + 1..i]
                    .iter()
                    .all(|(w, _)| NOT_PLACES.contains(&w.as_str()))
        });
        let after_list = i >= 1
            && ((i >= 2
                && matches!(words[i - 1].0.as_str(), "and" | "or" | "nor")
                && last_place == Some(i - 2))
                || (last_place == Some(i - 1) && words[i - 1].1.ends_with(',')));
        let plain = !NOT_PLACES.contains(&word.as_str())
            && !NEGATIONS.contains(&word.as_str())
            && !PREPOSITIONS.contains(&word.as_str())
            && !ONLY_CONNECTIVES.contains(&word.as_str())
            && ![READ_VERBS, WRITE_VERBS, TOUCH_VERBS, &["use"]]
                .iter()
                .any(|set| set.contains(&word.as_str()))
            && word.chars().next().is_some_and(char::is_alphabetic)
            && word
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-'));
        if word.is_empty() || !(quoted || path_like || ((after_preposition || after_list) && plain))
        {
            continue;
        }
        if looks_like_host(word) && !word.contains('/') && !quoted {
            continue;
        }
        // Keep the written case of the path.
        let written = raw
            .trim_matches(|c: char| {
                matches!(
                    c,
                    ',' | ';' | ':' | '!' | '?' | '(' | ')' | '"' | '\'' | '`'
                )
            })
            .trim_end_matches('.');
        let written = if written.is_empty() {
            word.as_str()
        } else {
            written
        };
        last_place = Some(i);
        if !out.iter().any(|p: &String| p == written) {
            out.push(written.to_string());
        }
    }
    out
}

/// A host name: dotted words ending in a known top-level domain, or `localhost`.
fn looks_like_host(word: &str) -> bool {
    const TLDS: &[&str] = &["com", "org", "net", "io", "dev", "ai", "co", "edu", "gov"];
    word == "localhost"
        || (word.contains('.')
            && !word.contains('/')
            && word
                .rsplit('.')
                .next()
                .is_some_and(|tld| TLDS.contains(&tld))
            && word
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')))
}

/// A budget clause: "at most N tool calls / tokens / turns", "under $N", each limit it
/// states. `Some(None)`: it states a limit that cannot be read (no unit, a fraction of a
/// call, a number no limit took) — not typed.
fn budget(lower: &str) -> Option<Option<Rule>> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r"(at most|no more than|not more than|maximum of|max(?:imum)?|up to|under|fewer than|less than)\s+(\$)?([0-9][0-9,_]*(?:\.[0-9]+)?)\s*(k)?\s*(tool[ -]?calls?|calls?|tokens?|model turns?|turns?|dollars?|usd)?",
        )
        .expect("static regex")
    });
    let found: Vec<regex::Captures> = re.captures_iter(lower).collect();
    if found.is_empty() {
        return None;
    }
    let numbers = lower
        .split(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.' || c == '_'))
        .filter(|t| t.chars().any(|c| c.is_ascii_digit()))
        .count();
    if numbers != found.len() {
        return Some(None);
    }
    let (mut tool_calls, mut tokens, mut model_turns, mut cost_usd) = (None, None, None, None);
    for caps in found {
        let Ok(mut number) = caps[3].replace([',', '_'], "").parse::<f64>() else {
            return Some(None);
        };
        if caps.get(4).is_some() {
            number *= 1000.0;
        }
        let unit = caps.get(5).map(|m| m.as_str()).unwrap_or("");
        let strict = matches!(&caps[1], "under" | "fewer than" | "less than");
        let whole = || {
            (number.fract() == 0.0 && number >= 1.0)
                .then_some(number as u64 - u64::from(strict))
                .filter(|n| *n > 0)
        };
        if caps.get(2).is_some() || unit.starts_with("dollar") || unit == "usd" {
            cost_usd = Some(number);
        } else if unit.contains("call") {
            tool_calls = whole().and_then(|n| u32::try_from(n).ok());
            if tool_calls.is_none() {
                return Some(None);
            }
        } else if unit.starts_with("token") {
            tokens = whole();
            if tokens.is_none() {
                return Some(None);
            }
        } else if unit.contains("turn") {
            model_turns = whole().and_then(|n| u32::try_from(n).ok());
            if model_turns.is_none() {
                return Some(None);
            }
        } else {
            return Some(None);
        }
    }
    Some(
        Rule::Budget {
            tool_calls,
            tokens,
            model_turns,
            cost_usd,
        }
        .checked()
        .ok(),
    )
}

#[cfg(test)]
mod tests;
