//! Resuming a logged run: its log read back, folded and rechecked against the tree as it is
//! now, what it spent counted against the cost limit, and its lead started from there.

use std::sync::Arc;

use super::{Coordinator, RoleModels, Roles, RunError, Task};
use crate::checkpoint::{RunEvent, StoreError};
use crate::coordinator::RunHandle;
use crate::lead::{restore, Resumption, RunConfig};
use crate::tools::Workspace;

impl Coordinator {
    /// Continues a run from its last durable event: subagents whose handoff was accepted (or
    /// rejected, or that failed) are not redone; those mid-flight start again from their brief;
    /// effects cut off while executing become outcome_unknown; requests for approval still
    /// undecided wait on. The run keeps its id, task, agents, subagent budget and repairs; its
    /// models, tools, roles, time limits and cost limits are this coordinator's.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// let dir = baton::testing::fixture_tree();
    /// let store = Arc::new(baton::testing::MemoryStore::new());
    /// let coordinator = baton::Coordinator::builder().store(store).build();
    /// let first = coordinator.run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
    /// // A finished run resumes to the same conclusions (nothing accepted is redone).
    /// let again = coordinator.resume(&first.run_id).await.unwrap().report().await.unwrap();
    /// assert_eq!(again.handoff.settled_conclusions, first.handoff.settled_conclusions);
    /// # });
    /// ```
    pub async fn resume(&self, run_id: &str) -> Result<RunHandle, RunError> {
        // The log is read, folded and rechecked against the tree off the runtime.
        let this = self.clone();
        let id = run_id.to_string();
        let read = tokio::task::spawn_blocking(move || this.read_for_resume(&id))
            .await
            .map_err(|e| RunError::Runtime(format!("reading the run failed: {e}")))??;
        let settings = read.resumption.settings.clone();
        let after = read.resumption.after_seq;
        let config = RunConfig {
            run_id: run_id.to_string(),
            question: settings.question,
            workspace: read.workspace,
            doc_ids: read.doc_ids,
            task: settings.task,
            model: Arc::clone(&self.model),
            lead_model: self.lead_model.clone(),
            helpers: self.helpers.clone(),
            tools: read.tools,
            agents: settings.agents,
            max_subagents: settings.max_subagents,
            max_waves: settings.max_waves,
            budget: settings.budget,
            repairs: settings.repairs,
            shards: settings.shards,
            constraints: Vec::new(),
            roles: read.roles,
            role_models: read.role_models,
            log: None,
            limits: self.limits,
            cost: Arc::new(read.cost),
            subagent_cost_cap: self.subagent_max_cost,
            approver: self.approver.clone(),
            oversight: crate::lead::Oversight::default(),
            _claim: read.claim,
        };
        self.launch(config, Some(read.resumption), after).await
    }

