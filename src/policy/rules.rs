//! Typed constraints: the rules the gate can check, read deterministically from common English
//! phrasings ("only read files under src/", "never touch /vendor", "don't modify anything in
//! migrations", "no network access", "read-only") or given as JSON (`--constraint-json`).
//! What cannot be typed stays a standing condition, and is said to be one.

use serde::{Deserialize, Serialize};

/// One rule the gate checks. Paths are root-relative (a leading `/` means the root), a
/// directory or file and everything below it, or a glob (`**/*.lock`; one without `/`
/// matches a name at any depth).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum Rule {
    /// Reading, listing and searching: only under some places, never under others.
    ReadScope {
        /// Only under these places (none listed: anywhere).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        only_under: Vec<String>,
        /// Never under these places.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        never_under: Vec<String>,
    },
    /// Writing: only under some places, never under others (`.`: nowhere).
    WriteScope {
        /// Only under these places (none listed: anywhere).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        only_under: Vec<String>,
        /// Never under these places.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        never_under: Vec<String>,
    },
    /// Network: only these hosts (and their subdomains); none when empty.
    Network {
        /// The hosts that may be reached.
        #[serde(default)]
        allowed_hosts: Vec<String>,
    },
    /// Read-only: no write, network or program, and no tool that does not declare it only
    /// reads.
    NoEffects,
    /// No program started.
    NoSpawn,
    /// Tools by name: only those allowed (when any are listed), never those denied.
    Tools {
        /// Only these tools (none listed: any).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allow: Vec<String>,
        /// Never these tools.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        deny: Vec<String>,
    },
    /// Limits for each subagent; the lower of this and the run's budget holds. A cost in US
    /// dollars is recorded but not enforced: no model of this build reports a price.
    Budget {
        /// Most tool calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_calls: Option<u32>,
        /// Most tokens, input plus output.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<u64>,
        /// Most model turns.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_turns: Option<u32>,
        /// Most cost in US dollars (recorded, not enforced).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
}

// Costs are finite (`Rule::checked`), so equality is total.
impl Eq for Rule {}

