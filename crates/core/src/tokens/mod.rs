//! Token counting: exact BPE counts for `o200k_base` and `cl100k_base` (vocabularies embedded in the
//! binary, no network), a calibrated estimator for models whose tokenizer is not public, per-provider
//! message framing, media estimates, and per-item memoised counts so that recounting after an append
//! costs only the new item.
//!
//! How an exact count is made, fastest path first:
//! 1. [`TokenCounter::content_tokens`] returns the item's memo ([`TokenMemo`]) when it holds a count
//!    for this encoding; the memo is cleared whenever the item's body may change.
//! 2. Otherwise the text is split into pieces exactly as the encoding's regex does, by a hand-written
//!    ASCII scanner that defers to the regex wherever a non-ASCII character could change the result.
//! 3. Each piece of up to 24 bytes is looked up in a per-thread piece-count cache (fixed 256 KiB per
//!    encoding, lock-free because it is never shared); misses and longer pieces run BPE
//!    (`bpe-openai`). The result equals tiktoken's `encode_ordinary(..).len()`: special-token
//!    strings such as `<|endoftext|>` are ordinary text.
//!
//! [`Encoding::count_uncached`] takes neither shortcut (the regex splits, BPE counts every piece): it
//! is the reference that tests and benchmarks compare against. Throughput figures are in BENCHMARKS.md.

mod counter;
mod encoding;
mod estimate;
mod media;
mod memo;
mod piece_cache;
mod pretokenize;

pub use counter::{ConversationCount, Framing, TokenCounter};
pub use encoding::Encoding;
pub use estimate::estimate_tokens;
pub use media::MediaModel;
pub use memo::TokenMemo;
pub use piece_cache::clear_piece_cache;
