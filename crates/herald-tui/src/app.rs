//! The TUI's state and its loop. Four sources wake it: the keyboard
//! (crossterm's event stream), the session's events, — only while
//! something moves — a spinner tick, and, every `max_sleep` of the clock, a
//! look at whether the session's heartbeat is due (`heartbeat_tick`).
//! Session events become scrollback lines (final) or live pane content
//! (still moving); keys go to the open overlay, else to the composer.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures_util::StreamExt;
use herald_core::runtime::{Catalog, McpPrompt, Op, OpenMode, Session, Subscription, TurnResult};
use herald_core::{ApprovalAnswer, CompressionReport, ElicitAnswer, Settings, StoreHandle};
use herald_protocol::{Event, EventKind, McpServerStatus, ToolStatus};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cells::{self, Level, ToolCell};
use crate::composer::{Composer, ComposerAction};
use crate::file_finder::FileIndex;
use crate::live::{Live, RunningAgent};
use crate::markdown::MarkdownStream;
use crate::overlay::{self, Outcome, Overlay, PickItem, Picker, Purpose, TextView};
use crate::screen::Screen;
use crate::status::Status;
use crate::{commands, slash};

/// An open session with its event stream, as the TUI gets it.
pub struct Opened {
    pub session: Session,
    /// Every event of the session since it was opened, in order.
    pub events: Subscription,
    /// The settings it runs with.
    pub settings: Settings,
}

/// A boxed future, as [`SessionHost`] returns them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Opens sessions for the TUI: the front end that started it knows how
/// (settings, store, MCP servers, approvals).
pub trait SessionHost: Send + Sync {
    /// Opens a session (`mode`), with `model` instead of the configured
    /// one when given. The error says what went wrong, for the screen.
    fn open(&self, mode: OpenMode, model: Option<String>) -> BoxFuture<'_, Result<Opened, String>>;
}

/// What the TUI starts with.
pub struct TuiSetup {
    pub host: Arc<dyn SessionHost>,
    pub store: StoreHandle,
    pub opened: Opened,
    /// Sent as the first turn (`herald "do something"`).
    pub first_prompt: Option<String>,
    /// Cancelled to leave as if asked to (SIGTERM, SIGHUP): the session
    /// ends and the terminal is given back as it was.
    pub stop: CancellationToken,
}

/// How the TUI ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuiOutcome {
    /// The session open at the end.
    pub session_id: String,
    /// Whether any turn ran in it (a session nobody used is not worth resuming).
    pub used: bool,
    /// Background agents left suspended (they continue on resume).
    pub suspended: usize,
}

/// Why the TUI could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// How long a second Ctrl+C has to exit.
const EXIT_WINDOW: Duration = Duration::from_secs(2);
/// The fastest the pane is redrawn.
const FRAME: Duration = Duration::from_millis(16);
/// Spinner and elapsed-time ticks while something moves.
const TICK: Duration = Duration::from_millis(100);
/// Lines of a streamed answer's unfinished tail shown in the pane.
const STREAM_TAIL: usize = 6;
/// Tool calls whose output Ctrl+O shows.
const RECENT_OUTPUTS: usize = 20;

type TurnFuture = Pin<Box<dyn Future<Output = Option<TurnResult>> + Send>>;
type CompactFuture = Pin<Box<dyn Future<Output = Result<CompressionReport, String>> + Send>>;

/// What the loop does next after a key or a command.
pub(crate) enum Flow {
    Continue,
    Exit,
}

/// The TUI's whole state.
pub struct App {
    host: Arc<dyn SessionHost>,
    catalog: Catalog,
    session: Session,
    events: Subscription,
    /// False once the event stream ended (nothing more will come on it).
    events_open: bool,
    settings: Settings,
    composer: Composer,
    live: Live,
    status: Status,
    /// The root agent's answer being streamed.
    stream: Option<MarkdownStream>,
    /// Streamed reasoning of the current reply not shown yet: complete
    /// lines are shown (dim) as they come, the rest when the answer starts.
    thinking: String,
    overlay: Option<Overlay>,
    /// Requests waiting behind the open overlay.
    waiting: VecDeque<Overlay>,
    /// Final lines not yet printed.
    history: Vec<Line<'static>>,
    turn: Option<TurnFuture>,
    turn_started: Instant,
    compacting: Option<CompactFuture>,
    queued: VecDeque<String>,
    /// Arguments of running root calls, by call id.
    calls: HashMap<String, String>,
    outputs: VecDeque<ToolCell>,
    child_sessions: HashMap<String, String>,
    last_ctrl_c: Option<Instant>,
    next_model: Option<String>,
    /// Exit once no background agent runs (the user chose to wait).
    exit_when_idle: bool,
    used: bool,
    /// The last history lines were a tool cell: text that follows gets a
    /// blank line first.
    after_tool: bool,
    width: u16,
    dirty: bool,
    file_index: Option<mpsc::UnboundedReceiver<FileIndex>>,
    /// The open session's MCP prompts (`/<server>:<prompt>`), once listed.
    pub(crate) prompts: Vec<McpPrompt>,
    prompts_listed: Option<mpsc::UnboundedReceiver<Vec<McpPrompt>>>,
    /// The store, for the session's heartbeat.
    store: StoreHandle,
    /// The clock heartbeats are read against (`HERALD_CLOCK_FILE` in tests).
    clock: Arc<dyn herald_cron::Clock>,
    /// The running turn is a heartbeat wake: its events are not shown,
    /// and its reply only when it needs attention.
    waking: Option<Waking>,
}

/// A heartbeat wake in progress.
struct Waking {
    submission: herald_protocol::SubmissionId,
    /// The tick it is for and the interval, for the next one.
    due: i64,
    every_ms: i64,
}

/// Runs the TUI on this process's terminal until the user leaves.
pub async fn run(setup: TuiSetup) -> Result<TuiOutcome, TuiError> {
    let mut modes = crate::screen::TerminalModes::enable()?;
    let result = run_in_terminal(setup).await;
    modes.disable();
    result
}

