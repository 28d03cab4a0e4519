//! The gate every tool call passes before it runs: a call normalised to its consequences
//! (what it would read, list, search, write, reach or start), judged against the run's typed
//! constraints — taken only from the checkpoint's `constraint_stated` events — to allow or a
//! [`Denial`] naming the constraint, its category and a safe alternative where one exists.
//! The same judgement, per file, keeps the sandbox from opening or walking what a constraint
//! forbids, whatever tool asks.

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};

use super::rules::Rule;
use super::ConstraintEntry;
use crate::text::{lexical_path, within};

/// What a call does to a resource.
/// ```
/// use baton::Effect;
/// let reads = baton::Consequence::on_path(Effect::Read, "src/lib.rs");
/// assert_ne!(reads.effect, Effect::Write);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads one file.
    Read,
    /// Lists one directory's entries.
    List,
    /// Searches (file names or contents) under one path.
    Search,
    /// Creates, changes or deletes under one path.
    Write,
    /// Reaches one network host.
    Network,
    /// Starts one program.
    Spawn,
    /// A tool that does not declare what it touches: judged as touching anything.
    Undeclared,
}

/// One thing a call would do: an effect on a resource (a root-relative path in normal form, a
/// host, a program, or for [`Effect::Undeclared`] the tool's name).
/// ```
/// use baton::{Consequence, Effect};
/// let write = Consequence::on_path(Effect::Write, "./out/../out/a.txt");
/// assert_eq!(write.resource, "out/a.txt", "in normal form");
/// assert_eq!(write.effect, Effect::Write);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Consequence {
    /// What it does.
    pub effect: Effect,
    /// To what.
    pub resource: String,
}

impl Consequence {
    /// An effect on a path a model gave: put in normal form (see [`normal_path`]); a path
    /// that leaves the root is kept as given, and no scope holds it.
    pub fn on_path(effect: Effect, raw: &str) -> Consequence {
        Consequence {
            effect,
            resource: normal_path(raw).unwrap_or_else(|| raw.to_string()),
        }
    }

    /// How the model is told what was denied.
    pub fn describe(&self) -> String {
        let r = &self.resource;
        match self.effect {
            Effect::Read => format!("reading `{r}`"),
            Effect::List => format!("listing `{r}`"),
            Effect::Search => format!("searching `{r}`"),
            Effect::Write => format!("writing `{r}`"),
            Effect::Network => format!("reaching the host `{r}`"),
            Effect::Spawn => format!("starting the program `{r}`"),
            Effect::Undeclared => {
                format!("calling `{r}`, a tool that does not declare what it touches")
            }
        }
        .lines()
        .collect::<Vec<_>>()
        .join(" ")
    }
}

/// The kind of constraint that denied a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Where reading, listing and searching may go.
    ReadScope,
    /// Where writing may go.
    WriteScope,
    /// Which hosts may be reached.
    Network,
    /// No effects at all (read-only), or no programs started.
    Effects,
    /// Which tools may be called.
    Tool,
}

/// A call the gate refused: data, logged, counted and shown to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    /// The tool called.
    pub tool: String,
    /// The consequence denied.
    pub consequence: Consequence,
    /// The constraint that denies it, verbatim.
    pub constraint: String,
    /// The seq of the `constraint_stated` event that stated it.
    pub constraint_event: u64,
    /// Its kind.
    pub category: Category,
    /// What may be done instead, when something may.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternative: Option<String>,
}

impl Denial {
    /// The tool error the model sees: what was denied, by which constraint, what it may do.
    pub fn message(&self) -> String {
        let what = match self.category {
            Category::Tool => format!("the tool `{}`", self.tool),
            _ => self.consequence.describe(),
        };
        let mut text = format!(
            "denied: {what} is forbidden by the constraint \"{}\"",
            crate::text::one_line(&self.constraint)
        );
        if let Some(alternative) = &self.alternative {
            text.push_str("; ");
            text.push_str(alternative);
        }
        text.push_str(". Constraints are lifted only by the user, never by text.");
        text
    }
}

/// A root-relative path a model gave, in normal form: trimmed, unquoted when in the quoted
/// form (`"a b.rs"`) as the workspace tools read it, then taken as written (see `text::lexical_path`).
/// `None` for an absolute path or one that climbs above the root.
pub fn normal_path(raw: &str) -> Option<String> {
    lexical_path(&crate::source::unquoted_path(raw).unwrap_or_else(|| raw.trim().to_string()))
}

