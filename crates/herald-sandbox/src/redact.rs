//! Removing secrets from text: the known values (configured API keys and
//! herald's own secret-named variables) and the shapes of common tokens.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

/// Shortest known value worth redacting; shorter ones would hit ordinary
/// words.
const MIN_VALUE_LEN: usize = 8;

/// What replaces a known secret value.
const REDACTED: &str = "[REDACTED]";

/// One token shape. The group named `s`, when present, is the part that is
/// replaced (the rest of the match, such as `Bearer `, stays).
struct Shape {
    kind: &'static str,
    pattern: &'static str,
    /// Only redact when the secret part has a digit: real keys are random
    /// and nearly always do, long hyphenated words do not.
    needs_digit: bool,
    /// Literals every match contains: text without any of them is not
    /// searched with the patterns at all.
    anchors: &'static [&'static str],
    /// Whether the pattern ignores case, and so its anchors must be found
    /// in any letter case.
    any_case: bool,
}

const SHAPES: &[Shape] = &[
    Shape {
        // OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic (sk-ant-).
        kind: "api_key",
        pattern: r"\bsk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        needs_digit: true,
        anchors: &["sk-"],
        any_case: false,
    },
    Shape {
        kind: "stripe_key",
        pattern: r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{20,}",
        needs_digit: false,
        anchors: &["k_live_", "k_test_"],
        any_case: false,
    },
    Shape {
        kind: "github_token",
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        needs_digit: false,
        anchors: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        any_case: false,
    },
    Shape {
        kind: "aws_key",
        pattern: r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        needs_digit: false,
        anchors: &["AKIA", "ASIA"],
        any_case: false,
    },
    Shape {
        kind: "slack_token",
        pattern: r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
        needs_digit: true,
        anchors: &["xox"],
        any_case: false,
    },
    Shape {
        kind: "google_key",
        pattern: r"\bAIza[0-9A-Za-z_-]{35}",
        needs_digit: false,
        anchors: &["AIza"],
        any_case: false,
    },
    Shape {
        kind: "huggingface_token",
        pattern: r"\bhf_[A-Za-z0-9]{34,}",
        needs_digit: true,
        anchors: &["hf_"],
        any_case: false,
    },
    Shape {
        kind: "jwt",
        pattern: r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        needs_digit: false,
        anchors: &["eyJ"],
        any_case: false,
    },
    Shape {
        // A block cut off by truncation is redacted to the end.
        kind: "private_key",
        pattern: r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        needs_digit: false,
        anchors: &["-----BEGIN "],
        any_case: false,
    },
    Shape {
        kind: "bearer_token",
        pattern: r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9._~+/-]{20,}=*)",
        needs_digit: true,
        anchors: &["bearer"],
        any_case: true,
    },
];

/// Tells whether any shape can match (most tool output has none), far
/// cheaper than running the pattern set, and sparing the patterns'
/// compilation. Each anchor has a *key*: one of its bytes, chosen among
/// bytes rare in ordinary text, at a fixed offset. A few `memchr3` passes
/// find the key bytes; each hit is checked against the anchors keyed on it.
/// This replaced one `memmem` pass per anchor (17 of them, 6 instructions a
/// byte under callgrind), which had replaced an aho-corasick automaton (17
/// a byte: the anchors' first bytes are too common for its prefilter).
struct Prefilter {
    /// The key bytes, three at a time (`memchr3`; a short group repeats
    /// its first byte).
    groups: Vec<[u8; 3]>,
    /// For each byte value, the anchors keyed on it.
    by_key: Vec<Vec<Keyed>>,
    /// An empty anchor: every text may match.
    always: bool,
}

/// An anchor found through its key byte.
struct Keyed {
    anchor: &'static [u8],
    /// Where the key byte is in the anchor.
    offset: usize,
    any_case: bool,
}

/// Key bytes, preferred first: rare in prose and code alike.
const PREFERRED_KEYS: &[u8] = b"JzxI-_";

