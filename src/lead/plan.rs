//! Planning, pure: shard the tree among subagents by directory, balanced by size, and write
//! each subagent's brief.

use crate::contracts::RoleId;
use std::collections::BTreeMap;

// A question goes on one line: the brief's `Question:` line holds it whole (the goal keeps it
// verbatim).
use crate::text::one_line;

/// One subagent's share of the tree: root-relative files and directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shard {
    pub(crate) paths: Vec<String>,
    pub(crate) bytes: u64,
    /// The role of the subagent that takes it (`explorer`, or `verifier` after the last wave).
    pub(crate) role: RoleId,
    /// Its own question, when a lead model planned it (asked besides the run's).
    pub(crate) question: Option<String>,
}

impl Shard {
    /// The shard's paths as prose shows them: each in the source grammar's form.
    pub(crate) fn label(&self) -> String {
        crate::source::prose_list(&self.paths)
    }
}

/// How many shards a tree of `total_bytes` in `files` files gets: at least `agents` (so they
/// really work in parallel), one more per MiB beyond that, at most `max_subagents`, never more
/// than there are files.
pub(crate) fn shard_count(
    total_bytes: u64,
    files: usize,
    agents: usize,
    max_subagents: usize,
) -> usize {
    let by_size = total_bytes.div_ceil(1024 * 1024) as usize;
    agents.max(by_size).min(max_subagents).min(files).max(1)
}

/// A task's shards from the tree's (`explored`, made for explorers): kept when the task fans
/// out explorers; one more over `whole` for each other role it fans out; one for each of its
/// own subtasks — at most `max` in all. Also why, when the task added to or changed the
/// explorers' shards (empty when it did not).
pub(crate) fn task_shards(
    task: &crate::checkpoint::TaskSpec,
    question: &str,
    explored: Vec<Shard>,
    whole: &[String],
    max: usize,
) -> (Vec<Shard>, String) {
    let plain = task.roles.is_empty() && task.subtasks.is_empty() && !task.custom;
    if plain {
        return (explored, String::new());
    }
    // A research task with neither roles nor subtasks: one researcher per sub-question.
    if task.corpus.is_some() && task.roles.is_empty() && task.subtasks.is_empty() {
        let mut shards: Vec<Shard> = super::questions::sub_questions(question)
            .into_iter()
            .map(|q| Shard {
                paths: Vec::new(),
                bytes: 0,
                role: RoleId::RESEARCHER,
                question: Some(q),
            })
            .collect();
        shards.truncate(max);
        let reason = format!(
            "the question split into {} sub-question(s) by its clauses and named things, one researcher each",
            shards.len()
        );
        return (shards, reason);
    }
    let mut shards = Vec::new();
    let mut said = Vec::new();
    if task.roles.contains(&RoleId::EXPLORER) {
        shards.extend(explored);
    }
    let others: Vec<&RoleId> = task
        .roles
        .iter()
        .filter(|r| **r != RoleId::EXPLORER)
        .collect();
    for role in &others {
        shards.push(Shard {
            paths: whole.to_vec(),
            bytes: 0,
            role: (*role).clone(),
            question: None,
        });
    }
    if !others.is_empty() {
        let names: Vec<&str> = others.iter().map(|r| r.as_str()).collect();
        said.push(format!(
            "one subtask for each role fanned out ({})",
            names.join(", ")
        ));
    }
    for subtask in &task.subtasks {
        shards.push(Shard {
            paths: if subtask.scope.is_empty() {
                whole.to_vec()
            } else {
                subtask.scope.clone()
            },
            bytes: 0,
            role: subtask.role.clone(),
            question: Some(subtask.question.clone()),
        });
    }
    if !task.subtasks.is_empty() {
        said.push(format!(
            "{} subtask(s) given by the task",
            task.subtasks.len()
        ));
    }
    if shards.len() > max {
        said.push(format!(
            "{} planned, the first {max} kept (--max-subagents)",
            shards.len()
        ));
        shards.truncate(max);
    }
    (shards, said.join("; "))
}

