//! The four read-only workspace tools — list_dir, glob, grep, read_file — with output caps.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::walk::{walk_files, walker, WalkLog};
use super::{ToolError, ToolOutput, Workspace, WorkspaceTool};
use crate::policy::{Consequence, Effect};
use crate::source::{prose_list, quote_path, search_label, Observation, SearchKind};
use crate::transcript::ToolSpec;

/// Most matches grep prints; the rest are counted and a note says so.
const GREP_DEFAULT_MATCHES: usize = 200;
const GREP_MAX_MATCHES: usize = 2000;
/// Longest line text grep prints.
const GREP_LINE_CHARS: usize = 240;
/// Most lines one read_file call returns.
const READ_MAX_LINES: usize = 400;
const READ_DEFAULT_LINES: usize = 200;
/// Longest line read_file prints whole; a longer one is cut and recorded as shown in part.
const READ_LINE_CHARS: usize = 2000;
/// Most bytes of lines one read_file call prints.
const READ_MAX_BYTES: usize = 100_000;
/// Most entries list_dir and glob print.
const LIST_MAX_ENTRIES: usize = 500;

fn string_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::invalid(format!("missing string argument `{name}`")))
}

fn optional_usize(args: &Value, name: &str) -> Result<Option<usize>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(|n| Some(n.min(u32::MAX as u64) as usize))
            .ok_or_else(|| ToolError::invalid(format!("`{name}` must be a whole number"))),
    }
}

/// `paths` (array) or `path` (string); the root when neither is given.
fn scope_args(args: &Value) -> Result<Vec<String>, ToolError> {
    if let Some(list) = args.get("paths").filter(|v| !v.is_null()) {
        let items = list
            .as_array()
            .ok_or_else(|| ToolError::invalid("`paths` must be an array of strings"))?;
        let mut out = Vec::new();
        for item in items {
            let s = item
                .as_str()
                .ok_or_else(|| ToolError::invalid("`paths` must be an array of strings"))?;
            out.push(s.to_string());
        }
        if !out.is_empty() {
            return Ok(out);
        }
    }
    match args.get("path").and_then(Value::as_str) {
        Some(p) => Ok(vec![p.to_string()]),
        None => Ok(vec![".".to_string()]),
    }
}

/// The directory every path a glob matches lies in: its leading parts without a wildcard
/// (root-relative, normal form); `None` when it has none, or matches names at any depth.
fn glob_literal_dir(pattern: &str) -> Option<String> {
    let parts: Vec<&str> = pattern.split('/').collect();
    let (_, dirs) = parts.split_last()?;
    let literal: Vec<&str> = dirs
        .iter()
        .copied()
        .filter(|p| !p.is_empty() && *p != ".")
        .take_while(|p| *p != ".." && !p.contains(['*', '?', '[', '{', '\\']))
        .collect();
    (!literal.is_empty()).then(|| literal.join("/"))
}

pub(super) struct ListDir;

impl WorkspaceTool for ListDir {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_dir".into(),
            description: "List the entries of a directory in the workspace (directories end \
                          with `/`, files show their size in bytes). Ignored and hidden \
                          entries are left out."
                .into(),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "directory relative to the root; default `.`"}
            }}),
        }
    }

    fn consequences(&self, args: &Value) -> Vec<Consequence> {
        let rel = args.get("path").and_then(Value::as_str).unwrap_or(".");
        vec![Consequence::on_path(Effect::List, rel)]
    }

    fn call(&self, ws: &Workspace, call_id: &str, args: &Value) -> Result<ToolOutput, ToolError> {
        let rel = args.get("path").and_then(Value::as_str).unwrap_or(".");
        let dir = ws.resolve_argument(rel)?;
        if !dir.is_dir() {
            return Err(ToolError::invalid(format!("`{rel}` is not a directory")));
        }
        // The gate judged the place as written; one reached through a link is judged again
        // where it really lies.
        if crate::policy::normal_path(rel).as_deref() != Some(ws.relative(&dir).as_str()) {
            ws.may_list(&dir)?;
        }
        let log = Arc::new(Mutex::new(WalkLog::default()));
        let mut lines = Vec::new();
        let mut total = 0usize;
        let mut shown_any = std::collections::HashSet::new();
        for entry in walker(ws, &dir, Some(1), Arc::clone(&log))?
            .flatten()
            .filter(|e| e.depth() == 1 && ws.citable(e.path()))
        {
            shown_any.insert(entry.path().to_path_buf());
            total += 1;
            if lines.len() >= LIST_MAX_ENTRIES {
                continue;
            }
            let shown = ws.relative(entry.path());
            match entry.file_type() {
                Some(t) if t.is_dir() => lines.push(quote_path(&format!("{shown}/")).into_owned()),
                Some(t) if t.is_symlink() => {
                    lines.push(format!("{} -> (link)", quote_path(&shown)))
                }
                _ => {
                    let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                    lines.push(format!("{} ({size} bytes)", quote_path(&shown)));
                }
            }
        }
        // Every other entry was left out: hidden, ignored, or a name no citation could write
        // — or forbidden by a constraint.
        let forbidden = log.lock().map_or(0, |l| l.forbidden.len());
        let left_out = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| !shown_any.contains(&e.path()))
            .count()
            .saturating_sub(forbidden);
        let mut content = lines.join("\n");
        if total > lines.len() {
            let _ = write!(
                content,
                "\n[{} more entries not shown]",
                total - lines.len()
            );
        }
        let mut notes = Vec::new();
        if left_out > 0 {
            notes.push(format!("{left_out} hidden or ignored entries not listed"));
        }
        if forbidden > 0 {
            notes.push(format!(
                "{forbidden} entries a constraint forbids not listed"
            ));
        }
        if total == 0 {
            content = if notes.is_empty() {
                format!("`{}` is empty", ws.relative(&dir))
            } else {
                format!("`{}` has no entry to list", ws.relative(&dir))
            };
        }
        if !notes.is_empty() {
            let _ = write!(content, "\n[{}]", notes.join("; "));
        }
        Ok(ToolOutput {
            content,
            observations: vec![Observation::Listed {
                call_id: call_id.to_string(),
                path: ws.relative(&dir),
            }],
        })
    }
}

