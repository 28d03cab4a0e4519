//! Constraints in English, read as typed rules — deterministically and conservatively: a
//! clause is typed only when the whole of it has one of the shapes below ("only read files
//! under src/", "never touch /vendor", "don't modify anything in migrations", "no network
//! access", "read-only", "don't use grep", "use at most 20 tool calls"…). Anything else — a
//! condition, a contrast, an explanation, a qualifier ("test files in src/"), a quantity —
//! stays a standing condition, reported as not enforced: a wrong rule claimed as enforced
//! would be worse than none.

use std::sync::OnceLock;

use regex::Regex;

use super::rules::{Rule, Typed};

/// Reads a constraint's text as typed rules, clause by clause: a clause ends at a sentence's
/// end, at `;`, and at a `,`, "and" or "or" before a word that starts a clause of its own (a
/// negation, a verb, "use", "no", "stay" — not "only": "no network, only localhost" is one
/// clause). `tools` are the names of the tools the run has: only they can be named by a
/// tool rule.
///
/// A sentence holding a condition ("unless", "if", "when"…) is not typed at all, nor is one
/// whose untyped clause holds an exception ("except for README.md, don't read outside src/"):
/// its other clauses would otherwise be enforced without it. A plain name (no `/`, wildcard,
/// extension or leading dot) is a place only when `is_path` says the root holds it — "stay
/// within budget" names no directory.
pub fn parse(text: &str, tools: &[String], is_path: &dyn Fn(&str) -> bool) -> Typed {
    let found = sentences(text, tools);
    let whole = || Typed {
        rules: Vec::new(),
        untyped: found.iter().map(|(sentence, _)| sentence.clone()).collect(),
    };
    // A condition anywhere ("… Otherwise, never modify docs.") leaves nothing typed.
    if found.iter().any(|(sentence, _)| conditional(sentence)) {
        return whole();
    }
    let mut typed = Typed::default();
    for (_, clauses) in &found {
        for clause in clauses {
            let rules = parse_clause(clause, tools, is_path);
            if rules.is_empty() {
                // An untyped clause that could change what the typed ones mean — an
                // exception, a permission, a place, a tool ("stay out of vendor, read
                // vendor/README.md only") — leaves nothing typed.
                if qualifies(clause, tools) {
                    return whole();
                }
                typed.untyped.push(clause.clone());
            }
            typed.rules.extend(rules);
        }
    }
    typed
}

/// Whether a sentence states a condition: "unless", "if", "as long as", "where possible",
/// "for now", "otherwise"… ("from now on" binds; it is no condition).
fn conditional(sentence: &str) -> bool {
    let words: Vec<String> = tokens(sentence)
        .iter()
        .filter(|w| *w != ",")
        .map(|w| w.to_lowercase())
        .collect();
    let lower = format!(" {} ", words.join(" ").replace("from now on", ""));
    words.iter().any(|w| CONDITIONS.contains(&w.as_str()))
        || CONDITION_PHRASES.iter().any(|p| lower.contains(p))
}

/// Whether an untyped clause could change what the typed clauses beside it mean.
fn qualifies(clause: &str, tools: &[String]) -> bool {
    tokens(clause).iter().any(|w| {
        let lower = w.to_lowercase();
        EXCEPTIONS.contains(&lower.as_str())
            || PERMISSIONS.contains(&lower.as_str())
            || tools.contains(&lower)
            || (path_like(w) && !looks_like_host(w))
    })
}

