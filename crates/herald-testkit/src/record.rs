//! What the server remembers about each request it received.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::normalize::{Api, RequestView};

/// One received request and how it was answered.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Which API route it hit.
    pub api: Api,
    /// Request path, e.g. `/v1/messages`.
    pub path: String,
    /// Every header, names lower-case, values lossily decoded.
    pub headers: Vec<(String, String)>,
    /// The parsed body (a JSON string holding the raw text if it was not JSON).
    pub body: Value,
    /// Conversation key: text of the first user message (empty if unparsable).
    pub conversation: String,
    /// Number of assistant messages in the history.
    pub turn: usize,
    /// When the request arrived (before any injected latency).
    pub received_at: Instant,
    /// When the last byte of the reply was produced; `None` while streaming or
    /// for an idle stream.
    pub responded_at: Option<Instant>,
    /// HTTP status sent.
    pub status: u16,
}

impl RecordedRequest {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed into the normalized view.
    pub fn view(&self) -> Result<RequestView, String> {
        RequestView::from_body(self.api, &self.body)
    }

    /// Time from arrival to the reply's last byte, if finished.
    pub fn duration(&self) -> Option<Duration> {
        self.responded_at
            .map(|t| t.saturating_duration_since(self.received_at))
    }
}
