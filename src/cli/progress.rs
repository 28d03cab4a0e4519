//! The live progress display on stderr: one line per running subagent (id, role, shard, tool
//! calls, tokens, cost when the model's price is known, state) and the last few that ended,
//! and a line with the subagents' cost so far, drawn with indicatif; nothing when stderr is
//! not a terminal or `--no-progress` is given.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use baton::{Event, SubagentState};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc::UnboundedReceiver;

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

/// Draws events until the channel closes; hidden, it only drains them. What it holds is
/// bounded by the subagents running at once: a finished subagent's line is kept only among
/// the last few, its cost folded into the total.
pub(crate) fn spawn(
    mut events: UnboundedReceiver<Event>,
    show: bool,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if !show {
            while events.recv().await.is_some() {}
            return;
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{spinner} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let mut lines: HashMap<String, Line> = HashMap::new();
        let mut finished: VecDeque<ProgressBar> = VecDeque::new();
        // The subagents' cost so far: the finished ones' summed as they end, the running ones'
        // as they stand.
        let mut finished_cost: Option<f64> = None;
        let total = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
        let show_total = |lines: &HashMap<String, Line>, finished_cost: Option<f64>| {
            let running: Vec<f64> = lines.values().filter_map(|l| l.cost).collect();
            if finished_cost.is_some() || !running.is_empty() {
                total.set_message(format!(
                    "subagents' cost so far ${:.4}",
                    finished_cost.unwrap_or(0.0) + running.iter().sum::<f64>()
                ));
                total.tick();
            }
        };
        while let Some(event) = events.recv().await {
            match event {
                Event::SubagentSpawned { id, role, scope } => {
                    let bar = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
                    bar.enable_steady_tick(Duration::from_millis(120));
                    let line = Line {
                        bar,
                        role: super::terminal_safe(&role).into_owned(),
                        scope: super::terminal_safe(&scope).into_owned(),
                        tool_calls: 0,
                        tokens: 0,
                        cost: None,
                        state: SubagentState::Running,
                        repairing: None,
                    };
                    line.bar.set_message(line.render(&id));
                    lines.insert(id, line);
                }
                Event::SubagentProgressed {
                    id,
                    tool_calls,
                    tokens,
                    cost_usd,
                } => {
                    if let Some(line) = lines.get_mut(&id) {
                        line.tool_calls = tool_calls;
                        line.tokens = tokens;
                        line.cost = cost_usd;
                        line.bar.set_message(line.render(&id));
                    }
                    show_total(&lines, finished_cost);
                }
                Event::SubagentEnded {
                    id,
                    state,
                    tool_calls,
                    tokens,
                    cost_usd,
                } => {
                    if let Some(mut line) = lines.remove(&id) {
                        line.tool_calls = tool_calls;
                        line.tokens = tokens;
                        line.cost = cost_usd;
                        line.state = state;
                        let text = line.render(&id);
                        // The ticker's thread ends here, not with the run.
                        line.bar.disable_steady_tick();
                        line.bar.finish_with_message(text);
                        finished.push_back(line.bar);
                        while finished.len() > FINISHED_SHOWN {
                            if let Some(old) = finished.pop_front() {
                                multi.remove(&old);
                            }
                        }
                    }
                    if let Some(c) = cost_usd {
                        finished_cost = Some(finished_cost.unwrap_or(0.0) + c);
                    }
                    show_total(&lines, finished_cost);
                }
                Event::HandoffChecked { id, violations, .. } => {
                    if let Some(line) = lines.get_mut(&id) {
                        line.repairing = (violations > 0).then_some(violations);
                        line.bar.set_message(line.render(&id));
                    }
                }
                _ => {}
            }
        }
        for line in lines.values() {
            line.bar.disable_steady_tick();
            line.bar.abandon();
        }
        total.finish_and_clear();
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
}
