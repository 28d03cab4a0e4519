//! What a client may ask of the server, and the pure checks every request passes before a
//! run is built: the body's fields (none naming a host, a key or a price), the model (only a
//! spec the server allows), the limits (the command line's ranges) and the root (under an
//! allowed root, after canonicalisation).

use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::problem::Problem;

/// The two jobs a client can start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// Explore a tree of code (`root`).
    Explore,
    /// Research a folder of documents (`corpus`).
    Research,
}

impl RunKind {
    /// `explore` or `research`.
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Explore => "explore",
            RunKind::Research => "research",
        }
    }
}

/// A run's limits: each optional, each within the command line's range.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Subagents running at once (1–1024; default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<u32>,
    /// Most subagents the run may spawn (1–100000; default 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_subagents: Option<u32>,
    /// Most waves: the first plan, then follow-ups planned from the checkpoint (1–100;
    /// default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_waves: Option<u32>,
    /// Shards to split the tree into (1–100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
    /// Most model turns per subagent (1–10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Most tool calls per subagent (1–100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    /// Most tokens per subagent (1–1000000000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Repair turns for a handoff that breaks the contract (0–10; default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repairs: Option<u32>,
    /// The most the run's model calls may cost, in US dollars (above 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// The most one subagent's model calls may cost, in US dollars (above 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_per_subagent: Option<f64>,
}

/// A constraint: English text (`--constraint`), or a typed rule or an array of them as JSON
/// (`--constraint-json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Constraint {
    /// Verbatim English, typed where the policy can read it.
    Text(String),
    /// One typed rule (an object) or several (an array).
    Rules(serde_json::Value),
}

/// `POST /v1/runs`: a run to start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// `explore` (with `root`) or `research` (with `corpus`).
    pub kind: RunKind,
    /// The tree to explore: absolute, or relative to the server's first allowed root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// The folder of documents to research: absolute, or relative to the first allowed root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus: Option<String>,
    /// The question to answer.
    pub question: String,
    /// The subagents' model: a spec the server allows (default `offline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The lead's own model: a spec the server allows (default: none, the deterministic lead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_model: Option<String>,
    /// The run's limits.
    #[serde(default)]
    pub limits: Limits,
    /// Constraints the run must respect.
    #[serde(default)]
    pub constraints: Vec<Constraint>,
    /// Carry a constraint from which no rule could be read as a standing condition (not
    /// enforced, with a warning) instead of refusing the run.
    #[serde(default)]
    pub allow_unenforced: bool,
}

/// `POST /v1/runs/{id}/resume`: the models to continue with (each a spec the server allows;
/// default `offline` and the deterministic lead).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// The subagents' model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The lead's own model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_model: Option<String>,
    /// The cost limit of the resumed run, in dollars (what the run spent counts against it):
    /// a run's cost limits are the resuming process's, as with `baton resume --max-cost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Each subagent's cost limit of the resumed run, in dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_per_subagent: Option<f64>,
}

/// `POST /v1/runs/{id}/fork`: where to fork the run, and the question the fork pursues.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// The last of the run's events the fork shares.
    pub at: u64,
    /// The question the fork pursues instead of its parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
}

/// `POST /v1/runs/{id}/merge`: the other branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeRequest {
    /// The run merged with the one in the path.
    pub with: String,
}

/// `POST /v1/runs/{id}/forget`: the source to withdraw and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetRequest {
    /// The source, as conclusions cite it.
    pub source: String,
    /// Why it is withdrawn.
    pub reason: String,
}

/// `POST /v1/runs/{id}/approvals/{aid}`: the application's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    /// `grant` or `deny`.
    pub decision: Decision,
    /// Why, for a denial (logged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A decision on a request for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The call runs, once.
    Grant,
    /// The call does not run.
    Deny,
}

/// Words that name where a request would go or what it would carry — a host, a key, a price
/// — in a field's name: such a field is refused whatever its place, since base URLs, keys
/// and prices come only from the server's environment and flags.
const FORBIDDEN_WORDS: [&str; 10] = [
    "url", "key", "secret", "token", "price", "header", "host", "endpoint", "password", "auth",
];

