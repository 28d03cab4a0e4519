//! The live progress display on stderr: one line per wave (what it planned, and what the wave
//! before it added), one line per running subagent (id, role, shard, tool calls, tokens, cost
//! when the model's price is known, state) and the last few that ended, and a line with the
//! subagents' cost so far, drawn with indicatif; nothing when stderr is
//! not a terminal or `--no-progress` is given.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use baton::{EventStream, RunEvent, SubagentState};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

struct Line {
    bar: ProgressBar,
    role: String,
    scope: String,
    tool_calls: u32,
    tokens: u64,
    cost: Option<f64>,
    state: SubagentState,
    /// Set while a repair turn is under way: the violations quoted back.
    repairing: Option<usize>,
}

impl Line {
    fn render(&self, id: &str) -> String {
        let scope = cut(&self.scope, 40);
        format!(
            "{id:<5} {:<9} {scope:<40} tools {:>3}  tokens {:>7}{}  {}",
            self.role,
            self.tool_calls,
            human(self.tokens),
            self.cost.map(|c| format!("  ${c:.4}")).unwrap_or_default(),
            match (self.state, self.repairing) {
                (SubagentState::Running, Some(n)) => format!("repairing ({n} violation(s))"),
                (state, _) => state.label().to_string(),
            }
        )
    }
}

/// `text` in at most `most` characters: cut, and the cut marked with `…`.
fn cut(text: &str, most: usize) -> String {
    if text.chars().count() > most {
        let kept: String = text.chars().take(most.saturating_sub(1)).collect();
        format!("{kept}…")
    } else {
        text.to_string()
    }
}

fn human(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 1000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}

/// How many finished subagents' lines stay on the display: older ones give their place to
/// the running ones, so a run of thousands holds a screenful.
const FINISHED_SHOWN: usize = 8;

/// Characters of a plan revision's reason shown on its line.
const PLAN_SHOWN: usize = 160;

/// How many of the plans' lines stay on the display: the latest waves.
const PLANS_SHOWN: usize = 6;

/// The display's state: the running subagents' lines, the last few ended bars, and the
/// finished subagents' summed cost.
struct Board {
    multi: MultiProgress,
    style: ProgressStyle,
    lines: HashMap<String, Line>,
    finished: VecDeque<ProgressBar>,
    /// The subagents' cost so far: the finished ones' summed as they end, the running ones'
    /// as they stand.
    finished_cost: Option<f64>,
    total: ProgressBar,
    /// Whether the subagents' model has a price (its costs are shown).
    priced: bool,
    /// The last few lines of the plan revisions (the first plan, each wave of follow-ups
    /// with their questions, a verifier's check): what each planned and why.
    plans: VecDeque<ProgressBar>,
    /// How many subagents were planned so far.
    planned: usize,
}

