//! The live part of the pane, above the composer: what is still moving —
//! the tail of the answer being streamed, the tool calls running now, and
//! the tree of running subagents with each one's current tool, tokens and
//! elapsed time. What is final goes to the scrollback instead.

use std::collections::BTreeMap;
use std::time::Instant;

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use crate::cells::dim;
use crate::status::SPINNER;
use crate::tool_view;

/// A tool call that has started and not finished.
#[derive(Debug, Clone)]
pub struct RunningTool {
    pub name: String,
    pub key: String,
    pub started: Instant,
    /// The latest progress report (`3/10 files`).
    pub progress: Option<String>,
}

/// A subagent that is running (or just finished, until its line is printed).
#[derive(Debug, Clone)]
pub struct RunningAgent {
    pub parent_id: String,
    pub depth: u32,
    pub goal: String,
    pub background: bool,
    pub current_tool: Option<String>,
    pub tokens: u64,
    pub started: Instant,
}

/// Everything in motion.
#[derive(Debug, Default)]
pub struct Live {
    /// Calls of the root agent by call id, in start order.
    pub tools: BTreeMap<(Instant, String), RunningTool>,
    /// Subagents by id.
    pub agents: BTreeMap<String, RunningAgent>,
}

impl Live {
    /// A root tool call started.
    pub fn tool_started(&mut self, call_id: &str, name: &str, arguments: &str, width: u16) {
        self.tools.insert(
            (Instant::now(), call_id.to_owned()),
            RunningTool {
                name: name.to_owned(),
                key: tool_view::key_argument(name, arguments, usize::from(width).max(20)),
                started: Instant::now(),
                progress: None,
            },
        );
    }

    /// A root tool call ended; its start, if it was known.
    pub fn tool_finished(&mut self, call_id: &str) -> Option<RunningTool> {
        let key = self.tools.keys().find(|(_, id)| id == call_id).cloned()?;
        self.tools.remove(&key)
    }

    /// A running call reported progress.
    pub fn tool_progress(&mut self, call_id: &str, text: String) {
        if let Some(tool) = self.tools.iter_mut().find(|((_, id), _)| id == call_id) {
            tool.1.progress = Some(text);
        }
    }

    /// Whether anything moves (the spinner needs ticks).
    pub fn is_active(&self) -> bool {
        !self.tools.is_empty() || !self.agents.is_empty()
    }

    /// The lines of the running calls and the subagent tree.
    pub fn lines(&self, spinner: usize, now: Instant, width: u16) -> Vec<Line<'static>> {
        let frame = SPINNER[spinner % SPINNER.len()];
        let room = usize::from(width).saturating_sub(2).max(10);
        let mut lines = Vec::new();
        for tool in self.tools.values() {
            let mut text = format!("{} {}", tool.name, tool.key);
            if let Some(progress) = &tool.progress {
                text.push_str(&format!(" · {progress}"));
            }
            let seconds = now.saturating_duration_since(tool.started).as_secs();
            let tail = format!(" · {seconds}s");
            let text = tool_view::shorten(&text, room.saturating_sub(tail.len() + 2));
            lines.push(Line::from(vec![
                Span::styled(format!("{frame} "), Style::default().fg(Color::Cyan)),
                Span::raw(text),
                Span::styled(tail, dim()),
            ]));
        }
        for (id, agent) in self.ordered_agents() {
            let indent = "  ".repeat(agent.depth as usize);
            let doing = agent
                .current_tool
                .as_deref()
                .map(|tool| format!(" → {tool}"))
                .unwrap_or_default();
            let seconds = now.saturating_duration_since(agent.started).as_secs();
            let facts = format!(
                " · {} tok · {seconds}s{}",
                crate::format::tokens(agent.tokens),
                if agent.background {
                    " · background"
                } else {
                    ""
                }
            );
            let goal = herald_protocol::one_line(&agent.goal);
            let budget = room.saturating_sub(
                indent.len() + id.len() + doing.chars().count() + facts.chars().count() + 4,
            );
            lines.push(Line::from(vec![
                Span::raw(indent),
                Span::styled(format!("{frame} "), Style::default().fg(Color::Magenta)),
                Span::styled(id.to_owned(), Style::default().bold()),
                Span::raw(" "),
                Span::raw(tool_view::shorten(&goal, budget.max(8))),
                Span::styled(doing, Style::default().fg(Color::Cyan)),
                Span::styled(facts, dim()),
            ]));
        }
        lines
    }

    /// Agents in tree order: each parent followed by its children; agents
    /// whose parent is not running any more come last.
    fn ordered_agents(&self) -> Vec<(&str, &RunningAgent)> {
        let mut ordered = Vec::new();
        let mut seen = std::collections::HashSet::new();
        self.walk("root", &mut ordered, &mut seen);
        let mut orphans: Vec<(&str, &RunningAgent)> = self
            .agents
            .iter()
            .filter(|(id, _)| !seen.contains(id.as_str()))
            .map(|(id, agent)| (id.as_str(), agent))
            .collect();
        orphans.sort_by_key(|(_, agent)| agent.started);
        for (id, agent) in orphans {
            if seen.insert(id) {
                ordered.push((id, agent));
                self.walk(id, &mut ordered, &mut seen);
            }
        }
        ordered
    }

    fn walk<'a>(
        &'a self,
        parent: &str,
        out: &mut Vec<(&'a str, &'a RunningAgent)>,
        seen: &mut std::collections::HashSet<&'a str>,
    ) {
        let mut children: Vec<(&'a str, &'a RunningAgent)> = self
            .agents
            .iter()
            .filter(|(_, agent)| agent.parent_id == parent)
            .map(|(id, agent)| (id.as_str(), agent))
            .collect();
        children.sort_by_key(|(_, agent)| agent.started);
        for (id, agent) in children {
            if seen.insert(id) {
                out.push((id, agent));
                self.walk(id, out, seen);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;

    fn text(lines: &[Line<'_>]) -> String {
        lines
            .iter()
            .map(|line| {
                line.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn running_tools_and_the_subagent_tree() {
        let start = Instant::now();
        let mut live = Live::default();
        live.tools.insert(
            (start, "call_1".into()),
            RunningTool {
                name: "terminal".into(),
                key: "cargo test".into(),
                started: start,
                progress: Some("3/10".into()),
            },
        );
        for (id, parent, depth, offset, tool) in [
            ("ag_2", "root", 1, 2, None),
            ("ag_1", "root", 1, 1, Some("read_file")),
            ("ag_3", "ag_1", 2, 3, Some("terminal")),
        ] {
            live.agents.insert(
                id.into(),
                RunningAgent {
                    parent_id: parent.into(),
                    depth,
                    goal: format!("goal of {id}"),
                    background: id == "ag_2",
                    current_tool: tool.map(str::to_owned),
                    tokens: 1500,
                    started: start + Duration::from_secs(offset),
                },
            );
        }
        let now = start + Duration::from_secs(13);
        insta::assert_snapshot!(text(&live.lines(0, now, 80)));
        assert!(live.is_active());
        assert!(live.tool_finished("call_1").is_some());
        assert!(live.tool_finished("call_1").is_none());
    }
}
