//! What the lead writes to the run's log, built from its own data (pure), and the checkpoint
//! writer that projects the durable events off the actor.

use std::sync::Arc;
use std::time::Instant;

use ractor::ActorRef;
use tokio::sync::mpsc::Sender;

use crate::checkpoint::{
    Ack, Checkpoint, EffectState, EventStore, LoggedEvent, Manifest, PlannedSubagent, RunEvent,
    StoreError,
};

use crate::context::{Compiled, ItemSum};
use crate::digest::sha256_hex;
use crate::policy::{Budget, Spent};
use crate::report::SubagentState;
use crate::subagent::ToolReturn;
use crate::tokens::estimate_tokens;
use crate::transcript::ToolCall;

use super::plan::Shard;

use super::state::LeadState;
use super::{LeadMsg, RunConfig, Stated};

pub(super) fn started(config: &RunConfig) -> RunEvent {
    RunEvent::RunStarted {
        question: config.question.clone(),
        root: config.shown_root(),
        model: config.model.name(),
        agents: config.agents,
        max_subagents: config.max_subagents,
        budget: config.budget,
        repairs: config.repairs,
        shards: config.shards,
        tools: config.tools.names(),
        max_waves: Some(config.max_waves),
        task: config.task.clone(),
    }
}

/// The models as configured now: the subagents', each role's that has its own, and the
/// lead's when it has one.
pub(super) fn models_configured(config: &RunConfig) -> Vec<RunEvent> {
    let mut events = vec![RunEvent::ModelConfigured {
        role: "subagents".into(),
        config: config.model.config(),
    }];
    events.extend(
        config
            .role_models
            .iter()
            .map(|(role, model)| RunEvent::ModelConfigured {
                role: role.to_string(),
                config: model.config(),
            }),
    );
    if let Some(lead) = &config.lead_model {
        events.push(RunEvent::ModelConfigured {
            role: "lead".into(),
            config: lead.config(),
        });
    }
    events
}

pub(super) fn planned(
    plan: &[(String, &Shard)],
    reason: &str,
    left_out: &[String],
    not_searched: &(usize, Vec<String>),
) -> RunEvent {
    RunEvent::PlanRevised {
        subagents: plan
            .iter()
            .map(|(id, shard)| PlannedSubagent {
                id: id.clone(),
                scope: shard.paths.clone(),
                role: shard.role.clone(),
                question: shard.question.clone(),
            })
            .collect(),
        reason: reason.into(),
        left_out: left_out.to_vec(),
        not_searched: not_searched.0,
        not_searched_names: not_searched.1.clone(),
    }
}

pub(super) fn spawned(
    id: &str,
    scope: &[String],
    brief: &str,
    context: &Compiled,
    budget: Budget,
) -> RunEvent {
    // Fields, and the items included, are logged; the items left out (not selected, or over
    // the budget) only as a count and the sum of their hashes: a spawn's entry must not grow
    // with the run.
    let (kept, left_out): (Vec<_>, Vec<_>) = context
        .manifest
        .iter()
        .partition(|e| e.included || e.item.is_none());
    let mut omitted = context.unselected;
    for entry in &left_out {
        omitted.items += 1;
        omitted.sum.add(ItemSum::of(
            entry.field,
            entry.item.as_deref().unwrap_or(""),
        ));
    }
    RunEvent::SubagentSpawned {
        subagent: id.to_string(),
        role: context.role.clone(),
        scope: scope.to_vec(),
        manifest: Manifest {
            brief_digest: sha256_hex(brief.as_bytes()),
            brief_tokens: estimate_tokens(brief),
            tools: context.tools.clone(),
            budget,
            context_tokens: context.tokens as u64,
            context: kept.into_iter().cloned().collect(),
            omitted_items: omitted.items,
            omitted_digest: if omitted.items == 0 {
                String::new()
            } else {
                omitted.sum.hex()
            },
        },
    }
}