impl Rule {
    /// What the rule enforces, in a few words, for the report.
    pub fn describe(&self) -> String {
        let list = |v: &[String]| {
            v.iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let scope = |verb: &str, only: &[String], never: &[String]| {
            let mut parts = Vec::new();
            if !only.is_empty() {
                parts.push(format!("{verb} only under {}", list(only)));
            }
            if !never.is_empty() {
                parts.push(format!("never {verb} under {}", list(never)));
            }
            parts.join("; ")
        };
        match self {
            Rule::ReadScope {
                only_under,
                never_under,
            } => scope("read", only_under, never_under),
            Rule::WriteScope { never_under, .. } if never_under.iter().any(|p| p == ".") => {
                "no writes".into()
            }
            Rule::WriteScope {
                only_under,
                never_under,
            } => scope("write", only_under, never_under),
            Rule::Network { allowed_hosts } if allowed_hosts.is_empty() => "no network".into(),
            Rule::Network { allowed_hosts } => format!("network only to {}", list(allowed_hosts)),
            Rule::NoEffects => "read-only: no write, network or program".into(),
            Rule::NoSpawn => "no program started".into(),
            Rule::Tools { allow, deny } => {
                let mut parts = Vec::new();
                if !allow.is_empty() {
                    parts.push(format!("only the tools {}", list(allow)));
                }
                if !deny.is_empty() {
                    parts.push(format!("never the tools {}", list(deny)));
                }
                parts.join("; ")
            }
            Rule::Budget {
                tool_calls,
                tokens,
                model_turns,
                cost_usd,
            } => {
                let mut parts = Vec::new();
                if let Some(n) = tool_calls {
                    parts.push(format!("at most {n} tool calls a subagent"));
                }
                if let Some(n) = tokens {
                    parts.push(format!("at most {n} tokens a subagent"));
                }
                if let Some(n) = model_turns {
                    parts.push(format!("at most {n} model turns a subagent"));
                }
                if let Some(c) = cost_usd {
                    parts.push(format!("at most ${c} (not enforced: no price is reported)"));
                }
                parts.join("; ")
            }
        }
    }

    /// Whether the gate or the budget enforces it (a cost-only budget is not).
    pub fn enforced(&self) -> bool {
        !matches!(
            self,
            Rule::Budget {
                tool_calls: None,
                tokens: None,
                model_turns: None,
                ..
            }
        )
    }

    /// Puts its paths in normal form (a leading `/` means the root); an error names a path
    /// that leaves the root or a rule that says nothing.
    pub fn checked(mut self) -> Result<Rule, String> {
        let fix = |paths: &mut Vec<String>| -> Result<(), String> {
            for p in paths.iter_mut() {
                let rooted = p.trim().trim_start_matches('/');
                let rooted = if rooted.is_empty() { "." } else { rooted };
                *p = super::normal_path(rooted)
                    .ok_or_else(|| format!("the path `{p}` leaves the root"))?;
            }
            Ok(())
        };
        match &mut self {
            Rule::ReadScope {
                only_under,
                never_under,
            }
            | Rule::WriteScope {
                only_under,
                never_under,
            } => {
                fix(only_under)?;
                fix(never_under)?;
                if only_under.is_empty() && never_under.is_empty() {
                    return Err("a scope rule needs only_under or never_under".into());
                }
            }
            Rule::Tools { allow, deny } if allow.is_empty() && deny.is_empty() => {
                return Err("a tools rule needs allow or deny".into())
            }
            Rule::Budget {
                tool_calls: None,
                tokens: None,
                model_turns: None,
                cost_usd: None,
            } => return Err("a budget rule needs a limit".into()),
            Rule::Budget {
                cost_usd: Some(c), ..
            } if !c.is_finite() || *c < 0.0 => {
                return Err("cost_usd must be a number of dollars, at least 0".into())
            }
            _ => {}
        }
        Ok(self)
    }
}

/// A constraint's typed form: its rules, and the clauses no rule covers (which stay
/// standing conditions, carried verbatim but not enforced).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Typed {
    /// The rules the gate enforces.
    pub rules: Vec<Rule>,
    /// The clauses no rule covers.
    pub untyped: Vec<String>,
}

/// Reads a typed constraint given as JSON: one rule object or an array of them.
pub fn from_json(text: &str) -> Result<Vec<Rule>, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        one => vec![one],
    };
    if items.is_empty() {
        return Err("an empty list states no rule".into());
    }
    items
        .into_iter()
        .map(|item| {
            // A rule without fields takes none (serde would let them pass).
            let bare = matches!(
                item.get("rule").and_then(|r| r.as_str()),
                Some("no_effects" | "no_spawn")
            );
            if let Some(extra) = item
                .as_object()
                .filter(|_| bare)
                .and_then(|o| o.keys().find(|k| *k != "rule"))
            {
                return Err(format!("unknown field `{extra}`: this rule takes none"));
            }
            serde_json::from_value::<Rule>(item)
                .map_err(|e| e.to_string())
                .and_then(Rule::checked)
        })
        .collect()
}

/// Reads a constraint's text as typed rules, clause by clause: a clause ends at a sentence's
/// end, at `;`, and at a `,` when what follows says something of its own (a verb or a word
/// such as "only", "not", "no" — "…under /migrations, /vendor or /docs" stays one clause).
/// A clause read two ways at once ("only src, not docs" in one clause; "don't use read_file
/// on docs/") is not typed: it stays a standing condition rather than a guess.
/// `tools` are the names of the tools the run has: only they can be named by a tool rule.
pub fn parse(text: &str, tools: &[String]) -> Typed {
    let mut typed = Typed::default();
    for clause in clauses(text) {
        let rules = parse_clause(&clause, tools);
        if rules.is_empty() {
            typed.untyped.push(clause);
        }
        typed.rules.extend(rules);
    }
    typed
}

