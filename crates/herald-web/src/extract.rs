//! Turning a fetched body into text the model reads: HTML to markdown
//! (the main content, by the readability algorithm, links kept), PDF to
//! its text, plain text and JSON as they are.

use crate::fetch::Fetched;

/// What a body was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentKind {
    /// An article found by readability, as markdown.
    Article,
    /// A page readability found no article in, whole, as markdown.
    Page,
    Pdf,
    Text,
    Json,
}

impl ContentKind {
    /// How the kind is named in the tool result.
    pub fn label(self) -> &'static str {
        match self {
            Self::Article => "article (main content as markdown)",
            Self::Page => "page (as markdown)",
            Self::Pdf => "PDF text",
            Self::Text => "text",
            Self::Json => "JSON",
        }
    }
}

/// The text of one fetched URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub title: Option<String>,
    pub kind: ContentKind,
    pub text: String,
}

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("the PDF could not be read: {0}")]
    Pdf(String),
    #[error(
        "the body is {0}, which herald cannot turn into text; fetch an HTML, PDF, text or JSON address"
    )]
    Unsupported(String),
}

/// Elements never worth reading in a page without an article.
const BOILERPLATE: &[&str] = &[
    "script", "style", "meta", "head", "noscript", "template", "svg", "canvas", "iframe", "nav",
    "footer", "form", "button", "select", "input", "aside",
];

/// Reads `fetched` as the kind its content type (or, without one, its
/// first bytes) says.
pub fn extract(fetched: &Fetched) -> Result<Extracted, ExtractError> {
    let body = &fetched.body[..];
    let kind = fetched
        .content_type
        .as_deref()
        .unwrap_or_else(|| sniff(body));
    match kind {
        "text/html" | "application/xhtml+xml" => Ok(html(
            &String::from_utf8_lossy(body),
            fetched.final_url.as_str(),
        )),
        "application/pdf" => pdf(body),
        "application/json" => Ok(Extracted {
            title: None,
            kind: ContentKind::Json,
            text: String::from_utf8_lossy(body).into_owned(),
        }),
        other
            if other.starts_with("text/")
                || other.ends_with("+json")
                || other.ends_with("/xml") =>
        {
            Ok(Extracted {
                title: None,
                kind: if other.ends_with("json") {
                    ContentKind::Json
                } else {
                    ContentKind::Text
                },
                text: String::from_utf8_lossy(body).into_owned(),
            })
        }
        // Servers label many things `application/octet-stream`.
        _ if body.starts_with(b"%PDF-") => pdf(body),
        other => Err(ExtractError::Unsupported(other.to_owned())),
    }
}

fn sniff(body: &[u8]) -> &'static str {
    let start = &body[..body.len().min(512)];
    let lower = String::from_utf8_lossy(start).to_ascii_lowercase();
    if body.starts_with(b"%PDF-") {
        "application/pdf"
    } else if lower.contains("<html") || lower.contains("<!doctype html") {
        "text/html"
    } else if matches!(lower.trim_start().chars().next(), Some('{' | '[')) {
        "application/json"
    } else {
        "text/plain"
    }
}

/// The main content of an HTML page as markdown; the whole page's text
/// without its boilerplate when the page has no article.
pub fn html(source: &str, url: &str) -> Extracted {
    let config = dom_smoothie::Config {
        text_mode: dom_smoothie::TextMode::Markdown,
        // Pages of tens of thousands of elements stay fast.
        max_elements_to_parse: 50_000,
        ..Default::default()
    };
    let article = dom_smoothie::Readability::new(source, Some(url), Some(config))
        .ok()
        .and_then(|mut reader| reader.parse().ok())
        .filter(|article| !article.text_content.trim().is_empty());
    if let Some(article) = article {
        let title = Some(article.title.trim().to_owned()).filter(|t| !t.is_empty());
        return Extracted {
            title,
            kind: ContentKind::Article,
            text: tidy(&article.text_content),
        };
    }
    let document = dom_query::Document::from(source);
    let title = document.select("title").text().trim().to_owned();
    let body = document.select("body");
    let text = match body.nodes().first() {
        Some(node) => node.md(Some(BOILERPLATE)),
        None => document.md(Some(BOILERPLATE)),
    };
    Extracted {
        title: Some(title).filter(|t| !t.is_empty()),
        kind: ContentKind::Page,
        text: tidy(&text),
    }
}

/// Collapses runs of blank lines and trailing spaces, which converted
/// pages are full of and which cost tokens for nothing.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

