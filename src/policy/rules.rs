//! Typed constraints: the rules the gate can check, read deterministically from common English
//! phrasings ("only read files under src/", "never touch /vendor", "don't modify anything in
//! migrations", "no network access", "read-only") or given as JSON (`--constraint-json`).
//! What cannot be typed stays a standing condition, and is said to be one.

use serde::{Deserialize, Serialize};

/// One rule the gate checks. Paths are root-relative (a leading `/` means the root), a
/// directory or file and everything below it, or a glob (`**/*.lock`; one without `/`
/// matches a name at any depth).
/// ```
/// let rules = baton::policy::rules_from_json(r#"{"rule": "read_scope", "only_under": ["/src/"]}"#).unwrap();
/// assert_eq!(rules[0], baton::Rule::ReadScope { only_under: vec!["src".into()], never_under: vec![] });
/// assert!(baton::policy::rules_from_json(r#"{"rule": "read_scope", "only_under": ["../x"]}"#).is_err());
/// ```
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

    /// Whether the gate or the budget enforces any of it (a cost-only budget does not).
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

    /// Whether all of it is enforced (a cost limit never is).
    pub fn wholly_enforced(&self) -> bool {
        self.enforced()
            && !matches!(
                self,
                Rule::Budget {
                    cost_usd: Some(_),
                    ..
                }
            )
    }

    /// Puts its paths in normal form (a leading `/` means the root); an error names a path
    /// that leaves the root or a rule that says nothing.
    pub fn checked(mut self) -> Result<Rule, RuleError> {
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

message_error! {
    /// Why a typed rule cannot be used (one line): a path that leaves the root, a rule that says
    /// nothing, JSON that is not a rule.
    RuleError
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
pub fn from_json(text: &str) -> Result<Vec<Rule>, RuleError> {
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
                return Err(RuleError(format!(
                    "unknown field `{extra}`: this rule takes none"
                )));
            }
            serde_json::from_value::<Rule>(item)
                .map_err(|e| RuleError(e.to_string()))
                .and_then(Rule::checked)
        })
        .collect()
}

/// Rules written shortly, for tests.
#[cfg(test)]
pub(crate) mod build {
    use super::Rule;

    pub(crate) fn read(only: &[&str], never: &[&str]) -> Rule {
        Rule::ReadScope {
            only_under: only.iter().map(|s| s.to_string()).collect(),
            never_under: never.iter().map(|s| s.to_string()).collect(),
        }
    }

    pub(crate) fn write(only: &[&str], never: &[&str]) -> Rule {
        Rule::WriteScope {
            only_under: only.iter().map(|s| s.to_string()).collect(),
            never_under: never.iter().map(|s| s.to_string()).collect(),
        }
    }

    pub(crate) fn budget(tool_calls: Option<u32>, tokens: Option<u64>, cost: Option<f64>) -> Rule {
        Rule::Budget {
            tool_calls,
            tokens,
            model_turns: None,
            cost_usd: cost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::{budget, read, write};
    use super::*;

    #[test]
    fn a_cost_limit_is_typed_but_not_enforced() {
        assert!(!budget(None, None, Some(1.0)).enforced());
        assert!(budget(Some(3), None, Some(1.0)).enforced());
        assert!(!budget(Some(3), None, Some(1.0)).wholly_enforced());
        assert!(budget(Some(3), None, None).wholly_enforced());
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
