#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Snapshots of rendered markdown, and the streaming renderer checked
//! against the whole-text renderer.

use herald_tui::markdown::{MarkdownStream, render};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

/// Lines as text with their styles marked: `⟨b,i,fg=Cyan⟩text⟨/⟩` around
/// every styled run (the line's style patched with the span's; unstyled
/// text bare).
fn debug_lines(lines: &[Line<'_>]) -> String {
    let mut out = String::new();
    for line in lines {
        let mut runs: Vec<(Style, String)> = Vec::new();
        for span in &line.spans {
            let style = line.style.patch(span.style);
            match runs.last_mut() {
                Some((last, text)) if *last == style => text.push_str(&span.content),
                _ => runs.push((style, span.content.to_string())),
            }
        }
        for (style, text) in runs {
            let marks = style_marks(style);
            if marks.is_empty() {
                out.push_str(&text);
            } else {
                out.push_str(&format!("⟨{marks}⟩{text}⟨/⟩"));
            }
        }
        out.push('\n');
    }
    out
}

fn style_marks(style: Style) -> String {
    let mut marks = Vec::new();
    let modifiers = style.add_modifier - style.sub_modifier;
    for (modifier, mark) in [
        (Modifier::BOLD, "b"),
        (Modifier::DIM, "d"),
        (Modifier::ITALIC, "i"),
        (Modifier::UNDERLINED, "u"),
        (Modifier::CROSSED_OUT, "s"),
        (Modifier::REVERSED, "r"),
    ] {
        if modifiers.contains(modifier) {
            marks.push(mark.to_string());
        }
    }
    if let Some(fg) = style.fg {
        marks.push(format!("fg={}", color_name(fg)));
    }
    if let Some(bg) = style.bg {
        marks.push(format!("bg={}", color_name(bg)));
    }
    marks.join(",")
}

fn color_name(color: Color) -> String {
    format!("{color:?}")
}

/// A small deterministic random source (no dependency needed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `text` pushed in pieces of `1..=max_delta` bytes (cut at character
/// boundaries), then finished: every line the stream returned.
fn stream_all(
    text: &str,
    width: u16,
    rng: &mut Rng,
    max_delta: usize,
) -> (Vec<Line<'static>>, MarkdownStream) {
    let mut stream = MarkdownStream::new(width);
    let mut lines = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + 1 + rng.below(max_delta)).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        lines.extend(stream.push(&text[at..end]));
        at = end;
    }
    lines.extend(stream.finish());
    (lines, stream)
}

const SNIPPETS: &[&str] = &[
    "# Heading\n",
    "## Second *level* heading\n",
    "Setext heading\n===\n",
    "Setext two\n---\n",
    "A paragraph with **bold**, *italic*, ~~gone~~ and `code`, long enough to wrap across several lines of the terminal width.\n",
    "Line one\nline two of the same paragraph\n",
    "- tight\n- list\n  - nested\n- end\n",
    "- loose\n\n- list\n",
    "1. one\n2. two\n\n3. three after blank\n",
    "- [ ] open task\n- [x] done task\n",
    "> quoted\n> more\n>\n> > nested\n",
    "> lazy\ncontinuation\n",
    "---\n",
    "***\n",
    "| a | b |\n|---|:-:|\n| 1 | 2 |\n| long cell text here | x |\n",
    "```rust\nfn main() {\n    let s = \"x\";\n\n    // c\n}\n```\n",
    "```\nplain\n\n\nblank lines\n```\n",
    "~~~python\ndef f():\n    return 1\n~~~\n",
    "````md\n```\ninner fence\n```\n````\n",
    "    indented code\n\n    more indented\n",
    "- item with code:\n\n  ```sh\n  echo hi\n\n  echo there\n  ```\n",
    "- item\n```\nfence after item\n```\n",
    "Text then fence\n```js\nlet a = 1;\n```\n",
    "<div>\nhtml *block*\n</div>\n",
    "<!-- comment\n\nstill comment -->\n",
    "[link](https://example.com) and <https://auto.example>\n",
    "[undefined] reference and [text][nothing]\n",
    "Hard  \nbreak\n",
    "日本語のテキストと emoji 🎉 mixed in a paragraph that wraps\n",
    "Text with \u{1b}]0;title\u{7} escape and \u{1b}[2J clear\n",
    "  ```\n  indented fence\n\n  x\n  ```\n",
    "```unclosed\ncode\n",
    "1) paren list\n2) second\n",
    "+ plus\n\n+ plus two\n\n  continued\n",
    "\n",
    "\n\n",
    "Term\n# heading interrupts\n",
    "a | b\n--|--\nc | d\n",
    "> ```\n> quoted code\n> ```\n",
    "1. item\n\n   ```rust\n   let x = 1;\n   ```\n\n2. next\n",
    "<script>\nlet a;\n\nb\n</script>\n",
    "* star\n* list\n",
    "10. ten\n11. eleven\n",
    "Para\n    lazy, not code\n",
    "\ttabbed\tcode\n",
    "### Heading\nright after\n",
    "- a\n# heading ends the list\n",
    "Para\n```\nfence interrupts\n```\nafter\n",
];

fn random_document(rng: &mut Rng, blocks: usize) -> String {
    let mut doc = String::new();
    for _ in 0..blocks {
        doc.push_str(SNIPPETS[rng.below(SNIPPETS.len())]);
        match rng.below(4) {
            0 => {}
            1 => doc.push('\n'),
            _ => doc.push_str("\n\n"),
        }
    }
    doc
}

#[test]
fn streamed_random_documents_render_as_the_whole_text() {
    let mut rng = Rng(std::env::var("MD_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15));
    for round in 0..rounds() {
        let blocks = 1 + rng.below(12);
        let mut doc = random_document(&mut rng, blocks);
        if rng.below(3) == 0 {
            // End without a final newline.
            while doc.ends_with('\n') {
                doc.pop();
            }
        }
        let width = [20, 40, 80][rng.below(3)];
        let expected = render(&doc, width);
        let max_delta = 1 + rng.below(12);
        let (streamed, _) = stream_all(&doc, width, &mut rng, max_delta);
        if streamed != expected {
            panic!(
                "round {round}, width {width}\n--- document\n{doc}\n--- render\n{}\n--- stream\n{}",
                debug_lines(&expected),
                debug_lines(&streamed)
            );
        }
    }
}

/// Rounds of the random test (`MD_ROUNDS` for a longer local run).
fn rounds() -> usize {
    std::env::var("MD_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}
