//! `[sessions] title_model`: a new top-level session is named by one small
//! request to that model, made beside its first turn. The request is its
//! own conversation (a title instruction and the prompt), so the session's
//! cached prefix is untouched; its usage counts in the turn's like any
//! request's. A failure or a slow answer keeps the title taken from the
//! prompt's first line and never fails the turn.

use std::sync::Arc;
use std::time::Duration;

use herald_llm::{ChatRequest, ErrorKind, LlmClient, LlmError, RetryPolicy, StreamUpdate};
use herald_protocol::{EventKind, Message, Usage};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::Agent;

/// Starts the instruction of a title request (testkit scripts match it).
pub const TITLE_INSTRUCTION_PREFIX: &str = "[herald] Session title";

/// The system prompt of a title request.
const TITLE_SYSTEM: &str = "You name conversations. Answer with a title only: \
at most eight words, no quotes, no closing period.";

/// Longest part of the prompt the title model is shown, in characters.
const PROMPT_CHARS: usize = 2_000;

/// Longest title kept, in characters (as a first-line title).
const TITLE_MAX_CHARS: usize = 80;

/// Output cap of a title request.
const TITLE_MAX_TOKENS: u32 = 64;

/// How long the end of a turn waits for a title request still running
/// before abandoning it (it started with the turn).
const TITLE_GRACE: Duration = Duration::from_secs(5);

/// The client for `[sessions] title_model` on the session's endpoint (no
/// fallback chain, one retry, no reasoning), or `None` when it is unset.
pub(crate) fn title_client(
    settings: &crate::config::Settings,
) -> Result<Option<Arc<LlmClient>>, LlmError> {
    let configured = settings.sessions.title_model.trim();
    let routed = crate::routing::side_route(settings, crate::routing::Role::Title, configured)
        .ok()
        .flatten();
    let model = match &routed {
        Some(route) => route.model.as_str(),
        None if configured.is_empty() => return Ok(None),
        None => configured,
    };
    let base = settings.client_config();
    LlmClient::new(herald_llm::ClientConfig {
        model: model.to_owned(),
        max_tokens: Some(TITLE_MAX_TOKENS),
        retry: RetryPolicy {
            max_attempts: base.retry.max_attempts.min(2),
            ..base.retry
        },
        reasoning: herald_llm::ReasoningConfig::default(),
        ..base
    })
    .map(|client| Some(Arc::new(client)))
}

/// The messages of a title request for `prompt`.
fn title_messages(prompt: &str) -> Vec<Message> {
    let shown: String = prompt.trim().chars().take(PROMPT_CHARS).collect();
    vec![Message::user(format!(
        "{TITLE_INSTRUCTION_PREFIX}: write a short title (at most eight words) for a \
conversation that begins with the message below. Answer with the title only.\n\n{shown}"
    ))]
}

/// The title in a model's answer: its first non-blank line without
/// quotes, a `Title:` label, Markdown marks or a closing period, cut to
/// 80 characters; `None` when nothing is left.
pub(crate) fn clean_title(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.trim_start_matches(['#', '*', '-', ' ']);
    let line = match line.get(..6) {
        Some(label) if label.eq_ignore_ascii_case("title:") => &line[6..],
        _ => line,
    };
    let line = line
        .trim()
        .trim_matches(['"', '\'', '`', '*', '“', '”'])
        .trim_end_matches('.')
        .trim();
    let title = herald_protocol::one_line(line);
    if title.is_empty() {
        return None;
    }
    if title.chars().count() <= TITLE_MAX_CHARS {
        return Some(title);
    }
    let mut cut: String = title.chars().take(TITLE_MAX_CHARS - 1).collect();
    cut.push('…');
    Some(cut)
}

/// Asks `client` for a title for `prompt`.
async fn request_title(
    client: &LlmClient,
    prompt: &str,
    cancel: &CancellationToken,
) -> Result<(Option<String>, Usage), LlmError> {
    let messages = title_messages(prompt);
    let tools = client.encode_tools(&[]);
    let request = ChatRequest {
        system: TITLE_SYSTEM,
        messages: &messages,
        tools: &tools,
        forbid_tool_calls: false,
    };
    let mut ignore = |_: StreamUpdate<'_>| {};
    let reply = client.complete(request, &mut ignore, cancel).await?;
    Ok((clean_title(&reply.text), reply.usage))
}

