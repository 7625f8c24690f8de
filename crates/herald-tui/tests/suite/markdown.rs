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
    "\u{1b}[31m```\u{1b}[0m\nfence behind an escape\n```\n",
    "CRLF line\r\nnext\r\n\r\n- item\r\n",
    "unterminated \u{1b}]8;;http://x hides the rest of this line only\nnext line\n",
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

fn snapshot(text: &str, width: u16) -> String {
    debug_lines(&render(text, width))
}

#[test]
fn headings() {
    let text = "# Title\n\n## Section *two*\n\n### Third `level`\n\n#### Fourth\n\nSetext heading\n==============\n\nA paragraph under it.\n\n# A heading long enough that it has to wrap at forty columns\n";
    insta::assert_snapshot!(snapshot(text, 40));
}

#[test]
fn nested_lists_and_task_lists() {
    let text = "\
- first item
- second item, long enough to wrap under its own text and not under the bullet
  - nested one
  - nested two
    - third level
- third item

1. one
2. two
   1. two point one
   2. two point two
3. three

- [ ] an open task
- [x] a done task
- [ ] a task whose text is long enough to wrap onto a second line

1. loose item

   with a second paragraph

2. second loose item
";
    insta::assert_snapshot!(snapshot(text, 40));
}

#[test]
fn emphasis_inline_code_and_links() {
    let text = "\
Plain, *italic*, **bold**, ***both***, ~~struck~~ and `inline code` in **bold with `code` inside**.

A [link](https://example.com/docs) and an autolink <https://example.com> and a link whose text is its URL [https://example.com](https://example.com) and ![an image](logo.png).
";
    insta::assert_snapshot!(snapshot(text, 60));
}

#[test]
fn block_quote() {
    let text = "\
> A quoted paragraph that is long enough to wrap inside the quote bar.
>
> - a list in a quote
> - second
>
> > a nested quote

After the quote.
";
    insta::assert_snapshot!(snapshot(text, 40));
}

const TABLE: &str = "\
| Name | Size | Description |
|:-----|-----:|:-----------:|
| `Cargo.toml` | 1.2 KB | the workspace manifest |
| src/main.rs | 48 KB | entry point of the command line tool, parses arguments |
";

#[test]
fn a_table_that_fits() {
    insta::assert_snapshot!(snapshot(TABLE, 100));
}

#[test]
fn a_table_that_must_shrink() {
    let rendered = render(TABLE, 40);
    for line in &rendered {
        assert!(line.width() <= 40, "{line:?}");
    }
    insta::assert_snapshot!(debug_lines(&rendered));
}

#[test]
fn a_table_too_narrow_for_its_borders_is_truncated() {
    let text = "| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n| 1 | 2 | 3 | 4 | 5 | 6 |\n";
    let rendered = render(text, 12);
    for line in &rendered {
        assert!(line.width() <= 12, "{line:?}");
    }
    insta::assert_snapshot!(debug_lines(&rendered));
}

#[test]
fn code_blocks_rust_and_unknown_language() {
    let text = "\
```rust
// A comment
fn main() {
    let greeting = \"hello\";
    println!(\"{greeting}, a line of code that is longer than forty columns\");
}
```

```no-such-language
some  plain   code, spacing kept
```

    an indented code block
";
    insta::assert_snapshot!(snapshot(text, 40));
}

#[test]
fn a_long_paragraph_wrapped_at_forty_columns() {
    let text = "herald is an AI agent runtime in one fast Rust binary. It runs an LLM tool-calling agent on your machine — a terminal with persistent state, file reading, writing and patching, ripgrep-grade search — against any OpenAI-compatible server. A URL such as https://example.com/a/very/long/path/that/does/not/fit is broken.\n";
    let rendered = render(text, 40);
    for line in &rendered {
        assert!(line.width() <= 40, "{line:?}");
    }
    insta::assert_snapshot!(debug_lines(&rendered));
}

#[test]
fn escape_sequences_are_stripped() {
    let text = "# \u{1b}]0;owned title\u{7}Heading\n\nText \u{1b}[2Jwith a clear screen, \u{1b}[31mcolour\u{1b}[0m and a bell\u{7}.\n\n[link](https://x.example/\u{1b}[2J)\n\n```sh\necho \u{1b}]0;title\u{7}done\u{1b}[2J\n```\n";
    let rendered = render(text, 60);
    for line in &rendered {
        for span in &line.spans {
            assert!(!span.content.chars().any(char::is_control), "{span:?}");
        }
    }
    insta::assert_snapshot!(debug_lines(&rendered));
}

/// A long answer shaped like a model's: sections of headings, paragraphs,
/// lists, code, tables and quotes, about `bytes` long.
fn typical_answer(bytes: usize) -> String {
    let mut text = String::new();
    let mut section = 0;
    while text.len() < bytes {
        section += 1;
        text.push_str(&format!(
            "## Section {section}\n\n\
             The function `step_{section}` reads the **configuration** and writes *every* change it makes to the \
             journal, so a crash in the middle loses nothing; see [the docs](https://example.com/{section}).\n\
             A second line of the same paragraph keeps going for a while to wrap.\n\n\
             1. first, check the input\n\
             2. then run the step:\n\
             \x20  - with `--fast`\n\
             \x20  - or without it\n\
             3. finally report\n\n\
             ```rust\n\
             fn step_{section}(config: &Config) -> Result<(), Error> {{\n\
             \x20   let journal = Journal::open(&config.path)?; // {section}\n\
             \x20   journal.write(\"step {section}\")\n\
             }}\n\
             ```\n\n\
             | step | time | result |\n\
             |------|-----:|--------|\n\
             | {section} | 12 ms | ok |\n\
             | {section}b | 3 s | retried once after a timeout |\n\n\
             > Note: step {section} is idempotent.\n\n"
        ));
    }
    text
}

#[test]
fn a_large_answer_streamed_in_small_deltas_equals_the_whole_render() {
    let text = typical_answer(20_000);
    let expected = render(&text, 72);
    let mut rng = Rng(42);
    let mut stream = MarkdownStream::new(72);
    let mut streamed = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let end = (at + 1 + rng.below(5)).min(text.len());
        streamed.extend(stream.push(&text[at..end]));
        at = end;
    }
    let before_finish = streamed.len();
    streamed.extend(stream.finish());
    assert_eq!(debug_lines(&streamed), debug_lines(&expected));
    assert_eq!(streamed, expected);
    // Blocks were committed while streaming, not all at the end.
    assert!(
        before_finish * 100 >= expected.len() * 99,
        "{before_finish} of {} lines before finish",
        expected.len()
    );
}

#[test]
fn streaming_80_kb_in_4_byte_deltas_does_linear_work() {
    let text = typical_answer(80_000);
    let mut stream = MarkdownStream::new(80);
    let mut lines = 0;
    for chunk in text.as_bytes().chunks(4) {
        lines += stream.push(std::str::from_utf8(chunk).unwrap()).len();
        // The TUI previews the tail after every delta.
        let _ = stream.pending(20);
    }
    lines += stream.finish().len();
    assert_eq!(lines, render(&text, 80).len());
    let stats = stream.stats();
    assert_eq!(stats.source_bytes, text.len());
    // Every byte is scanned once and parsed once for the committed output.
    assert!(stats.scanned_bytes <= text.len(), "{stats:?}");
    assert!(stats.rendered_bytes <= text.len(), "{stats:?}");
    // A preview renders at most 20 lines' worth of source (the bound of
    // `pending`), however long the answer is, and here only the block
    // being written: on average a few hundred bytes.
    assert!(stats.largest_preview <= 20 * 81 * 4, "{stats:?}");
    assert!(
        stats.preview_bytes <= stats.preview_calls * 400,
        "{stats:?}"
    );
}

#[test]
fn the_preview_of_a_block_that_never_ends_stays_bounded() {
    // One list of 4,000 items never reaches a block boundary: the committed
    // output stays empty and each preview renders only the tail.
    let mut stream = MarkdownStream::new(60);
    let mut committed = 0;
    for item in 0..4000 {
        committed += stream
            .push(&format!("- item number {item} of a very long list\n"))
            .len();
        if item % 50 == 49 {
            let preview = stream.pending(5);
            assert_eq!(preview.len(), 5);
            assert_eq!(
                preview[4].to_string(),
                format!("• item number {item} of a very long list")
            );
        }
    }
    assert_eq!(committed, 0);
    let stats = stream.stats();
    assert!(stats.largest_preview <= 5 * 61 * 4, "{stats:?}");
    assert_eq!(stream.finish().len(), 4000);
    // The same for one endless line.
    let mut stream = MarkdownStream::new(60);
    for _ in 0..20_000 {
        stream.push("word ");
    }
    let preview = stream.pending(3);
    assert_eq!(preview.len(), 3);
    assert!(
        stream.stats().largest_preview <= 1024 + 60,
        "{:?}",
        stream.stats()
    );
}

#[test]
fn a_code_fence_is_committed_line_by_line() {
    let mut stream = MarkdownStream::new(40);
    let lines = stream.push("Intro text.\n\n```rust\n");
    assert_eq!(debug_lines(&lines), "Intro text.\n\n");
    let lines = stream.push("let x = 1;\nlet y");
    assert_eq!(
        debug_lines(&lines),
        "⟨fg=Magenta⟩let⟨/⟩ x = ⟨fg=LightRed⟩1⟨/⟩;\n"
    );
    // The unfinished line is previewed, highlighted.
    assert_eq!(debug_lines(&stream.pending(10)), "⟨fg=Magenta⟩let⟨/⟩ y\n");
    assert!(stream.push(" = \"s\";\n```").len() == 1);
    // A closing fence that is not yet a whole line previews nothing.
    assert!(stream.pending(10).is_empty());
    assert!(stream.push("\n").is_empty());
    let lines = stream.push("\nAfter.\n");
    assert!(lines.is_empty());
    assert_eq!(debug_lines(&stream.pending(10)), "\nAfter.\n");
    assert_eq!(debug_lines(&stream.finish()), "\nAfter.\n");
}

#[test]
fn a_paragraph_is_pending_until_a_blank_line_and_the_next_block_starts() {
    let mut stream = MarkdownStream::new(40);
    assert_eq!(stream.push("# Title\n").len(), 0);
    assert_eq!(debug_lines(&stream.pending(10)), "⟨b,u⟩# Title⟨/⟩\n");
    let lines = stream.push("\nSome text\nthat continues");
    assert_eq!(debug_lines(&lines), "⟨b,u⟩# Title⟨/⟩\n");
    assert_eq!(
        debug_lines(&stream.pending(10)),
        "\nSome text that continues\n"
    );
    assert_eq!(
        debug_lines(&stream.pending(1)),
        "Some text that continues\n"
    );
    // Still open: a `===` line would make it a heading.
    assert!(stream.push("\n").is_empty());
    assert!(stream.push("\n").is_empty());
    let lines = stream.push("Next");
    assert!(lines.is_empty());
    let lines = stream.push(" paragraph\n");
    assert_eq!(debug_lines(&lines), "\nSome text that continues\n");
    assert_eq!(debug_lines(&stream.finish()), "\nNext paragraph\n");
    assert!(stream.pending(10).is_empty());
}

#[test]
fn an_unclosed_fence_at_the_end_is_finished_as_code() {
    let text = "```python\ndef f():\n    return 1";
    let mut stream = MarkdownStream::new(40);
    let mut lines = stream.push(text);
    lines.extend(stream.finish());
    assert_eq!(lines, render(text, 40));
    assert_eq!(lines.len(), 2);
}

#[test]
fn escape_sequences_split_across_deltas_are_stripped() {
    let text = "Title \u{1b}]0;evil\u{7}here\n\nText \u{1b}[2J\u{1b}[31mred\u{1b}[0m\n";
    let mut stream = MarkdownStream::new(40);
    let mut lines = Vec::new();
    for c in text.chars() {
        lines.extend(stream.push(&c.to_string()));
        for line in stream.pending(5) {
            for span in &line.spans {
                assert!(!span.content.chars().any(char::is_control), "{span:?}");
            }
        }
    }
    lines.extend(stream.finish());
    assert_eq!(debug_lines(&lines), "Title here\n\nText red\n");
    assert_eq!(lines, render(text, 40));
}

#[test]
fn a_reference_definition_in_a_later_block_is_the_one_known_difference() {
    // Documented on `MarkdownStream`: the first paragraph is final before
    // the definition arrives, so its link stays literal when streamed.
    let text = "See [the docs][d].\n\nMore text.\n\n[d]: https://example.com\n";
    let whole = debug_lines(&render(text, 60));
    assert_eq!(
        whole,
        "See ⟨u⟩the docs⟨/⟩⟨d⟩ (https://example.com)⟨/⟩.\n\nMore text.\n"
    );
    let mut stream = MarkdownStream::new(60);
    let mut lines = stream.push(text);
    lines.extend(stream.finish());
    assert_eq!(debug_lines(&lines), "See [the docs][d].\n\nMore text.\n");
}
