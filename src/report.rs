//! The report a run returns: the lead's own handoff plus who worked on what and what it cost.
//! Its JSON is the `--json` wire format (fields may be added, never renamed).

use serde::{Deserialize, Serialize};

pub use crate::checkpoint::SubagentState;
use crate::contracts::RoleId;
use crate::handoff::{Handoff, Violation};
use crate::policy::ConstraintEntry;
pub use crate::policy::Enforcement;

/// One subagent in the report.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let report = baton::Coordinator::builder().build()
///     .run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
/// let first = &report.subagents[0];
/// assert_eq!(first.id, "sa1");
/// assert_eq!(first.role, baton::RoleId::EXPLORER);
/// assert!(first.model_turns >= 1);
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentSummary {
    /// Its id, e.g. `sa2`.
    pub id: String,
    /// Its role.
    pub role: RoleId,
    /// Its shard of the tree, comma-separated.
    pub scope: String,
    /// How it ended.
    pub state: SubagentState,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Tokens used, input plus output.
    pub tokens: u64,
    /// Model turns taken.
    pub model_turns: u32,
    /// Repair turns it needed.
    pub repairs: u32,
    /// Why it failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The contract violations of a rejected handoff.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
    /// Its tool calls a constraint denied.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub denials: u32,
    /// What its model calls cost, in US dollars (none: the price is unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One of the run's constraints as the report shows it.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let report = baton::Coordinator::builder()
///     .constraint("Never use grep.")
///     .build()
///     .run(baton::Task::explore("where is next_delay?", dir.path()))
///     .await
///     .unwrap();
/// let constraint = &report.constraints[0];
/// assert_eq!(constraint.text, "Never use grep.");
/// assert_eq!(constraint.enforcement, baton::Enforcement::Enforced);
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConstraintReport {
    /// Verbatim.
    pub text: String,
    /// Where it came from (`--constraint`, `--constraint-json`, `question`).
    pub provenance: String,
    /// Whether it is enforced.
    pub enforcement: Enforcement,
    /// What is enforced, rule by rule.
    pub enforced_as: Vec<String>,
    /// Its typed rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<crate::policy::Rule>,
    /// The clauses not enforced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untyped: Vec<String>,
    /// What the run said of it at the start (a place the tree does not hold, a place
    /// respelled as the tree spells it, a clause carried but not enforced).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl ConstraintReport {
    /// The report's view of a constraint in force.
    pub fn of(c: &ConstraintEntry) -> ConstraintReport {
        ConstraintReport {
            text: c.text.clone(),
            provenance: c.provenance.clone(),
            enforcement: c.enforcement(),
            enforced_as: c.rules.iter().map(|r| r.describe()).collect(),
            rules: c.rules.clone(),
            untyped: c.untyped.clone(),
            warnings: c.warnings.clone(),
        }
    }

    /// One line for the report's Hard constraints: the text, where from, and what of it is
    /// enforced.
    pub fn line(&self) -> String {
        let mut line = self.enforcement_line();
        for warning in &self.warnings {
            line.push_str("; warning: ");
            line.push_str(&crate::text::one_line(warning));
        }
        line
    }

    fn enforcement_line(&self) -> String {
        let text = crate::text::one_line(&self.text);
        let untyped = || {
            self.untyped
                .iter()
                .map(|u| format!("\"{}\"", crate::text::one_line(u)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self.enforcement {
            Enforcement::NotEnforced if self.rules.is_empty() => format!(
                "\"{text}\" ({}): not enforced: no rule could be read from it, so it is only carried to every subagent as a standing condition",
                self.provenance
            ),
            Enforcement::NotEnforced => format!(
                "\"{text}\" ({}): not enforced: read as {}, which nothing in this build enforces; it is carried to every subagent as a standing condition",
                self.provenance,
                self.enforced_as.join("; ")
            ),
            Enforcement::Enforced => format!(
                "\"{text}\" ({}): enforced by the gate: {}",
                self.provenance,
                self.enforced_as.join("; ")
            ),
            Enforcement::Partly => format!(
                "\"{text}\" ({}): partly enforced: {}; not enforced: {}",
                self.provenance,
                self.enforced_as.join("; "),
                if self.untyped.is_empty() {
                    "the cost limit (no price is reported)".to_string()
                } else {
                    untyped()
                }
            ),
        }
    }
}

/// What the run spent, over all subagents.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let report = baton::Coordinator::builder().build()
///     .run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
/// assert!(report.usage.model_calls >= 1 && report.usage.tool_calls >= 1);
/// assert_eq!(report.models[0].model, "offline");
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RunUsage {
    /// Model calls.
    pub model_calls: u64,
    /// Tool calls.
    pub tool_calls: u64,
    /// Input tokens (cached or not).
    pub tokens_in: u64,
    /// Output tokens.
    pub tokens_out: u64,
    /// Of the input tokens, those read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of the input tokens, those written to the provider's prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// What the model calls cost, in US dollars, from the provider's usage and the model's
    /// price (none: the price is unknown, as for the offline model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The run's cost limit (`--max-cost`), in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

/// What one model of the run spent: the subagents' and, with `--lead-model`, the lead's, each
/// shown apart.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let report = baton::Coordinator::builder().build()
///     .run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
/// assert!(report.models.iter().any(|m| m.role == "subagents" && m.model == "offline"));
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelUsage {
    /// `subagents` or `lead`.
    pub role: String,
    /// The model, e.g. `anthropic:claude-sonnet-4-5`.
    pub model: String,
    /// Model calls.
    pub model_calls: u64,
    /// Input tokens (cached or not).
    pub tokens_in: u64,
    /// Output tokens.
    pub tokens_out: u64,
    /// Of the input tokens, those read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Of the input tokens, those written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// What its calls cost, in US dollars (none: its price is unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl ModelUsage {
    /// The usage of `model` playing `role` from what its calls spent (`priced`: its price is
    /// known, so the cost is shown).
    pub(crate) fn of<'a>(
        role: &str,
        model: String,
        spent: impl Iterator<Item = &'a crate::policy::Spent>,
        priced: bool,
    ) -> ModelUsage {
        let mut u = ModelUsage {
            role: role.into(),
            model,
            model_calls: 0,
            tokens_in: 0,
            tokens_out: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: None,
        };
        let mut micros = 0;
        for s in spent {
            u.model_calls = u.model_calls.saturating_add(u64::from(s.model_turns));
            u.tokens_in = u.tokens_in.saturating_add(s.tokens_in);
            u.tokens_out = u.tokens_out.saturating_add(s.tokens_out);
            u.cache_read_tokens = u.cache_read_tokens.saturating_add(s.cache_read_tokens);
            u.cache_write_tokens = u.cache_write_tokens.saturating_add(s.cache_write_tokens);
            micros = u64::saturating_add(micros, s.cost_micros);
        }
        u.cost_usd = priced.then(|| crate::model::price::dollars(micros));
        u
    }
}

/// How the run's handoffs fared against the contract.
/// ```
/// use baton::SubagentState;
/// let counts = baton::HandoffCounts::of(&[SubagentState::HandedOff, SubagentState::Rejected]);
/// assert_eq!((counts.accepted, counts.rejected), (1, 1));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffCounts {
    /// Accepted at the first attempt.
    pub accepted: usize,
    /// Accepted after one or more repair turns.
    pub repaired: usize,
    /// Accepted without the conclusions that alone broke the contract.
    #[serde(default)]
    pub partly_accepted: usize,
    /// Rejected: the contract was still unmet when the repairs ran out (`contract_unmet`).
    pub rejected: usize,
}

impl HandoffCounts {
    /// Counts the subagents' states.
    pub fn of(states: &[SubagentState]) -> HandoffCounts {
        let count = |s: SubagentState| states.iter().filter(|x| **x == s).count();
        HandoffCounts {
            accepted: count(SubagentState::HandedOff),
            repaired: count(SubagentState::Repaired),
            partly_accepted: count(SubagentState::PartlyAccepted),
            rejected: count(SubagentState::Rejected),
        }
    }
}

/// The result of a run.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let report = baton::Coordinator::builder().build()
///     .run(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
/// assert!(!report.failed());
/// assert!(report.to_markdown().contains("## Settled conclusions"));
/// let json: baton::Value = baton::serde_json::from_str(&report.to_json().unwrap()).unwrap();
/// assert_eq!(json["run_id"], report.run_id.as_str());
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The run's id.
    pub run_id: String,
    /// The question asked.
    pub question: String,
    /// The explored root, absolute.
    pub root: String,
    /// The lead's handoff: every settled conclusion carries its sources.
    pub handoff: Handoff,
    /// Every subagent of the run.
    pub subagents: Vec<SubagentSummary>,
    /// Totals.
    pub usage: RunUsage,
    /// Handoffs accepted, repaired and rejected.
    pub handoffs: HandoffCounts,
    /// The model that played the subagents.
    pub model: String,
    /// True when the run was cancelled before every subagent ended.
    pub cancelled: bool,
    /// Wall time of the run in milliseconds.
    pub elapsed_ms: u64,
    /// The run's constraints and whether each is enforced.
    #[serde(default)]
    pub constraints: Vec<ConstraintReport>,
    /// Every tool call a constraint denied, in order.
    #[serde(default)]
    pub denials: Vec<crate::checkpoint::DenialEntry>,
    /// What each model spent: the subagents', and the lead's when it has a model of its own.
    #[serde(default)]
    pub models: Vec<ModelUsage>,
    /// Limits the models reported in their handoffs' Hard constraints: data kept for the
    /// reader, never a rule or a permission (the gate reads only the run's `constraints`).
    #[serde(default)]
    pub reported_constraints: Vec<ReportedConstraint>,
    /// Why each settled conclusion stands where it does, in their order (empty when the lead
    /// model wrote the conclusions).
    #[serde(default)]
    pub rank_reasons: Vec<String>,
    /// Findings that passed but do not answer: tied to the question only by common words, or
    /// far weaker than the answers. In rank order, after the answers.
    #[serde(default)]
    pub also_found: Vec<AlsoFound>,
    /// The run's waves, in order: what each planned and added, and why the last was the last.
    #[serde(default)]
    pub waves: Vec<Wave>,
    /// Why the run stopped planning waves.
    #[serde(default)]
    pub stopped_because: String,
}

/// How many settled findings the command line prints unless `--all` is given.
pub const SHOWN_CONCLUSIONS: usize = 5;

/// A finding listed after the answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlsoFound {
    /// The finding.
    pub claim: String,
    /// Where it can be re-checked.
    pub sources: Vec<crate::source::SourceId>,
    /// Why it is not among the answers.
    pub rank_reason: String,
}

/// One wave of a run: the subagents it planned, the settled conclusions it added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wave {
    /// 1 for the first plan, 2 for the first follow-ups, and so on.
    pub n: u32,
    /// The subagents it planned.
    pub subagents: Vec<String>,
    /// Findings it settled that no earlier wave had (by the lines they cite).
    pub added: usize,
    /// Why no wave followed it (set on the last wave only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_because: Option<String>,
}

