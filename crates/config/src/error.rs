//! [`ConfigError`]: what is wrong with the configuration, naming the file, line and column, the
//! environment variable, or the field.

use compact_core::policy::PolicyError;
use compact_core::registry::RegistryError;
use std::path::PathBuf;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid YAML of the expected shape (unknown keys, wrong types).
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        /// The file name.
        file: String,
        /// 1-based line (0 when unknown).
        line: usize,
        /// 1-based column (0 when unknown).
        column: usize,
        /// What is wrong (names the field or key).
        message: String,
    },
    /// An environment variable has a bad value.
    #[error("environment variable {var}={value:?}: {reason}")]
    Env {
        /// The variable.
        var: String,
        /// Its value.
        value: String,
        /// Why it is rejected.
        reason: String,
    },
    /// A named field has a value outside its vocabulary (mode, strategy, role...).
    #[error("`{field}` = {value:?}: {reason}")]
    Field {
        /// The field.
        field: &'static str,
        /// The value.
        value: String,
        /// Why it is rejected.
        reason: String,
    },
    /// The model is not in the registry and no window was given.
    #[error("unknown model `{0}`: set max_context_tokens or add it under `models:`")]
    UnknownModel(String),
    /// A `models:` entry is invalid.
    #[error("models: {0}")]
    Registry(#[from] RegistryError),
    /// The resolved policy is invalid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}
