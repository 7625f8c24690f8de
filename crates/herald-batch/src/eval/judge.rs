//! Judged checks: a rubric, the task and what the agent did are sent to
//! the judge model, which answers with a score (0–1) and its reasoning.
//! Verdicts are cached by the content hash of everything the judge saw
//! (model, rubric, prompt, tool calls, answer), so a re-run or a second
//! report does not pay for the same judgement twice.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use herald_core::LlmClient;
use herald_llm::{ChatRequest, StreamUpdate};
use herald_protocol::Message;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::results::ItemResult;

/// Starts every judge request (scripted judges match on it).
pub const JUDGE_PREFIX: &str = "[herald] Judge";

const JUDGE_SYSTEM: &str = "You grade the work of an AI agent against a rubric. \
Answer with one JSON object only: {\"score\": a number from 0 to 1, \"reasoning\": \"one or two sentences\"}.";

/// A judge's verdict on one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub score: f64,
    pub reasoning: String,
}

#[derive(Serialize, Deserialize)]
struct CacheLine {
    key: String,
    model: String,
    #[serde(flatten)]
    verdict: Verdict,
}

/// The judge model and its cache.
pub struct Judge {
    client: Arc<LlmClient>,
    model: String,
    cache_path: PathBuf,
    cache: Mutex<HashMap<String, Verdict>>,
}

impl Judge {
    /// A judge answering through `client`, caching in `cache_path`
    /// (JSONL, read now, appended to).
    pub fn new(client: Arc<LlmClient>, cache_path: PathBuf) -> Self {
        let mut cache = HashMap::new();
        if let Ok(text) = std::fs::read_to_string(&cache_path) {
            for line in text.lines() {
                if let Ok(entry) = serde_json::from_str::<CacheLine>(line) {
                    cache.insert(entry.key, entry.verdict);
                }
            }
        }
        Self {
            model: client.model().to_owned(),
            client,
            cache_path,
            cache: Mutex::new(cache),
        }
    }

    /// The judge's model.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Judges `result` of the task `prompt` by `rubric`: the verdict and
    /// whether it came from the cache, or why there is none.
    pub async fn judge(
        &self,
        rubric: &str,
        prompt: &str,
        result: &ItemResult,
        cancel: &CancellationToken,
    ) -> Result<(Verdict, bool), String> {
        let text = judge_text(rubric, prompt, result);
        let key =
            crate::hash::content_hash(&serde_json::json!({"model": self.model, "text": text}));
        if let Some(verdict) = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok((verdict.clone(), true));
        }
        let messages = [Message::user(text)];
        let tools = self.client.encode_tools(&[]);
        let request = ChatRequest {
            system: JUDGE_SYSTEM,
            messages: &messages,
            tools: &tools,
            forbid_tool_calls: false,
        };
        let mut ignore = |_: StreamUpdate<'_>| {};
        let reply = self
            .client
            .complete(request, &mut ignore, cancel)
            .await
            .map_err(|err| format!("the judge model failed: {err}"))?;
        let verdict = parse_verdict(&reply.text)?;
        self.remember(&key, &verdict);
        Ok((verdict, false))
    }

    fn remember(&self, key: &str, verdict: &Verdict) {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.to_owned(), verdict.clone());
        let line = CacheLine {
            key: key.to_owned(),
            model: self.model.clone(),
            verdict: verdict.clone(),
        };
        let written = (|| -> std::io::Result<()> {
            if let Some(parent) = self.cache_path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.cache_path)?;
            let mut text = serde_json::to_string(&line).map_err(std::io::Error::other)?;
            text.push('\n');
            file.write_all(text.as_bytes())
        })();
        if let Err(err) = written {
            tracing::warn!(
                "the judge cache {} was not written: {err}",
                self.cache_path.display()
            );
        }
    }
}

/// What the judge reads.
fn judge_text(rubric: &str, prompt: &str, result: &ItemResult) -> String {
    let calls = if result.tool_sequence.is_empty() {
        "none".to_owned()
    } else {
        result.tool_sequence.join(", ")
    };
    format!(
        "{JUDGE_PREFIX}: grade this work.\n\nRubric: {rubric}\n\nTask given to the agent:\n{prompt}\n\n\
         Tools the agent called, in order: {calls}\n\nThe agent's final answer:\n{}",
        result.final_answer.as_deref().unwrap_or("(none)")
    )
}

/// The verdict in a judge's answer.
pub fn parse_verdict(text: &str) -> Result<Verdict, String> {
    let value = crate::output::extract_json(text).ok_or_else(|| {
        format!(
            "the judge did not answer with JSON: {}",
            herald_protocol::one_line(text)
        )
    })?;
    let score = value
        .get("score")
        .and_then(serde_json::Value::as_f64)
        .filter(|s| (0.0..=1.0).contains(s))
        .ok_or_else(|| format!("the judge's answer has no score from 0 to 1: {value}"))?;
    let reasoning = value
        .get("reasoning")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(Verdict { score, reasoning })
}
