//! Choosing what compression keeps: a protected head, a tail, and the middle
//! that gets summarised. Pure functions over the history, so the rules that
//! keep a request valid (no tool call without its results) are unit-tested.

use herald_protocol::{Message, Role};

use super::{estimate_message_tokens, is_synthetic};

/// The limits a plan is drawn within (from `[compression]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanLimits {
    /// Leading messages always kept verbatim.
    pub protect_first_n: usize,
    /// Most messages the recent tail may hold.
    pub protect_last_n: usize,
    /// Most estimated tokens the recent tail may hold.
    pub tail_budget_tokens: u64,
}

/// Where the history is cut. `head_end <= tail_start <= recent_start <= len`.
/// Messages `[head_end, tail_start)` are the middle, replaced by a summary;
/// `[tail_start, len)` are kept; large tool outputs before `recent_start`
/// (outside the head) may be shortened. Every boundary falls on a message
/// that is not a tool result, so an assistant message and its results are
/// always on the same side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub head_end: usize,
    pub tail_start: usize,
    pub recent_start: usize,
}

impl Plan {
    /// Whether there is anything to summarise.
    pub fn has_middle(&self) -> bool {
        self.tail_start > self.head_end
    }
}

/// A cut before index `i` keeps every tool call with its results: `i` is the
/// end, or message `i` is not a tool result.
fn is_boundary(messages: &[Message], i: usize) -> bool {
    messages.get(i).is_none_or(|m| m.role != Role::Tool)
}

