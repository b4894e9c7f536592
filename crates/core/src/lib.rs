//! Pure core of Compact: the provider-neutral conversation model, exact token counting and (in later
//! modules) truncation, normalisation, compaction strategies and plans.
//!
//! Architecture invariant: this crate performs no I/O and contains no async code. Everything that talks
//! to files, networks or clocks lives in the crates around it.
//!
//! ```
//! use compact_core::model::{Conversation, Item, Role};
//! use compact_core::tokens::{Encoding, TokenCounter};
//!
//! let mut conv = Conversation::default();
//! conv.push(Item::text(Role::User, "Fix the failing test in src/lib.rs"));
//! let counter = TokenCounter::new(Encoding::O200kBase);
//! assert!(counter.count_conversation(&conv).total > 0);
//! ```

pub mod boundary;
pub mod budget;
pub mod checkpoint;
pub mod facts;
pub mod memory;
pub mod model;
pub mod normalize;
pub mod partition;
pub mod plan;
pub mod policy;
pub mod provider;
pub mod redact;
pub mod registry;
pub mod reversible;
pub mod strategy;
pub mod tokens;
pub mod truncate;
