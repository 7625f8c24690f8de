//! The `search_files` tool: regex search of file contents, or file lookup
//! by glob, over a tree walked like ripgrep (respecting `.gitignore`).

use std::io::BufReader;
use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use super::fsutil::{SEARCH_TIMEOUT, Stop, not_regular, open_regular, run_blocking};
use super::lines::LineCapReader;
use crate::{ToolContext, ToolError, TypedTool};

/// Default number of results.
const DEFAULT_LIMIT: u64 = 50;
/// Matched lines are cut to this many chars.
const MAX_TEXT_CHARS: usize = 300;
/// Only the first this many bytes of a line are searched; the rest of a
/// longer line streams past unread by the matcher, so a one-line 1 GiB file
/// needs no more memory than a short one.
const MAX_SEARCHED_LINE_BYTES: usize = 1024 * 1024;
/// Heap the searcher may use for its line buffer (beyond lines cut above,
/// this only guards against surprises).
const SEARCHER_HEAP_LIMIT: usize = 8 * MAX_SEARCHED_LINE_BYTES;
/// Read buffer per file.
const BUFFER_BYTES: usize = 64 * 1024;

/// The `search_files` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct SearchFiles;

/// What `search_files` looks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(description = "")]
#[serde(rename_all = "lowercase")]
pub enum SearchTarget {
    #[default]
    Content,
    Files,
}

/// Arguments of `search_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct SearchFilesArgs {
    /// Regex (content) or glob, e.g. **/mod.rs (files).
    pub pattern: String,
    /// content (default): search inside files; files: find files by path.
    #[schemars(description = "")]
    pub target: Option<SearchTarget>,
    /// Default ".".
    #[schemars(description = "")]
    pub path: Option<String>,
    /// Only names matching, e.g. *.py.
    pub file_glob: Option<String>,
    /// Default 50.
    #[schemars(description = "")]
    pub limit: Option<u64>,
}

impl TypedTool for SearchFiles {
    type Args = SearchFilesArgs;
    const NAME: &'static str = "search_files";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str = "Search files, skipping .gitignored and hidden ones. target=content (default): regex, results \
`path:line:text`; target=files: paths matching the glob. Use instead of grep/find.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: SearchFilesArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let shown = args.path.clone().unwrap_or_else(|| ".".to_owned());
        let root = ctx.state.resolve(&shown);
        run_blocking(ctx, Self::NAME, SEARCH_TIMEOUT, move |stop| {
            match std::fs::metadata(&root) {
                Err(_) => {
                    return Err(ToolError::new(format!(
                        "path not found: {shown} (resolved to {}); search an existing directory",
                        root.display()
                    )));
                }
                Ok(meta) if !meta.is_dir() && !meta.is_file() => {
                    return Err(not_regular(&shown, &meta));
                }
                Ok(_) => {}
            }
            let search = Search::new(root, &shown, &args, stop.clone())?;
            match args.target.unwrap_or_default() {
                SearchTarget::Content => search.content(&args.pattern),
                SearchTarget::Files => search.files(&args.pattern),
            }
        })
        .await
    }
}

/// One search: the walker settings and how result paths are shown.
struct Search {
    root: PathBuf,
    /// Prefix for result paths (the `path` argument), `None` for ".".
    prefix: Option<PathBuf>,
    shown: String,
    walker: WalkBuilder,
    limit: usize,
    stop: Stop,
}

impl Search {
    fn new(
        root: PathBuf,
        shown: &str,
        args: &SearchFilesArgs,
        stop: Stop,
    ) -> Result<Self, ToolError> {
        let mut walker = WalkBuilder::new(&root);
        walker.require_git(false).sort_by_file_name(|a, b| a.cmp(b));
        if let Some(glob) = args.file_glob.as_deref().filter(|g| !g.is_empty()) {
            let invalid =
                |e: ignore::Error| ToolError::new(format!("invalid file_glob '{glob}': {e}"));
            let mut overrides = OverrideBuilder::new(&root);
            overrides.add(glob).map_err(invalid)?;
            walker.overrides(overrides.build().map_err(invalid)?);
        }
        let trimmed = shown.trim_start_matches("./");
        let prefix = (!matches!(trimmed, "" | ".")).then(|| PathBuf::from(shown));
        let limit =
            usize::try_from(args.limit.unwrap_or(DEFAULT_LIMIT).max(1)).unwrap_or(usize::MAX);
        Ok(Self {
            root,
            prefix,
            shown: shown.to_owned(),
            walker,
            limit,
            stop,
        })
    }

