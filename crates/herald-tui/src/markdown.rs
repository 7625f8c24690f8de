//! Markdown (CommonMark with GFM tables, strikethrough and task lists) as
//! styled terminal lines: how the model's answers are shown by the TUI and
//! by `herald run` on a terminal.
//!
//! Layout: one blank line between blocks; paragraphs and headings wrapped
//! at word boundaries; `#` marks of a heading kept visible (bold; level 1
//! also underlined, level 3 italic too, levels 4–6 italic only); lists
//! with `•`/`◦`/`▪` or `1.` markers and a hanging indent, task items as
//! `☐`/`☑`; block quotes behind `│ `; horizontal rules as a dim line;
//! tables in box-drawing borders with columns fitted to the width (cells
//! wrapped); code blocks syntax-highlighted ([`crate::highlight`]) and
//! never re-flowed: a code line longer than the width is hard-wrapped at
//! the last column, so nothing is lost. Links show their text underlined
//! and then the URL dimmed in parentheses, unless the text is the URL.
//!
//! Every piece of text passes through [`herald_protocol::terminal_safe`]
//! first, so an escape sequence in the model's output never reaches the
//! terminal.
//!
//! [`MarkdownStream`] renders an answer while it streams, committing each
//! block once it can no longer change.

use std::cell::Cell;

use herald_protocol::terminal_safe;
use pulldown_cmark::{
    Alignment, CodeBlockKind, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd,
};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::highlight::{CodeHighlighter, PLAIN_CODE};
use crate::wrap::{hard_wrap_with_prefix, spans_width, truncate_line, wrap_line, wrap_with_prefix};

/// Renders `text` as markdown for a terminal `width` columns wide.
///
/// The text is made safe line by line first ([`sanitize`]), so an escape
/// sequence never reaches the terminal and cannot hide markdown syntax.
pub fn render(text: &str, width: u16) -> Vec<Line<'static>> {
    let text = sanitize(text);
    let mut renderer = Renderer::new(width);
    for event in Parser::new_ext(&text, options()) {
        renderer.event(event);
    }
    renderer.finish()
}

/// `text` made safe to print, one line at a time: each line goes through
/// [`terminal_safe`] (escape sequences dropped, other controls shown as
/// `�`), and a carriage return before a newline is dropped. Working by
/// line keeps an unterminated sequence from swallowing more than the rest
/// of its line, and gives the stream the same text as the whole render.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    push_sanitized(&mut out, text);
    std::borrow::Cow::Owned(out)
}

/// Appends `text` to `out`, sanitised as [`sanitize`] describes.
fn push_sanitized(out: &mut String, text: &str) {
    for piece in text.split_inclusive('\n') {
        let (line, newline) = match piece.strip_suffix('\n') {
            Some(line) => (line, true),
            None => (piece, false),
        };
        let line = if newline {
            line.strip_suffix('\r').unwrap_or(line)
        } else {
            line
        };
        out.push_str(&terminal_safe(line));
        if newline {
            out.push('\n');
        }
    }
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

const DIM: Style = Style::new().add_modifier(Modifier::DIM);
const QUOTE_BAR: &str = "│ ";
const BULLETS: [&str; 3] = ["• ", "◦ ", "▪ "];

fn heading_style(level: HeadingLevel) -> Style {
    let style = Style::new();
    match level {
        HeadingLevel::H1 => style.add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        HeadingLevel::H2 => style.add_modifier(Modifier::BOLD),
        HeadingLevel::H3 => style.add_modifier(Modifier::BOLD | Modifier::ITALIC),
        _ => style.add_modifier(Modifier::ITALIC),
    }
}

/// Inline text made printable: escape sequences gone, tabs as spaces.
fn clean(text: &str) -> String {
    terminal_safe(text).replace('\t', " ")
}

/// One line of a code block as it is highlighted: sanitised, tabs expanded
/// to 4-column stops (a tab would print at an unknown width).
fn code_line_text(raw: &str) -> String {
    let raw = raw.strip_suffix('\r').unwrap_or(raw);
    let safe = terminal_safe(raw);
    if !safe.contains('\t') {
        return safe.into_owned();
    }
    let mut out = String::with_capacity(safe.len() + 8);
    let mut column = 0;
    for c in safe.chars() {
        if c == '\t' {
            let next = (column / 4 + 1) * 4;
            out.extend(std::iter::repeat_n(' ', next - column));
            column = next;
        } else {
            out.push(c);
            column += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        }
    }
    out
}

/// The language word of a fence's info string (`rust` of `rust,ignore`).
fn fence_lang(info: &str) -> String {
    terminal_safe(info)
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '{' || c == '}')
        .find(|word| !word.is_empty())
        .unwrap_or("")
        .to_string()
}

/// The lines of a code block's text: a final newline adds no empty line
/// (`""` has none, `"\n"` one empty line).
fn code_lines(code: &str) -> impl Iterator<Item = &str> {
    let count = if code.is_empty() { 0 } else { usize::MAX };
    code.strip_suffix('\n')
        .unwrap_or(code)
        .split('\n')
        .take(count)
}

/// A block that contains other blocks and puts a prefix before their lines.
enum Container {
    Quote,
    /// A list item: its marker on its first line, spaces of the same width
    /// (the hanging indent) on the others.
    Item {
        first: Vec<Span<'static>>,
        rest: Vec<Span<'static>>,
        started: bool,
    },
}