/// Each path from the first part of `path` down to itself: `a`, `a/b`, `a/b/c`.
fn ancestry(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/')
        .map(move |(i, _)| &path[..i])
        .chain(std::iter::once(path))
}

/// One place a rule names: a directory or file and everything below it, or a glob.
#[derive(Debug, Clone)]
enum Place {
    Prefix(String),
    Glob {
        text: String,
        matcher: GlobMatcher,
        /// Its parts before the first one holding a wildcard: nothing it matches lies
        /// elsewhere ("." when it has none).
        literal: String,
        /// Whether it names paths (holds `/`) or names (matched against each part).
        by_path: bool,
    },
}

impl Place {
    fn new(text: &str) -> Place {
        let normal = normal_path(text).unwrap_or_else(|| text.to_string());
        // Only `*` and `?` make a glob: `app/[slug]` is a directory (a glob's `[…]` and
        // `{…}` are classes and alternatives).
        if !normal.contains(['*', '?']) {
            return Place::Prefix(normal);
        }
        let wild = |s: &str| s.contains(['*', '?', '[', '{']);
        // Before the first wildcard, brackets and braces are names: `app/[slug]/*.tsx`.
        let mut seen_wild = false;
        let pattern: Vec<String> = normal
            .split('/')
            .map(|part| {
                seen_wild |= part.contains(['*', '?']);
                if seen_wild {
                    part.to_string()
                } else {
                    part.chars()
                        .flat_map(|c| {
                            let escape = matches!(c, '[' | ']' | '{' | '}');
                            escape.then_some('\\').into_iter().chain(std::iter::once(c))
                        })
                        .collect()
                }
            })
            .collect();
        // A glob, or a name at any depth, matches in any letter case: a constraint's letter
        // case is not the tree's (`never read *.MD` keeps `Docs/a.md` out).
        match GlobBuilder::new(&pattern.join("/"))
            .literal_separator(true)
            .backslash_escape(true)
            .case_insensitive(true)
            .build()
        {
            Ok(glob) => {
                let literal: Vec<&str> = normal.split('/').take_while(|p| !wild(p)).collect();
                Place::Glob {
                    by_path: normal.contains('/'),
                    literal: if literal.is_empty() {
                        ".".into()
                    } else {
                        literal.join("/")
                    },
                    matcher: glob.compile_matcher(),
                    text: normal,
                }
            }
            // A glob that does not compile names itself literally.
            Err(_) => Place::Prefix(normal),
        }
    }

    fn shown(&self) -> &str {
        match self {
            Place::Prefix(p) => p,
            Place::Glob { text, .. } => text,
        }
    }

    /// Whether the file or directory `path` is in this place (a glob: it or a directory
    /// above it matches).
    fn holds(&self, path: &str) -> bool {
        match self {
            Place::Prefix(prefix) => within(path, prefix),
            Place::Glob {
                matcher, by_path, ..
            } => ancestry(path).any(|p| {
                if *by_path {
                    matcher.is_match(p)
                } else {
                    matcher.is_match(p.rsplit('/').next().unwrap_or(p))
                }
            }),
        }
    }

    /// Whether everything under the directory `dir` is in this place, as far as can be told
    /// without walking it (a glob: only by a directory it matches).
    fn holds_all_under(&self, dir: &str) -> bool {
        match self {
            Place::Prefix(prefix) => within(dir, prefix),
            Place::Glob { literal, .. } => self.holds(dir) || within(dir, literal),
        }
    }

    /// Whether some of this place lies under the directory `dir`.
    fn reaches_into(&self, dir: &str) -> bool {
        match self {
            Place::Prefix(prefix) => within(prefix, dir) || within(dir, prefix),
            Place::Glob { literal, .. } => within(literal, dir) || within(dir, literal),
        }
    }
}

/// A scope rule (read or write): only under some places, never under others.
#[derive(Debug, Clone, Default)]
struct Scope {
    only: Vec<Place>,
    never: Vec<Place>,
}

impl Scope {
    fn new(only: &[String], never: &[String]) -> Scope {
        Scope {
            only: only.iter().map(|p| Place::new(p)).collect(),
            never: never.iter().map(|p| Place::new(p)).collect(),
        }
    }

    fn only_list(&self) -> String {
        let shown: Vec<String> = self
            .only
            .iter()
            .map(|p| format!("`{}`", p.shown()))
            .collect();
        shown.join(", ")
    }

