//! The live progress display on stderr: one line per running subagent (id, role, shard, tool
//! calls, tokens, cost when the model's price is known, state) and the last few that ended,
//! and a line with the subagents' cost so far, drawn with indicatif; nothing when stderr is
//! not a terminal or `--no-progress` is given.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use baton::{Event, SubagentState};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc::Receiver;

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
        let scope: String = if self.scope.chars().count() > 40 {
            let cut: String = self.scope.chars().take(39).collect();
            format!("{cut}…")
        } else {
            self.scope.clone()
        };
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

    fn apply(&mut self, event: Event) {
        match event {
            Event::SubagentSpawned { id, role, scope } => {
                let bar = self
                    .multi
                    .add(ProgressBar::new_spinner().with_style(self.style.clone()));
                bar.enable_steady_tick(Duration::from_millis(120));
                let line = Line {
                    bar,
                    role: super::terminal_safe(role.as_str()).into_owned(),
                    scope: super::terminal_safe(&scope).into_owned(),
                    tool_calls: 0,
                    tokens: 0,
                    cost: None,
                    state: SubagentState::Running,
                    repairing: None,
                };
                line.bar.set_message(line.render(&id));
                self.lines.insert(id, line);
            }
            Event::SubagentProgressed {
                id,
                tool_calls,
                tokens,
                cost_usd,
            } => {
                if let Some(line) = self.lines.get_mut(&id) {
                    line.tool_calls = tool_calls;
                    line.tokens = tokens;
                    line.cost = cost_usd;
                    line.bar.set_message(line.render(&id));
                }
                self.show_total();
            }
            Event::SubagentEnded {
                id,
                state,
                tool_calls,
                tokens,
                cost_usd,
            } => {
                if let Some(mut line) = self.lines.remove(&id) {
                    line.tool_calls = tool_calls;
                    line.tokens = tokens;
                    line.cost = cost_usd;
                    line.state = state;
                    let text = line.render(&id);
                    // The ticker's thread ends here, not with the run.
                    line.bar.disable_steady_tick();
                    line.bar.finish_with_message(text);
                    self.finished.push_back(line.bar);
                    while self.finished.len() > FINISHED_SHOWN {
                        if let Some(old) = self.finished.pop_front() {
                            self.multi.remove(&old);
                        }
                    }
                }
                if let Some(c) = cost_usd {
                    self.finished_cost = Some(self.finished_cost.unwrap_or(0.0) + c);
                }
                self.show_total();
            }
            Event::HandoffChecked { id, violations, .. } => {
                if let Some(line) = self.lines.get_mut(&id) {
                    line.repairing = (violations > 0).then_some(violations);
                    line.bar.set_message(line.render(&id));
                }
            }
            _ => {}
        }
    }

    fn finish(self) {
        for line in self.lines.values() {
            line.bar.disable_steady_tick();
            line.bar.abandon();
        }
        self.total.finish_and_clear();
    }
}

/// Draws events until the channel closes; hidden, it only drains them. What it holds is
/// bounded by the subagents running at once: a finished subagent's line is kept only among
/// the last few, its cost folded into the total.
pub(crate) fn spawn(mut events: Receiver<Event>, show: bool) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if !show {
            while events.recv().await.is_some() {}
            return;
        }
        let mut board = Board::new(ProgressDrawTarget::stderr());
        while let Some(event) = events.recv().await {
            board.apply(event);
        }
        board.finish();
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
    /// FINISHED_SHOWN ended bars, their costs summed into the total line.
    #[test]
    fn the_display_holds_the_running_and_the_last_few_ended() {
        let mut board = Board::new(ProgressDrawTarget::hidden());
        for i in 0..100 {
            board.apply(Event::SubagentSpawned {
                id: format!("sa{i}"),
                role: "explorer".into(),
                scope: format!("src/{i}"),
            });
        }
        assert_eq!(board.lines.len(), 100);
        for i in 0..97 {
            board.apply(Event::SubagentEnded {
                id: format!("sa{i}"),
                state: SubagentState::HandedOff,
                tool_calls: 3,
                tokens: 100,
                cost_usd: Some(0.01),
            });
        }
        assert_eq!(board.lines.len(), 3, "the running ones");
        assert_eq!(board.finished.len(), FINISHED_SHOWN);
        let last = board.finished.back().map(|b| b.message().to_string());
        assert!(
            last.as_deref().is_some_and(|m| m.starts_with("sa96 ")),
            "{last:?}"
        );
        board.apply(Event::SubagentProgressed {
            id: "sa99".into(),
            tool_calls: 1,
            tokens: 10,
            cost_usd: Some(0.03),
        });
        assert_eq!(board.total.message(), "subagents' cost so far $1.0000");
        board.finish();
    }
}
