//! A per-item memo of the item's content token count, tagged with the encoding it was counted with.

use super::Encoding;
use std::sync::atomic::{AtomicU64, Ordering};

const VALID: u64 = 1 << 63;

/// Cached content token count of one item. Cleared whenever the item's body may change; equal to any
/// other memo (it is a cache, not data).
#[derive(Debug, Default)]
pub struct TokenMemo(AtomicU64);

impl TokenMemo {
    /// The cached count for `encoding`, if present.
    pub fn get(&self, encoding: Encoding) -> Option<u32> {
        let v = self.0.load(Ordering::Relaxed);
        if v & VALID != 0 && ((v >> 32) & 0xff) as u8 == encoding.tag() {
            Some(v as u32)
        } else {
            None
        }
    }

    /// Stores a count for `encoding`.
    pub fn set(&self, encoding: Encoding, count: u32) {
        let v = VALID | (u64::from(encoding.tag()) << 32) | u64::from(count);
        self.0.store(v, Ordering::Relaxed);
    }

    /// Forgets the cached count.
    pub fn clear(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

impl Clone for TokenMemo {
    fn clone(&self) -> Self {
        TokenMemo(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}

impl PartialEq for TokenMemo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
