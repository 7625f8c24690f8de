//! The extension point around every tool call: hooks (`pre_tool` and
//! `post_tool` commands), learnings (recall on failure, capture of a fix)
//! and the session's own guards see each call of an agent before it runs
//! and after it finished. The registry runs them, so a call a script makes
//! through `execute_code` passes them exactly like one the model makes.

use std::path::Path;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_protocol::ToolCall;

use crate::ToolResult;

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
    /// Whether the registry marks the called tool read-only (false for an
    /// unknown tool): such a call changes no file, so the checkpoint
    /// snapshot before a turn need not be taken for it.
    pub read_only: bool,
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

/// The interceptors of one agent, in order, with the agent they serve:
/// what a [`crate::ToolContext`] carries so that every call of the agent,
/// direct or nested, passes them.
pub struct Interception {
    interceptors: Vec<Arc<dyn CallInterceptor>>,
    session_id: String,
    agent_id: String,
}

impl std::fmt::Debug for Interception {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interception")
            .field("interceptors", &self.interceptors.len())
            .field("session_id", &self.session_id)
            .field("agent_id", &self.agent_id)
            .finish()
    }
}

impl Interception {
    /// The interception of agent `agent_id` of `session_id`; `None` when
    /// there is nothing to run, so calls without interceptors pay nothing.
    pub fn new(
        interceptors: Vec<Arc<dyn CallInterceptor>>,
        session_id: &str,
        agent_id: &str,
    ) -> Option<Arc<Self>> {
        (!interceptors.is_empty()).then(|| {
            Arc::new(Self {
                interceptors,
                session_id: session_id.to_owned(),
                agent_id: agent_id.to_owned(),
            })
        })
    }

    /// Runs `call` through every interceptor around `run`: the `before`
    /// steps in order (the first block stops the rest and the call), then
    /// `run` on the call as they left it, then every `after` step.
    /// `read_only` says whether the registry marks the called tool
    /// read-only (see [`CallSite::read_only`]).
    pub(crate) async fn around<'a, F>(
        &self,
        cwd: &Path,
        read_only: bool,
        call: &ToolCall,
        run: impl FnOnce(ToolCall) -> F,
    ) -> ToolResult
    where
        F: std::future::Future<Output = (ToolCall, ToolResult)> + 'a,
    {
        let site = CallSite {
            session_id: &self.session_id,
            agent_id: &self.agent_id,
            cwd,
            read_only,
        };
        let mut effective = call.clone();
        let mut blocked = None;
        for interceptor in &self.interceptors {
            if let BeforeCall::Block(reason) = interceptor.before(site, &mut effective).await {
                blocked = Some(reason);
                break;
            }
        }
        let (effective, mut result) = match blocked {
            Some(reason) => (effective, ToolResult::error(reason)),
            None => run(effective).await,
        };
        for interceptor in &self.interceptors {
            interceptor.after(site, &effective, &mut result).await;
        }
        result
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
            call: &'a ToolCall,
            result: &'a mut ToolResult,
        ) -> BoxFuture<'a, ()> {
            Box::pin(async move {
                result.content.push_str(" +after ");
                result.content.push_str(&call.arguments);
            })
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

    /// Notes whether each call's site says read-only, and blocks it.
    #[derive(Default)]
    struct Sites(std::sync::Mutex<Vec<(String, bool)>>);
    impl CallInterceptor for Sites {
        fn before<'a>(
            &'a self,
            site: CallSite<'a>,
            call: &'a mut ToolCall,
        ) -> BoxFuture<'a, BeforeCall> {
            self.0
                .lock()
                .unwrap()
                .push((call.name.clone(), site.read_only));
            Box::pin(async { BeforeCall::Block("seen".into()) })
        }
    }

    #[tokio::test]
    async fn the_site_says_whether_the_registry_marks_the_tool_read_only() {
        let registry = crate::builtin::default_registry(10_000);
        let sites = Arc::new(Sites::default());
        let ctx = crate::ToolContext::new(
            crate::AgentState::new(std::env::temp_dir()),
            tokio_util::sync::CancellationToken::new(),
        )
        .with_interception(Interception::new(
            vec![Arc::clone(&sites) as Arc<dyn CallInterceptor>],
            "s",
            "root",
        ));
        for name in [
            "read_file",
            "search_files",
            "write_file",
            "terminal",
            "no_such_tool",
        ] {
            let call = ToolCall {
                name: name.into(),
                ..call()
            };
            assert!(registry.execute(&call, &ctx).await.is_error);
        }
        let seen = sites.0.lock().unwrap().clone();
        let expected: Vec<(String, bool)> = [
            ("read_file", true),
            ("search_files", true),
            ("write_file", false),
            ("terminal", false),
            // Unknown tools count as writing.
            ("no_such_tool", false),
        ]
        .into_iter()
        .map(|(n, r)| (n.to_owned(), r))
        .collect();
        assert_eq!(seen, expected);
    }

    fn call() -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        }
    }

    #[tokio::test]
    async fn the_call_runs_as_rewritten_and_after_steps_see_it() {
        let chain = Interception::new(vec![Arc::new(Rewrite)], "s", "root").unwrap();
        let result = chain
            .around(Path::new("/"), true, &call(), |c| async move {
                let out = format!("ran {}", c.arguments);
                (c, ToolResult::ok(out))
            })
            .await;
        assert_eq!(result.content, r#"ran {"path":"b"} +after {"path":"b"}"#);
    }

    #[tokio::test]
    async fn the_first_block_stops_the_rest_and_the_call() {
        let chain = Interception::new(
            vec![Arc::new(Rewrite), Arc::new(Blocker), Arc::new(Never)],
            "s",
            "root",
        )
        .unwrap();
        let result = chain
            .around(Path::new("/"), true, &call(), |_| async {
                panic!("the call ran")
            })
            .await;
        assert!(result.is_error);
        assert_eq!(result.content, r#"no +after {"path":"b"}"#);
        assert!(Interception::new(Vec::new(), "s", "root").is_none());
    }
}
