//! One rate-limit governor per provider endpoint, shared by every client
//! of the process (a delegation tree, batch workers): it bounds the
//! requests in flight and adapts the bound to the provider (AIMD).
//!
//! A 429 halves the bound (from the number actually in flight, so a burst
//! of children converges in a few rounds) and, with `Retry-After`, pauses
//! new requests until then; each success raises it again by about one per
//! round of requests. Only the first 429 of a round cuts: requests sent
//! before the cut were sent under the old bound. Waiting for a slot costs
//! no tokens; a request that waits is not sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The bound before any 429 when the configuration names none
/// (`[network] max_requests_in_flight`). Each request in flight holds a
/// connection, so this also bounds the connections one process opens to an
/// endpoint: a fan-out of 10,000 children opening 10,000 at once overflows
/// the accept queues of servers (and the proxies before them) and waits on
/// the kernel's SYN retries instead of on the model. The bound is also a
/// floor on a wide fan-out's wall time (requests × latency / bound): 1,024
/// keeps that floor well below the rest of the work at 10,000 children
/// while a few hundred more connections cost little memory (measured in
/// `docs/BENCHMARKS.md`, "10,000 children").
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// Waiters one release wakes at most (a raised bound fills up over the
/// next few releases).
const MAX_WAKE_PER_RELEASE: usize = 4;

/// The longest pause a `Retry-After` imposes on the whole process.
const MAX_PAUSE: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct State {
    /// Requests allowed in flight (fractional: additive increase).
    limit: f64,
    in_flight: usize,
    /// Incremented by each cut; a permit remembers the round it was
    /// taken in.
    round: u64,
    /// No request starts before this (`Retry-After`).
    paused_until: Option<Instant>,
}

/// The governor of one endpoint.
#[derive(Debug)]
pub struct Governor {
    endpoint: String,
    /// The bound never grows past this.
    ceiling: f64,
    state: Mutex<State>,
    freed: tokio::sync::Notify,
}

/// A slot in flight; released when dropped.
#[derive(Debug)]
pub struct Permit {
    governor: Arc<Governor>,
    round: u64,
}

/// What a cut did, for the `provider.throttled` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    /// Requests now allowed in flight.
    pub limit: usize,
    /// Requests in flight when it was cut.
    pub in_flight: usize,
    /// How long new requests wait (`Retry-After`), in ms.
    pub pause_ms: u64,
}

/// The governor of `endpoint` (one per process), allowing `ceiling`
/// requests in flight at most; the first call for an endpoint sets it.
pub fn for_endpoint(endpoint: &str, ceiling: usize) -> Arc<Governor> {
    static ALL: OnceLock<Mutex<HashMap<String, Arc<Governor>>>> = OnceLock::new();
    let mut all = ALL
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    Arc::clone(
        all.entry(endpoint.to_owned())
            .or_insert_with(|| Arc::new(Governor::new(endpoint, ceiling))),
    )
}

impl Governor {
    /// A governor allowing `ceiling` requests in flight at most.
    pub fn new(endpoint: &str, ceiling: usize) -> Self {
        Self {
            endpoint: endpoint.to_owned(),
            ceiling: ceiling.max(1) as f64,
            state: Mutex::new(State {
                limit: ceiling.max(1) as f64,
                in_flight: 0,
                round: 0,
                paused_until: None,
            }),
            freed: tokio::sync::Notify::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The endpoint it governs.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Requests allowed in flight now.
    pub fn limit(&self) -> usize {
        self.state().limit as usize
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.state().in_flight
    }

    /// Waits for a slot (and the end of a pause); `None` when cancelled.
    pub async fn acquire(self: &Arc<Self>, cancel: &CancellationToken) -> Option<Permit> {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            let pause = {
                let mut state = self.state();
                let now = Instant::now();
                match state.paused_until {
                    Some(until) if until > now => Some(until),
                    _ if state.in_flight < (state.limit as usize).max(1) => {
                        state.in_flight += 1;
                        return Some(Permit {
                            governor: Arc::clone(self),
                            round: state.round,
                        });
                    }
                    _ => None,
                }
            };
            match pause {
                Some(until) => tokio::select! {
                    () = cancel.cancelled() => return None,
                    () = tokio::time::sleep_until(until) => {}
                },
                None => tokio::select! {
                    () = cancel.cancelled() => return None,
                    () = &mut freed => {}
                },
            }
        }
    }

    /// Frees a slot and wakes as many waiters as there are free slots (one,
    /// unless successes raised the bound meanwhile), oldest first: waking
    /// every waiter on each release would cost thousands of wake-ups per
    /// request when thousands of children wait. A woken waiter that loses
    /// its slot to a newcomer waits again.
    fn release(&self) {
        let free = {
            let mut state = self.state();
            state.in_flight = state.in_flight.saturating_sub(1);
            (state.limit as usize)
                .max(1)
                .saturating_sub(state.in_flight)
        };
        for _ in 0..free.min(MAX_WAKE_PER_RELEASE) {
            self.freed.notify_one();
        }
    }
}

impl Permit {
    /// The request succeeded: the bound grows by about one per round.
    pub fn succeeded(&self) {
        let mut state = self.governor.state();
        state.limit = (state.limit + 1.0 / state.limit.max(1.0)).min(self.governor.ceiling);
    }