struct ListState {
    /// The next item's number (ordered lists).
    next: Option<u64>,
    /// Items hold paragraphs: a blank line between items.
    loose: bool,
}

struct LinkState {
    url: String,
    /// Where the link text starts in the inline buffer (line, span).
    start: (usize, usize),
    show_url: bool,
    image: bool,
}

struct TableState {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    header_rows: usize,
}

/// The event-driven renderer behind [`render`].
struct Renderer {
    width: u16,
    out: Vec<Line<'static>>,
    containers: Vec<Container>,
    lists: Vec<ListState>,
    /// A block ended: the next block starts after a blank line.
    pending_blank: bool,
    /// The text of the paragraph, heading or item being built, as logical
    /// lines (a hard break starts a new one) of styled spans.
    inline: Vec<Vec<Span<'static>>>,
    styles: Vec<Style>,
    links: Vec<LinkState>,
    /// The language and text of the code block being read.
    code: Option<(String, String)>,
    table: Option<TableState>,
    in_html_block: bool,
    /// The last HTML text ended a line: the next starts a new one.
    html_newline: bool,
}

impl Renderer {
    fn new(width: u16) -> Self {
        Renderer {
            width: width.max(1),
            out: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            pending_blank: false,
            inline: Vec::new(),
            styles: Vec::new(),
            links: Vec::new(),
            code: None,
            table: None,
            in_html_block: false,
            html_newline: false,
        }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, patch: Style) {
        let style = self.style().patch(patch);
        self.styles.push(style);
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if let Some((_, code)) = &mut self.code {
                    code.push_str(&text);
                } else {
                    self.add_span(clean(&text), self.style());
                }
            }
            Event::Code(text) | Event::InlineMath(text) | Event::DisplayMath(text) => {
                self.add_span(clean(&text), self.style().patch(PLAIN_CODE));
            }
            Event::Html(text) | Event::InlineHtml(text) => self.html(&text),
            Event::FootnoteReference(label) => {
                self.add_span(format!("[^{}]", clean(&label)), self.style());
            }
            Event::SoftBreak => self.add_span(" ".to_string(), self.style()),
            Event::HardBreak => self.inline.push(Vec::new()),
            Event::Rule => {
                self.start_block();
                let (first, _) = self.prefixes();
                let avail = usize::from(self.width)
                    .saturating_sub(spans_width(&first))
                    .max(1);
                let mut spans = first;
                spans.push(Span::styled("─".repeat(avail), DIM));
                self.emit(Line::from(spans));
                self.pending_blank = true;
            }
            Event::TaskListMarker(checked) => self.task_marker(checked),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                if matches!(self.containers.last(), Some(Container::Item { .. }))
                    && let Some(list) = self.lists.last_mut()
                {
                    list.loose = true;
                }
                self.start_block();
            }
            Tag::Heading { level, .. } => {
                self.start_block();
                let style = heading_style(level);
                self.styles.push(style);
                self.add_span(format!("{} ", "#".repeat(level as usize)), style);
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => fence_lang(&info),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::HtmlBlock => {
                self.start_block();
                self.in_html_block = true;
                self.html_newline = false;
            }
            Tag::List(start) => {
                self.start_block();
                self.lists.push(ListState {
                    next: start,
                    loose: false,
                });
            }
            Tag::Item => self.start_item(),
            Tag::Table(aligns) => {
                self.start_block();
                self.table = Some(TableState {
                    aligns,
                    rows: Vec::new(),
                    header_rows: 0,
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link {
                link_type,
                dest_url,
                ..
            } => {
                let show_url = !matches!(link_type, LinkType::Autolink | LinkType::Email);
                self.start_link(clean(&dest_url), show_url, false);
                self.push_style(Style::new().add_modifier(Modifier::UNDERLINED));
            }
            Tag::Image { dest_url, .. } => {
                self.start_link(clean(&dest_url), true, true);
                self.push_style(Style::new().add_modifier(Modifier::ITALIC));
                self.add_span("[image: ".to_string(), self.style());
            }
            // Not enabled by `options()`: their content renders as text.
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.start_block(),
            Tag::Superscript | Tag::Subscript => self.push_style(Style::new()),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => {
                self.flush_inline();
                self.pending_blank = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush_inline();
                self.pending_blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.containers.pop();
                self.pending_blank = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    let mut highlighter = CodeHighlighter::new(&lang);
                    for line in code_lines(&code) {
                        let line = highlighter.highlight_line(&code_line_text(line));
                        self.emit_code_line(&line);
                    }
                }
                self.pending_blank = true;
            }
            TagEnd::HtmlBlock => {
                self.flush_inline();
                self.in_html_block = false;
                self.pending_blank = true;
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.pending_blank = true;
            }
            TagEnd::Item => {
                self.flush_inline();
                if let Some(Container::Item { started: false, .. }) = self.containers.last() {
                    // An empty item still shows its marker.
                    let (first, _) = self.prefixes();
                    self.emit(Line::from(first));
                }
                self.containers.pop();
            }
            TagEnd::Table => self.finish_table(),
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::TableRow => {}
            TagEnd::TableCell => {
                let lines = std::mem::take(&mut self.inline);
                let mut cell: Vec<Span<'static>> = Vec::new();
                for (index, line) in lines.into_iter().enumerate() {
                    if index > 0 {
                        cell.push(Span::raw(" "));
                    }
                    cell.extend(line);
                }
                if let Some(row) = self.table.as_mut().and_then(|table| table.rows.last_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => self.end_link(),
        }
    }

    fn html(&mut self, text: &str) {
        let style = self.style().patch(DIM);
        if !self.in_html_block {
            self.add_span(clean(text), style);
            return;
        }
        // A block's lines stay lines; an empty one stays empty.
        for piece in text.split_inclusive('\n') {
            let line = piece.strip_suffix('\n').unwrap_or(piece);
            let line = line.strip_suffix('\r').unwrap_or(line);
            if self.html_newline || self.inline.is_empty() {
                self.inline.push(Vec::new());
            }
            self.add_span(clean(line), style);
            self.html_newline = piece.ends_with('\n');
        }
    }

    fn start_link(&mut self, url: String, show_url: bool, image: bool) {
        if self.inline.is_empty() {
            self.inline.push(Vec::new());
        }
        let line = self.inline.len() - 1;
        let span = self.inline[line].len();
        self.links.push(LinkState {
            url,
            start: (line, span),
            show_url,
            image,
        });
    }

    fn end_link(&mut self) {
        self.styles.pop();
        let Some(link) = self.links.pop() else {
            return;
        };
        if link.image {
            self.add_span("]".to_string(), self.style().add_modifier(Modifier::ITALIC));
        }
        let (line, span) = link.start;
        let text: String = self
            .inline
            .iter()
            .enumerate()
            .skip(line)
            .flat_map(|(index, spans)| spans.iter().skip(if index == line { span } else { 0 }))
            .map(|span| span.content.as_ref())
            .collect();
        let text = text.strip_prefix("[image: ").unwrap_or(&text);
        let same = text == link.url || format!("mailto:{text}") == link.url;
        if link.show_url && !link.url.is_empty() && (link.image || !same) {
            self.add_span(format!(" ({})", link.url), self.style().patch(DIM));
        }
    }

    fn start_item(&mut self) {
        let depth = self.lists.len().saturating_sub(1);
        let Some(list) = self.lists.last_mut() else {
            return;
        };
        if !list.loose {
            self.pending_blank = false;
        }
        let marker = match &mut list.next {
            Some(number) => {
                let marker = format!("{number}. ");
                *number += 1;
                marker
            }
            None => BULLETS[depth % BULLETS.len()].to_string(),
        };
        let rest = " ".repeat(unicode_width::UnicodeWidthStr::width(marker.as_str()));
        self.containers.push(Container::Item {
            first: vec![Span::raw(marker)],
            rest: vec![Span::raw(rest)],
            started: false,
        });
    }

    fn task_marker(&mut self, checked: bool) {
        let ordered = self.lists.last().is_some_and(|list| list.next.is_some());
        let Some(Container::Item {
            first,
            rest,
            started: false,
        }) = self.containers.last_mut()
        else {
            return;
        };
        let (mark, style) = if checked {
            ("☑ ", Style::new().fg(Color::Green))
        } else {
            ("☐ ", Style::new())
        };
        if ordered {
            first.push(Span::styled(mark, style));
            rest.push(Span::raw("  "));
        } else {
            *first = vec![Span::styled(mark, style)];
        }
    }

    fn add_span(&mut self, text: String, style: Style) {
        if text.is_empty() {
            return;
        }
        if self.inline.is_empty() {
            self.inline.push(Vec::new());
        }
        if let Some(line) = self.inline.last_mut() {
            line.push(Span::styled(text, style));
        }
    }

    /// Before a block: the text collected so far (a tight item's) is
    /// written, then the blank line between blocks if one is due.
    fn start_block(&mut self) {
        self.flush_inline();
        if self.pending_blank && !self.out.is_empty() {
            let line = self.blank_line();
            self.out.push(line);
        }
        self.pending_blank = false;
    }

    /// A blank line inside the current containers: quote bars stay, list
    /// indents and trailing spaces do not.
    fn blank_line(&self) -> Line<'static> {
        let mut spans: Vec<Span<'static>> = Vec::new();
        for container in &self.containers {
            match container {
                Container::Quote => spans.push(Span::styled(QUOTE_BAR, DIM)),
                Container::Item { rest, .. } => spans.extend(rest.iter().cloned()),
            }
        }
        while let Some(last) = spans.last_mut() {
            let trimmed = last.content.trim_end();
            if trimmed.is_empty() {
                spans.pop();
            } else {
                if trimmed.len() != last.content.len() {
                    last.content = trimmed.to_string().into();
                }
                break;
            }
        }
        Line::from(spans)
    }

    /// The prefixes of the next line and of its continuation lines.
    fn prefixes(&self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for container in &self.containers {
            match container {
                Container::Quote => {
                    first.push(Span::styled(QUOTE_BAR, DIM));
                    rest.push(Span::styled(QUOTE_BAR, DIM));
                }
                Container::Item {
                    first: marker,
                    rest: indent,
                    started,
                } => {
                    first.extend(if *started { indent } else { marker }.iter().cloned());
                    rest.extend(indent.iter().cloned());
                }
            }
        }
        (first, rest)
    }

    fn emit(&mut self, line: Line<'static>) {
        self.out.push(line);
        for container in &mut self.containers {
            if let Container::Item { started, .. } = container {
                *started = true;
            }
        }
    }

    fn emit_all(&mut self, lines: Vec<Line<'static>>) {
        for line in lines {
            self.emit(line);
        }
    }

    fn flush_inline(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        for spans in std::mem::take(&mut self.inline) {
            let (first, rest) = self.prefixes();
            let lines = wrap_with_prefix(&Line::from(spans), self.width, &first, &rest);
            self.emit_all(lines);
        }
    }

    fn emit_code_line(&mut self, line: &Line<'_>) {
        let (first, rest) = self.prefixes();
        let lines = hard_wrap_with_prefix(line, self.width, &first, &rest);
        self.emit_all(lines);
    }

    fn finish_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let (first, rest) = self.prefixes();
        let lines = layout_table(
            table,
            usize::from(self.width).saturating_sub(spans_width(&rest)),
        );
        for (index, line) in lines.into_iter().enumerate() {
            let mut spans = if index == 0 {
                first.clone()
            } else {
                rest.clone()
            };
            spans.extend(line.spans);
            let line = Line::from(spans);
            if line.width() > usize::from(self.width) {
                self.emit(truncate_line(&line, self.width));
            } else {
                self.emit(line);
            }
        }
        self.pending_blank = true;
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        self.flush_inline();
        self.out
    }
}

