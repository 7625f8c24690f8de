//! `herald serve` under load: many concurrent sessions, each a
//! few sequential chat-completion turns, against the scripted model server
//! with a fixed latency. Every turn is one `read_file` call on a
//! three-line file, then a final text answer (two model requests).
//!
//! Server overhead per turn is the client-observed wall time of the HTTP
//! request minus the time the scripted server spent on that turn's model
//! requests (from each request's arrival to the last byte of its reply, as
//! the testkit records them; both clocks are this process's `Instant`).

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use herald_testkit::{RecordedRequest, Reply, Script, ScriptedServer};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::child::own_cpu;
use crate::ms;
use crate::stats::{median, percentile};

const TOKEN: &str = "herald-bench-serve-token";
const SESSION_HEADER: &str = "x-herald-session";

/// The shape of one run.
struct Plan {
    sessions: usize,
    turns: usize,
    latency: Duration,
}

/// One turn as the client saw it.
struct TurnTiming {
    session: usize,
    turn: usize,
    sent: Instant,
    answered: Instant,
}

/// What a session's client task returns.
struct SessionRun {
    turns: Vec<TurnTiming>,
}

/// The running `herald serve` process.
struct Served {
    child: tokio::process::Child,
    pid: libc::pid_t,
    url: String,
    // Held open so the server never writes to a closed pipe.
    _stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

/// `(user+system CPU, VmHWM in KiB, threads)` of `pid` from /proc.
fn proc_usage(pid: libc::pid_t) -> Result<(Duration, u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("malformed /proc/PID/stat")?;
    // Fields after the name start at field 3 (state); utime and stime are
    // fields 14 and 15.
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| -> Result<u64> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .context("malformed /proc/PID/stat")
    };
    let cpu_ticks = ticks(11)? + ticks(12)?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let cpu = Duration::from_nanos(cpu_ticks * 1_000_000_000 / hz);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok((cpu, field("VmHWM:"), field("Threads:")))
}

async fn start_server(
    herald: &Path,
    upstream: &ScriptedServer,
    home: &Path,
    work: &Path,
    max_turns: usize,
) -> Result<Served> {
    let stderr = std::fs::File::create(home.join("serve.stderr"))?;
    let mut cmd = tokio::process::Command::new(herald);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HERALD_HOME", home)
        .env("OPENAI_BASE_URL", upstream.openai_base_url())
        .env("OPENAI_API_KEY", "bench")
        .arg("--cwd")
        .arg(work)
        .args(["serve", "--port", "0", "--token", TOKEN])
        .arg("--max-concurrent-turns")
        .arg(max_turns.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true);
    let mut child = cmd.spawn().context("cannot start herald serve")?;
    let pid = child.id().context("herald serve has no pid")? as libc::pid_t;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .context("herald serve did not print its URL within 30 s")??
        .context("herald serve exited before printing its URL")?;
    let url = line
        .strip_prefix("herald serve listening on ")
        .with_context(|| format!("unexpected first line from herald serve: {line:?}"))?
        .to_owned();
    Ok(Served {
        child,
        pid,
        url,
        _stdout: lines,
    })
}

/// The user message of `turn` in `session`, and the answer the script
/// gives it.
fn prompt(session: usize, turn: usize) -> String {
    format!("bench session {session:03} turn {turn}: read small.txt")
}

fn answer_to(prompt: &str) -> String {
    format!("done: {prompt}")
}

/// One session's turns, sequential, continued by `X-Herald-Session`. The
/// client sends the whole conversation, as an OpenAI SDK program would.
async fn session_task(
    http: reqwest::Client,
    url: Arc<str>,
    session: usize,
    turns: usize,
) -> Result<SessionRun> {
    let mut id: Option<String> = None;
    let mut messages: Vec<Value> = Vec::new();
    let mut timings = Vec::with_capacity(turns);
    for turn in 0..turns {
        let text = prompt(session, turn);
        messages.push(json!({"role": "user", "content": text}));
        let mut request = http
            .post(&*url)
            .bearer_auth(TOKEN)
            .json(&json!({"model": "herald", "messages": messages}));
        if let Some(id) = &id {
            request = request.header(SESSION_HEADER, id);
        }
        let sent = Instant::now();
        let response = request.send().await?;
        let status = response.status().as_u16();
        let header = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body: Value = response.json().await?;
        let answered = Instant::now();
        if status != 200 {
            bail!("session {session} turn {turn}: HTTP {status}: {body}");
        }
        let content = body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default();
        let expected = answer_to(&text);
        if content != expected {
            bail!("session {session} turn {turn}: answer {content:?}, expected {expected:?}");
        }
        match (&id, header) {
            (None, Some(header)) => id = Some(header),
            (Some(id), Some(header)) if *id == header => {}
            (_, header) => {
                bail!("session {session} turn {turn}: X-Herald-Session {header:?}, expected {id:?}")
            }
        }
        messages.push(json!({"role": "assistant", "content": content}));
        timings.push(TurnTiming {
            session,
            turn,
            sent,
            answered,
        });
    }
    Ok(SessionRun { turns: timings })
}

