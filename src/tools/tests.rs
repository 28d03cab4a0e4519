//! Unit tests of the tool registry: the gate on every call, time limits, cancellation.

use super::*;
use std::time::{Duration, Instant};

/// A tool that sleeps `ms`, then answers.
/// Sleeps for its milliseconds — blocking its thread, with `true`.
struct Nap(u64, bool);

#[async_trait::async_trait]
impl Tool for Nap {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "nap".into(),
            description: "Sleeps.".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }
    fn consequences(&self, _: &Value) -> Vec<Consequence> {
        Vec::new()
    }
    async fn call(&self, _: &Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        match self.1 {
            true => std::thread::sleep(Duration::from_millis(self.0)),
            false => tokio::time::sleep(Duration::from_millis(self.0)).await,
        }
        Ok(ToolOutput::new("rested"))
    }
}

fn nap_call() -> ToolCall {
    ToolCall {
        id: "sa1.1".into(),
        name: "nap".into(),
        arguments: serde_json::json!({}),
    }
}

/// A call's cancellation is settled either way: ended when it returns (a watcher ends,
/// told so), cancelled past its limit, and cancelled when the call is dropped unfinished
/// (its subagent stopped).
#[tokio::test]
async fn a_call_s_cancellation_is_ended_or_cancelled_never_left_running() {
    let cx = |ms| ToolContext::new("r", "sa1", "sa1.1").with_time_limit(Duration::from_millis(ms));
    let quick = ToolRegistry::empty().with(Arc::new(Nap(10, false)));
    let ended = cx(5_000);
    let watch = ended.cancellation().clone();
    let watcher = tokio::spawn(async move { watch.cancelled().await });
    let (result, timed_out) = quick.execute_within(&nap_call(), &ended).await;
    assert!(!result.is_error && !timed_out);
    assert!(!watcher.await.unwrap(), "ended, not cancelled");
    let slow = ToolRegistry::empty().with(Arc::new(Nap(5_000, false)));
    let late = cx(50);
    let (result, timed_out) = slow.execute_within(&nap_call(), &late).await;
    assert!(result.is_error && timed_out);
    assert!(result.content.contains("whether it took effect is unknown"));
    assert!(late.cancellation().is_cancelled());
    let dropped = cx(5_000);
    let watch = dropped.cancellation().clone();
    let call = nap_call();
    let running = slow.execute_within(&call, &dropped);
    // Dropped before it returns, as when its subagent is stopped.
    assert!(tokio::time::timeout(Duration::from_millis(50), running)
        .await
        .is_err());
    assert!(watch.cancelled().await, "cancelled when dropped");
}

/// An application's tool that blocks its thread (a synchronous sleep inside its async
/// call) is still cut off at its limit: the call is a tool error, its effect unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_blocks_its_thread_is_cut_off_at_its_limit() {
    let stuck = ToolRegistry::empty().with(Arc::new(Nap(3_000, true)));
    let cx = ToolContext::new("r", "sa1", "sa1.1").with_time_limit(Duration::from_millis(200));
    let started = Instant::now();
    let (result, timed_out) = stuck.execute_within(&nap_call(), &cx).await;
    assert!(result.is_error && timed_out, "{result:?}");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
}

/// Work stuck past its limit gives its slot back: with every slot taken by stuck work,
/// the next call still runs at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stuck_work_never_holds_a_slot_past_its_limit() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let slots = (4 * cores).max(4);
    let stuck: Vec<_> = (0..slots + 2)
        .map(|_| {
            tokio::spawn(run_blocking(Duration::from_millis(50), true, || {
                std::thread::sleep(Duration::from_secs(3))
            }))
        })
        .collect();
    // Every stuck call has passed its limit; their threads sleep on for seconds.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let started = Instant::now();
    let quick = run_blocking(Duration::from_secs(10), true, || 42).await;
    assert_eq!(quick.unwrap().unwrap(), 42);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    for handle in stuck {
        assert!(handle.await.unwrap().is_err(), "past its limit");
    }
}