/// The widths of a table's columns: their natural widths when they fit in
/// `avail` columns; otherwise narrow columns keep theirs and the wide ones
/// share what is left equally (each at least one column).
fn column_widths(natural: &[usize], avail: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= avail {
        return natural.to_vec();
    }
    let mut order: Vec<usize> = (0..natural.len()).collect();
    order.sort_by_key(|&index| natural[index]);
    let mut widths = vec![1; natural.len()];
    let mut remaining = avail;
    for (done, &index) in order.iter().enumerate() {
        let share = remaining / (natural.len() - done);
        let width = natural[index].min(share).max(1);
        widths[index] = width;
        remaining = remaining.saturating_sub(width);
    }
    widths
}

/// A table as bordered lines at most `avail` columns wide when that is
/// possible (the caller truncates what still does not fit).
fn layout_table(table: TableState, avail: usize) -> Vec<Line<'static>> {
    let columns = table
        .rows
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0)
        .max(table.aligns.len());
    if columns == 0 {
        return Vec::new();
    }
    let mut natural = vec![1; columns];
    for row in &table.rows {
        for (column, cell) in row.iter().enumerate() {
            natural[column] = natural[column].max(spans_width(cell));
        }
    }
    let overhead = 3 * columns + 1;
    let widths = column_widths(&natural, avail.saturating_sub(overhead));
    let border = |left: &str, middle: &str, right: &str| {
        let mut text = String::from(left);
        for (column, width) in widths.iter().enumerate() {
            if column > 0 {
                text.push_str(middle);
            }
            text.push_str(&"─".repeat(width + 2));
        }
        text.push_str(right);
        Line::from(Span::styled(text, DIM))
    };
    let mut out = vec![border("┌", "┬", "┐")];
    for (index, row) in table.rows.iter().enumerate() {
        if index > 0 && index == table.header_rows {
            out.push(border("├", "┼", "┤"));
        }
        let header = index < table.header_rows;
        let cells: Vec<Vec<Line<'static>>> = (0..columns)
            .map(|column| {
                let spans: Vec<Span<'static>> = row
                    .get(column)
                    .map(|cell| {
                        cell.iter()
                            .map(|span| {
                                let style = if header {
                                    span.style.add_modifier(Modifier::BOLD)
                                } else {
                                    span.style
                                };
                                Span::styled(span.content.clone(), style)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let width = u16::try_from(widths[column]).unwrap_or(u16::MAX);
                wrap_line(&Line::from(spans), width)
            })
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for y in 0..height {
            let mut spans = vec![Span::styled("│", DIM)];
            for (column, lines) in cells.iter().enumerate() {
                let content = lines.get(y).cloned().unwrap_or_default();
                let pad = widths[column].saturating_sub(content.width());
                let (left, right) = match table.aligns.get(column) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                spans.push(Span::raw(" ".repeat(left + 1)));
                spans.extend(content.spans);
                spans.push(Span::raw(" ".repeat(right + 1)));
                spans.push(Span::styled("│", DIM));
            }
            out.push(Line::from(spans));
        }
    }
    out.push(border("└", "┴", "┘"));
    out
}

/// Counters of the work a [`MarkdownStream`] did, for tests and benchmarks:
/// streaming must cost O(length) overall, which shows as `scanned_bytes`
/// and `rendered_bytes` staying at about the source length, and each
/// `pending` call parsing a bounded tail.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Bytes pushed so far.
    pub source_bytes: usize,
    /// Bytes examined by the line scanner that finds block boundaries.
    pub scanned_bytes: usize,
    /// Bytes given to the markdown parser for committed output.
    pub rendered_bytes: usize,
    /// Bytes given to the markdown parser by [`MarkdownStream::pending`].
    pub preview_bytes: usize,
    /// Calls of [`MarkdownStream::pending`] that rendered something.
    pub preview_calls: usize,
    /// The most bytes one `pending` call gave to the parser.
    pub largest_preview: usize,
}

/// Markdown rendered while it streams in: [`push`](Self::push) returns the
/// lines that are final, [`pending`](Self::pending) previews the rest, and
/// [`finish`](Self::finish) renders what is left at the end of the answer.
///
/// Everything `push` and `finish` return, concatenated, equals
/// [`render`] of the whole text, with one documented exception: a
/// reference-style link (`[text][id]`) whose definition (`[id]: url`) is in
/// a different top-level block than the link, and that block was committed
/// first, stays literal text.
///
/// How: the source is kept whole, with an offset up to which it has been
/// rendered and returned. Each new complete line is examined once by a
/// line scanner that knows where a top-level block boundary is certain (a
/// line at column 0 after a blank line that is not a list item, a fence
/// or an ATX heading at column 0, outside fences and HTML blocks); the
/// source before such a boundary is rendered once and returned. A fenced
/// code block at the top level is returned line by line as its lines
/// arrive, highlighted with a highlighter that keeps its state. So the
/// whole stream costs O(length), and each `pending` call renders at most
/// a bounded tail.
pub struct MarkdownStream {
    width: u16,
    /// The complete lines pushed so far, sanitised line by line.
    source: String,
    /// The unfinished last line, as pushed.
    partial: String,
    /// Everything in `source` before this offset has been returned.
    committed: usize,
    /// No newline in `partial[..searched]`.
    searched: usize,
    scanner: Scanner,
    code: Option<StreamedFence>,
    /// Lines were returned: the next block starts after a blank line.
    emitted_any: bool,
    stats: Cell<StreamStats>,
}

/// A top-level fenced code block being returned line by line.
struct StreamedFence {
    fence: Fence,
    indent: usize,
    highlighter: CodeHighlighter,
}

impl MarkdownStream {
    /// A stream rendering for a terminal `width` columns wide.
    pub fn new(width: u16) -> Self {
        MarkdownStream {
            width: width.max(1),
            source: String::new(),
            partial: String::new(),
            committed: 0,
            searched: 0,
            scanner: Scanner::default(),
            code: None,
            emitted_any: false,
            stats: Cell::new(StreamStats::default()),
        }
    }

    /// Adds `delta` and returns the lines that became final.
    pub fn push(&mut self, delta: &str) -> Vec<Line<'static>> {
        self.partial.push_str(delta);
        self.update_stats(|stats| stats.source_bytes += delta.len());
        let mut out = Vec::new();
        let mut consumed = 0;
        loop {
            let from = self.searched.max(consumed);
            let Some(offset) = self.partial[from..].find('\n') else {
                break;
            };
            let end = from + offset + 1;
            let start = self.source.len();
            push_sanitized(&mut self.source, &self.partial[consumed..end]);
            self.update_stats(|stats| stats.scanned_bytes += end - consumed);
            consumed = end;
            let line_end = self.source.len();
            self.line(start, line_end, &mut out);
        }
        self.partial.drain(..consumed);
        self.searched = self.partial.len();
        out
    }

    /// The lines of the text that is not final yet, at most the last
    /// `max_lines` of them, for showing below the committed ones. Renders
    /// only a bounded tail of the source (about `max_lines` lines of the
    /// width, from the start of a line), so a long unfinished block may be
    /// previewed from its middle.
    pub fn pending(&self, max_lines: usize) -> Vec<Line<'static>> {
        if max_lines == 0 {
            return Vec::new();
        }
        if let Some(code) = &self.code {
            let partial = sanitize(&self.partial);
            if partial.is_empty() || fence_close(&partial, code.fence) {
                return Vec::new();
            }
            let mut highlighter = code.highlighter.clone();
            let line =
                highlighter.highlight_line(&code_line_text(strip_indent(&partial, code.indent)));
            let lines = hard_wrap_with_prefix(&line, self.width, &[], &[]);
            return last_lines(lines, max_lines);
        }
        let text = self.preview_text(max_lines);
        if text.trim().is_empty() {
            return Vec::new();
        }
        self.update_stats(|stats| {
            stats.preview_bytes += text.len();
            stats.preview_calls += 1;
            stats.largest_preview = stats.largest_preview.max(text.len());
        });
        let mut lines = render(&text, self.width);
        if self.emitted_any && !lines.is_empty() {
            lines.insert(0, Line::default());
        }
        last_lines(lines, max_lines)
    }

    /// Renders the rest of the text (the answer is complete) and returns
    /// it. The stream is then empty of pending text; pushing more continues
    /// the same document.
    pub fn finish(&mut self) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        let partial = std::mem::take(&mut self.partial);
        self.searched = 0;
        let start = self.source.len();
        push_sanitized(&mut self.source, &partial);
        if let Some(mut code) = self.code.take() {
            let last = &self.source[start..];
            if !last.is_empty() && !fence_close(last, code.fence) {
                let line = code
                    .highlighter
                    .highlight_line(&code_line_text(strip_indent(last, code.indent)));
                out.extend(hard_wrap_with_prefix(&line, self.width, &[], &[]));
                self.emitted_any = true;
            }
            self.committed = self.source.len();
        } else {
            self.commit(self.source.len(), &mut out);
        }
        self.scanner = Scanner::default();
        out
    }

    /// The text pushed so far, sanitised (see [`render`]): to render it
    /// again, e.g. at a new width.
    pub fn text(&self) -> String {
        let mut text = self.source.clone();
        push_sanitized(&mut text, &self.partial);
        text
    }

    /// The work done so far (see [`StreamStats`]).
    pub fn stats(&self) -> StreamStats {
        self.stats.get()
    }

    fn update_stats(&self, change: impl FnOnce(&mut StreamStats)) {
        let mut stats = self.stats.get();
        change(&mut stats);
        self.stats.set(stats);
    }

    /// Handles the complete line `source[start..end]` (with its newline).
    fn line(&mut self, start: usize, end: usize, out: &mut Vec<Line<'static>>) {
        let text = line_text(&self.source[start..end]);
        if let Some(code) = &mut self.code {
            if fence_close(text, code.fence) {
                self.code = None;
                self.scanner = Scanner::default();
            } else {
                let line = code
                    .highlighter
                    .highlight_line(&code_line_text(strip_indent(text, code.indent)));
                out.extend(hard_wrap_with_prefix(&line, self.width, &[], &[]));
                self.emitted_any = true;
            }
            self.committed = end;
            return;
        }
        if start != self.committed && self.scanner.boundary_before(text) {
            self.commit(start, out);
        }
        let text = line_text(&self.source[start..end]);
        if start == self.committed
            && let Some((fence, indent)) = fence_open(text)
        {
            // A fence at the top level: stream its lines as they come.
            let opener = &self.source[start..end];
            self.update_stats(|stats| stats.rendered_bytes += opener.len());
            let lang = Parser::new_ext(opener, options())
                .find_map(|event| match event {
                    Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                        Some(fence_lang(&info))
                    }
                    _ => None,
                })
                .unwrap_or_default();
            if self.emitted_any {
                out.push(Line::default());
            }
            self.code = Some(StreamedFence {
                fence,
                indent,
                highlighter: CodeHighlighter::new(&lang),
            });
            self.committed = end;
            return;
        }
        let text = line_text(&self.source[start..end]);
        self.scanner.feed(text);
    }

    /// Renders `source[committed..upto]` and returns it.
    fn commit(&mut self, upto: usize, out: &mut Vec<Line<'static>>) {
        let chunk = &self.source[self.committed..upto];
        self.update_stats(|stats| stats.rendered_bytes += chunk.len());
        let lines = render(chunk, self.width);
        if !lines.is_empty() {
            if self.emitted_any {
                out.push(Line::default());
            }
            out.extend(lines);
            self.emitted_any = true;
        }
        self.committed = upto;
        self.scanner = Scanner::default();
    }

    /// The text the preview renders: everything after the committed
    /// offset when that is short, else the last `cap` bytes from the first
    /// unindented line in them (or any line start there, or a point after
    /// a space), so that one preview costs O(`max_lines` × width).
    fn preview_text(&self, max_lines: usize) -> String {
        let cap = max_lines
            .saturating_mul(usize::from(self.width) + 1)
            .saturating_mul(4)
            .max(1024);
        let partial = sanitize(&self.partial);
        if partial.len() >= cap {
            // One unfinished line longer than the preview: its end.
            let mut from = partial.len() - cap;
            while !partial.is_char_boundary(from) {
                from += 1;
            }
            let cut = partial[from..]
                .find(char::is_whitespace)
                .map_or(from, |index| from + index + 1);
            return partial[cut..].to_string();
        }
        let budget = cap - partial.len();
        let end = self.source.len();
        let mut start = self.committed;
        if end - start > budget {
            let mut from = end - budget;
            while !self.source.is_char_boundary(from) {
                from += 1;
            }
            let line_starts: Vec<usize> = self.source[from..end]
                .match_indices('\n')
                .map(|(index, _)| from + index + 1)
                .filter(|&index| index < end)
                .collect();
            start = line_starts
                .iter()
                .copied()
                .find(|&index| {
                    let line = line_text(&self.source[index..]);
                    !line.is_empty() && !line.starts_with([' ', '\t'])
                })
                .or_else(|| line_starts.first().copied())
                .unwrap_or(end);
        }
        let mut text = String::with_capacity(end - start + partial.len());
        text.push_str(&self.source[start..]);
        text.push_str(&partial);
        text
    }
}

