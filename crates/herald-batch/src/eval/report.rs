//! Reports of an eval run: `report.json` (everything, for tools and
//! `eval compare`), `report.md` (for people and pull requests) and
//! `report.html` (one page with inline SVG charts, nothing fetched).

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::metrics::{Attempt, SuiteMetrics, TaskMetrics};

/// Everything an eval run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub suite: String,
    /// The model the agent ran with (the default; tasks may name others).
    pub model: String,
    pub judge_model: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// The herald build that ran it.
    pub herald_version: String,
    pub metrics: SuiteMetrics,
    pub tasks: Vec<TaskMetrics>,
    pub attempts: Vec<Attempt>,
}

fn cost(c: Option<f64>) -> String {
    c.map_or_else(|| "–".to_owned(), |c| format!("${c:.4}"))
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The report as markdown.
pub fn markdown(report: &Report) -> String {
    let m = &report.metrics;
    let mut out = String::new();
    let _ = writeln!(out, "# Eval: {}\n", report.suite);
    let _ = writeln!(
        out,
        "model `{}`{} · herald {} · {}\n",
        report.model,
        report
            .judge_model
            .as_ref()
            .map_or_else(String::new, |j| format!(" · judge `{j}`")),
        report.herald_version,
        report.created_at
    );
    let _ = writeln!(out, "| metric | value |\n|---|---|");
    let _ = writeln!(out, "| tasks × repeats | {} × {} |", m.tasks, m.k);
    let _ = writeln!(out, "| pass rate | {} |", pct(m.pass_rate));
    let _ = writeln!(out, "| pass@{} | {} |", m.k, pct(m.pass_at_k));
    if m.k > 1 {
        let by: Vec<String> = m.pass_rate_by_repeat.iter().map(|p| pct(*p)).collect();
        let _ = writeln!(
            out,
            "| pass rate by repeat | {} (variance {:.4}) |",
            by.join(", "),
            m.pass_rate_variance
        );
    }
    let _ = writeln!(out, "| completion rate | {} |", pct(m.completion_rate));
    let _ = writeln!(
        out,
        "| tool calls per task | {:.2} |",
        m.tool_calls_per_task
    );
    let _ = writeln!(out, "| tokens per task | {:.0} |", m.tokens_per_task);
    let _ = writeln!(out, "| cost per task | {} |", cost(m.cost_per_task));
    let _ = writeln!(
        out,
        "| wall time per task | {:.2} s |\n",
        m.wall_ms_per_task / 1000.0
    );
    let _ = writeln!(
        out,
        "## Tasks\n\n| task | passed | pass rate | pass@{} | tool calls | tokens | cost | wall |\n|---|---|---|---|---|---|---|---|",
        m.k
    );
    for t in &report.tasks {
        let _ = writeln!(
            out,
            "| {} | {}/{} | {} | {} | {:.1} | {:.0} | {} | {:.2} s |",
            t.id,
            t.passes,
            t.attempts,
            pct(t.pass_rate),
            pct(t.pass_at_k),
            t.tool_calls,
            t.tokens,
            cost(t.cost_usd),
            t.wall_ms / 1000.0
        );
    }
    let failed: Vec<&Attempt> = report.attempts.iter().filter(|a| !a.passed).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "\n## Failed checks\n");
        for a in failed {
            for c in a.checks.iter().filter(|c| !c.passed) {
                let _ = writeln!(
                    out,
                    "- `{}` #{}: {} `{}`{}",
                    a.task_id,
                    a.repeat,
                    c.kind,
                    c.what.replace('`', "'"),
                    c.detail
                        .as_ref()
                        .map_or_else(String::new, |d| format!(" — {d}"))
                );
            }
            if let Some(error) = &a.result.error {
                let _ = writeln!(
                    out,
                    "- `{}` #{}: {}",
                    a.task_id,
                    a.repeat,
                    herald_protocol::one_line(error)
                );
            }
        }
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A horizontal bar chart as inline SVG: one bar per `(label, value)`,
/// `value` from 0 to `max`.
pub fn bar_chart(title: &str, bars: &[(String, f64)], max: f64, unit: &str) -> String {
    let row = 22;
    let label_w = 180;
    let bar_w = 360;
    let height = 30 + row * bars.len();
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"{}\">\
         <text x=\"0\" y=\"16\" font-weight=\"bold\">{}</text>",
        label_w + bar_w + 90,
        escape(title),
        escape(title)
    );
    for (i, (label, value)) in bars.iter().enumerate() {
        let y = 26 + row * i;
        let w = if max > 0.0 {
            (value / max * bar_w as f64).clamp(0.0, bar_w as f64)
        } else {
            0.0
        };
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>\
             <rect x=\"{label_w}\" y=\"{y}\" width=\"{w:.1}\" height=\"16\" fill=\"#4a7bd0\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"12\">{value:.3}{unit}</text>",
            y + 12,
            escape(label),
            label_w as f64 + w + 6.0,
            y + 12
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The report as one HTML page: the markdown tables as preformatted text
/// and charts of pass rate, tool calls and tokens per task.
pub fn html(report: &Report) -> String {
    let pass: Vec<(String, f64)> = report
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.pass_rate))
        .collect();
    let calls: Vec<(String, f64)> = report
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.tool_calls))
        .collect();
    let tokens: Vec<(String, f64)> = report
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.tokens))
        .collect();
    let max = |v: &[(String, f64)]| v.iter().map(|(_, x)| *x).fold(0.0, f64::max);
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Eval: {title}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}pre{{background:#f4f4f4;padding:1em;overflow:auto}}svg{{display:block;margin:1em 0}}</style>\
         </head><body>\n{c1}\n{c2}\n{c3}\n<pre>{md}</pre>\n</body></html>\n",
        title = escape(&report.suite),
        c1 = bar_chart("pass rate per task", &pass, 1.0, ""),
        c2 = bar_chart("tool calls per task", &calls, max(&calls), ""),
        c3 = bar_chart("tokens per task", &tokens, max(&tokens), ""),
        md = escape(&markdown(report)),
    )
}