/// Words that make a constraint conditional: not typed.
const CONDITIONS: &[&str] = &[
    "unless",
    "if",
    "when",
    "whenever",
    "provided",
    "until",
    "while",
    "once",
    "before",
    "after",
    "assuming",
    "otherwise",
    "ideally",
    "preferably",
    "initially",
    "possible",
    "possibly",
    "usually",
    "generally",
    "normally",
    "typically",
    "mostly",
];
/// Phrases that make a constraint conditional.
const CONDITION_PHRASES: &[&str] = &[
    " as long as ",
    " so long as ",
    " in case ",
    " by default ",
    " for now ",
    " at first ",
    " not yet ",
    " at least ",
    " for the time being ",
];
/// Words of an exception: in a clause that is not typed, they leave nothing typed.
const EXCEPTIONS: &[&str] = &[
    "except",
    "excepting",
    "exception",
    "besides",
    "excluding",
    "but",
    "apart",
    "aside",
    "save",
    "than",
    "barring",
    "only",
    "instead",
];
/// Words of a permission: in a clause that is not typed, they leave nothing typed.
const PERMISSIONS: &[&str] = &[
    "fine",
    "ok",
    "okay",
    "allowed",
    "permitted",
    "may",
    "can",
    "could",
    "free",
    "welcome",
];

/// Words that start a clause of their own after a `,`, "and" or "or", beside the verbs of
/// reading and changing ([`named::READING`], [`named::CHANGING`]).
const CLAUSE_STARTS: &[&str] = &[
    "use", "spend", "never", "don't", "dont", "do", "no", "not", "make", "stay", "avoid", "touch",
    "run", "execute", "at", "skip", "ignore", "exclude",
];

/// Whether `word` (lower-cased) starts a clause of its own.
fn starts_clause(word: &str) -> bool {
    CLAUSE_STARTS.contains(&word)
        || named::READING.contains(&word)
        || named::CHANGING.contains(&word)
}

/// A token of a clause: as written, without the quotes, backticks and trailing punctuation
/// around it; a `,` on its own.
fn tokens(clause: &str) -> Vec<String> {
    let quotes = |c: char| {
        matches!(
            c,
            '"' | '\'' | '`' | '\u{2018}' | '\u{2019}' | '\u{201C}' | '\u{201D}'
        )
    };
    let mut out = Vec::new();
    for raw in clause.split_whitespace() {
        let comma = raw.ends_with(',');
        let word = raw
            .trim_end_matches([',', ';', ':', '!', '?', ')'])
            .trim_start_matches('(')
            .trim_end_matches('.')
            .trim_matches(quotes)
            .trim_end_matches('.')
            .to_string();
        // An apostrophe inside a word stays: "don't".
        let word = word.replace('\u{2019}', "'");
        if !word.is_empty() {
            out.push(word);
        }
        if comma {
            out.push(",".to_string());
        }
    }
    out
}

/// The sentences of a constraint's text (tokens joined by single spaces), each with its
/// clauses (see [`parse`]), each holding a letter and more than a list marker ("1.").
fn sentences(text: &str, tools: &[String]) -> Vec<(String, Vec<String>)> {
    let starts = |w: &str| {
        let w = w.to_lowercase();
        starts_clause(&w) && !tools.contains(&w)
    };
    let verb = |w: &str| {
        let w = w.to_lowercase();
        starts_clause(&w) && !matches!(w.as_str(), "no" | "not" | "at" | "do")
    };
    let keep = |c: &String| {
        c.chars().any(char::is_alphabetic)
            && !c.chars().all(|ch| ch.is_ascii_digit() || ".)".contains(ch))
    };
    let tidy = |c: String| c.replace(" ,", ",").trim_matches([' ', ',']).to_string();
    let mut all = Vec::new();
    for sentence in crate::text::sentences(text) {
        let mut out = Vec::new();
        for part in explanations_apart(sentence).split(';') {
            let t = tokens(part);
            let mut current: Vec<&str> = Vec::new();
            for (i, word) in t.iter().enumerate() {
                let joiner = matches!(word.to_lowercase().as_str(), "," | "and" | "or");
                let next_starts = t.get(i + 1).is_some_and(|n| starts(n))
                    || (word == ","
                        && t.get(i + 1)
                            .is_some_and(|n| matches!(n.to_lowercase().as_str(), "and" | "or"))
                        && t.get(i + 2).is_some_and(|n| starts(n)));
                // "read and write under src/": a verb joined to a verb stays one clause.
                let after_verb = i >= 1 && verb(&t[i - 1]);
                if joiner && next_starts && !after_verb && !current.is_empty() {
                    out.push(current.join(" "));
                    current.clear();
                } else if !(joiner && current.is_empty()) {
                    current.push(word);
                }
            }
            out.push(current.join(" "));
        }
        let clauses: Vec<String> = out.into_iter().map(tidy).filter(keep).collect();
        if !clauses.is_empty() {
            all.push((tidy(tokens(sentence).join(" ")), clauses));
        }
    }
    all
}