pub(super) struct Glob;

impl WorkspaceTool for Glob {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "glob".into(),
            description: "Find files whose root-relative path matches a glob such as \
                          `src/**/*.rs`. Ignored and hidden files are left out."
                .into(),
            parameters: json!({"type": "object", "required": ["pattern"], "properties": {
                "pattern": {"type": "string"},
                "paths": {"type": "array", "items": {"type": "string"}, "description": "where to look; default the root"}
            }}),
        }
    }

    /// A search of each scope — narrowed to the pattern's literal leading directories, which
    /// every path it matches starts with.
    fn consequences(&self, args: &Value) -> Vec<Consequence> {
        let (Ok(pattern), Ok(scopes)) = (string_arg(args, "pattern"), scope_args(args)) else {
            return Vec::new();
        };
        let literal = glob_literal_dir(pattern);
        scopes
            .iter()
            .map(|scope| {
                let scope = crate::policy::normal_path(scope);
                match (scope, &literal) {
                    (Some(s), Some(l)) if l.starts_with(&format!("{s}/")) || s == "." => {
                        Consequence::on_path(Effect::Search, l)
                    }
                    (Some(s), _) => Consequence::on_path(Effect::Search, &s),
                    (None, _) => Consequence::on_path(Effect::Search, "/"),
                }
            })
            .collect()
    }

    fn call(&self, ws: &Workspace, call_id: &str, args: &Value) -> Result<ToolOutput, ToolError> {
        let pattern = string_arg(args, "pattern")?;
        // Paths are root-relative: a pattern from `/` or through `..` could match no file of
        // the tree, and its empty answer would read as an absence.
        if pattern.starts_with('/') || pattern.split('/').any(|part| part == "..") {
            return Err(ToolError::invalid(format!(
                "the glob `{pattern}` leaves the root: patterns are relative to it (`src/**/*.rs`)"
            )));
        }
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(false)
            .build()
            .map_err(|e| ToolError::invalid(format!("bad glob `{pattern}`: {e}")))?
            .compile_matcher();
        let scopes = scope_args(args)?;
        let mut found = Vec::new();
        let mut total = 0usize;
        let walked = walk_files(ws, &scopes)?;
        for (_, rel) in &walked.files {
            let rel = rel.as_str();
            let name = rel.rsplit('/').next().unwrap_or(rel);
            if matcher.is_match(rel) || (!pattern.contains('/') && matcher.is_match(name)) {
                total += 1;
                if found.len() < LIST_MAX_ENTRIES {
                    found.push(quote_path(rel).into_owned());
                }
            }
        }
        let mut content = if found.is_empty() {
            format!(
                "no files match `{pattern}` in {} ({} files{})",
                prose_list(&walked.scopes),
                walked.files.len(),
                not_searched_note(&walked.not_searched)
            )
        } else {
            found.join("\n")
        };
        if total > found.len() {
            let _ = write!(content, "\n[{} more files not shown]", total - found.len());
        }
        Ok(ToolOutput {
            content,
            observations: vec![Observation::Searched {
                call_id: call_id.to_string(),
                pattern: SearchKind::FileNames.stored(pattern),
                scope: walked.scopes,
                matches: total,
                files_searched: walked.files.len(),
                files_skipped: walked.dirs_left_out.len(),
                case_insensitive: false,
                fixed_string: true,
                not_searched: walked.not_searched.len(),
                not_searched_names: named(walked.not_searched),
            }],
        })
    }
}

