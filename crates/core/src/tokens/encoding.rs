//! The tokenizers Compact knows: two exact BPE vocabularies and a calibrated estimator.

use super::piece_cache::{cached_count, uncached_count};
use super::pretokenize::Flavor;
use std::fmt;
use std::str::FromStr;

/// A tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// OpenAI `o200k_base` (GPT-4o, GPT-4.1, GPT-5, o-series). Exact.
    O200kBase,
    /// OpenAI `cl100k_base` (GPT-4, GPT-3.5). Exact.
    Cl100kBase,
    /// Calibrated estimate for models whose tokenizer is not public (Claude, Gemini, ...).
    Estimate,
}

impl Encoding {
    /// Small distinct tag (for the memo).
    pub(crate) fn tag(self) -> u8 {
        match self {
            Encoding::O200kBase => 1,
            Encoding::Cl100kBase => 2,
            Encoding::Estimate => 3,
        }
    }

    /// Name as used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::Estimate => "estimate",
        }
    }

    /// True for exact BPE encodings.
    pub fn is_exact(self) -> bool {
        !matches!(self, Encoding::Estimate)
    }

    /// Counts the tokens of `text`. Special-token strings (`<|endoftext|>`) count as ordinary text.
    ///
    /// Exact encodings split the text into the pieces the encoding's regex defines (with a hand
    /// scanner for ASCII) and count each piece with BPE through a per-thread cache of piece counts
    /// (see [`super::clear_piece_cache`]); the result is identical to [`Encoding::count_uncached`],
    /// only faster.
    pub fn count(self, text: &str) -> usize {
        match self {
            Encoding::O200kBase => cached_count(Flavor::O200k, bpe_openai::o200k_base(), text),
            Encoding::Cl100kBase => cached_count(Flavor::Cl100k, bpe_openai::cl100k_base(), text),
            Encoding::Estimate => super::estimate_tokens(text),
        }
    }

    /// Counts like [`Encoding::count`] but runs BPE on every piece, bypassing the piece cache: the
    /// reference path that tests and benchmarks compare the cached one against.
    pub fn count_uncached(self, text: &str) -> usize {
        match self {
            Encoding::O200kBase => uncached_count(bpe_openai::o200k_base(), text),
            Encoding::Cl100kBase => uncached_count(bpe_openai::cl100k_base(), text),
            Encoding::Estimate => super::estimate_tokens(text),
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error for an unknown encoding name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown encoding `{0}` (expected o200k_base, cl100k_base or estimate)")]
pub struct UnknownEncoding(pub String);

impl FromStr for Encoding {
    type Err = UnknownEncoding;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "o200k_base" | "o200k" => Ok(Encoding::O200kBase),
            "cl100k_base" | "cl100k" => Ok(Encoding::Cl100kBase),
            "estimate" => Ok(Encoding::Estimate),
            _ => Err(UnknownEncoding(s.to_owned())),
        }
    }
}