fn last_lines(mut lines: Vec<Line<'static>>, max: usize) -> Vec<Line<'static>> {
    if lines.len() > max {
        lines.drain(..lines.len() - max);
    }
    lines
}

/// A line without its line ending.
fn line_text(line: &str) -> &str {
    let line = line.split('\n').next().unwrap_or("");
    line.strip_suffix('\r').unwrap_or(line)
}

/// `line` without up to `indent` leading spaces (a fence's indentation is
/// removed from its content lines).
fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.bytes().take(indent).take_while(|&b| b == b' ').count();
    &line[spaces..]
}

/// The indentation of a line in columns (tabs to 4-column stops) and the
/// text after it.
fn indentation(line: &str) -> (usize, &str) {
    let mut columns = 0;
    for (index, byte) in line.bytes().enumerate() {
        match byte {
            b' ' => columns += 1,
            b'\t' => columns = (columns / 4 + 1) * 4,
            _ => return (columns, &line[index..]),
        }
    }
    (columns, "")
}

fn is_blank(line: &str) -> bool {
    line.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// The opening line of a fenced code block (`` ``` `` or `~~~`, at most 3
/// columns indented).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fence {
    marker: u8,
    length: usize,
}

/// A fence opening on `line`, and its indentation.
fn fence_open(line: &str) -> Option<(Fence, usize)> {
    let (indent, rest) = indentation(line);
    if indent > 3 {
        return None;
    }
    let marker = *rest.as_bytes().first()?;
    if marker != b'`' && marker != b'~' {
        return None;
    }
    let length = rest.bytes().take_while(|&b| b == marker).count();
    if length < 3 || (marker == b'`' && rest[length..].contains('`')) {
        return None;
    }
    Some((Fence { marker, length }, indent))
}

