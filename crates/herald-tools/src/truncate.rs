/// The head and tail `text` keeps within `limit` chars, cut on char
/// boundaries; the head gets `head_percent` of the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadTail<'a> {
    pub head: &'a str,
    pub tail: &'a str,
    /// Chars between them, left out.
    pub omitted: usize,
    /// Chars of the whole text.
    pub total: usize,
}

/// Splits `text` into a head and a tail of `limit` chars together, or
/// `None` when it fits.
pub fn split_head_tail(text: &str, limit: usize, head_percent: usize) -> Option<HeadTail<'_>> {
    // No more bytes than the limit means no more chars: nothing to count.
    if text.len() <= limit {
        return None;
    }
    let total = text.chars().count();
    if total <= limit {
        return None;
    }
    let head_chars = limit * head_percent.min(100) / 100;
    let tail_chars = limit - head_chars;
    let head_end = text
        .char_indices()
        .nth(head_chars)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail_chars)
        .map_or(text.len(), |(i, _)| i);
    Some(HeadTail {
        head: &text[..head_end],
        tail: &text[tail_start..],
        omitted: total - head_chars - tail_chars,
        total,
    })
}

/// Keeps the head and tail of `text` when it is longer than `limit` chars,
/// with a marker in between saying how much was left out. The head gets
/// 60% of the budget because it usually holds the command echo or the
/// start of the file.
pub fn truncate_head_tail(text: &str, limit: usize) -> std::borrow::Cow<'_, str> {
    match split_head_tail(text, limit, 60) {
        None => std::borrow::Cow::Borrowed(text),
        Some(HeadTail {
            head,
            tail,
            omitted,
            total,
        }) => std::borrow::Cow::Owned(format!(
            "{head}\n\n[... {omitted} characters omitted; output was {total} characters. Narrow the command or read a range ...]\n\n{tail}"
        )),
    }
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