/// The sentence with each explanation set off by parentheses or a dash ("never read docs/
/// (it is private)", "… — it is private") made a clause of its own: the rule stays typed,
/// the explanation is carried as a standing condition. Only an explanation is set off — a
/// reason ("because", "since") or a pronoun or "the …" with a verb of being or holding; any
/// other parenthesis ("(the generated ones)", "— except the README") stays in its clause.
fn explanations_apart(sentence: &str) -> String {
    let explains = |text: &str| {
        let words: Vec<String> = text
            .split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                    .to_lowercase()
            })
            .collect();
        let first = words.first().map(String::as_str).unwrap_or("");
        let being = words.iter().any(|w| {
            matches!(
                w.as_str(),
                "is" | "are"
                    | "was"
                    | "were"
                    | "it's"
                    | "they're"
                    | "has"
                    | "have"
                    | "holds"
                    | "contains"
                    | "hold"
                    | "contain"
            )
        });
        matches!(first, "because" | "since")
            || (matches!(
                first,
                "it" | "it's"
                    | "they"
                    | "they're"
                    | "this"
                    | "that"
                    | "these"
                    | "those"
                    | "which"
                    | "the"
            ) && being)
    };
    let mut out = String::with_capacity(sentence.len());
    let mut rest = sentence;
    while let Some(open) = rest.find(" (") {
        let Some(close) = rest[open..].find(')') else {
            break;
        };
        let inner = &rest[open + 2..open + close];
        out.push_str(&rest[..open]);
        if explains(inner) {
            out.push_str("; ");
            out.push_str(inner);
            out.push(' ');
        } else {
            out.push_str(&rest[open..=open + close]);
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    for dash in [" \u{2014} ", " \u{2013} ", " -- ", " - "] {
        if let Some(at) = out.find(dash) {
            if explains(&out[at + dash.len()..]) {
                out.replace_range(at..at + dash.len(), "; ");
            }
        }
    }
    out
}

/// Words that are never a place.
const NOT_PLACES: &[&str] = &[
    "the",
    "a",
    "an",
    "any",
    "all",
    "this",
    "that",
    "these",
    "those",
    "current",
    "same",
    "first",
    "last",
    "whole",
    "entire",
    "root",
    "top",
    "other",
    "hidden",
    "relevant",
    "following",
    "given",
    "specified",
    "above",
    "below",
    "it",
    "them",
    "there",
    "here",
    "everything",
    "anything",
    "nothing",
    "files",
    "file",
    "code",
    "stuff",
    "folder",
    "folders",
    "directory",
    "directories",
    "dir",
    "tree",
    "repo",
    "repository",
    "workspace",
    "project",
    "disk",
    "web",
    "online",
    "network",
    "internet",
    "again",
    "please",
    "anymore",
    "ever",
    "directly",
    "and",
    "or",
    "nor",
    "only",
    "except",
    "but",
    "besides",
    "outside",
    "beyond",
    "than",
    "apart",
    "from",
    "in",
    "under",
    "inside",
    "within",
    "at",
    "into",
    "to",
    "of",
    "yourself",
];

/// A place a clause names: a path (holding `/`, a wildcard, a file extension, or a name
/// starting with `.`) or a plain name; never a word of the clause's grammar.
fn place(word: &str) -> bool {
    let path_like = path_like(word);
    let name = word
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-'));
    (path_like || name)
        && !NOT_PLACES.contains(&word.to_lowercase().as_str())
        && !word.contains('$')
        && !word.contains("://")
        && !looks_like_host(word.split('/').next().unwrap_or(word))
}

/// A path rather than a plain name: it holds `/`, a wildcard or an extension, or starts with
/// `.`.
fn path_like(word: &str) -> bool {
    word.contains('/')
        || word.contains(['*', '?'])
        || (word.starts_with('.') && word.len() > 1)
        || has_extension(word)
}

/// A place that a trailing "files" may follow: "*.env files", ".env files".
fn file_kind(word: &str) -> bool {
    word.contains(['*', '?']) || word.starts_with('.') || has_extension(word)
}

fn has_extension(word: &str) -> bool {
    word.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && !stem.ends_with('.')
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    })
}