async fn run_in_terminal(setup: TuiSetup) -> Result<TuiOutcome, TuiError> {
    let (columns, rows) = crossterm::terminal::size()?;
    // Without an answer to the position query, start at the bottom.
    let row = crossterm::cursor::position()
        .map(|(column, row)| if column > 0 { row + 1 } else { row })
        .unwrap_or(rows.saturating_sub(1));
    let mut screen = Screen::new(
        std::io::stdout(),
        ratatui::layout::Size::new(columns, rows),
        row,
    )?;
    let mut input = crossterm::event::EventStream::new();
    let stop = setup.stop.clone();
    let mut app = App::new(setup, columns).await;
    let mut last_draw = Instant::now() - FRAME;
    app.flush(&mut screen)?;
    last_draw = app.draw(&mut screen, last_draw)?;
    let outcome = loop {
        let animating = app.is_animating();
        let wait_for_frame = app.dirty;
        let frame_due = last_draw + FRAME;
        tokio::select! {
            biased;
            () = stop.cancelled() => break app.leave(&mut screen, &mut input, &stop).await,
            key = input.next() => match key {
                Some(Ok(TermEvent::Key(key))) if key.kind != KeyEventKind::Release => {
                    if let Flow::Exit = app.on_key(key).await {
                        break app.leave(&mut screen, &mut input, &stop).await;
                    }
                }
                Some(Ok(TermEvent::Paste(text))) => app.on_paste(&text),
                Some(Ok(TermEvent::Resize(columns, rows))) => {
                    screen.resize(ratatui::layout::Size::new(columns, rows))?;
                    app.width = columns;
                    app.dirty = true;
                }
                Some(Ok(_)) => {}
                // The terminal went away: leave as if asked to.
                Some(Err(_)) | None => break app.leave(&mut screen, &mut input, &stop).await,
            },
            event = app.events.next(), if app.events_open => {
                match event {
                    Some(event) => {
                        app.on_event(&event);
                        // Take what else is queued before drawing.
                        while let Some(event) = app.events.try_next() {
                            app.on_event(&event);
                        }
                    }
                    // The session ended under us (a failed switch): wait
                    // for the keyboard only, until a session opens again.
                    None => app.events_open = false,
                }
            }
            result = poll_turn(&mut app.turn) => {
                app.turn = None;
                if let Flow::Exit = app.turn_finished(result).await {
                    break app.leave(&mut screen, &mut input, &stop).await;
                }
            }
            report = poll_compact(&mut app.compacting) => {
                app.compacting = None;
                app.compacted(report);
                // What was typed meanwhile goes now.
                app.start_queued();
            }
            prompts = recv_prompts(&mut app.prompts_listed) => {
                app.prompts_listed = None;
                if let Some(prompts) = prompts {
                    app.composer.set_extra_commands(
                        prompts.iter().map(slash::SlashCommand::for_prompt).collect(),
                    );
                    app.prompts = prompts;
                }
            }
            index = recv_index(&mut app.file_index) => {
                app.file_index = None;
                if let Some(index) = index {
                    app.composer.set_file_index(Arc::new(index));
                }
            }
            () = tokio::time::sleep(TICK), if animating => {
                app.status.spinner_frame = app.status.spinner_frame.wrapping_add(1);
                app.dirty = true;
                if app.exit_when_idle && !app.background_running() {
                    break app.leave(&mut screen, &mut input, &stop).await;
                }
            }
            () = tokio::time::sleep(app.clock.max_sleep()) => app.heartbeat_tick().await,
            () = tokio::time::sleep_until(frame_due.into()), if wait_for_frame => {}
        }
        app.flush(&mut screen)?;
        if app.dirty && Instant::now() >= last_draw + FRAME {
            last_draw = app.draw(&mut screen, last_draw)?;
        }
    };
    app.flush(&mut screen)?;
    screen.leave()?;
    Ok(outcome)
}