/// A limit a subagent or the lead's model reported in its handoff. It is data: nothing
/// enforces it, and nothing it says grants a permission or lifts a constraint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedConstraint {
    /// What the model wrote.
    pub text: String,
    /// Who reported it: subagent ids, or `lead` for the lead's model.
    pub reported_by: Vec<String>,
    /// The sources it cited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<crate::source::SourceId>,
}

impl ReportedConstraint {
    /// Its line in the report's Hard constraints: `reported by sa2, not enforced: "…"` — never
    /// in the form of the run's own constraints (`"…" (--constraint): …`), so a model cannot
    /// pass off its text as one of them.
    pub fn line(&self) -> String {
        let who: Vec<&str> = self
            .reported_by
            .iter()
            .map(|r| {
                if r == "lead" {
                    "the lead model"
                } else {
                    r.as_str()
                }
            })
            .collect();
        format!(
            "reported by {}, not enforced: {}",
            if who.is_empty() {
                "a subagent".to_string()
            } else {
                who.join(", ")
            },
            serde_json::to_string(&crate::text::one_line(&self.text)).unwrap_or_default()
        )
    }
}

impl Report {
    /// Counts of subagents by outcome: (handed off, repaired, rejected, failed or cancelled).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let report = baton::Coordinator::builder().build()
    ///     .run(baton::Task::explore("where is next_delay defined?", dir.path())).await.unwrap();
    /// let (handed_off, repaired, rejected, failed) = report.outcome_counts();
    /// assert_eq!(handed_off + repaired + rejected + failed, report.subagents.len());
    /// # });
    /// ```
    pub fn outcome_counts(&self) -> (usize, usize, usize, usize) {
        let count = |f: &dyn Fn(SubagentState) -> bool| {
            self.subagents.iter().filter(|s| f(s.state)).count()
        };
        (
            count(&|s| s == SubagentState::HandedOff),
            count(&|s| s == SubagentState::Repaired),
            count(&|s| s == SubagentState::Rejected),
            count(&|s| matches!(s, SubagentState::Failed | SubagentState::Cancelled)),
        )
    }

