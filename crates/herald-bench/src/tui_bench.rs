//! `herald-bench tui`: what the terminal interface costs.
//!
//! The release `herald` runs under a pseudo-terminal (a vt100 screen that
//! answers the terminal's queries, `herald_testkit::pty`) against the
//! scripted server:
//! - Idle: CPU the TUI uses while it waits at an empty composer with
//!   nothing running, over a few seconds (target ~0: no busy redraw).
//! - Streaming: a 20,000-token markdown answer (paragraphs, lists, code
//!   blocks) streamed by the server as fast as it can write; how long after
//!   the server's last byte the answer's last line is on screen, and the
//!   CPU the whole turn took. The render rate this gives (tokens per second
//!   of CPU) compared with a provider's stream (tens to a few hundred
//!   tokens per second) says whether the TUI can fall behind.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use herald_testkit::pty::{PtySession, keys};
use herald_testkit::{Reply, Script, ScriptedServer};

use crate::ms;
use crate::stats::median;

/// How long the idle TUI is watched.
const IDLE: Duration = Duration::from_secs(5);
/// Streaming runs (one session each).
const RUNS: usize = 3;
/// The marker on the answer's last line.
const END: &str = "END-OF-THE-LONG-ANSWER";

/// CPU time (user + system) of process `pid` so far.
fn cpu_of(pid: i32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("cannot read /proc/{pid}/stat"))?;
    let (_, rest) = stat.rsplit_once(')').context("malformed /proc stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command name: state is field 3, utime 14 and stime 15.
    let utime: u64 = fields.get(11).context("no utime")?.parse()?;
    let stime: u64 = fields.get(12).context("no stime")?.parse()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Ok(Duration::from_micros((utime + stime) * 1_000_000 / ticks))
}

/// About `tokens` tokens (4 characters each) of varied markdown.
fn long_answer(tokens: usize) -> String {
    let mut text = String::with_capacity(tokens * 4 + 64);
    let mut section = 0;
    while text.len() < tokens * 4 {
        section += 1;
        text.push_str(&format!("## Part {section}\n\nThis paragraph explains **step {section}** of the change, with `inline code`, a [link](https://example.com/{section}) and enough words to wrap across several lines of a terminal that is one hundred and twenty columns wide.\n\n"));
        text.push_str("- first point, short\n- second point with *emphasis* and more text to wrap around the edge of the screen\n  - a nested point\n\n");
        text.push_str(&format!("```rust\nfn part_{section}(input: &str) -> Result<usize, Error> {{\n    let value = input.trim().parse::<usize>()?;\n    Ok(value * {section})\n}}\n```\n\n"));
    }
    text.push_str(END);
    text.push('\n');
    text
}

fn spawn(herald: &Path, server: &ScriptedServer, home: &Path, work: &Path) -> Result<PtySession> {
    let mut command = Command::new(herald);
    for (key, _) in std::env::vars() {
        if key.starts_with("OPENAI_") || key.starts_with("ANTHROPIC_") || key.starts_with("HERALD_")
        {
            command.env_remove(key);
        }
    }
    command
        .env("HERALD_HOME", home)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "sk-bench")
        .env("HERALD_MODEL", "gpt-4.1-mini")
        .arg("--cwd")
        .arg(work);
    let pty = PtySession::spawn(command, 40, 120)?;
    pty.wait_for(|text| text.contains("Ask herald"), Duration::from_secs(20))
        .map_err(|screen| anyhow::anyhow!("the TUI did not start: {screen}"))?;
    Ok(pty)
}

struct Streamed {
    lag: Duration,
    cpu: Duration,
}

/// One session: the idle CPU (first run only), then one long answer.
async fn stream_once(herald: &Path, answer: &str, idle: Option<&mut Duration>) -> Result<Streamed> {
    let reply = answer.to_owned();
    let server =
        ScriptedServer::start(Script::new().responder(move |_| Reply::text(reply.clone()))).await?;
    let home = tempfile::tempdir()?;
    let work = tempfile::tempdir()?;
    let pty = spawn(herald, &server, home.path(), work.path())?;
    let pid = pty.pid();
    if let Some(idle) = idle {
        // Let start-up work (the file index) settle first.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = cpu_of(pid)?;
        tokio::time::sleep(IDLE).await;
        *idle = cpu_of(pid)? - before;
    }
    let before = cpu_of(pid)?;
    pty.send_str("write the long answer");
    pty.send(keys::ENTER);
    let shown = tokio::task::spawn_blocking(move || {
        let result = pty.wait_for(|text| text.contains(END), Duration::from_secs(60));
        (result, Instant::now(), pty)
    })
    .await?;
    let (result, shown_at, pty) = shown;
    result.map_err(|screen| {
        anyhow::anyhow!(
            "the answer never showed: {}",
            &screen[screen.len().saturating_sub(2000)..]
        )
    })?;
    let cpu = cpu_of(pid)? - before;
    let requests = server.requests();
    let Some(responded) = requests.last().and_then(|r| r.responded_at) else {
        bail!("the server recorded no response");
    };
    pty.send(keys::CTRL_D);
    let _ = pty.wait_exit(Duration::from_secs(10));
    Ok(Streamed {
        lag: shown_at.saturating_duration_since(responded),
        cpu,
    })
}

/// Runs the TUI measurements and prints their table rows.
pub(crate) fn run(herald: &Path) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let answer = long_answer(20_000);
        let tokens = answer.len() / 4;
        let mut idle = Duration::ZERO;
        let mut lags = Vec::new();
        let mut cpus = Vec::new();
        for run in 0..RUNS {
            let measured = stream_once(herald, &answer, (run == 0).then_some(&mut idle)).await?;
            lags.push(measured.lag);
            cpus.push(measured.cpu);
        }
        println!(
            "| TUI idle CPU at an empty composer ({} s) | ~0 | {:.1} ms ({:.2} ms/s) |",
            IDLE.as_secs(),
            ms(idle),
            ms(idle) / IDLE.as_secs_f64()
        );
        let cpu = ms(median(&cpus));
        println!(
            "| TUI streaming a {tokens}-token markdown answer: on screen after the server's last byte (median of {RUNS}) | no falling behind | {:.0} ms |",
            ms(median(&lags))
        );
        println!(
            "| TUI CPU for that turn (median of {RUNS}) · render rate | ≫ provider stream rate | {cpu:.0} ms · {:.0}k tokens per CPU second |",
            tokens as f64 / (cpu / 1000.0) / 1000.0
        );
        Ok(())
    })
}
