//! Overlays: what takes the composer's place while it needs the keyboard —
//! an approval request, a `clarify` question, an MCP server's form, a
//! picker (sessions, agents, models, what to do with running agents at
//! exit) and scrollable text (help, transcripts, the task list, memory).
//! Each turns keys into an [`Outcome`]; the app acts on it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};
use serde_json::{Map, Value};

use crate::cells::dim;
use crate::tool_view;
use crate::wrap::wrap_line;

/// What a key did to an overlay.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Nothing for the app to do (the overlay changed or ignored the key).
    Stay,
    /// Close the overlay without an answer.
    Close,
    /// An approval answer: `once`, `session`, `always` or `deny`.
    Approve {
        request_id: String,
        decision: String,
        note: Option<String>,
    },
    /// A `clarify` answer (a choice's number, or free text).
    Answer { request_id: String, answer: String },
    /// An elicitation answer: `accept` with content, `decline` or `cancel`.
    Elicit {
        request_id: String,
        action: String,
        content: Option<Value>,
    },
    /// A picker's choice: the item's key.
    Picked { purpose: Purpose, key: String },
    /// A picker's secondary action (`x` on an agent): the item's key.
    Secondary { purpose: Purpose, key: String },
    /// Write to the agent `key` (`m` on an agent): the composer is
    /// pre-filled with `/message KEY `.
    Message { key: String },
}

/// What a picker is for; the app decides what a choice does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Resume,
    Agents,
    Model,
    ExitWithAgents,
    /// `/rewind`: the turn to go back to before (key: the turn number).
    Rewind,
    /// `/rewind`, second step: what to put back (key: `TURN:SCOPE`).
    RewindScope,
}

/// One overlay.
#[derive(Debug, Clone)]
pub enum Overlay {
    Approval(Approval),
    Clarify(Clarify),
    Elicitation(Elicitation),
    Picker(Picker),
    Text(TextView),
}

impl Overlay {
    /// Handles one key.
    pub fn handle_key(&mut self, key: KeyEvent) -> Outcome {
        match self {
            Overlay::Approval(view) => view.handle_key(key),
            Overlay::Clarify(view) => view.handle_key(key),
            Overlay::Elicitation(view) => view.handle_key(key),
            Overlay::Picker(view) => view.handle_key(key),
            Overlay::Text(view) => view.handle_key(key),
        }
    }

    /// Pasted text goes to the overlay's input, if it has one.
    pub fn handle_paste(&mut self, text: &str) {
        let text = herald_protocol::one_line(text);
        match self {
            Overlay::Approval(view) if view.note.is_some() => {
                view.note.get_or_insert_with(String::new).push_str(&text);
            }
            Overlay::Clarify(view) if view.typing => view.text.push_str(&text),
            Overlay::Elicitation(view) => {
                if let Some(field) = view.fields.get_mut(view.selected) {
                    field.value.push_str(&text);
                }
            }
            Overlay::Picker(view) => {
                view.query.push_str(&text);
                view.selected = 0;
            }
            _ => {}
        }
    }