pub(super) struct Grep;

impl WorkspaceTool for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: "Search file contents with a regular expression (Rust regex syntax). \
                          Prints `path:line:text` per matching line, or with \
                          `output: \"count\"` one `path:count` line per file; a path holding \
                          spaces or `:,[]` is printed quoted (`\"a b.rs\":3:text`). Lines are \
                          shown up to 240 characters. Ignored, hidden and binary files are \
                          skipped; output is capped and says so."
                .into(),
            parameters: json!({"type": "object", "required": ["pattern"], "properties": {
                "pattern": {"type": "string"},
                "paths": {"type": "array", "items": {"type": "string"}, "description": "files or directories; default the root"},
                "case_insensitive": {"type": "boolean", "default": false},
                "fixed_string": {"type": "boolean", "default": false, "description": "search for the pattern as literal text, not a regex"},
                "output": {"type": "string", "enum": ["content", "count"], "default": "content"},
                "max_matches": {"type": "integer", "default": GREP_DEFAULT_MATCHES, "maximum": GREP_MAX_MATCHES}
            }}),
        }
    }

    fn consequences(&self, args: &Value) -> Vec<Consequence> {
        scope_args(args)
            .unwrap_or_default()
            .iter()
            .map(|scope| Consequence::on_path(Effect::Search, scope))
            .collect()
    }

    fn call(&self, ws: &Workspace, call_id: &str, args: &Value) -> Result<ToolOutput, ToolError> {
        let pattern = string_arg(args, "pattern")?;
        let insensitive = args
            .get("case_insensitive")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let fixed = args
            .get("fixed_string")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let count_only = args.get("output").and_then(Value::as_str) == Some("count");
        let cap = optional_usize(args, "max_matches")?
            .unwrap_or(GREP_DEFAULT_MATCHES)
            .clamp(1, GREP_MAX_MATCHES);
        let searched_for = if fixed {
            regex::escape(pattern)
        } else {
            pattern.to_string()
        };
        let label = search_label(pattern, insensitive, fixed);
        let regex = regex::RegexBuilder::new(&searched_for)
            .case_insensitive(insensitive)
            .size_limit(1 << 22)
            .build()
            .map_err(|e| {
                let first = e
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                ToolError::invalid(format!("bad regex {label}: {first}"))
            })?;
        let scopes = scope_args(args)?;
        let walked = walk_files(ws, &scopes)?;
        let (files, scopes, not_searched) = (walked.files, walked.scopes, walked.not_searched);
        let mut lines = Vec::new();
        let mut observations = Vec::new();
        let mut total = 0usize;
        let mut files_searched = 0usize;
        // A directory left out counts as at least one file not searched.
        let mut files_skipped = walked.dirs_left_out.len();
        let mut files_matched = 0usize;
        for (path, rel) in &files {
            let Ok(text) = super::read_text_file(path, rel) else {
                files_skipped += 1;
                continue;
            };
            let written = quote_path(rel);
            files_searched += 1;
            let mut in_file = 0usize;
            for (index, line) in text.lines().enumerate() {
                if !regex.is_match(line) {
                    continue;
                }
                in_file += 1;
                total += 1;
                if count_only || total > cap {
                    continue;
                }
                let number = index + 1;
                let trimmed = line.trim_end();
                let (shown, cut) = cut_chars(trimmed, GREP_LINE_CHARS);
                lines.push(format!("{written}:{number}:{shown}"));
                let part = cut.map(|_| GREP_LINE_CHARS);
                observations.push(line_observation(call_id, rel, number, part));
            }
            if in_file > 0 {
                files_matched += 1;
                if count_only {
                    lines.push(format!("{written}:{in_file}"));
                }
            }
        }
        let mut content = lines.join("\n");
        if total == 0 {
            content = format!(
                "no matches for {label} in {} ({files_searched} files searched{}{})",
                prose_list(&scopes),
                skipped_note(files_skipped),
                not_searched_note(&not_searched)
            );
        } else if count_only {
            let _ = write!(
                content,
                "\n[{total} matching lines in {files_matched} files; {files_searched} files searched{}{}]",
                skipped_note(files_skipped),
                not_searched_note(&not_searched)
            );
        } else if total > cap {
            let _ = write!(
                content,
                "\n[output capped: {cap} of {total} matching lines shown ({files_matched} files); narrow the pattern or the paths]"
            );
        }
        observations.push(Observation::Searched {
            call_id: call_id.to_string(),
            pattern: pattern.to_string(),
            scope: scopes,
            matches: total,
            files_searched,
            files_skipped,
            case_insensitive: insensitive,
            fixed_string: fixed,
            not_searched: not_searched.len(),
            not_searched_names: named(not_searched),
        });
        Ok(ToolOutput {
            content,
            observations,
        })
    }
}

