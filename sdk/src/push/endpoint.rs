//! Endpoints (scheme, host and port): how many requests go to one at once, and its circuit
//! breaker. An endpoint that keeps failing has its circuit opened: nothing is sent to it until
//! a cool-down passes, then one answer decides (a failure reopens it for twice as long, a
//! success closes it). Endpoints are kept while lanes use them or their circuit is open.

use std::sync::Arc;
use std::time::{Duration, Instant};

use foldhash::HashMap;
use parking_lot::Mutex;

use super::gate::Gate;

/// The shortest and longest an endpoint's circuit stays open.
const FIRST_COOL_DOWN: Duration = Duration::from_secs(1);
const LONGEST_COOL_DOWN: Duration = Duration::from_secs(60);
/// Past this many endpoints known, idle ones are forgotten.
const ENDPOINTS_KEPT: usize = 1024;

/// The endpoints known, by `scheme://host:port`.
pub(super) struct Endpoints {
    known: Mutex<HashMap<String, Arc<Endpoint>>>,
    /// Requests at once to one endpoint.
    per_endpoint: usize,
}

impl Endpoints {
    pub(super) fn new(per_endpoint: usize) -> Self {
        Self {
            known: Mutex::new(HashMap::default()),
            per_endpoint: per_endpoint.max(1),
        }
    }

    /// The endpoint `key`, made if it is not known.
    pub(super) fn get(&self, key: &str) -> Arc<Endpoint> {
        let mut known = self.known.lock();
        if let Some(endpoint) = known.get(key) {
            return endpoint.clone();
        }
        let endpoint = Arc::new(Endpoint::new(self.per_endpoint));
        known.insert(key.to_owned(), endpoint.clone());
        endpoint
    }

    /// Forget endpoints no lane uses and whose circuit is closed, once many are known.
    pub(super) fn forget_idle(&self) {
        let mut known = self.known.lock();
        if known.len() > ENDPOINTS_KEPT {
            known.retain(|_, e| Arc::strong_count(e) > 1 || e.breaker.lock().open_until.is_some());
        }
    }
}

/// Requests to one endpoint: how many at once, and its circuit.
pub(super) struct Endpoint {
    pub(super) permits: Gate,
    breaker: Mutex<Breaker>,
}

#[derive(Default)]
struct Breaker {
    /// Failures in a row.
    failures: u32,
    /// While open: until when nothing is sent. Still set once past: the next answer decides
    /// (a failure reopens it at once, a success closes it).
    open_until: Option<Instant>,
    cool_down: Duration,
}

impl Endpoint {
    fn new(permits: usize) -> Self {
        Self {
            permits: Gate::new(permits),
            breaker: Mutex::new(Breaker::default()),
        }
    }

    pub(super) fn is_open(&self) -> bool {
        self.breaker
            .lock()
            .open_until
            .is_some_and(|until| Instant::now() < until)
    }

    pub(super) fn succeeded(&self) {
        *self.breaker.lock() = Breaker::default();
    }

    /// Count a failure; `true` if it opened the circuit.
    pub(super) fn failed(&self, threshold: u32) -> bool {
        let mut breaker = self.breaker.lock();
        breaker.failures += 1;
        if breaker.open_until.is_none() && breaker.failures < threshold {
            return false;
        }
        breaker.cool_down = if breaker.open_until.is_some() {
            (breaker.cool_down * 2).clamp(FIRST_COOL_DOWN, LONGEST_COOL_DOWN)
        } else {
            FIRST_COOL_DOWN
        };
        breaker.open_until = Some(Instant::now() + breaker.cool_down);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_circuit_opens_after_failures_in_a_row_and_reopens_longer_after_a_failed_probe() {
        let endpoint = Endpoint::new(1);
        assert!(!endpoint.failed(3) && !endpoint.failed(3));
        assert!(endpoint.failed(3), "the third in a row opens it");
        assert!(endpoint.is_open());
        assert_eq!(endpoint.breaker.lock().cool_down, FIRST_COOL_DOWN);
        // The cool-down passed: a failed probe reopens it at once, for longer.
        endpoint.breaker.lock().open_until = Some(Instant::now());
        assert!(!endpoint.is_open());
        assert!(endpoint.failed(3));
        assert_eq!(endpoint.breaker.lock().cool_down, 2 * FIRST_COOL_DOWN);
        endpoint.succeeded();
        assert!(!endpoint.is_open() && !endpoint.failed(3));
    }

    #[test]
    fn idle_endpoints_are_forgotten_past_the_bound_but_not_open_or_used_ones() {
        let endpoints = Endpoints::new(8);
        let used = endpoints.get("http://used:80");
        endpoints.get("http://failing:80").failed(1);
        for i in 0..ENDPOINTS_KEPT {
            endpoints.get(&format!("http://idle-{i}:80"));
        }
        endpoints.forget_idle();
        let mut kept: Vec<String> = endpoints.known.lock().keys().cloned().collect();
        kept.sort();
        assert_eq!(kept, ["http://failing:80", "http://used:80"]);
        assert!(Arc::ptr_eq(&used, &endpoints.get("http://used:80")));
    }
}