    /// The report as `baton explore` prints it: the run's handoff in its three sections
    /// (markdown).
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let report = baton::Coordinator::builder().build()
    ///     .run(baton::Task::explore("where is next_delay defined?", dir.path())).await.unwrap();
    /// let text = report.to_markdown();
    /// assert!(text.starts_with("## Settled conclusions"));
    /// assert!(text.contains("src/net/retry.rs"));
    /// # });
    /// ```
    pub fn to_markdown(&self) -> String {
        self.handoff.to_markdown()
    }

    /// The report as the command line prints it: the first [`SHOWN_CONCLUSIONS`] settled
    /// findings (negative evidence always), then — after the three sections — how many more
    /// there are and why the run stopped; with `all`, every settled conclusion and the
    /// findings ranked below the answers too.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let report = baton::Coordinator::builder().build()
    ///     .run(baton::Task::explore("where is next_delay defined?", dir.path())).await.unwrap();
    /// assert!(report.to_markdown_shown(false).starts_with("## Settled conclusions"));
    /// assert!(report.to_markdown_shown(true).contains("Stopped: "));
    /// # });
    /// ```
    pub fn to_markdown_shown(&self, all: bool) -> String {
        use crate::handoff::ConclusionKind;
        let mut shown = self.handoff.clone();
        let mut hidden = 0;
        if !all {
            let mut findings = 0;
            shown.settled_conclusions.retain(|c| {
                if c.kind != ConclusionKind::Finding {
                    return true;
                }
                findings += 1;
                let keep = findings <= SHOWN_CONCLUSIONS;
                hidden += usize::from(!keep);
                keep
            });
        }
        let mut out = shown.to_markdown();
        if all && !self.also_found.is_empty() {
            out.push_str("\n## Also found (ranked below the answers)\n");
            for a in &self.also_found {
                let sources: Vec<String> = a.sources.iter().map(|s| s.to_string()).collect();
                out.push_str(&format!(
                    "- {} [{}] ({})\n",
                    crate::text::one_line(&a.claim),
                    sources.join(", "),
                    a.rank_reason
                ));
            }
        }
        let more = if all { 0 } else { self.also_found.len() };
        if hidden + more > 0 {
            out.push_str(&format!(
                "\n{hidden} more settled conclusion(s) and {more} finding(s) ranked below the answers are not shown: --all shows them, --json holds them.\n"
            ));
        }
        if !self.stopped_because.is_empty() {
            if hidden + more == 0 {
                out.push('\n');
            }
            let waves: Vec<String> = self
                .waves
                .iter()
                .map(|w| {
                    format!(
                        "wave {}: {} subagent(s), {} added",
                        w.n,
                        w.subagents.len(),
                        w.added
                    )
                })
                .collect();
            out.push_str(&format!(
                "Stopped: {} ({}).\n",
                self.stopped_because,
                if waves.is_empty() {
                    "no wave".to_string()
                } else {
                    waves.join("; ")
                }
            ));
        }
        out
    }