/// A title request under way beside the first turn.
pub(super) struct PendingTitle {
    model: String,
    task: JoinHandle<Result<(Option<String>, Usage), LlmError>>,
}

/// Starts the title request for `prompt`; `cancel` (the turn's) stops it.
pub(super) fn start(
    client: Arc<LlmClient>,
    prompt: String,
    cancel: CancellationToken,
) -> PendingTitle {
    PendingTitle {
        model: client.model().to_owned(),
        task: tokio::spawn(async move { request_title(&client, &prompt, &cancel).await }),
    }
}

impl PendingTitle {
    /// Waits (at most [`TITLE_GRACE`]) for the answer; a title replaces the
    /// stored one, the usage is recorded in the session, the agent's meter
    /// and a `usage` event. A failure is logged and changes nothing.
    pub(super) async fn finish(mut self, agent: &Agent, shared: &Shared) {
        let session = &shared.session_id;
        let answer = match tokio::time::timeout(TITLE_GRACE, &mut self.task).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(err)) => {
                tracing::warn!(session_id = %session, "the title request stopped: {err}; the session keeps its first-line title");
                return;
            }
            Err(_) => {
                self.task.abort();
                tracing::warn!(session_id = %session, model = %self.model, "the title request did not answer in time; abandoned, the session keeps its first-line title");
                return;
            }
        };
        let (title, usage) = match answer {
            Ok(done) => done,
            Err(err) if err.kind == ErrorKind::Cancelled => {
                tracing::info!(session_id = %session, "the title request was interrupted with the turn");
                return;
            }
            Err(err) => {
                tracing::warn!(session_id = %session, model = %self.model, "the title request failed: {}; the session keeps its first-line title", err.message);
                return;
            }
        };
        let cost = herald_llm::cost_usd(&self.model, &usage);
        agent.meter().record(&usage, cost);
        agent.events().emit(EventKind::Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cached_tokens: usage.cached_tokens,
            cost_usd: cost,
        });
        if title.is_none() {
            tracing::warn!(session_id = %session, model = %self.model, "the title model answered without a title; the session keeps its first-line title");
        }
        let id = session.clone();
        let model = self.model.clone();
        let stored = shared
            .store
            .call(move |s| {
                s.record_usage(&id, &model, &usage, cost)?;
                match &title {
                    Some(title) => s.set_title(&id, title),
                    None => Ok(()),
                }
            })
            .await;
        match stored {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                tracing::warn!(session_id = %session, "could not store the session title: {err}")
            }
            Err(err) => tracing::error!(session_id = %session, "{err}"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_the_first_line_without_quotes_labels_or_period() {
        assert_eq!(
            clean_title("\n  \"Fix the flaky build.\"\nmore").as_deref(),
            Some("Fix the flaky build")
        );
        assert_eq!(
            clean_title("Title: Narwhal cache tuning").as_deref(),
            Some("Narwhal cache tuning")
        );
        assert_eq!(
            clean_title("## **Release notes**").as_deref(),
            Some("Release notes")
        );
        assert_eq!(clean_title("  \n\"\"\n"), None);
        assert_eq!(clean_title(""), None);
    }

    #[test]
    fn long_titles_are_cut_to_80_characters() {
        let title = clean_title(&"word ".repeat(40)).unwrap();
        assert_eq!(title.chars().count(), 80);
        assert!(title.ends_with('…'));
    }

    #[test]
    fn the_request_shows_a_bounded_part_of_the_prompt() {
        let messages = title_messages(&"x".repeat(10_000));
        let text = &messages[0].content;
        assert!(text.starts_with(TITLE_INSTRUCTION_PREFIX));
        assert!(text.len() < PROMPT_CHARS + 300);
    }
}
