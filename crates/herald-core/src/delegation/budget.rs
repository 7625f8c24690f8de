//! Token budgets of delegation trees. Each `delegate_task` call
//! opens a budget for the children it spawns; a nested call opens a child
//! budget, and usage added anywhere counts against every ancestor, so one cap
//! holds for the whole tree below it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A cap on the tokens (input + output) a delegation tree may spend.
#[derive(Debug)]
pub struct TokenBudget {
    /// 0 = unlimited (the budget still counts, for reporting).
    limit: u64,
    used: AtomicU64,
    parent: Option<Arc<TokenBudget>>,
}

impl TokenBudget {
    /// A budget of `limit` tokens (0 = unlimited) below `parent`.
    pub fn new(limit: u64, parent: Option<Arc<TokenBudget>>) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicU64::new(0),
            parent,
        })
    }

    /// Adds spent tokens here and in every enclosing budget.
    pub fn add(&self, tokens: u64) {
        self.used.fetch_add(tokens, Ordering::Relaxed);
        if let Some(parent) = &self.parent {
            parent.add(tokens);
        }
    }

    /// Tokens spent under this budget so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// The cap (0 = unlimited).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Whether spending `more` tokens now would pass this budget or an
    /// enclosing one: the `(used, limit)` pair it would pass, for the error
    /// message. Checked before a request is sent, with its estimated size.
    pub fn would_exceed(&self, more: u64) -> Option<(u64, u64)> {
        let used = self.used();
        if self.limit > 0 && used.saturating_add(more) > self.limit {
            return Some((used, self.limit));
        }
        self.parent.as_ref().and_then(|p| p.would_exceed(more))
    }

    /// Whether this budget or an enclosing one is spent. Returns the first
    /// exhausted `(used, limit)` pair, for the error message.
    pub fn exhausted(&self) -> Option<(u64, u64)> {
        let used = self.used();
        if self.limit > 0 && used >= self.limit {
            return Some((used, self.limit));
        }
        self.parent.as_ref().and_then(|p| p.exhausted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_rolls_up_and_any_exhausted_ancestor_stops_the_tree() {
        let root = TokenBudget::new(100, None);
        let child = TokenBudget::new(0, Some(Arc::clone(&root)));
        let grandchild = TokenBudget::new(50, Some(Arc::clone(&child)));
        grandchild.add(40);
        assert_eq!((root.used(), child.used(), grandchild.used()), (40, 40, 40));
        assert_eq!(grandchild.exhausted(), None);
        child.add(60);
        assert_eq!(root.exhausted(), Some((100, 100)));
        assert_eq!(grandchild.exhausted(), Some((100, 100)));
        let fresh = TokenBudget::new(1_000, None);
        let below = TokenBudget::new(0, Some(Arc::clone(&fresh)));
        below.add(900);
        assert_eq!(below.would_exceed(100), None);
        assert_eq!(below.would_exceed(101), Some((900, 1_000)));
        let unlimited = TokenBudget::new(0, None);
        unlimited.add(u64::MAX / 2);
        assert_eq!(unlimited.exhausted(), None);
    }
}
