//! `herald heartbeat on|off|status`: giving a session a heartbeat, taking
//! it away, and showing them all. `herald_cron::heartbeat` checks the
//! settings and wakes the sessions; `herald daemon` runs the wakes.

use clap::Subcommand;
use herald_cron::describe_time;
use herald_cron::heartbeat::{self, HEARTBEAT_FILE};
use herald_protocol::one_line;
use herald_store::Heartbeat;
use serde_json::json;

use crate::args::CommonArgs;
use crate::cron_cmd::{Context, context};
use crate::sessions_cmd::{call, print_json};
use crate::{CliError, Exit};

/// `herald heartbeat …`.
#[derive(Debug, Subcommand)]
pub(crate) enum HeartbeatAction {
    /// Wake a session every so often with HEARTBEAT.md while it is idle
    /// (`herald daemon` wakes it).
    On {
        /// How often: 30m, 1h, 1h30m (at least 1m).
        #[arg(long, value_name = "INTERVAL")]
        every: String,
        /// Only wake in these hours, such as 08:00-22:00 (22:00-06:00 spans
        /// midnight; default: at any hour).
        #[arg(long, value_name = "HH:MM-HH:MM")]
        active_hours: Option<String>,
        /// The time zone the active hours are read in (IANA name; default:
        /// this machine's).
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        /// The session (id or a unique start of it; default: the latest
        /// session of the current directory).
        session: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Stop a session's heartbeat.
    Off {
        /// The session (default: the latest session of the current
        /// directory).
        session: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Every heartbeat: its session, interval, hours, next wake and how
    /// the last one ended.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `herald heartbeat …`.
pub(crate) async fn heartbeat(
    common: &CommonArgs,
    action: HeartbeatAction,
) -> Result<Exit, CliError> {
    let ctx = context(common)?;
    match action {
        HeartbeatAction::On {
            every,
            active_hours,
            tz,
            session,
            json,
        } => on(&ctx, &every, active_hours, tz, session, json).await,
        HeartbeatAction::Off { session, json } => off(&ctx, session, json).await,
        HeartbeatAction::Status { json } => status(&ctx, json).await,
    }
}

/// The session `typed` names, or the latest of the current directory.
async fn session_of(ctx: &Context, typed: Option<String>) -> Result<String, CliError> {
    let Some(typed) = typed else {
        let dir = match &ctx.cwd {
            Some(dir) => dir.canonicalize().map_err(|err| {
                CliError::usage(anyhow::anyhow!("--cwd {}: {err}", dir.display()))
            })?,
            None => std::env::current_dir().map_err(CliError::failed)?,
        };
        let cwd = dir.display().to_string();
        let found = call(&ctx.store, move |s| s.latest_session_in(&cwd)).await?;
        return found.map(|record| record.id).ok_or_else(|| {
            CliError::usage(anyhow::anyhow!(
                "no session in {} yet; start one with `herald`, or name one (`herald sessions list` shows them)",
                dir.display()
            ))
        });
    };
    let id = crate::id_lookup::session_id(&ctx.store, &typed).await?;
    let lookup = id.clone();
    let record = call(&ctx.store, move |s| s.get_session(&lookup))
        .await?
        .ok_or_else(|| {
            CliError::usage(anyhow::anyhow!(
                "no session '{typed}'; `herald sessions list` shows the sessions"
            ))
        })?;
    if record.parent_session_id.is_some() {
        return Err(CliError::usage(anyhow::anyhow!(
            "{id} is a subagent's session; give the heartbeat to its root session"
        )));
    }
    Ok(id)
}

async fn on(
    ctx: &Context,
    every: &str,
    active_hours: Option<String>,
    tz: Option<String>,
    session: Option<String>,
    json: bool,
) -> Result<Exit, CliError> {
    let settings = heartbeat::define(every, active_hours.as_deref(), tz.as_deref())
        .map_err(CliError::usage)?;
    let id = session_of(ctx, session).await?;
    let now = ctx.clock.now_ms();
    let hours = settings.active_hours.map(|h| h.to_string());
    let tz_name = settings.tz.name().to_owned();
    let every_ms = settings.every_ms;
    let first = now.saturating_add(every_ms);
    let session_id = id.clone();
    let stored = call(&ctx.store, move |s| {
        s.set_heartbeat(
            &session_id,
            every_ms,
            hours.as_deref(),
            &tz_name,
            first,
            now,
        )
    })
    .await?;
    if json {
        print_json(&stored)?;
        return Ok(Exit::Completed);
    }
    println!(
        "heartbeat on for {id}: every {}{}; first wake {}",
        interval(stored.every_ms),
        stored
            .active_hours
            .as_ref()
            .map(|h| format!(", {h} ({})", stored.tz))
            .unwrap_or_default(),
        describe(stored.next_due_at, &stored.tz)
    );
    let record_id = id.clone();
    if let Some(record) = call(&ctx.store, move |s| s.get_session(&record_id)).await? {
        let file = heartbeat::heartbeat_file(record.cwd.as_ref(), &ctx.run.home);
        if heartbeat::heartbeat_text(record.cwd.as_ref(), &ctx.run.home).is_none() {
            println!(
                "{} is missing or empty: wakes are skipped (no model request) until it says what to check",
                file.display()
            );
        } else {
            println!("each wake sends {}", file.display());
        }
    }
    println!("`herald daemon` wakes it while no other herald process holds the session");
    Ok(Exit::Completed)
}

async fn off(ctx: &Context, session: Option<String>, json: bool) -> Result<Exit, CliError> {
    let id = session_of(ctx, session).await?;
    let lookup = id.clone();
    if !call(&ctx.store, move |s| s.remove_heartbeat(&lookup)).await? {
        return Err(CliError::usage(anyhow::anyhow!(
            "session {id} has no heartbeat; `herald heartbeat status` lists them"
        )));
    }
    if json {
        print_json(&json!({ "session_id": id, "heartbeat": "off" }))?;
    } else {
        println!("heartbeat off for {id}");
    }
    Ok(Exit::Completed)
}

async fn status(ctx: &Context, json: bool) -> Result<Exit, CliError> {
    let all = call(&ctx.store, |s| s.heartbeats()).await?;
    if json {
        print_json(&all)?;
        return Ok(Exit::Completed);
    }
    if all.is_empty() {
        println!(
            "no heartbeats; `herald heartbeat on --every 30m` gives the latest session here one \
             (it reads {HEARTBEAT_FILE})"
        );
        return Ok(Exit::Completed);
    }
    for hb in &all {
        print_one(hb);
    }
    Ok(Exit::Completed)
}

fn print_one(hb: &Heartbeat) {
    let hours = hb
        .active_hours
        .as_ref()
        .map(|h| format!(" {h} ({})", hb.tz))
        .unwrap_or_default();
    let last = match (hb.last_wake_at, &hb.last_outcome) {
        (Some(at), Some(outcome)) => {
            let detail = hb
                .last_reply
                .as_deref()
                .map(|r| format!(": {}", one_line(r)))
                .unwrap_or_default();
            format!("{outcome} at {}{detail}", describe(at, &hb.tz))
        }
        _ => "never".to_owned(),
    };
    println!(
        "{}  every {}{hours}  next {}  last {last}",
        hb.session_id,
        interval(hb.every_ms),
        describe(hb.next_due_at, &hb.tz)
    );
}

fn describe(at: i64, tz: &str) -> String {
    describe_time(at, herald_cron::time_zone(tz).unwrap_or(chrono_tz::Tz::UTC))
}

/// `90m` → `1h30m`.
fn interval(ms: i64) -> String {
    let mut minutes = ms / 60_000;
    let mut text = String::new();
    for (unit, size) in [("d", 1440), ("h", 60)] {
        if minutes >= size {
            text.push_str(&format!("{}{unit}", minutes / size));
            minutes %= size;
        }
    }
    if minutes > 0 || text.is_empty() {
        text.push_str(&format!("{minutes}m"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::interval;

    #[test]
    fn intervals_read_like_they_are_written() {
        assert_eq!(interval(60_000), "1m");
        assert_eq!(interval(5_400_000), "1h30m");
        assert_eq!(interval(86_400_000), "1d");
    }
}