/// The clauses of a constraint's text (see [`parse`]), trimmed, each holding a letter or digit.
fn clauses(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for sentence in crate::context::sentences_of(text) {
        for part in sentence.split(';') {
            let mut current: Option<String> = None;
            for piece in part.split(',') {
                let w = words(piece);
                let own = has(&w, READ_VERBS)
                    || has(&w, WRITE_VERBS)
                    || has(&w, TOUCH_VERBS)
                    || has(&w, NEGATIONS)
                    || has(
                        &w,
                        &["only", "exclusively", "at", "under", "max", "maximum"],
                    );
                match current.as_mut() {
                    Some(c) if !own => {
                        c.push(',');
                        c.push_str(piece);
                    }
                    _ => {
                        if let Some(done) = current.take() {
                            out.push(done);
                        }
                        current = Some(piece.to_string());
                    }
                }
            }
            out.extend(current);
        }
    }
    out.into_iter()
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
    "edits",
    "writes",
    "changes",
    "modify",
    "modifying",
    "edit",
    "editing",
    "write",
    "writing",
    "change",
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
/// Words after which a plain word is a place.
const PREPOSITIONS: &[&str] = &[
    "under", "in", "inside", "within", "from", "at", "into", "outside", "below", "beneath", "but",
    "except", "besides", "beyond", "than", "leave",
];
/// Words that turn a negated clause into an `only` one: "nothing outside src", "anywhere
/// but src", "other than", "besides", "apart from", "beyond", "don't leave src".
const ONLY_CONNECTIVES: &[&str] = &[
    "outside", "except", "but", "than", "besides", "apart", "beyond", "leave",
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
];

fn has(words: &[(String, &str)], set: &[&str]) -> bool {
    words.iter().any(|(w, _)| set.contains(&w.as_str()))
}

/// A tool of the run named as one: backticked, or after "use", "call", "run", "invoke"
/// (with at most one word between), or before "tool".
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
    let negated = has(&w, NEGATIONS) || lower.contains("do not") || lower.contains("stay out");
    let only = has(&w, &["only", "exclusively"]);
    let mut rules = Vec::new();
    // Budgets: "at most 20 tool calls", "no more than 50,000 tokens", "under $2".
    rules.extend(budget(&lower));
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
        if only && !hosts.is_empty() {
            rules.push(Rule::Network {
                allowed_hosts: hosts,
            });
            return rules;
        }
        if negated || lower.contains("offline") {
            let except = lower.contains("except") || lower.contains("other than");
            rules.push(Rule::Network {
                allowed_hosts: hosts.into_iter().filter(|_| except).collect(),
            });
            return rules;
        }
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
        rules.push(Rule::NoSpawn);
        return rules;
    }
    let places = places(&w);
    // Tools named by the run's own tool names; with a place too ("don't use read_file on
    // docs/") it is read two ways: not typed.
    let named = named_tools(&w, tools);
    if !named.is_empty() && (negated || only) {
        if !places.is_empty() || (negated && only) {
            return Vec::new();
        }
        rules.push(if negated {
            Rule::Tools {
                allow: Vec::new(),
                deny: named,
            }
        } else {
            Rule::Tools {
                allow: named,
                deny: Vec::new(),
            }
        });
        return rules;
    }
    // Read-only.
    let read_only_phrase = lower.contains("read-only")
        || has(&w, &["readonly"])
        || (lower.contains("read only") && places.is_empty())
        || lower.contains("no side effect")
        || lower.contains("no effect");
    if read_only_phrase {
        rules.push(Rule::NoEffects);
        return rules;
    }
    let reads = has(&w, READ_VERBS);
    let writes = has(&w, WRITE_VERBS) || lower.contains("make no change");
    // A place with no verb ("never answer in French") is not a scope.
    let touches = has(&w, TOUCH_VERBS);
    if !reads && !writes && !touches {
        return rules;
    }
    if places.is_empty() {
        // "Don't modify anything": no writes at all.
        if writes && negated && !only {
            rules.push(Rule::WriteScope {
                only_under: Vec::new(),
                never_under: vec![".".into()],
            });
        }
        return rules;
    }
    // "Only src, not docs" in one clause: read two ways, not typed.
    if only && negated {
        return Vec::new();
    }
    if !negated && !only && !lower.contains("stay") {
        return rules;
    }
    // "Do not read anything outside src", "anywhere but src", "don't leave src": only the
    // places after the connective; a place before it ("don't touch src except src/net") is
    // read two ways: not typed.
    let connective = (0..w.len())
        .find(|&i| {
            ONLY_CONNECTIVES.contains(&w[i].0.as_str())
                // "anywhere not in src"
                || (w[i].0 == "not"
                    && i >= 1
                    && matches!(
                        w[i - 1].0.as_str(),
                        "anywhere" | "anything" | "everything" | "something" | "file" | "files"
                    ))
        })
        .filter(|_| negated);
    let is_only = only || connective.is_some() || (!negated && lower.contains("stay"));
    if let Some(at) = connective {
        let before = self::places(&w[..at]);
        if !before.is_empty() {
            return Vec::new();
        }
    }
    let (only_under, never_under) = if is_only {
        (places, Vec::new())
    } else {
        (Vec::new(), places)
    };
    let scope = |read: bool| {
        let rule = if read {
            Rule::ReadScope {
                only_under: only_under.clone(),
                never_under: never_under.clone(),
            }
        } else {
            Rule::WriteScope {
                only_under: only_under.clone(),
                never_under: never_under.clone(),
            }
        };
        rule.checked().ok()
    };
    if reads || touches {
        rules.extend(scope(true));
    }
    if writes || touches {
        rules.extend(scope(false));
    }
    rules
}

