use std::path::Path;

/// The built-in identity and working rules. Tool-specific guidance lives in
/// each tool's description, not here, so this text never needs to change.
const IDENTITY: &str = "You are herald, an autonomous agent working on the user's machine through tools. \
Work until the task is done, then reply with a concise answer: what you did, what you found, and anything left open.";

const GUIDANCE: &str = "\
# Working rules
- Act through tools; do not ask for permission to use them. Read before you edit, and verify changes (run the build or tests) when you can.
- Independent read-only calls (read_file, search_files) may be issued together in one reply; they run in parallel.
- A tool error is information: read it, adjust the call, and continue. Do not repeat a failing call unchanged.
- Paths are relative to the working directory below unless absolute. Keep answers short; no need to restate tool output.";

/// Builds the system prompt for a new session: identity, working rules and
/// environment facts. It is built once and then replayed byte-identical.
pub fn build_system_prompt(cwd: &Path, model: &str) -> String {
    let date = herald_protocol::now_rfc3339();
    let date = date.get(..10).unwrap_or(&date);
    format!(
        "{IDENTITY}\n\n{GUIDANCE}\n\n# Environment\n- Working directory: {}\n- Platform: {} ({})\n- Date: {date}\n- Model: {model}\n",
        cwd.display(),
        std::env::consts::OS,
        std::env::consts::ARCH,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_names_environment_and_is_compact() {
        let prompt = build_system_prompt(Path::new("/tmp/work"), "m1");
        assert!(prompt.contains("Working directory: /tmp/work"));
        assert!(prompt.contains("Model: m1"));
        assert!(prompt.len() < 2000, "{}", prompt.len());
    }
}
