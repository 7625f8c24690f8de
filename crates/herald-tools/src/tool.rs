use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_protocol::{ImageData, ToolSpec};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::ToolContext;

/// What a tool call produced. Failures are results too: the model reads
/// `content` either way and `is_error` tells it (and the event stream) which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
    /// Images for models that take them (a screenshot). `content` should
    /// still describe each one: text-only models see only the text. The
    /// registry drops images a provider would refuse, with a note.
    pub images: Vec<ImageData>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    /// A failed call; the message should say what to do differently.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }

    /// This result with `images` attached.
    #[must_use]
    pub fn with_images(mut self, images: Vec<ImageData>) -> Self {
        self.images = images;
        self
    }
}

/// An error a tool returns to the model. The message is the whole result, so
/// it should name the problem and the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    /// Builds an error from anything printable.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl From<std::io::Error> for ToolError {
    fn from(err: std::io::Error) -> Self {
        Self(err.to_string())
    }
}

/// The object-safe interface the registry and the agent loop use.
pub trait Tool: Send + Sync + 'static {
    /// Name, description and argument schema sent to the model.
    fn spec(&self) -> &ToolSpec;
    /// The toolset this tool belongs to (`terminal`, `file`, ...).
    fn toolset(&self) -> &'static str;
    /// Read-only tools of one reply may run concurrently.
    fn read_only(&self) -> bool;
    /// Whether the tool is listed in requests. An unlisted tool can still
    /// be run through the registry (MCP tools past the schema budget are
    /// found with `mcp_search` and run with `mcp_call`).
    fn listed(&self) -> bool {
        true
    }
    /// Runs the call with already-validated JSON arguments.
    fn call<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult>;
}

/// The convenient way to write a tool: typed arguments whose JSON schema is
/// derived with schemars, and a handler returning `Result`.
pub trait TypedTool: Send + Sync + 'static {
    /// Arguments; doc comments on fields become the schema's descriptions.
    type Args: DeserializeOwned + JsonSchema + Send;
    const NAME: &'static str;
    const TOOLSET: &'static str;
    const DESCRIPTION: &'static str;
    const READ_ONLY: bool;

    /// Performs the call. `Err` becomes an error result for the model.
    fn run(
        &self,
        args: Self::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<String, ToolError>> + Send;
}

struct Typed<T: TypedTool> {
    inner: T,
    spec: ToolSpec,
}

/// Wraps a [`TypedTool`] into a registry entry, generating its schema once.
pub fn typed<T: TypedTool>(inner: T) -> Arc<dyn Tool> {
    let spec = ToolSpec {
        name: T::NAME.to_owned(),
        description: T::DESCRIPTION.to_owned(),
        parameters: schema_for::<T::Args>(),
    };
    Arc::new(Typed { inner, spec })
}

/// A compact, self-contained JSON schema for tool arguments: subschemas
/// inlined, no `$schema`/`title` noise (every byte is paid for on each turn).
fn schema_for<A: JsonSchema>() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<A>().to_value();
    strip_noise(&mut value);
    // The root description is the Rust doc comment of the argument struct;
    // the tool's own description already says it.
    if let Some(obj) = value.as_object_mut() {
        obj.remove("description");
    }
    if let Some(obj) = value.as_object_mut() {
        obj.entry("properties")
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
    }
    value
}

/// Removes what the model does not need: titles, formats, `minimum: 0` of
/// unsigned integers, and the `null` alternative of optional parameters
/// (absent and `null` are both accepted; optionality is `required`'s job).
fn strip_noise(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            map.remove("title");
            map.remove("$schema");
            map.remove("format");
            if map.get("minimum") == Some(&Value::from(0)) {
                map.remove("minimum");
            }
            // `#[schemars(description = "")]` keeps a field's Rust doc off
            // the wire; a `null` default says nothing `required` does not.
            if map.get("description") == Some(&Value::from("")) {
                map.remove("description");
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let single = types.remove(0);
                    map.insert("type".to_owned(), single);
                }
            }
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            for v in map.values_mut() {
                strip_noise(v);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_noise),
        _ => {}
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn toolset(&self) -> &'static str {
        T::TOOLSET
    }

    fn read_only(&self) -> bool {
        T::READ_ONLY
    }

    fn call<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let parsed: T::Args = match serde_json::from_value(args) {
                Ok(parsed) => parsed,
                Err(err) => {
                    return ToolResult::error(format!(
                        "invalid arguments for {}: {err}. {}",
                        T::NAME,
                        crate::validate::describe_parameters(&self.spec.parameters)
                    ));
                }
            };
            match self.inner.run(parsed, ctx).await {
                Ok(content) => ToolResult::ok(content),
                Err(err) => ToolResult::error(err.0),
            }
        })
    }
}