    /// The lines of the overlay at `width` (inside its border).
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        match self {
            Overlay::Approval(view) => view.lines(width),
            Overlay::Clarify(view) => view.lines(width),
            Overlay::Elicitation(view) => view.lines(width),
            Overlay::Picker(view) => view.lines(width),
            Overlay::Text(view) => view.lines(width),
        }
    }

    /// The overlay's title.
    pub fn title(&self) -> String {
        match self {
            Overlay::Approval(view) => format!(" approval needed · {} ", view.agent_id),
            Overlay::Clarify(_) => " the agent asks ".to_owned(),
            Overlay::Elicitation(view) => format!(" {} asks for input ", view.server),
            Overlay::Picker(view) => format!(" {} ", view.title),
            Overlay::Text(view) => format!(" {} ", view.title),
        }
    }

    /// The key help shown at the bottom border.
    fn keys(&self) -> &'static str {
        match self {
            Overlay::Approval(view) if view.note.is_some() => {
                " type a note for the model · Enter denies · Esc back "
            }
            Overlay::Approval(_) => {
                " y once · s session · a always · n deny (with a note) · ↑↓ Enter "
            }
            Overlay::Clarify(view) if view.typing => " type your answer · Enter sends · Esc back ",
            Overlay::Clarify(_) => " ↑↓ or 1-9 · Enter chooses ",
            Overlay::Elicitation(_) => {
                " ↑↓ field · type to edit · Enter next/accept · Ctrl+D decline · Esc cancel "
            }
            Overlay::Picker(view) if view.purpose == Purpose::Agents => {
                " type to filter · Enter transcript · x cancel · m message · Esc close "
            }
            Overlay::Picker(_) => " type to filter · ↑↓ · Enter chooses · Esc close ",
            Overlay::Text(_) => " ↑↓ PgUp PgDn scroll · Esc close ",
        }
    }

    /// Rows the overlay wants at `width`, borders included.
    pub fn desired_height(&self, width: u16) -> u16 {
        let inner = width.saturating_sub(2);
        (self.lines(inner).len() as u16).saturating_add(2)
    }

    /// Draws the overlay in `area` (lines past its height scroll for text
    /// views, are cut for the others).
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let block = Block::default()
            .borders(Borders::TOP | Borders::BOTTOM)
            .border_style(Style::default().fg(Color::Cyan))
            .title(Span::styled(self.title(), Style::default().bold()))
            .title_bottom(Span::styled(self.keys(), dim()));
        let inner = block.inner(area);
        block.render(area, buf);
        let mut lines = self.lines(inner.width);
        let visible = usize::from(inner.height);
        let skip = match self {
            Overlay::Text(view) => view.scroll.min(lines.len().saturating_sub(visible)),
            Overlay::Picker(view) => view.selected.saturating_sub(visible.saturating_sub(3)),
            _ => lines.len().saturating_sub(visible),
        };
        lines.drain(..skip.min(lines.len()));
        Paragraph::new(lines).render(inner, buf);
    }
}

/// A tool call waiting for the user's decision.
#[derive(Debug, Clone)]
pub struct Approval {
    pub request_id: String,
    pub agent_id: String,
    pub tool: String,
    pub arguments: String,
    pub reason: String,
    pub allow_rule: Option<String>,
    pub selected: usize,
    /// The note being typed with a denial.
    pub note: Option<String>,
}

const APPROVAL_CHOICES: [(&str, &str); 4] = [
    ("once", "Yes, this once"),
    ("session", "Yes, for this session"),
    ("always", "Always (saves an allow rule)"),
    ("deny", "No, and tell the model why"),
];