/// A host name: dotted words ending in a known top-level domain, or `localhost`.
fn looks_like_host(word: &str) -> bool {
    const TLDS: &[&str] = &["com", "org", "net", "io", "dev", "ai", "co", "edu", "gov"];
    let word = word.to_lowercase();
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

/// The items of a list ("docs , vendor or tests"): its words between separators.
fn items(list: &str) -> Vec<&str> {
    list.split(' ')
        .filter(|w| !matches!(w.to_lowercase().as_str(), "," | "and" | "or" | "nor" | ""))
        .collect()
}

/// What a clause's shape says.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    OnlyRead,
    OnlyReadWrite,
    NeverRead,
    NeverReadMatching,
    OnlyWrite,
    NeverWrite,
    NeverTouch,
    OnlyTouch,
    NoWrites,
    NoNetwork,
    OnlyHosts,
    ReadOnly,
    NoSpawn,
    DenyTools,
    AllowTools,
    Budget,
}

/// The shapes, anchored to the whole clause (case aside). `P` is a list of places, `H` of
/// hosts, `T` of tools, `B` of limits.
fn shapes() -> &'static [(Shape, Regex)] {
    static SHAPES: OnceLock<Vec<(Shape, Regex)>> = OnceLock::new();
    SHAPES.get_or_init(|| {
        let neg = r"(?:never|don't|dont|do not|must not|mustn't|should not|shouldn't|you must not|you should not|please don't|please do not|please never)";
        let read = r"(?:read|look(?: at| in| into| through)?|search(?: in| through)?|grep|list|open|access|explore|browse|inspect|examine|scan|view|consult)";
        // Verbs for changing what is there: deleting, creating or committing are narrower
        // than the write rule, so they are not typed as one.
        let write = r"(?:modify|edit|write(?: to)?|change|alter|update|overwrite)";
        let fill = r"(?:(?:anything|any files|files|any file|any code|code)\s+)?";
        // `at`: a preposition of place — a plain name after one is taken for a directory.
        let prep = r"(?:(?:(?P<at>in|under|inside|within|from|into|below|beneath)|at)\s+)?(?:the\s+)?";
        // Items need a separator: "the HTTP client" is not a list of two places.
        let list = r"(?P<list>\S+(?:(?: ,(?: (?:and|or|nor))?| (?:and|or|nor)) \S+)*?)";
        let tail = r"(?P<files> files)?(?P<dir> (?:directory|directories|folder|folders|dir|tree))?(?: please)?";
        let hosts = r"(?P<list>\S+(?:(?: ,(?: (?:and|or))?| (?:and|or)) \S+)*?)";
        // The same verbs as nouns, for "avoid reading …" and "reading … is forbidden".
        let reading = r"(?:reading|looking(?: at| in| into| through)?|searching(?: in| through)?|grepping|listing|opening|accessing|exploring|browsing|inspecting|examining|scanning|viewing|consulting)";
        let writing = r"(?:modifying|editing|writing(?: to)?|changing|altering|updating|overwriting)";
        let forbidden = r"(?:is|are) (?:forbidden|prohibited|not allowed|not permitted|banned|off[- ]limits)";
        let limit = r"(?:at most|no more than|not more than|up to|max(?:imum)?(?: of)?|fewer than|less than|under) \$?[0-9][0-9,_]*(?:\.[0-9]+)?k? ?(?:tool calls?|calls|tokens|model turns|turns|dollars|usd)?";
        let table: Vec<(Shape, String)> = vec![
            (Shape::OnlyRead, format!(r"(?:only|exclusively) {read} {fill}{prep}{list}{tail}")),
            (Shape::OnlyRead, format!(r"{read} only (?:files )?(?:(?P<at>in|under|inside|within|from)|at) (?:the )?{list}{tail}")),
            (Shape::OnlyRead, format!(r"{neg} {read} (?:anything |anywhere |files |any files |any file )?(?:(?P<at>outside(?: of)?|beyond)|but|other than|besides|apart from|except) (?:the )?{list}{tail}")),
            (Shape::OnlyReadWrite, format!(r"only {read} and {write} {fill}{prep}{list}{tail}")),
            (Shape::NeverRead, format!(r"{neg} {read} {fill}{prep}{list}{tail}")),
            (Shape::NeverReadMatching, format!(r"{neg} {read} files matching (?:the )?(?:glob |pattern )?{list}")),
            (Shape::OnlyWrite, format!(r"only {write} {fill}{prep}{list}{tail}")),
            (Shape::NeverWrite, format!(r"{neg} {write} {fill}{prep}{list}{tail}")),
            (Shape::NeverWrite, format!(r"no (?:changes|edits|writes) (?:(?P<at>in|under|inside)|to) (?:the )?{list}{tail}")),
            (Shape::NeverTouch, format!(r"{neg} (?:touch|go into|enter) {fill}{prep}{list}{tail}")),
            (Shape::NeverTouch, format!(r"stay (?:out of|away from|clear of) (?:the )?{list}{tail}")),
            (Shape::NeverTouch, format!(r"(?:please )?avoid (?:touching |entering )?{fill}{prep}{list}{tail}")),
            (Shape::NeverRead, format!(r"(?:please )?avoid {reading} {fill}{prep}{list}{tail}")),
            (Shape::NeverWrite, format!(r"(?:please )?avoid {writing} {fill}{prep}{list}{tail}")),
            (Shape::NeverRead, format!(r"{reading} {fill}{prep}{list}{tail} {forbidden}")),
            (Shape::NeverWrite, format!(r"{writing} {fill}{prep}{list}{tail} {forbidden}")),
            (Shape::NeverTouch, format!(r"(?:touching |entering )?(?:the )?{list}{tail} {forbidden}")),
            (Shape::OnlyTouch, format!(r"(?:{neg} leave|stay (?:in|within|inside)) (?:the )?{list}{tail}")),
            (Shape::NoWrites, format!(r"(?:{neg} {write} (?:anything|any files|files)|make no changes|{neg} write to disk)")),
            (Shape::NoNetwork, format!(r"(?:(?:no|without) (?:network|internet)(?: access)?|{neg} (?:access|use|reach) the (?:network|internet)|(?:stay |work )?offline|no network calls)")),
            (Shape::OnlyHosts, format!(r"(?:only (?:connect|talk) to|no (?:network|internet)(?: access)? (?:except|other than|besides)(?: to)?) {hosts}")),
            (Shape::ReadOnly, r"(?:read[- ]only|be read[- ]only|stay read[- ]only|(?:this|the) (?:run|task|job) is read[- ]only|no side effects)".to_string()),
            (Shape::NoSpawn, format!(r"(?:{neg} (?:run|execute|start|spawn) (?:any )?(?:shell )?(?:commands|programs|processes|scripts)|no shell(?: commands)?)")),
            (Shape::DenyTools, format!(r"{neg} use (?:the )?{list}(?: tools?)?")),
            (Shape::AllowTools, format!(r"only use (?:the )?{list}(?: tools?)?")),
            (Shape::Budget, format!(r"(?:use |make |spend )?(?P<list>{limit}(?:(?: ,)?(?: and)? {limit})*)(?: per subagent| each| per agent)?")),
        ];
        table
            .into_iter()
            .map(|(shape, pattern)| {
                (
                    shape,
                    Regex::new(&format!("(?i)^{pattern}$")).expect("static regex"),
                )
            })
            .collect()
    })
}

