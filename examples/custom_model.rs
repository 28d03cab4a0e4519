//! A model of one's own: any type implementing `baton::Model` (with `#[baton::async_trait]`,
//! no dependency to add) plays the subagents. This one wraps another model — the offline
//! explorer — and counts the calls made to it; the report counts the same.
//!
//!     cargo run --example custom_model
//!
//! The run explores a small fixture tree (`baton::testing::fixture_tree`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use baton::{
    async_trait, Coordinator, Model, ModelError, ModelRequest, ModelResponse, OfflineModel, Task,
};

/// Wraps a model and counts its calls.
struct Counting {
    inner: Arc<dyn Model>,
    calls: AtomicU64,
}

#[async_trait]
impl Model for Counting {
    fn name(&self) -> String {
        format!("counting({})", self.inner.name())
    }

    fn context_window(&self) -> usize {
        self.inner.context_window()
    }

    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.complete(request).await
    }
}

#[baton::tokio::main(crate = "baton::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tree = baton::testing::fixture_tree();
    let model = Arc::new(Counting {
        inner: Arc::new(OfflineModel::new()),
        calls: AtomicU64::new(0),
    });
    let report = Coordinator::builder()
        .model(Arc::clone(&model) as Arc<dyn Model>)
        .build()
        .run(Task::explore(
            "where is the retry delay computed?",
            tree.path(),
        ))
        .await?;
    print!("{}", report.handoff.to_markdown());
    println!("model: {}", report.model);
    println!(
        "calls counted by the model: {}",
        model.calls.load(Ordering::SeqCst)
    );
    println!("calls counted by the report: {}", report.usage.model_calls);
    Ok(())
}
