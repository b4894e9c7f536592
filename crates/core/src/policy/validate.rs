//! Validation of a [`Policy`]: every bad field is reported with its name, its value and why.

use super::Policy;
use std::fmt;

/// Windows smaller than this cannot hold a system prompt, one exchange and a reply.
pub const MIN_CONTEXT_TOKENS: usize = 1_024;
/// Larger windows than any model offers are taken for a typo (e.g. an extra zero).
pub const MAX_CONTEXT_TOKENS: usize = 100_000_000;
/// A checkpoint needs room for at least its section headers.
pub const MIN_SUMMARY_TOKENS: usize = 64;

/// One invalid field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Field name as spelt in the configuration (`policy.trigger_pct`).
    pub field: &'static str,
    /// The offending value, as text.
    pub value: String,
    /// Why it is invalid.
    pub reason: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` = {}: {}", self.field, self.value, self.reason)
    }
}

/// A policy with one or more invalid fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct PolicyError {
    /// Every invalid field, in declaration order.
    pub fields: Vec<FieldError>,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid policy: ")?;
        for (i, e) in self.fields.iter().enumerate() {
            if i > 0 {
                write!(f, "; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

struct Checker(Vec<FieldError>);

impl Checker {
    fn check(&mut self, ok: bool, field: &'static str, value: impl fmt::Display, reason: &str) {
        if !ok {
            self.0.push(FieldError {
                field,
                value: value.to_string(),
                reason: reason.to_owned(),
            });
        }
    }

    fn fraction(&mut self, field: &'static str, value: f64) {
        self.check(
            value.is_finite() && value > 0.0 && value < 1.0,
            field,
            value,
            "must be a fraction strictly between 0 and 1",
        );
    }
}

impl Policy {
    /// Checks every field; returns all problems at once.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let mut c = Checker(Vec::new());
        let window = self.max_context_tokens;
        c.check(
            (MIN_CONTEXT_TOKENS..=MAX_CONTEXT_TOKENS).contains(&window),
            "max_context_tokens",
            window,
            &format!("must be between {MIN_CONTEXT_TOKENS} and {MAX_CONTEXT_TOKENS}"),
        );
        // Reserved output and buffer are scaled to the window by the budget (at most 25% and 5%), so any
        // value is usable; only absurd ones are rejected.
        c.check(
            self.reserved_output_tokens <= MAX_CONTEXT_TOKENS,
            "reserved_output_tokens",
            self.reserved_output_tokens,
            &format!("must be at most {MAX_CONTEXT_TOKENS}"),
        );
        c.check(
            self.hard_cap_buffer <= MAX_CONTEXT_TOKENS,
            "hard_cap_buffer",
            self.hard_cap_buffer,
            &format!("must be at most {MAX_CONTEXT_TOKENS}"),
        );
        c.fraction("trigger_pct", self.trigger_pct);
        c.fraction("target_pct", self.target_pct);
        c.check(
            (0.0..=0.9).contains(&self.min_gain_pct),
            "min_gain_pct",
            self.min_gain_pct,
            "must be between 0 and 0.9",
        );
        // With a minimum gain the target lies that far below the trigger whatever `target_pct` says
        // (`target_pct` is then only an upper bound); without one it must itself be below.
        if self.target_pct.is_finite() && self.trigger_pct.is_finite() && self.min_gain_pct <= 0.0 {
            c.check(
                self.target_pct < self.trigger_pct,
                "target_pct",
                self.target_pct,
                &format!(
                    "must be below trigger_pct ({}) when min_gain_pct is 0, or compaction would fire again at once",
                    self.trigger_pct
                ),
            );
        }
        if let Some(soft) = self.soft_trigger_pct {
            c.fraction("soft_trigger_pct", soft);
            c.check(
                !soft.is_finite() || soft < self.trigger_pct,
                "soft_trigger_pct",
                soft,
                &format!("must be below trigger_pct ({})", self.trigger_pct),
            );
        }
        if let Some(floor) = self.boundary_trigger_pct {
            c.fraction("boundary_trigger_pct", floor);
            c.check(
                !floor.is_finite() || floor < self.trigger_pct,
                "boundary_trigger_pct",
                floor,
                &format!("must be below trigger_pct ({})", self.trigger_pct),
            );
        }
        if let Some(left) = self.min_tokens_left {
            c.check(
                left < window,
                "min_tokens_left",
                left,
                "must be smaller than max_context_tokens",
            );
        }
        c.check(
            self.keep_recent_turns >= 1,
            "keep_recent_turns",
            self.keep_recent_turns,
            "must be at least 1",
        );
        c.check(
            self.keep_tool_io_pairs >= 1,
            "keep_tool_io_pairs",
            self.keep_tool_io_pairs,
            "must be at least 1",
        );
        c.check(
            !self.protected_flag.trim().is_empty(),
            "protected_flag",
            "\"\"",
            "must not be empty",
        );
        if let Some(t) = self.protected_tools.iter().find(|t| t.trim().is_empty()) {
            c.check(
                false,
                "protected_tools",
                format!("{t:?}"),
                "tool names must not be empty",
            );
        }
        c.check(
            self.tool_output.max_tokens >= 1,
            "tool_output.max_tokens",
            self.tool_output.max_tokens,
            "must be at least 1 (use mode `none` to disable truncation)",
        );
        let buf = self.tool_output.serialization_buffer;
        c.check(
            buf.is_finite() && (1.0..=4.0).contains(&buf),
            "tool_output.serialization_buffer",
            buf,
            "must be between 1.0 and 4.0",
        );
        let head = self.tool_output.head_fraction;
        c.check(
            head.is_finite() && (0.0..=1.0).contains(&head),
            "tool_output.head_fraction",
            head,
            "must be between 0 and 1",
        );
        c.check(
            self.summary_max_tokens >= MIN_SUMMARY_TOKENS,
            "summary_max_tokens",
            self.summary_max_tokens,
            &format!("must be at least {MIN_SUMMARY_TOKENS}"),
        );
        if c.0.is_empty() {
            Ok(())
        } else {
            Err(PolicyError { fields: c.0 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        assert_eq!(Policy::default().validate(), Ok(()));
    }

    #[test]
    fn every_bad_field_is_named() {
        let p = Policy {
            trigger_pct: 1.5,
            target_pct: 0.9,
            min_gain_pct: 1.5,
            keep_recent_turns: 0,
            ..Policy::default()
        };
        let err = p
            .validate()
            .err()
            .map(|e| e.fields.iter().map(|f| f.field).collect::<Vec<_>>());
        assert_eq!(
            err,
            Some(vec!["trigger_pct", "min_gain_pct", "keep_recent_turns"])
        );
        let p = Policy {
            target_pct: 0.96,
            min_gain_pct: 0.0,
            ..Policy::default()
        };
        let e = p
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("target_pct") && e.contains("0.96") && e.contains("below trigger_pct"),
            "{e}"
        );
    }
}