fn pdf(body: &[u8]) -> Result<Extracted, ExtractError> {
    let document =
        lopdf::Document::load_mem(body).map_err(|err| ExtractError::Pdf(err.to_string()))?;
    let pages: Vec<u32> = document.get_pages().keys().copied().collect();
    let mut text = String::new();
    for (page, chunk) in pages.iter().zip(document.extract_text_chunks(&pages)) {
        match chunk {
            Ok(chunk) => text.push_str(&chunk),
            Err(err) => text.push_str(&format!("\n[page {page}: no text ({err})]\n")),
        }
    }
    let title = document
        .trailer
        .get(b"Info")
        .and_then(|info| info.as_reference())
        .and_then(|id| document.get_dictionary(id))
        .and_then(|info| info.get(b"Title"))
        .ok()
        .and_then(|title| title.as_str().ok())
        .map(|bytes| String::from_utf8_lossy(bytes).trim().to_owned())
        .filter(|t| !t.is_empty());
    if text.trim().is_empty() {
        return Err(ExtractError::Pdf(format!(
            "its {} pages hold no extractable text (a scan?)",
            pages.len()
        )));
    }
    Ok(Extracted {
        title,
        kind: ContentKind::Pdf,
        text: tidy(&text),
    })
}

/// The part of `text` a result shows when it is over `max_chars`: the
/// head and the tail, with a line in between saying what was left out
/// and where the whole text is.
pub fn window(text: &str, max_chars: usize, saved_to: Option<&std::path::Path>) -> String {
    let Some(cut) = herald_tools::split_head_tail(text, max_chars, 70) else {
        return text.to_owned();
    };
    let total = cut.total;
    let hint = match saved_to {
        Some(path) => format!(
            "the whole text ({total} characters, {} lines) is saved in {}; read the middle with read_file (offset, limit)",
            text.lines().count(),
            path.display()
        ),
        None => format!("the whole text is {total} characters; raise max_chars to see more"),
    };
    format!(
        "{}\n\n[... {} characters omitted; {hint} ...]\n\n{}",
        cut.head, cut.omitted, cut.tail
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fetched(content_type: Option<&str>, body: &[u8]) -> Fetched {
        Fetched {
            final_url: url::Url::parse("https://example.org/post").unwrap(),
            content_type: content_type.map(str::to_owned),
            body: bytes::Bytes::copy_from_slice(body),
        }
    }

    #[test]
    fn a_page_without_an_article_loses_its_scripts_and_navigation() {
        let page = r#"<html><head><title>Tiny</title><script>alert(1)</script></head>
            <body><nav><a href="/">Home</a></nav><p>Hello <a href="https://x.org/a">there</a>.</p>
            <footer>© footer</footer></body></html>"#;
        let out = extract(&fetched(Some("text/html"), page.as_bytes())).unwrap();
        assert!(
            out.text.contains("Hello [there](https://x.org/a)."),
            "{}",
            out.text
        );
        assert!(!out.text.contains("alert"), "{}", out.text);
        assert!(!out.text.contains("footer"), "{}", out.text);
        assert_eq!(out.title.as_deref(), Some("Tiny"));
    }

    #[test]
    fn text_and_json_are_kept_as_they_are() {
        let out = extract(&fetched(Some("text/plain"), b"line 1\n\nline 2")).unwrap();
        assert_eq!(out.kind, ContentKind::Text);
        assert_eq!(out.text, "line 1\n\nline 2");
        let out = extract(&fetched(None, br#"{"a": 1}"#)).unwrap();
        assert_eq!(out.kind, ContentKind::Json);
        assert_eq!(out.text, r#"{"a": 1}"#);
    }

    #[test]
    fn an_image_is_refused_with_what_to_do() {
        let err = extract(&fetched(Some("image/png"), b"\x89PNG")).unwrap_err();
        assert!(err.to_string().contains("image/png"), "{err}");
    }

    #[test]
    fn a_broken_pdf_is_an_error_not_a_crash() {
        let err = extract(&fetched(Some("application/pdf"), b"%PDF-1.4 garbage")).unwrap_err();
        assert!(err.to_string().contains("PDF"), "{err}");
    }

    #[test]
    fn the_window_keeps_head_and_tail_and_names_the_file() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let path = std::path::Path::new("/tmp/page.md");
        let out = window(&text, 1000, Some(path));
        assert!(out.starts_with("line 0\n"));
        assert!(out.ends_with("line 999\n"));
        assert!(out.contains("/tmp/page.md"), "{out}");
        assert!(out.contains("read_file"), "{out}");
        assert!(out.chars().count() < 1300);
        assert_eq!(window("short", 10, Some(path)), "short");
    }
}
