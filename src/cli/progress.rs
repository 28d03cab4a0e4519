//! The live progress display on stderr: one line per subagent (id, role, shard, tool calls,
//! tokens, cost when the model's price is known, state), and a line with the subagents' cost so far,
//! drawn with indicatif; nothing when stderr is not a terminal.

use std::collections::HashMap;
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

/// Draws events until the channel closes.
pub(crate) fn spawn(
    mut events: UnboundedReceiver<Event>,
    show: bool,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let target = if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let multi = MultiProgress::with_draw_target(target);
        let style = ProgressStyle::with_template("{spinner} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let mut lines: HashMap<String, Line> = HashMap::new();
        // The run's cost so far, shown once a subagent reports one.
        let total = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
        let show_total = |lines: &HashMap<String, Line>| {
            let costs: Vec<f64> = lines.values().filter_map(|l| l.cost).collect();
            if !costs.is_empty() {
                total.set_message(format!(
                    "subagents' cost so far ${:.4}",
                    costs.iter().sum::<f64>()
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
                    show_total(&lines);
                }
                Event::SubagentEnded {
                    id,
                    state,
                    tool_calls,
                    tokens,
                    cost_usd,
                } => {
                    if let Some(line) = lines.get_mut(&id) {
                        line.tool_calls = tool_calls;
                        line.tokens = tokens;
                        line.cost = cost_usd;
                        line.state = state;
                        let text = line.render(&id);
                        line.bar.finish_with_message(text);
                    }
                    show_total(&lines);
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
            if !line.bar.is_finished() {
                line.bar.abandon();
            }
        }
        total.finish_and_clear();
    })
}
