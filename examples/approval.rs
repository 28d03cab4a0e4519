//! Approvals: a write-like tool — `file_ticket`, which adds a ticket to the application's
//! store — whose every call waits for the application's say. The run logs each request (the
//! tool, the digest of its arguments, what it would write, until when), the subagent waits,
//! and the program decides through the run's handle: it grants the first request and denies
//! the second. The granted call runs once; the denied one never runs, and the model is told.
//!
//!     cargo run --example approval
//!
//! The model is scripted (offline): it files two tickets, then hands off citing the one it
//! filed.

use std::sync::{Arc, Mutex};

use baton::testing::{ScriptedModel, ScriptedTurn};
use baton::{
    async_trait, json, Consequence, Coordinator, Effect, Observation, Role, RunEvent, Task, Tool,
    ToolContext, ToolError, ToolOutput, ToolRegistry, ToolSpec, Value,
};

/// Files a ticket in the application's store: it changes something, so it is not read-only,
/// and it asks for approval of every call.
struct FileTicket(Arc<Mutex<Vec<String>>>);

#[async_trait]
impl Tool for FileTicket {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "file_ticket".into(),
            description: "File a new ticket with a title; returns its id.".into(),
            parameters: json!({"type": "object", "required": ["title"],
                               "properties": {"title": {"type": "string"}}}),
        }
    }

    fn consequences(&self, _arguments: &Value) -> Vec<Consequence> {
        vec![Consequence {
            effect: Effect::Write,
            resource: "tickets".into(),
        }]
    }

    fn needs_approval(&self, _arguments: &Value) -> bool {
        true
    }

    async fn call(&self, arguments: &Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let title = arguments["title"]
            .as_str()
            .ok_or_else(|| ToolError::new("give the ticket's `title`"))?;
        let mut store = self
            .0
            .lock()
            .map_err(|_| ToolError::new("the store is unusable"))?;
        store.push(title.to_string());
        let id = format!("T-{}", store.len() + 3);
        let text = format!("[open] {title}");
        Ok(ToolOutput::new(format!("filed {id}: {text}"))
            .observed(Observation::record("ticket", &id, &text)))
    }
}

const HANDOFF: &str = "## Settled conclusions
- The timeout is filed as T-4: `[open] login times out after the 2.4 upgrade` [ticket:T-4]
## Open items
- Closing the old tickets — stuck: the application denied filing it
## Hard constraints
- none
";

#[baton::tokio::main(crate = "baton::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filed = Arc::new(Mutex::new(Vec::new()));
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool(
            "file_ticket",
            json!({"title": "login times out after the 2.4 upgrade"}),
        ),
        ScriptedTurn::tool(
            "file_ticket",
            json!({"title": "delete every closed ticket"}),
        ),
        ScriptedTurn::text(HANDOFF),
    ]));
    let coordinator = Coordinator::builder()
        .model(model)
        .tools(ToolRegistry::empty().with(Arc::new(FileTicket(Arc::clone(&filed)))))
        .role(Role::new("filer").tools(["file_ticket"]))
        .build();
    let task = Task::job("File a ticket for the login timeout.")
        .subtask("filer", "File the login timeout as a ticket.");
    let handle = coordinator.start(task).await?;
    let mut events = handle.events();
    while let Some(event) = events.next().await {
        match event?.event {
            RunEvent::ApprovalRequested { request } => {
                println!(
                    "{} asks: {} {} ({})",
                    request.id, request.tool, request.arguments, request.reason
                );
                // The application's decision: file it, unless it would delete tickets.
                let title = request.arguments["title"].as_str().unwrap_or_default();
                if title.contains("delete") {
                    handle
                        .deny(&request.id, "deleting tickets needs a person")
                        .await?;
                } else {
                    handle.approve(&request.id).await?;
                }
            }
            RunEvent::ApprovalDecided {
                approval_id,
                decision,
                by,
            } => println!("{approval_id} {} by the {by}", decision.word()),
            RunEvent::ApprovalConsumed {
                approval_id,
                call_id,
                ..
            } => println!("{approval_id} used by {call_id}"),
            _ => {}
        }
    }
    let report = handle.report().await?;
    print!("{}", report.handoff.to_markdown());
    let filed = filed.lock().map(|f| f.clone()).unwrap_or_default();
    println!("tickets filed: {}", filed.join("; "));
    Ok(())
}