    /// Judges one file (`whole` false) or everything under a directory (`whole` true): the
    /// refusal's alternative, or `None` when allowed.
    fn refuses(&self, path: &str, whole: bool, verb: &str) -> Option<Option<String>> {
        if !self.only.is_empty() {
            let inside = self.only.iter().any(|p| {
                if whole {
                    p.holds_all_under(path)
                } else {
                    p.holds(path)
                }
            });
            if !inside {
                // Inside the searched directory, the part that may be searched.
                let narrower: Vec<String> = self
                    .only
                    .iter()
                    .filter(|p| whole && p.reaches_into(path))
                    .map(|p| format!("`{}`", p.shown()))
                    .collect();
                let list = if narrower.is_empty() {
                    self.only_list()
                } else {
                    narrower.join(", ")
                };
                return Some(Some(format!("{verb} under {list} instead")));
            }
        }
        // Inside a `never` place (a directory, or one a glob names): denied.
        self.never.iter().find(|p| p.holds(path)).map(|_| None)
    }
}

/// One typed rule in force, with the constraint that stated it.
#[derive(Debug, Clone)]
struct Bound {
    rule: Compiled,
    text: String,
    event: u64,
}

#[derive(Debug, Clone)]
enum Compiled {
    Read(Scope),
    Write(Scope),
    Network(Vec<String>),
    NoEffects,
    NoSpawn,
    Tools {
        allow: Vec<String>,
        deny: Vec<String>,
    },
    Budget,
}

impl Compiled {
    fn of(rule: &Rule) -> Compiled {
        match rule {
            Rule::ReadScope {
                only_under,
                never_under,
            } => Compiled::Read(Scope::new(only_under, never_under)),
            Rule::WriteScope {
                only_under,
                never_under,
            } => Compiled::Write(Scope::new(only_under, never_under)),
            Rule::Network { allowed_hosts } => {
                Compiled::Network(allowed_hosts.iter().map(|h| h.to_lowercase()).collect())
            }
            Rule::NoEffects => Compiled::NoEffects,
            Rule::NoSpawn => Compiled::NoSpawn,
            Rule::Tools { allow, deny } => Compiled::Tools {
                allow: allow.clone(),
                deny: deny.clone(),
            },
            Rule::Budget { .. } => Compiled::Budget,
        }
    }
}

/// The run's typed constraints, as the gate applies them. Built only from the checkpoint's
/// constraints (`constraint_stated` events): nothing else can add, change or lift one.
/// ```
/// let policy = baton::Policy::default();
/// assert!(policy.is_empty(), "no rule in force: nothing is denied");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Policy {
    bound: Vec<Bound>,
    budget: BudgetCaps,
}

/// The lowest of each budget the constraints set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct BudgetCaps {
    tool_calls: Option<u32>,
    tokens: Option<u64>,
    model_turns: Option<u32>,
}

fn lower<T: Ord + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

impl Policy {
    /// The policy of the constraints in force: each one's typed rules.
    pub fn from_constraints(constraints: &[ConstraintEntry]) -> Policy {
        let mut policy = Policy::default();
        for c in constraints {
            for rule in &c.rules {
                if let Rule::Budget {
                    tool_calls,
                    tokens,
                    model_turns,
                    ..
                } = rule
                {
                    let b = &mut policy.budget;
                    b.tool_calls = lower(b.tool_calls, *tool_calls);
                    b.tokens = lower(b.tokens, *tokens);
                    b.model_turns = lower(b.model_turns, *model_turns);
                }
                policy.bound.push(Bound {
                    rule: Compiled::of(rule),
                    text: c.text.clone(),
                    event: c.event,
                });
            }
        }
        policy
    }

    /// Whether no rule is in force.
    pub fn is_empty(&self) -> bool {
        self.bound.is_empty()
    }

    /// A subagent's budget lowered to what the constraints allow.
    pub fn cap(&self, budget: crate::policy::Budget) -> crate::policy::Budget {
        crate::policy::Budget {
            model_turns: lower(Some(budget.model_turns), self.budget.model_turns)
                .unwrap_or(budget.model_turns),
            tool_calls: lower(Some(budget.tool_calls), self.budget.tool_calls)
                .unwrap_or(budget.tool_calls),
            tokens: lower(Some(budget.tokens), self.budget.tokens).unwrap_or(budget.tokens),
        }
    }

