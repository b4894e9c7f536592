//! Content parts: the pieces of a message or tool result (text, image, file/document, audio, opaque).

use super::Extra;
use serde_json::Value;

/// One content part. `extra` holds the wire fields the model does not interpret.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// What the part is.
    pub kind: PartKind,
    /// Unmodelled wire fields (e.g. `cache_control`, `annotations`), re-emitted for the same format.
    pub extra: Extra,
}

/// The kinds of content part.
#[derive(Debug, Clone, PartialEq)]
pub enum PartKind {
    /// Plain text.
    Text(String),
    /// An image.
    Image(Media),
    /// A file or document (PDF, plain-text document, uploaded file id).
    File(Media),
    /// Audio input.
    Audio(Media),
    /// A part whose type the model does not know; carried through untouched.
    Opaque(Value),
}

/// A media payload and what is known about it without decoding it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Media {
    /// Where the bytes are.
    pub source: MediaSource,
    /// MIME type, when declared.
    pub mime: Option<String>,
    /// File name, when declared.
    pub name: Option<String>,
    /// Detail level (`low`, `high`, `auto`) for images, when declared.
    pub detail: Option<String>,
    /// Pixel size when known (used for token estimates).
    pub size: Option<(u32, u32)>,
}

/// Where a media payload's bytes live.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum MediaSource {
    /// A URL (including `data:` URLs).
    Url(String),
    /// Inline base64 data.
    Base64(String),
    /// A provider file id.
    FileId(String),
    /// Inline text (e.g. an Anthropic plain-text document).
    Text(String),
    /// Nothing recognisable.
    #[default]
    None,
}

impl Part {
    /// A text part with no extra fields.
    pub fn text(text: impl Into<String>) -> Self {
        Part {
            kind: PartKind::Text(text.into()),
            extra: Extra::new(),
        }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.kind {
            PartKind::Text(t) => Some(t),
            _ => None,
        }
    }
}

impl MediaSource {
    /// Approximate decoded payload size in bytes (base64 and data URLs are measured, others 0).
    pub fn approx_bytes(&self) -> usize {
        match self {
            MediaSource::Base64(b) => b.len() / 4 * 3,
            MediaSource::Url(u) if u.starts_with("data:") => u.len() / 4 * 3,
            MediaSource::Text(t) => t.len(),
            _ => 0,
        }
    }
}