    /// What a resume starts from, read on a blocking thread: the run's claim, its log read
    /// back (rechecked against the tree as it is now, only where the run's constraints let
    /// files be read), its workspace, what it has spent, and its roles.
    fn read_for_resume(&self, run_id: &str) -> Result<ResumeRead, RunError> {
        let store = self.store.as_ref().ok_or(RunError::NoStore)?;
        // The run must exist before a lock file is made for it; then the claim keeps another
        // process from resuming it while this one reads and continues it.
        store.events(run_id).map_err(RunError::Store)?;
        let claim = self.claim(run_id)?;
        let logged = store.events(run_id).map_err(RunError::Store)?;
        // A merge (or a fork of one) is a checkpoint with no plan of its own: nothing to go on
        // with, and a fresh plan would drop what the branches settled.
        let merged = logged.iter().find_map(|e| match &e.event {
            crate::checkpoint::RunEvent::RunMerged { branches, .. } => Some(branches),
            _ => None,
        });
        if let Some(branches) = merged {
            let names: Vec<&str> = branches.iter().map(|b| b.run_id.as_str()).collect();
            return Err(RunError::Refused(format!(
                "{run_id} holds a merge of {}: it has no work of its own to continue (resume a branch instead)",
                names.join(" and ")
            )));
        }
        let resumption = restore(&logged).map_err(|e| {
            RunError::Store(StoreError::Damaged {
                run_id: run_id.to_string(),
                last_intact: logged.last().map(|e| e.seq).unwrap_or(0),
                detail: e,
            })
        })?;
        let settings = resumption.settings.clone();
        let task = Task::from_spec(&settings.question, &settings.root, &settings.task);
        let workspace = match task.root() {
            Some(root) => Some(Workspace::open(root).map_err(|e| RunError::BadRoot {
                path: settings.root.clone(),
                reason: e.to_string(),
            })?),
            None => None,
        };
        // What was accepted is rechecked against the tree as it is now — only where the run's
        // constraints let files be read — and the log projected, off the runtime.
        let policy = Arc::new(crate::checkpoint::policy_of_log(&logged));
        // What the log says was spent counts against the cost limit of the resumed run.
        let cost = crate::model::CostMeter::new(self.max_cost);
        cost.settle(0, logged_cost(&logged));
        let mut resumption = resumption;
        // A research run's corpus is brought up to date, and its cited passages rechecked.
        let (tools, corpus) = self.run_tools(&task)?;
        resumption.prepare(
            workspace.as_ref().map(|w| w.under(policy)),
            corpus.as_ref().map(|(_, c)| c.as_ref()),
            run_id,
        );
        let doc_ids = corpus.map(|(ids, _)| ids);
        let (roles, role_models) = self.role_profiles(&task, &tools.names())?;
        Ok(ResumeRead {
            claim,
            resumption,
            workspace,
            tools,
            doc_ids,
            cost,
            roles,
            role_models,
        })
    }
}

/// What a resume read from the store.
struct ResumeRead {
    claim: Option<Arc<crate::checkpoint::RunClaim>>,
    resumption: Resumption,
    workspace: Option<Workspace>,
    tools: crate::tools::ToolRegistry,
    doc_ids: Option<Arc<std::collections::HashSet<String>>>,
    cost: crate::model::CostMeter,
    roles: Roles,
    role_models: RoleModels,
}

/// What a run's log says its model calls cost, in millionths of a dollar: every subagent that
/// ended (`budget_spent`), every turn of the lead's model (`lead_turn`) and every answer of a
/// helper model (`ledger_classified`, `summary_narrated`). A subagent cut off
/// mid-flight logged nothing of what it spent.
fn logged_cost(events: &[crate::checkpoint::LoggedEvent]) -> u64 {
    events
        .iter()
        .map(|e| match &e.event {
            RunEvent::BudgetSpent { spent, .. } | RunEvent::LeadTurn { spent, .. } => {
                spent.cost_micros
            }
            RunEvent::LedgerClassified { call, .. } | RunEvent::SummaryNarrated { call, .. } => {
                call.cost_micros
            }
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::LoggedEvent;
    use crate::policy::Spent;

    fn logged(event: RunEvent) -> LoggedEvent {
        LoggedEvent {
            run_id: "r".into(),
            seq: 1,
            at_ms: 0,
            event,
            prev: String::new(),
            digest: String::new(),
        }
    }

    #[test]
    fn a_resume_counts_what_the_log_says_was_spent() {
        let spent = |cost_micros| Spent {
            cost_micros,
            ..Spent::default()
        };
        let events = vec![
            logged(RunEvent::BudgetSpent {
                subagent: "sa1".into(),
                spent: spent(1200),
            }),
            logged(RunEvent::LeadTurn {
                purpose: "plan".into(),
                spent: spent(300),
                outcome: "accepted".into(),
                handoff: None,
            }),
            logged(RunEvent::RunResumed { after_seq: 2 }),
        ];
        assert_eq!(logged_cost(&events), 1500);
        assert_eq!(super::super::micros(0.0015), 1500);
        assert_eq!(super::super::micros(-1.0), 0);
    }
}
