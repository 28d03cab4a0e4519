//! The house rules, read from the source (rust-analyzer's tidy tests are the model): every
//! `crate::` path in src/ points down the layer order of the code map, no two top-level
//! modules import each other through any chain, no file passes 800 lines, no function 120,
//! and every file opens with a `//!` line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom up. A module imports only from layers below its own; modules of one
/// layer do not import each other. Keep in step with the code map in src/lib.rs.
const LAYERS: &[&[&str]] = &[
    &["redact", "text", "tokens", "digest", "fsio", "contracts"],
    &["source", "transcript", "telemetry", "corpus"],
    &["policy"],
    &["tools"],
    &["handoff"],
    &["model"],
    &["compaction"],
    &["checkpoint"],
    &["context"],
    &["explorer"],
    &["subagent"],
    &["report"],
    &["lead"],
    &["coordinator", "testing"],
    &["server"],
];

/// Files of the binary crate (src/main.rs and src/cli/): they reach the library as `baton::`
/// and sit above every layer; only the file rules apply to them.
fn is_binary(rel: &str) -> bool {
    rel == "main.rs" || rel.starts_with("cli/")
}

const MAX_FILE_LINES: usize = 800;
const MAX_FN_LINES: usize = 120;

/// The text with comments and the insides of string and character literals blanked (line
/// breaks kept), so paths and braces are read from code only.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(rest) {
            // r"…", r#"…"#, br"…": closed by a quote and as many hashes.
            let open = rest.iter().position(|&c| c == b'"').unwrap_or(0) + 1;
            out.extend(std::iter::repeat_n(b' ', open));
            i += open;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while i < b.len() && !b[i..].starts_with(&close) {
                out.push(blank(b[i]));
                i += 1;
            }
            out.extend(std::iter::repeat_n(b' ', close.len().min(b.len() - i)));
            i += close.len();
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    out.push(b' ');
                    i += 1;
                }
                out.push(blank(b[i]));
                i += 1;
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{..}', '"'); otherwise a lifetime.
            let end = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = std::str::from_utf8(&rest[1..rest.len().min(5)])
                    .ok()
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(4)]).ok())
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(3)]).ok())
                    .and_then(|s| s.chars().next());
                ch.map(char::len_utf8)
                    .filter(|&n| rest.get(1 + n) == Some(&b'\''))
                    .map(|n| n + 2)
            };
            let n = end.unwrap_or(1);
            out.extend(std::iter::repeat_n(b' ', n.min(b.len() - i)));
            i += n;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// How many `#` a raw string literal starting here has, if one starts here.
fn raw_string_start(rest: &[u8]) -> Option<usize> {
    let after = rest
        .strip_prefix(b"br")
        .or_else(|| rest.strip_prefix(b"r"))?;
    let hashes = after.iter().take_while(|&&c| c == b'#').count();
    (after.get(hashes) == Some(&b'"')).then_some(hashes)
}

/// The top-level modules a file's code names through `crate::` (grouped imports included),
/// with the line of each.
fn crate_paths(code: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    for (at, _) in code.match_indices("crate::") {
        if at > 0 {
            let before = code.as_bytes()[at - 1];
            if before.is_ascii_alphanumeric() || before == b'_' {
                continue; // `$crate::` or a longer identifier
            }
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        push_head(&item, at, &mut found, line_of);
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            push_head(&item, at, &mut found, line_of);
        } else {
            push_head(rest, at, &mut found, line_of);
        }
    }
    found
}

fn push_head(
    item: &str,
    at: usize,
    found: &mut Vec<(String, usize)>,
    line_of: impl Fn(usize) -> usize,
) {
    let head: String = item
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if !head.is_empty() && head != "self" {
        found.push((head, line_of(at)));
    }
}

