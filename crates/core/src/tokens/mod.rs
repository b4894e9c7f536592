//! Token counting: exact BPE counts for `o200k_base` and `cl100k_base` (vocabularies embedded in the
//! binary), a calibrated estimator for models whose tokenizer is not public, per-provider message
//! framing, media estimates, and per-item memoised counts so that recounting after an append costs
//! only the new item.

mod counter;
mod encoding;
mod estimate;
mod memo;
mod piece_cache;
mod pretokenize;

pub use counter::{ConversationCount, Framing, TokenCounter};
pub use encoding::Encoding;
pub use estimate::estimate_tokens;
pub use memo::TokenMemo;
pub use piece_cache::clear_piece_cache;
