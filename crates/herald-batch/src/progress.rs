//! Progress of a run: on a terminal a bar redrawn in place (done, failed,
//! running, rate, ETA, spend); otherwise one plain line per finished item
//! so logs stay readable.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::results::{ItemResult, ItemStatus};

/// Counters of a run and how they are shown.
pub struct Progress {
    total: usize,
    done: usize,
    failed: usize,
    running: usize,
    spent: f64,
    started: Instant,
    terminal: bool,
    last_draw: Option<Instant>,
    quiet: bool,
}

impl Progress {
    /// `total` items to run; `terminal` draws the bar, `quiet` shows
    /// nothing (`--json`).
    pub fn new(total: usize, terminal: bool, quiet: bool) -> Self {
        Self {
            total,
            done: 0,
            failed: 0,
            running: 0,
            spent: 0.0,
            started: Instant::now(),
            terminal,
            last_draw: None,
            quiet,
        }
    }

    /// An item started.
    pub fn started(&mut self) {
        self.running += 1;
        self.draw(false);
    }

    /// An item finished with `result`.
    pub fn finished(&mut self, result: &ItemResult) {
        self.running = self.running.saturating_sub(1);
        self.done += 1;
        if result.status != ItemStatus::Completed {
            self.failed += 1;
        }
        self.spent += result.cost_usd.unwrap_or(0.0);
        if self.quiet {
            return;
        }
        if self.terminal {
            self.draw(false);
        } else {
            let mut line = format!(
                "[{}/{}] {} {} in {:.1}s",
                self.done,
                self.total,
                result.id,
                result.status.as_str(),
                result.duration_ms as f64 / 1000.0
            );
            if let Some(error) = &result.error {
                line.push_str(": ");
                line.push_str(&herald_protocol::one_line(error));
            }
            eprintln!("{line}");
        }
    }

    /// Clears the bar before the summary.
    pub fn finish(&mut self) {
        if self.terminal && !self.quiet {
            self.draw(true);
            eprintln!();
        }
    }

    /// The bar's text.
    pub fn line(&self) -> String {
        let elapsed = self.started.elapsed().as_secs_f64().max(0.001);
        let rate = self.done as f64 / elapsed;
        let left = self.total.saturating_sub(self.done);
        let eta = if rate > 0.0 {
            format_duration(Duration::from_secs_f64(left as f64 / rate))
        } else {
            "–".to_owned()
        };
        let width = 24;
        let filled = (self.done * width).checked_div(self.total).unwrap_or(width);
        format!(
            "[{}{}] {}/{} done · {} failed · {} running · {:.2}/s · ETA {} · ${:.4}",
            "█".repeat(filled),
            "░".repeat(width - filled.min(width)),
            self.done,
            self.total,
            self.failed,
            self.running,
            rate,
            eta,
            self.spent
        )
    }

    fn draw(&mut self, force: bool) {
        if !self.terminal || self.quiet {
            return;
        }
        let now = Instant::now();
        if !force
            && self
                .last_draw
                .is_some_and(|t| now - t < Duration::from_millis(100))
        {
            return;
        }
        self.last_draw = Some(now);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{}", self.line());
        let _ = err.flush();
    }
}

/// `1:02:03` or `2:03`.
fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}