/// The functions of a file longer than `most` lines: (name, first line, lines).
fn long_functions(code: &str, most: usize) -> Vec<(String, usize, usize)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue; // `fn(` types
        }
        // The body opens at the first `{` before any `;` (a declaration without a body).
        let Some(open) = code[at..].find(['{', ';']).map(|p| at + p) else {
            continue;
        };
        if bytes[open] != b'{' {
            continue;
        }
        let mut depth = 0usize;
        let mut close = None;
        for (i, &c) in bytes.iter().enumerate().skip(open) {
            if c == b'{' {
                depth += 1;
            } else if c == b'}' {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
        }
        let Some(close) = close else { continue };
        let first = code[..at].matches('\n').count() + 1;
        let lines = code[at..=close].matches('\n').count() + 1;
        if lines > most {
            out.push((name, first, lines));
        }
    }
    out
}

/// The layer of a top-level module, if it has one.
fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every cycle between top-level modules, each as the modules around it.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = stack.iter().position(|n| n == node) {
            found.push(stack[at..].to_vec());
            return;
        }
        if done.contains(node) {
            return;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, stack, done, found);
        }
        stack.pop();
        done.insert(node.to_string());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

/// Every broken rule of a set of files (paths relative to src/, and their text).
fn violations(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, text) in files {
        if !text.starts_with("//!") {
            out.push(format!("src/{rel}: does not open with a `//!` line"));
        }
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            out.push(format!("src/{rel}: {lines} lines, over {MAX_FILE_LINES}"));
        }
        let code = code_only(text);
        for (name, line, n) in long_functions(&code, MAX_FN_LINES) {
            out.push(format!(
                "src/{rel}:{line}: fn {name} is {n} lines, over {MAX_FN_LINES}"
            ));
        }
        if is_binary(rel) || rel == "lib.rs" {
            continue;
        }
        let module = rel.split('/').next().unwrap_or(rel).trim_end_matches(".rs");
        let Some(own) = layer_of(module) else {
            out.push(format!("src/{rel}: module `{module}` is in no layer"));
            continue;
        };
        for (target, line) in crate_paths(&code) {
            if target == module {
                continue;
            }
            graph
                .entry(module.to_string())
                .or_default()
                .insert(target.clone());
            match layer_of(&target) {
                Some(theirs) if theirs < own => {}
                Some(_) => out.push(format!(
                    "src/{rel}:{line}: `{module}` imports `{target}`, which is not below it"
                )),
                None => out.push(format!("src/{rel}:{line}: `{target}` is in no layer")),
            }
        }
    }
    for cycle in cycles(&graph) {
        out.push(format!("modules import each other: {}", cycle.join(" → ")));
    }
    out
}

fn rust_files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// Where the code map (the crate doc of src/lib.rs) falls short of the source: a layer its
/// table gives otherwise than `LAYERS`, a file or module it does not name.
fn map_gaps(files: &[(String, String)]) -> Vec<String> {
    let Some((_, lib)) = files.iter().find(|(rel, _)| rel == "lib.rs") else {
        return vec!["src/lib.rs is missing".into()];
    };
    let doc: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.trim_start()))
        .collect();
    let mut out = Vec::new();
    let rows: Vec<Vec<String>> = doc
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells.len() == 4 && cells[1].parse::<usize>().is_ok()).then(|| {
                cells[2]
                    .split(',')
                    .map(|m| m.trim().trim_matches(|c| "[]`".contains(c)).to_string())
                    .collect()
            })
        })
        .collect();
    let expected: Vec<Vec<String>> = LAYERS
        .iter()
        .map(|l| l.iter().map(|m| m.to_string()).collect())
        .collect();
    if rows != expected {
        out.push(format!(
            "the code map's layer table is {rows:?}, the test's is {expected:?}"
        ));
    }
    for (rel, _) in files {
        if rel.ends_with("tests.rs") || rel == "lib.rs" || rel == "main.rs" {
            continue;
        }
        let named = match rel.strip_suffix("/mod.rs") {
            Some(module) => doc.contains(&format!("`{module}`")),
            None if !rel.contains('/') => {
                doc.contains(&format!("`{}`", rel.trim_end_matches(".rs")))
            }
            None => doc.contains(rel.as_str()),
        };
        if !named {
            out.push(format!("the code map does not name src/{rel}"));
        }
    }
    out
}