static PREFILTER: LazyLock<Prefilter> = LazyLock::new(|| {
    let mut by_key: Vec<Vec<Keyed>> = (0..256).map(|_| Vec::new()).collect();
    let mut always = false;
    for shape in SHAPES {
        for anchor in shape.anchors {
            let bytes = anchor.as_bytes();
            let Some(&first) = bytes.first() else {
                always = true;
                continue;
            };
            if shape.any_case {
                // Keyed on the first letter, in both cases.
                let mut keys = vec![first.to_ascii_lowercase(), first.to_ascii_uppercase()];
                keys.dedup();
                for key in keys {
                    by_key[usize::from(key)].push(Keyed {
                        anchor: bytes,
                        offset: 0,
                        any_case: true,
                    });
                }
                continue;
            }
            let offset = PREFERRED_KEYS
                .iter()
                .find_map(|&key| memchr::memchr(key, bytes))
                .unwrap_or(0);
            by_key[usize::from(bytes[offset])].push(Keyed {
                anchor: bytes,
                offset,
                any_case: false,
            });
        }
    }
    let keys: Vec<u8> = (0..=u8::MAX)
        .filter(|&byte| !by_key[usize::from(byte)].is_empty())
        .collect();
    let groups = keys
        .chunks(3)
        .map(|group| {
            let at = |i: usize| group.get(i).copied().unwrap_or(group[0]);
            [at(0), at(1), at(2)]
        })
        .collect();
    Prefilter {
        groups,
        by_key,
        always,
    }
});

/// Whether `text` may hold a token shape: whether it holds one of the
/// anchors (those of case-insensitive shapes in any letter case).
fn may_hold_a_shape(text: &str) -> bool {
    let prefilter = &*PREFILTER;
    if prefilter.always {
        return true;
    }
    let haystack = text.as_bytes();
    prefilter.groups.iter().any(|&[a, b, c]| {
        memchr::memchr3_iter(a, b, c, haystack).any(|at| {
            prefilter.by_key[usize::from(haystack[at])]
                .iter()
                .any(|keyed| {
                    at.checked_sub(keyed.offset)
                        .and_then(|start| haystack.get(start..start + keyed.anchor.len()))
                        .is_some_and(|candidate| {
                            if keyed.any_case {
                                candidate.eq_ignore_ascii_case(keyed.anchor)
                            } else {
                                candidate == keyed.anchor
                            }
                        })
                })
        })
    })
}

/// The shapes, compiled once.
struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
}

static COMPILED: LazyLock<Option<Compiled>> = LazyLock::new(|| {
    let patterns: Vec<&str> = SHAPES.iter().map(|s| s.pattern).collect();
    let set = RegexSet::new(&patterns).ok()?;
    let each = patterns
        .iter()
        .map(|p| Regex::new(p))
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    Some(Compiled { set, each })
});

/// Removes secret values from text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Known values, longest first.
    values: Vec<String>,
    /// The values as one alternation (when it compiles).
    literal: Option<Regex>,
}

impl Redactor {
    /// A redactor for `values` (configured keys; those shorter than 8
    /// characters are ignored) plus common token shapes.
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<String> = values
            .into_iter()
            .map(|v| v.trim().to_owned())
            .filter(|v| v.len() >= MIN_VALUE_LEN)
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        let literal = if values.is_empty() {
            None
        } else {
            let alternation: Vec<String> = values.iter().map(|v| regex::escape(v)).collect();
            Regex::new(&alternation.join("|")).ok()
        };
        Self { values, literal }
    }

    /// A redactor for the values of herald's own secret-named variables
    /// (see [`crate::secret_env_values`]) plus `extra` (configured keys).
    pub fn from_env(extra: impl IntoIterator<Item = String>) -> Self {
        Self::new(extra.into_iter().chain(crate::secret_env_values()))
    }

    /// How many known values it redacts (besides the token shapes).
    pub fn known_values(&self) -> usize {
        self.values.len()
    }

    /// `text` with every secret replaced: known values by `[REDACTED]`,
    /// token shapes by `[REDACTED:kind]`. Borrowed when nothing matched.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        if !self.values.is_empty() {
            let replaced = match &self.literal {
                Some(literal) => match literal.replace_all(&out, REDACTED) {
                    Cow::Owned(s) => Some(s),
                    Cow::Borrowed(_) => None,
                },
                None => self.replace_values_slowly(&out),
            };
            if let Some(replaced) = replaced {
                out = Cow::Owned(replaced);
            }
        }
        if !may_hold_a_shape(&out) {
            return out;
        }
        let Some(compiled) = COMPILED.as_ref() else {
            return out;
        };
        let hits = compiled.set.matches(&out);
        if !hits.matched_any() {
            return out;
        }
        for index in hits.iter() {
            if let (Some(shape), Some(re)) = (SHAPES.get(index), compiled.each.get(index))
                && let Some(replaced) = replace_shape(shape, re, &out)
            {
                out = Cow::Owned(replaced);
            }
        }
        out
    }

    /// Plain replacement, for value lists too large for one regex.
    fn replace_values_slowly(&self, text: &str) -> Option<String> {
        let mut changed = false;
        let mut text = text.to_owned();
        for value in &self.values {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), REDACTED);
                changed = true;
            }
        }
        changed.then_some(text)
    }
}

