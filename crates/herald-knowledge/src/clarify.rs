//! The `clarify` tool: ask the user a question with up to six
//! numbered choices and optional free text. Front ends supply a
//! [`Clarifier`]; without one (headless runs) the tool answers with an error
//! telling the model to decide on its own.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use herald_tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncBufRead, Lines};
use tokio_util::sync::CancellationToken;

/// Most choices one question may offer.
pub const MAX_CHOICES: usize = 6;
/// Invalid replies tolerated before the question is given up.
const MAX_ATTEMPTS: usize = 3;

/// A validated question for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClarifyRequest {
    pub question: String,
    pub choices: Vec<String>,
    /// Whether the user may type an answer of their own.
    pub allow_freetext: bool,
}

/// Why no answer came back; each message tells the model how to go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClarifyError {
    /// No front end can ask anyone (headless run).
    #[error(
        "no user is available to answer (non-interactive run). Decide yourself, state your assumptions in your answer, and continue"
    )]
    Unavailable,
    /// Input ended before an answer.
    #[error(
        "the user closed the input without answering; decide yourself and state your assumptions"
    )]
    Closed,
    /// The turn was interrupted while waiting.
    #[error("interrupted: the user stopped the turn while the question was open")]
    Interrupted,
    /// Every reply was unusable.
    #[error(
        "the user gave no valid answer after {MAX_ATTEMPTS} tries; decide yourself and state your assumptions"
    )]
    NoValidAnswer,
    /// The front end failed.
    #[error("could not ask the user: {0}")]
    Failed(String),
}

/// How a front end puts a question to a person. Implementations must return
/// promptly once `cancel` fires.
pub trait Clarifier: Send + Sync + 'static {
    /// Asks `request` and returns the tool result text for the model.
    fn ask<'a>(
        &'a self,
        request: &'a ClarifyRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, ClarifyError>>;
}

/// The `clarify` tool.
#[derive(Clone, Default)]
pub struct Clarify {
    clarifier: Option<Arc<dyn Clarifier>>,
}

impl std::fmt::Debug for Clarify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clarify")
            .field("interactive", &self.clarifier.is_some())
            .finish()
    }
}

impl Clarify {
    /// The tool asking through `clarifier`; `None` makes every call an error
    /// result saying no user is available.
    pub fn new(clarifier: Option<Arc<dyn Clarifier>>) -> Self {
        Self { clarifier }
    }
}

/// Arguments of `clarify`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct ClarifyArgs {
    pub question: String,
    pub choices: Option<Vec<String>>,
    pub allow_freetext: Option<bool>,
}

impl ClarifyArgs {
    fn validate(self) -> Result<ClarifyRequest, ToolError> {
        let question = self.question.trim().to_owned();
        if question.is_empty() {
            return Err(ToolError::new(
                "'question' is empty; ask one clear question",
            ));
        }
        let choices: Vec<String> = self
            .choices
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty())
            .collect();
        if choices.len() > MAX_CHOICES {
            return Err(ToolError::new(format!(
                "{} choices given; at most {MAX_CHOICES} are allowed. Merge or drop some",
                choices.len()
            )));
        }
        let allow_freetext = self.allow_freetext.unwrap_or(true);
        if choices.is_empty() && !allow_freetext {
            return Err(ToolError::new(
                "give choices or allow free text; otherwise the user cannot answer",
            ));
        }
        Ok(ClarifyRequest {
            question,
            choices,
            allow_freetext,
        })
    }
}

impl TypedTool for Clarify {
    type Args = ClarifyArgs;
    const NAME: &'static str = "clarify";
    const TOOLSET: &'static str = "clarify";
    const DESCRIPTION: &'static str = "Ask the user and wait, only when you cannot go on without their decision. Up to 6 \
short choices; allow_freetext (default true) lets them type. Without a user it fails: then decide and state your assumptions.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: ClarifyArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let request = args.validate()?;
        let Some(clarifier) = &self.clarifier else {
            return Err(ToolError::new(ClarifyError::Unavailable.to_string()));
        };
        clarifier
            .ask(&request, &ctx.cancel)
            .await
            .map_err(|err| ToolError::new(err.to_string()))
    }
}

/// The question as shown in a terminal: the text, numbered choices, and an
/// "Other" entry when free text is allowed.
pub fn render_question(request: &ClarifyRequest) -> String {
    let mut out = format!("\n? {}\n", request.question);
    for (i, choice) in request.choices.iter().enumerate() {
        out.push_str(&format!("  {}. {choice}\n", i + 1));
    }
    if request.allow_freetext && !request.choices.is_empty() {
        out.push_str(&format!(
            "  {}. Other (type your answer)\n",
            request.choices.len() + 1
        ));
    }
    out
}

