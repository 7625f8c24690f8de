//! What each slash command does. Commands read the catalog and the session
//! and open overlays; none of them reaches the model except `/init` (a
//! prompt of its own) and `/steer` (the user's text).

use herald_core::runtime::{Op, OpenMode};
use herald_store::ListFilter;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::app::{App, Flow};
use crate::cells::{self, Level, dim};
use crate::overlay::{Overlay, PickItem, Picker, Purpose, TextView};
use crate::slash::COMMANDS;
use crate::tool_view;

/// The prompt `/init` sends.
pub const INIT_PROMPT: &str = "Explore this project and write an AGENTS.md at its root for coding agents that will work here: what the project is, how it is laid out (the main directories and what lives in them), how to build it, run it and run its tests (the exact commands, checked by running them where it is cheap), the conventions the code follows (style, error handling, naming, testing) and anything a newcomer would trip over. Keep it short and factual: only what you verified. If an AGENTS.md already exists, improve it instead of starting over.";

/// Runs slash command `name` with `args`.
pub(crate) async fn run(app: &mut App, name: &str, args: String) -> Flow {
    match name {
        "help" => help(app),
        "agents" => agents(app).await,
        "resume" => sessions(app, false).await,
        "sessions" => sessions(app, true).await,
        "new" => app.switch(OpenMode::New).await,
        "model" => model(app, args),
        "todos" => todos(app).await,
        "memory" => memory(app),
        "skills" => skills(app).await,
        "skill" => use_skill(app, &args).await,
        "usage" => usage(app),
        "compress" => app.compact(),
        "rewind" => rewind(app).await,
        "steer" => {
            if args.trim().is_empty() {
                app.say(
                    Level::Warning,
                    "/steer needs the text to send: /steer use tabs, not spaces",
                );
            } else {
                app.steer(args);
            }
        }
        "message" => message(app, &args),
        "heartbeat" => heartbeat(app, &args).await,
        "init" => app.send_prompt(INIT_PROMPT.to_owned()),
        "exit" | "quit" => return app.exit_requested(),
        _ => {}
    }
    Flow::Continue
}

/// `/heartbeat` (show), `/heartbeat on 30m`, `/heartbeat off`.
async fn heartbeat(app: &mut App, args: &str) {
    let words: Vec<&str> = args.split_whitespace().collect();
    let id = app.session().id().to_owned();
    match words.as_slice() {
        [] => match app.heartbeat().await {
            Some(hb) => {
                let last = hb.last_outcome.as_deref().unwrap_or("no wake yet");
                app.say(
                    Level::Info,
                    &format!(
                        "heartbeat every {} min{}; last: {last}",
                        hb.every_ms / 60_000,
                        hb.active_hours
                            .as_ref()
                            .map(|h| format!(", {h} ({})", hb.tz))
                            .unwrap_or_default()
                    ),
                );
            }
            None => app.say(
                Level::Info,
                "no heartbeat; /heartbeat on 30m wakes this session with HEARTBEAT.md while idle",
            ),
        },
        ["on", every] => match herald_cron::heartbeat::define(every, None, None) {
            Ok(settings) => {
                let now = app.now_ms();
                let tz = settings.tz.name().to_owned();
                let every_ms = settings.every_ms;
                let stored = app
                    .store()
                    .call(move |s| {
                        s.set_heartbeat(&id, every_ms, None, &tz, now.saturating_add(every_ms), now)
                    })
                    .await;
                match stored {
                    Ok(Ok(_)) => app.say(
                        Level::Info,
                        &format!("heartbeat on: every {every}, while this session is idle"),
                    ),
                    Ok(Err(err)) => app.say(Level::Error, &format!("heartbeat not set: {err}")),
                    Err(err) => app.say(Level::Error, &format!("heartbeat not set: {err}")),
                }
            }
            Err(err) => app.say(Level::Warning, &format!("{err} (nothing changed)")),
        },
        ["off"] => {
            let removed = app.store().call(move |s| s.remove_heartbeat(&id)).await;
            match removed {
                Ok(Ok(true)) => app.say(Level::Info, "heartbeat off"),
                Ok(Ok(false)) => app.say(Level::Info, "this session has no heartbeat"),
                Ok(Err(err)) => app.say(Level::Error, &format!("heartbeat not removed: {err}")),
                Err(err) => app.say(Level::Error, &format!("heartbeat not removed: {err}")),
            }
        }
        _ => app.say(
            Level::Warning,
            "/heartbeat takes `on EVERY` (such as on 30m) or `off`; nothing changed",
        ),
    }
}

