//! Rendering an enforced plan as checkpoint text within a token budget.

use super::facts::{TurnFacts, FAILURE_EXCERPT_CHARS};
use super::{AgentPlan, TurnStrategy};
use crate::input::truncate_middle;
use crate::summarizer::RECORD_HEADER;
use std::collections::BTreeSet;

/// Renders a validated, enforced plan as checkpoint text within `max_tokens`.
pub fn render_plan(
    plan: &AgentPlan,
    facts: &[TurnFacts],
    turns: &[(String, Vec<String>)],
    max_tokens: usize,
    counter: &compact_core::tokens::TokenCounter,
) -> String {
    let mut head = format!("{RECORD_HEADER}\n\n");
    if !plan.facts.is_empty() {
        head.push_str("## Key facts\n");
        for f in &plan.facts {
            head.push_str(&format!(
                "- [{}] {} ({})\n",
                f.kind.label(),
                f.content,
                f.source
            ));
        }
    }
    let failures: Vec<String> = facts
        .iter()
        .flat_map(|f| f.failures.iter().map(move |x| format!("- ({}) {x}", f.id)))
        .collect();
    if !failures.is_empty() {
        head.push_str("## Failed approaches\n");
        head.push_str(&failures.join("\n"));
        head.push('\n');
    }
    let paths: Vec<&str> = facts
        .iter()
        .flat_map(|f| f.paths.iter().map(String::as_str))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !paths.is_empty() {
        head.push_str("## Paths and URLs\n");
        head.push_str(&paths.join("\n"));
        head.push('\n');
    }
    let mut demoted: BTreeSet<String> = BTreeSet::new();
    loop {
        let mut body = String::from("## Turns\n");
        let mut dropped = Vec::new();
        for t in &plan.turns {
            let strategy = if demoted.contains(&t.turn_id) {
                TurnStrategy::Summarize
            } else {
                t.strategy
            };
            let f = facts.iter().find(|f| f.id == t.turn_id);
            match strategy {
                TurnStrategy::Keep => {
                    let texts = turns
                        .iter()
                        .find(|(id, _)| *id == t.turn_id)
                        .map(|(_, v)| v.join("\n"))
                        .unwrap_or_default();
                    body.push_str(&format!("### {} (kept)\n{texts}\n", t.turn_id));
                }
                TurnStrategy::Summarize => {
                    body.push_str(&format!(
                        "### {} (summarised, relevance {:.2}) {}\n",
                        t.turn_id, t.relevance, t.reason
                    ));
                    for fact in plan.facts.iter().filter(|x| x.source == t.turn_id) {
                        body.push_str(&format!("- {}\n", fact.content));
                    }
                }
                TurnStrategy::Reference => {
                    body.push_str(&format!(
                        "### {} (reference: re-read or re-run if needed) {}\n",
                        t.turn_id, t.reason
                    ));
                    if let Some(f) = f {
                        for c in &f.commands {
                            body.push_str(&format!(
                                "- command: {}\n",
                                truncate_middle(c, FAILURE_EXCERPT_CHARS)
                            ));
                        }
                    }
                }
                TurnStrategy::Drop => dropped.push(t.turn_id.as_str()),
            }
        }
        if !dropped.is_empty() {
            body.push_str(&format!(
                "Dropped turns (no lasting value): {}\n",
                dropped.join(", ")
            ));
        }
        let text = format!("{head}{body}");
        let tokens = counter.count_text(&text);
        if tokens <= max_tokens {
            return text;
        }
        // Demote the oldest kept turn; when none is left, cut the text.
        match plan
            .turns
            .iter()
            .find(|t| t.strategy == TurnStrategy::Keep && !demoted.contains(&t.turn_id))
        {
            Some(t) => {
                demoted.insert(t.turn_id.clone());
            }
            None => {
                let chars = text.chars().count();
                let target =
                    (chars as u128 * max_tokens as u128 / tokens.max(1) as u128) as usize * 9 / 10;
                return truncate_middle(&text, target);
            }
        }
    }
}