/// What one typed line means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypedReply {
    /// The tool result text to return.
    Answer(String),
    /// "Other" was picked: ask for the free text next.
    AskFreeText,
    /// Unusable; the hint says what to type.
    Invalid(String),
}

/// Interprets a typed line: a choice number, "Other", or free text.
pub fn interpret_reply(request: &ClarifyRequest, line: &str) -> TypedReply {
    let text = line.trim();
    let n = request.choices.len();
    let range_hint = || {
        if request.allow_freetext {
            format!("type a number 1-{} or your own answer", n + 1)
        } else {
            format!("type a number 1-{n}")
        }
    };
    if text.is_empty() {
        return TypedReply::Invalid(if n == 0 {
            "type your answer".to_owned()
        } else {
            range_hint()
        });
    }
    if n > 0
        && let Ok(k) = text.parse::<usize>()
    {
        return match k {
            k if (1..=n).contains(&k) => TypedReply::Answer(format!(
                "The user chose option {k}: {}",
                request.choices[k - 1]
            )),
            k if k == n + 1 && request.allow_freetext => TypedReply::AskFreeText,
            _ => TypedReply::Invalid(range_hint()),
        };
    }
    if let Some(k) = request
        .choices
        .iter()
        .position(|c| c.eq_ignore_ascii_case(text))
    {
        return TypedReply::Answer(format!(
            "The user chose option {}: {}",
            k + 1,
            request.choices[k]
        ));
    }
    if request.allow_freetext {
        return TypedReply::Answer(format!("The user answered: {text}"));
    }
    TypedReply::Invalid(range_hint())
}

/// A [`Clarifier`] for line-based terminals: prints the question to `out`
/// and reads answers from a line source shared with the front end's own
/// input loop (which must not read while a turn runs).
pub struct LineClarifier<R> {
    lines: Arc<tokio::sync::Mutex<Lines<R>>>,
    out: Mutex<Box<dyn Write + Send>>,
}

impl<R> LineClarifier<R> {
    /// Reads from `lines`, writes prompts to `out` (usually stderr).
    pub fn new(lines: Arc<tokio::sync::Mutex<Lines<R>>>, out: Box<dyn Write + Send>) -> Self {
        Self {
            lines,
            out: Mutex::new(out),
        }
    }

    fn print(&self, text: &str) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

impl<R: AsyncBufRead + Unpin + Send + 'static> LineClarifier<R> {
    async fn read_line(
        &self,
        lines: &mut Lines<R>,
        cancel: &CancellationToken,
    ) -> Result<String, ClarifyError> {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => Ok(line),
                Ok(None) => Err(ClarifyError::Closed),
                Err(err) => Err(ClarifyError::Failed(err.to_string())),
            },
            () = cancel.cancelled() => Err(ClarifyError::Interrupted),
        }
    }

    async fn ask_inner(
        &self,
        request: &ClarifyRequest,
        cancel: &CancellationToken,
    ) -> Result<String, ClarifyError> {
        let mut lines = self.lines.lock().await;
        self.print(&render_question(request));
        let mut free_text = request.choices.is_empty();
        for _ in 0..MAX_ATTEMPTS {
            self.print(if free_text {
                "your answer> "
            } else {
                "choice> "
            });
            let line = self.read_line(&mut lines, cancel).await?;
            if free_text {
                let text = line.trim();
                if !text.is_empty() {
                    return Ok(format!("The user answered: {text}"));
                }
                self.print("(type your answer)\n");
                continue;
            }
            match interpret_reply(request, &line) {
                TypedReply::Answer(answer) => return Ok(answer),
                TypedReply::AskFreeText => free_text = true,
                TypedReply::Invalid(hint) => self.print(&format!("({hint})\n")),
            }
        }
        Err(ClarifyError::NoValidAnswer)
    }
}

