//! Tool names as the model sees them: `mcp__<server>__<tool>`.

use std::collections::BTreeMap;

/// Longest tool name both wire APIs accept.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// FNV-1a, 64 bits: a stable hash (unlike `DefaultHasher`, which may change
/// between Rust releases) so exposed names stay the same across sessions.
fn fnv1a(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn sanitise(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn with_suffix(base: &str, original: &str) -> String {
    let suffix = format!("_{:08x}", fnv1a(original) as u32);
    let keep = MAX_TOOL_NAME_LEN
        .saturating_sub(suffix.len())
        .min(base.len());
    format!("{}{suffix}", &base[..keep])
}

/// The name the model sees for `tool` of `server`: `mcp__<server>__<tool>`
/// with every character outside `[A-Za-z0-9_-]` replaced by `_`, at most
/// [`MAX_TOOL_NAME_LEN`] characters (a longer one is cut and given a
/// suffix hashed from the original name). Uniqueness within a server is
/// [`exposed_names`]' job.
pub fn exposed_name(server: &str, tool: &str) -> String {
    let base = format!("mcp__{}__{}", sanitise(server), sanitise(tool));
    if base.len() <= MAX_TOOL_NAME_LEN {
        base
    } else {
        with_suffix(&base, tool)
    }
}

/// Exposed names for all of a server's tools, unique: tools whose
/// sanitised names collide (`a.b` and `a_b`) all get a hash suffix of their
/// original name, so the result does not depend on the order tools are
/// listed in. Returns `tool name -> exposed name`.
pub fn exposed_names<'a>(
    server: &str,
    tools: impl IntoIterator<Item = &'a str>,
) -> BTreeMap<String, String> {
    let mut groups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for tool in tools {
        groups
            .entry(exposed_name(server, tool))
            .or_default()
            .push(tool);
    }
    let mut names = BTreeMap::new();
    for (exposed, members) in &groups {
        if members.len() == 1 {
            names.insert(members[0].to_owned(), exposed.clone());
        } else {
            for tool in members {
                names.insert((*tool).to_owned(), with_suffix(exposed, tool));
            }
        }
    }
    // A suffixed name could (very unlikely) equal another tool's plain name;
    // extend such names until every one is distinct.
    let mut seen = std::collections::BTreeSet::new();
    for tool in names.keys().cloned().collect::<Vec<_>>() {
        let mut name = names[&tool].clone();
        let mut salt = 0u32;
        while !seen.insert(name.clone()) {
            salt += 1;
            name = with_suffix(&name, &format!("{tool}#{salt}"));
        }
        names.insert(tool, name);
    }
    names
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_prefixed() {
        assert_eq!(exposed_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(exposed_name("fs", "read-file"), "mcp__fs__read-file");
    }

    #[test]
    fn invalid_characters_are_replaced() {
        assert_eq!(exposed_name("s", "a.b c/é"), "mcp__s__a_b_c__");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_suffix() {
        let long = "x".repeat(100);
        let name = exposed_name("server", &long);
        assert_eq!(name.len(), MAX_TOOL_NAME_LEN);
        assert_eq!(name, exposed_name("server", &long));
        let other = exposed_name("server", &format!("{long}y"));
        assert_ne!(name, other);
        assert!(name.starts_with("mcp__server__xxx"));
    }

    #[test]
    fn collisions_get_distinct_suffixes() {
        let names = exposed_names("s", ["a.b", "a_b", "c"]);
        assert_eq!(names["c"], "mcp__s__c");
        assert_ne!(names["a.b"], names["a_b"]);
        assert!(names["a.b"].starts_with("mcp__s__a_b_"));
        // Independent of order.
        let again = exposed_names("s", ["c", "a_b", "a.b"]);
        assert_eq!(names, again);
        for name in names.values() {
            assert!(name.len() <= MAX_TOOL_NAME_LEN);
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
        }
    }
}
