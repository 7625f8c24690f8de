//! The `browser` toolset: one tool per action, all sharing the session's
//! [`Browser`]. Every failure is a result the model can act on.

use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_protocol::ToolSpec;
use herald_tools::{Tool, ToolContext, ToolError, ToolRegistry, ToolResult, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::browser::Running;
use crate::{Browser, BrowserError};

/// The toolset's name (`--toolsets browser`).
pub const TOOLSET: &str = "browser";

/// Default budget of a snapshot in characters.
const SNAPSHOT_CHARS: usize = 24_000;

/// Registers every browser tool on `registry`, all driving `browser`.
pub fn register(registry: &mut ToolRegistry, browser: &Arc<Browser>) {
    let b = || Arc::clone(browser);
    registry.register(herald_tools::typed(Navigate(b())));
    registry.register(herald_tools::typed(Snapshot(b())));
    registry.register(herald_tools::typed(Click(b())));
    registry.register(herald_tools::typed(Type(b())));
    registry.register(herald_tools::typed(Press(b())));
    registry.register(herald_tools::typed(Scroll(b())));
    registry.register(herald_tools::typed(Back(b())));
    registry.register(Screenshot::tool(b()));
    registry.register(herald_tools::typed(Console(b())));
    registry.register(herald_tools::typed(DialogTool(b())));
    registry.register(herald_tools::typed(Tabs(b())));
}

/// The names of the browser tools.
pub const TOOL_NAMES: &[&str] = &[
    "browser_navigate",
    "browser_snapshot",
    "browser_click",
    "browser_type",
    "browser_press",
    "browser_scroll",
    "browser_back",
    "browser_screenshot",
    "browser_console",
    "browser_dialog",
    "browser_tabs",
];

/// Runs `action` on the running browser (started if need be), one action
/// at a time, stopped by an interrupt; the start note leads the result.
async fn with_browser<T, F, Fut>(
    browser: &Browser,
    ctx: &ToolContext,
    action: F,
) -> Result<(T, Option<String>), BrowserError>
where
    F: FnOnce(Arc<Running>) -> Fut,
    Fut: Future<Output = Result<T, BrowserError>>,
{
    let work = async {
        let _one_at_a_time = browser.ops.lock().await;
        let (running, note) = browser.running(ctx).await?;
        let out = action(running).await?;
        Ok((out, note))
    };
    tokio::select! {
        out = work => out,
        () = ctx.cancel.cancelled() => Err(BrowserError::usage("interrupted by the user")),
    }
}

/// [`with_browser`] for a text result.
async fn text<F, Fut>(browser: &Browser, ctx: &ToolContext, action: F) -> Result<String, ToolError>
where
    F: FnOnce(Arc<Running>) -> Fut,
    Fut: Future<Output = Result<String, BrowserError>>,
{
    match with_browser(browser, ctx, action).await {
        Ok((text, None)) => Ok(text),
        Ok((text, Some(note))) => Ok(format!("{note}\n{text}")),
        Err(err) => Err(ToolError::new(err.to_string())),
    }
}

/// Arguments of `browser_navigate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct NavigateArgs {
    /// http(s) URL.
    pub url: String,
}

/// `browser_navigate`.
pub struct Navigate(Arc<Browser>);

impl TypedTool for Navigate {
    type Args = NavigateArgs;
    const NAME: &'static str = "browser_navigate";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str = "Open a URL in the browser's active tab (a real Chromium with saved logins; starts on first use) and wait for it to load. Private and local addresses are refused unless allowed. Then read the page with browser_snapshot.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: NavigateArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let setup = self.0.setup();
        text(&self.0, ctx, |r| async move {
            r.navigate(setup, &args.url).await
        })
        .await
    }
}

/// Arguments of `browser_snapshot`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct SnapshotArgs {
    /// Characters to return (default 24000); a longer page is saved whole to a file.
    pub max_chars: Option<usize>,
}

/// `browser_snapshot`.
pub struct Snapshot(Arc<Browser>);

impl TypedTool for Snapshot {
    type Args = SnapshotArgs;
    const NAME: &'static str = "browser_snapshot";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str = "The active tab's page as an accessibility outline: roles, names, states, and a ref such as [e12] on each element you can act on (browser_click, browser_type, browser_press, browser_scroll take refs). Refs stay valid until the page changes. An open dialog is shown at the top.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: SnapshotArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let setup = self.0.setup();
        let max = args.max_chars.unwrap_or(SNAPSHOT_CHARS).max(1_000);
        text(
            &self.0,
            ctx,
            |r| async move { r.snapshot(setup, max).await },
        )
        .await
    }
}

