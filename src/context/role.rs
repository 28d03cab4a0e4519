//! Role profiles (contracts/roles/*.toml): the checkpoint fields a role must see (mandatory),
//! may see (by priority), its tools, its system text and its token budget. Built-in profiles
//! are compiled in; `--roles DIR` adds or replaces them. A malformed profile is an error naming
//! the file and the field.

use crate::contracts::RoleId;
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::checkpoint::Field;

/// An optional field and its priority (lower first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionalField {
    /// The field.
    pub field: Field,
    /// Lower is included first.
    pub priority: u32,
}

/// One role's profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleProfile {
    /// The role's name.
    pub name: RoleId,
    /// One line on what the role is for.
    pub description: String,
    /// The system text the role's context opens with.
    pub system: String,
    /// Default token budget of its context.
    pub budget: usize,
    /// Tools it may call (workspace tools: list_dir, glob, grep, read_file).
    pub tools: Vec<String>,
    /// Fields it must see whole; a context that cannot hold them is refused.
    pub mandatory: Vec<Field>,
    /// Fields it may see, by priority.
    #[serde(default)]
    pub optional: Vec<OptionalField>,
}

/// Why a profile could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct RoleError {
    /// The profile's file.
    pub file: String,
    /// What is wrong, naming the field.
    pub message: String,
}

/// The built-in workspace tools a profile may name; tools registered with the coordinator
/// may be named too ([`RoleProfile::unknown_tool`] is checked when a run starts).
pub const KNOWN_TOOLS: &[&str] = &["list_dir", "glob", "grep", "read_file"];

const BUILT_IN: &[(&str, &str)] = &[
    (
        "explorer.toml",
        include_str!("../../contracts/roles/explorer.toml"),
    ),
    (
        "researcher.toml",
        include_str!("../../contracts/roles/researcher.toml"),
    ),
    (
        "verifier.toml",
        include_str!("../../contracts/roles/verifier.toml"),
    ),
    (
        "recovery.toml",
        include_str!("../../contracts/roles/recovery.toml"),
    ),
    ("lead.toml", include_str!("../../contracts/roles/lead.toml")),
];

impl RoleProfile {
    /// The first tool the profile names that `known` (the run's tools) does not hold.
    pub fn unknown_tool(&self, known: &[String]) -> Option<&str> {
        self.tools
            .iter()
            .find(|t| !known.contains(t))
            .map(String::as_str)
    }

    /// Parses and checks one profile; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<RoleProfile, RoleError> {
        let err = |message: String| RoleError {
            file: file.to_string(),
            message,
        };
        let profile: RoleProfile = toml::from_str(text)
            .map_err(|e| err(e.to_string().lines().collect::<Vec<_>>().join(" ")))?;
        if profile.name.as_str().trim().is_empty() {
            return Err(err("field `name`: empty".into()));
        }
        if profile.budget == 0 {
            return Err(err(
                "field `budget`: must be a positive number of tokens".into()
            ));
        }
        if let Some(tool) = profile.tools.iter().find(|t| {
            t.is_empty()
                || !t
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        }) {
            return Err(err(format!("field `tools`: `{tool}` is not a tool name")));
        }
        for f in &profile.optional {
            if profile.mandatory.contains(&f.field) {
                return Err(err(format!(
                    "field `optional`: `{}` is already mandatory",
                    f.field.name()
                )));
            }
        }
        if !profile.mandatory.contains(&Field::Constraints) {
            return Err(err(
                "field `mandatory`: every role must see `constraints` (they bind every step)"
                    .into(),
            ));
        }
        Ok(profile)
    }
}

/// The built-in profiles, plus those of `dir` (`*.toml`), which replace built-ins of the same
/// name.
pub fn load_roles(dir: Option<&Path>) -> Result<BTreeMap<RoleId, RoleProfile>, RoleError> {
    let mut roles = BTreeMap::new();
    for (file, text) in BUILT_IN {
        let role = RoleProfile::parse(&format!("contracts/roles/{file}"), text)?;
        roles.insert(role.name.clone(), role);
    }
    let Some(dir) = dir else { return Ok(roles) };
    let shown = dir.display().to_string();
    let entries = std::fs::read_dir(dir).map_err(|e| RoleError {
        file: shown.clone(),
        message: e.to_string(),
    })?;
    let mut paths: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    for path in paths {
        let file = path.display().to_string();
        // Only a regular file of bounded size is read: a FIFO named `x.toml` never blocks.
        let text = crate::fsio::read_text_file(&path, &file).map_err(|e| RoleError {
            file: file.clone(),
            message: e.to_string(),
        })?;
        let role = RoleProfile::parse(&file, &text)?;
        roles.insert(role.name.clone(), role);
    }
    Ok(roles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_profiles_load() {
        let roles = load_roles(None).unwrap();
        for name in ["explorer", "researcher", "verifier", "recovery", "lead"] {
            assert!(roles.contains_key(name), "{name}");
        }
        assert!(roles["lead"].tools.is_empty());
    }

    #[test]
    fn a_malformed_profile_names_the_file_and_field() {
        let bad = "name = \"x\"\ndescription = \"d\"\nsystem = \"s\"\nbudget = 100\ntools = [\"shell\"]\nmandatory = [\"goal\", \"constraints\"]\n";
        // Any tool name parses; one the run does not have is refused when it starts.
        let shell = RoleProfile::parse("roles/x.toml", bad).unwrap();
        assert_eq!(shell.unknown_tool(&["grep".into()]), Some("shell"));
        assert_eq!(shell.unknown_tool(&["shell".into()]), None);
        let e = RoleProfile::parse("roles/x.toml", &bad.replace("shell", "a b")).unwrap_err();
        assert!(
            e.to_string().starts_with("roles/x.toml: field `tools`"),
            "{e}"
        );
        let e = RoleProfile::parse("roles/y.toml", "name = 3").unwrap_err();
        assert!(e.to_string().starts_with("roles/y.toml:"), "{e}");
        let unknown = bad
            .replace("[\"shell\"]", "[]")
            .replace("\"goal\"", "\"mood\"");
        let e = RoleProfile::parse("roles/z.toml", &unknown).unwrap_err();
        assert!(e.to_string().contains("mood"), "{e}");
    }
}