    /// The gate: allows a call of `tool` (which says whether it only reads) with these
    /// consequences, or denies it with the first constraint that forbids one of them.
    pub fn judge(
        &self,
        tool: &str,
        read_only: bool,
        consequences: &[Consequence],
    ) -> Result<(), Box<Denial>> {
        for bound in &self.bound {
            if let Compiled::Tools { allow, deny } = &bound.rule {
                if keeps_out(allow, deny, tool) {
                    let alternative = (!allow.is_empty()).then(|| {
                        let list: Vec<String> = allow.iter().map(|a| format!("`{a}`")).collect();
                        format!("use {} instead", list.join(", "))
                    });
                    // The call's own consequence is logged (what it would have done).
                    let consequence = consequences.first().cloned().unwrap_or(Consequence {
                        effect: Effect::Undeclared,
                        resource: tool.to_string(),
                    });
                    return Err(self.deny(bound, tool, consequence, Category::Tool, alternative));
                }
            }
        }
        self.judge_consequences(tool, read_only, consequences)
    }

    /// The gate's judgement of consequences alone (no tool rule: the sandbox does not know
    /// which tool asks, and the gate has judged the tool already).
    fn judge_consequences(
        &self,
        tool: &str,
        read_only: bool,
        consequences: &[Consequence],
    ) -> Result<(), Box<Denial>> {
        for consequence in consequences {
            for bound in &self.bound {
                if let Some((category, alternative)) = refusal(&bound.rule, consequence, read_only)
                {
                    return Err(self.deny(bound, tool, consequence.clone(), category, alternative));
                }
            }
        }
        Ok(())
    }

    fn deny(
        &self,
        bound: &Bound,
        tool: &str,
        consequence: Consequence,
        category: Category,
        alternative: Option<String>,
    ) -> Box<Denial> {
        Box::new(Denial {
            tool: tool.to_string(),
            consequence,
            constraint: bound.text.clone(),
            constraint_event: bound.event,
            category,
            alternative,
        })
    }

    /// The sandbox's check before opening the file at `path` (root-relative, normal form,
    /// where it really lies): whatever tool asks, a read a constraint forbids is denied.
    /// Whether the run's tools rules let a subagent have `tool` at all (a denied tool is not
    /// offered to its model, so no call of it is made only to be denied; the gate still
    /// judges every call).
    pub(crate) fn offers_tool(&self, tool: &str) -> bool {
        self.bound.iter().all(|bound| match &bound.rule {
            Compiled::Tools { allow, deny } => !keeps_out(allow, deny, tool),
            _ => true,
        })
    }

    /// Whether a rule scopes reading (some place may be forbidden to read).
    pub(crate) fn scopes_reading(&self) -> bool {
        self.bound
            .iter()
            .any(|b| matches!(b.rule, Compiled::Read(_)))
    }

    pub(crate) fn may_open(&self, tool: &str, path: &str) -> Result<(), Box<Denial>> {
        self.may(tool, Effect::Read, path)
    }

    /// The sandbox's check of one effect on `path` (root-relative, normal form, where it
    /// really lies): a read, a search or a listing a constraint forbids is denied.
    pub(crate) fn may(&self, tool: &str, effect: Effect, path: &str) -> Result<(), Box<Denial>> {
        self.judge_consequences(
            tool,
            true,
            &[Consequence {
                effect,
                resource: path.to_string(),
            }],
        )
    }

    /// Whether a walk keeps an entry (root-relative, normal form): a file the read scope
    /// lets be read; a directory below which something may be.
    pub(crate) fn walk_keeps(&self, path: &str, is_dir: bool) -> bool {
        self.bound.iter().all(|b| match &b.rule {
            Compiled::Read(scope) if is_dir => {
                (scope.only.is_empty() || scope.only.iter().any(|p| p.reaches_into(path)))
                    && !scope
                        .never
                        .iter()
                        .any(|p| matches!(p, Place::Prefix(x) if within(path, x)) || p.holds(path))
            }
            Compiled::Read(scope) => scope.refuses(path, false, "read").is_none(),
            _ => true,
        })
    }

