//! Configuration for Compact: a YAML file, `COMPACT_*` environment variables and command-line flags,
//! merged in that order (later wins) and resolved and validated once into an immutable [`Config`]
//! holding the [`compact_core::policy::Policy`], the model (from the registry, with `models:`
//! overrides) and plain-data sections for summarisers, telemetry, storage and redaction.
//!
//! Defaults are documented in one place: [`compact_core::policy`]. The file's shape is documented in
//! [`file`](crate#file-shape) below, the variables in [`env`].
//!
//! # File shape
//!
//! See the example in the `file` module source; unknown keys are errors naming the key, with the
//! file, line and column.
//!
//! ```
//! use compact_config::{Config, Overrides};
//!
//! let yaml = "model: gpt-4o\npolicy:\n  trigger_pct: 0.8\n  strategy: codex\n";
//! let flags = Overrides { keep_recent_turns: Some(3), ..Overrides::default() };
//! let config = Config::from_sources(Some(("compact.yaml", yaml)), &Overrides::default(), &flags).unwrap();
//! assert_eq!(config.policy().trigger_pct, 0.8);
//! assert_eq!(config.policy().keep_recent_turns, 3);
//! assert_eq!(config.policy().max_context_tokens, 128_000);
//!
//! let bad = Config::from_sources(Some(("compact.yaml", "policy:\n  triger_pct: 0.8\n")), &Overrides::default(), &flags);
//! let message = bad.unwrap_err().to_string();
//! assert!(message.contains("compact.yaml:2") && message.contains("triger_pct"), "{message}");
//! ```

pub mod env;
mod error;
mod file;
mod layer;
mod resolve;

pub use error::ConfigError;
pub use file::{Redaction, Storage, Telemetry, SUMMARY_STYLES};
pub use layer::Overrides;
pub use resolve::{Config, SummarizerKind, SummarizerSettings};