/// Arguments of a tool acting on one element.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct RefArgs {
    /// Element ref from browser_snapshot, e.g. e12.
    #[serde(rename = "ref")]
    pub reference: String,
}

/// `browser_click`.
pub struct Click(Arc<Browser>);

impl TypedTool for Click {
    type Args = RefArgs;
    const NAME: &'static str = "browser_click";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str =
        "Click an element by its ref. Says what followed: a navigation, a dialog, a new tab.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: RefArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let setup = self.0.setup();
        text(&self.0, ctx, |r| async move {
            r.click(setup, &args.reference).await
        })
        .await
    }
}

/// Arguments of `browser_type`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct TypeArgs {
    /// Element ref of a text field.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Text to type.
    pub text: String,
    /// Replace what the field holds (default true).
    pub clear: Option<bool>,
    /// Press Enter afterwards.
    pub submit: Option<bool>,
}

/// `browser_type`.
pub struct Type(Arc<Browser>);

impl TypedTool for Type {
    type Args = TypeArgs;
    const NAME: &'static str = "browser_type";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str = "Type text into a field by its ref (focuses it first).";
    const READ_ONLY: bool = false;

    async fn run(&self, args: TypeArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let setup = self.0.setup();
        let (clear, submit) = (args.clear.unwrap_or(true), args.submit.unwrap_or(false));
        text(&self.0, ctx, |r| async move {
            r.type_text(setup, &args.reference, &args.text, clear, submit)
                .await
        })
        .await
    }
}

/// Arguments of `browser_press`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct PressArgs {
    /// Key: Enter, Tab, Escape, ArrowDown, PageDown, a character, or a combination like Control+a.
    pub key: String,
    /// Element ref to focus first; default the focused element.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
}

/// `browser_press`.
pub struct Press(Arc<Browser>);

impl TypedTool for Press {
    type Args = PressArgs;
    const NAME: &'static str = "browser_press";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str = "Press a key in the page.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: PressArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let setup = self.0.setup();
        text(&self.0, ctx, |r| async move {
            r.press(setup, &args.key, args.reference.as_deref()).await
        })
        .await
    }
}

/// Which way to scroll.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Towards the top.
    Up,
    /// Towards the bottom.
    Down,
    /// Towards the start of the line.
    Left,
    /// Towards the end of the line.
    Right,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Self::Up => "up",
            Self::Down => "down",
            Self::Left => "left",
            Self::Right => "right",
        }
    }
}

/// Arguments of `browser_scroll`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct ScrollArgs {
    /// Default down; omit it with a ref to scroll that element into view.
    pub direction: Option<Direction>,
    /// Pixels (default most of the viewport).
    pub amount: Option<u32>,
    /// Element ref: scroll it into view, or scroll inside it with direction.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
}

/// `browser_scroll`.
pub struct Scroll(Arc<Browser>);

impl TypedTool for Scroll {
    type Args = ScrollArgs;
    const NAME: &'static str = "browser_scroll";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str =
        "Scroll the page (or an element), or bring an element into view.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: ScrollArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let direction = args.direction.map(Direction::as_str);
        text(&self.0, ctx, |r| async move {
            r.scroll(direction, args.amount, args.reference.as_deref())
                .await
        })
        .await
    }
}

/// Arguments of a tool without any.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct NoArgs {}

/// `browser_back`.
pub struct Back(Arc<Browser>);

impl TypedTool for Back {
    type Args = NoArgs;
    const NAME: &'static str = "browser_back";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str = "Go back to the previous page of the active tab.";
    const READ_ONLY: bool = false;

    async fn run(&self, _args: NoArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let setup = self.0.setup();
        text(&self.0, ctx, |r| async move { r.back(setup).await }).await
    }
}

/// Arguments of `browser_screenshot`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct ScreenshotArgs {
    /// The whole page instead of the viewport.
    pub full_page: Option<bool>,
    /// Element ref: only that element.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
}

/// `browser_screenshot`: an image result, so it implements [`Tool`] itself.
pub struct Screenshot {
    browser: Arc<Browser>,
    spec: ToolSpec,
}