pub(super) struct ReadFile;

impl WorkspaceTool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: "Read lines of a text file, numbered (`   12\\ttext`). At most 400 \
                          lines and 100,000 bytes per call, lines cut at 2,000 characters; \
                          give start_line/end_line for the rest."
                .into(),
            parameters: json!({"type": "object", "required": ["path"], "properties": {
                "path": {"type": "string"},
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1}
            }}),
        }
    }

    fn consequences(&self, args: &Value) -> Vec<Consequence> {
        string_arg(args, "path")
            .map(|rel| vec![Consequence::on_path(Effect::Read, rel)])
            .unwrap_or_default()
    }

    fn call(&self, ws: &Workspace, call_id: &str, args: &Value) -> Result<ToolOutput, ToolError> {
        let rel = string_arg(args, "path")?;
        let (path, text) = ws.read_text(rel)?;
        let shown_path = ws.relative(&path);
        let all: Vec<&str> = text.lines().collect();
        let total = all.len();
        let start = optional_usize(args, "start_line")?.unwrap_or(1).max(1);
        if total == 0 {
            return Ok(ToolOutput {
                content: format!("{}: empty file", quote_path(&shown_path)),
                observations: Vec::new(),
            });
        }
        if start > total {
            return Err(ToolError::invalid(format!(
                "`{shown_path}` has {total} lines; start_line {start} is past the end"
            )));
        }
        let wanted_end = optional_usize(args, "end_line")?
            .unwrap_or(start + READ_DEFAULT_LINES - 1)
            .max(start);
        let last = wanted_end.min(total).min(start + READ_MAX_LINES - 1);
        let mut body = String::new();
        let mut observations: Vec<Observation> = Vec::new();
        let mut end = start - 1;
        for (offset, line) in all[start - 1..last].iter().enumerate() {
            let number = start + offset;
            let (shown, cut) = cut_chars(line, READ_LINE_CHARS);
            if number > start && body.len() + shown.len() > READ_MAX_BYTES {
                break;
            }
            let _ = write!(body, "{number:>6}\t{shown}");
            if let Some(left) = cut {
                let _ = write!(body, " [line cut: {left} more characters]");
            }
            body.push('\n');
            end = number;
            match (observations.last_mut(), cut) {
                (Some(Observation::Lines { end: e, .. }), None) if *e as usize + 1 == number => {
                    *e = number as u32;
                }
                _ => {
                    let part = cut.map(|_| READ_LINE_CHARS);
                    observations.push(line_observation(call_id, &shown_path, number, part));
                }
            }
        }
        let mut content = format!(
            "{} (lines {start}-{end} of {total})\n{body}",
            quote_path(&shown_path)
        );
        if end < wanted_end.min(total) {
            let why = if end < last {
                "the output cap"
            } else {
                "the line cap"
            };
            let _ = writeln!(
                content,
                "[stopped at line {end} ({why}): read the rest from line {} in another call]",
                end + 1
            );
        }
        Ok(ToolOutput {
            content,
            observations,
        })
    }
}

/// What a search says of the entries it did not search: hidden, ignored, links.
fn not_searched_note(entries: &[String]) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let mut names: Vec<String> = entries
        .iter()
        .take(5)
        .map(|e| quote_path(e).into_owned())
        .collect();
    if entries.len() > names.len() {
        names.push(format!("{} more", entries.len() - names.len()));
    }
    format!(
        "; not searched: {} hidden or ignored entries or links ({})",
        entries.len(),
        names.join(", ")
    )
}

/// The first entries not searched, as an observation names them.
fn named(mut entries: Vec<String>) -> Vec<String> {
    entries.truncate(crate::source::NOT_SEARCHED_NAMED);
    entries
}

/// What a search says of the files it could not search.
fn skipped_note(skipped: usize) -> String {
    if skipped == 0 {
        String::new()
    } else {
        format!("; {skipped} files could not be searched (binary, over 4 MiB, unreadable, or in a directory whose ignore file could not be read)")
    }
}

/// The first `limit` characters of `line`, and how many more there were when it was cut.
fn cut_chars(line: &str, limit: usize) -> (&str, Option<usize>) {
    match line.char_indices().nth(limit) {
        Some((at, _)) => (&line[..at], Some(line[at..].chars().count())),
        None => (line, None),
    }
}

/// What showing one line records: the line, or only its first `part` characters when it was
/// cut.
fn line_observation(call_id: &str, path: &str, number: usize, part: Option<usize>) -> Observation {
    match part {
        None => Observation::Lines {
            call_id: call_id.to_string(),
            path: path.to_string(),
            start: number as u32,
            end: number as u32,
        },
        Some(chars) => Observation::LinePart {
            call_id: call_id.to_string(),
            path: path.to_string(),
            line: number as u32,
            chars: chars as u32,
        },
    }
}