fn parse_clause(clause: &str, tools: &[String], is_path: &dyn Fn(&str) -> bool) -> Vec<Rule> {
    // Matched token by token: a `,` stands apart; "never, ever read" is "never read".
    static EVER: OnceLock<Regex> = OnceLock::new();
    let ever = EVER.get_or_init(|| {
        Regex::new(r"(?i)^(never|don't|dont|do not)(?: ,)? ever(?: ,)? ").expect("static regex")
    });
    let clause = ever.replace(&tokens(clause).join(" "), "$1 ").into_owned();
    // Every shape the clause has; two different readings of one clause type nothing.
    let mut readings = Vec::new();
    for (shape, re) in shapes() {
        let Some(caps) = re.captures(&clause) else {
            continue;
        };
        let list = caps.name("list").map_or("", |m| m.as_str());
        let files = caps.name("files").is_some();
        // A plain name is a directory only after a preposition of place or before
        // "directory": "stay within budget" and "never write to main" name none.
        let located = caps.name("at").is_some() || caps.name("dir").is_some();
        let is_path = |name: &str| located && is_path(name);
        if let Some(rules) = rules_of(*shape, list, files, tools, &is_path) {
            if !readings.contains(&rules) {
                readings.push(rules);
            }
        }
    }
    match readings.len() {
        1 => readings.remove(0),
        _ => Vec::new(),
    }
}