/// A subagent's window was compacted (or compaction was refused).
pub(super) fn window_compacted(id: String, note: crate::subagent::CompactionNote) -> RunEvent {
    RunEvent::WindowCompacted {
        subagent: id,
        decision: note.decision,
        tokens_before: note.tokens_before as u64,
        tokens_after: note.tokens_after as u64,
        cleared_tokens: note.cleared_tokens as u64,
        pinned: note.pinned,
        constraints: note.constraints,
        retired: note.retired,
        reason: note.reason,
        folded: note.folded,
    }
}

/// The constraints a run starts with, verbatim, normalised, typed, with their provenance.
pub(super) fn constraints(given: &[Stated]) -> Vec<RunEvent> {
    given
        .iter()
        .map(|c| RunEvent::ConstraintStated {
            text: c.text.clone(),
            normalised: crate::text::normalise(&c.text),
            provenance: c.provenance.clone(),
            rules: c.rules.clone(),
            untyped: c.untyped.clone(),
            warnings: c.warnings.clone(),
        })
        .collect()
}

/// A call starts (executing), waits for the application's approval, or is not made
/// (proposed); a call with effects carries its intent — the digest of its tool and its
/// arguments as the model wrote them, before anything is scrubbed from the log.
pub(super) fn tool_called(
    id: &str,
    call: &ToolCall,
    read_only: bool,
    effect: EffectState,
) -> RunEvent {
    RunEvent::ToolCalled {
        subagent: id.to_string(),
        call_id: call.id.clone(),
        tool: call.name.clone(),
        arguments: call.arguments.clone(),
        effect,
        read_only,
        intent: if read_only {
            String::new()
        } else {
            crate::policy::intent_digest(&call.name, &call.arguments)
        },
    }
}

/// A call's return — after its denial, when a constraint denied it.
pub(super) fn tool_returned(id: &str, mut result: ToolReturn) -> Vec<RunEvent> {
    let denied = result.denial.take().map(|denial| RunEvent::ToolDenied {
        subagent: id.to_string(),
        call_id: result.call_id.clone(),
        denial: *denial,
    });
    denied
        .into_iter()
        .chain(std::iter::once(returned(id, result)))
        .collect()
}

fn returned(id: &str, result: ToolReturn) -> RunEvent {
    RunEvent::ToolReturned {
        subagent: id.to_string(),
        call_id: result.call_id,
        is_error: result.is_error,
        content_digest: result.content_digest,
        observations: result.observations,
        // Past its time limit a call may still take effect: unknown, never failed. One that
        // did not run for want of approval ends as its approval did.
        effect: if let Some(refused) = result.refused {
            refused
        } else if result.timed_out {
            EffectState::OutcomeUnknown
        } else if result.is_error {
            EffectState::Failed
        } else {
            EffectState::Completed
        },
    }
}

pub(super) fn ended(
    id: &str,
    state: SubagentState,
    error: Option<String>,
    spent: Spent,
) -> Vec<RunEvent> {
    vec![
        RunEvent::BudgetSpent {
            subagent: id.to_string(),
            spent,
        },
        RunEvent::SubagentEnded {
            subagent: id.to_string(),
            state,
            error,
        },
    ]
}

/// Effects cut off by a crash become outcome_unknown: never failed, never retried.
pub(super) fn cut_off(calls: &[String]) -> Vec<RunEvent> {
    calls
        .iter()
        .map(|call| RunEvent::EffectChanged {
            call_id: call.clone(),
            from: EffectState::Executing,
            to: crate::checkpoint::on_recovery(EffectState::Executing),
            evidence: None,
            note: "the process died while it ran".into(),
        })
        .collect()
}

/// What the watcher checks, in the order the lead logged it.
pub(super) enum Logged {
    /// An append's acknowledgement.
    Ack(Ack),
    /// A checkpoint of everything logged before it: stored once every earlier append is
    /// acknowledged, so it never covers an event that is not durable.
    Checkpoint(Box<Checkpoint>),
    /// Answered once every earlier append is durable; dropped unanswered after a failure.
    Durable(crate::subagent::Durable),
}

