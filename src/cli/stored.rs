//! Commands that change a stored run without running it: `baton forget`.

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
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            say!("could not start the runtime: {e}");
            return EXIT_FAILED;
        }
    };
    let coordinator = baton::Coordinator::builder().store(store).build();
    let done = runtime.block_on(coordinator.forget(&args.run, &args.source, &args.reason));
    match done {
        Ok(t) => {
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
        Err(RunError::Store(e)) => store_error(&e),
        Err(e) => {
            say!("{e}");
            if e.is_bad_input() {
                EXIT_USAGE
            } else {
                EXIT_FAILED
            }
        }
    }
}