/// The rules of one shape, or `None` when its list does not hold what the shape needs.
fn rules_of(
    shape: Shape,
    list: &str,
    files: bool,
    tools: &[String],
    is_path: &dyn Fn(&str) -> bool,
) -> Option<Vec<Rule>> {
    let places = || places_of(shape, list, files, is_path);
    let read = |only: Vec<String>, never: Vec<String>| {
        Rule::ReadScope {
            only_under: only,
            never_under: never,
        }
        .checked()
        .ok()
    };
    let write = |only: Vec<String>, never: Vec<String>| {
        Rule::WriteScope {
            only_under: only,
            never_under: never,
        }
        .checked()
        .ok()
    };
    let rules = match shape {
        Shape::OnlyRead => vec![read(anywhere(places()?), vec![])?],
        Shape::OnlyReadWrite | Shape::OnlyTouch => {
            let p = anywhere(places()?);
            vec![read(p.clone(), vec![])?, write(p, vec![])?]
        }
        Shape::NeverRead | Shape::NeverReadMatching => {
            vec![read(vec![], anywhere(places()?))?]
        }
        Shape::OnlyWrite => vec![write(anywhere(places()?), vec![])?],
        Shape::NeverWrite => vec![write(vec![], anywhere(places()?))?],
        Shape::NeverTouch => {
            let p = anywhere(places()?);
            vec![read(vec![], p.clone())?, write(vec![], p)?]
        }
        Shape::NoWrites => vec![write(vec![], vec![".".into()])?],
        Shape::NoNetwork => vec![Rule::Network {
            allowed_hosts: vec![],
        }],
        Shape::OnlyHosts => {
            let hosts = items(list);
            if hosts.is_empty() || !hosts.iter().all(|h| looks_like_host(h)) {
                return None;
            }
            vec![Rule::Network {
                allowed_hosts: hosts.iter().map(|h| h.to_lowercase()).collect(),
            }]
        }
        Shape::ReadOnly => vec![Rule::NoEffects],
        Shape::NoSpawn => vec![Rule::NoSpawn],
        Shape::DenyTools | Shape::AllowTools => vec![tool_rule(shape, list, tools)?],
        Shape::Budget => budgets(list)?,
    };
    Some(rules)
}

/// The places a clause's list names, when every one is a place this shape can take: a file
/// kind for `files`, a path or a name the root holds; an extension (`.md`) as the names that
/// end or start with it.
fn places_of(
    shape: Shape,
    list: &str,
    files: bool,
    is_path: &dyn Fn(&str) -> bool,
) -> Option<Vec<String>> {
    let found = items(list);
    let only = matches!(
        shape,
        Shape::OnlyRead | Shape::OnlyReadWrite | Shape::OnlyWrite | Shape::OnlyTouch
    );
    let ok = !found.is_empty()
        && found.iter().all(|p| {
            place(p)
                && (!files || file_kind(p))
                && (path_like(p) || is_path(p))
                && (shape != Shape::NeverReadMatching || p.contains(['*', '?']))
                // "only consult docs.rs": a bare file name may be a site, and an `only`
                // rule on the wrong reading would block everything else.
                && (!only || files || p.contains(['/', '*', '?']) || !file_kind(p))
        });
    // ".md files": files whose names end in `.md` (or start with it: `.env.local`).
    ok.then(|| {
        found
            .iter()
            .flat_map(|p| {
                let extension = files && p.starts_with('.') && !p[1..].contains('.');
                if extension {
                    vec![format!("*{p}"), format!("{p}*")]
                } else {
                    vec![p.to_string()]
                }
            })
            .collect::<Vec<String>>()
    })
}