/// Whether a checkpoint is on its way to the store, and how long the last took: the lead
/// takes no other until it is stored, and waits longer between them as they grow, so no copy
/// of a large checkpoint waits in line behind another.
#[derive(Debug, Default)]
pub(super) struct CheckpointPace {
    in_flight: std::sync::atomic::AtomicBool,
    last_ms: std::sync::atomic::AtomicU64,
}

impl CheckpointPace {
    /// Whether the lead may take a checkpoint now, `since` the last one was taken: none is
    /// on its way, and at least the interval has passed — a second, or four times as long as
    /// the last took to store.
    pub(super) fn ready(&self, since: Option<std::time::Duration>) -> bool {
        use std::sync::atomic::Ordering;
        let wait = super::CHECKPOINT_EVERY.max(std::time::Duration::from_millis(
            4 * self.last_ms.load(Ordering::Relaxed),
        ));
        !self.in_flight.load(Ordering::Acquire) && since.is_none_or(|s| s >= wait)
    }

    /// A checkpoint is handed to the watcher.
    pub(super) fn taken(&self) {
        self.in_flight
            .store(true, std::sync::atomic::Ordering::Release);
    }

    fn stored(&self, took: std::time::Duration) {
        use std::sync::atomic::Ordering;
        self.last_ms
            .store(took.as_millis() as u64, Ordering::Relaxed);
        self.in_flight.store(false, Ordering::Release);
    }
}

/// Checks every acknowledgement of the run's appends, in order, and stores each checkpoint
/// once what it covers is durable. The first failure is told to the lead at once (the run
/// stops), nothing is stored after it, and it is the watcher's result once the lead drops
/// Most acknowledgements and checkpoints handed to the watcher and not yet checked.
const ACKS_IN_FLIGHT: usize = 8192;

/// Waits while the store's writer holds more appends than it takes in one commit twice over:
/// the lead gets no further ahead of what is durable, and no tokio worker blocks on the queue.
pub(super) async fn writer_room(store: &dyn EventStore) {
    while store.backlog() >= crate::checkpoint::WRITER_BACKLOG {
        let drained = store.drained();
        match drained {
            Some(notify) => {
                let _ =
                    tokio::time::timeout(std::time::Duration::from_millis(10), notify.notified())
                        .await;
            }
            None => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
        }
    }
}

/// the sender.
pub(super) fn watch_acks(
    lead: ActorRef<LeadMsg>,
    store: Arc<dyn EventStore>,
    pace: Arc<CheckpointPace>,
    feed: Option<Arc<crate::checkpoint::Feed>>,
) -> (
    Sender<Logged>,
    tokio::task::JoinHandle<Result<(), StoreError>>,
) {
    let (sender, mut pending) = tokio::sync::mpsc::channel::<Logged>(ACKS_IN_FLIGHT);
    let watcher = tokio::spawn(async move {
        let mut first: Option<StoreError> = None;
        while let Some(item) = pending.recv().await {
            let failure = match item {
                Logged::Ack(ack) => match ack.await {
                    // Durable: the run's readers get it now (none after a failure: the run
                    // stops there).
                    Ok(Ok(logged)) => {
                        if let (Some(feed), None) = (&feed, &first) {
                            feed.publish(&logged).await;
                        }
                        continue;
                    }
                    Ok(Err(e)) => e,
                    Err(_) => StoreError::Write(format!(
                        "{}: the event writer stopped before acknowledging",
                        store.location()
                    )),
                },
                Logged::Durable(durable) => {
                    if first.is_none() {
                        let _ = durable.send(());
                    }
                    continue;
                }
                Logged::Checkpoint(_) if first.is_some() => continue,
                // A projection that fails its check is not stored: the previous one stays.
                Logged::Checkpoint(checkpoint) if checkpoint.check().is_err() => {
                    pace.stored(std::time::Duration::ZERO);
                    continue;
                }
                Logged::Checkpoint(checkpoint) => {
                    let store = Arc::clone(&store);
                    let started = std::time::Instant::now();
                    let stored =
                        tokio::task::spawn_blocking(move || store.put_checkpoint(&checkpoint))
                            .await;
                    pace.stored(started.elapsed());
                    match stored {
                        Ok(Ok(())) => continue,
                        Ok(Err(e)) => e,
                        Err(e) => StoreError::Write(format!("storing the checkpoint failed: {e}")),
                    }
                }
            };
            if first.is_none() {
                let _ = lead.cast(LeadMsg::LogFailed(failure.clone()));
                // Nothing more is published: readers end with the failure, and no lead waits
                // on them.
                if let Some(feed) = &feed {
                    feed.fail(failure.clone());
                }
                first = Some(failure);
            }
        }
        if let Some(feed) = &feed {
            feed.close();
        }
        first.map_or(Ok(()), Err)
    });
    (sender, watcher)
}

