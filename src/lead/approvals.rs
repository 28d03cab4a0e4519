//! The run's requests for approval, as the lead keeps them: asked for by a subagent's call,
//! decided by the application (through the run's handle or the builder's approver), expired,
//! or withdrawn when no call can use them any more; every step logged, a grant consumed once,
//! a grant past its expiry never used. Rebuilt from the log on resume, so a run killed while
//! waiting waits on.

use std::sync::Arc;

use dashmap::DashMap;
use ractor::ActorRef;

use super::{LeadMsg, LeadState};
use crate::checkpoint::{EffectState, LoggedEvent, RunEvent};
use crate::policy::{
    intent_digest, Approval, ApprovalDecision, ApprovalError, ApprovalRequest, UnknownOutcomes,
};
use crate::subagent::{ApprovalAsk, Decided, SubagentMsg};

/// What a run shares with its handle and its subagents: the requests for approval waiting
/// (listed by the handle), and the intents whose outcome is unknown (checked by subagents).
#[derive(Clone, Default)]
pub(crate) struct Oversight {
    pending: Arc<DashMap<String, ApprovalRequest>>,
    pub(crate) unknown: UnknownOutcomes,
}

impl Oversight {
    /// The requests waiting now, oldest first.
    pub(crate) fn pending(&self) -> Vec<ApprovalRequest> {
        let mut out: Vec<ApprovalRequest> =
            self.pending.iter().map(|e| e.value().clone()).collect();
        out.sort_by_key(|r| (r.requested_ms, number(&r.id)));
        out
    }
}

/// The number of a request id (`ap12` → 12).
fn number(id: &str) -> u64 {
    id.trim_start_matches("ap").parse().unwrap_or(u64::MAX)
}

/// One request and where it stands.
pub(super) struct Entry {
    request: ApprovalRequest,
    decision: Option<ApprovalDecision>,
    consumed: bool,
    /// The call waiting on it in this process, if one is.
    waiting: Option<String>,
    /// Its expiry timer, while it waits.
    timer: Option<tokio::task::JoinHandle<()>>,
}

/// The run's requests, in the order they were asked.
#[derive(Default)]
pub(super) struct Book {
    entries: Vec<Entry>,
}

impl Book {
    /// The requests a log holds, each as it stands.
    pub(super) fn of_log(events: &[LoggedEvent]) -> Book {
        let mut book = Book::default();
        for logged in events {
            match &logged.event {
                RunEvent::ApprovalRequested { request } => book.entries.push(Entry {
                    request: request.clone(),
                    decision: None,
                    consumed: false,
                    waiting: None,
                    timer: None,
                }),
                RunEvent::ApprovalDecided {
                    approval_id,
                    decision,
                    ..
                } => {
                    if let Some(e) = book.find(approval_id) {
                        e.decision = Some(decision.clone());
                    }
                }
                RunEvent::ApprovalConsumed { approval_id, .. } => {
                    if let Some(e) = book.find(approval_id) {
                        e.consumed = true;
                    }
                }
                _ => {}
            }
        }
        book
    }

    fn find(&mut self, id: &str) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.request.id == id)
    }

    fn index(&self, id: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.request.id == id)
    }
}

impl LeadState {
    /// On a resume: the requests still undecided wait on — listed by the handle, decided by
    /// the approver if there is one, expiring when they were to (at once, if that has passed).
    pub(super) fn resume_approvals(&mut self, myself: &ActorRef<LeadMsg>) {
        let now = crate::checkpoint::now_ms();
        for index in 0..self.approvals.entries.len() {
            if self.approvals.entries[index].decision.is_some() {
                continue;
            }
            if self.approvals.entries[index].request.expires_ms <= now {
                self.expire(index);
            } else {
                self.watch_request(index, myself);
            }
        }
    }

    /// A subagent's calls that must wait for approval: each waits on an undecided request of
    /// the same subagent and intent (one asked before a resume), uses a grant of it not yet
    /// used and not expired, or asks anew.
    pub(super) fn on_asks(
        &mut self,
        subagent: &str,
        asks: Vec<ApprovalAsk>,
        myself: &ActorRef<LeadMsg>,
    ) {
        let now = crate::checkpoint::now_ms();
        for ask in asks {
            let digest = intent_digest(&ask.tool, &ask.arguments);
            let standing = self.approvals.entries.iter().position(|e| {
                e.request.subagent == subagent
                    && e.request.arguments_digest == digest
                    && match &e.decision {
                        None => true,
                        Some(ApprovalDecision::Granted) => {
                            !e.consumed && e.request.expires_ms > now
                        }
                        Some(_) => false,
                    }
            });
            match standing {
                Some(index) => {
                    self.approvals.entries[index].waiting = Some(ask.call_id);
                    if self.approvals.entries[index].decision.is_some() {
                        self.deliver(index);
                    }
                }
                None => self.ask(subagent, ask, digest, now, myself),
            }
        }
    }

    /// A new request: logged, listed, handed to the approver if there is one, timed.
    fn ask(
        &mut self,
        subagent: &str,
        ask: ApprovalAsk,
        digest: String,
        now: u64,
        myself: &ActorRef<LeadMsg>,
    ) {
        let limit = self
            .config
            .limits
            .approval
            .as_millis()
            .min(u64::MAX as u128) as u64;
        let request = ApprovalRequest {
            id: format!("ap{}", self.approvals.entries.len() + 1),
            subagent: subagent.to_string(),
            call_id: ask.call_id.clone(),
            tool: ask.tool,
            arguments: ask.arguments,
            arguments_digest: digest,
            consequences: ask.consequences,
            reason: ask.reason,
            requested_ms: now,
            expires_ms: now.saturating_add(limit),
        };
        self.log(vec![RunEvent::ApprovalRequested {
            request: request.clone(),
        }]);
        self.approvals.entries.push(Entry {
            request,
            decision: None,
            consumed: false,
            waiting: Some(ask.call_id),
            timer: None,
        });
        self.watch_request(self.approvals.entries.len() - 1, myself);
    }