impl Board {
    fn new(target: ProgressDrawTarget) -> Self {
        let multi = MultiProgress::with_draw_target(target);
        let style = ProgressStyle::with_template("{spinner} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let total = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
        Self {
            multi,
            style,
            lines: HashMap::new(),
            finished: VecDeque::new(),
            finished_cost: None,
            total,
            priced: false,
            plans: VecDeque::new(),
            planned: 0,
        }
    }

    fn show_total(&self) {
        let running: Vec<f64> = self.lines.values().filter_map(|l| l.cost).collect();
        if self.finished_cost.is_some() || !running.is_empty() {
            self.total.set_message(format!(
                "subagents' cost so far ${:.4}",
                self.finished_cost.unwrap_or(0.0) + running.iter().sum::<f64>()
            ));
            self.total.tick();
        }
    }

    /// Takes one logged event: the display is derived from the run's log alone.
    fn apply(&mut self, event: RunEvent) {
        match event {
            RunEvent::ModelConfigured { role, config } if role == "subagents" => {
                self.priced = config.price.is_some();
            }
            RunEvent::PlanRevised {
                subagents, reason, ..
            } => self.plan_revised(&subagents, &reason),
            RunEvent::SubagentSpawned {
                subagent,
                role,
                scope,
                ..
            } => {
                let bar = self
                    .multi
                    .add(ProgressBar::new_spinner().with_style(self.style.clone()));
                bar.enable_steady_tick(Duration::from_millis(120));
                let shown = if scope.is_empty() {
                    "-".to_string()
                } else {
                    scope.join(", ")
                };
                let line = Line {
                    bar,
                    role: super::terminal_cell(role.as_str()).into_owned(),
                    scope: super::terminal_cell(&shown).into_owned(),
                    tool_calls: 0,
                    tokens: 0,
                    cost: None,
                    state: SubagentState::Running,
                    repairing: None,
                };
                line.bar.set_message(line.render(&subagent));
                self.lines.insert(subagent, line);
            }
            RunEvent::ToolCalled { subagent, .. } => {
                if let Some(line) = self.lines.get_mut(&subagent) {
                    line.tool_calls += 1;
                    line.bar.set_message(line.render(&subagent));
                }
            }
            RunEvent::ModelReturned {
                subagent, spent, ..
            } => {
                let cost = self.cost_of(&spent);
                if let Some(line) = self.lines.get_mut(&subagent) {
                    line.tokens = spent.tokens();
                    line.cost = cost;
                    line.bar.set_message(line.render(&subagent));
                }
                self.show_total();
            }
            RunEvent::HandoffRepairRequested {
                subagent,
                violations,
            } => {
                if let Some(line) = self.lines.get_mut(&subagent) {
                    line.repairing = Some(violations.len());
                    line.bar.set_message(line.render(&subagent));
                }
            }
            RunEvent::BudgetSpent { subagent, spent } => {
                let cost = self.cost_of(&spent);
                if let Some(line) = self.lines.get_mut(&subagent) {
                    line.tool_calls = spent.tool_calls;
                    line.tokens = spent.tokens();
                    line.cost = cost;
                }
            }
            RunEvent::SubagentEnded {
                subagent, state, ..
            } => self.ended(&subagent, state),
            _ => {}
        }
    }

    /// A plan revision: a line saying what it planned and why, above the subagents' lines,
    /// and under it each new subagent's own question. A reason that names its wave (`wave
    /// N: …`, a resumed run's first included) is shown as it is; the run's first plan is
    /// wave 1 with its subagents. Only the last PLANS_SHOWN lines stay.
    fn plan_revised(&mut self, subagents: &[baton::checkpoint::PlannedSubagent], reason: &str) {
        // A revision lists every subagent planned so far, the new ones last.
        let fresh: Vec<&baton::checkpoint::PlannedSubagent> =
            subagents.iter().skip(self.planned).collect();
        self.planned = self.planned.max(subagents.len());
        let first = self.plans.is_empty() && !reason.starts_with("wave ");
        let head = if first {
            format!("wave 1: {} subagent(s): {reason}", fresh.len())
        } else {
            reason.to_string()
        };
        self.plan_line(&head);
        // A first plan's subtasks have their own questions too; the shards' do not.
        for p in fresh.iter().filter(|_| !first) {
            if let Some(question) = &p.question {
                self.plan_line(&format!("  {} ← {question}", p.id));
            }
        }
    }

    /// One finished line among the plans' lines: one line however the text is made, cut at
    /// PLAN_SHOWN characters.
    fn plan_line(&mut self, text: &str) {
        let shown = cut(&super::terminal_cell(text), PLAN_SHOWN);
        let bar = self.multi.insert(
            self.plans.len(),
            ProgressBar::new_spinner().with_style(self.style.clone()),
        );
        bar.finish_with_message(shown);
        self.plans.push_back(bar);
        while self.plans.len() > PLANS_SHOWN {
            if let Some(old) = self.plans.pop_front() {
                self.multi.remove(&old);
            }
        }
    }

    /// A subagent's cost, when its model is priced.
    fn cost_of(&self, spent: &baton::Spent) -> Option<f64> {
        (self.priced || spent.cost_micros > 0).then(|| spent.cost_micros as f64 / 1e6)
    }

    /// A subagent ended: its line is finished and kept among the last few; its cost joins
    /// the total.
    fn ended(&mut self, id: &str, state: SubagentState) {
        if let Some(mut line) = self.lines.remove(id) {
            line.state = state;
            line.repairing = None;
            let text = line.render(id);
            // The ticker's thread ends here, not with the run.
            line.bar.disable_steady_tick();
            line.bar.finish_with_message(text);
            if let Some(c) = line.cost {
                self.finished_cost = Some(self.finished_cost.unwrap_or(0.0) + c);
            }
            self.finished.push_back(line.bar);
            while self.finished.len() > FINISHED_SHOWN {
                if let Some(old) = self.finished.pop_front() {
                    self.multi.remove(&old);
                }
            }
        }
        self.show_total();
    }

    fn finish(self) {
        for line in self.lines.values() {
            line.bar.disable_steady_tick();
            line.bar.abandon();
        }
        self.total.finish_and_clear();
    }
}

/// Draws the run's events until its stream ends; hidden, it only reads them. What it holds is
/// bounded by the subagents running at once: a finished subagent's line is kept only among
/// the last few, its cost folded into the total. A stream that fails (the log cannot be read)
/// ends the display; the run's report says what happened. Gives the last sequence number read.
pub(crate) fn spawn(mut events: EventStream, show: bool) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut last = 0;
        if !show {
            while let Some(Ok(logged)) = events.next().await {
                last = logged.seq;
            }
            return last;
        }
        let mut board = Board::new(ProgressDrawTarget::stderr());
        while let Some(Ok(logged)) = events.next().await {
            last = logged.seq;
            board.apply(logged.event);
        }
        board.finish();
        last
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subagent's live line: its id, role, shard (cut at 40 characters), tool calls, tokens,
    /// cost when known and state — repairing while a repair turn is under way.
    #[test]
    fn a_line_shows_id_role_shard_calls_tokens_cost_and_state() {
        let mut line = Line {
            bar: ProgressBar::hidden(),
            role: "explorer".into(),
            scope: "src/net".into(),
            tool_calls: 7,
            tokens: 12_345,
            cost: Some(0.0123),
            state: SubagentState::Running,
            repairing: None,
        };
        let text = line.render("sa1");
        for part in [
            "sa1",
            "explorer",
            "src/net",
            "tools   7",
            "12.3k",
            "$0.0123",
            "running",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
        line.repairing = Some(2);
        assert!(line.render("sa1").ends_with("repairing (2 violation(s))"));
        for (state, label) in [
            (SubagentState::HandedOff, "handed off"),
            (SubagentState::Repaired, "repaired"),
            (SubagentState::PartlyAccepted, "partly accepted"),
            (SubagentState::Rejected, "rejected"),
            (SubagentState::Failed, "failed"),
            (SubagentState::Cancelled, "cancelled"),
        ] {
            line.state = state;
            assert!(line.render("sa1").ends_with(label), "{label}");
        }
        line.scope = "d".repeat(60);
        assert!(line.render("sa1").contains(&format!("{}…", "d".repeat(39))));
        line.cost = None;
        assert!(!line.render("sa1").contains('$'));
    }

    /// Thousands of subagents hold a screenful: the running ones' lines and the last
    /// FINISHED_SHOWN ended bars, their costs summed into the total line — all derived from
    /// the run's logged events.
    #[test]
    fn the_display_holds_the_running_and_the_last_few_ended() {
        let mut board = Board::new(ProgressDrawTarget::hidden());
        board.priced = true;
        let spent = |tool_calls, cost_micros| baton::Spent {
            tool_calls,
            tokens_in: 90,
            tokens_out: 10,
            cost_micros,
            ..baton::Spent::default()
        };
        for i in 0..100 {
            board.apply(RunEvent::SubagentSpawned {
                subagent: format!("sa{i}"),
                role: "explorer".into(),
                scope: vec![format!("src/{i}")],
                manifest: manifest(),
            });
        }
        assert_eq!(board.lines.len(), 100);
        for i in 0..97 {
            board.apply(RunEvent::BudgetSpent {
                subagent: format!("sa{i}"),
                spent: spent(3, 10_000),
            });
            board.apply(RunEvent::SubagentEnded {
                subagent: format!("sa{i}"),
                state: SubagentState::HandedOff,
                error: None,
            });
        }
        assert_eq!(board.lines.len(), 3, "the running ones");
        assert_eq!(board.finished.len(), FINISHED_SHOWN);
        let last = board.finished.back().map(|b| b.message().to_string());
        assert!(
            last.as_deref()
                .is_some_and(|m| m.starts_with("sa96 ") && m.contains("tools   3")),
            "{last:?}"
        );
        board.apply(RunEvent::ModelReturned {
            subagent: "sa99".into(),
            spent: spent(1, 30_000),
            stop: baton::model::StopReason::ToolUse,
        });
        assert_eq!(board.total.message(), "subagents' cost so far $1.0000");
        board.apply(RunEvent::HandoffRepairRequested {
            subagent: "sa99".into(),
            violations: Vec::new(),
        });
        assert!(board.lines["sa99"]
            .render("sa99")
            .ends_with("repairing (0 violation(s))"));
        board.finish();
    }

    fn planned(n: usize, questions: &[(usize, &str)]) -> Vec<baton::checkpoint::PlannedSubagent> {
        (1..=n)
            .map(|i| baton::checkpoint::PlannedSubagent {
                id: format!("sa{i}"),
                scope: vec![format!("src/{i}")],
                role: "explorer".into(),
                question: questions
                    .iter()
                    .find(|(at, _)| *at == i)
                    .map(|(_, q)| q.to_string()),
            })
            .collect()
    }

    fn revised(subagents: Vec<baton::checkpoint::PlannedSubagent>, reason: &str) -> RunEvent {
        RunEvent::PlanRevised {
            subagents,
            reason: reason.into(),
            left_out: Vec::new(),
            not_searched: 0,
            not_searched_names: Vec::new(),
        }
    }

    fn lines(board: &Board) -> Vec<String> {
        board.plans.iter().map(|b| b.message()).collect()
    }

    /// Each plan revision is a line: the first plan is wave 1 with its subagents; a later wave
    /// shows its reason (what the wave before added) and, under it, each follow-up's question;
    /// a long line is cut, and a line break or an escape in a reason stays one safe line.
    #[test]
    fn each_wave_is_a_line_saying_what_it_planned_and_what_the_last_added() {
        let mut board = Board::new(ProgressDrawTarget::hidden());
        board.apply(revised(
            planned(4, &[]),
            "sharded the tree by directory, balanced by size",
        ));
        let question = "Where is `flush_pages` defined, and where is it called?";
        board.apply(revised(
            planned(5, &[(5, question)]),
            &format!("wave 2: wave 1 added 3 settled conclusion(s) as ranked then; 1 follow-up(s) planned from the checkpoint: sa5 {question}"),
        ));
        let hostile = format!("wave 3: x\nSECOND \u{1b}[31m {}", "y".repeat(400));
        board.apply(revised(
            planned(6, &[(6, "who calls `tick`?\nok")]),
            &hostile,
        ));
        let shown = lines(&board);
        assert_eq!(
            shown[0],
            "wave 1: 4 subagent(s): sharded the tree by directory, balanced by size"
        );
        assert!(
            shown[1].starts_with("wave 2: wave 1 added 3 settled"),
            "{}",
            shown[1]
        );
        assert_eq!(shown[2], format!("  sa5 ← {question}"));
        assert_eq!(shown[3].chars().count(), PLAN_SHOWN, "{}", shown[3]);
        assert!(shown[3].ends_with('…'));
        for line in &shown {
            assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line:?}");
        }
        assert_eq!(shown[4], "  sa6 ← who calls `tick`?\\u{a}ok");
        assert!(board.plans.iter().all(|b| b.is_finished()));
        // Only the latest lines stay.
        for n in 4..=10 {
            board.apply(revised(planned(n + 3, &[]), &format!("wave {n}: more")));
        }
        let shown = lines(&board);
        assert_eq!(shown.len(), PLANS_SHOWN);
        assert_eq!(shown.last().map(String::as_str), Some("wave 10: more"));
        board.finish();
    }