/// Whether `line` closes `fence`.
fn fence_close(line: &str, fence: Fence) -> bool {
    let line = line_text(line);
    let (indent, rest) = indentation(line);
    let length = rest.bytes().take_while(|&b| b == fence.marker).count();
    indent <= 3 && length >= fence.length && is_blank(&rest[length..])
}

/// An ATX heading at column 0.
fn is_atx_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes) && matches!(line.as_bytes().get(hashes), None | Some(b' ' | b'\t'))
}

/// A list item marker at column 0 (`-`, `+`, `*`, `1.`, `1)`): such a line
/// after a blank line may continue the list before it.
fn is_list_marker(line: &str) -> bool {
    let bytes = line.as_bytes();
    let after = match bytes.first() {
        Some(b'-' | b'+' | b'*') => 1,
        Some(b'0'..=b'9') => {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 9 || !matches!(bytes.get(digits), Some(b'.' | b')')) {
                return false;
            }
            digits + 1
        }
        _ => return false,
    };
    matches!(bytes.get(after), None | Some(b' ' | b'\t'))
}

/// How an HTML block that started on a line ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HtmlEnd {
    BlankLine,
    /// At the line holding this text (lower case).
    Marker(&'static str),
}

/// The HTML block a line may start (CommonMark's seven kinds, told apart
/// by how they end). Any line starting with `<` counts: a false start only
/// delays a commit.
fn html_start(line: &str) -> Option<HtmlEnd> {
    let (indent, rest) = indentation(line);
    if indent > 3 || !rest.starts_with('<') {
        return None;
    }
    let head: String = rest
        .chars()
        .take(12)
        .collect::<String>()
        .to_ascii_lowercase();
    for (open, close) in [
        ("<script", "</script>"),
        ("<pre", "</pre>"),
        ("<style", "</style>"),
        ("<textarea", "</textarea>"),
    ] {
        if let Some(after) = head.strip_prefix(open)
            && matches!(after.chars().next(), None | Some(' ' | '\t' | '>'))
        {
            return Some(HtmlEnd::Marker(close));
        }
    }
    if head.starts_with("<!--") {
        return Some(HtmlEnd::Marker("-->"));
    }
    if head.starts_with("<?") {
        return Some(HtmlEnd::Marker("?>"));
    }
    if head.starts_with("<![cdata[") {
        return Some(HtmlEnd::Marker("]]>"));
    }
    if head.starts_with("<!") && head[2..].starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Some(HtmlEnd::Marker(">"));
    }
    Some(HtmlEnd::BlankLine)
}

