//! Images in tool results pass the registry like text does: kept when a
//! provider can take them, dropped with a note when not, and the note
//! survives the output limit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_protocol::{ImageData, ToolCall, ToolSpec};
use herald_tools::{AgentState, Tool, ToolContext, ToolRegistry, ToolResult};
use tokio_util::sync::CancellationToken;

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// Returns a long text and the images it was built with.
struct Shots {
    spec: ToolSpec,
    images: Vec<ImageData>,
}

impl Tool for Shots {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn toolset(&self) -> &'static str {
        "test"
    }
    fn read_only(&self) -> bool {
        true
    }
    fn call<'a>(
        &'a self,
        _args: serde_json::Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            ToolResult::ok(format!("HEAD {} TAIL", "x".repeat(5_000)))
                .with_images(self.images.clone())
        })
    }
}

async fn run(images: Vec<ImageData>) -> ToolResult {
    let mut registry = ToolRegistry::new(1_000);
    registry.register(Arc::new(Shots {
        spec: ToolSpec {
            name: "shots".into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        },
        images,
    }));
    let ctx = ToolContext::new(
        AgentState::new(std::env::temp_dir()),
        CancellationToken::new(),
    );
    let call = ToolCall {
        id: "c1".into(),
        name: "shots".into(),
        arguments: "{}".into(),
    };
    registry.execute(&call, &ctx).await
}

#[tokio::test]
async fn images_a_provider_takes_pass_and_others_leave_a_note_after_the_cut() {
    let oversized = format!(
        "{}{}",
        &PNG[..12],
        "A".repeat(herald_protocol::MAX_IMAGE_BYTES / 3 * 4 + 4)
    );
    let result = run(vec![
        ImageData::new("image/png", PNG),
        // Named wrongly by the tool: the bytes decide.
        ImageData::new("application/octet-stream", PNG),
        ImageData::new("image/png", oversized),
        ImageData::new("image/png", "%%%%"),
    ])
    .await;
    assert!(!result.is_error);
    assert_eq!(
        result.images,
        vec![
            ImageData::new("image/png", PNG),
            ImageData::new("image/png", PNG)
        ]
    );
    // The text was cut to the limit, and the notes come after the cut.
    assert!(result.content.starts_with("HEAD "), "{}", result.content);
    let notes: Vec<&str> = result.content.lines().rev().take(2).collect();
    assert_eq!(
        notes,
        [
            "[image dropped: its image/png data is not valid base64]",
            "[image dropped: image/png of 5.0 MB is over the 5 MB limit per image]",
        ]
    );
}

#[tokio::test]
async fn a_result_without_images_is_untouched() {
    let result = run(Vec::new()).await;
    assert!(result.images.is_empty());
    assert!(result.content.ends_with(" TAIL"), "{}", result.content);
}