    /// A shard whose path holds a line break or a tab stays on its one line: no name can
    /// draw a row of its own.
    #[test]
    fn a_shard_named_with_a_line_break_stays_one_line() {
        let mut board = Board::new(ProgressDrawTarget::hidden());
        board.apply(RunEvent::SubagentSpawned {
            subagent: "sa1".into(),
            role: "explorer".into(),
            scope: vec!["q\n  sa9   verifier\t/etc/shadow".into()],
            manifest: manifest(),
        });
        let line = board.lines["sa1"].render("sa1");
        assert!(!line.contains('\n') && !line.contains('\t'), "{line:?}");
        assert!(line.contains("q\\u{a}"), "{line:?}");
        board.finish();
    }

    /// A resumed run's display starts after the resume point: a wave's revision met first
    /// is shown as that wave, not as wave 1.
    #[test]
    fn a_resumed_runs_first_revision_keeps_its_wave() {
        let mut board = Board::new(ProgressDrawTarget::hidden());
        board.apply(revised(
            planned(5, &[(5, "Where is `a` defined?")]),
            "wave 2: wave 1 added 1 settled conclusion(s) as ranked then; 1 follow-up(s)",
        ));
        let shown = lines(&board);
        assert!(shown[0].starts_with("wave 2: wave 1 added 1"), "{shown:?}");
        assert_eq!(shown[1], "  sa5 ← Where is `a` defined?");
        board.finish();
    }

    fn manifest() -> baton::checkpoint::Manifest {
        baton::checkpoint::Manifest {
            brief_digest: String::new(),
            brief_tokens: 0,
            tools: Vec::new(),
            budget: baton::Budget::default(),
            context_tokens: 0,
            context: Vec::new(),
            omitted_items: 0,
            omitted_digest: String::new(),
        }
    }
}