impl LeadState {
    /// Appends to the run's log, if there is one; durability is awaited before the report.
    pub(super) fn log(&mut self, events: Vec<RunEvent>) {
        for event in &events {
            self.journal.next_seq += 1;
            let logged = LoggedEvent {
                run_id: self.config.run_id.clone(),
                seq: self.journal.next_seq,
                at_ms: 0,
                event: event.clone(),
                prev: String::new(),
                digest: String::new(),
            };
            self.contexts.projector.apply(&logged);
            tracing::debug!(
                seq = logged.seq,
                kind = logged.event.kind(),
                subagent = logged.event.subagent().unwrap_or(""),
                "logged"
            );
            if self.journal.resumed_after.is_some()
                && matches!(event, RunEvent::EffectChanged { .. })
            {
                self.journal.since_resume.push(logged);
            }
        }
        if let Some(log) = &self.config.log {
            let ack = log.append(events);
            self.watch(Logged::Ack(ack));
        }
    }

    /// Answers `durable` once what was logged so far is durable: at once without a log, after
    /// the watcher has checked every earlier append with one, never once the log failed or
    /// the run's end took the watcher (the call waiting on it is then not made).
    pub(super) fn when_durable(&mut self, durable: crate::subagent::Durable) {
        if self.journal.log_failed.is_some() {
            return;
        }
        match (&self.config.log, &self.journal.acks) {
            (None, _) => {
                let _ = durable.send(());
            }
            (Some(_), Some(_)) => self.journal.pending.push(Logged::Durable(durable)),
            (Some(_), None) => {}
        }
    }

    /// Hands an acknowledgement or a checkpoint to the watcher. The watcher outlives every
    /// send but the last, which drops it; a send that fails leaves the item unchecked, so it
    /// is reported like a failed append, naming the store.
    pub(super) fn watch(&mut self, item: Logged) {
        if self.journal.acks.is_some() {
            self.journal.pending.push(item);
        }
    }

    /// The watcher is gone: what was handed to it is unchecked, so the run fails as if an
    /// append had, naming the store.
    pub(super) fn watcher_stopped(&mut self) {
        if self.journal.log_failed.is_none() {
            let location = self
                .config
                .log
                .as_ref()
                .map(|log| log.store().location())
                .unwrap_or_default();
            self.journal.log_failed = Some(StoreError::Write(format!(
                "{location}: the acknowledgement watcher stopped"
            )));
        }
    }

