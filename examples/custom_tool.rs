//! A tool of one's own: an in-memory ticket store the subagents call. What it returns is
//! recorded as `ticket:ID` records with their text, so a handoff citing a ticket is checked
//! like a citation of a file's lines — the ticket must have been returned to that subagent,
//! and its backticked quotes must be in the ticket's text. A fabricated ticket id is rejected
//! by the contract (`record_not_observed`) and the subagent repairs its handoff.
//!
//!     cargo run --example custom_tool
//!
//! The job has no workspace: a `triager` role with the ticket tool answers it. The models are
//! scripted (offline), as a test's would be; the second-wave verifier — the run's own
//! `verifier` role, given the ticket tool — rereads the ticket the repaired handoff cites.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton::testing::{ScriptedModel, ScriptedTurn};
use baton::{
    async_trait, json, Coordinator, Field, Observation, Role, RunEvent, Task, Tool, ToolContext,
    ToolError, ToolOutput, ToolRegistry, ToolSpec, Value,
};

/// The application's ticket store, read-only to the subagents.
struct Tickets(BTreeMap<&'static str, &'static str>);

#[async_trait]
impl Tool for Tickets {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "ticket".into(),
            description: "The ticket of an id (T-1, T-2, T-3): status, labels and title.".into(),
            parameters: json!({"type": "object", "required": ["id"],
                               "properties": {"id": {"type": "string"}}}),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    /// It touches nothing the policy gate governs (no file, host or program).
    fn consequences(&self, _arguments: &Value) -> Vec<baton::Consequence> {
        Vec::new()
    }

    async fn call(&self, arguments: &Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = arguments["id"]
            .as_str()
            .ok_or_else(|| ToolError::new("give the ticket's `id`"))?;
        let text = self
            .0
            .get(id)
            .ok_or_else(|| ToolError::new(format!("no ticket `{id}`")))?;
        // What the subagent saw: the record `ticket:ID` with its text.
        Ok(ToolOutput::new(format!("{id}: {text}"))
            .observed(Observation::record("ticket", id, text)))
    }
}

const HANDOFF_WITH_A_FABRICATED_TICKET: &str = "## Settled conclusions
- T-2 blocks the release: it is labelled `blocker` and `the login page times out` [ticket:T-2]
- T-9 blocks the release too: `payments fail on retry` [ticket:T-9]
## Open items
- Whether T-3 matters for the release — stuck: it was not read
## Hard constraints
- none
";

const REPAIRED_HANDOFF: &str = "## Settled conclusions
- T-2 blocks the release: it is labelled `blocker` and `the login page times out` [ticket:T-2]
## Open items
- Whether T-3 matters for the release — stuck: it was not read
## Hard constraints
- none
";

const VERIFIED: &str = "## Settled conclusions
- T-2 blocks the release: it is labelled `blocker` and `the login page times out` [ticket:T-2]
## Open items
## Hard constraints
- none
";

#[baton::tokio::main(crate = "baton::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tickets = Tickets(BTreeMap::from([
        ("T-1", "[closed] typo in the settings page"),
        (
            "T-2",
            "[open, blocker] the login page times out after the 2.4 upgrade",
        ),
        ("T-3", "[open] dark mode colours are off"),
    ]));
    // The triager reads T-2, then hands off a conclusion on T-9, which it never read.
    let triager_model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("ticket", json!({"id": "T-2"})),
        ScriptedTurn::text(HANDOFF_WITH_A_FABRICATED_TICKET),
        ScriptedTurn::text(REPAIRED_HANDOFF),
    ]));
    let verifier_model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool("ticket", json!({"id": "T-2"})),
        ScriptedTurn::text(VERIFIED),
    ]));
    let coordinator = Coordinator::builder()
        .tools(ToolRegistry::empty().with(Arc::new(tickets)))
        .role(
            Role::new("triager")
                .description("Reads tickets and says which block the release.")
                .tools(["ticket"])
                .model(triager_model),
        )
        .role(
            Role::new("verifier")
                .system("Reread the tickets the doubted claims cite; settle only those they hold.")
                .tools(["ticket"])
                .mandatory([Field::Goal, Field::Constraints, Field::Doubts])
                .model(verifier_model),
        )
        .agents(1)
        .build();
    let task = Task::job("Which open tickets block the release?")
        .subtask("triager", "Read T-2 and say whether it blocks the release.");
    let handle = coordinator.start(task).await?;
    let mut events = handle.events();
    while let Some(event) = events.next().await {
        let event = event?;
        if let RunEvent::HandoffRepairRequested {
            subagent,
            violations,
        } = &event.event
        {
            for v in violations {
                println!(
                    "{subagent}: rejected by the contract: [{}] {}",
                    v.code.as_str(),
                    v.message
                );
            }
        }
    }
    let report = handle.report().await?;
    print!("{}", report.handoff.to_markdown());
    for s in &report.subagents {
        println!("{} {} {}", s.id, s.role, s.state.label());
    }
    Ok(())
}
