//! The run's requests for approval: asked for by a subagent's call, decided by the
//! application (through the run's handle or the builder's approver), expired, or withdrawn
//! when no call can use them any more; every step logged, a grant consumed once, a grant past
//! its expiry never used. A request is settled once, in a map the run shares with its handle,
//! so a decision never waits for the lead (which may be waiting for a slow reader of the
//! run's events); the lead then logs it and tells the call. Rebuilt from the log on resume, so
//! a run killed while waiting waits on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use ractor::ActorRef;

use super::{LeadMsg, LeadState};
use crate::checkpoint::{EffectState, LoggedEvent, RunEvent};
use crate::policy::{
    intent_digest, Approval, ApprovalDecision, ApprovalError, ApprovalRequest, UnknownOutcomes,
};
use crate::subagent::{ApprovalAsk, Decided, SubagentMsg};

/// A request as the run and its handle share it: the first decision taken stands.
#[derive(Clone)]
struct Shared {
    request: ApprovalRequest,
    decided: Option<(ApprovalDecision, &'static str)>,
}

/// What a run shares with its handle and its subagents: its requests for approval and where
/// each stands, and the intents whose outcome is unknown (checked by subagents).
#[derive(Clone, Default)]
pub(crate) struct Oversight {
    requests: Arc<DashMap<String, Shared>>,
    pub(crate) unknown: UnknownOutcomes,
    /// Set once the run has ended: nothing more is decided.
    ended: Arc<AtomicBool>,
}

impl Oversight {
    /// The requests waiting now, oldest first.
    pub(crate) fn pending(&self) -> Vec<ApprovalRequest> {
        let mut out: Vec<ApprovalRequest> = self
            .requests
            .iter()
            .filter(|e| e.value().decided.is_none())
            .map(|e| e.value().request.clone())
            .collect();
        out.sort_by_key(|r| (r.requested_ms, number(&r.id)));
        out
    }

    /// Settles a request, once: the first decision taken stands and a later one is refused; a
    /// grant or a denial that comes at or past the request's expiry settles it as expired, and
    /// is refused.
    pub(crate) fn settle(
        &self,
        id: &str,
        decision: ApprovalDecision,
        by: &'static str,
        now: u64,
    ) -> Result<(), ApprovalError> {
        if self.ended.load(Ordering::Acquire) {
            return Err(ApprovalError::RunEnded);
        }
        let mut entry = self
            .requests
            .get_mut(id)
            .ok_or_else(|| ApprovalError::Unknown(id.to_string()))?;
        if let Some((decided, _)) = &entry.decided {
            return Err(ApprovalError::Decided {
                id: id.to_string(),
                word: decided.word(),
            });
        }
        let from_outside = matches!(
            decision,
            ApprovalDecision::Granted | ApprovalDecision::Denied { .. }
        );
        if from_outside && entry.request.expires_ms <= now {
            entry.decided = Some((ApprovalDecision::Expired, "run"));
            return Err(ApprovalError::Expired(id.to_string()));
        }
        entry.decided = Some((decision, by));
        Ok(())
    }

    /// The application's decision on a request (`by`: who decided).
    pub(crate) fn decide(
        &self,
        id: &str,
        approval: Approval,
        by: &'static str,
    ) -> Result<(), ApprovalError> {
        let decision = match approval {
            Approval::Grant => ApprovalDecision::Granted,
            Approval::Deny(reason) => ApprovalDecision::Denied { reason },
        };
        self.settle(id, decision, by, crate::checkpoint::now_ms())
    }

    fn decided(&self, id: &str) -> Option<(ApprovalDecision, &'static str)> {
        self.requests.get(id).and_then(|e| e.decided.clone())
    }

    fn insert(&self, request: ApprovalRequest, decided: Option<ApprovalDecision>) {
        self.requests.insert(
            request.id.clone(),
            Shared {
                request,
                decided: decided.map(|d| (d, "run")),
            },
        );
    }