fn help(app: &mut App) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::from(Span::styled("Commands", bold))];
    let prompts: Vec<_> = app
        .prompts
        .iter()
        .map(crate::slash::SlashCommand::for_prompt)
        .collect();
    for command in COMMANDS.iter().chain(&prompts) {
        let name = if command.args.is_empty() {
            format!("/{}", command.name)
        } else {
            format!("/{} {}", command.name, command.args)
        };
        lines.push(Line::from(vec![
            // A long name still gets a space before its description.
            Span::raw(format!("  {name:<15} ")),
            Span::styled(command.description.to_string(), dim()),
        ]));
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled("Keys", bold)));
    for (key, what) in KEYS {
        lines.push(Line::from(vec![
            Span::raw(format!("  {key:<22}")),
            Span::styled(*what, dim()),
        ]));
    }
    app.show(Overlay::Text(TextView::new("help", lines)));
}

/// The keys `/help` lists.
pub const KEYS: &[(&str, &str)] = &[
    ("Enter", "send (queued while the agent works)"),
    ("Shift+Enter, Ctrl+J", "new line (also a line ending in \\)"),
    ("Esc", "interrupt the agent; close a popup"),
    ("Ctrl+C", "clear the input; twice on an empty one exits"),
    ("Ctrl+D", "exit (on an empty input)"),
    ("↑ / ↓", "previous / next prompt of this directory"),
    ("Ctrl+R", "search earlier prompts"),
    ("@", "complete a file path"),
    ("Ctrl+O", "full output of the latest tool calls"),
    ("Ctrl+T", "this session's agents (like /agents)"),
    ("←→ Alt+B/F Ctrl+A/E", "move by character, word, line"),
    (
        "Ctrl+W Ctrl+U Ctrl+K",
        "delete word back, to line start, to line end",
    ),
];

/// `/message AGENT TEXT`: steers a running subagent at its next tool
/// boundary, or starts a follow-up turn in a finished one's session. The
/// receipt (`delivered`, `missed`) arrives as an event.
fn message(app: &mut App, args: &str) {
    let Some((agent_id, text)) = args.trim().split_once(char::is_whitespace) else {
        app.say(
            Level::Warning,
            "/message needs an agent and the text: /message ag_123 use the v2 API (m in /agents fills in the id)",
        );
        return;
    };
    let agents = app.session().agents();
    let known = agents.iter().find(|a| a.id == agent_id);
    let running = known.is_some_and(|a| !a.status.is_finished());
    let (agent_id, message) = (agent_id.to_owned(), text.trim().to_owned());
    let (op, done) = if running {
        (
            Op::AgentSend {
                agent_id: agent_id.clone(),
                message,
                subtree: false,
            },
            format!("queued for {agent_id}: it reads it at its next tool boundary"),
        )
    } else {
        (
            Op::AgentFollowup {
                agent_id: agent_id.clone(),
                message,
            },
            if known.is_some() {
                format!("follow-up started in {agent_id}'s session, in the background")
            } else {
                // Not live here: the runtime looks it up in the journal and
                // says so (an `error` event) when there is no such agent.
                format!("looking up {agent_id} in this session's journal for a follow-up")
            },
        )
    };
    match app.session().submit(op) {
        Ok(_) => app.say(Level::Info, &done),
        Err(err) => app.say(Level::Warning, &err.to_string()),
    }
}

