//! The named choices of a policy (mode, strategy, truncation mode, summariser failure), with their
//! command-line / configuration spellings.

use std::fmt;
use std::str::FromStr;

/// A name that is not one of the accepted spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{given}` (expected one of: {expected})")]
pub struct UnknownName {
    /// What was being named (`mode`, `strategy`, ...).
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// The accepted names, comma-separated.
    pub expected: String,
}

macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident, $what:literal, { $($(#[$vdoc:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every variant, in documentation order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The configuration / command-line spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == wanted)
                    .ok_or_else(|| UnknownName {
                        what: $what,
                        given: s.to_owned(),
                        expected: $name::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", "),
                    })
            }
        }
    };
}

named_enum!(
    /// Whether compaction happens automatically.
    Mode, "mode", {
        /// Never compact, never remind.
        Off => "off",
        /// Report that compaction is due, never compact automatically.
        Remind => "remind",
        /// Compact automatically at the trigger.
        Auto => "auto",
    }
);

named_enum!(
    /// A compaction strategy (each a pure function from a conversation to a plan).
    StrategyName, "strategy", {
        /// Tiers 0-4: truncate, reference, summarise, shrink recent, fail with the floor (default).
        Tiered => "tiered",
        /// Codex: initial context + user messages within the budget + one summary.
        Codex => "codex",
        /// AGIME legacy: keep a head and a tail of the window, summarise the middle.
        Segmented => "segmented",
        /// Old tool outputs become placeholders; no summary.
        ObservationMasking => "observation-masking",
        /// Keep the pinned items and the newest items that fit; drop the rest.
        SlidingWindow => "sliding-window",
        /// Drop the oldest items (tool pairs whole) until under the target.
        Deletion => "deletion",
        /// AGIME CFPM: first 2 and last 8 messages plus a deterministic memory block.
        Cfpm => "cfpm",
    }
);

named_enum!(
    /// How tool outputs are measured for tier-0 truncation.
    TruncationMode, "truncation mode", {
        /// Never truncate.
        None => "none",
        /// Measure in bytes (4 bytes per token).
        Bytes => "bytes",
        /// Measure in tokens.
        Tokens => "tokens",
    }
);

named_enum!(
    /// Whether `tiered` runs its reversible stage (superseded outputs, repeated blocks, densifiers)
    /// before the lossy tiers.
    ReversibleMode, "reversible stage mode", {
        /// Run it first, then the lossy tiers as far as the target needs.
        On => "on",
        /// Never run it.
        Off => "off",
        /// Run only it, whatever the window (to measure it, or to shrink without any loss).
        Only => "only",
    }
);

named_enum!(
    /// What the compactor does when the summariser fails.
    SummarizerFailure, "summariser failure policy", {
        /// Use the deterministic checkpoint instead, with a warning.
        Deterministic => "deterministic",
        /// Return an error; the conversation is left unchanged.
        Fail => "fail",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in StrategyName::ALL {
            assert_eq!(s.as_str().parse::<StrategyName>(), Ok(*s));
        }
        assert_eq!(
            "observation_masking".parse::<StrategyName>(),
            Ok(StrategyName::ObservationMasking)
        );
        let err = "fifo"
            .parse::<StrategyName>()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("fifo") && err.contains("tiered"), "{err}");
    }
}