    /// The run has ended: nothing more is decided.
    pub(super) fn end(&self) {
        self.ended.store(true, Ordering::Release);
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

impl Entry {
    /// Whether a call of `subagent` with this intent (`digest`) may wait on this request
    /// rather than ask anew: it is undecided, or granted and neither used nor expired — and,
    /// when the call repeats an unknown outcome (`repeats_unknown`), it was asked for that: a
    /// request asked for another reason does not cover the repeat.
    fn stands_for(&self, subagent: &str, digest: &str, repeats_unknown: bool, now: u64) -> bool {
        let request = &self.request;
        request.subagent == subagent
            && request.arguments_digest == digest
            && (request.repeats_unknown || !repeats_unknown)
            && match &self.decision {
                None => true,
                Some(ApprovalDecision::Granted) => !self.consumed && request.expires_ms > now,
                Some(_) => false,
            }
    }
}

/// The run's requests, in the order they were asked.
#[derive(Default)]
pub(super) struct Book {
    entries: Vec<Entry>,
    /// Each subagent's calls with effects that started and have not returned.
    running: std::collections::HashMap<String, Vec<String>>,
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

    /// Puts every request, as the log has it, in the map the run shares with its handle.
    pub(super) fn share(&self, oversight: &Oversight) {
        for entry in &self.entries {
            oversight.insert(entry.request.clone(), entry.decision.clone());
        }
    }
}

impl LeadState {
    /// On a resume: the requests still undecided wait on — listed by the handle, decided by
    /// the approver if there is one, expiring when they were to (at once, if that has passed).
    pub(super) fn resume_approvals(&mut self, myself: &ActorRef<LeadMsg>) {
        let now = crate::checkpoint::now_ms();
        for index in 0..self.approvals.entries.len() {
            let entry = &self.approvals.entries[index];
            if entry.decision.is_some() {
                continue;
            }
            let id = entry.request.id.clone();
            if self.config.oversight.decided(&id).is_some() {
                // Decided through the handle since the run was resumed.
                self.sync(&id);
            } else if entry.request.expires_ms <= now {
                let _ = self
                    .config
                    .oversight
                    .settle(&id, ApprovalDecision::Expired, "run", now);
                self.sync(&id);
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
            // A request no call waits on: one asked before a resume (a call of this batch
            // with the same arguments asks for its own).
            let standing = self.approvals.entries.iter().position(|e| {
                e.waiting.is_none() && e.stands_for(subagent, &digest, ask.names_unknown, now)
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
            repeats_unknown: ask.names_unknown,
        };
        self.log(vec![RunEvent::ApprovalRequested {
            request: request.clone(),
        }]);
        self.config.oversight.insert(request.clone(), None);
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
        if let Some(approver) = self.config.approver.clone() {
            let (lead, oversight, asked) = (
                myself.clone(),
                self.config.oversight.clone(),
                request.clone(),
            );
            tokio::spawn(async move {
                let approval = approver.decide(&asked).await;
                // A decision refused (taken already, expired) leaves the one that stands.
                let _ = oversight.decide(&asked.id, approval, "approver");
                let _ = lead.cast(LeadMsg::ApprovalSettled(asked.id));
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

    /// A request reached its expiry: undecided, it expires.
    pub(super) fn on_expired(&mut self, id: &str) {
        let now = crate::checkpoint::now_ms();
        let _ = self
            .config
            .oversight
            .settle(id, ApprovalDecision::Expired, "run", now);
        self.sync(id);
    }

    /// The requests of a subagent that ended (or of every subagent, with `None`: the run
    /// ends) still undecided are withdrawn: no call will use them. A decision taken meanwhile
    /// outside the lead stands instead.
    pub(super) fn withdraw(&mut self, subagent: Option<&str>, reason: &str) {
        let now = crate::checkpoint::now_ms();
        for index in 0..self.approvals.entries.len() {
            let entry = &self.approvals.entries[index];
            if entry.decision.is_none() && subagent.is_none_or(|s| s == entry.request.subagent) {
                let id = entry.request.id.clone();
                let withdrawn = ApprovalDecision::Withdrawn {
                    reason: reason.to_string(),
                };
                let _ = self.config.oversight.settle(&id, withdrawn, "run", now);
                self.sync(&id);
            }
        }
        if let Some(subagent) = subagent {
            self.stop_awaiting(subagent);
            self.cut_off_running(subagent);
        } else {
            self.config.oversight.end();
        }
    }

    /// A request was settled in the shared map (by the handle, the approver, its expiry, a
    /// withdrawal): the lead logs the decision that stands, once, takes the request off its
    /// timer, and tells the call waiting on it. A resumed run that has not started yet logs
    /// nothing before `run_resumed`: its start picks the decision up.
    pub(super) fn sync(&mut self, id: &str) {
        if self.resume.is_some() {
            return;
        }
        let Some(index) = self.approvals.index(id) else {
            return;
        };
        if self.approvals.entries[index].decision.is_some() {
            return;
        }
        let Some((decision, by)) = self.config.oversight.decided(id) else {
            return;
        };
        let entry = &mut self.approvals.entries[index];
        if let Some(timer) = entry.timer.take() {
            timer.abort();
        }
        entry.decision = Some(decision.clone());
        self.log(vec![RunEvent::ApprovalDecided {
            approval_id: id.to_string(),
            decision,
            by: by.to_string(),
        }]);
        self.deliver(index);
    }

    /// Tells the call waiting on a decided request what was decided: a grant not yet used
    /// is kept for it (logged as used when the call starts).
    fn deliver(&mut self, index: usize) {
        let entry = &mut self.approvals.entries[index];
        let (Some(call_id), Some(decision)) = (entry.waiting.take(), entry.decision.clone()) else {
            return;
        };
        let (approval_id, subagent, expires_ms, covers_unknown) = (
            entry.request.id.clone(),
            entry.request.subagent.clone(),
            entry.request.expires_ms,
            entry.request.repeats_unknown,
        );
        let decision = match decision {
            ApprovalDecision::Granted if entry.consumed => ApprovalDecision::Withdrawn {
                reason: "the grant was used already".into(),
            },
            other => other,
        };
        let actor = self
            .index_of(&subagent)
            .and_then(|i| self.fleet.records[i].actor.clone());
        let Some(actor) = actor else { return };
        if decision == ApprovalDecision::Granted {
            self.approvals.entries[index].consumed = true;
        }
        let _ = actor.cast(SubagentMsg::ApprovalDecided {
            call_id,
            decided: Decided {
                approval_id,
                decision,
                expires_ms,
                covers_unknown,
            },
        });
    }

    /// A granted call starts: its grant is used (logged once), its effect executing. False
    /// for a grant this run did not give this subagent: the call is not made.
    pub(super) fn grant_used(&mut self, subagent: &str, call_id: &str, approval_id: &str) -> bool {
        let Some(index) = self.approvals.index(approval_id) else {
            return false;
        };
        if self.approvals.entries[index].request.subagent != subagent {
            return false;
        }
        let intent = self
            .contexts
            .projector
            .intent_of(call_id)
            .unwrap_or(call_id)
            .to_string();
        self.log(vec![
            RunEvent::ApprovalConsumed {
                approval_id: approval_id.to_string(),
                subagent: subagent.to_string(),
                call_id: call_id.to_string(),
            },
            RunEvent::EffectChanged {
                call_id: intent,
                from: EffectState::AwaitingApproval,
                to: EffectState::Executing,
                evidence: Some(format!("approval {approval_id}")),
                note: "approved by the application".into(),
            },
        ]);
        true
    }

    /// Calls with effects of `subagent` start, or return (`returned`).
    pub(super) fn track_running(&mut self, subagent: &str, calls: Vec<String>, returned: bool) {
        if returned {
            if let Some(running) = self.approvals.running.get_mut(subagent) {
                running.retain(|c| !calls.contains(c));
            }
        } else if !calls.is_empty() {
            let running = self.approvals.running.entry(subagent.to_string());
            running.or_default().extend(calls);
        }
    }

    /// The calls with effects an ending subagent started and that never returned (it was
    /// stopped, or failed, while they ran) may have taken effect: their outcome is unknown,
    /// and no call repeats their intent without the application's say.
    fn cut_off_running(&mut self, subagent: &str) {
        let Some(running) = self.approvals.running.remove(subagent) else {
            return;
        };
        let mut events = Vec::new();
        for call in running {
            let Some(e) = self.contexts.projector.effect_of(&call) else {
                continue;
            };
            // A read-only call may run again: only effects are unknown.
            if e.state != EffectState::Executing
                || e.subagent != subagent
                || self.config.tools.read_only(&e.tool)
            {
                continue;
            }
            if !e.intent.is_empty() {
                let unknown = &self.config.oversight.unknown;
                unknown.insert(e.intent.clone(), e.intent_id.clone());
            }
            events.push(RunEvent::EffectChanged {
                call_id: e.intent_id.clone(),
                from: EffectState::Executing,
                to: EffectState::OutcomeUnknown,
                evidence: None,
                note: "its subagent ended while it ran".into(),
            });
        }
        if !events.is_empty() {
            self.log(events);
        }
    }

    /// The calls of an ending subagent still awaiting approval will not be made: their effects
    /// are stopped.
    fn stop_awaiting(&mut self, subagent: &str) {
        // Only a call that asked for approval awaits it.
        if !self
            .approvals
            .entries
            .iter()
            .any(|e| e.request.subagent == subagent)
        {
            return;
        }
        let events: Vec<RunEvent> = self
            .contexts
            .projector
            .checkpoint()
            .effects
            .iter()
            .filter(|e| e.subagent == subagent && e.state == EffectState::AwaitingApproval)
            .map(|e| RunEvent::EffectChanged {
                call_id: e.intent_id.clone(),
                from: EffectState::AwaitingApproval,
                to: EffectState::Stopped,
                evidence: None,
                note: "not made: its subagent ended".into(),
            })
            .collect();
        if !events.is_empty() {
            self.log(events);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(repeats_unknown: bool, decision: Option<ApprovalDecision>, consumed: bool) -> Entry {
        Entry {
            request: ApprovalRequest {
                id: "ap1".into(),
                subagent: "sa1".into(),
                call_id: "sa1.1".into(),
                tool: "charge".into(),
                arguments: serde_json::json!({"order": "A-1"}),
                arguments_digest: "d1".into(),
                consequences: vec![],
                reason: "the tool `charge` asks for approval of this call".into(),
                requested_ms: 1_000,
                expires_ms: 2_000,
                repeats_unknown,
            },
            decision,
            consumed,
            waiting: None,
            timer: None,
        }
    }

    /// A call waits on a standing request of its subagent and intent — undecided, or granted
    /// and unused and unexpired — unless it repeats an unknown outcome and the request was
    /// asked for another reason (a resumed run's restarted call, say).
    #[test]
    fn a_request_stands_for_a_call_only_for_what_it_was_asked() {
        let undecided = entry(false, None, false);
        assert!(undecided.stands_for("sa1", "d1", false, 1_500));
        assert!(
            !undecided.stands_for("sa2", "d1", false, 1_500),
            "another subagent"
        );
        assert!(
            !undecided.stands_for("sa1", "d2", false, 1_500),
            "another intent"
        );
        assert!(
            !undecided.stands_for("sa1", "d1", true, 1_500),
            "asked for another reason: no cover for an unknown outcome"
        );
        assert!(entry(true, None, false).stands_for("sa1", "d1", true, 1_500));
        let granted = Some(ApprovalDecision::Granted);
        assert!(entry(false, granted.clone(), false).stands_for("sa1", "d1", false, 1_500));
        assert!(!entry(false, granted.clone(), true).stands_for("sa1", "d1", false, 1_500));
        assert!(!entry(false, granted, false).stands_for("sa1", "d1", false, 2_000));
        let denied = Some(ApprovalDecision::Denied {
            reason: "no".into(),
        });
        assert!(!entry(false, denied, false).stands_for("sa1", "d1", false, 1_500));
    }
}
