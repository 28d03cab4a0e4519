//! Embedding baton: start a run on this repository, print each event of its log as a line as
//! the run goes, then print the report. Offline: the default model is the deterministic local
//! explorer, so no key and no network are needed.
//!
//!     cargo run --example embed [-- ROOT [QUESTION]]
//!
//! Each event line is `SEQ KIND [SUBAGENT]`: the stream is the run's log, replayed from its
//! first event and followed live, each event once and in order.

use baton::{Coordinator, Task};

#[baton::tokio::main(crate = "baton::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = args.next().unwrap_or_else(|| ".".into());
    let question = args
        .next()
        .unwrap_or_else(|| "where is a handoff's quotation checked?".into());

    let coordinator = Coordinator::builder().agents(4).build();
    let handle = coordinator.start(Task::explore(question, root)).await?;
    println!("run {}", handle.run_id());

    // The run's events: every event of its log, as the log holds it.
    let mut events = handle.events();
    while let Some(event) = events.next().await {
        let event = event?;
        let subagent = event.event.subagent().unwrap_or("");
        println!("{:>4} {} {subagent}", event.seq, event.event.kind());
    }

    let report = handle.report().await?;
    print!("{}", report.handoff.to_markdown());
    println!("{}", report.summary_line());
    Ok(())
}
