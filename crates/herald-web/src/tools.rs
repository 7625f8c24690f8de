//! The `web_search` and `web_extract` tools.

use std::path::PathBuf;
use std::sync::Arc;

use herald_tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::extract::{self, Extracted};
use crate::fetch::Fetcher;
use crate::search::{self, Query, Searcher, TimeRange};

/// The toolset both tools belong to.
pub const WEB_TOOLSET: &str = "web";

/// URLs one `web_extract` call may read.
pub const MAX_URLS: usize = 5;

/// Characters per URL when the call does not say.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

/// The most characters per URL a call may ask for.
pub const MAX_MAX_CHARS: usize = 100_000;

/// Results per search when the call does not say, and at most.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;

/// `web_search`: asks the configured backend.
#[derive(Debug, Clone)]
pub struct WebSearch {
    searcher: Arc<Searcher>,
}

impl WebSearch {
    /// The tool over `searcher`.
    pub fn new(searcher: Searcher) -> Self {
        Self {
            searcher: Arc::new(searcher),
        }
    }
}

/// Arguments of `web_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchArgs {
    /// What to search for.
    pub query: String,
    /// Results (default 5, at most 20).
    pub limit: Option<usize>,
    /// Only results from these domains (subdomains included).
    pub include_domains: Option<Vec<String>>,
    /// No results from these domains.
    pub exclude_domains: Option<Vec<String>>,
    /// Only results from the last day, week, month or year.
    pub time_range: Option<TimeRange>,
}

impl TypedTool for WebSearch {
    type Args = WebSearchArgs;
    const NAME: &'static str = "web_search";
    const TOOLSET: &'static str = WEB_TOOLSET;
    const DESCRIPTION: &'static str = "Search the web; returns title, URL and snippet per result. Read a result with web_extract.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: WebSearchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let text = args.query.trim();
        if text.is_empty() {
            return Err(ToolError::new("query is empty; say what to search for"));
        }
        let query = Query {
            text: text.to_owned(),
            limit: args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
            include_domains: args.include_domains.unwrap_or_default(),
            exclude_domains: args.exclude_domains.unwrap_or_default(),
            time_range: args.time_range,
        };
        let hits = tokio::select! {
            hits = self.searcher.search(&query) => hits,
            () = ctx.cancel.cancelled() => return Err(ToolError::new("interrupted")),
        };
        match hits {
            Ok(hits) => Ok(search::render(&hits, self.searcher.backend())),
            Err(err) => Err(ToolError::new(err.to_string())),
        }
    }
}

/// `web_extract`: reads pages as clean text, no model in between.
#[derive(Debug, Clone)]
pub struct WebExtract {
    fetcher: Fetcher,
    /// Where whole texts over a call's budget are saved.
    spill_dir: PathBuf,
}

impl WebExtract {
    /// The tool fetching with `fetcher` and saving long texts in `spill_dir`.
    pub fn new(fetcher: Fetcher, spill_dir: PathBuf) -> Self {
        Self { fetcher, spill_dir }
    }

    async fn one(&self, url: &str, max_chars: usize) -> Result<String, String> {
        let fetched = self.fetcher.fetch(url).await.map_err(|e| e.to_string())?;
        let final_url = fetched.final_url.to_string();
        let page = tokio::task::spawn_blocking(move || extract::extract(&fetched))
            .await
            .map_err(|err| format!("reading the page failed: {err}"))?
            .map_err(|e| e.to_string())?;
        let total = page.text.chars().count();
        let saved = if total > max_chars {
            Some(self.save(&final_url, &page).await?)
        } else {
            None
        };
        let mut out = String::new();
        if let Some(title) = &page.title {
            out.push_str(&format!("# {title}\n"));
        }
        out.push_str(&format!("URL: {final_url}"));
        if final_url.trim_end_matches('/') != url.trim().trim_end_matches('/') {
            out.push_str(&format!(" (redirected from {})", url.trim()));
        }
        out.push_str(&format!(
            "\nContent: {}, {total} characters\n\n",
            page.kind.label()
        ));
        out.push_str(&extract::window(&page.text, max_chars, saved.as_deref()));
        Ok(out)
    }

    /// Saves the whole text under the spill directory, named after the
    /// host and the time, and returns its path.
    async fn save(&self, url: &str, page: &Extracted) -> Result<PathBuf, String> {
        let host: String = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| "page".to_owned())
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        let path = self.spill_dir.join(format!("{ms}-{host}.md"));
        tokio::fs::create_dir_all(&self.spill_dir)
            .await
            .map_err(|err| format!("could not create {}: {err}", self.spill_dir.display()))?;
        let mut text = format!("URL: {url}\n\n");
        text.push_str(&page.text);
        text.push('\n');
        tokio::fs::write(&path, text)
            .await
            .map_err(|err| format!("could not save the page to {}: {err}", path.display()))?;
        Ok(path)
    }
}

/// Arguments of `web_extract`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebExtractArgs {
    /// At most 5.
    pub urls: Vec<String>,
    /// Per URL (default 20000); longer: head and tail, the whole saved to a file.
    pub max_chars: Option<usize>,
}

impl TypedTool for WebExtract {
    type Args = WebExtractArgs;
    const NAME: &'static str = "web_extract";
    const TOOLSET: &'static str = WEB_TOOLSET;
    const DESCRIPTION: &'static str =
        "Read web pages as markdown (main content, links kept), PDFs as text, text/JSON as is.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: WebExtractArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        if args.urls.is_empty() || args.urls.len() > MAX_URLS {
            return Err(ToolError::new(format!(
                "urls holds {} URLs; give 1 to {MAX_URLS}",
                args.urls.len()
            )));
        }
        let max_chars = args
            .max_chars
            .unwrap_or(DEFAULT_MAX_CHARS)
            .clamp(1_000, MAX_MAX_CHARS);
        let reads =
            futures_util::future::join_all(args.urls.iter().map(|u| self.one(u, max_chars)));
        let results = tokio::select! {
            results = reads => results,
            () = ctx.cancel.cancelled() => return Err(ToolError::new("interrupted")),
        };
        let failed = results.iter().filter(|r| r.is_err()).count();
        let sections: Vec<String> = args
            .urls
            .iter()
            .zip(results)
            .map(|(url, result)| match result {
                Ok(text) => text,
                Err(err) => format!("URL: {}\nError: {err}", url.trim()),
            })
            .collect();
        let text = sections.join("\n\n---\n\n");
        if failed == sections.len() {
            Err(ToolError::new(text))
        } else {
            Ok(text)
        }
    }
}