impl Approval {
    fn handle_key(&mut self, key: KeyEvent) -> Outcome {
        if let Some(note) = &mut self.note {
            match key.code {
                KeyCode::Enter => {
                    let note = std::mem::take(note);
                    return Outcome::Approve {
                        request_id: self.request_id.clone(),
                        decision: "deny".into(),
                        note: (!note.trim().is_empty()).then_some(note),
                    };
                }
                KeyCode::Esc => self.note = None,
                KeyCode::Backspace => {
                    note.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => note.push(c),
                _ => {}
            }
            return Outcome::Stay;
        }
        let decide = |decision: &str| Outcome::Approve {
            request_id: self.request_id.clone(),
            decision: decision.to_owned(),
            note: None,
        };
        match key.code {
            KeyCode::Char('y' | '1') => decide("once"),
            KeyCode::Char('s' | '2') => decide("session"),
            KeyCode::Char('a' | '3') => decide("always"),
            KeyCode::Char('n' | 'd' | '4') => {
                self.note = Some(String::new());
                Outcome::Stay
            }
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                Outcome::Stay
            }
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(APPROVAL_CHOICES.len() - 1);
                Outcome::Stay
            }
            KeyCode::Enter => {
                let (decision, _) = APPROVAL_CHOICES[self.selected.min(3)];
                if decision == "deny" {
                    self.note = Some(String::new());
                    Outcome::Stay
                } else {
                    decide(decision)
                }
            }
            _ => Outcome::Stay,
        }
    }

    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        let key = tool_view::key_argument(&self.tool, &self.arguments, 400);
        lines.extend(wrap_line(
            &Line::from(vec![
                Span::styled(self.tool.clone(), Style::default().bold()),
                Span::raw("  "),
                Span::raw(key),
            ]),
            width,
        ));
        lines.extend(wrap_line(
            &Line::from(Span::styled(
                format!("why: {}", herald_protocol::one_line(&self.reason)),
                Style::default().fg(Color::Yellow),
            )),
            width,
        ));
        for (index, (decision, label)) in APPROVAL_CHOICES.iter().enumerate() {
            let label = match (*decision, &self.allow_rule) {
                ("session", Some(_)) => "Yes, for this session (allows the rule below)",
                ("always", Some(_)) => "Always (saves the rule below)",
                ("session" | "always", None) => match *decision {
                    "session" => "Yes, for this session (only this call: see below)",
                    _ => "Always (only this call: see below)",
                },
                _ => label,
            };
            lines.push(choice_line(index, label, index == self.selected));
        }
        // Exactly what "session" keeps and "always" saves, every line of
        // it; or that nothing can be.
        match &self.allow_rule {
            Some(rule) => {
                for (i, part) in rule.split('\n').enumerate() {
                    let head = if i == 0 { "rule: " } else { "      " };
                    lines.extend(wrap_line(
                        &Line::from(vec![
                            Span::styled(head, Style::default().bold()),
                            Span::raw(herald_protocol::one_line(part)),
                        ]),
                        width,
                    ));
                }
            }
            None => lines.extend(wrap_line(
                &Line::from(Span::styled(
                    "no rule can allow this call: session and always run it once, and it asks again",
                    dim(),
                )),
                width,
            )),
        }
        if let Some(note) = &self.note {
            lines.push(Line::from(vec![
                Span::styled("note: ", Style::default().bold()),
                Span::raw(note.clone()),
                Span::styled("▏", Style::default().fg(Color::Cyan)),
            ]));
        }
        lines
    }
}

fn choice_line(index: usize, label: &str, selected: bool) -> Line<'static> {
    let style = if selected {
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::default()
    };
    Line::from(vec![
        Span::styled(if selected { "› " } else { "  " }, style),
        Span::styled(
            format!("{}. {}", index + 1, herald_protocol::one_line(label)),
            style,
        ),
    ])
}

/// A `clarify` question.
#[derive(Debug, Clone)]
pub struct Clarify {
    pub request_id: String,
    pub question: String,
    pub choices: Vec<String>,
    pub allow_freetext: bool,
    pub selected: usize,
    /// Typing a free-text answer.
    pub typing: bool,
    pub text: String,
}

impl Clarify {
    /// A question; with no choices the answer is typed.
    pub fn new(
        request_id: String,
        question: String,
        choices: Vec<String>,
        allow_freetext: bool,
    ) -> Self {
        let typing = choices.is_empty();
        Self {
            request_id,
            question,
            choices,
            allow_freetext: allow_freetext || typing,
            selected: 0,
            typing,
            text: String::new(),
        }
    }

    fn options(&self) -> usize {
        self.choices.len() + usize::from(self.allow_freetext && !self.choices.is_empty())
    }