/// `/agents`: the session's agents as a tree; Enter shows a transcript,
/// `x` cancels one with its descendants, `m` writes to one.
pub(crate) async fn agents(app: &mut App) {
    let agents = app.session().agents();
    let items: Vec<PickItem> = agents
        .iter()
        .map(|agent| {
            let doing = match (&agent.current_tool, agent.status.as_str()) {
                (Some(tool), "running") => format!(" → {tool}"),
                _ => String::new(),
            };
            PickItem {
                key: agent.id.clone(),
                label: format!("{} {}", agent.id, herald_protocol::one_line(&agent.goal)),
                detail: format!(
                    "{}{doing} · {:.0} s · {} tok{}",
                    agent.status,
                    agent.seconds,
                    crate::format::tokens(agent.tokens.input + agent.tokens.output),
                    if agent.background {
                        " · background"
                    } else {
                        ""
                    }
                ),
                depth: agent.depth.saturating_sub(1) as u16,
            }
        })
        .collect();
    app.show(Overlay::Picker(Picker::new(
        "agents of this session",
        Purpose::Agents,
        items,
        "no subagents in this session yet",
    )));
}

/// `/resume` (every directory) and `/sessions` (this directory): stored
/// sessions, newest first, searchable; Enter resumes one.
async fn sessions(app: &mut App, this_directory: bool) {
    let filter = ListFilter {
        cwd: this_directory.then(|| app.settings().cwd.display().to_string()),
        parent: None,
        limit: 500,
        include_subagents: false,
        ..ListFilter::default()
    };
    let found = match app.catalog().sessions(filter).await {
        Ok(found) => found,
        Err(err) => {
            app.say(Level::Warning, &format!("cannot list the sessions: {err}"));
            return;
        }
    };
    let current = app.session().id().to_owned();
    let items = found
        .into_iter()
        .filter(|record| record.id != current)
        .map(|record| PickItem {
            key: record.id.clone(),
            label: record
                .title
                .as_deref()
                .map(herald_protocol::one_line)
                .unwrap_or_else(|| "(untitled)".to_owned()),
            detail: format!(
                "{} · {} · {}{}",
                when(record.last_active_at),
                record.id,
                record.model,
                if this_directory {
                    String::new()
                } else {
                    format!(" · {}", record.cwd)
                }
            ),
            depth: 0,
        })
        .collect();
    app.show(Overlay::Picker(Picker::new(
        if this_directory {
            "sessions in this directory"
        } else {
            "resume a session"
        },
        Purpose::Resume,
        items,
        "no other stored sessions",
    )));
}

/// `YYYY-MM-DD HH:MM` (UTC) of a millisecond timestamp.
fn when(ms: i64) -> String {
    let Ok(time) = time::OffsetDateTime::from_unix_timestamp(ms / 1000) else {
        return String::new();
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        time.year(),
        u8::from(time.month()),
        time.day(),
        time.hour(),
        time.minute()
    )
}

/// Models offered by `/model` without an argument.
const MODELS: &[&str] = &[
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4o",
    "o4-mini",
    "claude-sonnet-4-5",
    "claude-opus-4-1",
    "claude-haiku-4-5",
];

/// `/model NAME` sets the model of the next session; without a name, a
/// picker of common models.
fn model(app: &mut App, args: String) {
    let name = args.trim();
    if !name.is_empty() {
        app.set_next_model(name.to_owned());
        app.say(
            Level::Info,
            &format!(
                "the next session uses {name}: /new starts it (this one keeps {})",
                app.settings().model
            ),
        );
        return;
    }
    let current = app.settings().model.clone();
    let mut names: Vec<String> = MODELS.iter().map(|m| (*m).to_owned()).collect();
    if !names.contains(&current) {
        names.insert(0, current.clone());
    }
    let items = names
        .into_iter()
        .map(|name| PickItem {
            detail: if name == current {
                "current".to_owned()
            } else {
                String::new()
            },
            key: name.clone(),
            label: name,
            depth: 0,
        })
        .collect();
    app.show(Overlay::Picker(Picker::new(
        "model for the next session (or type /model NAME)",
        Purpose::Model,
        items,
        "no model matches; type /model NAME",
    )));
}