/// Parses a JSON body into `T`, refusing first what `T`'s schema does not declare the way
/// it is given: a field (at any depth of an object) whose name speaks of a host, a key or a
/// price and that `T` does not declare (`forbidden_field`), a body or field given as an array
/// where `T` declares none (`invalid_body`: serde would read a struct from an array by
/// position); then anything else `T` does not hold (`invalid_body`, serde's one line).
pub fn parse_body<T: serde::de::DeserializeOwned + JsonSchema>(bytes: &[u8]) -> Result<T, Problem> {
    let value: serde_json::Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        serde_json::Value::Object(Default::default())
    } else {
        serde_json::from_slice(bytes)
            .map_err(|e| Problem::bad("invalid_json", format!("the body is not JSON: {e}")))?
    };
    if !value.is_object() {
        return Err(Problem::bad(
            "invalid_body",
            "the body is not a JSON object",
        ));
    }
    let shape = Shape::of::<T>();
    shape.check(&value, "")?;
    serde_json::from_value(value).map_err(|e| Problem::bad("invalid_body", e.to_string()))
}

/// What a request type's schema declares: every field name, and those whose value is an
/// array.
struct Shape {
    declared: std::collections::BTreeSet<String>,
    arrays: std::collections::BTreeSet<String>,
}

impl Shape {
    fn of<T: JsonSchema>() -> Shape {
        let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
        let mut shape = Shape {
            declared: Default::default(),
            arrays: Default::default(),
        };
        shape.collect(&schema);
        shape
    }

    /// Every `properties` object of the schema, its definitions included.
    fn collect(&mut self, schema: &serde_json::Value) {
        match schema {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::Object(props)) = map.get("properties") {
                    for (name, field) in props {
                        self.declared.insert(name.clone());
                        let kind = &field["type"];
                        if kind == "array"
                            || kind.as_array().is_some_and(|k| k.contains(&"array".into()))
                        {
                            self.arrays.insert(name.clone());
                        }
                    }
                }
                map.values().for_each(|v| self.collect(v));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| self.collect(v)),
            _ => {}
        }
    }

    /// Checks an object's fields depth first (constraints' rules are data of the policy and
    /// may name hosts: `constraints` is not searched).
    fn check(&self, value: &serde_json::Value, at: &str) -> Result<(), Problem> {
        let serde_json::Value::Object(map) = value else {
            return Ok(());
        };
        for (name, inner) in map {
            let path = format!("{at}{name}");
            let lower = name.to_ascii_lowercase();
            if FORBIDDEN_WORDS.iter().any(|w| lower.contains(w)) && !self.declared.contains(name) {
                return Err(Problem::bad(
                    "forbidden_field",
                    format!(
                        "field `{path}`: base URLs, keys and prices come from the server's environment and flags, never from a request"
                    ),
                ));
            }
            if inner.is_array() && !self.arrays.contains(name) {
                return Err(Problem::bad(
                    "invalid_body",
                    format!("{path}: not a JSON array field"),
                ));
            }
            if name != "constraints" {
                self.check(inner, &format!("{path}."))?;
            }
        }
        Ok(())
    }
}

/// Checks each limit against the command line's range; the error names the field.
pub fn check_limits(limits: &Limits) -> Result<(), Problem> {
    let range = |name: &str, v: Option<u64>, lo: u64, hi: u64| match v {
        Some(v) if v < lo || v > hi => Err(Problem::bad(
            "invalid_limit",
            format!("limits.{name}: {v} is not in {lo}..={hi}"),
        )),
        _ => Ok(()),
    };
    let l = limits;
    range("agents", l.agents.map(u64::from), 1, 1024)?;
    range("max_subagents", l.max_subagents.map(u64::from), 1, 100_000)?;
    range("max_waves", l.max_waves.map(u64::from), 1, 100)?;
    range("shards", l.shards.map(u64::from), 1, 100_000)?;
    range("max_turns", l.max_turns.map(u64::from), 1, 10_000)?;
    range(
        "max_tool_calls",
        l.max_tool_calls.map(u64::from),
        1,
        100_000,
    )?;
    range("max_tokens", l.max_tokens, 1, 1_000_000_000)?;
    range("repairs", l.repairs.map(u64::from), 0, 10)?;
    for (name, v) in [
        ("max_cost", l.max_cost),
        ("max_cost_per_subagent", l.max_cost_per_subagent),
    ] {
        if let Some(d) = v {
            if !(d.is_finite() && d > 0.0 && d < 1e9) {
                return Err(Problem::bad(
                    "invalid_limit",
                    format!("limits.{name}: {d} is not an amount of dollars above 0"),
                ));
            }
        }
    }
    Ok(())
}

