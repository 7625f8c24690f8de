//! The interceptor that recalls learnings on failure and offers candidate
//! learnings after a fix. One instance serves a whole session tree.

use futures_util::future::BoxFuture;
use herald_protocol::ToolCall;
use herald_store::{Learning, LearningQuery, LearningScope, StoreError};
use herald_tools::{ToolResult, TypedTool};

use super::capture::Capture;
use super::recall::{
    FailureQuery, RECALL_CANDIDATES, RECALL_MAX, error_lines, failed, failure_text, relevant,
    render_block,
};
use super::target::Target;
use crate::StoreHandle;
use crate::intercept::{CallInterceptor, CallSite};

/// Recall and capture around every tool call (see the module doc of
/// `learnings`).
pub struct LearningInterceptor {
    store: StoreHandle,
    project: String,
    capture: Capture,
}

impl LearningInterceptor {
    /// An interceptor recalling from `store` the global learnings and those
    /// of `project` (see [`super::project_path`]).
    pub fn new(store: StoreHandle, project: String) -> Self {
        Self {
            store,
            project,
            capture: Capture::default(),
        }
    }

    /// The best learnings for a failure, counted as used; empty when none
    /// fits or the store fails (recall is help, never a new failure).
    async fn recall(&self, tool: &str, query: FailureQuery) -> Vec<Learning> {
        let (project, tool) = (self.project.clone(), tool.to_owned());
        let found = self
            .store
            .call(move |s| -> Result<Vec<Learning>, StoreError> {
                let candidates = s.search_learnings(&LearningQuery {
                    text: &query.text,
                    any_term: true,
                    scope: LearningScope::Project(&project),
                    tool: Some(&tool),
                    limit: RECALL_CANDIDATES,
                })?;
                let chosen: Vec<i64> = candidates
                    .iter()
                    .filter(|l| relevant(l, &query.words))
                    .take(RECALL_MAX)
                    .map(|l| l.id)
                    .collect();
                if chosen.is_empty() {
                    return Ok(Vec::new());
                }
                s.mark_learnings_used(&chosen)
            })
            .await;
        match found {
            Ok(Ok(learnings)) => learnings,
            Ok(Err(err)) => {
                tracing::warn!(%err, "recalling learnings failed");
                Vec::new()
            }
            Err(err) => {
                tracing::warn!(%err, "recalling learnings failed");
                Vec::new()
            }
        }
    }
}

/// What a call was, in a few words: its command or path, else its arguments.
fn call_summary(call: &ToolCall) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    ["command", "path"]
        .iter()
        .find_map(|key| args.get(*key)?.as_str().map(str::to_owned))
        .unwrap_or_else(|| call.arguments.clone())
}