/// `/todos`: the task list as it is stored.
async fn todos(app: &mut App) {
    let id = app.session().id().to_owned();
    let stored = match app.catalog().todos(&id).await {
        Ok(stored) => stored,
        Err(err) => {
            app.say(Level::Warning, &format!("cannot read the task list: {err}"));
            return;
        }
    };
    let list = stored
        .map(|json| format!("{{\"todos\":{json}}}"))
        .map(|wrapped| tool_view::output_view("todo_read", &wrapped));
    let lines = match list {
        Some(tool_view::OutputView::Todos(todos)) if !todos.is_empty() => {
            cells::todo_list(&todos, app.width())
        }
        _ => vec![Line::from(Span::styled("the task list is empty", dim()))],
    };
    app.show(Overlay::Text(TextView::new("tasks", lines)));
}

/// `/memory`: what the memory files hold.
fn memory(app: &mut App) {
    let settings = app.settings();
    let store = herald_knowledge::MemoryStore::new(
        &settings.home,
        herald_core::memory_limits(&settings.memory),
    );
    let mut lines = Vec::new();
    for target in herald_knowledge::MemoryTarget::ALL {
        lines.push(Line::from(Span::styled(
            format!("{} · {}", target.label(), store.path(target).display()),
            Style::default().add_modifier(Modifier::BOLD),
        )));
        if !store.limits().enabled(target) {
            lines.push(Line::from(Span::styled(
                "disabled in config.toml ([memory])",
                dim(),
            )));
        } else {
            match store.read(target) {
                Ok(snapshot) if snapshot.entries.is_empty() => {
                    lines.push(Line::from(Span::styled("(empty)", dim())));
                }
                Ok(snapshot) => {
                    for entry in &snapshot.entries {
                        lines.push(Line::from(format!(
                            "• {}",
                            herald_protocol::one_line(entry)
                        )));
                    }
                }
                Err(err) => lines.push(Line::from(Span::styled(err.to_string(), dim()))),
            }
        }
        lines.push(Line::default());
    }
    app.show(Overlay::Text(TextView::new("memory", lines)));
}

/// `/<server>:<prompt> [arguments]`: fills in an MCP prompt (the runtime
/// binds the arguments and asks the server) and sends it as a prompt; a
/// missing argument or an unknown prompt is a warning and sends nothing.
pub(crate) async fn mcp_prompt(app: &mut App, command: &str, args: &str) {
    let session = app.session().clone();
    match session.mcp_prompt_text(command, args).await {
        Ok(text) => app.send_prompt(text),
        Err(err) => app.say(
            Level::Warning,
            &format!("{err} (nothing was sent to the model; /help lists the commands)"),
        ),
    }
}

