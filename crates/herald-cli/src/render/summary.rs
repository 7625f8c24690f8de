//! What a run cost and how it ended, for the last lines `herald run` prints
//! on stderr: tokens and cost of the whole delegation tree, the cache-hit
//! share, and how to continue a run that stopped at its iteration limit.
//!
//! A child's `usage` events stay in its own stream (they never reach the
//! root's observer); its `subagent.completed` carries its totals, so the
//! tree total is the root's `usage` events plus every `subagent.completed`.

use herald_protocol::{Event, EventKind};

use super::format;

/// Totals gathered from a run's event stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunTotals {
    /// The root session's model (`session.started`).
    pub model: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub cost_usd: f64,
    /// Whether some part of the tree ran on a model without a price (its
    /// cost, and so the tree's, is unknown).
    pub unpriced: bool,
    /// Subagents that reported their totals.
    pub subagents: u32,
    /// `run.completed` of the root, once seen.
    pub end: Option<RunEnd>,
}

/// The root's `run.completed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunEnd {
    /// `completed | max_iterations | interrupted | error | budget`.
    pub exit_reason: String,
    pub iterations: u32,
    pub duration_ms: u64,
}

impl RunTotals {
    /// Counts one event of the root's stream.
    pub(crate) fn apply(&mut self, event: &Event) {
        let root = event.agent_id == "root";
        match &event.kind {
            EventKind::SessionStarted { model, .. } if root => self.model = Some(model.clone()),
            EventKind::Usage {
                input_tokens,
                output_tokens,
                cached_tokens,
                cost_usd,
            } if root => {
                self.input_tokens += input_tokens;
                self.output_tokens += output_tokens;
                self.cached_tokens += cached_tokens;
                self.add_cost(*cost_usd);
            }
            EventKind::SubagentCompleted {
                tokens, cost_usd, ..
            } => {
                self.input_tokens += tokens.input;
                self.output_tokens += tokens.output;
                self.cached_tokens += tokens.cached;
                self.add_cost(*cost_usd);
                self.subagents += 1;
            }
            EventKind::RunCompleted {
                exit_reason,
                iterations,
                duration_ms,
                tree_usage,
                ..
            } if root => {
                // The whole tree, grandchildren included (their
                // subagent.completed stays in their parent's stream).
                if tree_usage.requests > 0 {
                    self.input_tokens = tree_usage.input;
                    self.output_tokens = tree_usage.output;
                    self.cached_tokens = tree_usage.cached;
                    self.cost_usd = tree_usage.cost_usd.unwrap_or(0.0);
                    self.unpriced = tree_usage.cost_usd.is_none();
                }
                self.end = Some(RunEnd {
                    exit_reason: exit_reason.as_str().to_owned(),
                    iterations: *iterations,
                    duration_ms: *duration_ms,
                });
            }
            _ => {}
        }
    }

    fn add_cost(&mut self, cost: Option<f64>) {
        match cost {
            Some(usd) => self.cost_usd += usd,
            None => self.unpriced = true,
        }
    }

    /// The tree's cost, or `None` when it is not known: some request ran
    /// on a model herald has no price for (add it under `[pricing]`), or
    /// no request was made at all.
    pub(crate) fn cost(&self) -> Option<f64> {
        let requested = self.end.is_some() || self.input_tokens + self.output_tokens > 0;
        (requested && !self.unpriced).then_some(self.cost_usd)
    }
}

/// `session ses_… · 4 iterations · 12.3k in / 1.1k out tokens (tree) ·
/// 63% cached · $0.0148 · 12.4 s`; `(tree)` when subagents' tokens are in
/// the sums, the cache share only when input was counted.
pub(crate) fn summary_line(session_id: &str, totals: &RunTotals) -> String {
    let mut parts = vec![format!("session {session_id}")];
    if let Some(end) = &totals.end {
        parts.push(format::count(
            u64::from(end.iterations),
            "iteration",
            "iterations",
        ));
    }
    let tree = if totals.subagents > 0 { " (tree)" } else { "" };
    parts.push(format!(
        "{} in / {} out tokens{tree}",
        format::tokens(totals.input_tokens),
        format::tokens(totals.output_tokens)
    ));
    if let Some(share) = format::percent(totals.cached_tokens, totals.input_tokens) {
        parts.push(format!("{share}% cached"));
    }
    parts.push(format::cost(totals.cost()));
    if let Some(end) = &totals.end {
        parts.push(format::duration_ms(end.duration_ms));
    }
    parts.join(" \u{b7} ")
}

/// The line after a run that stopped at the iteration limit: what happened
/// and the command that continues it (`--resume` is a global option, and
/// `herald run` takes it).
pub(crate) fn iteration_limit_line(session_id: &str, limit: u32) -> String {
    format!(
        "stopped at the iteration limit ({limit}); continue with: herald run --resume {session_id} \"continue\" (or raise it with --max-iterations)"
    )
}

#[cfg(test)]
mod tests {
    use herald_protocol::{RunStatus, TokenTotals};

    use super::*;

