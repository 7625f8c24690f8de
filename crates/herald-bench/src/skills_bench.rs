//! `herald-bench skills`: skills at pack scale. Builds a
//! 2,000-skill tree in a temp folder (the 43 skills of three popular packs
//! plus a Composio-style pack, nested, some with Title Case names) and times
//! discovery plus the prompt index, warm (issue target: < 100 ms); then
//! measures the index the system prompt gets for the 43-skill set and for
//! an 864-skill pack (`HERALD_BENCH_SHOW_INDEX=1` prints both to stderr).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use herald_knowledge::SkillRoots;
use herald_knowledge::skills::{SkillsIndex, build_index, fixture, rank};

use crate::ms;
use crate::stats::{median, percentile};

/// The default skills-index budget (`PromptBudgets::default().skills_chars`).
const INDEX_BUDGET: usize = 4_000;
/// Timed runs after one warm-up.
const RUNS: usize = 20;

fn discover_and_index(home: &Path) -> Result<(usize, SkillsIndex)> {
    let found = SkillRoots::new(home, home).discover();
    let skills: Vec<_> = found.for_model().collect();
    let index = build_index(&skills, INDEX_BUDGET).context("no skills found")?;
    Ok((found.skills.len(), index))
}

fn index_row(label: &str, home: &Path) -> Result<()> {
    let (_, index) = discover_and_index(home)?;
    if std::env::var_os("HERALD_BENCH_SHOW_INDEX").is_some() {
        eprintln!("{}\n", index.text);
    }
    println!(
        "| skills index, {label} | within {INDEX_BUDGET} chars; every skill named while names fit | {} chars ({} bytes); {} of {} named, {} with descriptions{} |",
        index.text.chars().count(),
        index.text.len(),
        index.named,
        index.skills,
        index.described,
        if index.description_chars > 0 {
            format!(
                " (each cut at a word boundary to at most {} chars)",
                index.description_chars
            )
        } else {
            String::new()
        }
    );
    Ok(())
}

/// Runs the skills benchmark and prints table rows.
pub(crate) fn run() -> Result<()> {
    let big = tempfile::tempdir()?;
    let skills = big.path().join("skills");
    fixture::popular_packs(&skills)?;
    fixture::service_pack(&skills, 2_000 - 43)?;
    discover_and_index(big.path())?;
    let mut times: Vec<Duration> = Vec::with_capacity(RUNS);
    let mut count = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        let (found, index) = discover_and_index(big.path())?;
        times.push(start.elapsed());
        count = found;
        black_box(index);
    }
    println!(
        "| discovery + prompt index of {count} skills, warm (p50 / p95 of {RUNS}) | < 100 ms | {:.1} ms / {:.1} ms |",
        ms(median(&times)),
        ms(percentile(&times, 0.95))
    );
    let found = SkillRoots::new(big.path(), big.path()).discover();
    let mut query_times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        black_box(rank(found.skills.iter(), black_box("zendesk tickets")));
        query_times.push(start.elapsed());
    }
    println!(
        "| skills_list query ranking over {count} skills (p50) | - | {:.2} ms |",
        ms(median(&query_times))
    );

    let popular = tempfile::tempdir()?;
    fixture::popular_packs(&popular.path().join("skills"))?;
    index_row("43 skills of three popular packs", popular.path())?;
    let composio = tempfile::tempdir()?;
    fixture::service_pack(&composio.path().join("skills"), 864)?;
    index_row("864-skill Composio-style pack", composio.path())?;
    Ok(())
}