/// Per-turn overheads, split into first turns (which open the session)
/// and later ones, from the client timings and the recorded requests.
struct Overheads {
    all: Vec<Duration>,
    first: Vec<Duration>,
    later: Vec<Duration>,
    /// Later turns split: request received → first model request; end of
    /// one reply → next model request (the tool call); end of the last
    /// reply → answer received.
    before: Vec<Duration>,
    between: Vec<Duration>,
    after: Vec<Duration>,
}

fn overheads(
    timings: &[TurnTiming],
    requests: &[RecordedRequest],
    per_turn: usize,
) -> Result<Overheads> {
    let mut by_session: HashMap<usize, Vec<&RecordedRequest>> = HashMap::new();
    for request in requests {
        let session = request
            .conversation
            .strip_prefix("bench session ")
            .and_then(|rest| rest.get(..3))
            .and_then(|n| n.parse().ok())
            .with_context(|| {
                format!(
                    "a model request of an unknown conversation: {:?}",
                    request.conversation
                )
            })?;
        by_session.entry(session).or_default().push(request);
    }
    let mut result = Overheads {
        all: Vec::new(),
        first: Vec::new(),
        later: Vec::new(),
        before: Vec::new(),
        between: Vec::new(),
        after: Vec::new(),
    };
    for t in timings {
        let mut inside: Vec<&&RecordedRequest> = by_session
            .get(&t.session)
            .map(|rs| {
                rs.iter()
                    .filter(|r| r.received_at >= t.sent && r.received_at <= t.answered)
                    .collect()
            })
            .unwrap_or_default();
        if inside.len() != per_turn {
            bail!(
                "session {} turn {}: {} model requests, expected {per_turn}",
                t.session,
                t.turn,
                inside.len()
            );
        }
        inside.sort_by_key(|r| r.received_at);
        let mut upstream = Duration::ZERO;
        let mut ends = Vec::with_capacity(inside.len());
        for r in &inside {
            upstream += r
                .duration()
                .context("a model request of a finished turn has no reply end")?;
            ends.push(r.responded_at.unwrap_or(r.received_at));
        }
        let overhead = t.answered.duration_since(t.sent).saturating_sub(upstream);
        result.all.push(overhead);
        if t.turn == 0 {
            result.first.push(overhead);
            continue;
        }
        result.later.push(overhead);
        result
            .before
            .push(inside[0].received_at.saturating_duration_since(t.sent));
        for (i, r) in inside.iter().enumerate().skip(1) {
            result
                .between
                .push(r.received_at.saturating_duration_since(ends[i - 1]));
        }
        if let Some(last) = ends.last() {
            result
                .after
                .push(t.answered.saturating_duration_since(*last));
        }
    }
    Ok(result)
}