    /// The report as one JSON document (the `--json` wire format: fields may be added, never
    /// renamed), every secret the process holds taken out.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let report = baton::Coordinator::builder().build()
    ///     .run(baton::Task::explore("where is next_delay defined?", dir.path())).await.unwrap();
    /// let json: baton::Value = baton::serde_json::from_str(&report.to_json().unwrap()).unwrap();
    /// assert_eq!(json["run_id"], report.run_id.as_str());
    /// # });
    /// ```
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self).map(crate::redact::scrubbed)
    }

    /// Whether no subagent's handoff was accepted.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let report = baton::Coordinator::builder().build()
    ///     .run(baton::Task::explore("where is next_delay defined?", dir.path())).await.unwrap();
    /// assert!(!report.failed(), "a handoff was accepted");
    /// # });
    /// ```
    pub fn failed(&self) -> bool {
        !self.subagents.iter().any(|s| s.state.accepted())
    }

    /// One line for stderr at the end of a run.
    /// ```
    /// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = baton::testing::fixture_tree();
    /// let report = baton::Coordinator::builder().build()
    ///     .run(baton::Task::explore("where is next_delay defined?", dir.path())).await.unwrap();
    /// assert!(report.summary_line().contains("handed off"), "{}", report.summary_line());
    /// # });
    /// ```
    pub fn summary_line(&self) -> String {
        let (handed_off, repaired, rejected, failed) = self.outcome_counts();
        let partly = self
            .subagents
            .iter()
            .filter(|s| s.state == SubagentState::PartlyAccepted)
            .count();
        format!(
            "baton: {} subagent(s): {handed_off} handed off, {repaired} repaired, {}{rejected} rejected, {failed} failed{}; {} conclusion(s), {} open item(s); {} tool calls{}, {} tokens{}, {:.1}s",
            self.subagents.len(),
            if partly > 0 { format!("{partly} partly accepted, ") } else { String::new() },
            if self.cancelled { " (cancelled)" } else { "" },
            self.handoff.settled_conclusions.len(),
            self.handoff.open_items.len(),
            self.usage.tool_calls,
            if self.denials.is_empty() {
                String::new()
            } else {
                format!(" ({} denied)", self.denials.len())
            },
            self.usage.tokens_in.saturating_add(self.usage.tokens_out),
            {
                let mut cost = match (self.usage.cost_usd, self.usage.max_cost_usd) {
                    (Some(c), Some(max)) => format!(", ${c:.4} of ${max:.4}"),
                    (Some(c), None) => format!(", ${c:.4}"),
                    _ => String::new(),
                };
                if let Some(lead) = self.models.iter().find(|m| m.role == "lead") {
                    if let Some(c) = lead.cost_usd {
                        cost.push_str(&format!(" (lead ${c:.4})"));
                    }
                }
                cost
            },
            self.elapsed_ms as f64 / 1000.0
        )
    }
}