/// `/skills`: the skills the agent can load.
async fn skills(app: &mut App) {
    let settings = app.settings();
    let roots = herald_knowledge::SkillRoots::new(&settings.home, &settings.cwd);
    // Discovery reads every SKILL.md (about 50 ms for a 2,000-skill pack):
    // on the blocking pool, so the runtime's thread keeps serving the session.
    let found = match tokio::task::spawn_blocking(move || roots.discover()).await {
        Ok(found) => found,
        Err(err) => {
            app.say(Level::Warning, &format!("cannot list the skills: {err}"));
            return;
        }
    };
    let mut lines = Vec::new();
    if found.skills.is_empty() {
        lines.push(Line::from(Span::styled(
            "no skills yet (`herald skills create NAME`, or let the agent save one)",
            dim(),
        )));
    }
    for skill in &found.skills {
        lines.push(Line::from(vec![
            Span::styled(
                herald_protocol::one_line(&skill.name),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                format!(
                    "  [{}{}]  ",
                    skill.source.as_str(),
                    if skill.model_invocable {
                        ""
                    } else {
                        ", user-only"
                    }
                ),
                dim(),
            ),
            Span::raw(herald_protocol::one_line(&skill.description)),
        ]));
        if let Some(warning) = &skill.warning {
            lines.push(Line::from(Span::styled(
                format!("  warning: {}", herald_protocol::one_line(warning)),
                dim(),
            )));
        }
    }
    for problem in &found.problems {
        lines.push(Line::from(Span::styled(
            format!(
                "skipped: {}",
                herald_protocol::one_line(&problem.to_string())
            ),
            dim(),
        )));
    }
    app.show(Overlay::Text(TextView::new("skills", lines)));
}

/// `/skill NAME [request]`: sends the skill's `SKILL.md` with the request
/// as a prompt. The way to use a user-only skill
/// (`disable-model-invocation: true`), which the model cannot load itself.
async fn use_skill(app: &mut App, args: &str) {
    let (name, request) = match args.trim().split_once(char::is_whitespace) {
        Some((name, request)) => (name.to_owned(), request.trim().to_owned()),
        None => (args.trim().to_owned(), String::new()),
    };
    if name.is_empty() {
        app.say(
            Level::Warning,
            "/skill needs a skill's name: /skill NAME [what to do] (/skills lists them)",
        );
        return;
    }
    let settings = app.settings();
    let roots = herald_knowledge::SkillRoots::new(&settings.home, &settings.cwd);
    // Discovery reads every SKILL.md: on the blocking pool.
    let loaded = tokio::task::spawn_blocking(move || {
        let skill = roots.find(&name)?;
        let text = herald_knowledge::skills::render_skill(&skill)?;
        Ok::<_, herald_knowledge::skills::SkillError>((skill, text))
    })
    .await;
    let (skill, text) = match loaded {
        Ok(Ok(loaded)) => loaded,
        Ok(Err(err)) => {
            app.say(Level::Warning, &err.to_string());
            return;
        }
        Err(err) => {
            app.say(Level::Warning, &format!("cannot load the skill: {err}"));
            return;
        }
    };
    let request = if request.is_empty() {
        "follow the skill.".to_owned()
    } else {
        request
    };
    app.send_prompt(skill_prompt(&skill.name, &skill.dir, &text, &request));
}

/// The prompt `/skill` sends.
fn skill_prompt(name: &str, dir: &std::path::Path, skill: &str, request: &str) -> String {
    format!(
        "Use the skill `{name}` for this request. Its instructions:\n\n{skill}\n\n\
         Its files are in {}; read them with read_file.\n\nRequest: {request}",
        dir.display()
    )
}

/// `/usage`: tokens and cost of this session, the whole tree and each agent.
fn usage(app: &mut App) {
    let status = app.status();
    let mut lines = vec![
        Line::from(format!(
            "whole tree: {} in ({} cached) · {} out · {}",
            crate::format::tokens(status.input_tokens),
            crate::format::tokens(status.cached_tokens),
            crate::format::tokens(status.output_tokens),
            status.cost_text()
        )),
        Line::from(match status.context_percent() {
            Some(percent) => format!(
                "context: {} of {} tokens ({percent}%) in the latest request",
                crate::format::tokens(status.context_tokens),
                crate::format::tokens(status.context_window)
            ),
            None => "context: no request yet".to_owned(),
        }),
    ];
    let agents = app.session().agents();
    if !agents.is_empty() {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            "subagents",
            Style::default().add_modifier(Modifier::BOLD),
        )));
        for agent in agents {
            lines.push(Line::from(format!(
                "{}{} · {} · {} in / {} out · {} requests",
                "  ".repeat(agent.depth as usize),
                agent.id,
                agent.status,
                crate::format::tokens(agent.tokens.input),
                crate::format::tokens(agent.tokens.output),
                agent.api_calls
            )));
        }
    }
    app.show(Overlay::Text(TextView::new("usage of this session", lines)));
}