    fn root(kind: EventKind) -> Event {
        Event::new("ses_1", "root", kind)
    }

    fn usage(input: u64, output: u64, cached: u64, cost: Option<f64>) -> Event {
        root(EventKind::Usage {
            input_tokens: input,
            output_tokens: output,
            cached_tokens: cached,
            cost_usd: cost,
        })
    }

    fn started(model: &str) -> Event {
        root(EventKind::SessionStarted {
            model: model.into(),
            provider: "openai".into(),
            cwd: "/".into(),
            resumed: false,
        })
    }

    fn completed(iterations: u32, duration_ms: u64) -> Event {
        root(EventKind::RunCompleted {
            status: RunStatus::Completed,
            exit_reason: herald_protocol::ExitReason::Completed,
            final_response: "done".into(),
            iterations,
            usage: Default::default(),
            cost_usd: Some(0.0),
            tree_usage: Default::default(),
            duration_ms,
            error: None,
        })
    }

    #[test]
    fn the_summary_sums_the_tree_and_gives_the_cache_share() {
        let mut totals = RunTotals::default();
        for event in [
            started("gpt-4.1-mini"),
            usage(8_000, 600, 5_000, Some(0.01)),
            usage(2_300, 300, 2_000, Some(0.0048)),
            Event::new(
                "ses_1",
                "ag_1",
                EventKind::SubagentCompleted {
                    parent_id: "root".into(),
                    depth: 1,
                    status: herald_protocol::AgentStatus::Completed,
                    exit_reason: herald_protocol::ExitReason::Completed,
                    summary: "ok".into(),
                    tokens: TokenTotals {
                        input: 2_000,
                        output: 200,
                        cached: 800,
                    },
                    cost_usd: Some(0.0001),
                    usage: Default::default(),
                    tree_usage: Default::default(),
                    duration_seconds: 1.0,
                },
            ),
            // A child's own usage never counts twice.
            Event::new(
                "ses_2",
                "ag_1",
                EventKind::Usage {
                    input_tokens: 2_000,
                    output_tokens: 200,
                    cached_tokens: 800,
                    cost_usd: Some(0.0001),
                },
            ),
            completed(4, 12_400),
        ] {
            totals.apply(&event);
        }
        assert_eq!(
            summary_line("ses_1", &totals),
            "session ses_1 \u{b7} 4 iterations \u{b7} 12.3k in / 1.1k out tokens (tree) \u{b7} 63% cached \u{b7} $0.0149 \u{b7} 12.4 s"
        );
    }

    #[test]
    fn run_completed_tree_usage_wins_over_the_streamed_sums() {
        let mut totals = RunTotals::default();
        totals.apply(&started("gpt-4.1"));
        totals.apply(&usage(1_000, 10, 0, Some(0.001)));
        totals.apply(&root(EventKind::RunCompleted {
            status: RunStatus::Completed,
            exit_reason: herald_protocol::ExitReason::Completed,
            final_response: "done".into(),
            iterations: 1,
            usage: Default::default(),
            cost_usd: Some(0.001),
            tree_usage: herald_protocol::UsageTotals {
                input: 5_000,
                output: 50,
                cached: 2_500,
                cache_creation: 0,
                cost_usd: Some(0.0167),
                requests: 4,
            },
            duration_ms: 5,
            error: None,
        }));
        assert_eq!(totals.cost(), Some(0.0167));
        assert_eq!((totals.input_tokens, totals.cached_tokens), (5_000, 2_500));
        let mut unknown = RunTotals::default();
        unknown.apply(&root(EventKind::RunCompleted {
            status: RunStatus::Completed,
            exit_reason: herald_protocol::ExitReason::Completed,
            final_response: "done".into(),
            iterations: 1,
            usage: Default::default(),
            cost_usd: None,
            tree_usage: herald_protocol::UsageTotals {
                requests: 1,
                cost_usd: None,
                ..Default::default()
            },
            duration_ms: 5,
            error: None,
        }));
        assert_eq!(unknown.cost(), None);
    }

    #[test]
    fn an_unpriced_model_has_an_unknown_cost() {
        let mut totals = RunTotals::default();
        for event in [
            started("llama3:8b"),
            usage(900, 10, 0, None),
            completed(1, 300),
        ] {
            totals.apply(&event);
        }
        assert_eq!(totals.cost(), None);
        assert_eq!(
            summary_line("ses_9", &totals),
            "session ses_9 \u{b7} 1 iteration \u{b7} 900 in / 10 out tokens \u{b7} 0% cached \u{b7} cost unknown \u{b7} 300 ms"
        );
    }

    #[test]
    fn a_run_cut_short_still_names_its_session() {
        let totals = RunTotals::default();
        assert_eq!(
            summary_line("ses_3", &totals),
            "session ses_3 \u{b7} 0 in / 0 out tokens \u{b7} cost unknown"
        );
        assert_eq!(
            iteration_limit_line("ses_3", 90),
            "stopped at the iteration limit (90); continue with: herald run --resume ses_3 \"continue\" (or raise it with --max-iterations)"
        );
    }
}