/// Draws the plan for `messages`:
/// - the head is the first `protect_first_n` messages, extended over any
///   results that belong to its last assistant message;
/// - the recent tail is the longest run of whole exchanges at the end within
///   both `protect_last_n` messages and `tail_budget_tokens` (at least the
///   last exchange);
/// - the kept tail reaches back further when needed to hold the latest user
///   message, so the task being worked on is never summarised away.
pub fn plan(messages: &[Message], limits: &PlanLimits) -> Plan {
    let len = messages.len();
    let mut head_end = limits.protect_first_n.min(len);
    while !is_boundary(messages, head_end) {
        head_end += 1;
    }
    let mut recent_start = len;
    let mut tokens = 0u64;
    let mut count = 0usize;
    let mut last_boundary = None;
    for i in (head_end..len).rev() {
        tokens += estimate_message_tokens(&messages[i]);
        count += 1;
        if !is_boundary(messages, i) {
            continue;
        }
        if last_boundary.is_none() {
            last_boundary = Some(i);
        }
        if count > limits.protect_last_n || tokens > limits.tail_budget_tokens {
            break;
        }
        recent_start = i;
    }
    if recent_start == len {
        // Nothing fit the limits: the last exchange is kept anyway.
        recent_start = last_boundary.unwrap_or(len);
    }
    let last_user = (head_end..len)
        .rev()
        .find(|&i| messages[i].role == Role::User && !is_synthetic(&messages[i]));
    let tail_start = match last_user {
        Some(user) if user < recent_start => user,
        _ => recent_start,
    };
    Plan {
        head_end,
        tail_start,
        recent_start,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_protocol::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        }
    }

    /// user, then `n` exchanges of (assistant with one call, its result).
    fn tool_loop(n: usize, output: usize) -> Vec<Message> {
        let mut messages = vec![Message::user("do the task")];
        for i in 0..n {
            let c = call(&format!("c{i}"));
            messages.push(Message::assistant("", vec![c.clone()]));
            messages.push(Message::tool_result(&c, "o".repeat(output), false));
        }
        messages
    }

    fn limits(first: usize, last: usize, budget: u64) -> PlanLimits {
        PlanLimits {
            protect_first_n: first,
            protect_last_n: last,
            tail_budget_tokens: budget,
        }
    }

    /// Every boundary of a plan is a valid cut.
    fn assert_valid(messages: &[Message], plan: &Plan) {
        assert!(plan.head_end <= plan.tail_start && plan.tail_start <= plan.recent_start);
        assert!(plan.recent_start <= messages.len());
        for cut in [plan.head_end, plan.tail_start, plan.recent_start] {
            assert!(
                is_boundary(messages, cut),
                "cut at {cut} splits a call: {plan:?}"
            );
        }
    }

    #[test]
    fn head_never_splits_a_call_from_its_results() {
        let a = call("a");
        let b = call("b");
        let messages = vec![
            Message::user("go"),
            Message::assistant("", vec![a.clone(), b.clone()]),
            Message::tool_result(&a, "1", false),
            Message::tool_result(&b, "2", false),
            Message::assistant("x", vec![]),
            Message::user("next"),
            Message::assistant("y", vec![]),
        ];
        let plan = plan(&messages, &limits(3, 1, 1_000));
        assert_eq!(plan.head_end, 4, "extended over both results");
        assert_valid(&messages, &plan);
    }

    #[test]
    fn tail_is_bounded_by_count_and_tokens_and_keeps_whole_exchanges() {
        let messages = tool_loop(20, 400); // each result ~100 tokens
        let by_count = plan(&messages, &limits(1, 5, 100_000));
        assert_valid(&messages, &by_count);
        assert_eq!(messages.len() - by_count.recent_start, 4);
        let by_tokens = plan(&messages, &limits(1, 100, 250));
        assert_valid(&messages, &by_tokens);
        assert_eq!(messages.len() - by_tokens.recent_start, 4);
        assert!(by_tokens.has_middle());
        // The only real user message is in the head, so it does not pull
        // the tail back.
        assert_eq!(by_tokens.tail_start, by_tokens.recent_start);
    }

    #[test]
    fn last_exchange_is_kept_even_over_budget() {
        let messages = tool_loop(5, 40_000);
        let plan = plan(&messages, &limits(1, 20, 10));
        assert_valid(&messages, &plan);
        assert_eq!(plan.recent_start, messages.len() - 2);
    }

    #[test]
    fn latest_user_message_is_always_in_the_tail() {
        let mut messages = tool_loop(3, 10);
        messages.push(Message::assistant("done", vec![]));
        messages.push(Message::user("now fix the bug"));
        let tail_user = messages.len() - 1;
        messages.extend(tool_loop(10, 400).into_iter().skip(1));
        let plan = plan(&messages, &limits(3, 4, 100_000));
        assert_valid(&messages, &plan);
        assert_eq!(plan.tail_start, tail_user);
        assert!(plan.recent_start > plan.tail_start);
        assert!(plan.has_middle());
        // A synthetic "[herald] ..." user message does not count as the task.
        let mut with_notice = messages.clone();
        with_notice.push(Message::user("[herald] The iteration limit is reached."));
        let p = super::plan(&with_notice, &limits(3, 4, 100_000));
        assert_eq!(p.tail_start, tail_user);
    }

    #[test]
    fn short_conversations_have_no_middle() {
        let messages = tool_loop(1, 10);
        let plan = plan(&messages, &limits(3, 20, 100_000));
        assert!(!plan.has_middle());
        assert_valid(&messages, &plan);
        let empty = super::plan(&[], &limits(3, 20, 100));
        assert_eq!(
            empty,
            Plan {
                head_end: 0,
                tail_start: 0,
                recent_start: 0
            }
        );
    }

    #[test]
    fn every_cut_is_valid_on_many_shapes() {
        // Exchanges with 1..4 parallel calls and varying sizes; plans at many
        // limits must never cut inside a call's results.
        let mut messages = vec![Message::user("start")];
        for i in 0..30 {
            let calls: Vec<ToolCall> = (0..(i % 4 + 1))
                .map(|k| call(&format!("c{i}_{k}")))
                .collect();
            messages.push(Message::assistant("", calls.clone()));
            for (k, c) in calls.iter().enumerate() {
                messages.push(Message::tool_result(c, "r".repeat(50 * (k + i % 7)), false));
            }
            if i % 9 == 8 {
                messages.push(Message::assistant("ok", vec![]));
                messages.push(Message::user(format!("follow-up {i}")));
            }
        }
        for first in 0..6 {
            for last in [1, 3, 7, 20] {
                for budget in [0, 50, 300, 5_000] {
                    let p = plan(&messages, &limits(first, last, budget));
                    assert_valid(&messages, &p);
                    assert!(p.head_end >= first.min(messages.len()));
                }
            }
        }
    }
}
