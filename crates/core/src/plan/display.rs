//! Printing plans: one line per item ([`ItemPlan::describe`]) and a readable summary with per-tier
//! estimates ([`Plan`]'s `Display`), as `compactctl plan` and `diff` show them.

use super::{Action, ItemPlan, Plan};
use std::fmt;

/// Characters of a reference stub shown in a plan line.
const STUB_PREVIEW_CHARS: usize = 60;

impl ItemPlan {
    /// One line: index, id, kind (and tool), action, tokens before -> after, deciding tier.
    pub fn describe(&self) -> String {
        let kind = match &self.tool {
            Some(t) => format!("{}({t})", self.kind.as_str()),
            None => self.kind.as_str().to_owned(),
        };
        let tier = self
            .tier
            .map(|t| format!(" tier {} {}", t.number(), t.as_str()))
            .unwrap_or_default();
        let detail = match &self.action {
            Action::Truncate { to_tokens } => format!(" to ~{to_tokens}"),
            Action::Densify { how } => format!(" ({how})"),
            Action::Reference { stub } => {
                let preview: String = stub.chars().take(STUB_PREVIEW_CHARS).collect();
                format!(" \"{preview}…\"")
            }
            _ => String::new(),
        };
        format!(
            "{:>5} {:<24} {:<30} {:<9} {:>7} -> {:>7}{tier}{detail}",
            self.index,
            self.id.as_str(),
            kind,
            self.action.as_str(),
            self.tokens_before,
            self.tokens_after
        )
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [keep, truncate, reference, summarize, drop, densify] = self.action_counts();
        writeln!(
            f,
            "strategy {}: {} -> ~{} tokens (target {}, usable {})",
            self.strategy,
            self.tokens_before,
            self.estimated_after(),
            self.target,
            self.usable
        )?;
        writeln!(
            f,
            "items: {keep} keep, {}{truncate} truncate, {reference} reference, {summarize} summarize, {drop} drop",
            if densify > 0 {
                format!("{densify} densify, ")
            } else {
                String::new()
            }
        )?;
        for t in &self.tiers {
            writeln!(
                f,
                "tier {} {:<14} {:>4} items -> ~{} tokens  {}",
                t.tier.number(),
                t.tier.as_str(),
                t.items,
                t.tokens_after,
                t.note
            )?;
        }
        if let Some(c) = &self.checkpoint {
            let prev = c
                .previous
                .map(|p| format!(", folds in item {p}"))
                .unwrap_or_default();
            writeln!(
                f,
                "checkpoint: generation {} before item {}, covers {} items, <= {} tokens{prev}",
                c.generation,
                c.position,
                c.covers.len(),
                c.max_tokens
            )?;
        }
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        for item in &self.items {
            writeln!(f, "{}", item.describe())?;
        }
        Ok(())
    }
}
