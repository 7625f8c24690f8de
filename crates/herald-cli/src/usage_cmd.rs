//! `herald usage [--since 7d] [--by day|model|session|project] [--json]`:
//! spend, tokens and the cache-hit share from the store's per-request usage
//! rows (the sums are the store's; this only renders them).

use clap::{Args, ValueEnum};
use herald_protocol::UsageTotals;
use herald_store::{UsageGrouping, UsageRow};

use crate::args::CommonArgs;
use crate::sessions_cmd::print_json;
use crate::setup;
use crate::{CliError, Exit};

/// `herald usage` options.
#[derive(Debug, Args)]
pub(crate) struct UsageArgs {
    /// Only requests since then: an age (`7d`, `12h`, `30m`) or a date
    /// (`2026-11-01`); all when absent.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// How rows are grouped.
    #[arg(long, value_enum, default_value_t = By::Day)]
    pub by: By,
    /// JSON: `{since_ms, by, rows, total}`.
    #[arg(long)]
    pub json: bool,
}

/// `--by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum By {
    Day,
    Model,
    Session,
    Project,
}

impl By {
    fn grouping(self) -> UsageGrouping {
        match self {
            By::Day => UsageGrouping::Day,
            By::Model => UsageGrouping::Model,
            By::Session => UsageGrouping::Session,
            By::Project => UsageGrouping::Project,
        }
    }

    fn name(self) -> &'static str {
        match self {
            By::Day => "day",
            By::Model => "model",
            By::Session => "session",
            By::Project => "project",
        }
    }
}

/// Runs `herald usage`; a bad `--since` is a usage error (exit 2).
pub(crate) async fn usage(common: &CommonArgs, args: UsageArgs) -> Result<Exit, CliError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let period = herald_core::time_bound::parse_period(args.since.as_deref(), None, now)
        .map_err(|err| CliError::usage(anyhow::anyhow!("--since: {err}")))?;
    let env = setup::environment();
    let (home, _) = setup::config_location(common, &env);
    let store = setup::open_store(&home)?;
    let grouping = args.by.grouping();
    let since_ms = period.since_ms;
    let rows = herald_core::runtime::Catalog::new(store)
        .usage(since_ms, grouping)
        .await
        .map_err(setup::runtime_error)?;
    let total = total(&rows);
    if args.json {
        print_json(&serde_json::json!({
            "since_ms": since_ms,
            "by": args.by.name(),
            "rows": rows,
            "total": total,
        }))?;
    } else {
        print!("{}", table(args.by.name(), &rows, &total));
    }
    Ok(Exit::Completed)
}

/// The sum of all rows (unknown cost when any row's is).
fn total(rows: &[UsageRow]) -> UsageTotals {
    herald_core::runtime::Catalog::usage_total(rows)
}

fn cost_text(cost: Option<f64>) -> String {
    cost.map_or_else(
        || "unknown".to_owned(),
        |usd| format!("${:.6}", herald_protocol::round_cost(usd)),
    )
}

fn cache_share(t: &UsageTotals) -> String {
    (t.cached * 100)
        .checked_div(t.input)
        .map_or_else(|| "-".to_owned(), |share| format!("{share}%"))
}

/// The human table: one line per group and a total line.
fn table(by: &str, rows: &[UsageRow], total: &UsageTotals) -> String {
    if rows.is_empty() {
        return "no usage recorded in this period\n".to_owned();
    }
    let width = rows
        .iter()
        .map(|r| r.key.chars().count())
        .chain([by.len(), 5])
        .max()
        .unwrap_or(5);
    let mut out = format!(
        "{by:<width$}  {:>8}  {:>12}  {:>10}  {:>6}  {:>12}\n",
        "requests", "input", "output", "cached", "cost"
    );
    let line = |key: &str, t: &UsageTotals| {
        format!(
            "{:<width$}  {:>8}  {:>12}  {:>10}  {:>6}  {:>12}\n",
            herald_protocol::terminal_safe(key),
            t.requests,
            t.input,
            t.output,
            cache_share(t),
            cost_text(t.cost_usd)
        )
    };
    for row in rows {
        out.push_str(&line(&row.key, &row.totals));
    }
    out.push_str(&line("total", total));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn row(key: &str, input: u64, cached: u64, cost: Option<f64>) -> UsageRow {
        UsageRow {
            key: key.into(),
            totals: UsageTotals {
                input,
                output: 1,
                cached,
                cache_creation: 0,
                cost_usd: cost,
                requests: 1,
            },
        }
    }

    #[test]
    fn the_table_gives_cache_share_and_an_unknown_total() {
        let rows = [
            row("gpt-4.1", 1000, 600, Some(0.1)),
            row("local", 10, 0, None),
        ];
        let total = total(&rows);
        assert_eq!(total.cost_usd, None);
        let text = table("model", &rows, &total);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(
            lines[1].contains("60%") && lines[1].contains("$0.100000"),
            "{text}"
        );
        assert!(lines[2].contains("unknown"), "{text}");
        assert!(
            lines[3].starts_with("total") && lines[3].contains("unknown"),
            "{text}"
        );
        let priced = [row("a", 3, 0, Some(0.1)), row("b", 3, 0, Some(0.2))];
        assert_eq!(total_cost(&priced), "$0.300000");
    }

    fn total_cost(rows: &[UsageRow]) -> String {
        cost_text(total(rows).cost_usd)
    }
}