    /// A request that waits: listed for the handle, given to the approver, and timed to
    /// expire.
    fn watch_request(&mut self, index: usize, myself: &ActorRef<LeadMsg>) {
        let request = self.approvals.entries[index].request.clone();
        self.config
            .oversight
            .pending
            .insert(request.id.clone(), request.clone());
        if let Some(approver) = self.config.approver.clone() {
            let (lead, asked) = (myself.clone(), request.clone());
            tokio::spawn(async move {
                let approval = approver.decide(&asked).await;
                let _ = lead.cast(LeadMsg::Decide {
                    id: asked.id,
                    approval,
                    by: "approver",
                    reply: None,
                });
            });
        }
        let wait = request
            .expires_ms
            .saturating_sub(crate::checkpoint::now_ms());
        let (lead, id) = (myself.clone(), request.id);
        self.approvals.entries[index].timer = Some(tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
            let _ = lead.cast(LeadMsg::ApprovalExpired(id));
        }));
    }

    /// A decision on a request: refused when the request is unknown, decided already, or
    /// past its expiry (which it then is).
    pub(super) fn decide(
        &mut self,
        id: &str,
        approval: Approval,
        by: &str,
    ) -> Result<(), ApprovalError> {
        if self.finished {
            return Err(ApprovalError::RunEnded);
        }
        let index = self
            .approvals
            .index(id)
            .ok_or_else(|| ApprovalError::Unknown(id.to_string()))?;
        if let Some(decision) = &self.approvals.entries[index].decision {
            return Err(ApprovalError::Decided {
                id: id.to_string(),
                word: decision.word(),
            });
        }
        if self.approvals.entries[index].request.expires_ms <= crate::checkpoint::now_ms() {
            self.expire(index);
            return Err(ApprovalError::Expired(id.to_string()));
        }
        let decision = match approval {
            Approval::Grant => ApprovalDecision::Granted,
            Approval::Deny(reason) => ApprovalDecision::Denied { reason },
        };
        self.settle(index, decision, by);
        Ok(())
    }

    /// A request reached its expiry: undecided, it expires.
    pub(super) fn on_expired(&mut self, id: &str) {
        if let Some(index) = self.approvals.index(id) {
            if self.approvals.entries[index].decision.is_none() {
                self.expire(index);
            }
        }
    }

    fn expire(&mut self, index: usize) {
        self.settle(index, ApprovalDecision::Expired, "run");
    }

    /// The requests of a subagent that ended (or of every subagent, with `None`: the run
    /// ends) still undecided are withdrawn: no call will use them.
    pub(super) fn withdraw(&mut self, subagent: Option<&str>, reason: &str) {
        for index in 0..self.approvals.entries.len() {
            let entry = &self.approvals.entries[index];
            if entry.decision.is_none() && subagent.is_none_or(|s| s == entry.request.subagent) {
                self.settle(
                    index,
                    ApprovalDecision::Withdrawn {
                        reason: reason.to_string(),
                    },
                    "run",
                );
            }
        }
    }

    /// Logs a decision, takes the request off the list, and tells the call waiting on it.
    fn settle(&mut self, index: usize, decision: ApprovalDecision, by: &str) {
        let entry = &mut self.approvals.entries[index];
        if let Some(timer) = entry.timer.take() {
            timer.abort();
        }
        entry.decision = Some(decision.clone());
        let id = entry.request.id.clone();
        self.config.oversight.pending.remove(&id);
        self.log(vec![RunEvent::ApprovalDecided {
            approval_id: id,
            decision,
            by: by.to_string(),
        }]);
        self.deliver(index);
    }

    /// Tells the call waiting on a decided request what was decided: a grant not yet used
    /// is used by it (logged, its effect executing).
    fn deliver(&mut self, index: usize) {
        let entry = &mut self.approvals.entries[index];
        let (Some(call_id), Some(decision)) = (entry.waiting.take(), entry.decision.clone()) else {
            return;
        };
        let (approval_id, subagent) = (entry.request.id.clone(), entry.request.subagent.clone());
        let decision = match decision {
            ApprovalDecision::Granted if entry.consumed => ApprovalDecision::Withdrawn {
                reason: "the grant was used already".into(),
            },
            other => other,
        };
        if decision == ApprovalDecision::Granted {
            entry.consumed = true;
            let intent = self
                .contexts
                .projector
                .intent_of(&call_id)
                .unwrap_or(&call_id)
                .to_string();
            self.log(vec![
                RunEvent::ApprovalConsumed {
                    approval_id: approval_id.clone(),
                    subagent: subagent.clone(),
                    call_id: call_id.clone(),
                },
                RunEvent::EffectChanged {
                    call_id: intent,
                    from: EffectState::AwaitingApproval,
                    to: EffectState::Executing,
                    evidence: Some(format!("approval {approval_id}")),
                    note: "approved by the application".into(),
                },
            ]);
        }
        let actor = self
            .index_of(&subagent)
            .and_then(|i| self.fleet.records[i].actor.clone());
        if let Some(actor) = actor {
            let _ = actor.cast(SubagentMsg::ApprovalDecided {
                call_id,
                decided: Decided {
                    approval_id,
                    decision,
                },
            });
        }
    }
}
