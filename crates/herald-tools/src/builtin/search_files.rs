//! The `search_files` tool: regex search of file contents, or file lookup
//! by glob, over a tree walked like ripgrep (respecting `.gitignore`).

use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use super::fsutil::blocking;
use crate::{ToolContext, ToolError, TypedTool};

/// Default number of results.
const DEFAULT_LIMIT: u64 = 50;
/// Matched lines are cut to this many chars.
const MAX_TEXT_CHARS: usize = 300;

/// The `search_files` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct SearchFiles;

/// What `search_files` looks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
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
    /// Regex (content) or glob such as *.rs, **/mod.rs (files).
    pub pattern: String,
    /// content (default): search inside files; files: find files by path.
    pub target: Option<SearchTarget>,
    /// Directory or file to search (default ".").
    pub path: Option<String>,
    /// Only search files whose name matches this glob, e.g. *.py.
    pub file_glob: Option<String>,
    /// Maximum results (default 50).
    pub limit: Option<u64>,
}

impl TypedTool for SearchFiles {
    type Args = SearchFilesArgs;
    const NAME: &'static str = "search_files";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str = "Search a directory tree, skipping .gitignored and hidden files. \
target=content (default): regex search of file contents, results `path:line:text`. \
target=files: find files whose path matches the glob pattern. Use instead of grep/find in terminal.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: SearchFilesArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let shown = args.path.clone().unwrap_or_else(|| ".".to_owned());
        let root = ctx.state.resolve(&shown);
        blocking(move || {
            if !root.exists() {
                return Err(ToolError::new(format!(
                    "path not found: {shown} (resolved to {}); search an existing directory",
                    root.display()
                )));
            }
            let search = Search::new(root, &shown, &args)?;
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
}

impl Search {
    fn new(root: PathBuf, shown: &str, args: &SearchFilesArgs) -> Result<Self, ToolError> {
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
        })
    }

    /// Files of the walk, with the path shown for each.
    fn files_walked(&self) -> impl Iterator<Item = (PathBuf, String)> + '_ {
        self.walker
            .build()
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
            .build();
        let mut results: Vec<String> = Vec::new();
        let mut capped = false;
        let mut searched = 0usize;
        for (path, shown) in self.files_walked() {
            searched += 1;
            let sink = Lossy(|line: u64, text: &str| {
                if results.len() >= self.limit {
                    capped = true;
                    return Ok(false);
                }
                results.push(format!("{shown}:{line}:{}", clip(text)));
                Ok(true)
            });
            // Unreadable files are skipped, as ripgrep does.
            let _ = searcher.search_path(&matcher, &path, sink);
            if capped {
                break;
            }
        }
        if results.is_empty() {
            return Ok(format!(
                "No matches for regex '{pattern}' in {} ({searched} files searched).",
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