/// A file's name without a directory is forbidden at any depth, as an ignore file reads it.
fn anywhere(places: Vec<String>) -> Vec<String> {
    places
        .into_iter()
        .map(|p| {
            let name_only = !p.contains('/') && !p.contains('*') && file_kind(&p);
            if name_only {
                format!("**/{p}")
            } else {
                p
            }
        })
        .collect()
}

/// The tools rule a clause names: each tool's name in any letter case is the run's tool
/// (`GREP` is `grep`); none when one is not the run's.
fn tool_rule(shape: Shape, list: &str, tools: &[String]) -> Option<Rule> {
    // A tool's name in any letter case is the run's tool (`GREP` is `grep`).
    let named: Option<Vec<String>> = items(list)
        .iter()
        .map(|t| {
            tools
                .iter()
                .find(|known| known.eq_ignore_ascii_case(t))
                .cloned()
        })
        .collect();
    let named = named.filter(|n| !n.is_empty())?;
    Some(if shape == Shape::DenyTools {
        Rule::Tools {
            allow: vec![],
            deny: named,
        }
    } else {
        Rule::Tools {
            allow: named,
            deny: vec![],
        }
    })
}

/// Each limit of a budget clause, a rule apiece (so a cost limit, which nothing enforces,
/// is reported apart): "at most 20 tool calls", "fewer than 10 turns" (9), "under $2".
fn budgets(list: &str) -> Option<Vec<Rule>> {
    static LIMIT: OnceLock<Regex> = OnceLock::new();
    let re = LIMIT.get_or_init(|| {
        Regex::new(r"(?i)(at most|no more than|not more than|up to|max(?:imum)?(?: of)?|fewer than|less than|under) (\$)?([0-9][0-9,_]*(?:\.[0-9]+)?)(k)? ?(tool calls?|calls|tokens|model turns|turns|dollars|usd)?")
            .expect("static regex")
    });
    let mut rules = Vec::new();
    for caps in re.captures_iter(list) {
        let mut number: f64 = caps[3].replace([',', '_'], "").parse().ok()?;
        if caps.get(4).is_some() {
            number *= 1000.0;
        }
        let unit = caps.get(5).map_or("", |m| m.as_str()).to_lowercase();
        let strict = matches!(
            caps[1].to_lowercase().as_str(),
            "under" | "fewer than" | "less than"
        );
        let whole = || {
            (number.fract() == 0.0 && number >= 1.0)
                .then_some(number as u64 - u64::from(strict))
                .filter(|n| *n > 0)
        };
        let (mut tool_calls, mut tokens, mut model_turns, mut cost_usd) = (None, None, None, None);
        if caps.get(2).is_some() || unit.starts_with("dollar") || unit == "usd" {
            cost_usd = Some(number);
        } else if unit.contains("call") {
            tool_calls = Some(u32::try_from(whole()?).ok()?);
        } else if unit.starts_with("token") {
            tokens = Some(whole()?);
        } else if unit.contains("turn") {
            model_turns = Some(u32::try_from(whole()?).ok()?);
        } else {
            return None;
        }
        rules.push(
            Rule::Budget {
                tool_calls,
                tokens,
                model_turns,
                cost_usd,
            }
            .checked()
            .ok()?,
        );
    }
    (!rules.is_empty()).then_some(rules)
}

mod named;
pub(crate) use named::{named, typed_form};

#[cfg(test)]
mod tests;