    /// Regular files of the walk (FIFOs, sockets and devices are skipped),
    /// with the path shown for each. Ends early once the call was stopped.
    fn files_walked(&self) -> impl Iterator<Item = (PathBuf, String)> + '_ {
        self.walker
            .build()
            .take_while(|_| !self.stop.is_set())
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| {
                let path = e.into_path();
                let shown = self.display(&path);
                (path, shown)
            })
    }

    fn display(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        let shown = match &self.prefix {
            Some(prefix) if rel.as_os_str().is_empty() => prefix.clone(),
            Some(prefix) => prefix.join(rel),
            None if rel.as_os_str().is_empty() => {
                PathBuf::from(path.file_name().unwrap_or_default())
            }
            None => rel.to_path_buf(),
        };
        shown.to_string_lossy().into_owned()
    }

    fn content(&self, pattern: &str) -> Result<String, ToolError> {
        let matcher = RegexMatcherBuilder::new().build(pattern).map_err(|e| {
            ToolError::new(format!(
                "invalid regex '{pattern}': {e}. Escape special characters like ( [ {{ . * + ? with a backslash."
            ))
        })?;
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .heap_limit(Some(SEARCHER_HEAP_LIMIT))
            .build();
        let mut results: Vec<String> = Vec::new();
        let mut capped = false;
        let mut searched = 0usize;
        let mut files_cut = 0usize;
        for (path, shown) in self.files_walked() {
            // Opened without blocking; a file swapped for a FIFO, socket or
            // device since the walk saw it is skipped like unreadable ones.
            let Ok((file, _)) = open_regular(&path, &shown) else {
                continue;
            };
            searched += 1;
            let mut reader = LineCapReader::new(
                BufReader::with_capacity(BUFFER_BYTES, StopReader(file, &self.stop)),
                MAX_SEARCHED_LINE_BYTES,
            );
            let sink = Lossy(|line: u64, text: &str| {
                if results.len() >= self.limit {
                    capped = true;
                    return Ok(false);
                }
                results.push(format!("{shown}:{line}:{}", clip(text)));
                Ok(true)
            });
            // Unreadable files are skipped, as ripgrep does.
            let _ = searcher.search_reader(&matcher, &mut reader, sink);
            if reader.cut_lines() > 0 {
                files_cut += 1;
            }
            if capped || self.stop.is_set() {
                break;
            }
        }
        let cut_note = if files_cut > 0 {
            format!(
                "\n[{files_cut} file(s) have lines over {} MiB; only the first {} MiB of each such line was searched]",
                MAX_SEARCHED_LINE_BYTES >> 20,
                MAX_SEARCHED_LINE_BYTES >> 20
            )
        } else {
            String::new()
        };
        if results.is_empty() {
            return Ok(format!(
                "No matches for regex '{pattern}' in {} ({searched} files searched).{cut_note}",
                self.shown
            ));
        }
        let mut out = results.join("\n");
        if capped {
            out.push_str(&format!(
                "\n[results capped at {}; narrow the pattern or path, add file_glob, or raise limit]",
                self.limit
            ));
        }
        out.push_str(&cut_note);
        Ok(out)
    }

    fn files(&self, pattern: &str) -> Result<String, ToolError> {
        // A plain name without wildcards finds paths containing it.
        let wrapped;
        let glob_text = if pattern.contains(['*', '?', '[', '{']) {
            pattern
        } else {
            wrapped = format!("*{pattern}*");
            &wrapped
        };
        let glob = GlobBuilder::new(glob_text)
            .build()
            .map_err(|e| ToolError::new(format!("invalid glob pattern '{pattern}': {e}")))?
            .compile_matcher();
        let by_name = !pattern.contains('/');
        let mut found: Vec<String> = self
            .files_walked()
            .filter(|(path, _)| {
                let rel = path.strip_prefix(&self.root).unwrap_or(path);
                glob.is_match(rel)
                    || (by_name && path.file_name().is_some_and(|n| glob.is_match(n)))
            })
            .map(|(_, shown)| shown)
            .collect();
        if found.is_empty() {
            return Ok(format!("No files matching '{pattern}' in {}.", self.shown));
        }
        found.sort();
        let total = found.len();
        found.truncate(self.limit);
        let mut out = found.join("\n");
        if total > self.limit {
            out.push_str(&format!(
                "\n[{total} files matched; showing the first {}. Narrow the pattern or path, or raise limit]",
                self.limit
            ));
        }
        Ok(out)
    }
}