impl CallInterceptor for LearningInterceptor {
    fn after<'a>(
        &'a self,
        site: CallSite<'a>,
        call: &'a ToolCall,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if call.name == <super::LearningTool as TypedTool>::NAME {
                return;
            }
            if !failed(result) {
                // The hot path: nothing pending means nothing to do.
                if !self.capture.any_pending() {
                    return;
                }
                let target = Target::of(&call.arguments, site.cwd);
                if let Some(line) = self.capture.succeeded(
                    site.session_id,
                    &call.name,
                    &target,
                    &call_summary(call),
                ) {
                    result.content.push_str(&line);
                }
                return;
            }
            let target = Target::of(&call.arguments, site.cwd);
            let query = FailureQuery::new(&target, &call.arguments, &result.content);
            let first_error = error_lines(&failure_text(&result.content))
                .into_iter()
                .next()
                .unwrap_or_default();
            self.capture.failed(
                site.session_id,
                &call.name,
                target,
                &call_summary(call),
                &first_error,
            );
            if let Some(block) = render_block(&self.recall(&call.name, query).await) {
                result.content.push_str(&block);
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::path::Path;

    use herald_store::NewLearning;

    use super::super::capture::CANDIDATE_PREFIX;
    use super::super::recall::RECALL_HEADER;
    use super::*;

    fn site<'a>(session: &'a str) -> CallSite<'a> {
        CallSite {
            session_id: session,
            agent_id: "root",
            cwd: Path::new("/p/app"),
            read_only: false,
        }
    }

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args.to_string(),
        }
    }

    fn exit(code: i64, output: &str) -> ToolResult {
        ToolResult::ok(serde_json::json!({"exit_code": code, "output": output}).to_string())
    }

    fn setup() -> (tempfile::TempDir, StoreHandle, LearningInterceptor) {
        let dir = tempfile::tempdir().unwrap();
        let store = StoreHandle::open(&dir.path().join("state.db")).unwrap();
        let interceptor = LearningInterceptor::new(store.clone(), "/p/app".into());
        (dir, store, interceptor)
    }

    async fn save(store: &StoreHandle, new: NewLearning) -> i64 {
        store
            .call(move |s| s.save_learning(&new))
            .await
            .unwrap()
            .unwrap()
            .learning
            .id
    }

    fn build_learning(project: Option<&str>) -> NewLearning {
        NewLearning {
            pattern: "build.sh: error: build cache missing".into(),
            error_type: "missing-setup".into(),
            fix: "run sh prepare.sh before sh build.sh".into(),
            tool: "terminal".into(),
            project: project.map(str::to_owned),
            ..NewLearning::default()
        }
    }

    #[tokio::test]
    async fn a_failure_gets_the_fitting_learnings_and_counts_their_use() {
        let (_dir, store, interceptor) = setup();
        let fit = save(&store, build_learning(Some("/p/app"))).await;
        // Fits, but belongs to another project.
        save(
            &store,
            NewLearning {
                fix: "the other project's fix".into(),
                error_type: "elsewhere".into(),
                ..build_learning(Some("/p/other"))
            },
        )
        .await;
        // Shares only "error".
        save(
            &store,
            NewLearning {
                pattern: "error: disk quota exceeded".into(),
                error_type: "quota".into(),
                fix: "clean the cache".into(),
                tool: "terminal".into(),
                ..NewLearning::default()
            },
        )
        .await;
        let failing = call(
            "terminal",
            serde_json::json!({"command": "sh build.sh --release"}),
        );
        let mut result = exit(3, "error: build cache missing, run prepare first\n");
        interceptor.after(site("s1"), &failing, &mut result).await;
        let (head, block) = result.content.split_once("\n\n").unwrap();
        assert!(head.starts_with("{\"exit_code\":3"), "{head}");
        assert_eq!(
            block,
            format!(
                "{RECALL_HEADER}\n- #{fit} terminal/missing-setup: build.sh: error: build cache missing \u{2192} fix: run sh prepare.sh before sh build.sh"
            )
        );
        let used = store
            .call(move |s| s.get_learning(fit))
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(used.times_used, 1);
        // The third failure suggests a skill.
        for _ in 0..2 {
            let mut again = exit(3, "error: build cache missing\n");
            interceptor.after(site("s1"), &failing, &mut again).await;
            result = again;
        }
        assert!(
            result
                .content
                .contains("[used 3 times: consider a \"Pitfalls\" entry in a skill"),
            "{}",
            result.content
        );
        // Another tool's failure with the same words: only learnings of that
        // tool (or of none) are recalled.
        let mut other = ToolResult::error("build cache missing in build.sh");
        interceptor
            .after(
                site("s1"),
                &call("read_file", serde_json::json!({"path": "build.sh"})),
                &mut other,
            )
            .await;
        assert!(!other.content.contains(RECALL_HEADER), "{}", other.content);
    }

    #[tokio::test]
    async fn a_success_after_a_failure_on_the_same_target_is_offered_once() {
        let (_dir, store, interceptor) = setup();
        let failing = call("terminal", serde_json::json!({"command": "sh build.sh"}));
        let mut failure = exit(3, "error: build cache missing\n");
        interceptor.after(site("s1"), &failing, &mut failure).await;
        assert!(!failure.content.contains(RECALL_HEADER), "no learnings yet");
        // A success elsewhere, or in another session: nothing appended.
        let mut unrelated = exit(0, "ok");
        let before = unrelated.content.clone();
        interceptor
            .after(
                site("s1"),
                &call("terminal", serde_json::json!({"command": "ls"})),
                &mut unrelated,
            )
            .await;
        interceptor
            .after(
                site("s2"),
                &call("terminal", serde_json::json!({"command": "sh build.sh"})),
                &mut unrelated,
            )
            .await;
        assert_eq!(unrelated.content, before);
        let fixed = call(
            "terminal",
            serde_json::json!({"command": "sh prepare.sh && sh build.sh"}),
        );
        let mut success = exit(0, "built\n");
        interceptor.after(site("s1"), &fixed, &mut success).await;
        let line = success.content.split_once("\n\n").unwrap().1;
        assert!(line.starts_with(CANDIDATE_PREFIX), "{line}");
        assert!(
            line.contains("`sh build.sh` failed earlier with \"error: build cache missing\""),
            "{line}"
        );
        assert_eq!(line.lines().count(), 1);
        let mut again = exit(0, "built\n");
        interceptor.after(site("s1"), &fixed, &mut again).await;
        assert!(!again.content.contains(CANDIDATE_PREFIX));
        // The learning tool's own calls are never intercepted.
        let mut own = ToolResult::error("save needs pattern");
        interceptor
            .after(
                site("s1"),
                &call("learning", serde_json::json!({"action": "save"})),
                &mut own,
            )
            .await;
        assert_eq!(own.content, "save needs pattern");
        assert!(!interceptor.capture.any_pending());
        drop(store);
    }

    #[tokio::test]
    async fn a_success_with_nothing_pending_never_touches_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = StoreHandle::open(&dir.path().join("state.db")).unwrap();
        // Block the store thread: a store round trip would hang the call.
        let (hold, held) = std::sync::mpsc::channel::<()>();
        store.send(move |_| {
            let _ = held.recv();
        });
        let interceptor = LearningInterceptor::new(store.clone(), "/p".into());
        let mut result = exit(0, "fine");
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            interceptor.after(
                site("s"),
                &call("terminal", serde_json::json!({"command": "true"})),
                &mut result,
            ),
        )
        .await
        .expect("no store round trip on success");
        hold.send(()).unwrap();
    }
}
