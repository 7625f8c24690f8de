//! Metrics of an eval run: per task and for the suite — pass rate,
//! pass@k over repeats and its variance, completion rate, tool calls,
//! tokens, cost and wall time per task.

use serde::{Deserialize, Serialize};

use super::checks::CheckOutcome;
use crate::results::{ItemResult, ItemStatus};

/// One attempt at a task: what the agent did and how the checks went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub task_id: String,
    /// Which repeat, from 0.
    pub repeat: u32,
    /// Every check passed (and the turn completed).
    pub passed: bool,
    pub checks: Vec<CheckOutcome>,
    pub result: ItemResult,
    /// The directory the attempt worked in.
    pub workdir: String,
}

/// The metrics of one task over its attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskMetrics {
    pub id: String,
    pub attempts: u32,
    pub passes: u32,
    pub pass_rate: f64,
    /// The chance at least one of `k` attempts passes (unbiased estimate).
    pub pass_at_k: f64,
    /// The variance of pass/fail over the attempts.
    pub variance: f64,
    pub tool_calls: f64,
    pub tokens: f64,
    pub cost_usd: Option<f64>,
    pub wall_ms: f64,
}

/// The metrics of the whole suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteMetrics {
    pub tasks: usize,
    pub attempts: usize,
    /// `--repeat`.
    pub k: u32,
    pub pass_rate: f64,
    /// Mean over tasks of their pass@k.
    pub pass_at_k: f64,
    /// The suite's pass rate in each repeat.
    pub pass_rate_by_repeat: Vec<f64>,
    /// The variance of the per-repeat pass rates.
    pub pass_rate_variance: f64,
    /// Attempts whose turn completed (whatever the checks said).
    pub completion_rate: f64,
    pub tool_calls_per_task: f64,
    pub tokens_per_task: f64,
    /// `None` when a model used has no price.
    pub cost_per_task: Option<f64>,
    pub wall_ms_per_task: f64,
}

/// pass@k from `n` attempts with `c` passes: 1 − C(n−c, k) / C(n, k).
pub fn pass_at_k(n: u32, c: u32, k: u32) -> f64 {
    if n == 0 || k == 0 {
        return 0.0;
    }
    let k = k.min(n);
    if n - c < k {
        return 1.0;
    }
    let mut fail_all = 1.0;
    for i in (n - c + 1)..=n {
        fail_all *= 1.0 - f64::from(k) / f64::from(i);
    }
    1.0 - fail_all
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

fn variance(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values.iter().copied());
    values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64
}

fn mean_cost(attempts: &[&Attempt]) -> Option<f64> {
    let costs: Option<Vec<f64>> = attempts.iter().map(|a| a.result.cost_usd).collect();
    costs.map(|c| mean(c.into_iter()))
}

/// Per-task and suite metrics of `attempts`, tasks in `order`.
pub fn compute(order: &[String], attempts: &[Attempt], k: u32) -> (SuiteMetrics, Vec<TaskMetrics>) {
    let mut tasks = Vec::with_capacity(order.len());
    for id in order {
        let mine: Vec<&Attempt> = attempts.iter().filter(|a| &a.task_id == id).collect();
        let n = u32::try_from(mine.len()).unwrap_or(u32::MAX);
        let c = u32::try_from(mine.iter().filter(|a| a.passed).count()).unwrap_or(u32::MAX);
        let outcomes: Vec<f64> = mine.iter().map(|a| f64::from(u8::from(a.passed))).collect();
        tasks.push(TaskMetrics {
            id: id.clone(),
            attempts: n,
            passes: c,
            pass_rate: if n == 0 {
                0.0
            } else {
                f64::from(c) / f64::from(n)
            },
            pass_at_k: pass_at_k(n, c, k),
            variance: variance(&outcomes),
            tool_calls: mean(mine.iter().map(|a| a.result.tool_calls() as f64)),
            tokens: mean(
                mine.iter()
                    .map(|a| (a.result.tokens.input + a.result.tokens.output) as f64),
            ),
            cost_usd: mean_cost(&mine),
            wall_ms: mean(mine.iter().map(|a| a.result.duration_ms as f64)),
        });
    }
    let by_repeat: Vec<f64> = (0..k)
        .map(|r| {
            mean(
                attempts
                    .iter()
                    .filter(|a| a.repeat == r)
                    .map(|a| f64::from(u8::from(a.passed))),
            )
        })
        .collect();
    let all: Vec<&Attempt> = attempts.iter().collect();
    let suite = SuiteMetrics {
        tasks: order.len(),
        attempts: attempts.len(),
        k,
        pass_rate: mean(attempts.iter().map(|a| f64::from(u8::from(a.passed)))),
        pass_at_k: mean(tasks.iter().map(|t| t.pass_at_k)),
        pass_rate_variance: variance(&by_repeat),
        pass_rate_by_repeat: by_repeat,
        completion_rate: mean(
            attempts
                .iter()
                .map(|a| f64::from(u8::from(a.result.status == ItemStatus::Completed))),
        ),
        tool_calls_per_task: mean(attempts.iter().map(|a| a.result.tool_calls() as f64)),
        tokens_per_task: mean(
            attempts
                .iter()
                .map(|a| (a.result.tokens.input + a.result.tokens.output) as f64),
        ),
        cost_per_task: mean_cost(&all),
        wall_ms_per_task: mean(attempts.iter().map(|a| a.result.duration_ms as f64)),
    };
    (suite, tasks)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn pass_at_k_matches_the_closed_form() {
        assert_eq!(pass_at_k(5, 0, 1), 0.0);
        assert_eq!(pass_at_k(5, 5, 1), 1.0);
        assert!((pass_at_k(5, 2, 1) - 0.4).abs() < 1e-12);
        // 1 - C(3,2)/C(5,2) = 1 - 3/10
        assert!((pass_at_k(5, 2, 2) - 0.7).abs() < 1e-12);
        assert_eq!(pass_at_k(3, 1, 3), 1.0);
        assert!((variance(&[1.0, 0.0, 1.0, 0.0]) - 1.0 / 3.0).abs() < 1e-12);
    }
}