async fn serve_load(herald: &Path, plan: Plan) -> Result<()> {
    let script = Script::new().responder(|view| {
        let last = view.last();
        if last.is_some_and(|m| m.role == "tool") {
            let ok = view
                .tool_results()
                .last()
                .is_some_and(|(_, content)| content.contains("two"));
            let asked = view
                .messages
                .iter()
                .rev()
                .find(|m| m.role == "user")
                .map_or("", |m| m.text.as_str());
            if ok {
                Reply::text(answer_to(asked))
            } else {
                Reply::text("read_file failed")
            }
        } else {
            Reply::tool("read_file", json!({"path": "small.txt", "limit": 3}))
        }
    });
    let upstream = ScriptedServer::start(script).await?;
    upstream.set_latency(plan.latency);
    // Checking every request on arrival costs this process about a
    // millisecond of CPU per request, which competes with herald serve for
    // the cores; the same checks run once over all requests after the load.
    upstream.skip_invariants(
        "herald-bench serve checks tool pairing and prefix stability once after the load (check_invariants), not on arrival",
    );
    let home = tempfile::tempdir()?;
    let work = tempfile::tempdir()?;
    std::fs::write(work.path().join("small.txt"), "one\ntwo\nthree\n")?;
    let mut served = start_server(herald, &upstream, home.path(), work.path(), plan.sessions)
        .await
        .context("starting herald serve")?;
    let (cpu_ready, _, _) = proc_usage(served.pid)?;

    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(plan.sessions + 16)
        .build()?;
    let url: Arc<str> = Arc::from(format!("{}/v1/chat/completions", served.url));
    let bench_cpu_start = own_cpu();
    let started = Instant::now();
    let tasks: Vec<_> = (0..plan.sessions)
        .map(|session| {
            tokio::spawn(session_task(
                http.clone(),
                Arc::clone(&url),
                session,
                plan.turns,
            ))
        })
        .collect();
    let mut timings = Vec::with_capacity(plan.sessions * plan.turns);
    let mut failures = Vec::new();
    for task in tasks {
        match task.await? {
            Ok(run) => timings.extend(run.turns),
            Err(err) => failures.push(format!("{err:#}")),
        }
    }
    let wall = started.elapsed();
    let bench_cpu = own_cpu().saturating_sub(bench_cpu_start);
    let (cpu_end, hwm_kb, threads) = proc_usage(served.pid)?;

    // SIGTERM and a clean exit.
    // SAFETY: `pid` is our own child, not yet reaped.
    unsafe { libc::kill(served.pid, libc::SIGTERM) };
    let exit = tokio::time::timeout(Duration::from_secs(30), served.child.wait()).await;
    let exit_ok = matches!(&exit, Ok(Ok(status)) if status.success());

    if !failures.is_empty() {
        let stderr = std::fs::read_to_string(home.path().join("serve.stderr")).unwrap_or_default();
        let tail: String = stderr
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        bail!(
            "{} of {} sessions failed; first: {}\nherald serve stderr (tail):\n{tail}",
            failures.len(),
            plan.sessions,
            failures[0]
        );
    }
    let expected = plan.sessions * plan.turns;
    if timings.len() != expected {
        bail!("{} turns completed, expected {expected}", timings.len());
    }
    if let Err(errors) = upstream.check_invariants() {
        bail!(
            "testkit invariants violated ({}): {}",
            errors.len(),
            errors.join("; ")
        );
    }
    let requests = upstream.requests();
    let per_turn = 2;
    if requests.len() != expected * per_turn {
        bail!(
            "{} model requests, expected {}",
            requests.len(),
            expected * per_turn
        );
    }
    let o = overheads(&timings, &requests, per_turn)?;
    let load_cpu = cpu_end.saturating_sub(cpu_ready);
    let walls: Vec<Duration> = timings
        .iter()
        .map(|t| t.answered.duration_since(t.sent))
        .collect();

    let latency = plan.latency.as_millis();
    println!(
        "| {} concurrent sessions × {} turns through `herald serve` at {latency} ms model latency (each turn: `read_file`, then the answer): turns completed with HTTP 200 and the expected answer | all | {}/{expected} |",
        plan.sessions,
        plan.turns,
        timings.len()
    );
    println!(
        "| server overhead per turn: client wall time − the scripted server's time on the turn's 2 requests (p50 / p95 of {}) | < 2 ms p50 | {:.2} ms / {:.2} ms |",
        o.all.len(),
        ms(median(&o.all)),
        ms(percentile(&o.all, 0.95))
    );
    println!(
        "| same, first turns only (they open the session; p50 / p95 of {}) | — | {:.2} ms / {:.2} ms |",
        o.first.len(),
        ms(median(&o.first)),
        ms(percentile(&o.first, 0.95))
    );
    println!(
        "| same, later turns only (continued by `X-Herald-Session`; p50 / p95 of {}) | — | {:.2} ms / {:.2} ms |",
        o.later.len(),
        ms(median(&o.later)),
        ms(percentile(&o.later, 0.95))
    );
    println!(
        "| later turns split (p50 / p95): HTTP request sent → first model request; end of the first reply → second model request (stream end, `read_file`, store, next request); end of the last reply → HTTP answer received | — | {:.2} / {:.2} ms; {:.2} / {:.2} ms; {:.2} / {:.2} ms |",
        ms(median(&o.before)),
        ms(percentile(&o.before, 0.95)),
        ms(median(&o.between)),
        ms(percentile(&o.between, 0.95)),
        ms(median(&o.after)),
        ms(percentile(&o.after, 0.95))
    );
    println!(
        "| client-observed turn wall time (p50 / p95; the floor is 2 × {latency} ms) | — | {:.1} ms / {:.1} ms |",
        ms(median(&walls)),
        ms(percentile(&walls, 0.95))
    );
    println!(
        "| peak RSS of the `herald serve` process (VmHWM at the end; {threads} threads) | < 150 MB | {:.1} MB |",
        hwm_kb as f64 / 1024.0
    );
    println!(
        "| total wall time of the {expected} turns | — | {:.2} s |",
        wall.as_secs_f64()
    );
    println!(
        "| `herald serve` CPU (user+system) during the load / per turn / whole process life | — | {:.0} ms / {:.2} ms / {:.0} ms |",
        ms(load_cpu),
        ms(load_cpu) / expected as f64,
        ms(cpu_end)
    );
    println!(
        "| for scale: CPU of this benchmark process (HTTP client and scripted model server) during the load | — | {:.0} ms |",
        ms(bench_cpu)
    );
    if !exit_ok {
        bail!("herald serve did not exit 0 on SIGTERM within 30 s: {exit:?}");
    }
    Ok(())
}

/// Runs the serve benchmark and prints table rows.
/// `HERALD_BENCH_SESSIONS` changes the number of sessions (default 100);
/// `HERALD_BENCH_SERVE_BINARY` runs another `herald` binary as the server
/// (say, one built with symbols, for `perf record -a`).
pub(crate) fn run(herald: &Path) -> Result<()> {
    let other = std::env::var_os("HERALD_BENCH_SERVE_BINARY").map(std::path::PathBuf::from);
    let herald = other.as_deref().unwrap_or(herald);
    let sessions = std::env::var("HERALD_BENCH_SESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100)
        .clamp(1, 999);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve_load(
        herald,
        Plan {
            sessions,
            turns: 5,
            latency: Duration::from_millis(50),
        },
    ))
}
