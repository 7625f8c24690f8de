//! Delegation: `delegate_task` runs isolated child agents —
//! synchronously in parallel batches or in the background — in a tree
//! bounded in breadth, depth, time and tokens, with their lifecycle tools,
//! journal and progress events.

mod apply;
mod args;
mod budget;
mod child;
pub mod definitions;
mod described;
mod inbox;
mod live;
mod messaging;
mod prompt;
mod result;
mod runtime;
mod scope;
mod tools;
pub mod worktree;

#[cfg(test)]
mod tests;

pub use apply::{AppliedAgent, apply_definitions};
pub use args::{ChildRole, ChildTask, DelegateArgs, TaskArg, child_tasks};
pub use budget::TokenBudget;
pub use definitions::{AgentDef, AgentDefs, DefSource};
pub use inbox::{Inbox, Notice, render_notices};
pub use messaging::{AgentFollowup, AgentSend, MessagingError, SentMessage};
pub use prompt::{DepthFacts, child_system_prompt};
pub use result::{ChildResult, ToolTraceEntry};
pub use runtime::{AgentOverview, AgentScope, Delegation, DelegationSetup};
pub use scope::{DELEGATION_TOOLS, NEVER_FOR_CHILDREN, child_registry};
pub use tools::{AgentCancel, AgentList, AgentStatus, AgentWait, DelegateTask};