/// What the lines since the last commit leave open, as far as block
/// boundaries are concerned.
#[derive(Debug, Default)]
struct Scanner {
    previous_blank: bool,
    /// A fence opened (possibly inside a list item): no boundary until it
    /// closes.
    fence: Option<Fence>,
    html: Option<HtmlEnd>,
}

impl Scanner {
    /// Whether everything before `line` is certainly finished, so that
    /// rendering it alone gives what rendering the whole text would.
    fn boundary_before(&self, line: &str) -> bool {
        if self.fence.is_some() || self.html.is_some() {
            return false;
        }
        if is_blank(line) || line.starts_with([' ', '\t']) {
            return false;
        }
        if self.previous_blank {
            // A blank line closed paragraphs, quotes, tables and HTML
            // blocks; a line at column 0 closes lists unless it is an item.
            return !is_list_marker(line);
        }
        // These interrupt a paragraph and cannot be a lazy continuation.
        fence_open(line).is_some() || is_atx_heading(line)
    }

    fn feed(&mut self, line: &str) {
        let blank = is_blank(line);
        if let Some(fence) = self.fence {
            if fence_close(line, fence) {
                self.fence = None;
            }
        } else if let Some(end) = self.html {
            match end {
                HtmlEnd::BlankLine if blank => self.html = None,
                HtmlEnd::Marker(marker) if line.to_ascii_lowercase().contains(marker) => {
                    self.html = None;
                }
                _ => {}
            }
        } else if let Some((fence, _)) = fence_open(line) {
            self.fence = Some(fence);
        } else if let Some(end) = html_start(line) {
            let closed_here = match end {
                HtmlEnd::Marker(marker) => line
                    .trim_start()
                    .get(2..)
                    .is_some_and(|rest| rest.to_ascii_lowercase().contains(marker)),
                HtmlEnd::BlankLine => false,
            };
            if !closed_here {
                self.html = Some(end);
            }
        }
        self.previous_blank = blank;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|line| line.to_string()).collect()
    }

    #[test]
    fn sanitize_works_by_line_and_drops_crlf() {
        assert!(matches!(
            sanitize("plain\ttext\n"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(sanitize("a\r\nb\u{1b}[2J\r\n"), "a\nb\n");
        // An unterminated OSC ends with its line.
        assert_eq!(sanitize("x\u{1b}]0;never ends\nnext"), "x\nnext");
        assert_eq!(sanitize("bell\u{7}"), "bell\u{fffd}");
    }

    #[test]
    fn fences_open_and_close_as_commonmark_says() {
        let (fence, indent) = fence_open("  ```rust").unwrap();
        assert_eq!((fence.marker, fence.length, indent), (b'`', 3, 2));
        assert!(fence_open("    ```").is_none());
        assert!(fence_open("``").is_none());
        assert!(fence_open("```a`b").is_none());
        assert!(fence_open("~~~a`b").is_some());
        assert!(fence_close("```", fence));
        assert!(fence_close("   `````  ", fence));
        assert!(!fence_close("```rust", fence));
        assert!(!fence_close("~~~", fence));
        assert!(!fence_close("    ```", fence));
    }

    #[test]
    fn list_markers_and_headings_at_column_zero() {
        for line in ["- a", "* a", "+ a", "1. a", "12) a", "-", "3."] {
            assert!(is_list_marker(line), "{line}");
        }
        for line in ["-a", "**bold**", "2024 was", "1.5 times", "#x"] {
            assert!(!is_list_marker(line), "{line}");
        }
        assert!(is_atx_heading("# a") && is_atx_heading("###") && !is_atx_heading("#a"));
        assert!(!is_atx_heading("####### seven"));
    }

    #[test]
    fn html_blocks_are_told_apart_by_how_they_end() {
        assert_eq!(html_start("<!-- x"), Some(HtmlEnd::Marker("-->")));
        assert_eq!(html_start("<script>"), Some(HtmlEnd::Marker("</script>")));
        assert_eq!(html_start("<PRE"), Some(HtmlEnd::Marker("</pre>")));
        assert_eq!(html_start("<!DOCTYPE html>"), Some(HtmlEnd::Marker(">")));
        assert_eq!(html_start("<div>"), Some(HtmlEnd::BlankLine));
        assert_eq!(html_start("    <div>"), None);
        assert_eq!(html_start("text"), None);
    }

    #[test]
    fn the_scanner_finds_only_certain_boundaries() {
        let mut scanner = Scanner::default();
        scanner.feed("- item");
        assert!(!scanner.boundary_before("continued lazily"));
        assert!(scanner.boundary_before("# heading"));
        assert!(scanner.boundary_before("```"));
        scanner.feed("");
        assert!(!scanner.boundary_before("- next item"));
        assert!(!scanner.boundary_before("  indented"));
        assert!(scanner.boundary_before("paragraph"));
        scanner.feed("  ```");
        scanner.feed("");
        assert!(!scanner.boundary_before("inside a fence"));
        scanner.feed("  ```");
        scanner.feed("");
        assert!(scanner.boundary_before("after it"));
        let mut scanner = Scanner::default();
        scanner.feed("<!-- a comment");
        scanner.feed("");
        assert!(!scanner.boundary_before("still the comment"));
        scanner.feed("-->");
        scanner.feed("");
        assert!(scanner.boundary_before("after it"));
    }

    #[test]
    fn columns_keep_their_width_when_they_fit_and_share_when_not() {
        assert_eq!(column_widths(&[3, 5, 10], 30), vec![3, 5, 10]);
        assert_eq!(column_widths(&[3, 50, 40], 33), vec![3, 15, 15]);
        assert_eq!(column_widths(&[4, 4, 4], 2), vec![1, 1, 1]);
    }

    #[test]
    fn code_lines_expand_tabs_and_keep_empty_lines() {
        assert_eq!(code_line_text("a\tb\r"), "a   b");
        assert_eq!(code_lines("").count(), 0);
        assert_eq!(code_lines("\n").collect::<Vec<_>>(), [""]);
        assert_eq!(code_lines("a\n\nb\n").collect::<Vec<_>>(), ["a", "", "b"]);
        assert_eq!(fence_lang("rust,ignore extra"), "rust");
        assert_eq!(fence_lang("  "), "");
    }

    #[test]
    fn blocks_are_separated_by_one_blank_line_and_nothing_trails() {
        let lines = render("# A\nText\n\n\n\n- x\n- y\n\n---\n", 20);
        assert_eq!(
            texts(&lines),
            [
                "# A",
                "",
                "Text",
                "",
                "• x",
                "• y",
                "",
                "─".repeat(20).as_str()
            ]
        );
        assert!(render("", 20).is_empty());
        assert!(render("\n\n", 20).is_empty());
    }

    #[test]
    fn lists_in_quotes_and_code_in_items_keep_their_prefixes() {
        let lines = render("> 1. one\n>\n>    ```\n>    code\n>    ```\n", 30);
        assert_eq!(texts(&lines), ["│ 1. one", "│", "│    code"]);
        let lines = render("-\n- [x] done\n3. ☐", 30);
        assert_eq!(texts(&lines)[..2], ["• ", "☑ done"]);
    }

    #[test]
    fn images_and_email_autolinks() {
        let lines = render("![logo](a.png) <me@example.com>", 60);
        assert_eq!(texts(&lines), ["[image: logo] (a.png) me@example.com"]);
    }
}