/// The model a request names, checked against the specs the server allows (compared parsed:
/// provider and name): `model_not_allowed` otherwise, naming the allowed ones.
pub fn allowed_model(
    allowed: &[crate::model::ModelSpec],
    field: &str,
    given: &str,
) -> Result<crate::model::ModelSpec, Problem> {
    let spec = crate::model::ModelSpec::parse(given)
        .map_err(|e| Problem::bad("invalid_model", format!("{field}: {e}")))?;
    if allowed.contains(&spec) {
        return Ok(spec);
    }
    let names: Vec<String> = allowed.iter().map(spec_name).collect();
    Err(Problem::bad(
        "model_not_allowed",
        format!(
            "{field}: `{}` is not a model this server allows (allowed: {}; see --allow-model)",
            given.trim(),
            names.join(", ")
        ),
    ))
}

/// A spec as written: `offline`, or `provider:model`.
pub fn spec_name(spec: &crate::model::ModelSpec) -> String {
    match spec.provider {
        crate::model::Provider::Offline => "offline".to_string(),
        crate::model::Provider::Anthropic => format!("anthropic:{}", spec.model),
        crate::model::Provider::OpenAi => format!("openai:{}", spec.model),
    }
}

/// The directory a request names, allowed only when it lies under one of `allow` (each
/// canonical) after canonicalisation: `..` anywhere is refused, a relative path is taken
/// from the first allowed root, a path outside every allowed root is refused before it is
/// looked at (nothing is said of what lies there), a symlink leading out and a file are
/// refused, a missing directory is named. Every refusal is 403 but the missing one (404).
pub fn allowed_dir(allow: &[PathBuf], field: &str, given: &str) -> Result<PathBuf, Problem> {
    if given.trim().is_empty() {
        return Err(Problem::bad("invalid_body", format!("{field}: empty")));
    }
    if given.contains('\0') {
        return Err(Problem::bad(
            "invalid_body",
            format!("{field}: holds a NUL"),
        ));
    }
    let path = Path::new(given);
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(Problem::forbidden(
            "root_not_allowed",
            format!("{field} `{given}`: `..` is not accepted in a path"),
        ));
    }
    let Some(first) = allow.first() else {
        return Err(Problem::forbidden(
            "root_not_allowed",
            format!("{field} `{given}`: the server allows no root"),
        ));
    };
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        first.join(path)
    };
    // No `..` is left to resolve: the lexical form only drops `.` parts.
    let lexical: PathBuf = joined
        .components()
        .filter(|c| *c != Component::CurDir)
        .collect();
    let outside = |p: &Path| !allow.iter().any(|a| p.starts_with(a));
    let refused = || {
        Problem::forbidden(
            "root_not_allowed",
            format!("{field} `{given}`: not under a root this server allows (see --allow-root)"),
        )
    };
    if outside(&lexical) {
        return Err(refused());
    }
    let canonical = match lexical.canonicalize() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Problem::not_found(
                "root_not_found",
                format!("{field} `{given}`: no such directory"),
            ))
        }
        Err(e) => {
            return Err(Problem::forbidden(
                "root_not_allowed",
                format!("{field} `{given}`: {e}"),
            ))
        }
    };
    if outside(&canonical) {
        return Err(refused());
    }
    if !canonical.is_dir() {
        return Err(Problem::forbidden(
            "root_not_directory",
            format!("{field} `{given}`: not a directory"),
        ));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_naming_a_host_or_key_is_refused_at_any_depth() {
        for body in [
            r#"{"kind":"explore","question":"q","base_url":"http://x"}"#,
            r#"{"kind":"explore","question":"q","limits":{"api_key":"k"}}"#,
            r#"{"kind":"explore","question":"q","Prices":"/etc/p.toml"}"#,
        ] {
            let e = parse_body::<RunRequest>(body.as_bytes()).unwrap_err();
            assert_eq!((e.status, e.code), (400, "forbidden_field"), "{body}");
        }
        // A constraint's rule may name a host: it is the policy's data.
        let ok: RunRequest = parse_body(
            br#"{"kind":"explore","question":"q","constraints":[{"rule":"network","allow_hosts":["a.example"]}]}"#,
        )
        .unwrap();
        assert_eq!(ok.constraints.len(), 1);
        let e =
            parse_body::<RunRequest>(br#"{"kind":"explore","question":"q","x":1}"#).unwrap_err();
        assert_eq!(e.code, "invalid_body");
        assert!(e.detail.contains("`x`"), "{}", e.detail);
        // A limit named like a key is a limit; elsewhere the name is refused.
        let ok: RunRequest =
            parse_body(br#"{"kind":"explore","question":"q","limits":{"max_tokens":1000}}"#)
                .unwrap();
        assert_eq!(ok.limits.max_tokens, Some(1000));
        let e = parse_body::<RunRequest>(br#"{"kind":"explore","question":"q","tokens":1}"#)
            .unwrap_err();
        assert_eq!(e.code, "forbidden_field");
        let e = parse_body::<RunRequest>(br#"{"kind":"explore","question":"q","limits":[4,4,4]}"#)
            .unwrap_err();
        assert_eq!(
            (e.code, e.detail.as_str()),
            ("invalid_body", "limits: not a JSON array field")
        );
        // The body is an object: serde's sequence form of a struct is not taken.
        for body in [&br#"["explore","proj",null,"q"]"#[..], b"[]", b"3"] {
            let e = parse_body::<RunRequest>(body).unwrap_err();
            assert_eq!(
                (e.code, e.detail.as_str()),
                ("invalid_body", "the body is not a JSON object")
            );
        }
    }

    #[test]
    fn limits_outside_the_command_lines_ranges_are_named() {
        let e = check_limits(&Limits {
            agents: Some(0),
            ..Limits::default()
        })
        .unwrap_err();
        assert!(e.detail.starts_with("limits.agents"), "{}", e.detail);
        assert!(check_limits(&Limits {
            max_cost: Some(f64::NAN),
            ..Limits::default()
        })
        .is_err());
        assert!(check_limits(&Limits::default()).is_ok());
    }

    #[test]
    fn only_an_allowed_model_spec_is_taken() {
        let allowed = vec![crate::model::ModelSpec::parse("offline").unwrap()];
        assert!(allowed_model(&allowed, "model", " offline ").is_ok());
        let e = allowed_model(&allowed, "model", "openai:gpt-4o").unwrap_err();
        assert_eq!(e.code, "model_not_allowed");
        assert!(e.detail.contains("allowed: offline"), "{}", e.detail);
    }

    #[test]
    fn a_root_is_allowed_only_under_an_allowed_root() {
        let dir = tempfile::tempdir().unwrap();
        let allowed = dir.path().canonicalize().unwrap().join("ok");
        std::fs::create_dir_all(allowed.join("sub")).unwrap();
        std::fs::write(allowed.join("file"), "x").unwrap();
        let allow = vec![allowed.clone()];
        let code = |given: &str| allowed_dir(&allow, "root", given).map_err(|e| (e.status, e.code));
        assert_eq!(code("sub"), Ok(allowed.join("sub")));
        assert_eq!(code(allowed.to_str().unwrap()), Ok(allowed.clone()));
        assert_eq!(code("sub/../sub"), Err((403, "root_not_allowed")));
        assert_eq!(
            code(dir.path().to_str().unwrap()),
            Err((403, "root_not_allowed"))
        );
        assert_eq!(code("file"), Err((403, "root_not_directory")));
        assert_eq!(code("missing"), Err((404, "root_not_found")));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path(), allowed.join("out")).unwrap();
            assert_eq!(code("out"), Err((403, "root_not_allowed")));
        }
    }
}
