//! The live subagent tree of the human renderer: one line per
//! running child showing its current tool, kept in the live block at the
//! bottom of the terminal (`render::live`) and redrawn in place; each child
//! that finishes leaves a permanent completion line with its status and
//! duration.

use herald_protocol::{Event, EventKind, TokenTotals};

use crate::render::preview;

/// One running child.
#[derive(Debug, Clone)]
struct Row {
    id: String,
    depth: u32,
    goal: String,
    tool: Option<String>,
    tokens: TokenTotals,
}

/// The running children.
#[derive(Debug, Default)]
pub(crate) struct AgentTree {
    rows: Vec<Row>,
}

/// What an event means for the display.
pub(crate) enum TreeUpdate {
    /// Not a subagent event.
    None,
    /// The block changed; redraw it.
    Redraw,
    /// A child finished: print this line above the block.
    Finished(String),
    /// A child started (for non-terminal output: print this line).
    Started(String),
}

impl AgentTree {
    /// Applies one event.
    pub(crate) fn apply(&mut self, event: &Event) -> TreeUpdate {
        match &event.kind {
            EventKind::SubagentStarted {
                depth,
                goal,
                background,
                ..
            } => {
                self.rows.push(Row {
                    id: event.agent_id.clone(),
                    depth: *depth,
                    goal: goal.clone(),
                    tool: None,
                    tokens: TokenTotals::default(),
                });
                let kind = if *background { " (background)" } else { "" };
                TreeUpdate::Started(format!(
                    "{}\u{25b8} {} started{kind}: {}",
                    indent(*depth),
                    event.agent_id,
                    preview(goal, 80)
                ))
            }
            EventKind::SubagentTool { tool, tokens, .. } => {
                if let Some(row) = self.rows.iter_mut().find(|r| r.id == event.agent_id) {
                    row.tool = Some(tool.clone());
                    row.tokens = *tokens;
                }
                TreeUpdate::Redraw
            }
            EventKind::SubagentCompleted {
                depth,
                status,
                exit_reason,
                tokens,
                duration_seconds,
                ..
            } => {
                self.rows.retain(|r| r.id != event.agent_id);
                let mark = if *status == herald_protocol::AgentStatus::Completed {
                    "\u{2713}"
                } else {
                    "\u{2717}"
                };
                let reason = if exit_reason.as_str() == status.as_str() {
                    String::new()
                } else {
                    format!(" ({exit_reason})")
                };
                TreeUpdate::Finished(format!(
                    "{}{mark} {} {status}{reason} in {duration_seconds:.1} s · {} tokens",
                    indent(*depth),
                    event.agent_id,
                    tokens.input + tokens.output
                ))
            }
            _ => TreeUpdate::None,
        }
    }

    /// Whether any child is running.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// One line per running child: its current tool, tokens and goal.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.rows
            .iter()
            .map(|row| {
                let tool = row.tool.as_deref().unwrap_or("thinking");
                format!(
                    "{}\u{2502} {} \u{2192} {tool} \u{b7} {} tok \u{b7} {}",
                    indent(row.depth),
                    row.id,
                    row.tokens.input + row.tokens.output,
                    preview(&row.goal, 50)
                )
            })
            .collect()
    }
}

fn indent(depth: u32) -> String {
    "  ".repeat(depth as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(agent: &str, kind: EventKind) -> Event {
        Event::new("s", agent, kind)
    }

    #[test]
    fn rows_follow_start_tool_and_completion() {
        let mut tree = AgentTree::default();
        let started = tree.apply(&event(
            "ag_1",
            EventKind::SubagentStarted {
                parent_id: "root".into(),
                depth: 1,
                goal: "count lines".into(),
                background: false,
                child_session_id: "c".into(),
            },
        ));
        assert!(matches!(started, TreeUpdate::Started(line) if line.contains("ag_1 started")));
        tree.apply(&event(
            "ag_1",
            EventKind::SubagentTool {
                parent_id: "root".into(),
                depth: 1,
                tool: "terminal".into(),
                tokens: TokenTotals::default(),
            },
        ));
        let lines = tree.lines();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("ag_1 \u{2192} terminal"), "{lines:?}");
        let done = tree.apply(&event(
            "ag_1",
            EventKind::SubagentCompleted {
                parent_id: "root".into(),
                depth: 1,
                status: herald_protocol::AgentStatus::Completed,
                exit_reason: herald_protocol::ExitReason::Completed,
                summary: "ok".into(),
                tokens: TokenTotals {
                    input: 10,
                    output: 5,
                    cached: 0,
                },
                cost_usd: Some(0.0),
                usage: Default::default(),
                tree_usage: Default::default(),
                duration_seconds: 1.25,
            },
        ));
        assert!(
            matches!(done, TreeUpdate::Finished(line) if line.contains("completed in 1.2 s") || line.contains("completed in 1.3 s"))
        );
        assert!(tree.is_empty());
    }
}
