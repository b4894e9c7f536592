//! A per-session cache bounded by a count, and optionally by a total weight: values taken out for
//! the length of a call and put back after it, the least recently used dropped beyond either bound.
//!
//! Hosts keep per-session work between calls with it (the Python binding its converted messages,
//! the proxy its last decoded request). A value is taken out while a call uses it, so a
//! concurrent call of the same session finds none and starts afresh; the last to finish puts its
//! own back.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Per-session values, at most a capacity of them (and at most a total weight of them).
pub struct SessionCache<V> {
    capacity: usize,
    max_weight: usize,
    weigh: fn(&V) -> usize,
    sessions: Mutex<Sessions<V>>,
}

struct Sessions<V> {
    clock: u64,
    /// The sum of the held values' weights.
    weight: usize,
    held: HashMap<String, (u64, V)>,
}

impl<V> SessionCache<V> {
    /// Keeps at most `capacity` sessions (at least one).
    pub fn new(capacity: usize) -> SessionCache<V> {
        SessionCache::weighted(capacity, usize::MAX, |_| 0)
    }

    /// Keeps at most `capacity` sessions (at least one) whose values weigh at most `max_weight`
    /// together, each weighed by `weigh` (for example an estimate of its memory). A value heavier
    /// than the whole bound is not kept.
    pub fn weighted(capacity: usize, max_weight: usize, weigh: fn(&V) -> usize) -> SessionCache<V> {
        SessionCache {
            capacity: capacity.max(1),
            max_weight,
            weigh,
            sessions: Mutex::new(Sessions {
                clock: 0,
                weight: 0,
                held: HashMap::new(),
            }),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, Sessions<V>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a session's value out.
    pub fn take(&self, session: &str) -> Option<V> {
        let mut s = self.sessions();
        let (_, value) = s.held.remove(session)?;
        s.weight = s.weight.saturating_sub((self.weigh)(&value));
        Some(value)
    }

    /// Puts a session's value back, then drops the least recently used others while either bound
    /// is passed (down to seven eighths of the bound passed, so that the sort is paid once per many
    /// calls). Values are dropped after the lock is released.
    pub fn put(&self, session: &str, value: V) {
        let weight = (self.weigh)(&value);
        if weight > self.max_weight {
            return;
        }
        let dropped = {
            let mut s = self.sessions();
            s.clock += 1;
            let now = s.clock;
            s.weight += weight;
            let mut dropped = Vec::new();
            if let Some((_, old)) = s.held.insert(session.to_owned(), (now, value)) {
                s.weight = s.weight.saturating_sub((self.weigh)(&old));
                dropped.push(old);
            }
            if s.held.len() > self.capacity || s.weight > self.max_weight {
                let sessions = match s.held.len() > self.capacity {
                    true => (self.capacity - self.capacity / 8).max(1),
                    false => s.held.len(),
                };
                let weight = match s.weight > self.max_weight {
                    true => self.max_weight - self.max_weight / 8,
                    false => s.weight,
                };
                let mut ages: Vec<(u64, String)> =
                    s.held.iter().map(|(k, (t, _))| (*t, k.clone())).collect();
                ages.sort_unstable();
                for (_, key) in ages {
                    if s.held.len() <= sessions && s.weight <= weight {
                        break;
                    }
                    if key == session {
                        continue;
                    }
                    if let Some((_, old)) = s.held.remove(&key) {
                        s.weight = s.weight.saturating_sub((self.weigh)(&old));
                        dropped.push(old);
                    }
                }
            }
            dropped
        };
        drop(dropped);
    }

    /// Drops a session's value.
    pub fn forget(&self, session: &str) {
        let value = self.take(session);
        drop(value);
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.sessions().held.len()
    }

    /// The sum of the held values' weights.
    pub fn weight(&self) -> usize {
        self.sessions().weight
    }

    /// True when no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_sessions_are_dropped() {
        let cache = SessionCache::new(8);
        for i in 0..8 {
            cache.put(&format!("s{i}"), i);
        }
        assert_eq!(cache.len(), 8);
        // s0 used again: the oldest are now s1, s2.
        let v = cache.take("s0").unwrap();
        cache.put("s0", v);
        cache.put("s8", 8);
        assert_eq!(cache.len(), 7);
        assert!(cache.take("s1").is_none());
        assert!(cache.take("s2").is_none());
        assert_eq!(cache.take("s0"), Some(0));
        cache.forget("s8");
        assert!(cache.take("s8").is_none());
        let one = SessionCache::new(0);
        one.put("a", 1);
        one.put("b", 2);
        assert_eq!(one.len(), 1);
        assert_eq!(one.take("b"), Some(2));
        assert!(one.is_empty());
    }
}
