//! Stores every permission decision (`herald permissions log`).

use herald_sandbox::Redactor;
use herald_store::{DecidedBy, NewDecision, Ruling};
use sha2::{Digest, Sha256};

use crate::StoreHandle;

/// Longest argument preview kept in the log.
const SUMMARY_CHARS: usize = 300;

/// Where decisions go; without a store they are only traced.
#[derive(Clone)]
pub(crate) struct Audit {
    pub(crate) store: Option<StoreHandle>,
}

/// One decision, as the gate reached it.
pub(crate) struct Entry<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) agent_id: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) args: &'a serde_json::Value,
    pub(crate) decision: Ruling,
    pub(crate) rule: Option<&'a str>,
    pub(crate) reason: &'a str,
    pub(crate) decided_by: DecidedBy,
}

impl Audit {
    /// Records `entry`. A store failure costs only this row, so it is
    /// logged rather than failing the call.
    pub(crate) async fn record(&self, entry: Entry<'_>, redactor: &Redactor) {
        let row = NewDecision {
            session_id: entry.session_id.to_owned(),
            agent_id: entry.agent_id.to_owned(),
            tool: entry.tool.to_owned(),
            arguments_digest: digest(entry.args),
            summary: redactor.redact(&summary(entry.args)).into_owned(),
            decision: entry.decision,
            rule: entry.rule.map(str::to_owned),
            reason: redactor.redact(entry.reason).into_owned(),
            decided_by: entry.decided_by,
        };
        tracing::debug!(
            tool = %row.tool,
            decision = %row.decision,
            rule = row.rule.as_deref().unwrap_or(""),
            by = %row.decided_by,
            "permission decision"
        );
        let Some(store) = &self.store else {
            return;
        };
        // Queued, not awaited: the row is written in order before the
        // tool's result, and the agent does not wait a round trip for it.
        store.send(move |s| {
            if let Err(err) = s.record_decisions(std::slice::from_ref(&row)) {
                tracing::warn!(%err, "cannot record a permission decision");
            }
        });
    }
}

/// SHA-256 of the arguments' JSON text, hex.
pub(crate) fn digest(args: &serde_json::Value) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    // Hashed as serialised, without building the text first.
    let _ = serde_json::to_writer(HashWriter(&mut hasher), args);
    let hash = hasher.finalize();
    let mut out = String::with_capacity(hash.len() * 2);
    for byte in hash {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

/// Feeds what is written into a hash.
struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What the call was about in one line: the command, the path, or the
/// arguments' JSON, cut to a preview.
pub(crate) fn summary(args: &serde_json::Value) -> String {
    let text = ["command", "path", "code", "url"]
        .iter()
        .find_map(|key| args.get(key).and_then(|v| v.as_str()).map(str::to_owned))
        .unwrap_or_else(|| args.to_string());
    match text.char_indices().nth(SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_the_sha256_of_the_arguments_json_text() {
        // sha256 of `{"a":1,"b":"x y"}`, as `sha256sum` gives it.
        assert_eq!(
            digest(&serde_json::json!({"a": 1, "b": "x y"})),
            "6636d05d410fb2fe93c0955e24c2fe3684e2413aab9a92e96f2b00b64ab2340b"
        );
    }

    #[test]
    fn summaries_name_the_command_or_path_and_stay_short() {
        assert_eq!(summary(&serde_json::json!({"command": "ls -la"})), "ls -la");
        assert_eq!(summary(&serde_json::json!({"path": "/etc/x"})), "/etc/x");
        assert_eq!(summary(&serde_json::json!({"n": 1})), "{\"n\":1}");
        let long = "x".repeat(1000);
        assert_eq!(
            summary(&serde_json::json!({ "command": long }))
                .chars()
                .count(),
            SUMMARY_CHARS + 1
        );
        assert_eq!(digest(&serde_json::json!({"a": 1})).len(), 64);
    }
}