impl Screenshot {
    fn tool(browser: Arc<Browser>) -> Arc<dyn Tool> {
        // The schema as `typed` would derive it, through a throwaway typed tool.
        let spec = herald_tools::typed(ScreenshotSchema).spec().clone();
        Arc::new(Self { browser, spec })
    }
}

/// Only carries `browser_screenshot`'s name, description and schema.
struct ScreenshotSchema;

impl TypedTool for ScreenshotSchema {
    type Args = ScreenshotArgs;
    const NAME: &'static str = "browser_screenshot";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str = "A PNG screenshot of the active tab (the viewport, the whole page, or one element), returned as an image.";
    const READ_ONLY: bool = true;

    async fn run(&self, _args: ScreenshotArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        Err(ToolError::new("not callable"))
    }
}

impl Tool for Screenshot {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn toolset(&self) -> &'static str {
        TOOLSET
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: ScreenshotArgs = match serde_json::from_value(args) {
                Ok(args) => args,
                Err(err) => {
                    return ToolResult::error(format!(
                        "invalid arguments for browser_screenshot: {err}"
                    ));
                }
            };
            let full_page = args.full_page.unwrap_or(false);
            let shot = with_browser(&self.browser, ctx, |r| async move {
                r.screenshot(full_page, args.reference.as_deref()).await
            })
            .await;
            match shot {
                Ok(((text, image), note)) => {
                    let text = match note {
                        Some(note) => format!("{note}\n{text}"),
                        None => text,
                    };
                    ToolResult::ok(text).with_images(vec![image])
                }
                Err(err) => ToolResult::error(err.to_string()),
            }
        })
    }
}

/// Arguments of `browser_console`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct ConsoleArgs {
    /// JavaScript to evaluate in the page first (needs approval unless allowed); its result is returned.
    pub expression: Option<String>,
    /// Every kept message, not only those since the last call.
    pub all: Option<bool>,
}

/// `browser_console`.
pub struct Console(Arc<Browser>);

impl TypedTool for Console {
    type Args = ConsoleArgs;
    const NAME: &'static str = "browser_console";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str = "The active tab's console messages and errors (new ones since the last call), and the result of evaluating a JavaScript expression.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: ConsoleArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let all = args.all.unwrap_or(false);
        text(&self.0, ctx, |r| async move {
            r.console(args.expression.as_deref(), all).await
        })
        .await
    }
}

/// Arguments of `browser_dialog`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct DialogArgs {
    /// OK (true) or Cancel (false).
    pub accept: bool,
    /// Text to answer a prompt() with.
    pub prompt_text: Option<String>,
}

/// `browser_dialog`.
pub struct DialogTool(Arc<Browser>);

impl TypedTool for DialogTool {
    type Args = DialogArgs;
    const NAME: &'static str = "browser_dialog";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str = "Answer the page's open alert, confirm or prompt dialog (shown by browser_snapshot and by the action that opened it).";
    const READ_ONLY: bool = false;

    async fn run(&self, args: DialogArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let setup = self.0.setup();
        text(&self.0, ctx, |r| async move {
            r.dialog(setup, args.accept, args.prompt_text.as_deref())
                .await
        })
        .await
    }
}

/// What `browser_tabs` does.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TabAction {
    /// List the tabs.
    #[default]
    List,
    /// Make `tab` the active tab.
    Switch,
    /// Close `tab` (default the active one).
    Close,
    /// Open a new tab (at `url`) and make it active.
    New,
}

impl TabAction {
    fn as_str(self) -> &'static str {
        match self {
            Self::List => "list",
            Self::Switch => "switch",
            Self::Close => "close",
            Self::New => "new",
        }
    }
}

/// Arguments of `browser_tabs`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct TabsArgs {
    /// Default list.
    pub action: Option<TabAction>,
    /// Tab name from the list, e.g. t2.
    pub tab: Option<String>,
    /// URL for new.
    pub url: Option<String>,
}

/// `browser_tabs`.
pub struct Tabs(Arc<Browser>);

impl TypedTool for Tabs {
    type Args = TabsArgs;
    const NAME: &'static str = "browser_tabs";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str =
        "List the browser's tabs, or switch to, close or open one. Actions work on the active tab.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: TabsArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let setup = self.0.setup();
        let action = args.action.unwrap_or_default().as_str();
        text(&self.0, ctx, |r| async move {
            r.tabs(setup, action, args.tab.as_deref(), args.url.as_deref())
                .await
        })
        .await
    }
}