    fn handle_key(&mut self, key: KeyEvent) -> Outcome {
        if self.typing {
            match key.code {
                KeyCode::Enter if !self.text.trim().is_empty() => {
                    return Outcome::Answer {
                        request_id: self.request_id.clone(),
                        answer: std::mem::take(&mut self.text),
                    };
                }
                KeyCode::Esc if !self.choices.is_empty() => self.typing = false,
                KeyCode::Backspace => {
                    self.text.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    self.text.push(c)
                }
                _ => {}
            }
            return Outcome::Stay;
        }
        let pick = |this: &mut Self, index: usize| {
            if index < this.choices.len() {
                Outcome::Answer {
                    request_id: this.request_id.clone(),
                    answer: (index + 1).to_string(),
                }
            } else {
                this.typing = true;
                Outcome::Stay
            }
        };
        match key.code {
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                Outcome::Stay
            }
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.options().saturating_sub(1));
                Outcome::Stay
            }
            KeyCode::Enter => pick(self, self.selected),
            KeyCode::Char(c @ '1'..='9') => {
                let index = usize::from(c as u8 - b'1');
                if index < self.options() {
                    pick(self, index)
                } else {
                    Outcome::Stay
                }
            }
            _ => Outcome::Stay,
        }
    }

    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        for raw in herald_protocol::terminal_safe(&self.question).lines() {
            lines.extend(wrap_line(
                &Line::from(Span::styled(raw.to_owned(), Style::default().bold())),
                width,
            ));
        }
        for (index, choice) in self.choices.iter().enumerate() {
            lines.push(choice_line(
                index,
                choice,
                !self.typing && index == self.selected,
            ));
        }
        if self.allow_freetext && !self.choices.is_empty() {
            let index = self.choices.len();
            lines.push(choice_line(
                index,
                "Other (type an answer)",
                !self.typing && index == self.selected,
            ));
        }
        if self.typing {
            lines.push(Line::from(vec![
                Span::styled("answer: ", Style::default().bold()),
                Span::raw(self.text.clone()),
                Span::styled("▏", Style::default().fg(Color::Cyan)),
            ]));
        }
        lines
    }
}

/// An MCP server's request for input: one field per schema property.
#[derive(Debug, Clone)]
pub struct Elicitation {
    pub request_id: String,
    pub server: String,
    pub message: String,
    pub fields: Vec<Field>,
    pub selected: usize,
    /// Why the last answer was refused.
    pub error: Option<String>,
}

/// One field of an elicitation form.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub title: String,
    /// `string`, `number`, `integer` or `boolean`.
    pub kind: String,
    pub choices: Vec<String>,
    pub required: bool,
    pub value: String,
}

