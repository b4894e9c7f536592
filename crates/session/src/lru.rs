//! A per-session cache bounded by a count: values taken out for the length of a call and put
//! back after it, the least recently used dropped beyond the capacity.
//!
//! Hosts keep per-session work between calls with it (the Python binding its converted messages,
//! the proxy its last decoded request). A value is taken out while a call uses it, so a
//! concurrent call of the same session finds none and starts afresh; the last to finish puts its
//! own back.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Per-session values, at most a capacity of them.
pub struct SessionCache<V> {
    capacity: usize,
    sessions: Mutex<Sessions<V>>,
}

struct Sessions<V> {
    clock: u64,
    held: HashMap<String, (u64, V)>,
}

impl<V> SessionCache<V> {
    /// Keeps at most `capacity` sessions (at least one).
    pub fn new(capacity: usize) -> SessionCache<V> {
        SessionCache {
            capacity: capacity.max(1),
            sessions: Mutex::new(Sessions {
                clock: 0,
                held: HashMap::new(),
            }),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, Sessions<V>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a session's value out.
    pub fn take(&self, session: &str) -> Option<V> {
        self.sessions().held.remove(session).map(|(_, v)| v)
    }

    /// Puts a session's value back, dropping the least recently used beyond capacity (down to
    /// seven eighths of it, so that the sort is paid once per many calls). Values are dropped
    /// after the lock is released.
    pub fn put(&self, session: &str, value: V) {
        let dropped = {
            let mut s = self.sessions();
            s.clock += 1;
            let now = s.clock;
            s.held.insert(session.to_owned(), (now, value));
            if s.held.len() <= self.capacity {
                Vec::new()
            } else {
                let keep = (self.capacity - self.capacity / 8).max(1);
                let mut ages: Vec<(u64, String)> =
                    s.held.iter().map(|(k, (t, _))| (*t, k.clone())).collect();
                ages.sort_unstable();
                let excess = s.held.len() - keep;
                ages.into_iter()
                    .take(excess)
                    .filter_map(|(_, k)| s.held.remove(&k))
                    .collect::<Vec<_>>()
            }
        };
        drop(dropped);
    }

    /// Drops a session's value.
    pub fn forget(&self, session: &str) {
        let value = self.sessions().held.remove(session);
        drop(value);
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.sessions().held.len()
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
