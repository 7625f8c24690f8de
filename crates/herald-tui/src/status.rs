//! The status line at the bottom of the pane: what is happening (a spinner
//! with elapsed time while the model or a tool works), and what the session
//! costs — model, context used, tokens of the whole delegation tree,
//! cache-hit share, cost.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::cells::dim;

/// Spinner frames, one per tick.
pub const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Everything the status line shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    pub model: String,
    /// The model of the next session (`/model`), when it differs.
    pub next_model: Option<String>,
    /// Prompt tokens of the root agent's latest request.
    pub context_tokens: u64,
    pub context_window: u64,
    /// The whole delegation tree's tokens so far in this session.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    /// The whole tree's cost; `None` until a priced request was made.
    pub cost_usd: Option<f64>,
    /// Requests whose model has no price (their cost is unknown).
    pub unpriced_requests: u32,
    /// What runs now, with elapsed milliseconds.
    pub activity: Option<(String, u64)>,
    pub spinner_frame: usize,
    /// Prompts waiting for the turn to end.
    pub queued: usize,
    /// A passing hint (`press Ctrl+C again to exit`).
    pub hint: Option<String>,
}

impl Status {
    /// The share of the context window the latest request used, in percent.
    pub fn context_percent(&self) -> Option<u64> {
        (self.context_window > 0)
            .then(|| (self.context_tokens.saturating_mul(100) / self.context_window).min(100))
    }

    /// Cached prompt tokens as a share of all prompt tokens, in percent.
    pub fn cache_percent(&self) -> Option<u64> {
        (self.input_tokens > 0).then(|| self.cached_tokens * 100 / self.input_tokens)
    }

    /// The cost as people read it (`$0.0148`), `$?` when unknown.
    pub fn cost_text(&self) -> String {
        match self.cost_usd {
            Some(cost) if self.unpriced_requests == 0 => crate::format::cost(Some(cost)),
            Some(cost) => format!("{}+?", crate::format::cost(Some(cost))),
            None if self.unpriced_requests > 0 => "$?".to_owned(),
            None => "$0".to_owned(),
        }
    }

    fn left(&self) -> Line<'static> {
        let mut spans = Vec::new();
        if let Some((label, elapsed_ms)) = &self.activity {
            spans.push(Span::styled(
                format!("{} ", SPINNER[self.spinner_frame % SPINNER.len()]),
                Style::default().fg(Color::Cyan),
            ));
            spans.push(Span::raw(label.clone()));
            spans.push(Span::styled(
                format!(" {} · Esc interrupts", elapsed(*elapsed_ms)),
                dim(),
            ));
        }
        if self.queued > 0 {
            spans.push(Span::styled(
                format!("  {} queued", self.queued),
                Style::default().fg(Color::Yellow),
            ));
        }
        if let Some(hint) = &self.hint {
            if !spans.is_empty() {
                spans.push(Span::raw("  "));
            }
            spans.push(Span::styled(
                hint.clone(),
                Style::default().fg(Color::Yellow),
            ));
        }
        Line::from(spans)
    }

    fn right(&self) -> Line<'static> {
        let mut parts = vec![Span::styled(
            self.model.clone(),
            Style::default().fg(Color::Cyan),
        )];
        if let Some(next) = &self.next_model {
            parts.push(Span::styled(format!(" (next: {next})"), dim()));
        }
        let mut facts = Vec::new();
        if let Some(percent) = self.context_percent() {
            facts.push(format!("ctx {percent}%"));
        }
        facts.push(format!(
            "↑{} ↓{}",
            crate::format::tokens(self.input_tokens),
            crate::format::tokens(self.output_tokens)
        ));
        if let Some(percent) = self.cache_percent() {
            facts.push(format!("{percent}% cached"));
        }
        facts.push(self.cost_text());
        parts.push(Span::styled(format!(" · {}", facts.join(" · ")), dim()));
        Line::from(parts)
    }
}

/// `12 s`, `3m 05s`.
fn elapsed(ms: u64) -> String {
    let seconds = ms / 1000;
    if seconds < 60 {
        format!("{seconds}s")
    } else {
        format!("{}m {:02}s", seconds / 60, seconds % 60)
    }
}

impl Widget for &Status {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 {
            return;
        }
        let right = self.right();
        let right_width = right.width() as u16;
        let left = self.left();
        let left_width = left.width() as u16;
        if left_width + 2 + right_width <= area.width {
            left.render(area, buf);
            let right_area = Rect::new(area.right() - right_width, area.y, right_width, 1);
            right.render(right_area, buf);
        } else if left_width > 0 {
            // Too narrow for both: what happens now, or the hint, wins.
            left.render(area, buf);
        } else {
            right.render(area, buf);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;

    fn draw(status: &Status, width: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, 1)).unwrap();
        terminal
            .draw(|frame| frame.render_widget(status, frame.area()))
            .unwrap();
        format!("{}", terminal.backend())
    }

    fn busy() -> Status {
        Status {
            model: "gpt-4.1".into(),
            context_tokens: 12_000,
            context_window: 100_000,
            input_tokens: 12_345,
            output_tokens: 1_100,
            cached_tokens: 8_000,
            cost_usd: Some(0.014_779_999_999_999_998),
            activity: Some(("running terminal".into(), 12_400)),
            spinner_frame: 3,
            ..Status::default()
        }
    }

    #[test]
    fn the_status_line_while_working() {
        insta::assert_snapshot!(draw(&busy(), 100));
    }

    #[test]
    fn the_status_line_when_idle_with_a_hint_and_queue() {
        let status = Status {
            activity: None,
            queued: 2,
            hint: Some("press Ctrl+C again to exit".into()),
            next_model: Some("claude-sonnet-4-5".into()),
            ..busy()
        };
        insta::assert_snapshot!(draw(&status, 120));
    }

    #[test]
    fn a_narrow_terminal_keeps_the_activity() {
        insta::assert_snapshot!(draw(&busy(), 40));
    }

    #[test]
    fn costs_read_without_float_noise() {
        assert_eq!(busy().cost_text(), "$0.0148");
        let unknown = Status {
            cost_usd: None,
            unpriced_requests: 2,
            ..busy()
        };
        assert_eq!(unknown.cost_text(), "$?");
        assert_eq!(busy().context_percent(), Some(12));
        assert_eq!(busy().cache_percent(), Some(64));
    }
}