/// A picker's choice.
pub(crate) async fn picked(app: &mut App, purpose: Purpose, key: String) -> Flow {
    app.close_overlay();
    match purpose {
        Purpose::Resume => app.switch(OpenMode::Resume(key)).await,
        Purpose::Model => {
            app.set_next_model(key.clone());
            app.say(
                Level::Info,
                &format!("the next session uses {key}: /new starts it"),
            );
        }
        Purpose::Agents => transcript(app, &key).await,
        Purpose::Rewind => rewind_scope(app, &key),
        Purpose::RewindScope => rewind_to(app, &key).await,
        Purpose::ExitWithAgents => match key.as_str() {
            "wait" => app.wait_then_exit(),
            "cancel" => {
                for agent in app.session().agents() {
                    if !agent.status.is_finished() && agent.depth == 1 {
                        app.submit_op(Op::CancelAgent {
                            agent_id: agent.id.clone(),
                        });
                    }
                }
                return Flow::Exit;
            }
            _ => return Flow::Exit,
        },
    }
    Flow::Continue
}

/// `/rewind`: the session's turns, newest first, each with what it changed;
/// picking one asks what to put back (the next picker).
async fn rewind(app: &mut App) {
    if app.is_busy() {
        app.say(
            Level::Warning,
            "a turn is running; rewind after it ends (Esc interrupts it)",
        );
        return;
    }
    let list = match app.session().checkpoints().await {
        Ok(list) => list,
        Err(err) => {
            app.say(
                Level::Warning,
                &format!("cannot read the checkpoints: {err}"),
            );
            return;
        }
    };
    let items = list
        .iter()
        .rev()
        .map(|c| {
            let files = match (&c.commit_id, &c.end_commit_id) {
                _ if herald_core::checkpoints::took_no_snapshot_for_reads(c.note.as_deref()) => {
                    "no file changes".to_owned()
                }
                (None, _) => "no file snapshot".to_owned(),
                (Some(_), None) => "files: turn not ended".to_owned(),
                (Some(_), Some(_)) => format!(
                    "{} file{} +{} -{}",
                    c.changes.files_changed,
                    if c.changes.files_changed == 1 {
                        ""
                    } else {
                        "s"
                    },
                    c.changes.insertions,
                    c.changes.deletions
                ),
            };
            PickItem {
                key: c.turn.to_string(),
                label: format!(
                    "turn {}  {}",
                    c.turn,
                    c.prompt
                        .as_deref()
                        .map(herald_protocol::one_line)
                        .unwrap_or_default()
                ),
                detail: format!("{} · {files}", when(c.created_at)),
                depth: 0,
            }
        })
        .collect();
    app.show(Overlay::Picker(Picker::new(
        "rewind to before which turn?",
        Purpose::Rewind,
        items,
        "no turns to rewind yet",
    )));
}

/// `/rewind`, second step: files and conversation, one of them, or nothing.
fn rewind_scope(app: &mut App, turn: &str) {
    let choices = [
        (
            "both",
            "both",
            "files as they were before the turn; the model forgets it and later turns",
        ),
        ("files", "files only", "the conversation stays as it is"),
        (
            "conversation",
            "conversation only",
            "the files stay as they are",
        ),
        ("cancel", "cancel", "change nothing"),
    ];
    let items = choices
        .iter()
        .map(|(scope, label, detail)| PickItem {
            key: format!("{turn}:{scope}"),
            label: (*label).to_owned(),
            detail: (*detail).to_owned(),
            depth: 0,
        })
        .collect();
    app.show(Overlay::Picker(Picker::new(
        format!("rewind to before turn {turn}? (shell effects outside this directory stay)"),
        Purpose::RewindScope,
        items,
        "",
    )));
}

