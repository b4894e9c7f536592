//! Wire formats and transcript importers: explicit, tested conversions between provider JSON and the
//! conversation model of `compact-core`.

pub mod error;
pub mod import;
pub mod overflow;
pub mod sse;
pub mod usage;
pub mod validate;
pub mod wire;

pub use error::{DecodeError, EncodeError};
pub use import::{ImportError, ImportMode, ImportOptions, ImportStats, ImportWarning, Imported};
pub use validate::{validate, validate_against, Rule, Violation};
pub use wire::{decode, encode, Encoded, Loss, LossKind};
