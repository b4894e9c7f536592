//! Errors of the wire decoders and encoders: a decode error names the JSON-pointer path of the offending
//! value, so a bad request can be fixed without guessing.

use compact_core::model::Format;
use std::fmt;

/// A request (or message, or item) that does not have the shape its format requires.
///
/// `path` is a JSON pointer into the decoded value (e.g. `/messages/3/content/1/tool_use_id`); the
/// empty string is the whole value. `Display` prints both the path and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// JSON pointer of the offending value.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl DecodeError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        DecodeError {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The JSON pointer of the offending value.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The same error with `prefix` prepended to its path (for callers that decode a nested value).
    pub fn within(mut self, prefix: &str) -> Self {
        self.path = format!("{prefix}{}", self.path);
        self
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            self.path.as_str()
        };
        write!(f, "at {path}: {}", self.message)
    }
}

impl std::error::Error for DecodeError {}

/// Why a conversation could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The target is a transcript format, which Compact reads but never writes.
    #[error("`{0}` is not a wire format (expected openai-chat, openai-responses or anthropic)")]
    NotWireFormat(Format),
}
