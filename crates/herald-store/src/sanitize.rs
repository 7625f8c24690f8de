//! Turning whatever a person or a model typed into a safe FTS5 query.
//!
//! FTS5 has its own query language (`AND`, `OR`, `NOT`, `NEAR(...)`, `col:`,
//! `^`, `*`, `+`, parentheses, quotes), and almost any punctuation outside a
//! quoted string is a syntax error. So nothing from the input reaches FTS5
//! unquoted: every term becomes a double-quoted string, which FTS5 tokenizes
//! like the indexed text. A term such as `foo-bar`, `v1.2.3` or `config.toml`
//! therefore becomes a phrase that matches exactly that sequence of tokens.

/// Most terms kept from one query; the rest is ignored (a pasted paragraph
/// would otherwise build a huge, slow and useless AND query).
const MAX_TERMS: usize = 32;

/// Operators FTS5 recognises as bare words; dropped rather than searched for.
const OPERATORS: [&str; 4] = ["AND", "OR", "NOT", "NEAR"];

/// Characters that make up a search term.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Characters kept inside a term (so `foo-bar`, `v1.2.3`, `src/main.rs`
/// survive as one phrase) but trimmed from its ends.
fn is_joiner(c: char) -> bool {
    matches!(c, '-' | '.' | '/')
}

/// The quoted FTS5 terms of `raw`, in order, without duplicates. A term keeps
/// a prefix `*` only when the user wrote one right after a plain word
/// (`deploy*`); the store never adds prefix matching on its own, because
/// expanding every last word slows large indexes down and blurs ranking for
/// callers (models) that type whole words.
pub(crate) fn fts_terms(raw: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for chunk in raw.split_whitespace() {
        let pieces: Vec<&str> = chunk
            .split(|c: char| !is_word_char(c) && !is_joiner(c))
            .map(|p| p.trim_matches(is_joiner))
            .filter(|p| p.chars().any(char::is_alphanumeric))
            .collect();
        let wants_prefix = chunk
            .trim_end_matches(|c: char| !is_word_char(c) && c != '*')
            .ends_with('*');
        let last = pieces.len().saturating_sub(1);
        for (i, piece) in pieces.iter().enumerate() {
            if OPERATORS.contains(piece) {
                continue;
            }
            let mut term = format!("\"{}\"", piece.replace('"', "\"\""));
            if wants_prefix && i == last && piece.chars().all(is_word_char) {
                term.push('*');
            }
            if !terms.contains(&term) {
                terms.push(term);
            }
            if terms.len() == MAX_TERMS {
                return terms;
            }
        }
    }
    terms
}

/// Turns arbitrary text into an FTS5 `MATCH` expression that cannot raise a
/// syntax error: every term quoted, operators and punctuation dropped, terms
/// joined by spaces (all must match). `None` when nothing searchable is left
/// (empty input, `***`, a lone `AND`).
pub fn sanitize_fts_query(raw: &str) -> Option<String> {
    let terms = fts_terms(raw);
    (!terms.is_empty()).then(|| terms.join(" "))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn s(raw: &str) -> Option<String> {
        sanitize_fts_query(raw)
    }

    #[test]
    fn plain_words_are_quoted_and_anded() {
        assert_eq!(
            s("docker compose").as_deref(),
            Some(r#""docker" "compose""#)
        );
    }

    #[test]
    fn punctuation_and_operators_are_neutralised() {
        assert_eq!(s("C++").as_deref(), Some(r#""C""#));
        assert_eq!(s("(x").as_deref(), Some(r#""x""#));
        assert_eq!(s("a AND").as_deref(), Some(r#""a""#));
        assert_eq!(s("AND"), None);
        assert_eq!(s("***"), None);
        assert_eq!(s("\"unbalanced").as_deref(), Some(r#""unbalanced""#));
        assert_eq!(s("{x}").as_deref(), Some(r#""x""#));
        assert_eq!(s("NEAR("), None);
        assert_eq!(s("col:x").as_deref(), Some(r#""col" "x""#));
        assert_eq!(s("^x").as_deref(), Some(r#""x""#));
        assert_eq!(s(""), None);
        assert_eq!(s("  \t\n "), None);
        assert_eq!(s("- . / -- ..."), None);
    }

    #[test]
    fn joined_terms_stay_whole_as_phrases() {
        assert_eq!(s("foo-bar").as_deref(), Some(r#""foo-bar""#));
        assert_eq!(s("v1.2.3").as_deref(), Some(r#""v1.2.3""#));
        assert_eq!(s("config.toml.").as_deref(), Some(r#""config.toml""#));
        assert_eq!(s("--verbose").as_deref(), Some(r#""verbose""#));
        assert_eq!(
            s("src/main.rs:12").as_deref(),
            Some(r#""src/main.rs" "12""#)
        );
    }

    #[test]
    fn explicit_prefix_is_kept_only_on_plain_words() {
        assert_eq!(s("deploy*").as_deref(), Some(r#""deploy"*"#));
        assert_eq!(s("foo-bar*").as_deref(), Some(r#""foo-bar""#));
        assert_eq!(s("deploy").as_deref(), Some(r#""deploy""#));
    }

    #[test]
    fn lowercase_operator_words_are_ordinary_terms() {
        assert_eq!(
            s("rock and roll").as_deref(),
            Some(r#""rock" "and" "roll""#)
        );
    }

    #[test]
    fn duplicates_are_dropped_and_terms_capped() {
        assert_eq!(s("a a A").as_deref(), Some(r#""a" "A""#));
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(fts_terms(&many).len(), MAX_TERMS);
    }
}