/// A directory or file with the bytes under it.
#[derive(Debug, Clone)]
struct Unit {
    path: String,
    bytes: u64,
    is_dir: bool,
}

/// Splits `files` (root-relative path, size) into at most `n` shards. Directories stay whole
/// where they fit; a directory bigger than its share is split into its children. Units are then
/// dealt largest first to the lightest shard.
/// `roots` (the read scope, when constraints narrow it): a directory above one is always
/// split, so no shard is wider than what may be read.
pub(crate) fn shard(files: &[(String, u64)], n: usize, roots: Option<&[String]>) -> Vec<Shard> {
    let n = n.max(1);
    let total: u64 = files.iter().map(|f| f.1).sum();
    let target = total.div_ceil(n as u64).max(1);
    let above_a_root = |dir: &str| roots.is_some_and(|roots| !roots.iter().any(|r| within(dir, r)));
    let mut units = children(files, "");
    loop {
        let splittable = units.iter().position(|u| {
            u.is_dir
                && ((u.bytes > target && children(files, &u.path).len() > 1)
                    || above_a_root(&u.path))
        });
        let Some(index) = splittable else { break };
        let unit = units.remove(index);
        units.extend(children(files, &unit.path));
    }
    units.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.path.cmp(&b.path)));
    let mut shards: Vec<Shard> = vec![
        Shard {
            paths: Vec::new(),
            bytes: 0,
            role: RoleId::EXPLORER,
            question: None,
        };
        n.min(units.len()).max(1)
    ];
    // The lightest shard (the first of equals) from a heap: each unit costs log n.
    let mut lightest: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> = (0..shards
        .len())
        .map(|i| std::cmp::Reverse((0, i)))
        .collect();
    for unit in units {
        let Some(std::cmp::Reverse((_, i))) = lightest.pop() else {
            break;
        };
        let shard = &mut shards[i];
        shard.paths.push(unit.path);
        shard.bytes += unit.bytes;
        lightest.push(std::cmp::Reverse((shard.bytes, i)));
    }
    for s in &mut shards {
        s.paths.sort();
    }
    shards.retain(|s| !s.paths.is_empty());
    shards.sort_by(|a, b| a.paths.cmp(&b.paths));
    shards
}

/// The direct children (files and directories) of `dir` ("" for the root), with sizes.
fn children(files: &[(String, u64)], dir: &str) -> Vec<Unit> {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut out: BTreeMap<String, Unit> = BTreeMap::new();
    for (path, bytes) in files {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        let (name, is_dir) = match rest.split_once('/') {
            Some((first, _)) => (first, true),
            None => (rest, false),
        };
        let full = format!("{prefix}{name}");
        let unit = out.entry(full.clone()).or_insert(Unit {
            path: full,
            bytes: 0,
            is_dir,
        });
        unit.bytes += (*bytes).max(1);
    }
    out.into_values().collect()
}

/// The first message of a second-wave verifier: the question, its scope (the whole tree, or
/// the read scope) and what to do (the contract is in its system text: [`with_contract`]).
/// The claims themselves are not here: they are data, in the `doubts` field of its compiled
/// context, never instructions.
pub(crate) fn verify_brief(question: &str, shard: &Shard) -> String {
    let scope = serde_json::to_string(&shard.paths).unwrap_or_else(|_| "[\".\"]".into());
    let question = one_line(question);
    format!(
        "Question: {question}\nScope: {scope}\n\n{} They are listed under `## doubts` in \
         the checkpoint data of your context. Reread the lines each one cites and hand off, as \
         settled conclusions, only the claims whose lines hold what they state — their quoted \
         text and the symbols they name — citing the lines you read; list the others as open \
         items.",
        crate::contracts::VERIFY_TASK,
    )
}

pub(crate) use crate::text::within;

