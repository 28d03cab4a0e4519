//! What the lead hands back: the report from its records, and the file work it does off the
//! actor — planning the shards, digesting the evidence an accepted handoff cites.

use std::collections::BTreeMap;

use ractor::ActorRef;

use super::{journal, merge, plan, plan::Shard, LeadMsg, LeadState};
use crate::checkpoint::{Projector, RunEvent, StoreError};
use crate::context::ContextIndex;
use crate::contracts::RoleId;
use crate::handoff::{Files, Handoff, HardConstraint, OpenItem};
use crate::policy::Policy;
use crate::report::{
    ConstraintReport, HandoffCounts, ModelUsage, Report, ReportedConstraint, RunUsage,
    SubagentState,
};
use crate::source::{ObservationLog, SourceId};
use crate::tools::Workspace;

/// What "the whole tree" is when the plan's walk left entries out: said with them, so an
/// absence is never claimed of what no search covered.
fn with_unsearched(whole: String, not_searched: &(usize, Vec<String>)) -> String {
    let (count, names) = not_searched;
    if *count == 0 {
        return whole;
    }
    let shown: Vec<String> = names
        .iter()
        .take(5)
        .map(|n| crate::source::quote_path(n).into_owned())
        .collect();
    format!(
        "{whole}, but not its {count} hidden or ignored entries or links ({}{}), which were not searched",
        shown.join(", "),
        if *count > shown.len() { ", …" } else { "" }
    )
}