/// Rewinds the session as chosen and says what changed.
async fn rewind_to(app: &mut App, key: &str) {
    use herald_core::checkpoints::{Action, RewindScope};
    let Some((turn, scope)) = key.split_once(':') else {
        return;
    };
    let scope = match scope {
        "both" => RewindScope::Both,
        "files" => RewindScope::FilesOnly,
        "conversation" => RewindScope::ConversationOnly,
        _ => {
            app.say(Level::Info, "nothing rewound");
            return;
        }
    };
    let Ok(turn) = turn.parse::<u32>() else {
        return;
    };
    match app.session().rewind(turn, scope).await {
        Ok(outcome) => {
            let mut text = format!("rewound to before turn {turn}");
            if let Some(files) = &outcome.plan.files {
                let count = |action| files.changes.iter().filter(|c| c.action == action).count();
                text.push_str(&format!(
                    ": files {} restored, {} deleted, {} recreated",
                    count(Action::Restore),
                    count(Action::Delete),
                    count(Action::Recreate)
                ));
                let names: Vec<String> = files
                    .changes
                    .iter()
                    .filter(|c| c.action != Action::Keep)
                    .take(8)
                    .map(|c| herald_protocol::one_line(&c.path.to_string_lossy()))
                    .collect();
                if !names.is_empty() {
                    text.push_str(&format!(" ({})", names.join(", ")));
                }
                if let Some(note) = &files.note {
                    text.push_str(&format!(" ({note})"));
                }
            }
            if let Some(history) = &outcome.history {
                text.push_str(&format!(
                    "; the model continues from the {} messages before turn {turn} (later turns stay above in the scrollback)",
                    history.len()
                ));
            }
            app.say(Level::Info, &text);
        }
        Err(err) => app.say(Level::Warning, &format!("not rewound: {err}")),
    }
}

/// A picker's secondary action: `x` cancels an agent and its descendants.
pub(crate) fn secondary(app: &mut App, purpose: Purpose, key: String) {
    if purpose != Purpose::Agents {
        return;
    }
    let result = app.session().submit(Op::CancelAgent {
        agent_id: key.clone(),
    });
    app.close_overlay();
    match result {
        Ok(_) => app.say(Level::Info, &format!("cancelled {key} and its subagents")),
        Err(err) => app.say(Level::Warning, &err.to_string()),
    }
}

/// One agent's conversation, from its own stored session.
async fn transcript(app: &mut App, agent_id: &str) {
    let session_id = match app.child_session(agent_id) {
        Some(id) => Some(id.clone()),
        None => match app.catalog().agent(agent_id).await {
            Ok(agent) => agent.map(|agent| agent.session_id),
            Err(err) => {
                app.say(Level::Warning, &format!("cannot read {agent_id}: {err}"));
                return;
            }
        },
    };
    let Some(session_id) = session_id else {
        app.say(
            Level::Warning,
            &format!("no stored conversation for {agent_id}"),
        );
        return;
    };
    let messages: Vec<_> = match app.catalog().transcript(&session_id).await {
        Ok(stored) => stored.into_iter().map(|m| m.message).collect(),
        Err(err) => {
            app.say(Level::Warning, &format!("cannot read {agent_id}: {err}"));
            return;
        }
    };
    let width = app.width().saturating_sub(2);
    let mut lines = crate::replay::conversation(&messages, width);
    if lines.is_empty() {
        lines.push(Line::from(Span::styled("nothing stored yet", dim())));
    }
    app.show(Overlay::Text(TextView::new(
        format!("{agent_id} · {session_id}"),
        lines,
    )));
}