impl<R: AsyncBufRead + Unpin + Send + 'static> Clarifier for LineClarifier<R> {
    fn ask<'a>(
        &'a self,
        request: &'a ClarifyRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, ClarifyError>> {
        Box::pin(self.ask_inner(request, cancel))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Cursor;

    use herald_protocol::ToolCall;
    use herald_tools::{AgentState, ToolRegistry, typed};
    use tokio::io::{AsyncBufReadExt, BufReader};

    use super::*;

    fn request(choices: &[&str], allow_freetext: bool) -> ClarifyRequest {
        ClarifyRequest {
            question: "Which database?".into(),
            choices: choices.iter().map(|c| (*c).to_owned()).collect(),
            allow_freetext,
        }
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn clarifier(input: &str) -> (LineClarifier<BufReader<Cursor<Vec<u8>>>>, Shared) {
        let lines = BufReader::new(Cursor::new(input.as_bytes().to_vec())).lines();
        let out = Shared::default();
        (
            LineClarifier::new(
                Arc::new(tokio::sync::Mutex::new(lines)),
                Box::new(out.clone()),
            ),
            out,
        )
    }

    async fn run(registry: &ToolRegistry, args: serde_json::Value) -> herald_tools::ToolResult {
        let ctx = ToolContext::new(
            AgentState::new(std::env::temp_dir()),
            CancellationToken::new(),
        );
        let call = ToolCall {
            id: "1".into(),
            name: "clarify".into(),
            arguments: args.to_string(),
        };
        registry.execute(&call, &ctx).await
    }

    #[test]
    fn renders_numbered_choices_with_other() {
        let text = render_question(&request(&["Postgres", "SQLite"], true));
        assert!(text.contains("? Which database?"));
        assert!(text.contains("  1. Postgres\n  2. SQLite\n  3. Other (type your answer)"));
        assert!(!render_question(&request(&["a"], false)).contains("Other"));
    }

    #[test]
    fn interprets_numbers_names_and_free_text() {
        let r = request(&["Postgres", "SQLite"], true);
        assert_eq!(
            interpret_reply(&r, " 2 "),
            TypedReply::Answer("The user chose option 2: SQLite".into())
        );
        assert_eq!(interpret_reply(&r, "3"), TypedReply::AskFreeText);
        assert_eq!(
            interpret_reply(&r, "sqlite"),
            TypedReply::Answer("The user chose option 2: SQLite".into())
        );
        assert_eq!(
            interpret_reply(&r, "MySQL please"),
            TypedReply::Answer("The user answered: MySQL please".into())
        );
        assert!(matches!(interpret_reply(&r, "9"), TypedReply::Invalid(h) if h.contains("1-3")));
        let strict = request(&["Postgres", "SQLite"], false);
        assert!(
            matches!(interpret_reply(&strict, "MySQL"), TypedReply::Invalid(h) if h.contains("1-2"))
        );
        assert!(matches!(
            interpret_reply(&strict, "3"),
            TypedReply::Invalid(_)
        ));
    }

    #[tokio::test]
    async fn line_clarifier_retries_and_reads_free_text() {
        let (c, out) = clarifier("7\n3\nDuckDB\n");
        let answer = c
            .ask(
                &request(&["Postgres", "SQLite"], true),
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(answer, "The user answered: DuckDB");
        let shown = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(
            shown.contains("(type a number 1-3 or your own answer)"),
            "{shown}"
        );
        assert!(shown.contains("your answer> "), "{shown}");
    }

    #[tokio::test]
    async fn line_clarifier_gives_up_and_reports_closed_input() {
        let (c, _) = clarifier("x\ny\nz\n");
        let err = c
            .ask(&request(&["a", "b"], false), &CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(err, ClarifyError::NoValidAnswer);
        let (c, _) = clarifier("");
        let err = c
            .ask(&request(&[], true), &CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(err, ClarifyError::Closed);
    }

    #[tokio::test]
    async fn headless_tool_returns_an_error_result() {
        let mut registry = ToolRegistry::new(10_000);
        registry.register(typed(Clarify::new(None)));
        let result = run(
            &registry,
            serde_json::json!({"question": "Which DB?", "choices": ["a", "b"]}),
        )
        .await;
        assert!(result.is_error);
        assert!(
            result.content.contains("no user is available"),
            "{}",
            result.content
        );
        assert!(
            result.content.contains("state your assumptions"),
            "{}",
            result.content
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_error_results() {
        let (c, _) = clarifier("1\n");
        let mut registry = ToolRegistry::new(10_000);
        registry.register(typed(Clarify::new(Some(Arc::new(c)))));
        let seven: Vec<String> = (1..=7).map(|i| i.to_string()).collect();
        let result = run(
            &registry,
            serde_json::json!({"question": "q", "choices": seven}),
        )
        .await;
        assert!(
            result.content.contains("7 choices given; at most 6"),
            "{}",
            result.content
        );
        let result = run(&registry, serde_json::json!({"question": " "})).await;
        assert!(
            result.content.contains("'question' is empty"),
            "{}",
            result.content
        );
        let result = run(
            &registry,
            serde_json::json!({"question": "q", "allow_freetext": false}),
        )
        .await;
        assert!(
            result.content.contains("give choices or allow free text"),
            "{}",
            result.content
        );
        let result = run(
            &registry,
            serde_json::json!({"question": "q", "choices": ["yes", "no"]}),
        )
        .await;
        assert!(!result.is_error);
        assert_eq!(result.content, "The user chose option 1: yes");
    }
}
