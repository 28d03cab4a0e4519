//! Commands that change stored runs without running them: `baton forget`, `baton fork`,
//! `baton merge`.

use super::runs::open_for_writing;
use super::{store_error, terminal_line, StateArg, EXIT_FAILED, EXIT_USAGE};
use baton::RunError;

#[derive(clap::Args, Debug)]
pub(crate) struct ForgetArgs {
    /// The run's id (see `baton runs`).
    run: String,
    /// The source to withdraw, as conclusions cite it: `src/a.rs:3-9`, `src/a.rs` (every range
    /// of it), a document, a URL, `call:ID`, a record.
    source: String,
    /// Why it is withdrawn (kept in its tombstone).
    #[arg(long)]
    reason: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    state: StateArg,
}

/// `baton forget RUN SOURCE --reason TEXT`: the source's tombstone logged; one line (or the
/// tombstone as JSON) on stdout.
pub(crate) fn forget(args: ForgetArgs) -> i32 {
    let (store, _) = match open_for_writing(&args.state, &args.run) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let coordinator = baton::Coordinator::builder().store(store).build();
    let done = match block_on(coordinator.forget(&args.run, &args.source, &args.reason)) {
        Ok(done) => done,
        Err(code) => return code,
    };
    match done {
        Ok(t) => {
            // A report kept for the run holds the withdrawn text: it goes (a resume makes a
            // new one).
            if let Err(e) = baton::server::drop_report(&args.state.state, &args.run) {
                say!("{e}");
                return EXIT_FAILED;
            }
            let text = if args.json {
                format!("{}\n", serde_json::json!({ "tombstone": t }))
            } else {
                format!(
                    "{} — {} conclusion(s) of {} decision(s) withdrawn from {}\n",
                    terminal_line(&baton::checkpoint::unavailable(&t)),
                    t.conclusions,
                    t.decisions.len(),
                    args.run
                )
            };
            super::runs::write_out(&text, args.json)
        }
        Err(e) => run_error(e),
    }
}

/// Runs `work` on a runtime of its own: its output, or the exit code when none could start.
/// The provider keys the environment holds are registered first, so a key typed into a
/// question or a reason is never logged.
fn block_on<T>(work: impl std::future::Future<Output = T>) -> Result<T, i32> {
    for var in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "BATON_TOKEN"] {
        if let Ok(key) = std::env::var(var) {
            let _ = baton::model::ApiKey::new(key);
        }
    }
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => Ok(runtime.block_on(work)),
        Err(e) => {
            say!("could not start the runtime: {e}");
            Err(EXIT_FAILED)
        }
    }
}

/// The exit code of a refused or failed operation, after one line on stderr.
fn run_error(e: RunError) -> i32 {
    match e {
        RunError::Store(e) => store_error(&e),
        e => {
            say!("{e}");
            if e.is_bad_input() {
                EXIT_USAGE
            } else {
                EXIT_FAILED
            }
        }
    }
}

#[derive(clap::Args, Debug)]
pub(crate) struct ForkArgs {
    /// The run to fork (see `baton runs`).
    run: String,
    /// The last of its events the fork shares.
    #[arg(long)]
    at: u64,
    /// The question the fork pursues instead of its parent's (`baton resume` continues it).
    #[arg(long)]
    question: Option<String>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    state: StateArg,
}

/// `baton fork RUN --at SEQ [--question Q]`: a new run sharing the log up to SEQ; its id.
pub(crate) fn fork(args: ForkArgs) -> i32 {
    let (store, _) = match open_for_writing(&args.state, &args.run) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let coordinator = baton::Coordinator::builder().store(store).build();
    let done = match block_on(coordinator.fork(&args.run, args.at, args.question.as_deref())) {
        Ok(done) => done,
        Err(code) => return code,
    };
    match done {
        Ok(id) => {
            let text = if args.json {
                format!(
                    "{}\n",
                    serde_json::json!({ "run_id": id, "parent": args.run, "at_seq": args.at })
                )
            } else {
                format!(
                    "{id}: a fork of {} at event {} (`baton resume {id}` continues it)\n",
                    args.run, args.at
                )
            };
            super::runs::write_out(&text, args.json)
        }
        Err(e) => run_error(e),
    }
}

#[derive(clap::Args, Debug)]
pub(crate) struct MergeArgs {
    /// One branch (see `baton runs`).
    run_a: String,
    /// The other.
    run_b: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    state: StateArg,
}

/// `baton merge RUN_A RUN_B`: a new run from both branches' semantic states; its id and the
/// conflicts, each an open item of it.
pub(crate) fn merge(args: MergeArgs) -> i32 {
    if let Err(code) = super::runs::run_events(&args.state, &args.run_b) {
        return code;
    }
    let (store, _) = match open_for_writing(&args.state, &args.run_a) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let coordinator = baton::Coordinator::builder().store(store).build();
    let done = match block_on(coordinator.merge(&args.run_a, &args.run_b)) {
        Ok(done) => done,
        Err(code) => return code,
    };
    match done {
        Ok(merged) => {
            let text = if args.json {
                format!("{}\n", serde_json::json!({ "merge": merged }))
            } else {
                let mut text = format!(
                    "{}: a merge of {} and {}, {} conflict(s), each an open item (`baton brief {}`)\n",
                    merged.run_id,
                    args.run_a,
                    args.run_b,
                    merged.conflicts.len(),
                    merged.run_id
                );
                for c in &merged.conflicts {
                    text.push_str(&format!("- {}\n", terminal_line(c)));
                }
                text
            };
            super::runs::write_out(&text, args.json)
        }
        Err(e) => run_error(e),
    }
}
