//! What each agent of a delegation tree spent, its own and its subtree's:
//! every model request an agent makes is recorded in its meter, which adds
//! it to its own totals and to the subtree totals of the agent and every
//! ancestor. The root's subtree is the whole tree (`run.completed`'s
//! `tree_usage`), a child's is what `subagent.completed` and `agent_status`
//! report.
//!
//! Costs are kept as whole micro-dollars, each request's rounded once, so a
//! total is exactly the sum of the `usage` events (which show the same
//! rounded numbers) and a difference of two readings is exact.

use std::sync::{Arc, Mutex, PoisonError};

use herald_protocol::{Usage, UsageTotals};

/// Running totals with the cost in micro-dollars and the number of
/// requests whose model has no price.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
    pub cache_creation: u64,
    pub requests: u64,
    pub micro_usd: u64,
    /// Requests without a price: while any, the cost is unknown.
    pub unpriced: u64,
}

impl Counters {
    fn add(&mut self, usage: &Usage, cost: Option<f64>) {
        self.input += usage.input_tokens;
        self.output += usage.output_tokens;
        self.cached += usage.cached_tokens;
        self.cache_creation += usage.cache_creation_tokens;
        self.requests += 1;
        match cost {
            Some(usd) => self.micro_usd += micro_usd(usd),
            None => self.unpriced += 1,
        }
    }

    /// What was added since `earlier` (a reading of the same meter).
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            input: self.input.saturating_sub(earlier.input),
            output: self.output.saturating_sub(earlier.output),
            cached: self.cached.saturating_sub(earlier.cached),
            cache_creation: self.cache_creation.saturating_sub(earlier.cache_creation),
            requests: self.requests.saturating_sub(earlier.requests),
            micro_usd: self.micro_usd.saturating_sub(earlier.micro_usd),
            unpriced: self.unpriced.saturating_sub(earlier.unpriced),
        }
    }

    /// As events report them: the cost `None` when a request was unpriced.
    pub fn totals(&self) -> UsageTotals {
        UsageTotals {
            input: self.input,
            output: self.output,
            cached: self.cached,
            cache_creation: self.cache_creation,
            cost_usd: (self.unpriced == 0).then(|| self.micro_usd as f64 / 1_000_000.0),
            requests: self.requests,
        }
    }
}

/// A USD amount in whole micro-dollars (negative or NaN amounts count 0).
fn micro_usd(usd: f64) -> u64 {
    let micros = (usd * 1_000_000.0).round();
    if micros.is_finite() && micros > 0.0 {
        micros as u64
    } else {
        0
    }
}

/// One agent's meter (see the module docs).
#[derive(Debug, Default)]
pub struct UsageMeter {
    own: Mutex<Counters>,
    tree: Mutex<Counters>,
    parent: Option<Arc<UsageMeter>>,
}

impl UsageMeter {
    /// A meter whose requests also count in `parent`'s subtree.
    pub fn new(parent: Option<Arc<UsageMeter>>) -> Arc<Self> {
        Arc::new(Self {
            own: Mutex::default(),
            tree: Mutex::default(),
            parent,
        })
    }

    /// Records one answered request and its cost (`None`: no price).
    pub fn record(&self, usage: &Usage, cost: Option<f64>) {
        self.own
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(usage, cost);
        let mut meter = Some(self);
        while let Some(current) = meter {
            current
                .tree
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(usage, cost);
            meter = current.parent.as_deref();
        }
    }

    /// This agent's own requests so far.
    pub fn own(&self) -> Counters {
        *self.own.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This agent's and all its descendants' requests so far.
    pub fn tree(&self) -> Counters {
        *self.tree.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cached_tokens: input / 2,
            cache_creation_tokens: 1,
        }
    }

    #[test]
    fn requests_count_in_own_and_every_ancestors_subtree() {
        let root = UsageMeter::new(None);
        let child = UsageMeter::new(Some(Arc::clone(&root)));
        let grandchild = UsageMeter::new(Some(Arc::clone(&child)));
        let sibling = UsageMeter::new(Some(Arc::clone(&root)));
        root.record(&usage(100, 10), Some(0.000_1));
        child.record(&usage(200, 20), Some(0.1));
        grandchild.record(&usage(300, 30), Some(0.2));
        sibling.record(&usage(400, 40), Some(0.000_000_4));

        assert_eq!(root.own().requests, 1);
        assert_eq!(root.own().input, 100);
        let tree = root.tree().totals();
        assert_eq!((tree.input, tree.output, tree.cached), (1000, 100, 500));
        assert_eq!((tree.cache_creation, tree.requests), (4, 4));
        // 0.1 + 0.2 in micro-dollars: exact, no float noise; a cost below
        // half a micro-dollar rounds to 0.
        assert_eq!(root.tree().micro_usd, 100 + 100_000 + 200_000);
        assert_eq!(
            serde_json::to_value(tree).unwrap()["cost_usd"],
            serde_json::json!(0.3001)
        );
        assert_eq!(child.own().input, 200);
        assert_eq!(child.tree().input, 500);
        assert_eq!(grandchild.tree().input, 300);
        assert_eq!(sibling.tree().input, 400);
    }

    #[test]
    fn one_unpriced_request_makes_the_cost_unknown_up_the_tree() {
        let root = UsageMeter::new(None);
        let child = UsageMeter::new(Some(Arc::clone(&root)));
        root.record(&usage(10, 1), Some(0.5));
        let before = root.tree();
        child.record(&usage(10, 1), None);
        assert_eq!(root.own().totals().cost_usd, Some(0.5));
        assert_eq!(root.tree().totals().cost_usd, None);
        assert_eq!(child.tree().totals().cost_usd, None);
        let delta = root.tree().since(&before);
        assert_eq!((delta.requests, delta.input), (1, 10));
        assert_eq!(delta.totals().cost_usd, None);
        // A later reading without new unpriced requests is priced again.
        let later = root.tree();
        root.record(&usage(10, 1), Some(0.25));
        assert_eq!(root.tree().since(&later).totals().cost_usd, Some(0.25));
    }
}
