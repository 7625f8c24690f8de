//! The extension point around every tool call: hooks (`pre_tool` and
//! `post_tool` commands) and learnings (recall on failure, capture of a
//! fix) see each call of every agent in a session tree before it runs and
//! after it finished, without the tool runner knowing either.

use std::path::Path;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_protocol::ToolCall;
use herald_tools::ToolResult;

/// Which agent a call belongs to, for interceptors shared by a whole
/// session tree (one instance serves the root and every subagent).
#[derive(Debug, Clone, Copy)]
pub struct CallSite<'a> {
    /// The session the call is recorded in (a subagent has its own).
    pub session_id: &'a str,
    /// `root` or the subagent's id.
    pub agent_id: &'a str,
    /// The agent's working directory.
    pub cwd: &'a Path,
}

/// What an interceptor decides before a call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeforeCall {
    /// Run the call (its arguments possibly rewritten in place).
    Proceed,
    /// Do not run it; the reason is the call's error result.
    Block(String),
}

/// Sees tool calls before and after they run. Interceptors run in the order
/// they were added; the first to block a call stops it (later ones and the
/// tool are skipped, the `after` step still runs on the blocked result).
pub trait CallInterceptor: Send + Sync {
    /// May rewrite `call.arguments` or block the call. The default lets it run.
    fn before<'a>(
        &'a self,
        _site: CallSite<'a>,
        _call: &'a mut ToolCall,
    ) -> BoxFuture<'a, BeforeCall> {
        Box::pin(async { BeforeCall::Proceed })
    }

    /// May change the finished call's result: rewrite it, or append lines
    /// (the result is the newest message, so appending keeps the prompt
    /// cache). The default leaves it.
    fn after<'a>(
        &'a self,
        _site: CallSite<'a>,
        _call: &'a ToolCall,
        _result: &'a mut ToolResult,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// Runs every interceptor's `before` step; `Some(reason)` when one blocked.
pub(crate) async fn before_call(
    interceptors: &[Arc<dyn CallInterceptor>],
    site: CallSite<'_>,
    call: &mut ToolCall,
) -> Option<String> {
    for interceptor in interceptors {
        if let BeforeCall::Block(reason) = interceptor.before(site, call).await {
            return Some(reason);
        }
    }
    None
}

/// Runs every interceptor's `after` step on `result`.
pub(crate) async fn after_call(
    interceptors: &[Arc<dyn CallInterceptor>],
    site: CallSite<'_>,
    call: &ToolCall,
    result: &mut ToolResult,
) {
    for interceptor in interceptors {
        interceptor.after(site, call, result).await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    struct Rewrite;
    impl CallInterceptor for Rewrite {
        fn before<'a>(
            &'a self,
            _site: CallSite<'a>,
            call: &'a mut ToolCall,
        ) -> BoxFuture<'a, BeforeCall> {
            Box::pin(async move {
                call.arguments = r#"{"path":"b"}"#.into();
                BeforeCall::Proceed
            })
        }
        fn after<'a>(
            &'a self,
            _site: CallSite<'a>,
            _call: &'a ToolCall,
            result: &'a mut ToolResult,
        ) -> BoxFuture<'a, ()> {
            Box::pin(async move { result.content.push_str(" +rewrite") })
        }
    }

    struct Blocker;
    impl CallInterceptor for Blocker {
        fn before<'a>(
            &'a self,
            _site: CallSite<'a>,
            _call: &'a mut ToolCall,
        ) -> BoxFuture<'a, BeforeCall> {
            Box::pin(async { BeforeCall::Block("no".into()) })
        }
    }

    struct Never;
    impl CallInterceptor for Never {
        fn before<'a>(
            &'a self,
            _site: CallSite<'a>,
            _call: &'a mut ToolCall,
        ) -> BoxFuture<'a, BeforeCall> {
            Box::pin(async { panic!("ran after a block") })
        }
    }

    #[tokio::test]
    async fn interceptors_run_in_order_and_the_first_block_stops_the_rest() {
        let site = CallSite {
            session_id: "s",
            agent_id: "root",
            cwd: Path::new("/"),
        };
        let mut call = ToolCall {
            id: "c".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        };
        let chain: Vec<Arc<dyn CallInterceptor>> =
            vec![Arc::new(Rewrite), Arc::new(Blocker), Arc::new(Never)];
        assert_eq!(
            before_call(&chain, site, &mut call).await.as_deref(),
            Some("no")
        );
        assert_eq!(call.arguments, r#"{"path":"b"}"#);
        let mut result = ToolResult::ok("out");
        after_call(&chain, site, &call, &mut result).await;
        assert_eq!(result.content, "out +rewrite");
    }
}