    /// The provider answered 429 (waiting `retry_after`). The first 429 of
    /// a round halves the bound and pauses new requests; `None` when this
    /// one was sent before an earlier cut (nothing more to do).
    pub fn rate_limited(&self, retry_after: Option<Duration>) -> Option<Throttle> {
        let throttle = {
            let mut state = self.governor.state();
            if self.round != state.round {
                return None;
            }
            let in_flight = state.in_flight;
            let base = state.limit.min(in_flight as f64).max(1.0);
            state.limit = (base / 2.0).floor().max(1.0);
            state.round += 1;
            let pause = retry_after.unwrap_or_default().min(MAX_PAUSE);
            if !pause.is_zero() {
                state.paused_until = Some(Instant::now() + pause);
            }
            Throttle {
                limit: state.limit as usize,
                in_flight,
                pause_ms: pause.as_millis() as u64,
            }
        };
        tracing::warn!(
            endpoint = %self.governor.endpoint,
            limit = throttle.limit,
            in_flight = throttle.in_flight,
            pause_ms = throttle.pause_ms,
            "rate limited: fewer requests in flight"
        );
        Some(throttle)
    }

    /// Whether the bound can still go down: while it can, a 429 is a
    /// signal to slow down, not a failed try.
    pub fn can_back_off(&self) -> bool {
        self.governor.limit() > 1
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.governor.release();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_429s_halves_once_per_round_and_successes_raise_it_again() {
        let governor = Arc::new(Governor::new("e", 64));
        let cancel = CancellationToken::new();
        let mut permits = Vec::new();
        for _ in 0..20 {
            permits.push(governor.acquire(&cancel).await.unwrap());
        }
        assert_eq!(governor.in_flight(), 20);
        // The whole burst answers 429: one cut, from the 20 in flight.
        let cuts: Vec<_> = permits
            .iter()
            .filter_map(|p| p.rate_limited(None))
            .collect();
        assert_eq!(cuts.len(), 1);
        assert_eq!(cuts[0].limit, 10);
        assert_eq!(cuts[0].in_flight, 20);
        permits.clear();
        // Ten may be in flight; the eleventh waits until one is released.
        for _ in 0..10 {
            permits.push(governor.acquire(&cancel).await.unwrap());
        }
        let waiting = {
            let governor = Arc::clone(&governor);
            let cancel = cancel.clone();
            tokio::spawn(async move { governor.acquire(&cancel).await.map(|_| ()) })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        // A 429 in the new round cuts again.
        assert_eq!(permits[0].rate_limited(None).unwrap().limit, 5);
        permits.truncate(4);
        assert!(waiting.await.unwrap().is_some());
        // Successes grow it back, about one per round of requests.
        for _ in 0..20 {
            permits[0].succeeded();
        }
        assert!(governor.limit() >= 7, "{}", governor.limit());
    }

    #[tokio::test]
    async fn many_waiters_each_get_a_slot_in_turn_and_the_bound_holds() {
        let governor = Arc::new(Governor::new("e", 4));
        let cancel = CancellationToken::new();
        let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..200)
            .map(|_| {
                let governor = Arc::clone(&governor);
                let cancel = cancel.clone();
                let peak = Arc::clone(&peak);
                tokio::spawn(async move {
                    let permit = governor.acquire(&cancel).await.unwrap();
                    peak.fetch_max(governor.in_flight(), std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    permit.succeeded();
                })
            })
            .collect();
        for task in tasks {
            tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("a waiter was never woken")
                .unwrap();
        }
        assert_eq!(peak.load(std::sync::atomic::Ordering::SeqCst), 4);
        assert_eq!(governor.in_flight(), 0);
    }

    #[test]
    fn the_first_client_of_an_endpoint_sets_its_ceiling() {
        let first = for_endpoint("http://ceiling.test/v1/chat/completions", 3);
        let second = for_endpoint("http://ceiling.test/v1/chat/completions", 900);
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(second.limit(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_pauses_new_requests_and_cancel_ends_a_wait() {
        let governor = Arc::new(Governor::new("e", 8));
        let cancel = CancellationToken::new();
        let permit = governor.acquire(&cancel).await.unwrap();
        let cut = permit.rate_limited(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(cut.pause_ms, 2000);
        drop(permit);
        let start = Instant::now();
        let _again = governor.acquire(&cancel).await.unwrap();
        assert!(start.elapsed() >= Duration::from_secs(2));
        // At the floor no further backing off is possible.
        assert!(!_again.can_back_off());
        let blocked = {
            let governor = Arc::clone(&governor);
            let cancel = cancel.clone();
            tokio::spawn(async move { governor.acquire(&cancel).await.is_none() })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        cancel.cancel();
        assert!(blocked.await.unwrap());
    }
}