/// The places a clause names: a backticked or quoted path, a word holding `/`, a glob
/// wildcard or a file extension, a plain word right after "under", "in", "outside", "but"…
/// (or "out of"), and a plain word after "and" / "or" following a place.
fn places(words: &[(String, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut last_place: Option<usize> = None;
    for (i, (word, raw)) in words.iter().enumerate() {
        let quoted = raw.contains('`');
        let path_like = !word.contains('$')
            && (word.contains('/')
                || word.contains(['*', '?'])
                || (word.contains('.')
                    && word.rsplit('.').next().is_some_and(|ext| {
                        (1..=5).contains(&ext.len())
                            && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    })
                    && !word.starts_with("e.g")
                    && !word.starts_with("i.e")
                    && !word.chars().all(|c| c.is_ascii_digit() || c == '.')));
        let preposition = |j: usize| {
            PREPOSITIONS.contains(&words[j].0.as_str())
                || (words[j].0 == "of" && j >= 1 && words[j - 1].0 == "out")
        };
        let after_preposition = (1..=3).any(|back| {
            i >= back
                && preposition(i - back)
                && words[i - back + 1..i]
                    .iter()
                    .all(|(w, _)| NOT_PLACES.contains(&w.as_str()))
        });
        let after_list = i >= 2
            && matches!(words[i - 1].0.as_str(), "and" | "or" | "nor")
            && last_place == Some(i - 2);
        let plain = !NOT_PLACES.contains(&word.as_str())
            && !NEGATIONS.contains(&word.as_str())
            && !PREPOSITIONS.contains(&word.as_str())
            && !ONLY_CONNECTIVES.contains(&word.as_str())
            && ![READ_VERBS, WRITE_VERBS, TOUCH_VERBS, &["use"]]
                .iter()
                .any(|set| set.contains(&word.as_str()))
            && word.chars().any(char::is_alphabetic)
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

/// A budget clause: "at most N tool calls / tokens / turns", "under $N".
fn budget(lower: &str) -> Option<Rule> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r"(?:at most|no more than|not more than|maximum of|max(?:imum)?|up to|under|fewer than|less than|within)\s+(\$)?([0-9][0-9,_]*(?:\.[0-9]+)?)\s*(k)?\s*(tool[ -]?calls?|calls?|tokens?|model turns?|turns?|dollars?|usd)?",
        )
        .expect("static regex")
    });
    let caps = re.captures(lower)?;
    let number: f64 = caps[2].replace([',', '_'], "").parse().ok()?;
    let number = if caps.get(3).is_some() {
        number * 1000.0
    } else {
        number
    };
    let unit = caps.get(4).map(|m| m.as_str()).unwrap_or("");
    let whole = || (number.fract() == 0.0 && number >= 0.0).then_some(number as u64);
    let mut rule = Rule::Budget {
        tool_calls: None,
        tokens: None,
        model_turns: None,
        cost_usd: None,
    };
    if let Rule::Budget {
        tool_calls,
        tokens,
        model_turns,
        cost_usd,
    } = &mut rule
    {
        if caps.get(1).is_some() || unit.starts_with("dollar") || unit == "usd" {
            *cost_usd = Some(number);
        } else if unit.contains("call") {
            *tool_calls = Some(u32::try_from(whole()?).ok()?);
        } else if unit.starts_with("token") {
            *tokens = Some(whole()?);
        } else if unit.contains("turn") {
            *model_turns = Some(u32::try_from(whole()?).ok()?);
        } else {
            return None;
        }
    }
    rule.checked().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(only: &[&str], never: &[&str]) -> Rule {
        Rule::ReadScope {
            only_under: only.iter().map(|s| s.to_string()).collect(),
            never_under: never.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn write(only: &[&str], never: &[&str]) -> Rule {
        Rule::WriteScope {
            only_under: only.iter().map(|s| s.to_string()).collect(),
            never_under: never.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn budget(tool_calls: Option<u32>, tokens: Option<u64>, cost: Option<f64>) -> Rule {
        Rule::Budget {
            tool_calls,
            tokens,
            model_turns: None,
            cost_usd: cost,
        }
    }

    /// The common phrasings, each to the rules it states; what is not one stays untyped.
    #[test]
    fn common_phrasings_are_typed() {
        let tools: Vec<String> = ["list_dir", "glob", "grep", "read_file"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let cases: Vec<(&str, Vec<Rule>)> = vec![
            ("Only read files under src/", vec![read(&["src"], &[])]),
            ("only look at src/net", vec![read(&["src/net"], &[])]),
            (
                "Do not read anything outside src",
                vec![read(&["src"], &[])],
            ),
            (
                "never touch /vendor",
                vec![read(&[], &["vendor"]), write(&[], &["vendor"])],
            ),
            (
                "Stay out of `third_party/`",
                vec![read(&[], &["third_party"]), write(&[], &["third_party"])],
            ),
            (
                "don't modify anything in migrations",
                vec![write(&[], &["migrations"])],
            ),
            ("Never edit files under docs.", vec![write(&[], &["docs"])]),
            ("No changes under docs/ please", vec![write(&[], &["docs"])]),
            (
                "Do not search outside the src directory",
                vec![read(&["src"], &[])],
            ),
            ("Never modify anything.", vec![write(&[], &["."])]),
            ("Never read *.env files", vec![read(&[], &["*.env"])]),
            (
                "no network access",
                vec![Rule::Network {
                    allowed_hosts: vec![],
                }],
            ),
            (
                "Only connect to api.example.com",
                vec![Rule::Network {
                    allowed_hosts: vec!["api.example.com".into()],
                }],
            ),
            ("read-only", vec![Rule::NoEffects]),
            ("This run is read only.", vec![Rule::NoEffects]),
            ("Don't run shell commands", vec![Rule::NoSpawn]),
            (
                "don't use grep",
                vec![Rule::Tools {
                    allow: vec![],
                    deny: vec!["grep".into()],
                }],
            ),
            (
                "Only use read_file and grep",
                vec![Rule::Tools {
                    allow: vec!["grep".into(), "read_file".into()],
                    deny: vec![],
                }],
            ),
            (
                "Use at most 20 tool calls",
                vec![budget(Some(20), None, None)],
            ),
            (
                "no more than 50,000 tokens",
                vec![budget(None, Some(50_000), None)],
            ),
            ("Spend under $2.50", vec![budget(None, None, Some(2.5))]),
        ];
        for (text, rules) in cases {
            let typed = parse(text, &tools);
            assert_eq!(typed.rules, rules, "{text}");
            assert!(typed.untyped.is_empty(), "{text}: {:?}", typed.untyped);
        }
        for text in [
            "Always use British spelling",
            "The mustard must be yellow.",
            "Cite every claim twice",
            "Never guess.",
            "Never answer in French.",
            "Always answer in English.",
        ] {
            let typed = parse(text, &tools);
            assert!(typed.rules.is_empty(), "{text}: {:?}", typed.rules);
            assert_eq!(typed.untyped, vec![text.to_string()]);
        }
        // "Nothing but X" wordings are `only` rules, never the opposite.
        for text in [
            "Don't look anywhere but src/",
            "Do not read anything other than src/",
            "Don't read files besides src/",
            "Do not look at anything apart from src/",
            "Do not read beyond src/",
            "Don't look anywhere not in src/",
            "Do not search outside the src directory",
        ] {
            assert_eq!(
                parse(text, &tools).rules,
                vec![read(&["src"], &[])],
                "{text}"
            );
        }
        assert_eq!(
            parse("Don't leave src/", &tools).rules,
            vec![read(&["src"], &[]), write(&["src"], &[])]
        );
        // Read two ways at once: not typed, never guessed.
        for text in [
            "Do not touch src/ except src/net/",
            "Never use read_file on docs/",
            "Only read src/ but not docs/",
        ] {
            let typed = parse(text, &tools);
            assert!(typed.rules.is_empty(), "{text}: {:?}", typed.rules);
            assert_eq!(typed.untyped.len(), 1, "{text}");
        }
        // A clause per comma that says something of its own; a list stays whole.
        let two = parse("Never look at tests, only src", &tools);
        assert_eq!(two.rules, vec![read(&[], &["tests"])]);
        assert_eq!(two.untyped, vec!["only src".to_string()]);
        assert_eq!(
            parse(
                "Never modify anything under /migrations, /vendor or /docs",
                &tools
            )
            .rules,
            vec![write(&[], &["migrations", "vendor", "docs"])]
        );
        assert_eq!(
            parse("Don't read from docs or tests", &tools).rules,
            vec![read(&[], &["docs", "tests"])]
        );
        // Every rule of a clause, not the first one found.
        assert_eq!(
            parse(
                "Only read files under src/ and use at most 20 tool calls",
                &tools
            )
            .rules,
            vec![budget(Some(20), None, None), read(&["src"], &[])]
        );
        assert_eq!(
            parse("Only read files under src/, no network access", &tools).rules,
            vec![
                read(&["src"], &[]),
                Rule::Network {
                    allowed_hosts: vec![]
                }
            ]
        );
        assert_eq!(
            parse("Never read files matching the glob *.env", &tools).rules,
            vec![read(&[], &["*.env"])]
        );
        assert_eq!(
            parse("Don't write to disk", &tools).rules,
            vec![write(&[], &["."])]
        );
        assert_eq!(
            parse("Only read files under src/ within 5 minutes", &tools).rules,
            vec![read(&["src"], &[])]
        );
        // Sentences are clauses too.
        assert_eq!(
            parse("Never read files under docs. Never touch vendor/", &tools).rules,
            vec![
                read(&[], &["docs"]),
                read(&[], &["vendor"]),
                write(&[], &["vendor"])
            ]
        );
        // Clause by clause: the typed part is enforced, the rest is said to be untyped.
        let both = parse("Only look at src/net; we always ship on Fridays.", &tools);
        assert_eq!(both.rules, vec![read(&["src/net"], &[])]);
        assert_eq!(both.untyped, vec!["we always ship on Fridays.".to_string()]);
    }

    #[test]
    fn a_cost_limit_is_typed_but_not_enforced() {
        assert!(!budget(None, None, Some(1.0)).enforced());
        assert!(budget(Some(3), None, Some(1.0)).enforced());
        assert!(read(&["src"], &[]).enforced());
    }

    #[test]
    fn json_rules_are_checked() {
        assert_eq!(
            from_json(r#"[{"rule":"no_effects"},{"rule":"write_scope","never_under":["/db/"]}]"#)
                .unwrap(),
            vec![Rule::NoEffects, write(&[], &["db"])]
        );
        for bad in [
            r#"{"rule":"budget"}"#,
            r#"{"rule":"budget","cost_usd":-1}"#,
            r#"{"rule":"tools"}"#,
            r#"{"rule":"write_scope","never_under":["a/../../b"]}"#,
            r#"{"only_under":["src"]}"#,
            r#"{"rule":"no_effects","only_under":["src"]}"#,
            r#"{"rule":"no_spawn","x":1}"#,
        ] {
            assert!(from_json(bad).is_err(), "{bad}");
        }
    }
}
