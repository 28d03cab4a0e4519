//! `baton runs` and `baton brief RUN`: what the state holds, read from the event log (every
//! read checked against the digest chain).

use std::io::Write;

use baton::checkpoint::{brief as make_brief, project, EventStore, Lineage, StoreError};
use baton::HandoffCounts;
use serde_json::json;

use super::{
    store_error, terminal_line, terminal_safe, StateArg, EXIT_DONE, EXIT_FAILED, EXIT_USAGE,
};

/// A question on one line: line breaks shown as spaces, so a listing stays one line per run.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(clap::Args, Debug)]
pub(crate) struct RunsArgs {
    /// Print one JSON document on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    state: StateArg,
}

#[derive(clap::Args, Debug)]
pub(crate) struct BriefArgs {
    /// The run's id (see `baton runs`).
    run: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    state: StateArg,
}

/// Writes to stdout: JSON as it is (its strings are escaped), text made terminal-safe.
pub(crate) fn write_out(text: &str, json: bool) -> i32 {
    let text = if json {
        baton::model::scrub(text)
    } else {
        terminal_safe(text)
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            say!("{e}");
            EXIT_FAILED
        }
        _ => EXIT_DONE,
    }
}

/// A run's store and its events, as read.
type RunRead = (
    std::sync::Arc<baton::checkpoint::SqliteStore>,
    Vec<baton::checkpoint::LoggedEvent>,
);

/// Opens the state (creating nothing) and reads a run's events (chain checked); on failure,
/// the exit code after a one-line error. A database too damaged to open is reported for the
/// run asked about.
pub(crate) fn run_events(state: &StateArg, run: &str) -> Result<RunRead, i32> {
    let store = state.open_existing().map_err(|e| match e {
        StoreError::Corrupt { .. } => store_error(&StoreError::Damaged {
            run_id: run.to_string(),
            last_intact: 0,
            detail: e.to_string(),
        }),
        e => store_error(&e),
    })?;
    let events = store.events(run).map_err(|e| store_error(&e))?;
    Ok((store, events))
}

/// Opens the state to write to a run that must be in it, its log intact: a damaged state is
/// not written to, even where this run's log still reads whole. The store and the run's
/// events, or the exit code (after one line on stderr).
pub(crate) fn open_for_writing(state: &StateArg, run: &str) -> Result<RunRead, i32> {
    let (read, events) = run_events(state, run)?;
    let damaged = |detail: String| StoreError::Damaged {
        run_id: run.to_string(),
        last_intact: events.last().map_or(0, |e| e.seq),
        detail,
    };
    if let Some(damage) = read.damage() {
        return Err(store_error(&damaged(format!(
            "the state at {} is damaged ({damage}); it is not written to",
            read.path().display()
        ))));
    }
    drop(read);
    match state.open() {
        Ok(s) => Ok((s, events)),
        Err(e @ StoreError::Corrupt { .. }) => Err(store_error(&damaged(e.to_string()))),
        Err(e) => Err(store_error(&e)),
    }
}

/// One listed run: its row, state, handoffs accepted and rejected, tokens, and where it
/// comes from.
type Listed = (
    baton::checkpoint::RunRow,
    String,
    usize,
    usize,
    u64,
    Option<Lineage>,
);

/// The runs as a tree, each with its depth: a fork under the run it forked (when listed), in
/// the order listed otherwise.
fn tree(listed: &[Listed]) -> Vec<(usize, &Listed)> {
    let parent_of = |l: &Listed| match &l.5 {
        Some(Lineage::Fork { parent, .. }) if listed.iter().any(|o| &o.0.run_id == parent) => {
            Some(parent.clone())
        }
        _ => None,
    };
    fn walk<'a>(
        at: &'a Listed,
        depth: usize,
        listed: &'a [Listed],
        parent_of: &dyn Fn(&Listed) -> Option<String>,
        out: &mut Vec<(usize, &'a Listed)>,
    ) {
        if out.iter().any(|(_, l)| l.0.run_id == at.0.run_id) || depth > 64 {
            return;
        }
        out.push((depth, at));
        for child in listed
            .iter()
            .filter(|l| parent_of(l).as_deref() == Some(&at.0.run_id))
        {
            walk(child, depth + 1, listed, parent_of, out);
        }
    }
    let mut out = Vec::new();
    for root in listed.iter().filter(|l| parent_of(l).is_none()) {
        walk(root, 0, listed, &parent_of, &mut out);
    }
    // A log claiming a parent that claims it back is still listed, once.
    for rest in listed {
        walk(rest, 0, listed, &parent_of, &mut out);
    }
    out
}