/// The first message a subagent gets: its question and its scope (the contract is in its
/// system text: [`with_contract`]).
pub(crate) fn brief(question: &str, shard: &Shard, others: &[&str]) -> String {
    let scope = serde_json::to_string(&shard.paths).unwrap_or_else(|_| "[\".\"]".into());
    let question = match &shard.question {
        Some(sub) => format!("{}\nSubtask: {}", one_line(question), one_line(sub)),
        None => one_line(question),
    };
    if shard.role == RoleId::RESEARCHER && shard.paths.is_empty() {
        let others = if others.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = others
                .iter()
                .map(|o| format!("- {}", one_line(o)))
                .collect();
            format!("\n{}\n{}", crate::contracts::OTHERS_COVER, list.join("\n"))
        };
        return format!(
            "Question: {question}{others}\n\nSearch the corpus for your part of the question, read \
             the passages that answer it, and hand off: cite each conclusion by the chunk you \
             read (doc:PATH#Lstart-end) and quote only text it showed. If no passage answers, \
             say which queries found nothing over how many documents (cite the searches as \
             call:ID) — never that the thing does not exist."
        );
    }
    // A job with no workspace: the subagent works with the application's tools.
    if shard.paths.is_empty() {
        return format!(
            "Question: {question}\n\nAnswer with the tools you are given (other subagents may \
             work on other parts of the question). Cite what they returned: a record as \
             `kind:ID`, a call as `call:ID`; quote only text they showed you. Then hand off."
        );
    }
    format!(
        "Question: {question}\nScope: {scope}\n\nExplore only inside the scope above (paths are \
         relative to the workspace root; other subagents cover the rest of the tree). Search, \
         read the lines that answer the question, and hand off."
    )
}

/// A subagent's system text with the contract after its role's text and before the
/// checkpoint data: the role's text and the contract are the same for every subagent of a
/// role, so they make one prefix a provider can cache for the whole fan-out.
pub(crate) fn with_contract(system: &str) -> String {
    let contract = crate::contracts::HANDOFF;
    match system.find(crate::contracts::DATA_BEGIN) {
        Some(at) => format!("{}\n{contract}\n{}", &system[..at], &system[at..]),
        None => format!("{system}\n\n{contract}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, u64)]) -> Vec<(String, u64)> {
        list.iter().map(|(p, b)| (p.to_string(), *b)).collect()
    }

    #[test]
    fn balanced_by_size_and_covering_every_file() {
        let tree = files(&[
            ("src/big/a.rs", 500),
            ("src/big/b.rs", 400),
            ("src/small.rs", 100),
            ("tests/t.rs", 300),
            ("README.md", 50),
        ]);
        let shards = shard(&tree, 3, None);
        assert_eq!(shards.len(), 3);
        for (path, _) in &tree {
            let owners = shards
                .iter()
                .filter(|s| {
                    s.paths
                        .iter()
                        .any(|p| path == p || path.starts_with(&format!("{p}/")))
                })
                .count();
            assert_eq!(owners, 1, "{path} must be in exactly one shard");
        }
        let max = shards.iter().map(|s| s.bytes).max().unwrap();
        assert!(max <= 550, "largest shard {max} bytes");
    }

    /// Under a read scope, no shard is wider than it: a directory above it is split even
    /// when it is small.
    #[test]
    fn no_shard_is_wider_than_the_read_scope() {
        let tree = files(&[("src/net/a.rs", 10), ("src/net/b.rs", 10)]);
        let roots = vec!["src/net".to_string()];
        assert_eq!(shard(&tree, 1, None)[0].paths, vec!["src".to_string()]);
        assert_eq!(
            shard(&tree, 1, Some(&roots))[0].paths,
            vec!["src/net".to_string()]
        );
    }

    #[test]
    fn never_more_shards_than_files() {
        let tree = files(&[("a.rs", 10)]);
        assert_eq!(shard(&tree, 4, None).len(), 1);
        assert_eq!(shard_count(10, 1, 4, 32), 1);
        assert_eq!(shard_count(10 * 1024 * 1024, 100, 4, 32), 10);
        assert_eq!(shard_count(100 * 1024 * 1024, 1000, 4, 32), 32);
    }
}
