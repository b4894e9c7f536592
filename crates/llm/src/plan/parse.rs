//! Strict parsing and validation of the model's JSON plan into an [`AgentPlan`], with typed errors.

use super::{AgentPlan, Fact, FactKind, TurnPlan, TurnStrategy};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Why a plan was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// Not JSON (or not only JSON).
    #[error("plan is not valid JSON: {0}")]
    NotJson(String),
    /// A value has the wrong type.
    #[error("plan: `{place}` must be {expected}")]
    WrongType {
        /// JSON path.
        place: String,
        /// Expected type.
        expected: &'static str,
    },
    /// A required field is absent.
    #[error("plan: `{place}` is missing")]
    Missing {
        /// JSON path.
        place: String,
    },
    /// A field the schema does not have.
    #[error("plan: unknown field `{field}` in `{place}`")]
    UnknownField {
        /// JSON path of the object.
        place: String,
        /// The field.
        field: String,
    },
    /// A turn id that is not in the material.
    #[error("plan: `{place}` names unknown turn `{id}`")]
    UnknownTurn {
        /// JSON path.
        place: String,
        /// The id.
        id: String,
    },
    /// The same turn twice.
    #[error("plan: turn `{0}` appears twice")]
    DuplicateTurn(String),
    /// Turns without a decision.
    #[error("plan: no decision for turns {0:?}")]
    UncoveredTurns(Vec<String>),
    /// A value outside its allowed set or range.
    #[error("plan: `{place}` has invalid value `{value}`")]
    InvalidValue {
        /// JSON path.
        place: String,
        /// The value.
        value: String,
    },
}

fn wrong(place: impl Into<String>, expected: &'static str) -> PlanError {
    PlanError::WrongType {
        place: place.into(),
        expected,
    }
}

fn check_fields(obj: &Map<String, Value>, place: &str, allowed: &[&str]) -> Result<(), PlanError> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(PlanError::UnknownField {
            place: place.to_owned(),
            field: k.clone(),
        }),
        None => Ok(()),
    }
}

fn field<'a>(obj: &'a Map<String, Value>, place: &str, key: &str) -> Result<&'a Value, PlanError> {
    obj.get(key).ok_or_else(|| PlanError::Missing {
        place: format!("{place}.{key}"),
    })
}

/// Strips one surrounding Markdown code fence, if present.
fn unfence(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// Parses and strictly validates a plan against the known turn ids.
pub fn parse_plan(text: &str, known_turns: &[String]) -> Result<AgentPlan, PlanError> {
    let value: Value =
        serde_json::from_str(unfence(text)).map_err(|e| PlanError::NotJson(e.to_string()))?;
    let root = value.as_object().ok_or_else(|| wrong("$", "an object"))?;
    check_fields(root, "$", &["turns", "extractedFacts", "estimatedTokens"])?;
    let known: BTreeSet<&str> = known_turns.iter().map(String::as_str).collect();

    let turns_v = field(root, "$", "turns")?
        .as_array()
        .ok_or_else(|| wrong("$.turns", "an array"))?;
    let mut seen = BTreeSet::new();
    let mut turns = Vec::with_capacity(turns_v.len());
    for (i, t) in turns_v.iter().enumerate() {
        let place = format!("$.turns[{i}]");
        let obj = t.as_object().ok_or_else(|| wrong(&place, "an object"))?;
        check_fields(
            obj,
            &place,
            &["turnId", "strategy", "relevanceScore", "reason"],
        )?;
        let id = field(obj, &place, "turnId")?
            .as_str()
            .ok_or_else(|| wrong(format!("{place}.turnId"), "a string"))?;
        if !known.contains(id) {
            return Err(PlanError::UnknownTurn {
                place: format!("{place}.turnId"),
                id: id.to_owned(),
            });
        }
        if !seen.insert(id.to_owned()) {
            return Err(PlanError::DuplicateTurn(id.to_owned()));
        }
        let s = field(obj, &place, "strategy")?
            .as_str()
            .ok_or_else(|| wrong(format!("{place}.strategy"), "a string"))?;
        let strategy = TurnStrategy::parse(s).ok_or_else(|| PlanError::InvalidValue {
            place: format!("{place}.strategy"),
            value: s.to_owned(),
        })?;
        let rel_v = field(obj, &place, "relevanceScore")?;
        let relevance = rel_v
            .as_f64()
            .ok_or_else(|| wrong(format!("{place}.relevanceScore"), "a number"))?;
        if !(0.0..=1.0).contains(&relevance) {
            return Err(PlanError::InvalidValue {
                place: format!("{place}.relevanceScore"),
                value: rel_v.to_string(),
            });
        }
        let reason = match obj.get("reason") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(wrong(format!("{place}.reason"), "a string")),
        };
        turns.push(TurnPlan {
            turn_id: id.to_owned(),
            strategy,
            relevance,
            reason,
        });
    }
    let missing: Vec<String> = known_turns
        .iter()
        .filter(|k| !seen.contains(k.as_str()))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(PlanError::UncoveredTurns(missing));
    }
    let order: BTreeMap<&str, usize> = known_turns
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    turns.sort_by_key(|t| order.get(t.turn_id.as_str()).copied().unwrap_or(usize::MAX));

    let mut facts = Vec::new();
    let facts_v = match root.get("extractedFacts") {
        None => &[][..],
        Some(v) => v
            .as_array()
            .ok_or_else(|| wrong("$.extractedFacts", "an array"))?
            .as_slice(),
    };
    for (i, f) in facts_v.iter().enumerate() {
        let place = format!("$.extractedFacts[{i}]");
        let obj = f.as_object().ok_or_else(|| wrong(&place, "an object"))?;
        check_fields(obj, &place, &["type", "content", "source"])?;
        let ty = field(obj, &place, "type")?
            .as_str()
            .ok_or_else(|| wrong(format!("{place}.type"), "a string"))?;
        let kind = FactKind::parse(ty).ok_or_else(|| PlanError::InvalidValue {
            place: format!("{place}.type"),
            value: ty.to_owned(),
        })?;
        let content = field(obj, &place, "content")?
            .as_str()
            .ok_or_else(|| wrong(format!("{place}.content"), "a string"))?;
        if content.trim().is_empty() {
            return Err(PlanError::InvalidValue {
                place: format!("{place}.content"),
                value: String::new(),
            });
        }
        let source = field(obj, &place, "source")?
            .as_str()
            .ok_or_else(|| wrong(format!("{place}.source"), "a string"))?;
        if !known.contains(source) {
            return Err(PlanError::UnknownTurn {
                place: format!("{place}.source"),
                id: source.to_owned(),
            });
        }
        facts.push(Fact {
            kind,
            content: content.trim().to_owned(),
            source: source.to_owned(),
        });
    }
    let estimated_tokens = match root.get("estimatedTokens") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or_else(|| wrong("$.estimatedTokens", "a non-negative integer"))?,
        ),
    };
    Ok(AgentPlan {
        turns,
        facts,
        estimated_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_stripped() {
        assert_eq!(unfence("```json\n{}\n```"), "{}");
        assert_eq!(unfence(" {} "), "{}");
    }
}