pub(crate) fn list(args: RunsArgs) -> i32 {
    let store = match args.state.open_existing() {
        Ok(s) => s,
        Err(e) => return store_error(&e),
    };
    let rows = match store.runs() {
        Ok(rows) => rows,
        Err(e) => return store_error(&e),
    };
    let mut listed = Vec::new();
    let mut damaged = None;
    for mut row in rows {
        let mut branch = None;
        let (state, accepted, rejected, tokens) = match store.events(&row.run_id) {
            Ok(events) => {
                branch = baton::checkpoint::lineage(&events);
                let cp = project(&row.run_id, &events);
                // A fork on its own question is listed with it.
                row.question = cp.goal.clone();
                let states: Vec<_> = cp.plans.iter().filter_map(|p| p.outcome).collect();
                let counts = HandoffCounts::of(&states);
                let state = match cp.finished {
                    Some(false) => "finished".to_string(),
                    Some(true) => "cancelled".to_string(),
                    None => "interrupted".to_string(),
                };
                (
                    state,
                    counts.accepted + counts.repaired + counts.partly_accepted,
                    counts.rejected,
                    cp.budgets.total.tokens(),
                )
            }
            Err(e @ StoreError::Damaged { last_intact, .. }) => {
                damaged.get_or_insert(e);
                (format!("damaged after seq {last_intact}"), 0, 0, 0)
            }
            Err(e) => return store_error(&e),
        };
        listed.push((row, state, accepted, rejected, tokens, branch));
    }
    let text = if args.json {
        let runs: Vec<_> = listed
            .iter()
            .map(|(row, state, accepted, rejected, tokens, branch)| {
                json!({
                    "run_id": row.run_id, "question": row.question, "root": row.root,
                    "state": state, "started_ms": row.started_ms, "events": row.last_seq,
                    "handoffs_accepted": accepted, "handoffs_rejected": rejected, "tokens": tokens,
                    "branch": branch,
                })
            })
            .collect();
        format!("{}\n", json!({ "runs": runs }))
    } else if listed.is_empty() {
        format!(
            "no runs in {}\n",
            terminal_safe(&args.state.state.display().to_string())
        )
    } else {
        let mut text = String::new();
        for (depth, (row, state, accepted, rejected, tokens, branch)) in tree(&listed) {
            let from = match branch {
                Some(Lineage::Fork { parent, at_seq }) => {
                    format!("  (fork of {} at {at_seq})", terminal_line(parent))
                }
                Some(Lineage::Merge { branches }) => {
                    format!("  (merge of {})", terminal_line(&branches.join(" and ")))
                }
                None => String::new(),
            };
            text.push_str(&format!(
                "{}{}  {:<12} accepted {} rejected {}  {} tokens  {}  {}{from}\n",
                if depth == 0 {
                    String::new()
                } else {
                    format!("{}└ ", "  ".repeat(depth - 1))
                },
                terminal_line(&row.run_id),
                state,
                accepted,
                rejected,
                tokens,
                terminal_line(&row.root),
                terminal_line(&one_line(&row.question))
            ));
        }
        text
    };
    let written = write_out(&text, args.json);
    // A run whose log does not verify damages the state: listed, then named (exit 1).
    if let Some(e) = damaged {
        return store_error(&e);
    }
    // What still reads was listed; a damaged file may have lost runs from the list.
    if let Some(damage) = store.damage() {
        return store_error(&StoreError::Corrupt {
            path: store.path().display().to_string(),
            detail: format!("{damage}; runs may be missing from this list"),
        });
    }
    written
}