    /// The places the read scope allows (none: no `only` rule), for planning and for what
    /// negative evidence says was searched.
    pub fn read_roots(&self) -> Option<Vec<String>> {
        let mut roots: Option<Vec<String>> = None;
        for b in &self.bound {
            if let Compiled::Read(scope) = &b.rule {
                if !scope.only.is_empty() {
                    let these: Vec<String> = scope
                        .only
                        .iter()
                        .map(|p| match p {
                            Place::Prefix(x) => x.clone(),
                            Place::Glob { literal, .. } => literal.clone(),
                        })
                        .collect();
                    roots = Some(match roots {
                        // Two `only` rules: the places both allow.
                        Some(prev) => prev
                            .into_iter()
                            .flat_map(|a| {
                                these.iter().filter_map(move |b| {
                                    if within(&a, b) {
                                        Some(a.clone())
                                    } else if within(b, &a) {
                                        Some(b.clone())
                                    } else {
                                        None
                                    }
                                })
                            })
                            .collect(),
                        None => these,
                    });
                }
            }
        }
        roots.map(|mut r| {
            r.sort();
            r.dedup();
            r
        })
    }

    /// The places `only` read rules name, as written (a glob stays a glob), for what negative
    /// evidence says was searched; none without such a rule.
    pub fn read_places(&self) -> Option<Vec<String>> {
        let mut out: Vec<String> = self
            .bound
            .iter()
            .filter_map(|b| match &b.rule {
                Compiled::Read(scope) => Some(scope.only.iter().map(|p| p.shown().to_string())),
                _ => None,
            })
            .flatten()
            .collect();
        out.sort();
        out.dedup();
        (!out.is_empty()).then_some(out)
    }

    /// What the read scope leaves out, for "searched … as constrained": the `never` places.
    pub fn read_exclusions(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .bound
            .iter()
            .filter_map(|b| match &b.rule {
                Compiled::Read(scope) => Some(scope.never.iter().map(|p| p.shown().to_string())),
                _ => None,
            })
            .flatten()
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// Whether one rule forbids one consequence: its category and alternative.
fn refusal(
    rule: &Compiled,
    c: &Consequence,
    read_only: bool,
) -> Option<(Category, Option<String>)> {
    let path = crate::text::lexical_path(&c.resource);
    let effectful_undeclared = c.effect == Effect::Undeclared && !read_only;
    match rule {
        Compiled::Read(scope) => match c.effect {
            Effect::Read => refuse_path(scope, path, false, "read files"),
            Effect::List => refuse_path(scope, path, true, "list"),
            Effect::Search => refuse_path(scope, path, true, "search"),
            Effect::Undeclared => Some(None),
            _ => None,
        }
        .map(|alt| (Category::ReadScope, alt)),
        Compiled::Write(scope) => match c.effect {
            Effect::Write => refuse_path(scope, path, true, "write"),
            _ if effectful_undeclared => Some(None),
            _ => None,
        }
        .map(|alt| (Category::WriteScope, alt)),
        Compiled::Network(allowed) => {
            let host = c.resource.to_lowercase();
            let reachable = allowed
                .iter()
                .any(|a| host == *a || host.ends_with(&format!(".{a}")));
            let refused = match c.effect {
                Effect::Network => !reachable,
                Effect::Undeclared => true,
                _ => false,
            };
            refused.then(|| {
                let alternative = (!allowed.is_empty()).then(|| {
                    let list: Vec<String> = allowed.iter().map(|h| format!("`{h}`")).collect();
                    format!("only {} may be reached", list.join(", "))
                });
                (Category::Network, alternative)
            })
        }
        Compiled::NoEffects => matches!(c.effect, Effect::Write | Effect::Network | Effect::Spawn)
            .then_some(())
            .or(effectful_undeclared.then_some(()))
            .map(|_| (Category::Effects, None)),
        Compiled::NoSpawn => {
            (c.effect == Effect::Spawn || effectful_undeclared).then_some((Category::Effects, None))
        }
        Compiled::Tools { .. } | Compiled::Budget => None,
    }
}

/// Whether a tools rule keeps `tool` from the run: denied by name, or not among the tools an
/// allow list names.
fn keeps_out(allow: &[String], deny: &[String], tool: &str) -> bool {
    deny.iter().any(|d| d == tool) || (!allow.is_empty() && !allow.iter().any(|a| a == tool))
}

/// A path effect against a scope: a path that leaves the root is in no scope.
fn refuse_path(
    scope: &Scope,
    path: Option<String>,
    whole: bool,
    verb: &str,
) -> Option<Option<String>> {
    match path {
        Some(p) => scope.refuses(&p, whole, verb),
        None if !scope.only.is_empty() => Some(None),
        None => None,
    }
}

#[cfg(test)]
mod tests;
