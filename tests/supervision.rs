//! Supervision: a subagent that panics mid-run is recorded as failed, the others still report.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use baton::{
    Coordinator, Message, Model, ModelError, ModelRequest, ModelResponse, OfflineModel,
    SubagentState, Task,
};

use crate::support::{assert_citations_hold, tree};

/// The offline explorer, except that the subagent whose scope holds `beta` panics on its
/// second turn (after its first tool calls ran).
struct PanicsInBeta {
    inner: OfflineModel,
    panics: AtomicUsize,
}

#[async_trait]
impl Model for PanicsInBeta {
    fn name(&self) -> String {
        "panics-in-beta".into()
    }

    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let in_beta = matches!(request.messages.first(), Some(Message::User { text }) if text.contains("\"beta\""));
        if in_beta && request.messages.len() > 1 {
            self.panics.fetch_add(1, Ordering::SeqCst);
            panic!("scripted panic in the beta subagent");
        }
        self.inner.complete(request).await
    }
}

fn three_dirs() -> tempfile::TempDir {
    let body = |name: &str| {
        format!("//! {name}.\n\n/// Parses the {name} header.\npub fn parse_header_{name}(input: &str) -> usize {{\n    input.len()\n}}\n")
    };
    tree(&[
        ("alpha/lib.rs", &body("alpha")),
        ("beta/lib.rs", &body("beta")),
        ("gamma/lib.rs", &body("gamma")),
    ])
}

#[tokio::test]
async fn a_panicking_subagent_is_failed_and_the_rest_report() {
    let dir = three_dirs();
    let model = Arc::new(PanicsInBeta {
        inner: OfflineModel::new(),
        panics: AtomicUsize::new(0),
    });
    let report = Coordinator::builder()
        .model(model.clone())
        .agents(3)
        .build()
        .run(Task::explore("Where is the header parsed?", dir.path()))
        .await
        .unwrap();
    assert_eq!(model.panics.load(Ordering::SeqCst), 1);
    assert_eq!(report.subagents.len(), 3);
    let beta = report.subagents.iter().find(|s| s.scope == "beta").unwrap();
    assert_eq!(beta.state, SubagentState::Failed);
    assert!(
        beta.error.as_deref().unwrap_or("").contains("panic"),
        "{:?}",
        beta.error
    );
    for other in report.subagents.iter().filter(|s| s.scope != "beta") {
        assert_eq!(other.state, SubagentState::HandedOff, "{other:?}");
    }
    let cited: Vec<String> = report
        .handoff
        .settled_conclusions
        .iter()
        .flat_map(|c| c.sources.iter().map(|s| s.to_string()))
        .collect();
    assert!(
        cited.iter().any(|s| s.starts_with("alpha/lib.rs:")),
        "{cited:?}"
    );
    assert!(
        cited.iter().any(|s| s.starts_with("gamma/lib.rs:")),
        "{cited:?}"
    );
    assert!(!cited.iter().any(|s| s.starts_with("beta/")), "{cited:?}");
    assert!(
        report
            .handoff
            .open_items
            .iter()
            .any(|o| o.item.contains("beta") && o.item.contains("not explored")),
        "{:?}",
        report.handoff.open_items
    );
    assert!(!report.failed());
    assert_citations_hold(&report, dir.path());
}

/// A model that never answers until cancelled.
struct Stalls;

#[async_trait]
impl Model for Stalls {
    fn name(&self) -> String {
        "stalls".into()
    }

    async fn complete(&self, _request: ModelRequest) -> Result<ModelResponse, ModelError> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn cancel_stops_running_subagents_and_still_reports() {
    let dir = three_dirs();
    let handle = Coordinator::builder()
        .model(Arc::new(Stalls))
        .agents(2)
        .build()
        .start(Task::explore("Where is the header parsed?", dir.path()))
        .await
        .unwrap();
    // Wait until both slots are taken, then cancel.
    let mut events = handle.events();
    let mut spawned = 0;
    while spawned < 2 {
        let event = events.next().await.expect("the run goes on").unwrap();
        if let baton::RunEvent::SubagentSpawned { .. } = event.event {
            spawned += 1;
        }
    }
    let status = handle
        .status()
        .await
        .expect("the lead answers while subagents work");
    assert_eq!(
        status
            .iter()
            .filter(|s| s.state == SubagentState::Running)
            .count(),
        2
    );
    handle.canceller().cancel();
    let report = tokio::time::timeout(std::time::Duration::from_secs(10), handle.report())
        .await
        .expect("cancel ends the run")
        .unwrap();
    assert!(report.cancelled);
    assert!(
        report
            .subagents
            .iter()
            .all(|s| s.state == SubagentState::Cancelled),
        "{:?}",
        report.subagents
    );
    assert!(report.handoff.settled_conclusions.is_empty());
}
