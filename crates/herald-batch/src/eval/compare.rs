//! `herald eval compare A B`: two eval runs of the same suite (two models,
//! prompts or herald builds) side by side — suite metrics, per-task
//! differences, and a sign test over the tasks whose pass rate differs.

use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use super::report::Report;
use crate::BatchError;

/// One task in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskDiff {
    pub id: String,
    pub pass_rate_a: f64,
    pub pass_rate_b: f64,
    /// B − A.
    pub delta: f64,
}

/// The comparison of two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub pass_rate_a: f64,
    pub pass_rate_b: f64,
    pub cost_per_task_a: Option<f64>,
    pub cost_per_task_b: Option<f64>,
    pub tool_calls_per_task_a: f64,
    pub tool_calls_per_task_b: f64,
    pub tasks: Vec<TaskDiff>,
    /// Tasks where B did better, and where A did.
    pub b_better: usize,
    pub a_better: usize,
    /// Two-sided p-value of the sign test over the differing tasks.
    pub p_value: f64,
    /// Tasks in only one of the runs.
    pub unmatched: Vec<String>,
    /// What the p-value means here, in words.
    pub note: String,
}

/// Reads `report.json` of a run directory (or the file itself).
pub fn load_report(path: &Path) -> Result<Report, BatchError> {
    let file = if path.is_dir() {
        path.join("report.json")
    } else {
        path.to_path_buf()
    };
    let bytes = std::fs::read(&file).map_err(|err| {
        BatchError::Invalid(format!(
            "{}: {err}; pass the output directory of `herald eval run` (it holds report.json)",
            file.display()
        ))
    })?;
    serde_json::from_slice(&bytes)
        .map_err(|err| BatchError::input(&file, 1, format!("not an eval report: {err}")))
}

/// Two-sided exact sign test: `x` successes of `n` at p = ½.
pub fn sign_test(x: usize, n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let tail = x.min(n - x);
    // Sum of C(n, i) / 2^n for i ≤ tail, computed in log space.
    let ln_choose = |n: usize, k: usize| -> f64 {
        (1..=k)
            .map(|i| ((n - k + i) as f64).ln() - (i as f64).ln())
            .sum()
    };
    let p: f64 = (0..=tail)
        .map(|i| (ln_choose(n, i) - n as f64 * std::f64::consts::LN_2).exp())
        .sum();
    (2.0 * p).min(1.0)
}

/// Compares run `a` with run `b`.
pub fn compare(a: &Report, a_name: &str, b: &Report, b_name: &str) -> Comparison {
    let mut tasks = Vec::new();
    let mut unmatched = Vec::new();
    for ta in &a.tasks {
        match b.tasks.iter().find(|tb| tb.id == ta.id) {
            Some(tb) => tasks.push(TaskDiff {
                id: ta.id.clone(),
                pass_rate_a: ta.pass_rate,
                pass_rate_b: tb.pass_rate,
                delta: tb.pass_rate - ta.pass_rate,
            }),
            None => unmatched.push(ta.id.clone()),
        }
    }
    unmatched.extend(
        b.tasks
            .iter()
            .filter(|tb| !a.tasks.iter().any(|ta| ta.id == tb.id))
            .map(|tb| tb.id.clone()),
    );
    let b_better = tasks.iter().filter(|t| t.delta > 0.0).count();
    let a_better = tasks.iter().filter(|t| t.delta < 0.0).count();
    let p_value = sign_test(b_better, a_better + b_better);
    let note = if a_better + b_better == 0 {
        "no task's pass rate differs; nothing to test".to_owned()
    } else if p_value < 0.05 {
        format!(
            "significant at 5% (sign test over the {} tasks that differ, p = {p_value:.3})",
            a_better + b_better
        )
    } else {
        format!(
            "not significant at 5% (sign test over the {} tasks that differ, p = {p_value:.3}); more tasks or repeats would tell",
            a_better + b_better
        )
    };
    Comparison {
        a: a_name.to_owned(),
        b: b_name.to_owned(),
        pass_rate_a: a.metrics.pass_rate,
        pass_rate_b: b.metrics.pass_rate,
        cost_per_task_a: a.metrics.cost_per_task,
        cost_per_task_b: b.metrics.cost_per_task,
        tool_calls_per_task_a: a.metrics.tool_calls_per_task,
        tool_calls_per_task_b: b.metrics.tool_calls_per_task,
        tasks,
        b_better,
        a_better,
        p_value,
        unmatched,
        note,
    }
}

/// The comparison as markdown.
pub fn markdown(c: &Comparison) -> String {
    let cost = |x: Option<f64>| x.map_or_else(|| "–".to_owned(), |x| format!("${x:.4}"));
    let mut out = format!("# Eval comparison\n\nA = `{}`, B = `{}`\n\n", c.a, c.b);
    let _ = writeln!(out, "| | A | B |\n|---|---|---|");
    let _ = writeln!(
        out,
        "| pass rate | {:.1}% | {:.1}% |",
        c.pass_rate_a * 100.0,
        c.pass_rate_b * 100.0
    );
    let _ = writeln!(
        out,
        "| tool calls per task | {:.2} | {:.2} |",
        c.tool_calls_per_task_a, c.tool_calls_per_task_b
    );
    let _ = writeln!(
        out,
        "| cost per task | {} | {} |\n",
        cost(c.cost_per_task_a),
        cost(c.cost_per_task_b)
    );
    let _ = writeln!(out, "| task | A | B | B − A |\n|---|---|---|---|");
    for t in &c.tasks {
        let _ = writeln!(
            out,
            "| {} | {:.0}% | {:.0}% | {:+.0} pts |",
            t.id,
            t.pass_rate_a * 100.0,
            t.pass_rate_b * 100.0,
            t.delta * 100.0
        );
    }
    let _ = writeln!(
        out,
        "\nB better on {} tasks, A better on {}: {}.",
        c.b_better, c.a_better, c.note
    );
    if !c.unmatched.is_empty() {
        let _ = writeln!(
            out,
            "\nIn only one run (not compared): {}.",
            c.unmatched.join(", ")
        );
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_sign_test_matches_the_binomial() {
        assert_eq!(sign_test(0, 0), 1.0);
        // 2 * (1/2^5) for 0 of 5.
        assert!((sign_test(0, 5) - 0.0625).abs() < 1e-12);
        assert!((sign_test(5, 5) - 0.0625).abs() < 1e-12);
        assert_eq!(sign_test(3, 6), 1.0);
        assert!(sign_test(10, 10) < 0.01);
    }
}