/// A file read that fails once the call was stopped, so a search of a huge
/// file ends soon after a timeout or interrupt.
struct StopReader<'a>(std::fs::File, &'a Stop);

impl std::io::Read for StopReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.1.check()?;
        self.0.read(buf)
    }
}

/// The matched line without its ending, cut to [`MAX_TEXT_CHARS`].
fn clip(text: &str) -> String {
    let text = text.trim_end_matches(['\n', '\r']);
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use herald_protocol::ToolCall;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::AgentState;
    use crate::builtin::default_registry;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(AgentState::new(dir.to_path_buf()), CancellationToken::new())
    }

    fn args(pattern: &str) -> SearchFilesArgs {
        SearchFilesArgs {
            pattern: pattern.into(),
            target: None,
            path: None,
            file_glob: None,
            limit: None,
        }
    }

    fn tree() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        std::fs::write(p.join(".gitignore"), "ignored.txt\nbuild/\n").unwrap();
        std::fs::write(p.join("a.rs"), "fn main() {\n    needle();\n}\n").unwrap();
        std::fs::write(p.join("ignored.txt"), "needle\n").unwrap();
        std::fs::write(p.join(".hidden"), "needle\n").unwrap();
        std::fs::create_dir_all(p.join("build")).unwrap();
        std::fs::write(p.join("build/x.rs"), "needle\n").unwrap();
        std::fs::create_dir_all(p.join("sub/deep")).unwrap();
        std::fs::write(p.join("sub/b.py"), "# needle here\n").unwrap();
        std::fs::write(p.join("sub/deep/mod.rs"), "no match\n").unwrap();
        tmp
    }

    #[tokio::test]
    async fn content_search_respects_gitignore_and_hidden() {
        let tmp = tree();
        let out = SearchFiles
            .run(args("needle"), &ctx(tmp.path()))
            .await
            .unwrap();
        assert_eq!(out, "a.rs:2:    needle();\nsub/b.py:1:# needle here");
    }

    #[tokio::test]
    async fn file_glob_and_path_narrow_the_search() {
        let tmp = tree();
        let ctx = ctx(tmp.path());
        let mut a = args("needle");
        a.file_glob = Some("*.py".into());
        assert_eq!(
            SearchFiles.run(a, &ctx).await.unwrap(),
            "sub/b.py:1:# needle here"
        );
        let mut a = args("needle");
        a.path = Some("sub".into());
        assert_eq!(
            SearchFiles.run(a, &ctx).await.unwrap(),
            "sub/b.py:1:# needle here"
        );
        let mut a = args("needle");
        a.path = Some("sub/b.py".into());
        assert_eq!(
            SearchFiles.run(a, &ctx).await.unwrap(),
            "sub/b.py:1:# needle here"
        );
    }

    #[tokio::test]
    async fn files_target_matches_globs_sorted() {
        let tmp = tree();
        let ctx = ctx(tmp.path());
        let mut a = args("*.rs");
        a.target = Some(SearchTarget::Files);
        assert_eq!(
            SearchFiles.run(a, &ctx).await.unwrap(),
            "a.rs\nsub/deep/mod.rs"
        );
        let mut a = args("**/mod.rs");
        a.target = Some(SearchTarget::Files);
        assert_eq!(SearchFiles.run(a, &ctx).await.unwrap(), "sub/deep/mod.rs");
        let mut a = args("deep");
        a.target = Some(SearchTarget::Files);
        assert_eq!(SearchFiles.run(a, &ctx).await.unwrap(), "sub/deep/mod.rs");
        let mut a = args("*.zig");
        a.target = Some(SearchTarget::Files);
        assert!(
            SearchFiles
                .run(a, &ctx)
                .await
                .unwrap()
                .starts_with("No files matching")
        );
    }

    #[tokio::test]
    async fn results_are_capped_at_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let text: String = (0..10).map(|i| format!("hit {i}\n")).collect();
        std::fs::write(tmp.path().join("many.txt"), text).unwrap();
        let mut a = args("hit");
        a.limit = Some(3);
        let out = SearchFiles.run(a, &ctx(tmp.path())).await.unwrap();
        assert_eq!(out.lines().count(), 4, "{out}");
        assert!(out.starts_with("many.txt:1:hit 0\nmany.txt:2:hit 1\nmany.txt:3:hit 2\n"));
        assert!(out.contains("results capped at 3"), "{out}");
    }

    #[tokio::test]
    async fn no_matches_is_not_an_error_but_bad_regex_and_path_are() {
        let tmp = tree();
        let ctx = ctx(tmp.path());
        let out = SearchFiles.run(args("zzz_nothing"), &ctx).await.unwrap();
        assert!(
            out.starts_with("No matches for regex 'zzz_nothing'"),
            "{out}"
        );
        let err = SearchFiles.run(args("foo("), &ctx).await.unwrap_err();
        assert!(err.0.contains("invalid regex 'foo('"), "{err}");
        let mut a = args("x");
        a.path = Some("missing".into());
        let err = SearchFiles.run(a, &ctx).await.unwrap_err();
        assert!(err.0.contains("path not found: missing"), "{err}");
    }

    #[tokio::test]
    async fn special_files_are_skipped_in_trees_and_refused_as_the_path() {
        let tmp = tree();
        let fifo = tmp.path().join("sub/pipe.rs");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(tmp.path().join("sock")).unwrap();
        let ctx = ctx(tmp.path());
        let started = std::time::Instant::now();
        let out = SearchFiles.run(args("needle"), &ctx).await.unwrap();
        assert_eq!(out, "a.rs:2:    needle();\nsub/b.py:1:# needle here");
        let mut a = args("needle");
        a.path = Some("sub/pipe.rs".into());
        let err = SearchFiles.run(a, &ctx).await.unwrap_err();
        assert!(
            err.0
                .starts_with("not a regular file: sub/pipe.rs is a FIFO"),
            "{err}"
        );
        let mut a = args("x");
        a.path = Some("/dev/zero".into());
        let err = SearchFiles.run(a, &ctx).await.unwrap_err();
        assert!(err.0.contains("character device"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[tokio::test]
    async fn long_lines_are_searched_in_their_first_mib_only() {
        let tmp = tempfile::tempdir().unwrap();
        let mut text = String::from("early needle");
        text.push_str(&"x".repeat(3 * MAX_SEARCHED_LINE_BYTES));
        text.push_str("late haystack\nnext needle line\n");
        std::fs::write(tmp.path().join("wide.txt"), &text).unwrap();
        std::fs::write(tmp.path().join("small.txt"), "needle\n").unwrap();
        let ctx = ctx(tmp.path());
        let out = SearchFiles.run(args("needle"), &ctx).await.unwrap();
        let clipped = format!("early needle{}…", "x".repeat(MAX_TEXT_CHARS - 12));
        assert_eq!(
            out,
            format!(
                "small.txt:1:needle\nwide.txt:1:{clipped}\nwide.txt:2:next needle line\n\
                 [1 file(s) have lines over 1 MiB; only the first 1 MiB of each such line was searched]"
            )
        );
        let out = SearchFiles.run(args("haystack"), &ctx).await.unwrap();
        assert!(out.starts_with("No matches for regex 'haystack'"), "{out}");
        assert!(out.contains("only the first 1 MiB"), "{out}");
    }

    #[tokio::test]
    async fn registry_dispatch_and_enum_validation() {
        let tmp = tree();
        let ctx = ctx(tmp.path());
        let registry = default_registry(10_000);
        assert!(registry.is_read_only("search_files"));
        let call = ToolCall {
            id: "1".into(),
            name: "search_files".into(),
            arguments: r#"{"pattern": "*.py", "target": "files"}"#.into(),
        };
        let result = registry.execute(&call, &ctx).await;
        assert!(!result.is_error, "{}", result.content);
        assert_eq!(result.content, "sub/b.py");
        let call = ToolCall {
            id: "2".into(),
            name: "search_files".into(),
            arguments: r#"{"pattern": "x", "target": "dirs"}"#.into(),
        };
        let result = registry.execute(&call, &ctx).await;
        assert!(result.is_error);
        assert!(
            result.content.contains("'target' must be one of"),
            "{}",
            result.content
        );
    }
}
