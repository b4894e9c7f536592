//! A per-item memo of the item's content token count, tagged with the encoding and media cost model
//! it was counted with.

use super::{Encoding, MediaModel};
use std::sync::atomic::{AtomicU64, Ordering};

/// Marks a stored count (an all-zero word is an empty memo).
const VALID: u64 = 1 << 63;

/// One byte naming what a count was made with: encoding tag (2 bits) and media model above it.
fn key(encoding: Encoding, media: MediaModel) -> u8 {
    encoding.tag() | (media.tag() << 2)
}

/// Cached content token count of one item. Cleared whenever the item's body may change; equal to any
/// other memo (it is a cache, not data).
#[derive(Debug, Default)]
pub struct TokenMemo(AtomicU64);

impl TokenMemo {
    /// The cached count for `encoding` (with the default, OpenAI media model), if present.
    pub fn get(&self, encoding: Encoding) -> Option<u32> {
        self.get_keyed(encoding, MediaModel::default())
    }

    /// Stores a count for `encoding` (with the default, OpenAI media model).
    pub fn set(&self, encoding: Encoding, count: u32) {
        self.set_keyed(encoding, MediaModel::default(), count);
    }

    /// The cached count for `encoding` and `media`, if present.
    pub fn get_keyed(&self, encoding: Encoding, media: MediaModel) -> Option<u32> {
        let v = self.0.load(Ordering::Relaxed);
        if v & VALID != 0 && ((v >> 32) & 0xff) as u8 == key(encoding, media) {
            Some(v as u32)
        } else {
            None
        }
    }

    /// Stores a count for `encoding` and `media`.
    pub fn set_keyed(&self, encoding: Encoding, media: MediaModel, count: u32) {
        let v = VALID | (u64::from(key(encoding, media)) << 32) | u64::from(count);
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
