/// Keeps the head and tail of `text` when it is longer than `limit` chars,
/// with a marker in between saying how much was left out. Cuts fall on char
/// boundaries; the head gets 60% of the budget because it usually holds the
/// command echo or the start of the file.
pub fn truncate_head_tail(text: &str, limit: usize) -> std::borrow::Cow<'_, str> {
    // No more bytes than the limit means no more chars: nothing to count.
    if text.len() <= limit {
        return std::borrow::Cow::Borrowed(text);
    }
    let total = text.chars().count();
    if total <= limit {
        return std::borrow::Cow::Borrowed(text);
    }
    let head_chars = limit * 6 / 10;
    let tail_chars = limit - head_chars;
    let head_end = text
        .char_indices()
        .nth(head_chars)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail_chars)
        .map_or(text.len(), |(i, _)| i);
    let omitted = total - head_chars - tail_chars;
    std::borrow::Cow::Owned(format!(
        "{}\n\n[... {omitted} characters omitted; output was {total} characters. Narrow the command or read a range ...]\n\n{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(truncate_head_tail("abc", 3), "abc");
    }

    #[test]
    fn long_text_keeps_head_and_tail_with_marker() {
        let text: String = (0..1000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let out = truncate_head_tail(&text, 100);
        assert!(out.starts_with(&text[..60]));
        assert!(out.ends_with(&text[960..]));
        assert!(out.contains("900 characters omitted"));
    }

    #[test]
    fn multibyte_boundaries_are_respected() {
        let text = "é".repeat(50);
        let out = truncate_head_tail(&text, 10);
        assert!(out.starts_with("éééééé"));
        assert!(out.contains("40 characters omitted"));
    }
}