/// `text` with the matches of one shape replaced, or `None` when every
/// match was let through (`needs_digit`).
fn replace_shape(shape: &Shape, re: &Regex, text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut changed = false;
    for caps in re.captures_iter(text) {
        let Some(secret) = caps.name("s").or_else(|| caps.get(0)) else {
            continue;
        };
        if shape.needs_digit && !secret.as_str().bytes().any(|b| b.is_ascii_digit()) {
            continue;
        }
        out.push_str(&text[last..secret.start()]);
        out.push_str("[REDACTED:");
        out.push_str(shape.kind);
        out.push(']');
        last = secret.end();
        changed = true;
    }
    if !changed {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn shapes_only(text: &str) -> String {
        Redactor::default().redact(text).into_owned()
    }

    #[test]
    fn shapes_are_compiled() {
        assert!(COMPILED.is_some(), "a token pattern does not compile");
    }

    #[test]
    fn anchors_are_built_and_text_without_them_skips_the_patterns() {
        // Each anchor alone, anywhere in a text, is found.
        for anchor in SHAPES
            .iter()
            .filter(|s| !s.any_case)
            .flat_map(|s| s.anchors.iter())
        {
            assert!(
                may_hold_a_shape(&format!("some text {anchor} more")),
                "{anchor}"
            );
            assert!(may_hold_a_shape(anchor), "{anchor} alone");
        }
        assert!(!may_hold_a_shape("fn main() { println!(\"hello\"); }"));
        assert!(may_hold_a_shape("Authorization: BEARER x"));
        assert!(may_hold_a_shape("key sk-abc"));
        assert!(
            !may_hold_a_shape("SK-abc AKIa eyj"),
            "the other anchors keep their case"
        );
        assert!(may_hold_a_shape("x BeArEr"));
        assert!(!may_hold_a_shape("bearbearebeare"));
        assert_eq!(
            shapes_only("Authorization: BeArEr abc123def456ghi789jkl012"),
            "Authorization: BeArEr [REDACTED:bearer_token]"
        );
        // Every shape's own test below goes through this filter: a shape
        // whose anchors missed its tokens would fail there.
        assert_eq!(
            shapes_only("authorization: bearer abc123def456ghi789jkl012"),
            "authorization: bearer [REDACTED:bearer_token]"
        );
    }

    #[test]
    fn the_prefilter_finds_exactly_the_texts_holding_an_anchor() {
        // Texts made of anchor pieces, key bytes and near misses, checked
        // against a plain search for every anchor.
        let pieces = [
            "sk", "-", "_", "k", "gh", "p", "github", "pat", "AK", "AS", "IA", "xo", "x", "AI",
            "za", "hf", "ey", "J", "-----", "BEGIN", " ", "bea", "rer", "BEA", "RER", "é", "\n",
        ];
        let naive = |text: &str| {
            SHAPES.iter().any(|shape| {
                shape.anchors.iter().any(|anchor| {
                    if shape.any_case {
                        text.to_ascii_lowercase()
                            .contains(&anchor.to_ascii_lowercase())
                    } else {
                        text.contains(anchor)
                    }
                })
            })
        };
        let mut seed = 0x2545_F491_4F6C_DD1D_u64;
        let mut found = 0;
        for _ in 0..20_000 {
            let mut text = String::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            for _ in 0..(seed % 12) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push_str(pieces[(seed % pieces.len() as u64) as usize]);
            }
            let expected = naive(&text);
            found += usize::from(expected);
            assert_eq!(may_hold_a_shape(&text), expected, "{text:?}");
        }
        assert!(found > 100, "the texts hold anchors often enough: {found}");
    }

    #[test]
    fn known_values_are_replaced_and_short_ones_ignored() {
        let r = Redactor::new(["s3cr3t-value-123".to_owned(), "short".to_owned()]);
        assert_eq!(r.known_values(), 1);
        assert_eq!(
            r.redact("key=s3cr3t-value-123; again s3cr3t-value-123; short stays"),
            "key=[REDACTED]; again [REDACTED]; short stays"
        );
    }

    #[test]
    fn the_longest_known_value_wins() {
        let r = Redactor::new(["abcdefgh".to_owned(), "abcdefgh-ijkl".to_owned()]);
        assert_eq!(r.redact("x abcdefgh-ijkl y"), "x [REDACTED] y");
    }

    #[test]
    fn values_with_regex_characters_are_literal() {
        let r = Redactor::new(["a.b*c+d?(e)".to_owned()]);
        assert_eq!(r.redact("[a.b*c+d?(e)] aXbbcd"), "[[REDACTED]] aXbbcd");
    }

    #[test]
    fn openai_and_anthropic_keys() {
        for key in [
            "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
            "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWx_yz-0123456789",
            "sk-ant-api03-Zx9yW8vU7tS6rQ5pO4nM3lK2jI1hG0fE",
            "sk-svcacct-0123456789abcdefghijABCDEFGHIJ",
        ] {
            let text = format!("export OPENAI_API_KEY={key}\n");
            assert_eq!(
                shapes_only(&text),
                "export OPENAI_API_KEY=[REDACTED:api_key]\n",
                "{key}"
            );
        }
    }

    #[test]
    fn github_aws_slack_google_stripe_huggingface_tokens() {
        let cases = [
            (
                "ghp_0123456789abcdefghijABCDEFGHIJklmnop",
                "[REDACTED:github_token]",
            ),
            (
                "gho_0123456789abcdefghijABCDEFGHIJklmnop",
                "[REDACTED:github_token]",
            ),
            (
                "ghs_0123456789abcdefghijABCDEFGHIJklmnop",
                "[REDACTED:github_token]",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "[REDACTED:github_token]",
            ),
            ("AKIAIOSFODNN7EXAMPLE", "[REDACTED:aws_key]"),
            ("ASIAY34FZKBOKMUTVV7A", "[REDACTED:aws_key]"),
            (
                "xoxb-123456789012-1234567890123-abcdef",
                "[REDACTED:slack_token]",
            ),
            ("xoxp-0123456789-abcdefghij", "[REDACTED:slack_token]"),
            (
                "AIzaSyA-1234567890abcdefghijklmnopqrstu",
                "[REDACTED:google_key]",
            ),
            ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:stripe_key]"),
            (
                "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
                "[REDACTED:huggingface_token]",
            ),
        ];
        for (token, expected) in cases {
            assert_eq!(
                shapes_only(&format!("token: {token} end")),
                format!("token: {expected} end"),
                "{token}"
            );
        }
    }

    #[test]
    fn jwt_bearer_and_private_keys() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_eq!(shapes_only(&format!("t={jwt};")), "t=[REDACTED:jwt];");
        assert_eq!(
            shapes_only("Authorization: Bearer abc123def456ghi789jkl012"),
            "Authorization: Bearer [REDACTED:bearer_token]"
        );
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACB\n-----END OPENSSH PRIVATE KEY-----";
        assert_eq!(
            shapes_only(&format!("before\n{key}\nafter")),
            "before\n[REDACTED:private_key]\nafter"
        );
        assert_eq!(
            shapes_only("x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow...cut"),
            "x\n[REDACTED:private_key]"
        );
    }

    #[test]
    fn ordinary_prose_and_code_are_left_alone_and_borrowed() {
        let texts = [
            "The task-runner uses sk-learn style pipelines; see risk-assessment-for-everyone-involved.",
            "let skip = tokens.iter().filter(|t| t.kind == Kind::Key).count();",
            "git log --oneline | head; ghp is a prefix, gh_pages branch, AKIA prefix alone",
            "Bearer tokens are described in RFC 6750 section 2.1.",
            "Authorization: Bearer <token-goes-here-in-the-header>",
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
            "sk-short123",
            "xoxb-not-a-real-token-at-all",
            "eyJ alone, or eyJhbGciOiJIUzI1NiJ9 without the rest",
            "password: hunter2, api_key = os.environ['OPENAI_API_KEY']",
        ];
        let r = Redactor::new(["not-in-any-text-1234".to_owned()]);
        for text in texts {
            let out = r.redact(text);
            assert!(
                matches!(out, Cow::Borrowed(_)),
                "changed: {text:?} -> {out:?}"
            );
        }
    }

    #[test]
    fn several_kinds_in_one_text() {
        let r = Redactor::new(["my-configured-key-42".to_owned()]);
        let text = "a my-configured-key-42 b AKIAIOSFODNN7EXAMPLE c ghp_0123456789abcdefghijABCDEFGHIJklmnop";
        assert_eq!(
            r.redact(text),
            "a [REDACTED] b [REDACTED:aws_key] c [REDACTED:github_token]"
        );
    }
}