/// The codes of a handoff's violations with their counts (`2× quote_not_found`); none when
/// there are none.
fn violation_codes(violations: &[crate::handoff::Violation]) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for v in violations {
        *counts.entry(v.code.as_str()).or_default() += 1;
    }
    (!counts.is_empty()).then(|| {
        counts
            .iter()
            .map(|(code, n)| {
                if *n > 1 {
                    format!("{n}× {code}")
                } else {
                    code.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    })
}

impl LeadState {
    pub(super) fn finish_if_done(&mut self, myself: &ActorRef<LeadMsg>) {
        let done = !self.finished
            && (self.fleet.planned || self.fleet.planning_error.is_some())
            && self.fleet.queue.is_empty()
            && self.running() == 0;
        if !done || self.lead.synthesising || self.lead.following {
            return;
        }
        if self.wants_synthesis() {
            self.synthesise(myself);
            return;
        }
        // Nothing can use a request still waiting: it is withdrawn, and no more is decided.
        self.withdraw(None, "the run ended");
        let report = self.report();
        self.log(vec![RunEvent::RunFinished {
            cancelled: self.cancelled,
        }]);
        // The final checkpoint is the projector's own, taken rather than copied: nothing
        // compiles a context after the report, so the index goes too.
        self.contexts.index = ContextIndex::default();
        if self.journal.acks.is_some() {
            let projector = std::mem::replace(
                &mut self.contexts.projector,
                Projector::new(&self.config.run_id),
            );
            self.watch(journal::Logged::Checkpoint(Box::new(
                projector.into_checkpoint(),
            )));
        }
        let reply = self.outside.reply.take();
        // What this message handed over goes first; then dropping the sender lets the watcher
        // end once it has checked every acknowledgement.
        let acks = (
            self.journal.acks.take(),
            std::mem::take(&mut self.journal.pending),
        );
        let acked = self.journal.acked.take();
        let failed = self.journal.log_failed.clone();
        let me = myself.clone();
        // The report goes out only once every event is durable and the final checkpoint built;
        // if any append failed, the error goes out instead.
        tokio::spawn(async move {
            let mut stopped = false;
            if let (Some(sender), pending) = acks {
                for item in pending {
                    stopped |= sender.send(item).await.is_err();
                }
            }
            let outcome = async {
                if stopped {
                    return Err(StoreError::Write(
                        "the acknowledgement watcher stopped".to_string(),
                    ));
                }
                if let Some(e) = failed {
                    return Err(e);
                }
                if let Some(acked) = acked {
                    acked.await.map_err(|e| {
                        StoreError::Write(format!("the acknowledgement watcher failed: {e}"))
                    })??;
                }
                Ok(report)
            };
            let outcome = outcome.await;
            if let Some(reply) = reply {
                let _ = reply.send(outcome);
            }
            me.stop(None);
        });
        self.finished = true;
    }

    pub(super) fn report(&self) -> Report {
        let accepted = self.accepted_handoffs();
        let unexplored = self.unexplored();
        let whole = with_unsearched(scope_label(&self.policy), &self.fleet.not_searched);
        let merged =
            merge::merge_ranked(&accepted, &unexplored, &whole, self.contexts.files.as_ref());
        // The report's answers serve the waves' summary when no verifier's handoff is in them.
        let verified = accepted.iter().any(|a| a.verifier);
        let answers: Option<Vec<crate::handoff::Conclusion>> = (!verified).then(|| {
            merged
                .handoff
                .settled_conclusions
                .iter()
                .filter(|c| c.kind == crate::handoff::ConclusionKind::Finding)
                .cloned()
                .collect()
        });
        let mut handoff = merged.handoff;
        let mut rank_reasons = merged.reasons;
        let mut also_found = merged.also_found;
        match &self.lead.synthesis {
            Some(Ok(lead)) => {
                handoff = with_lead(lead, handoff);
                // The lead model's conclusions stand in place of the ranking's.
                rank_reasons.clear();
                also_found.clear();
            }
            Some(Err(why)) => handoff.open_items.push(OpenItem {
                item:
                    "The lead model's report was not used: the accepted handoffs are merged instead"
                        .into(),
                stuck_on: why.clone(),
            }),
            None => {}
        }
        let checkpoint = self.contexts.projector.checkpoint();
        withdraw_from_report(checkpoint, &mut handoff, &mut rank_reasons, &mut also_found);
        let (constraints, reported) = self.hard_constraints(&accepted, &mut handoff);
        self.run_open_items(&mut handoff, &whole);
        let (models, usage) = self.usage();
        Report {
            run_id: self.config.run_id.clone(),
            question: self.config.question.clone(),
            root: self.config.shown_root(),
            handoff,
            subagents: self
                .fleet
                .records
                .iter()
                .map(|r| {
                    let mut summary = r.summary.clone();
                    summary.denials = checkpoint
                        .denials
                        .iter()
                        .filter(|d| d.subagent == summary.id)
                        .count() as u32;
                    summary
                })
                .collect(),
            usage,
            handoffs: HandoffCounts::of(
                &self
                    .fleet
                    .records
                    .iter()
                    .map(|r| r.summary.state)
                    .collect::<Vec<_>>(),
            ),
            model: self.config.model.name(),
            cancelled: self.cancelled,
            elapsed_ms: self.outside.started.elapsed().as_millis() as u64,
            constraints,
            denials: checkpoint.denials.clone(),
            models,
            reported_constraints: reported,
            rank_reasons,
            also_found: also_found
                .into_iter()
                .map(|(c, rank_reason)| crate::report::AlsoFound {
                    claim: c.claim,
                    sources: c.sources,
                    rank_reason,
                })
                .collect(),
            waves: self.wave_summaries(answers.as_deref()),
            stopped_because: match (&self.fleet.stopped_because, self.cancelled) {
                (Some(why), _) => why.clone(),
                (None, true) => "the run was cancelled".into(),
                (None, false) => String::new(),
            },
        }
    }

    /// The accepted handoffs, as the merge takes them.
    pub(super) fn accepted_handoffs(&self) -> Vec<merge::Accepted<'_>> {
        self.fleet
            .records
            .iter()
            .filter_map(|r| {
                Some(merge::Accepted {
                    handoff: r.handoff.as_ref()?,
                    scope: &r.shard.paths,
                    searches: &r.searches,
                    verifier: r.shard.role == RoleId::VERIFIER,
                    doubted: r.doubted(),
                    id: &r.summary.id,
                    dropped: &r.dropped,
                    wave: self.wave_of(&r.summary.id),
                })
            })
            .collect()
    }

    /// What no accepted handoff covers: the subagents that did not hand off an accepted one,
    /// and the directories planning could not walk.
    fn unexplored(&self) -> Vec<merge::Unexplored<'_>> {
        let mut unexplored: Vec<merge::Unexplored<'_>> = self
            .fleet
            .records
            .iter()
            .filter(|r| !r.summary.state.accepted())
            .map(|r| merge::Unexplored {
                id: r.summary.id.clone(),
                role: r.shard.role.clone(),
                scope: r.summary.scope.clone(),
                why: match (&r.summary.error, r.summary.state) {
                    (Some(e), _) => e.clone(),
                    (None, state) => format!("the subagent ended {}", state.label()),
                },
                rejected: violation_codes(&r.summary.violations)
                    .filter(|_| r.summary.state == SubagentState::Rejected),
                unverified: r.unverified.as_ref(),
            })
            .collect();
        // Directories planning could not walk: no subagent had them, so nothing is absent
        // from "the whole tree".
        unexplored.extend(self.fleet.left_out.iter().map(|dir| {
            merge::Unexplored {
                id: "none".into(),
                role: RoleId::EXPLORER,
                scope: dir.clone(),
                why:
                    "its ignore file is not a regular file (or is over 1 MiB), so it was not walked"
                        .into(),
                rejected: None,
                unverified: None,
            }
        }));
        unexplored
    }

    /// The report's Hard constraints: the run's own constraints first, each with whether the
    /// gate enforces it; then what the models reported, apart and marked.
    fn hard_constraints(
        &self,
        accepted: &[merge::Accepted<'_>],
        handoff: &mut Handoff,
    ) -> (Vec<ConstraintReport>, Vec<ReportedConstraint>) {
        let checkpoint = self.contexts.projector.checkpoint();
        let constraints: Vec<ConstraintReport> = checkpoint
            .constraints
            .iter()
            .map(ConstraintReport::of)
            .collect();
        let stated: Vec<HardConstraint> = constraints
            .iter()
            .zip(&checkpoint.constraints)
            .map(|(c, entry)| HardConstraint {
                constraint: c.line(),
                sources: vec![SourceId::Event(entry.event.to_string())],
            })
            .collect();
        // Then what the models reported, apart and marked: data, never a rule. One that only
        // echoes a run's constraint is not listed twice.
        let lead = match &self.lead.synthesis {
            Some(Ok(lead)) => Some(("lead", lead)),
            _ => None,
        };
        let mut reported =
            merge::reported_constraints(accepted.iter().map(|a| (a.id, a.handoff)).chain(lead));
        reported.retain(|r| {
            let text = crate::text::normalise(&r.text);
            !checkpoint.constraints.iter().any(|c| c.normalised == text)
        });
        handoff.hard_constraints = stated;
        handoff
            .hard_constraints
            .extend(reported.iter().map(|r| HardConstraint {
                constraint: r.line(),
                sources: r.sources.clone(),
            }));
        (constraints, reported)
    }

    /// What the run itself leaves open: a tree it could not plan, a verifier it could not
    /// spawn, a tree with nothing to explore.
    fn run_open_items(&self, handoff: &mut Handoff, whole: &str) {
        if let Some(error) = &self.fleet.planning_error {
            handoff.open_items.push(OpenItem {
                item: "The tree could not be planned".into(),
                stuck_on: error.clone(),
            });
        } else if let Some(why) = &self.fleet.verifier_skipped {
            handoff.open_items.push(OpenItem {
                item: if self
                    .fleet
                    .records
                    .iter()
                    .any(|r| r.handoff.as_ref().is_some_and(Handoff::rests_on_passages))
                {
                    "The conclusions resting on corpus passages (and those of handoffs that passed only after a repair) were not re-verified".into()
                } else {
                    "The conclusions of handoffs that passed only after a repair were not re-verified".into()
                },
                stuck_on: why.clone(),
            });
        } else if self.fleet.records.is_empty() {
            handoff.open_items.push(OpenItem {
                item: "Nothing was explored".into(),
                stuck_on: if whole == merge::WHOLE_TREE {
                    "the root holds no readable, non-ignored file".into()
                } else {
                    format!("{whole} holds no readable, non-ignored file")
                },
            });
        }
    }

    /// Each model's usage, and the run's.
    fn usage(&self) -> (Vec<ModelUsage>, RunUsage) {
        // The run's model plays every role without one of its own; each of those is apart.
        let own =
            |r: &&super::parts::SubagentRecord| self.config.role_models.contains_key(&r.shard.role);
        let mut models = vec![ModelUsage::of(
            "subagents",
            self.config.model.name(),
            self.fleet
                .records
                .iter()
                .filter(|r| !own(r))
                .map(|r| &r.spent),
            self.config.model.price().is_some(),
        )];
        for (role, model) in &self.config.role_models {
            models.push(ModelUsage::of(
                role.as_str(),
                model.name(),
                self.fleet
                    .records
                    .iter()
                    .filter(|r| r.shard.role == *role)
                    .map(|r| &r.spent),
                model.price().is_some(),
            ));
        }
        // The lead's model, or on a resume without one, the turns the log holds of it.
        let lead = match &self.config.lead_model {
            Some(lead) => Some((lead.name(), lead.price().is_some())),
            None if !self.lead.lead_turns.is_empty() => Some((
                self.lead
                    .earlier_lead
                    .clone()
                    .unwrap_or_else(|| "lead".into()),
                self.lead
                    .lead_turns
                    .iter()
                    .any(|(_, t)| t.spent.cost_micros > 0),
            )),
            None => None,
        };
        if let Some((name, priced)) = lead {
            models.push(ModelUsage::of(
                "lead",
                name,
                self.lead.lead_turns.iter().map(|(_, t)| &t.spent),
                priced,
            ));
        }
        let mut usage = RunUsage {
            tool_calls: self
                .fleet
                .records
                .iter()
                .map(|r| u64::from(r.summary.tool_calls))
                .sum(),
            max_cost_usd: self.config.cost.limit().map(crate::model::price::dollars),
            ..RunUsage::default()
        };
        for m in &models {
            usage.model_calls = usage.model_calls.saturating_add(m.model_calls);
            usage.tokens_in = usage.tokens_in.saturating_add(m.tokens_in);
            usage.tokens_out = usage.tokens_out.saturating_add(m.tokens_out);
            usage.cache_read_tokens = usage.cache_read_tokens.saturating_add(m.cache_read_tokens);
            usage.cache_write_tokens = usage
                .cache_write_tokens
                .saturating_add(m.cache_write_tokens);
            if let Some(c) = m.cost_usd {
                usage.cost_usd = Some(usage.cost_usd.unwrap_or(0.0) + c);
            }
        }
        (models, usage)
    }
}

/// The run's handoff with the lead model's: its settled conclusions (checked by the contract)
/// replace the merged ones; open items keep the merged ones — what was not explored — and add
/// the lead's that are new (its hard constraints are listed with the others reported).
fn with_lead(lead: &Handoff, merged: Handoff) -> Handoff {
    let mut out = Handoff {
        settled_conclusions: lead.settled_conclusions.clone(),
        open_items: merged.open_items,
        hard_constraints: merged.hard_constraints,
    };
    for item in &lead.open_items {
        if !out.open_items.iter().any(|o| o.item == item.item) {
            out.open_items.push(item.clone());
        }
    }
    out
}

/// What the shards covered, as negative evidence names it: the whole tree, or the read scope
/// the constraints leave ("`src` only, as constrained").
pub(super) fn scope_label(policy: &Policy) -> String {
    let quoted = |v: Vec<String>| {
        v.iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let except = policy.read_exclusions();
    match (policy.read_places(), except.is_empty()) {
        (None, true) => merge::WHOLE_TREE.to_string(),
        (None, false) => format!("the whole tree except {}, as constrained", quoted(except)),
        (Some(roots), true) => format!("{} only, as constrained", quoted(roots)),
        (Some(roots), false) => format!(
            "{} only, except {}, as constrained",
            quoted(roots),
            quoted(except)
        ),
    }
}

/// SHA-256 of the text of every file range an accepted handoff cites, by source id — a file
/// range's lines, or what a cited call (`call:ID`) showed of each file it read, as the files
/// read now. A source whose file no longer reads has no digest (so, on resume, it is stale).
pub(super) fn evidence_digests(
    handoff: &Handoff,
    files: &dyn Files,
    observations: &ObservationLog,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for source in handoff
        .settled_conclusions
        .iter()
        .flat_map(|c| c.sources.iter())
    {
        let text = match source {
            SourceId::File { path, lines } => files.text(path).ok().map(|text| {
                let (a, b) = lines.unwrap_or((1, text.line_count() as u32));
                text.lines(a, b).to_string()
            }),
            SourceId::Record { kind, id } if kind == "call" => shown_text(observations, id, files),
            // A record's, a URL's or a document's digest is the one its tool gave for the text
            // it showed.
            SourceId::Record { .. } | SourceId::Url(_) | SourceId::Doc { .. } => {
                if let Some(digest) = observations.digest_of(source) {
                    out.insert(source.to_string(), digest.to_string());
                }
                continue;
            }
            _ => continue,
        };
        if let Some(text) = text {
            out.insert(
                source.to_string(),
                crate::digest::sha256_hex(text.as_bytes()),
            );
        }
    }
    out
}

/// What a call showed of the files it read, each file's path and shown lines in turn; None
/// when it showed no file's lines (a listing, an empty search) or a file no longer reads.
fn shown_text(observations: &ObservationLog, call: &str, files: &dyn Files) -> Option<String> {
    let shown = observations.shown_by_call(call);
    if shown.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (path, lines) in shown {
        let text = files.text(&path).ok()?;
        out.push_str(&path);
        out.push('\n');
        for (a, b) in &lines.spans {
            out.push_str(text.lines(*a, *b));
        }
        for (line, chars) in &lines.parts {
            out.extend(text.lines(*line, *line).chars().take(*chars as usize));
        }
    }
    Some(out)
}

/// A run's plan: its shards, and the directories the walk had to leave out.
pub(crate) struct Planned {
    pub(crate) shards: Vec<Shard>,
    pub(crate) left_out: Vec<String>,
    /// What the walk left out of the tree — hidden and ignored entries, links — top-most.
    pub(crate) not_searched: Vec<String>,
    /// How the shards were made, for the log.
    pub(crate) reason: String,
    /// Every file planned, with its size (what a lead model is shown).
    pub(crate) files: Vec<(String, u64)>,
    /// The lead model's planning turn, when it planned.
    pub(crate) lead: Option<super::leader::LeadTurn>,
    /// Whether a tree was walked (a job with no workspace has none).
    pub(crate) walked: bool,
}

/// A task's plan, off the actor: exploring, the tree walked and sharded among explorers (when
/// the task fans them out); then one subtask over the whole of what may be read for each other
/// role it fans out, and its own subtasks — at most `max_subagents` in all. `limits`: agents,
/// max subagents, shards asked for.
pub(super) fn plan_task(
    workspace: Option<&Workspace>,
    task: &crate::checkpoint::TaskSpec,
    question: &str,
    roots: Option<&[String]>,
    (agents, max_subagents, shards): (usize, usize, Option<usize>),
) -> Result<Planned, String> {
    // The task's other roles and its own subtasks have their places first: the explorers
    // share what is left of --max-subagents.
    let explorers = max_subagents.saturating_sub(task.others()).max(1);
    let mut planned = match workspace {
        Some(workspace) => plan_run(workspace, roots, agents, explorers, shards)?,
        None => Planned {
            shards: Vec::new(),
            left_out: Vec::new(),
            not_searched: Vec::new(),
            reason: String::new(),
            files: Vec::new(),
            lead: None,
            walked: false,
        },
    };
    let whole: Vec<String> = match workspace {
        Some(_) => roots.map_or_else(|| vec![".".to_string()], <[String]>::to_vec),
        None => Vec::new(),
    };
    let (shards, reason) = plan::task_shards(
        task,
        question,
        std::mem::take(&mut planned.shards),
        &whole,
        max_subagents,
    );
    planned.shards = shards;
    let explorers = task.is_plain() || task.roles.contains(&RoleId::EXPLORER);
    planned.reason = match (explorers && workspace.is_some(), reason.is_empty()) {
        (_, true) => planned.reason,
        (true, false) => format!("{}; {reason}", planned.reason),
        (false, false) => reason,
    };
    Ok(planned)
}

/// Why the deterministic plan is what it is.
pub(crate) const SHARDED: &str = "sharded the tree by directory, balanced by size";

/// The run's planning, off the actor: every non-ignored file with its size, then shards.
/// `roots`: where the constraints let reading go (none: the whole tree); a root that does not
/// exist plans nothing.
pub(super) fn plan_run(
    workspace: &Workspace,
    roots: Option<&[String]>,
    agents: usize,
    max_subagents: usize,
    shards: Option<usize>,
) -> Result<Planned, String> {
    let whole = [".".to_string()];
    let starts: Vec<String> = roots
        .unwrap_or(&whole)
        .iter()
        .filter(|r| r.as_str() == "." || workspace.resolve(r).is_ok())
        .cloned()
        .collect();
    let walked = crate::tools::walk_files(workspace, &starts).map_err(|e| e.message)?;
    let left_out = walked.dirs_left_out;
    let not_searched = walked.not_searched;
    let files = walked.files;
    let sized: Vec<(String, u64)> = files
        .into_iter()
        .map(|(path, rel)| {
            let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            (rel, bytes)
        })
        .collect();
    if sized.is_empty() {
        return Ok(Planned {
            shards: Vec::new(),
            left_out,
            not_searched,
            reason: SHARDED.into(),
            files: Vec::new(),
            lead: None,
            walked: true,
        });
    }
    let total: u64 = sized.iter().map(|f| f.1).sum();
    let count = match shards {
        Some(n) => n.min(max_subagents).min(sized.len()).max(1),
        None => plan::shard_count(total, sized.len(), agents, max_subagents),
    };
    Ok(Planned {
        shards: plan::shard(&sized, count, roots),
        left_out,
        not_searched,
        reason: SHARDED.into(),
        files: sized,
        lead: None,
        walked: true,
    })
}

/// A withdrawn source (`baton forget`) leaves the report whatever handed it off, before the
/// resume or after: each conclusion citing it becomes an open item naming it (its rank reason
/// with it), and a finding listed below the answers that cites it is left out.
fn withdraw_from_report(
    checkpoint: &crate::checkpoint::Checkpoint,
    handoff: &mut crate::handoff::Handoff,
    rank_reasons: &mut Vec<String>,
    also_found: &mut Vec<(crate::handoff::Conclusion, String)>,
) {
    let gone = crate::checkpoint::withdrawn_in(checkpoint);
    if gone.is_empty() {
        return;
    }
    let ids: Vec<crate::source::SourceId> = gone.iter().map(|(s, _)| s.clone()).collect();
    let cites = |c: &crate::handoff::Conclusion| crate::checkpoint::cites_any(c, &ids);
    if rank_reasons.len() == handoff.settled_conclusions.len() {
        let kept: Vec<bool> = handoff
            .settled_conclusions
            .iter()
            .map(|c| !cites(c))
            .collect();
        let mut at = 0;
        rank_reasons.retain(|_| {
            at += 1;
            kept[at - 1]
        });
    }
    crate::checkpoint::withdraw(handoff, &gone);
    let mut seen = std::collections::HashSet::new();
    handoff.open_items.retain(|o| seen.insert(o.item.clone()));
    also_found.retain(|(c, _)| !cites(c));
}