impl Elicitation {
    /// The form for `schema` (flat object properties, as MCP allows).
    pub fn new(request_id: String, server: String, message: String, schema: &Value) -> Self {
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields = schema["properties"]
            .as_object()
            .map(|properties| {
                properties
                    .iter()
                    .map(|(name, spec)| Field {
                        name: name.clone(),
                        title: spec["title"]
                            .as_str()
                            .or_else(|| spec["description"].as_str())
                            .unwrap_or(name)
                            .to_owned(),
                        kind: spec["type"].as_str().unwrap_or("string").to_owned(),
                        choices: spec["enum"]
                            .as_array()
                            .map(|values| {
                                values
                                    .iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default(),
                        required: required.contains(&name.as_str()),
                        value: spec["default"]
                            .as_str()
                            .map(str::to_owned)
                            .or_else(|| {
                                spec.get("default")
                                    .filter(|v| !v.is_null())
                                    .map(Value::to_string)
                            })
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            request_id,
            server,
            message,
            fields,
            selected: 0,
            error: None,
        }
    }

    /// The typed values as the content object, or why they do not fit.
    pub fn content(&self) -> Result<Value, String> {
        let mut content = Map::new();
        for field in &self.fields {
            let raw = field.value.trim();
            if raw.is_empty() {
                if field.required {
                    return Err(format!("{} is required", field.title));
                }
                continue;
            }
            let value = match field.kind.as_str() {
                "boolean" => match raw.to_ascii_lowercase().as_str() {
                    "y" | "yes" | "true" | "1" => Value::Bool(true),
                    "n" | "no" | "false" | "0" => Value::Bool(false),
                    _ => return Err(format!("{}: answer yes or no", field.title)),
                },
                "integer" => raw
                    .parse::<i64>()
                    .map(Value::from)
                    .map_err(|_| format!("{}: a whole number, please", field.title))?,
                "number" => raw
                    .parse::<f64>()
                    .map(Value::from)
                    .map_err(|_| format!("{}: a number, please", field.title))?,
                _ => {
                    if !field.choices.is_empty() && !field.choices.iter().any(|c| c == raw) {
                        return Err(format!(
                            "{}: one of {}",
                            field.title,
                            field.choices.join(", ")
                        ));
                    }
                    Value::from(raw)
                }
            };
            content.insert(field.name.clone(), value);
        }
        Ok(Value::Object(content))
    }

    fn handle_key(&mut self, key: KeyEvent) -> Outcome {
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        let answer = |this: &Self, action: &str, content: Option<Value>| Outcome::Elicit {
            request_id: this.request_id.clone(),
            action: action.to_owned(),
            content,
        };
        match key.code {
            KeyCode::Esc => return answer(self, "cancel", None),
            KeyCode::Char('d') if control => return answer(self, "decline", None),
            KeyCode::Up | KeyCode::BackTab => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Tab => {
                self.selected = (self.selected + 1).min(self.fields.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                if self.selected + 1 < self.fields.len() {
                    self.selected += 1;
                } else {
                    match self.content() {
                        Ok(content) => return answer(self, "accept", Some(content)),
                        Err(error) => self.error = Some(error),
                    }
                }
            }
            KeyCode::Left | KeyCode::Right => {
                // Cycles an enum's choices.
                if let Some(field) = self.fields.get_mut(self.selected)
                    && !field.choices.is_empty()
                {
                    let at = field.choices.iter().position(|c| *c == field.value);
                    let count = field.choices.len();
                    let next = match (at, key.code) {
                        (None, _) => 0,
                        (Some(i), KeyCode::Right) => (i + 1) % count,
                        (Some(i), _) => (i + count - 1) % count,
                    };
                    field.value = field.choices[next].clone();
                }
            }
            KeyCode::Backspace => {
                if let Some(field) = self.fields.get_mut(self.selected) {
                    field.value.pop();
                }
            }
            KeyCode::Char(c) if !control => {
                if let Some(field) = self.fields.get_mut(self.selected) {
                    field.value.push(c);
                }
            }
            _ => {}
        }
        Outcome::Stay
    }

    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        for raw in herald_protocol::terminal_safe(&self.message).lines() {
            lines.extend(wrap_line(
                &Line::from(Span::styled(raw.to_owned(), Style::default().bold())),
                width,
            ));
        }
        for (index, field) in self.fields.iter().enumerate() {
            let selected = index == self.selected;
            let hint = if !field.choices.is_empty() {
                format!(" ({}; ←/→)", field.choices.join("/"))
            } else if field.kind == "boolean" {
                " (yes/no)".to_owned()
            } else if field.kind != "string" {
                format!(" ({})", field.kind)
            } else {
                String::new()
            };
            lines.push(Line::from(vec![
                Span::styled(
                    if selected { "› " } else { "  " },
                    Style::default().fg(Color::Cyan),
                ),
                Span::styled(
                    format!(
                        "{}{}: ",
                        herald_protocol::one_line(&field.title),
                        if field.required { "*" } else { "" }
                    ),
                    Style::default().bold(),
                ),
                Span::raw(field.value.clone()),
                Span::styled(
                    if selected { "▏" } else { "" },
                    Style::default().fg(Color::Cyan),
                ),
                Span::styled(hint, dim()),
            ]));
        }
        if let Some(error) = &self.error {
            lines.push(Line::from(Span::styled(
                error.clone(),
                Style::default().fg(Color::Red),
            )));
        }
        lines
    }
}

/// One row of a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickItem {
    /// What the app gets back.
    pub key: String,
    pub label: String,
    /// Dimmed text after the label (date, id, status).
    pub detail: String,
    /// Indentation (the agent tree).
    pub depth: u16,
}

/// A list to choose from, filtered by what is typed.
#[derive(Debug, Clone)]
pub struct Picker {
    pub title: String,
    pub purpose: Purpose,
    pub items: Vec<PickItem>,
    pub query: String,
    pub selected: usize,
    /// Text shown when nothing matches.
    pub empty: String,
}

impl Picker {
    /// A picker over `items`.
    pub fn new(
        title: impl Into<String>,
        purpose: Purpose,
        items: Vec<PickItem>,
        empty: impl Into<String>,
    ) -> Self {
        Self {
            title: title.into(),
            purpose,
            items,
            query: String::new(),
            selected: 0,
            empty: empty.into(),
        }
    }

    /// The items matching the query (every word in label or detail).
    pub fn visible(&self) -> Vec<&PickItem> {
        let words: Vec<String> = self
            .query
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        self.items
            .iter()
            .filter(|item| {
                let haystack =
                    format!("{} {} {}", item.label, item.detail, item.key).to_lowercase();
                words.iter().all(|word| haystack.contains(word))
            })
            .collect()
    }

    fn handle_key(&mut self, key: KeyEvent) -> Outcome {
        let count = self.visible().len();
        match key.code {
            KeyCode::Esc => return Outcome::Close,
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(count.saturating_sub(1)),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::PageDown => self.selected = (self.selected + 10).min(count.saturating_sub(1)),
            KeyCode::Enter => {
                if let Some(item) = self.visible().get(self.selected) {
                    return Outcome::Picked {
                        purpose: self.purpose,
                        key: item.key.clone(),
                    };
                }
            }
            KeyCode::Char('x') if self.purpose == Purpose::Agents && self.query.is_empty() => {
                if let Some(item) = self.visible().get(self.selected) {
                    return Outcome::Secondary {
                        purpose: self.purpose,
                        key: item.key.clone(),
                    };
                }
            }
            KeyCode::Char('m') if self.purpose == Purpose::Agents && self.query.is_empty() => {
                if let Some(item) = self.visible().get(self.selected) {
                    return Outcome::Message {
                        key: item.key.clone(),
                    };
                }
            }
            KeyCode::Backspace => {
                self.query.pop();
                self.selected = 0;
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.query.push(c);
                self.selected = 0;
            }
            _ => {}
        }
        Outcome::Stay
    }

    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        if !self.query.is_empty() || self.items.len() > 8 {
            lines.push(Line::from(vec![
                Span::styled("search: ", dim()),
                Span::raw(self.query.clone()),
                Span::styled("▏", Style::default().fg(Color::Cyan)),
            ]));
        }
        let visible = self.visible();
        if visible.is_empty() {
            lines.push(Line::from(Span::styled(self.empty.clone(), dim())));
        }
        let room = usize::from(width).saturating_sub(4);
        for (index, item) in visible.iter().enumerate() {
            let selected = index == self.selected;
            let style = if selected {
                Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            let indent = "  ".repeat(usize::from(item.depth));
            let label = herald_protocol::one_line(&item.label);
            let detail = herald_protocol::one_line(&item.detail);
            let label_room = room
                .saturating_sub(indent.len() + detail.chars().count() + 3)
                .max(10);
            lines.push(Line::from(vec![
                Span::styled(if selected { "› " } else { "  " }, style),
                Span::raw(indent),
                Span::styled(tool_view::shorten(&label, label_room), style),
                Span::styled(format!("  {detail}"), dim()),
            ]));
        }
        lines
    }
}

/// Scrollable text: help, a transcript, the task list.
#[derive(Debug, Clone)]
pub struct TextView {
    pub title: String,
    pub lines: Vec<Line<'static>>,
    pub scroll: usize,
}

impl TextView {
    /// A view of `lines`, scrolled to the top.
    pub fn new(title: impl Into<String>, lines: Vec<Line<'static>>) -> Self {
        Self {
            title: title.into(),
            lines,
            scroll: 0,
        }
    }

    fn handle_key(&mut self, key: KeyEvent) -> Outcome {
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter => return Outcome::Close,
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll += 1,
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll += 10,
            KeyCode::Home | KeyCode::Char('g') => self.scroll = 0,
            KeyCode::End | KeyCode::Char('G') => self.scroll = self.lines.len(),
            _ => {}
        }
        self.scroll = self.scroll.min(self.lines.len().saturating_sub(1));
        Outcome::Stay
    }

    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        self.lines
            .iter()
            .flat_map(|line| wrap_line(line, width))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use serde_json::json;

    use super::*;

    fn draw(overlay: &Overlay, width: u16) -> String {
        let height = overlay.desired_height(width).min(20);
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|frame| overlay.render(frame.area(), frame.buffer_mut()))
            .unwrap();
        format!("{}", terminal.backend())
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn approval() -> Overlay {
        Overlay::Approval(Approval {
            request_id: "apr_1".into(),
            agent_id: "ag_3".into(),
            tool: "terminal".into(),
            arguments: r#"{"command":"git push origin main"}"#.into(),
            reason: "git push changes a remote".into(),
            allow_rule: Some("terminal(git push origin main)".into()),
            selected: 0,
            note: None,
        })
    }

    #[test]
    fn an_approval_names_the_agent_the_call_and_the_choices() {
        insta::assert_snapshot!(draw(&approval(), 70));
    }

    #[test]
    fn an_approval_without_a_rule_says_nothing_can_be_kept() {
        let Overlay::Approval(mut view) = approval() else {
            unreachable!()
        };
        view.allow_rule = None;
        let text = draw(&Overlay::Approval(view), 70);
        assert!(text.contains("no rule can allow this call"), "{text}");
        assert!(!text.contains("rule:"), "{text}");
    }

    #[test]
    fn a_long_rule_is_shown_whole() {
        let Overlay::Approval(mut view) = approval() else {
            unreachable!()
        };
        let rule = format!("terminal(python3 - <<'EOF'\n{}\nEOF)", "x".repeat(120));
        view.allow_rule = Some(rule);
        let overlay = Overlay::Approval(view);
        let lines: Vec<String> = overlay
            .lines(60)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        let joined = lines.join("");
        assert_eq!(joined.matches('x').count(), 120, "{lines:#?}");
        assert!(joined.contains("EOF)"), "{lines:#?}");
    }

    #[test]
    fn approval_keys_answer_or_ask_for_a_note() {
        let mut overlay = approval();
        assert_eq!(
            overlay.handle_key(key(KeyCode::Char('s'))),
            Outcome::Approve {
                request_id: "apr_1".into(),
                decision: "session".into(),
                note: None
            }
        );
        assert_eq!(overlay.handle_key(key(KeyCode::Char('n'))), Outcome::Stay);
        for c in "use the fork".chars() {
            overlay.handle_key(key(KeyCode::Char(c)));
        }
        insta::assert_snapshot!("approval_deny_note", draw(&overlay, 70));
        assert_eq!(
            overlay.handle_key(key(KeyCode::Enter)),
            Outcome::Approve {
                request_id: "apr_1".into(),
                decision: "deny".into(),
                note: Some("use the fork".into())
            }
        );
    }

    #[test]
    fn a_clarify_question_is_a_picker_with_other() {
        let mut overlay = Overlay::Clarify(Clarify::new(
            "q_1".into(),
            "Which database?".into(),
            vec!["SQLite".into(), "Postgres".into()],
            true,
        ));
        overlay.handle_key(key(KeyCode::Down));
        insta::assert_snapshot!(draw(&overlay, 50));
        assert_eq!(
            overlay.handle_key(key(KeyCode::Enter)),
            Outcome::Answer {
                request_id: "q_1".into(),
                answer: "2".into()
            }
        );
        // "Other" switches to typing.
        assert_eq!(overlay.handle_key(key(KeyCode::Char('3'))), Outcome::Stay);
        for c in "DuckDB".chars() {
            overlay.handle_key(key(KeyCode::Char(c)));
        }
        assert_eq!(
            overlay.handle_key(key(KeyCode::Enter)),
            Outcome::Answer {
                request_id: "q_1".into(),
                answer: "DuckDB".into()
            }
        );
    }

    #[test]
    fn an_elicitation_form_checks_types_before_accepting() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name"},
                "age": {"type": "integer"},
                "color": {"type": "string", "enum": ["red", "green"]}
            },
            "required": ["name"]
        });
        let mut overlay = Overlay::Elicitation(Elicitation::new(
            "el_1".into(),
            "everything".into(),
            "Tell us about you".into(),
            &schema,
        ));
        // Properties come in the order the schema declares them.
        for c in "Ada".chars() {
            overlay.handle_key(key(KeyCode::Char(c)));
        }
        overlay.handle_key(key(KeyCode::Enter));
        for c in "x".chars() {
            overlay.handle_key(key(KeyCode::Char(c)));
        }
        overlay.handle_key(key(KeyCode::Enter));
        overlay.handle_key(key(KeyCode::Right));
        // "x" is not a whole number: refused, the form stays.
        assert_eq!(overlay.handle_key(key(KeyCode::Enter)), Outcome::Stay);
        insta::assert_snapshot!(draw(&overlay, 60));
        overlay.handle_key(key(KeyCode::Up));
        overlay.handle_key(key(KeyCode::Backspace));
        overlay.handle_key(key(KeyCode::Char('7')));
        overlay.handle_key(key(KeyCode::Down));
        assert_eq!(
            overlay.handle_key(key(KeyCode::Enter)),
            Outcome::Elicit {
                request_id: "el_1".into(),
                action: "accept".into(),
                content: Some(json!({"age": 7, "color": "red", "name": "Ada"}))
            }
        );
        assert!(matches!(
            overlay.handle_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL)),
            Outcome::Elicit { action, .. } if action == "decline"
        ));
    }

    #[test]
    fn a_picker_filters_and_picks() {
        let items = (1..=12)
            .map(|i| PickItem {
                key: format!("ses_{i}"),
                label: format!("session number {i}"),
                detail: if i % 2 == 0 {
                    "even".into()
                } else {
                    "odd".into()
                },
                depth: 0,
            })
            .collect();
        let mut overlay = Overlay::Picker(Picker::new(
            "resume a session",
            Purpose::Resume,
            items,
            "none",
        ));
        for c in "1 even".chars() {
            overlay.handle_key(key(KeyCode::Char(c)));
        }
        insta::assert_snapshot!(draw(&overlay, 60));
        overlay.handle_key(key(KeyCode::Down));
        assert_eq!(
            overlay.handle_key(key(KeyCode::Enter)),
            Outcome::Picked {
                purpose: Purpose::Resume,
                key: "ses_12".into()
            }
        );
        assert_eq!(overlay.handle_key(key(KeyCode::Esc)), Outcome::Close);
    }

    #[test]
    fn the_agents_picker_cancels_with_x() {
        let items = vec![
            PickItem {
                key: "ag_1".into(),
                label: "ag_1 survey the tests".into(),
                detail: "running → terminal · 12 s · 3.4k tok".into(),
                depth: 0,
            },
            PickItem {
                key: "ag_2".into(),
                label: "ag_2 read the parser".into(),
                detail: "completed · 4 s · 1.2k tok".into(),
                depth: 1,
            },
        ];
        let mut overlay = Overlay::Picker(Picker::new(
            "agents of this session",
            Purpose::Agents,
            items,
            "none",
        ));
        insta::assert_snapshot!(draw(&overlay, 70));
        assert_eq!(
            overlay.handle_key(key(KeyCode::Char('x'))),
            Outcome::Secondary {
                purpose: Purpose::Agents,
                key: "ag_1".into()
            }
        );
        // `m` writes to the selected agent.
        overlay.handle_key(key(KeyCode::Down));
        assert_eq!(
            overlay.handle_key(key(KeyCode::Char('m'))),
            Outcome::Message { key: "ag_2".into() }
        );
    }

    #[test]
    fn a_text_view_scrolls() {
        let lines = (1..=30).map(|i| Line::from(format!("line {i}"))).collect();
        let mut overlay = Overlay::Text(TextView::new("help", lines));
        overlay.handle_key(key(KeyCode::PageDown));
        let mut terminal = Terminal::new(TestBackend::new(30, 6)).unwrap();
        terminal
            .draw(|frame| overlay.render(frame.area(), frame.buffer_mut()))
            .unwrap();
        insta::assert_snapshot!(format!("{}", terminal.backend()));
        assert_eq!(overlay.handle_key(key(KeyCode::Esc)), Outcome::Close);
    }
}