    /// A checkpoint of everything logged so far, stored by the watcher once it is durable;
    /// `now` takes it whatever the interval (the end of the run).
    pub(super) fn checkpoint(&mut self, now: bool) {
        let due = now
            || self
                .journal
                .pace
                .ready(self.journal.checkpointed.map(|at| at.elapsed()));
        if due && self.journal.acks.is_some() {
            self.journal.checkpointed = Some(Instant::now());
            self.journal.pace.taken();
            let checkpoint = Box::new(self.contexts.projector.checkpoint().clone());
            self.watch(Logged::Checkpoint(checkpoint));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::EvidenceEntry;
    use crate::context::{compile, load_roles};
    use crate::contracts::RoleId;

    use crate::tokens::Estimate;

    /// No checkpoint is taken while one is on its way to the store, and they come further
    /// apart as they take longer: a second, or four times the last one's storing.
    #[test]
    fn no_checkpoint_is_taken_while_one_is_on_its_way() {
        use std::time::Duration;
        let pace = CheckpointPace::default();
        assert!(pace.ready(None), "the first is taken at once");
        assert!(!pace.ready(Some(Duration::from_millis(999))));
        assert!(pace.ready(Some(Duration::from_secs(1))));
        pace.taken();
        assert!(
            !pace.ready(Some(Duration::from_secs(3600))),
            "one is in flight"
        );
        pace.stored(Duration::from_secs(2));
        assert!(!pace.ready(Some(Duration::from_secs(7))));
        assert!(pace.ready(Some(Duration::from_secs(8))));
        pace.taken();
        pace.stored(Duration::from_millis(10));
        assert!(pace.ready(Some(Duration::from_secs(1))), "back to a second");
    }

    /// The logged entry of a spawn whose context was compiled from a checkpoint holding
    /// `evidence` items of other subagents: its JSON size.
    fn spawn_entry_bytes(evidence: usize) -> usize {
        let mut cp = crate::checkpoint::started_checkpoint_fixture();
        cp.evidence = (0..evidence)
            .map(|i| EvidenceEntry {
                source: format!("other{i}/lib.rs:1-3"),
                digest: sha256_hex(i.to_string().as_bytes()),
                excerpt: Some(format!("other{i}/lib.rs defines `item_{i}` at line 1")),
                tombstone: false,
                stale: None,
                subagent: format!("sa{}", i + 2),
                event: 1,
            })
            .collect();
        let roles = load_roles(None).unwrap();
        let role = &roles[&RoleId::EXPLORER];
        let compiled = compile(&cp, None, role, role.budget, &Estimate).unwrap();
        let event = spawned(
            "sa1",
            &["mine".into()],
            "brief",
            &compiled,
            Budget::default(),
        );
        serde_json::to_string(&event).unwrap().len()
    }

    /// Issue 11 (in part): a spawn's logged manifest is bounded by its context's budget, not
    /// by the run — the items left out are a count and a digest. A checkpoint of 1,000 or of
    /// 10,000 other subagents' evidence logs the same entry, within a few bytes.
    #[test]
    fn a_spawn_entry_does_not_grow_with_the_run() {
        let thousand = spawn_entry_bytes(1_000);
        let ten_thousand = spawn_entry_bytes(10_000);
        assert!(
            ten_thousand.abs_diff(thousand) <= 16,
            "{thousand} vs {ten_thousand} bytes"
        );
        assert!(thousand < 64 * 1024, "{thousand} bytes");
    }

    /// A call past its time limit may still take effect: its effect is logged outcome_unknown,
    /// never failed; a call that returned an error failed.
    #[test]
    fn a_timed_out_call_is_outcome_unknown_not_failed() {
        let returned = |is_error, timed_out| {
            let event = tool_returned(
                "sa1",
                ToolReturn {
                    call_id: "sa1.1".into(),
                    is_error,
                    timed_out,
                    content_digest: String::new(),
                    observations: Vec::new(),
                    denial: None,
                    refused: None,
                },
            );
            match event.as_slice() {
                [RunEvent::ToolReturned { effect, .. }] => *effect,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(returned(true, true), EffectState::OutcomeUnknown);
        assert_eq!(returned(true, false), EffectState::Failed);
        assert_eq!(returned(false, false), EffectState::Completed);
    }
}