#[test]
fn the_code_map_names_every_file_and_gives_the_layers_of_the_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &root, &mut files);
    let gaps = map_gaps(&files);
    assert!(gaps.is_empty(), "{}", gaps.join("\n"));
    // A map that leaves a file out, or gives a layer otherwise, is found.
    let lib = files
        .iter()
        .find(|(rel, _)| rel == "lib.rs")
        .unwrap()
        .1
        .clone();
    let mut unnamed = files.clone();
    unnamed.push(file("lead/unmapped.rs", "//! x\n"));
    assert!(map_gaps(&unnamed)
        .iter()
        .any(|g| g.contains("lead/unmapped.rs")));
    let moved = lib.replacen("| 2 | [`policy`] |", "| 2 | `tools` |", 1);
    assert_ne!(moved, lib, "the map's table has the row this test edits");
    let mut reordered = files.clone();
    reordered.retain(|(rel, _)| rel != "lib.rs");
    reordered.push(("lib.rs".into(), moved));
    assert!(map_gaps(&reordered)
        .iter()
        .any(|g| g.contains("layer table")));
}

#[test]
fn the_source_keeps_the_layers_the_file_rules_and_the_function_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &root, &mut files);
    assert!(files.len() > 50, "src/ read: {} files", files.len());
    let found = violations(&files);
    assert!(
        found.is_empty(),
        "{} broken rules:\n{}",
        found.len(),
        found.join("\n")
    );
}

fn file(rel: &str, text: &str) -> (String, String) {
    (rel.to_string(), text.to_string())
}

#[test]
fn an_upward_import_is_found_in_a_use_a_group_and_a_path() {
    for text in [
        "//! x\nuse crate::lead::LeadState;\n",
        "//! x\nuse crate::{text::one_line, lead::LeadState};\n",
        "//! x\nfn f() { let _ = crate::lead::plan(); }\n",
    ] {
        let found = violations(&[file("policy/gate.rs", text)]);
        assert!(
            found.iter().any(|v| v.contains("`policy` imports `lead`")),
            "{text}: {found:?}"
        );
    }
    // Downward, and inside comments or strings, is no import.
    let fine =
        "//! x\nuse crate::text::one_line; // crate::lead\nconst S: &str = \"crate::lead\";\n";
    assert!(violations(&[file("policy/gate.rs", fine)]).is_empty());
}

#[test]
fn a_cycle_between_modules_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", &["b"][..]),
        ("b", &["c"][..]),
        ("c", &["a"][..]),
        ("d", &["a"][..]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
    .collect();
    let found = cycles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].len(), 3);
    // Two real modules importing each other are reported as a cycle too.
    let files = [
        file(
            "handoff/mod.rs",
            "//! x\nuse crate::checkpoint::Checkpoint;\n",
        ),
        file("checkpoint/mod.rs", "//! x\nuse crate::handoff::Handoff;\n"),
    ];
    let found = violations(&files);
    assert!(
        found
            .iter()
            .any(|v| v.starts_with("modules import each other")),
        "{found:?}"
    );
}

#[test]
fn a_long_file_a_long_function_and_a_file_without_its_doc_line_are_found() {
    let long = format!("//! x\n{}", "const A: u8 = 0;\n".repeat(800));
    assert!(violations(&[file("text/x.rs", &long)])
        .iter()
        .any(|v| v.contains("over 800")));
    let body = format!("//! x\nfn big() {{\n{}}}\n", "    let _ = 1;\n".repeat(119));
    assert!(violations(&[file("text/x.rs", &body)])
        .iter()
        .any(|v| v.contains("fn big is 121 lines")));
    let short = format!(
        "//! x\nfn small() {{\n{}}}\n",
        "    let _ = 1;\n".repeat(118)
    );
    assert!(violations(&[file("text/x.rs", &short)]).is_empty());
    assert!(violations(&[file("text/x.rs", "/// not a module doc\n")])
        .iter()
        .any(|v| v.contains("`//!`")));
}
