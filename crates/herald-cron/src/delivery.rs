//! Delivering a finished run's result, apart from the run itself: to a
//! webhook (a JSON POST, signed with HMAC-SHA256 when the job names a
//! secret), to a desktop notification, and to `notification` hooks of
//! kind `job_completed`. A reply beginning `[SILENT]` (or an empty one)
//! is kept in the ledger and not delivered. The webhook and the
//! notification are tried [`ATTEMPTS`] times with growing pauses; the
//! ledger records the delivery state, the attempts and the last error.
//! Runs whose delivery was still pending when a scheduler stopped are
//! delivered when the next one starts.

use std::time::Duration;

use herald_protocol::{DeliveryState, JobRunState};
use herald_store::{CronJob, CronRun};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};

use crate::runner::RunContext;

/// Tries per sink.
pub const ATTEMPTS: u32 = 3;

/// The header carrying the body's signature: `sha256=<hex>`.
pub const SIGNATURE_HEADER: &str = "X-Herald-Signature-256";

/// The marker that keeps a result from being delivered.
pub const SILENT: &str = "[SILENT]";

/// Pause before try `n` (1-based) after a failed one.
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500 * 2u64.pow(attempt.saturating_sub(1).min(6)))
}

/// Whether `run`'s result is kept but not delivered.
pub fn is_silent(run: &CronRun) -> bool {
    let result = run.result.as_deref().unwrap_or("").trim_start();
    result.starts_with(SILENT) || (run.state == JobRunState::Completed && result.is_empty())
}

/// The JSON every sink gets.
pub fn payload(job: &CronJob, run: &CronRun) -> Value {
    json!({
        "event": "job_completed",
        "job": job.spec.name,
        "run_id": run.id,
        "state": run.state,
        "trigger": run.trigger,
        "scheduled_for": run.scheduled_for,
        "finished_at": run.finished_at,
        "session_id": run.session_id,
        "result": run.result,
        "error": run.error,
        "cost_usd": run.cost_usd,
    })
}

/// `sha256=<hex>` of `body` under `secret`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let mut mac = match Hmac::<sha2_digest010::Sha256>::new_from_slice(secret) {
        Ok(mac) => mac,
        // HMAC takes keys of any length; this cannot happen.
        Err(_) => return String::new(),
    };
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// Delivers `run` of `job` to its sinks and records the outcome.
pub async fn deliver(ctx: &RunContext, job: &CronJob, run: &CronRun) -> DeliveryState {
    let (state, attempts, error) = if is_silent(run) {
        (DeliveryState::Silent, 0, None)
    } else {
        fire_hooks(ctx, job, run).await;
        send(ctx, job, run).await
    };
    let run_id = run.id;
    let recorded = ctx
        .store
        .call(move |s| s.set_cron_delivery(run_id, state, attempts, error.as_deref()))
        .await;
    if !matches!(recorded, Ok(Ok(()))) {
        tracing::warn!(run_id, "the delivery of a job run was not recorded");
    }
    state
}

/// Whether `job` has a sink beyond hooks.
pub fn has_sinks(job: &CronJob) -> bool {
    job.spec.webhook_url.is_some() || job.spec.notify
}

/// Tries the webhook and the notification; returns the state, the tries
/// made and the last error.
async fn send(
    ctx: &RunContext,
    job: &CronJob,
    run: &CronRun,
) -> (DeliveryState, u32, Option<String>) {
    if !has_sinks(job) {
        return (DeliveryState::None, 0, None);
    }
    let body = payload(job, run).to_string();
    let mut last_error = None;
    for attempt in 1..=ATTEMPTS {
        let mut failed = Vec::new();
        if let Some(url) = &job.spec.webhook_url
            && let Err(err) = post(ctx, job, url, &body).await
        {
            failed.push(err);
        }
        if job.spec.notify
            && let Err(err) = notify_desktop(job, run).await
        {
            failed.push(err);
        }
        if failed.is_empty() {
            return (DeliveryState::Delivered, attempt, None);
        }
        last_error = Some(failed.join("; "));
        if attempt < ATTEMPTS {
            tokio::time::sleep(backoff(attempt)).await;
        }
    }
    (DeliveryState::Failed, ATTEMPTS, last_error)
}

async fn post(ctx: &RunContext, job: &CronJob, url: &str, body: &str) -> Result<(), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .user_agent(herald_protocol::USER_AGENT)
        .build()
        .map_err(|err| format!("cannot build the webhook client: {err}"))?;
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("X-Herald-Job", job.spec.name.as_str());
    if let Some(var) = &job.spec.webhook_secret_env {
        let secret = ctx.env.get(var).filter(|v| !v.is_empty()).ok_or_else(|| {
            format!("the webhook secret variable {var} is not set for the scheduler")
        })?;
        request = request.header(
            SIGNATURE_HEADER,
            signature(secret.as_bytes(), body.as_bytes()),
        );
    }
    let response = request
        .body(body.to_owned())
        .send()
        .await
        .map_err(|err| format!("webhook {url}: {err}"))?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(format!("webhook {url} answered {}", response.status()))
    }
}

/// A desktop notification with the job's name and the result's start.
async fn notify_desktop(job: &CronJob, run: &CronRun) -> Result<(), String> {
    let title = format!("herald: {} {}", job.spec.name, run.state);
    let text: String = run
        .result
        .as_deref()
        .or(run.error.as_deref())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    let mut command = desktop_command(&title, &text);
    let status = command
        .status()
        .await
        .map_err(|err| format!("cannot show a desktop notification: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the desktop notification failed ({status})"))
    }
}

#[cfg(target_os = "macos")]
fn desktop_command(title: &str, text: &str) -> tokio::process::Command {
    let script = format!(
        "display notification {} with title {}",
        serde_json::Value::from(text),
        serde_json::Value::from(title)
    );
    let mut command = tokio::process::Command::new("osascript");
    command.args(["-e", &script]);
    command
}

#[cfg(not(target_os = "macos"))]
fn desktop_command(title: &str, text: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("notify-send");
    command.args(["--app-name=herald", title, text]);
    command
}

/// `notification` hooks of kind `job_completed`, best effort (their
/// failures show in the daemon's log, not in the delivery state).
async fn fire_hooks(ctx: &RunContext, job: &CronJob, run: &CronRun) {
    let Ok(settings) = herald_core::Settings::resolve_without_credentials(
        &ctx.config,
        &ctx.config_path,
        ctx.home.clone(),
        &ctx.env,
        &herald_core::Overrides {
            cwd: Some(job.spec.cwd.clone().into()),
            ..herald_core::Overrides::default()
        },
    ) else {
        return;
    };
    let fields = match payload(job, run) {
        Value::Object(map) => map,
        _ => return,
    };
    herald_core::hooks::Hooks::job_completed(
        &settings,
        run.session_id.as_deref().unwrap_or(""),
        fields,
    )
    .await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_the_body() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
