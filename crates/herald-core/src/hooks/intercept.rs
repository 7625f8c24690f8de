//! `pre_tool` and `post_tool` hooks around every tool call of the session
//! tree, as the first [`CallInterceptor`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use herald_protocol::ToolCall;
use herald_tools::ToolResult;
use serde_json::{Map, Value};

use super::decision::apply_tool_input;
use super::{HookEvent, HookSite, Hooks, parse_arguments};
use crate::intercept::{BeforeCall, CallInterceptor, CallSite};

/// What `pre_tool` left for the `after` step of a call.
#[derive(Default)]
struct Pending {
    /// A hook blocked it: the tool did not run, so `post_tool` does not either.
    blocked: bool,
    /// Context to append to its result.
    context: Option<String>,
}

/// Runs the hooks around calls.
pub(crate) struct HookInterceptor {
    hooks: Arc<Hooks>,
    /// By session and call id; an entry lives from `before` to `after`.
    pending: Mutex<HashMap<String, Pending>>,
}

impl HookInterceptor {
    pub(crate) fn shared(hooks: Arc<Hooks>) -> Arc<dyn CallInterceptor> {
        Arc::new(Self {
            hooks,
            pending: Mutex::new(HashMap::new()),
        })
    }

    fn remember(&self, site: CallSite<'_>, call: &ToolCall, pending: Pending) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key(site, call), pending);
    }
}

fn key(site: CallSite<'_>, call: &ToolCall) -> String {
    format!("{}\u{0}{}", site.session_id, call.id)
}

fn hook_site(site: CallSite<'_>) -> HookSite<'_> {
    HookSite {
        session_id: site.session_id,
        agent_id: site.agent_id,
        cwd: site.cwd,
    }
}

fn tool_fields(call: &ToolCall) -> Map<String, Value> {
    Map::from_iter([
        ("tool_name".to_owned(), Value::from(call.name.as_str())),
        ("tool_input".to_owned(), parse_arguments(&call.arguments)),
        ("tool_call_id".to_owned(), Value::from(call.id.as_str())),
    ])
}

impl CallInterceptor for HookInterceptor {
    fn before<'a>(
        &'a self,
        site: CallSite<'a>,
        call: &'a mut ToolCall,
    ) -> BoxFuture<'a, BeforeCall> {
        Box::pin(async move {
            if !self.hooks.has(HookEvent::PreTool) {
                return BeforeCall::Proceed;
            }
            let combined = self
                .hooks
                .fire(
                    HookEvent::PreTool,
                    hook_site(site),
                    Some(&call.name),
                    tool_fields(call),
                )
                .await;
            if let Some(reason) = combined.block {
                self.remember(
                    site,
                    call,
                    Pending {
                        blocked: true,
                        context: None,
                    },
                );
                return BeforeCall::Block(format!(
                    "blocked by a pre_tool hook: {reason}. The call did not run"
                ));
            }
            if let Some(changes) = &combined.tool_input {
                call.arguments = apply_tool_input(&call.arguments, changes);
            }
            if let Some(context) = combined.context_text() {
                self.remember(
                    site,
                    call,
                    Pending {
                        blocked: false,
                        context: Some(context),
                    },
                );
            }
            BeforeCall::Proceed
        })
    }

    fn after<'a>(
        &'a self,
        site: CallSite<'a>,
        call: &'a ToolCall,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let pending = if self.hooks.has(HookEvent::PreTool) {
                self.pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&key(site, call))
                    .unwrap_or_default()
            } else {
                Pending::default()
            };
            if pending.blocked {
                return;
            }
            let mut contexts: Vec<String> = pending.context.into_iter().collect();
            if self.hooks.has(HookEvent::PostTool) {
                let mut fields = tool_fields(call);
                fields.insert(
                    "tool_output".to_owned(),
                    Value::from(result.content.as_str()),
                );
                fields.insert("tool_error".to_owned(), Value::from(result.is_error));
                let combined = self
                    .hooks
                    .fire(
                        HookEvent::PostTool,
                        hook_site(site),
                        Some(&call.name),
                        fields,
                    )
                    .await;
                if let Some(output) = combined.tool_output.clone() {
                    result.content = output;
                }
                if let Some(reason) = &combined.block {
                    result.is_error = true;
                    contexts.push(format!(
                        "[hook] a post_tool hook flagged this result: {reason}"
                    ));
                }
                contexts.extend(combined.context_text());
            }
            for context in contexts {
                // The result is the newest message: appending keeps the
                // cached prefix.
                result.content.push_str("\n\n");
                result.content.push_str(&context);
            }
        })
    }
}