/// A research run's cited passages whose documents read differently now are marked stale in
/// its brief (found by reading the documents; nothing is written).
fn stale_passages(cp: &baton::Checkpoint, brief: &mut baton::checkpoint::Brief) {
    if cp.root.is_empty() {
        return;
    }
    let root = std::path::Path::new(&cp.root);
    for (entry, item) in cp.evidence.iter().zip(brief.evidence.iter_mut()) {
        let Ok(baton::SourceId::Doc { id, span }) = baton::SourceId::parse(&entry.source) else {
            continue;
        };
        if entry.stale.is_some() || entry.digest.is_empty() {
            continue;
        }
        let now = baton::Corpus::passage_digest(root, &id, span.as_deref());
        if now.as_deref() != Some(entry.digest.as_str()) {
            item.text = format!(
                "{} (stale: the passage reads differently in the corpus now; `baton resume` rechecks it)",
                entry.source
            );
        }
    }
}

pub(crate) fn brief(args: BriefArgs) -> i32 {
    let (_, events) = match run_events(&args.state, &args.run) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let cp = project(&args.run, &events);
    if let Err(e) = cp.check() {
        say!("{e}");
        return EXIT_FAILED;
    }
    let mut brief = make_brief(&cp);
    stale_passages(&cp, &mut brief);
    let text = if args.json {
        format!("{}\n", json!({ "brief": brief, "checkpoint": cp }))
    } else {
        brief.render()
    };
    write_out(&text, args.json)
}

/// `baton audit RUN`: the run's fidelity, each figure apart with the events it rests on.
pub(crate) fn audit(args: BriefArgs) -> i32 {
    let (store, events) = match run_events(&args.state, &args.run) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let stored = match store.checkpoints(&args.run) {
        Ok(list) => list,
        Err(e) => return store_error(&e),
    };
    let audit = baton::checkpoint::audit(&args.run, &events, &stored);
    let text = if args.json {
        format!("{}\n", json!({ "audit": audit }))
    } else {
        audit.render()
    };
    write_out(&text, args.json)
}

#[derive(clap::Args, Debug)]
pub(crate) struct ContextArgs {
    /// The run's id (see `baton runs`).
    run: String,
    /// The role to compile for (explorer, researcher, verifier, lead, or one of --roles).
    #[arg(long)]
    role: String,
    /// Token budget (default: the role's), at most 10,000,000.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000_000))]
    budget: Option<usize>,
    /// Extra role profiles (`*.toml`).
    #[arg(long)]
    roles: Option<std::path::PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    state: StateArg,
}

/// Exit code: the role's mandatory fields do not fit the budget.
const EXIT_FLOOR: i32 = 3;

pub(crate) fn context(args: ContextArgs) -> i32 {
    use baton::context::{compile, load_roles};

    use baton::tokens::Bpe;
    let roles = match load_roles(args.roles.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    let Some(role) = roles.get(args.role.as_str()) else {
        let known: Vec<&str> = roles.keys().map(|r| r.as_str()).collect();
        say!("no role `{}` (roles: {})", args.role, known.join(", "));
        return EXIT_USAGE;
    };
    let (store, events) = match run_events(&args.state, &args.run) {
        Ok(found) => found,
        Err(code) => return code,
    };
    // The latest checkpoint, and the events after it as the delta.
    let checkpoint = match store.latest_checkpoint(&args.run) {
        Ok(Some(cp)) => cp,
        _ => project(&args.run, &events),
    };
    let delta = baton::checkpoint::delta(&checkpoint, &events);
    let checkpoint = baton::checkpoint::with_withdrawals(checkpoint, &delta);
    let budget = args.budget.unwrap_or(role.budget);
    match compile(&checkpoint, Some(&delta), role, budget, &Bpe) {
        Ok(compiled) => {
            let text = if args.json {
                format!("{}\n", json!({ "context": compiled }))
            } else {
                compiled.render()
            };
            write_out(&text, args.json)
        }
        Err(floor) => {
            if args.json {
                let _ = write_out(&format!("{}\n", json!({ "floor_error": floor })), true);
            }
            say!("{floor}");
            EXIT_FLOOR
        }
    }
}
