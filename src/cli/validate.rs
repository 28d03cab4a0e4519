//! `baton validate FILE [--root DIR] [--json]`: checks a handoff file (markdown or JSON,
//! detected) against a workspace — structure, resolution and quotation; there is no
//! observation log outside a run. Exit 0 valid, 1 invalid, 2 unusable input.

use std::io::Write;
use std::path::PathBuf;

use baton::{validate, Check, Form, Workspace, WorkspaceFiles, MAX_HANDOFF_BYTES};
use serde_json::json;

use super::{EXIT_DONE, EXIT_FAILED, EXIT_USAGE};

#[derive(clap::Args, Debug)]
pub(crate) struct ValidateArgs {
    /// The handoff file (markdown or JSON form).
    file: PathBuf,
    /// The workspace the handoff's sources are relative to.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: ValidateArgs) -> i32 {
    let text = match super::read_input(&args.file, MAX_HANDOFF_BYTES, "a handoff") {
        Ok(t) => t,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    let workspace = match Workspace::open(&args.root) {
        Ok(w) => w,
        Err(e) => {
            say!("--root {}: {e}", args.root.display());
            return EXIT_USAGE;
        }
    };
    let files = WorkspaceFiles::new(workspace);
    // No corpus is given here: every `doc:` citation is unknown.
    let no_corpus = std::collections::HashSet::new();
    let check = Check {
        files: Some(&files),
        observations: None,
        docs: Some(&no_corpus),
    };
    let parsed = validate(&text, &check);
    let shown = args.file.display().to_string();
    if parsed.is_neither_form() {
        say!("{shown}: neither form of a handoff (no section headings, not JSON)");
        return EXIT_USAGE;
    }
    let valid = parsed.violations.is_empty();
    let form = match parsed.form {
        Form::Markdown => "markdown",
        Form::Json => "json",
    };
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        let doc = json!({
            "file": shown,
            "form": form,
            "valid": valid,
            "violations": parsed.violations,
            "handoff": parsed.handoff,
        });
        writeln!(out, "{doc}")
    } else {
        let mut text = String::new();
        for v in &parsed.violations {
            if v.line > 0 {
                text.push_str(&format!("{shown}:{}: [{}] {}\n", v.line, v.code, v.message));
            } else {
                text.push_str(&format!("{shown}: [{}] {}\n", v.code, v.message));
            }
        }
        let h = &parsed.handoff;
        if valid {
            text.push_str(&format!(
                "{shown}: valid ({form} form): {} settled conclusion(s), {} open item(s), {} hard constraint(s)\n",
                h.settled_conclusions.len(),
                h.open_items.len(),
                h.hard_constraints.len()
            ));
        } else {
            text.push_str(&format!(
                "{shown}: invalid ({form} form): {} violation(s)\n",
                parsed.violations.len()
            ));
        }
        out.write_all(super::terminal_safe(&text).as_bytes())
    };
    if let Err(e) = written.and_then(|_| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            say!("{e}");
            return EXIT_FAILED;
        }
    }
    if valid {
        EXIT_DONE
    } else {
        EXIT_FAILED
    }
}