async fn poll_turn(turn: &mut Option<TurnFuture>) -> Option<TurnResult> {
    match turn {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

async fn poll_compact(compacting: &mut Option<CompactFuture>) -> Result<CompressionReport, String> {
    match compacting {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

async fn recv_index(
    receiver: &mut Option<mpsc::UnboundedReceiver<FileIndex>>,
) -> Option<FileIndex> {
    match receiver {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

async fn recv_prompts(
    receiver: &mut Option<mpsc::UnboundedReceiver<Vec<McpPrompt>>>,
) -> Option<Vec<McpPrompt>> {
    match receiver {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

impl App {
    async fn new(setup: TuiSetup, width: u16) -> Self {
        let TuiSetup {
            host,
            store,
            opened,
            first_prompt,
            stop: _,
        } = setup;
        let cwd = opened.settings.cwd.display().to_string();
        let catalog = Catalog::new(store.clone());
        // Without it the composer only lacks its history.
        let history = catalog.recent_prompts(&cwd, 1000).await.unwrap_or_default();
        let mut app = Self {
            host,
            catalog,
            session: opened.session,
            events: opened.events,
            events_open: true,
            settings: opened.settings,
            composer: Composer::new(history),
            live: Live::default(),
            status: Status::default(),
            stream: None,
            thinking: String::new(),
            overlay: None,
            waiting: VecDeque::new(),
            history: Vec::new(),
            turn: None,
            turn_started: Instant::now(),
            compacting: None,
            queued: VecDeque::new(),
            calls: HashMap::new(),
            outputs: VecDeque::new(),
            child_sessions: HashMap::new(),
            last_ctrl_c: None,
            next_model: None,
            exit_when_idle: false,
            used: false,
            after_tool: false,
            width,
            dirty: true,
            file_index: None,
            prompts: Vec::new(),
            prompts_listed: None,
            store,
            clock: herald_cron::clock::from_env(&std::env::vars().collect()),
            waking: None,
        };
        app.index_files();
        app.session_opened().await;
        if let Some(prompt) = first_prompt.filter(|p| !p.trim().is_empty()) {
            app.submit(prompt).await;
        }
        app
    }

    /// Lists the session's MCP prompts in the background (servers may
    /// still be starting); they become slash commands when they arrive.
    fn list_prompts(&mut self) {
        let (tx, rx) = mpsc::unbounded_channel();
        let session = self.session.clone();
        tokio::spawn(async move {
            let _ = tx.send(session.mcp_prompts().await);
        });
        self.prompts_listed = Some(rx);
    }

    /// Builds the `@` file index off the runtime.
    fn index_files(&mut self) {
        let (tx, rx) = mpsc::unbounded_channel();
        let root = self.settings.cwd.clone();
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(FileIndex::build(&root));
        });
        self.file_index = Some(rx);
    }

    /// The header, the replayed conversation of a resumed session, and
    /// the status for the session now open.
    async fn session_opened(&mut self) {
        self.list_prompts();
        self.status = Status {
            model: self.settings.model.clone(),
            context_window: herald_core::compress::context_window(
                &self.settings.model,
                self.settings.compression.context_window,
            ),
            next_model: self
                .next_model
                .clone()
                .filter(|m| *m != self.settings.model),
            ..Status::default()
        };
        self.used = false;
        self.history.extend(cells::header(
            &cells::Header {
                version: env!("CARGO_PKG_VERSION").to_owned(),
                model: self.settings.model.clone(),
                provider: self.settings.provider.as_str().to_owned(),
                cwd: self.settings.cwd.display().to_string(),
                session_id: self.session.id().to_owned(),
                resumed: self.session.resumed(),
            },
            self.width,
        ));
        if self.session.resumed() {
            match self.catalog.live_transcript(self.session.id()).await {
                Ok(live) => self
                    .history
                    .extend(crate::replay::conversation(&live, self.width)),
                Err(err) => self.notice(
                    Level::Warning,
                    &format!("cannot show the conversation so far: {err}"),
                ),
            }
            self.used = true;
        }
        self.dirty = true;
    }

    /// Whether the spinner needs ticks.
    fn is_animating(&self) -> bool {
        self.turn.is_some()
            || self.compacting.is_some()
            || self.live.is_active()
            || self.exit_when_idle
    }

    fn busy(&self) -> bool {
        self.turn.is_some() || self.compacting.is_some()
    }

    fn background_running(&self) -> bool {
        self.session
            .agents()
            .iter()
            .any(|agent| agent.background && !agent.status.is_finished())
    }

    /// Prints the final lines gathered so far.
    fn flush<W: Write>(&mut self, screen: &mut Screen<W>) -> std::io::Result<()> {
        if self.history.is_empty() {
            return Ok(());
        }
        let lines = std::mem::take(&mut self.history);
        screen.insert_history(&lines)?;
        self.dirty = true;
        Ok(())
    }

    /// Redraws the pane; returns the time of this draw.
    fn draw<W: Write>(
        &mut self,
        screen: &mut Screen<W>,
        _last: Instant,
    ) -> std::io::Result<Instant> {
        self.refresh_activity();
        let width = screen.width();
        let max = screen.max_pane_height();
        let now = Instant::now();
        let tail = self
            .stream
            .as_ref()
            .map(|stream| stream.pending(STREAM_TAIL))
            .unwrap_or_default();
        let live = self.live.lines(self.status.spinner_frame, now, width);
        let queued: Vec<Line<'static>> = self
            .queued
            .iter()
            .map(|text| {
                Line::from(ratatui::text::Span::styled(
                    format!(
                        "  queued: {}",
                        crate::tool_view::shorten(
                            &herald_protocol::one_line(text),
                            usize::from(width).saturating_sub(12)
                        )
                    ),
                    cells::dim(),
                ))
            })
            .collect();
        let above = (tail.len() + live.len() + queued.len()) as u16;
        let body = match &self.overlay {
            Some(overlay) => overlay.desired_height(width),
            None => self.composer.desired_height(width),
        };
        let height = above.saturating_add(body).saturating_add(1).min(max);
        let body = height
            .saturating_sub(above.min(height.saturating_sub(2)) + 1)
            .max(1);
        let above = height.saturating_sub(body + 1);
        let composer = &self.composer;
        let overlay = self.overlay.as_ref();
        let status = &self.status;
        screen.draw(height, |frame: &mut Frame<'_>| {
            let area = frame.area();
            let mut lines: Vec<Line<'static>> = Vec::new();
            lines.extend(tail);
            lines.extend(live);
            lines.extend(queued);
            // Keep the newest lines when there is too little room.
            let skip = lines.len().saturating_sub(usize::from(above));
            let lines: Vec<Line<'static>> = lines.into_iter().skip(skip).collect();
            let above_area = Rect::new(area.x, area.y, area.width, above);
            frame.render_widget(Paragraph::new(lines), above_area);
            let body_area = Rect::new(area.x, area.y + above, area.width, body);
            match overlay {
                Some(overlay) => overlay.render(body_area, frame.buffer_mut()),
                None => {
                    composer.render(body_area, frame.buffer_mut());
                    if let Some(position) = composer.cursor_position(body_area) {
                        frame.set_cursor_position(position);
                    }
                }
            }
            let status_area = Rect::new(area.x, area.bottom().saturating_sub(1), area.width, 1);
            frame.render_widget(status, status_area);
        })?;
        self.dirty = false;
        Ok(now)
    }

    /// The status line's activity from what runs now.
    fn refresh_activity(&mut self) {
        let elapsed = self.turn_started.elapsed().as_millis() as u64;
        self.status.queued = self.queued.len();
        if let Some(at) = self.last_ctrl_c
            && at.elapsed() > EXIT_WINDOW
        {
            self.last_ctrl_c = None;
            self.status.hint = None;
        }
        self.status.activity = if self.compacting.is_some() {
            Some(("compacting the conversation".to_owned(), elapsed))
        } else if self.turn.is_some() {
            let label = if matches!(self.overlay, Some(Overlay::Approval(_))) {
                "waiting for your approval".to_owned()
            } else if let Some(tool) = self.live.tools.values().next() {
                format!("running {}", tool.name)
            } else if self.stream.is_some() {
                "writing".to_owned()
            } else if !self.live.agents.is_empty() {
                format!("{} agent(s) working", self.live.agents.len())
            } else {
                "thinking".to_owned()
            };
            Some((label, elapsed))
        } else if self.exit_when_idle {
            Some((
                "waiting for background agents to finish".to_owned(),
                elapsed,
            ))
        } else if !self.live.agents.is_empty() {
            Some((
                format!("{} background agent(s) working", self.live.agents.len()),
                elapsed,
            ))
        } else {
            None
        };
    }

    fn notice(&mut self, level: Level, text: &str) {
        self.history.extend(cells::notice(level, text, self.width));
        self.dirty = true;
    }

    // ----- session events -------------------------------------------------

    fn on_event(&mut self, event: &Event) {
        if let Some(waking) = &self.waking
            && event.submission_id.as_ref() == Some(&waking.submission)
            && !matches!(
                event.kind,
                EventKind::ClarifyRequested { .. }
                    | EventKind::ApprovalRequested { .. }
                    | EventKind::ElicitationRequested { .. }
                    | EventKind::ApprovalResolved { .. }
                    | EventKind::ElicitationResolved { .. }
            )
        {
            // A heartbeat wake works quietly; its end decides what shows.
            // What it asks the person is shown, or it would wait unseen.
            return;
        }
        self.dirty = true;
        let root = event.agent_id == "root";
        if root && !matches!(event.kind, EventKind::AssistantReasoning { .. }) {
            self.show_thinking(true);
        }
        match &event.kind {
            EventKind::AssistantReasoning { text } if root => {
                self.thinking.push_str(text);
                self.show_thinking(false);
            }
            EventKind::AssistantDelta { text } if root => {
                if self.stream.is_none() {
                    self.gap_after_tools();
                }
                let width = self.width;
                let stream = self
                    .stream
                    .get_or_insert_with(|| MarkdownStream::new(width));
                let lines = stream.push(text);
                self.history.extend(lines);
            }
            EventKind::AssistantReset {} if root => {
                self.finish_stream();
                self.notice(Level::Warning, "the reply restarts after a retry");
            }
            EventKind::AssistantMessage { text, .. } if root => {
                if self.stream.is_some() {
                    self.finish_stream();
                } else if !text.trim().is_empty() {
                    self.gap_after_tools();
                    self.history
                        .extend(crate::markdown::render(text, self.width));
                    self.history.push(Line::default());
                }
            }
            EventKind::ToolStarted {
                call_id,
                name,
                arguments,
            } if root => {
                self.finish_stream();
                self.calls.insert(call_id.clone(), arguments.clone());
                self.live.tool_started(call_id, name, arguments, self.width);
            }
            EventKind::ToolCompleted {
                call_id,
                name,
                status,
                output_bytes,
                duration_ms,
                output,
                error,
                exit_code,
            } if root => {
                self.live.tool_finished(call_id);
                let cell = ToolCell {
                    name: name.clone(),
                    arguments: self.calls.remove(call_id).unwrap_or_default(),
                    ok: *status == ToolStatus::Ok,
                    duration_ms: *duration_ms,
                    output_bytes: *output_bytes,
                    output: output.clone(),
                    error: error.clone(),
                    exit_code: *exit_code,
                };
                self.history.extend(cells::tool_call(&cell, self.width));
                self.after_tool = true;
                self.outputs.push_back(cell);
                if self.outputs.len() > RECENT_OUTPUTS {
                    self.outputs.pop_front();
                }
            }
            EventKind::ToolProgress {
                call_id,
                progress,
                total,
                message,
                ..
            } if root => {
                let mut text = match total {
                    Some(total) => format!("{progress}/{total}"),
                    None => format!("{progress}"),
                };
                if let Some(message) = message {
                    text.push(' ');
                    text.push_str(&herald_protocol::one_line(message));
                }
                self.live.tool_progress(call_id, text);
            }
            // The root's requests; each subagent's come with its
            // `subagent.completed` (their usage events stay in their tree).
            EventKind::Usage {
                input_tokens,
                output_tokens,
                cached_tokens,
                cost_usd,
            } if root => {
                self.status.input_tokens += input_tokens;
                self.status.output_tokens += output_tokens;
                self.status.cached_tokens += cached_tokens;
                match cost_usd {
                    Some(cost) => *self.status.cost_usd.get_or_insert(0.0) += cost,
                    None => self.status.unpriced_requests += 1,
                }
                self.status.context_tokens = *input_tokens;
            }
            EventKind::Retry {
                attempt,
                delay_ms,
                reason,
            } if root => {
                self.notice(
                    Level::Warning,
                    &format!(
                        "retry {attempt} in {:.1} s: {}",
                        *delay_ms as f64 / 1000.0,
                        herald_protocol::one_line(reason)
                    ),
                );
            }
            EventKind::AgentMessage { receipt, state } => {
                let level = match state {
                    herald_protocol::MessageDelivery::Missed => Level::Warning,
                    _ => Level::Info,
                };
                self.notice(
                    level,
                    &format!("message {receipt} to {}: {state}", event.agent_id),
                );
            }
            EventKind::Compaction {
                tokens_before,
                tokens_after,
            } if root => {
                self.notice(
                    Level::Info,
                    &format!("context compacted: ~{tokens_before} → ~{tokens_after} tokens"),
                );
            }
            EventKind::SubagentStarted {
                parent_id,
                depth,
                goal,
                background,
                child_session_id,
            } => {
                self.child_sessions
                    .insert(event.agent_id.clone(), child_session_id.clone());
                self.live.agents.insert(
                    event.agent_id.clone(),
                    RunningAgent {
                        parent_id: parent_id.clone(),
                        depth: *depth,
                        goal: goal.clone(),
                        background: *background,
                        current_tool: None,
                        tokens: 0,
                        started: Instant::now(),
                    },
                );
            }
            EventKind::SubagentTool { tool, tokens, .. } => {
                if let Some(agent) = self.live.agents.get_mut(&event.agent_id) {
                    agent.current_tool = Some(tool.clone());
                    agent.tokens = tokens.input + tokens.output;
                }
            }
            EventKind::SubagentCompleted {
                depth,
                status,
                summary,
                tokens,
                cost_usd,
                duration_seconds,
                ..
            } => {
                self.status.input_tokens += tokens.input;
                self.status.output_tokens += tokens.output;
                self.status.cached_tokens += tokens.cached;
                match cost_usd {
                    Some(cost) => *self.status.cost_usd.get_or_insert(0.0) += cost,
                    None => self.status.unpriced_requests += 1,
                }
                let goal = self
                    .live
                    .agents
                    .remove(&event.agent_id)
                    .map(|agent| agent.goal)
                    .unwrap_or_default();
                self.history.extend(cells::subagent_done(
                    &cells::SubagentDone {
                        agent_id: event.agent_id.clone(),
                        depth: *depth,
                        goal,
                        status: status.as_str().to_owned(),
                        summary: summary.clone(),
                        seconds: *duration_seconds,
                        tokens: tokens.input + tokens.output,
                    },
                    self.width,
                ));
            }
            EventKind::ClarifyRequested {
                request_id,
                question,
                choices,
                allow_freetext,
            } => self.open_request(Overlay::Clarify(overlay::Clarify::new(
                request_id.clone(),
                question.clone(),
                choices.clone(),
                *allow_freetext,
            ))),
            EventKind::ApprovalRequested {
                request_id,
                tool,
                arguments,
                reason,
                allow_rule,
                ..
            } => self.open_request(Overlay::Approval(overlay::Approval {
                request_id: request_id.clone(),
                agent_id: event.agent_id.clone(),
                tool: tool.clone(),
                arguments: arguments.clone(),
                reason: reason.clone(),
                allow_rule: allow_rule.clone(),
                selected: 0,
                note: None,
            })),
            EventKind::ElicitationRequested {
                request_id,
                server,
                message,
                schema,
            } => self.open_request(Overlay::Elicitation(overlay::Elicitation::new(
                request_id.clone(),
                server.clone(),
                message.clone(),
                schema,
            ))),
            EventKind::ApprovalResolved { request_id, .. }
            | EventKind::ElicitationResolved { request_id, .. } => self.request_closed(request_id),
            EventKind::McpServer {
                server,
                status,
                message,
                ..
            } if status.is_problem() => {
                let what = match status {
                    McpServerStatus::Failed => "did not start",
                    McpServerStatus::Late => "is not ready yet",
                    _ => "changed its tools (the new list applies from the next session)",
                };
                let text = match message {
                    Some(message) => format!("MCP server `{server}` {what}: {message}"),
                    None => format!("MCP server `{server}` {what}"),
                };
                self.notice(Level::Warning, &text);
            }
            EventKind::Error { message, fatal } => {
                let level = if *fatal { Level::Error } else { Level::Warning };
                self.notice(level, message);
            }
            _ => {}
        }
    }

    /// A blank line between tool cells and the text after them.
    fn gap_after_tools(&mut self) {
        if std::mem::take(&mut self.after_tool) {
            self.history.push(Line::default());
        }
    }

    /// Shows the complete lines of streamed reasoning, dim; with `all`,
    /// the unfinished last line too.
    fn show_thinking(&mut self, all: bool) {
        for line in take_lines(&mut self.thinking, all) {
            self.gap_after_tools();
            let text = format!("  {line}");
            self.history
                .extend(crate::wrap::wrap_text(&text, self.width, cells::dim()));
        }
    }

    fn finish_stream(&mut self) {
        if let Some(mut stream) = self.stream.take() {
            self.history.extend(stream.finish());
            self.history.push(Line::default());
        }
    }

    /// Shows a request now, or after the one open.
    fn open_request(&mut self, request: Overlay) {
        match &self.overlay {
            Some(Overlay::Approval(_) | Overlay::Clarify(_) | Overlay::Elicitation(_)) => {
                self.waiting.push_back(request);
            }
            Some(other) => {
                // A picker or text view gives way; it is not a request.
                let _ = other;
                self.overlay = Some(request);
            }
            None => self.overlay = Some(request),
        }
    }

    /// A request was answered elsewhere (an interrupt, another client).
    fn request_closed(&mut self, request_id: &str) {
        let matches = |overlay: &Overlay| match overlay {
            Overlay::Approval(view) => view.request_id == request_id,
            Overlay::Elicitation(view) => view.request_id == request_id,
            Overlay::Clarify(view) => view.request_id == request_id,
            _ => false,
        };
        self.waiting.retain(|overlay| !matches(overlay));
        if self.overlay.as_ref().is_some_and(matches) {
            self.overlay = self.waiting.pop_front();
        }
    }

    // ----- turns ------------------------------------------------------------

    async fn turn_finished(&mut self, result: Option<TurnResult>) -> Flow {
        if let Some(waking) = self.waking.take() {
            self.woke(waking, result).await;
            self.start_queued();
            return Flow::Continue;
        }
        self.finish_stream();
        self.live.tools.clear();
        self.calls.clear();
        // Questions of the turn are void now; a background agent's are
        // still waiting for their answer.
        let waiting = std::mem::take(&mut self.waiting);
        self.waiting = waiting
            .into_iter()
            .filter(|request| self.still_asked(request))
            .collect();
        if self
            .overlay
            .as_ref()
            .is_some_and(|overlay| !self.still_asked(overlay))
        {
            self.overlay = self.waiting.pop_front();
        }
        match result {
            Some(result) => {
                let reason = result.exit_reason.as_str().to_owned();
                let lines = cells::turn_end(
                    &reason,
                    result.error.as_deref(),
                    self.session.id(),
                    self.width,
                );
                self.history.extend(lines);
            }
            None => self.notice(Level::Error, "the session ended during the turn"),
        }
        for text in self.session.take_unsent_steering().into_iter().rev() {
            self.queued.push_front(text);
        }
        self.dirty = true;
        self.start_queued();
        Flow::Continue
    }

    /// Whether the session still waits for the answer to `overlay` (a
    /// view that asks nothing: yes).
    fn still_asked(&self, overlay: &Overlay) -> bool {
        match overlay {
            Overlay::Approval(view) => self
                .session
                .pending_approvals()
                .iter()
                .any(|pending| pending.request_id == view.request_id),
            Overlay::Elicitation(view) => self
                .session
                .pending_elicitations()
                .iter()
                .any(|pending| pending.request_id == view.request_id),
            Overlay::Clarify(view) => self.session.open_questions().contains(&view.request_id),
            Overlay::Picker(_) | Overlay::Text(_) => true,
        }
    }

    /// Starts the oldest queued prompt, if nothing runs.
    fn start_queued(&mut self) {
        if !self.busy()
            && let Some(next) = self.queued.pop_front()
        {
            self.start_turn(next);
        }
    }

    fn start_turn(&mut self, text: String) {
        self.gap_after_tools();
        self.history.extend(cells::user_prompt(&text, self.width));
        match self.session.start_turn(text) {
            Ok(handle) => {
                self.used = true;
                self.turn_started = Instant::now();
                self.turn = Some(Box::pin(handle.finished()));
            }
            Err(err) => self.notice(Level::Error, &err.to_string()),
        }
        self.dirty = true;
    }

    fn compacted(&mut self, report: Result<CompressionReport, String>) {
        match report {
            Ok(report) => self.notice(
                Level::Info,
                &format!(
                    "compacted: ~{} → ~{} prompt tokens ({} messages summarised, {} tool outputs shortened)",
                    report.tokens_before, report.tokens_after, report.summarised, report.shortened
                ),
            ),
            Err(err) => self.notice(Level::Warning, &format!("not compacted: {err}")),
        }
    }

    /// Sends what the composer submitted: a slash command, or a prompt
    /// (queued while a turn runs).
    async fn submit(&mut self, text: String) -> Flow {
        if text.trim().is_empty() {
            return Flow::Continue;
        }
        self.remember(&text);
        if let Some(command) = text.strip_prefix('/') {
            let (name, args) = match command.split_once(char::is_whitespace) {
                Some((name, args)) => (name, args.trim()),
                None => (command.trim(), ""),
            };
            if slash::find(name).is_some() {
                return commands::run(self, name, args.to_owned()).await;
            }
            // `/<server>:<prompt>`: an MCP prompt.
            if name.contains(':') && !name.contains('/') {
                commands::mcp_prompt(self, name, args).await;
                return Flow::Continue;
            }
            // A path typed at the start of a prompt (`/etc/hosts is…`) is
            // not a command either: it has another slash in its first word.
            if !name.contains('/') {
                self.notice(
                    Level::Error,
                    &format!("unknown command /{name} — /help lists the commands (nothing was sent to the model)"),
                );
                return Flow::Continue;
            }
        }
        if self.busy() {
            if self.waking.is_some() {
                // The person wins over a heartbeat wake.
                let _ = self.session.submit(Op::Interrupt {});
            }
            self.queued.push_back(text);
            self.dirty = true;
        } else {
            self.start_turn(text);
        }
        Flow::Continue
    }

    /// Saves a prompt in this directory's history.
    fn remember(&mut self, text: &str) {
        self.composer.push_history(text.to_owned());
        let cwd = self.settings.cwd.display().to_string();
        let text = text.to_owned();
        let catalog = self.catalog.clone();
        tokio::spawn(async move {
            if let Err(err) = catalog.remember_prompt(&cwd, &text).await {
                tracing::warn!("the prompt history was not saved: {err}");
            }
        });
    }

    // ----- keys -------------------------------------------------------------

    async fn on_key(&mut self, key: KeyEvent) -> Flow {
        self.dirty = true;
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(overlay) = &mut self.overlay {
            if control && key.code == KeyCode::Char('c') {
                return self.ctrl_c_in_overlay();
            }
            let outcome = overlay.handle_key(key);
            return self.overlay_outcome(outcome).await;
        }
        match key.code {
            KeyCode::Char('c') if control => return self.ctrl_c(),
            KeyCode::Char('d') if control && self.composer.is_empty() => {
                return self.exit_requested();
            }
            KeyCode::Char('o') if control => {
                self.show_outputs();
                return Flow::Continue;
            }
            KeyCode::Char('t') if control => {
                commands::agents(self).await;
                return Flow::Continue;
            }
            _ => {}
        }
        match self.composer.handle_key(key) {
            ComposerAction::Submit(text) => self.submit(text).await,
            ComposerAction::Unhandled => {
                if key.code == KeyCode::Esc && self.busy() {
                    self.interrupt();
                }
                Flow::Continue
            }
            _ => Flow::Continue,
        }
    }

    fn on_paste(&mut self, text: &str) {
        self.dirty = true;
        match &mut self.overlay {
            Some(overlay) => overlay.handle_paste(text),
            None => self.composer.handle_paste(text),
        }
    }

    fn interrupt(&mut self) {
        if self.compacting.is_some() || self.turn.is_some() {
            self.submit_op(Op::Interrupt {});
            self.status.hint = Some("interrupting…".to_owned());
        }
    }

    /// Ctrl+C: clears the composer; on an empty one it interrupts a running
    /// turn, and a second press within two seconds exits.
    fn ctrl_c(&mut self) -> Flow {
        if !self.composer.is_empty() {
            self.composer.clear();
            return Flow::Continue;
        }
        if self
            .last_ctrl_c
            .is_some_and(|at| at.elapsed() <= EXIT_WINDOW)
        {
            return self.exit_requested();
        }
        if self.busy() {
            self.submit_op(Op::Interrupt {});
        }
        self.last_ctrl_c = Some(Instant::now());
        self.status.hint = Some("press Ctrl+C again to exit".to_owned());
        Flow::Continue
    }

    /// Ctrl+C with a question open: stops the turn (which denies or
    /// cancels what it asked), or closes a picker.
    fn ctrl_c_in_overlay(&mut self) -> Flow {
        match &self.overlay {
            Some(Overlay::Approval(_) | Overlay::Clarify(_) | Overlay::Elicitation(_))
                if self.busy() =>
            {
                self.submit_op(Op::Interrupt {});
            }
            // A background agent asks while no turn runs: no turn to stop,
            // so Ctrl+C answers no.
            Some(Overlay::Approval(view)) => {
                let request_id = view.request_id.clone();
                self.submit_op(ApprovalAnswer::Deny { message: None }.into_op(&request_id));
                self.overlay = self.waiting.pop_front();
            }
            Some(Overlay::Elicitation(view)) => {
                let request_id = view.request_id.clone();
                self.submit_op(ElicitAnswer::cancel().into_op(&request_id));
                self.overlay = self.waiting.pop_front();
            }
            _ => self.overlay = self.waiting.pop_front(),
        }
        Flow::Continue
    }

    async fn overlay_outcome(&mut self, outcome: Outcome) -> Flow {
        match outcome {
            Outcome::Stay => {}
            Outcome::Close => self.overlay = self.waiting.pop_front(),
            Outcome::Approve {
                request_id,
                decision,
                note,
            } => {
                let answer = ApprovalAnswer::parse(&decision, note);
                match answer.and_then(|answer| {
                    self.session
                        .submit(answer.into_op(&request_id))
                        .map_err(|err| err.to_string())
                }) {
                    Ok(_) => self.overlay = self.waiting.pop_front(),
                    Err(err) => {
                        self.notice(Level::Warning, &err);
                        self.overlay = self.waiting.pop_front();
                    }
                }
            }
            Outcome::Answer { request_id, answer } => {
                match self
                    .session
                    .submit(Op::ClarifyAnswer { request_id, answer })
                {
                    Ok(_) => self.overlay = self.waiting.pop_front(),
                    Err(err) => self.notice(Level::Warning, &err.to_string()),
                }
            }
            Outcome::Elicit {
                request_id,
                action,
                content,
            } => {
                let answer = herald_core::ElicitAction::parse(&action)
                    .map(|action| ElicitAnswer { action, content });
                match answer.and_then(|answer| {
                    self.session
                        .submit(answer.into_op(&request_id))
                        .map_err(|err| err.to_string())
                }) {
                    Ok(_) => self.overlay = self.waiting.pop_front(),
                    Err(err) => {
                        if let Some(Overlay::Elicitation(view)) = &mut self.overlay {
                            view.error = Some(err);
                        }
                    }
                }
            }
            Outcome::Picked { purpose, key } => return commands::picked(self, purpose, key).await,
            Outcome::Secondary { purpose, key } => commands::secondary(self, purpose, key),
            Outcome::Message { key } => {
                self.close_overlay();
                self.composer.set_text(&format!("/message {key} "));
            }
        }
        Flow::Continue
    }

    /// Ctrl+O: the full output of the latest tool calls.
    fn show_outputs(&mut self) {
        let mut lines: Vec<Line<'static>> = Vec::new();
        for cell in self.outputs.iter().rev() {
            let key = crate::tool_view::key_argument(&cell.name, &cell.arguments, 200);
            lines.push(Line::from(ratatui::text::Span::styled(
                format!("{} {key}", cell.name),
                ratatui::style::Style::default().add_modifier(ratatui::style::Modifier::BOLD),
            )));
            let text = match crate::tool_view::output_view(&cell.name, &cell.output) {
                crate::tool_view::OutputView::Text(lines) => lines,
                crate::tool_view::OutputView::Diff { lines, .. } => lines,
                crate::tool_view::OutputView::Todos(todos) => todos
                    .iter()
                    .map(|t| format!("[{}] {}", t.status, t.content))
                    .collect(),
            };
            lines.extend(text.into_iter().map(Line::from));
            lines.push(Line::default());
        }
        if lines.is_empty() {
            lines.push(Line::from("no tool has run yet in this session"));
        }
        self.overlay = Some(Overlay::Text(TextView::new(
            "tool output (newest first)",
            lines,
        )));
    }

    /// Leaving: with background agents running, ask what becomes of them.
    pub(crate) fn exit_requested(&mut self) -> Flow {
        if self.background_running() {
            self.overlay = Some(Overlay::Picker(Picker::new(
                "background agents are still running",
                Purpose::ExitWithAgents,
                vec![
                    PickItem {
                        key: "wait".into(),
                        label: "Wait for them, then exit".into(),
                        detail: String::new(),
                        depth: 0,
                    },
                    PickItem {
                        key: "suspend".into(),
                        label: "Leave them suspended".into(),
                        detail: "they continue when you resume this session".into(),
                        depth: 0,
                    },
                    PickItem {
                        key: "cancel".into(),
                        label: "Cancel them and exit".into(),
                        detail: String::new(),
                        depth: 0,
                    },
                ],
                "",
            )));
            return Flow::Continue;
        }
        Flow::Exit
    }

    /// Ends the session (background agents are suspended). A long session
    /// first runs its memory flush; Ctrl+C or Esc (read from `input`), or
    /// SIGTERM/SIGHUP (`stop`), end it at once, and leaving on a signal
    /// skips it.
    async fn leave<W: Write>(
        &mut self,
        screen: &mut Screen<W>,
        input: &mut crossterm::event::EventStream,
        stop: &CancellationToken,
    ) -> TuiOutcome {
        self.finish_stream();
        let suspended = if stop.is_cancelled() {
            self.session.shutdown_now().await
        } else {
            if self.used {
                // The memory flush may take a few seconds: say so, and how
                // to skip it.
                self.status.hint = Some("saving memory… (Esc to skip)".to_owned());
                self.dirty = true;
                let _ = self.draw(screen, Instant::now());
            }
            let session = &self.session;
            let ending = session.shutdown();
            tokio::pin!(ending);
            let mut interrupting = false;
            let mut keys_open = true;
            loop {
                tokio::select! {
                    suspended = &mut ending => break suspended,
                    () = stop.cancelled(), if !interrupting => interrupting = true,
                    key = input.next(), if !interrupting && keys_open => match key {
                        Some(Ok(TermEvent::Key(key)))
                            if key.kind != KeyEventKind::Release
                                && (key.code == KeyCode::Esc
                                    || (key.code == KeyCode::Char('c')
                                        && key.modifiers.contains(KeyModifiers::CONTROL))) =>
                        {
                            interrupting = true;
                        }
                        Some(Ok(_)) => {}
                        // The terminal went away: the deadline still holds.
                        Some(Err(_)) | None => keys_open = false,
                    },
                    // Until the end arrives: the flush may not have started
                    // when the key came.
                    () = tokio::time::sleep(Duration::from_millis(50)), if interrupting => {
                        let _ = session.submit(Op::Interrupt {});
                    }
                }
            }
        };
        TuiOutcome {
            session_id: self.session.id().to_owned(),
            used: self.used,
            suspended,
        }
    }

    // ----- what commands need ----------------------------------------------

    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// Whether a turn or a compaction runs.
    pub(crate) fn is_busy(&self) -> bool {
        self.busy()
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    pub(crate) fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub(crate) fn width(&self) -> u16 {
        self.width
    }

    pub(crate) fn status(&self) -> &Status {
        &self.status
    }

    pub(crate) fn child_session(&self, agent_id: &str) -> Option<&String> {
        self.child_sessions.get(agent_id)
    }

    pub(crate) fn show(&mut self, overlay: Overlay) {
        self.overlay = Some(overlay);
        self.dirty = true;
    }

    pub(crate) fn close_overlay(&mut self) {
        self.overlay = self.waiting.pop_front();
        self.dirty = true;
    }

    /// Submits an operation whose refusal needs no word on the screen
    /// (an interrupt with nothing running, an answer to a request that
    /// closed meanwhile).
    pub(crate) fn submit_op(&self, op: Op) {
        let _ = self.session.submit(op);
    }

    pub(crate) fn say(&mut self, level: Level, text: &str) {
        self.notice(level, text);
    }

    pub(crate) fn send_prompt(&mut self, text: String) {
        if self.busy() {
            self.queued.push_back(text);
        } else {
            self.start_turn(text);
        }
    }

    pub(crate) fn steer(&mut self, text: String) {
        if self.turn.is_none() {
            // No turn to steer (at most a compaction runs): a prompt of its own.
            self.send_prompt(text);
            return;
        }
        match self.session.submit(Op::Steer { text: text.clone() }) {
            Ok(_) => {
                let lines = cells::steered(&text, self.width);
                self.history.extend(lines);
            }
            Err(err) => self.notice(Level::Warning, &err.to_string()),
        }
    }

    pub(crate) fn compact(&mut self) {
        if self.busy() {
            self.notice(Level::Warning, "a turn is running; compact after it ends");
            return;
        }
        let session = self.session.clone();
        self.turn_started = Instant::now();
        self.compacting = Some(Box::pin(async move {
            session.compact().await.map_err(|err| err.to_string())
        }));
    }

    pub(crate) fn set_next_model(&mut self, model: String) {
        self.status.next_model = Some(model.clone()).filter(|m| *m != self.settings.model);
        self.next_model = Some(model);
    }

    pub(crate) fn wait_then_exit(&mut self) {
        self.exit_when_idle = true;
        self.turn_started = Instant::now();
    }

    /// Replaces the open session with another (`/new`, `/resume`).
    pub(crate) async fn switch(&mut self, mode: OpenMode) {
        if self.busy() {
            self.notice(
                Level::Warning,
                "a turn is running; interrupt it (Esc) or wait before switching sessions",
            );
            return;
        }
        let model = self.next_model.clone();
        let old = self.session.id().to_owned();
        let suspended = self.session.shutdown().await;
        if suspended > 0 {
            self.notice(
                Level::Info,
                &format!("{suspended} background agent(s) of {old} suspended; they continue when it is resumed"),
            );
        }
        match self.host.open(mode, model).await {
            Ok(opened) => {
                self.session = opened.session;
                self.events = opened.events;
                self.events_open = true;
                self.settings = opened.settings;
                self.live = Live::default();
                self.outputs.clear();
                self.child_sessions.clear();
                self.queued.clear();
                self.history.push(Line::default());
                self.session_opened().await;
            }
            Err(err) => {
                self.notice(Level::Error, &format!("could not open the session: {err}"));
                // Back to the session we left.
                match self.host.open(OpenMode::Resume(old), None).await {
                    Ok(opened) => {
                        self.session = opened.session;
                        self.events = opened.events;
                        self.events_open = true;
                        self.events_open = true;
                        self.settings = opened.settings;
                    }
                    Err(err) => self.notice(
                        Level::Error,
                        &format!("could not reopen the session: {err}"),
                    ),
                }
            }
        }
    }
}

// ----- heartbeat ------------------------------------------------------------

impl App {
    /// The open session's heartbeat, if it has one.
    pub(crate) async fn heartbeat(&self) -> Option<herald_store::Heartbeat> {
        let id = self.session.id().to_owned();
        match self.store.call(move |s| s.heartbeat(&id)).await {
            Ok(Ok(found)) => found,
            _ => None,
        }
    }

    /// The store, for `/heartbeat`.
    pub(crate) fn store(&self) -> &StoreHandle {
        &self.store
    }

    /// The time heartbeats are read against (the test clock in tests).
    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Wakes the session when its heartbeat is due and it is idle: no turn
    /// or compaction runs, nothing is typed, queued or asked. Otherwise the
    /// tick waits (ticks missed meanwhile make one wake).
    async fn heartbeat_tick(&mut self) {
        use herald_cron::heartbeat;
        let Some(hb) = self.heartbeat().await else {
            return;
        };
        let now = self.clock.now_ms();
        if hb.next_due_at > now
            || self.busy()
            || !self.composer.is_empty()
            || self.overlay.is_some()
            || !self.queued.is_empty()
        {
            return;
        }
        let id = hb.session_id.clone();
        if !heartbeat::is_active(&hb, now) {
            let later = heartbeat::next_due(hb.next_due_at, hb.every_ms, now);
            let _ = self
                .store
                .call(move |s| s.postpone_heartbeat(&id, later))
                .await;
            return;
        }
        let Some(text) = heartbeat::heartbeat_text(&self.settings.cwd, &self.settings.home) else {
            let later = heartbeat::next_due(hb.next_due_at, hb.every_ms, now);
            let reason = format!(
                "{} is missing or empty",
                heartbeat::heartbeat_file(&self.settings.cwd, &self.settings.home).display()
            );
            let _ = self
                .store
                .call(move |s| s.record_heartbeat_wake(&id, now, "skipped", Some(&reason), later))
                .await;
            return;
        };
        match self.session.start_turn(text) {
            Ok(handle) => {
                self.waking = Some(Waking {
                    submission: handle.id().clone(),
                    due: hb.next_due_at,
                    every_ms: hb.every_ms,
                });
                self.turn_started = Instant::now();
                self.turn = Some(Box::pin(handle.finished()));
            }
            Err(err) => tracing::warn!("the heartbeat wake could not start: {err}"),
        }
    }

    /// Records how a heartbeat wake ended; shows a reply that needs
    /// attention (never `HEARTBEAT_OK`).
    async fn woke(&mut self, waking: Waking, result: Option<TurnResult>) {
        use herald_cron::heartbeat::{self, WakeOutcome};
        let outcome = heartbeat::outcome_of(result);
        match &outcome {
            WakeOutcome::Alert(text) => {
                self.notice(Level::Info, "heartbeat:");
                self.history
                    .extend(crate::markdown::render(text, self.width));
                self.history.push(Line::default());
            }
            WakeOutcome::Failed(err) => {
                self.notice(Level::Warning, &format!("heartbeat wake failed: {err}"));
            }
            _ => {}
        }
        let now = self.clock.now_ms();
        let later = heartbeat::next_due(waking.due, waking.every_ms, now);
        let id = self.session.id().to_owned();
        let word = outcome.word();
        let detail = outcome.detail().map(str::to_owned);
        let _ = self
            .store
            .call(move |s| s.record_heartbeat_wake(&id, now, word, detail.as_deref(), later))
            .await;
        self.dirty = true;
    }
}

/// Takes the complete lines off the front of `buffer` (all of it with
/// `all`), without their line ends.
fn take_lines(buffer: &mut String, all: bool) -> Vec<String> {
    let end = if all {
        buffer.len()
    } else {
        buffer.rfind('\n').map_or(0, |at| at + 1)
    };
    let taken: String = buffer.drain(..end).collect();
    if taken.is_empty() {
        return Vec::new();
    }
    taken
        .strip_suffix('\n')
        .unwrap_or(&taken)
        .split('\n')
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod thinking_tests {
    use super::take_lines;

    #[test]
    fn reasoning_shows_by_whole_lines_and_the_rest_at_the_end() {
        let mut buffer = String::from("first line\nsecond");
        assert_eq!(take_lines(&mut buffer, false), ["first line"]);
        assert_eq!(buffer, "second");
        buffer.push_str(" half");
        assert!(take_lines(&mut buffer, false).is_empty());
        assert_eq!(take_lines(&mut buffer, true), ["second half"]);
        assert!(buffer.is_empty());
        assert!(take_lines(&mut buffer, true).is_empty());
    }
}
