#![allow(clippy::unwrap_used, clippy::expect_used)]
//! syntect's dumps load on the first code block that names a language,
//! never before. A test binary of its own: the loaded state is per process.

use herald_tui::{highlight, markdown};

#[test]
fn syntect_loads_at_the_first_code_block_with_a_language_only() {
    assert!(!highlight::is_loaded());
    let text =
        "# Title\n\nProse with `inline code`.\n\n    indented code\n\n```\nno language\n```\n";
    let lines = markdown::render(text, 60);
    assert!(lines.len() > 5);
    let mut stream = markdown::MarkdownStream::new(60);
    stream.push(text);
    stream.finish();
    assert!(
        !highlight::is_loaded(),
        "prose and plain code must not load syntect"
    );
    markdown::render("```rust\nfn main() {}\n```\n", 60);
    assert!(highlight::is_loaded());
}
