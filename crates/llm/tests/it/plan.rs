//! Plan-mode validation: well-formed plans parse; each kind of malformed plan gets its typed error;
//! enforcement upgrades dropped turns that hold failures, paths or URLs.

use compact_core::model::{Conversation, Item, Role};
use compact_llm::plan::{enforce, parse_plan, turn_facts, PlanError, TurnStrategy};

fn ids() -> Vec<String> {
    vec!["t0".into(), "t1".into()]
}

#[test]
fn good_plan_parses_in_turn_order() {
    let text = r#"{"turns": [
        {"turnId": "t1", "strategy": "reference", "relevanceScore": 0.5, "reason": "re-runnable"},
        {"turnId": "t0", "strategy": "Keep", "relevanceScore": 1}],
      "extractedFacts": [{"type": "decision", "content": "use nom", "source": "t1"}],
      "estimatedTokens": 120}"#;
    let plan = parse_plan(text, &ids()).unwrap();
    assert_eq!(plan.turns[0].turn_id, "t0");
    assert_eq!(plan.turns[0].strategy, TurnStrategy::Keep);
    assert_eq!(plan.turns[1].strategy, TurnStrategy::Reference);
    assert_eq!(plan.facts.len(), 1);
    assert_eq!(plan.estimated_tokens, Some(120));
}

/// Recognises the expected error.
type Check = fn(&PlanError) -> bool;

#[test]
fn bad_plans_get_typed_errors() {
    let t0 = r#"{"turnId": "t0", "strategy": "keep", "relevanceScore": 0.5}"#;
    let t1 = r#"{"turnId": "t1", "strategy": "drop", "relevanceScore": 0.5}"#;
    let cases: Vec<(String, Check)> = vec![
        ("turns: nope".into(), |e| matches!(e, PlanError::NotJson(_))),
        ("[1, 2]".into(), |e| {
            matches!(e, PlanError::WrongType { .. })
        }),
        (
            "{}".into(),
            |e| matches!(e, PlanError::Missing { place } if place == "$.turns"),
        ),
        (
            format!(r#"{{"turns": [{t0}, {t1}], "extra": 1}}"#),
            |e| matches!(e, PlanError::UnknownField { field, .. } if field == "extra"),
        ),
        (
            format!(r#"{{"turns": [{t0}]}}"#),
            |e| matches!(e, PlanError::UncoveredTurns(v) if v == &["t1".to_owned()]),
        ),
        (
            format!(r#"{{"turns": [{t0}, {t0}, {t1}]}}"#),
            |e| matches!(e, PlanError::DuplicateTurn(id) if id == "t0"),
        ),
        (
            r#"{"turns": [{"turnId": "t7", "strategy": "keep", "relevanceScore": 0.5}]}"#.into(),
            |e| matches!(e, PlanError::UnknownTurn { .. }),
        ),
        (
            format!(
                r#"{{"turns": [{t0}, {{"turnId": "t1", "strategy": "shred", "relevanceScore": 0.5}}]}}"#
            ),
            |e| matches!(e, PlanError::InvalidValue { value, .. } if value == "shred"),
        ),
        (
            format!(
                r#"{{"turns": [{t0}, {{"turnId": "t1", "strategy": "keep", "relevanceScore": 1.5}}]}}"#
            ),
            |e| matches!(e, PlanError::InvalidValue { .. }),
        ),
        (
            format!(
                r#"{{"turns": [{t0}, {{"turnId": "t1", "strategy": "keep", "relevanceScore": "high"}}]}}"#
            ),
            |e| matches!(e, PlanError::WrongType { .. }),
        ),
        (
            format!(r#"{{"turns": [{t0}, {{"turnId": "t1", "strategy": "keep"}}]}}"#),
            |e| matches!(e, PlanError::Missing { place } if place.ends_with("relevanceScore")),
        ),
        (
            format!(
                r#"{{"turns": [{t0}, {t1}], "extractedFacts": [{{"type": "gossip", "content": "x", "source": "t0"}}]}}"#
            ),
            |e| matches!(e, PlanError::InvalidValue { .. }),
        ),
        (
            format!(
                r#"{{"turns": [{t0}, {t1}], "extractedFacts": [{{"type": "error", "content": " ", "source": "t0"}}]}}"#
            ),
            |e| matches!(e, PlanError::InvalidValue { .. }),
        ),
        (
            format!(
                r#"{{"turns": [{t0}, {t1}], "extractedFacts": [{{"type": "error", "content": "x", "source": "t5"}}]}}"#
            ),
            |e| matches!(e, PlanError::UnknownTurn { .. }),
        ),
        (
            format!(r#"{{"turns": [{t0}, {t1}], "estimatedTokens": -3}}"#),
            |e| matches!(e, PlanError::WrongType { .. }),
        ),
        (
            format!(r#"Here is the plan: {{"turns": [{t0}, {t1}]}}"#),
            |e| matches!(e, PlanError::NotJson(_)),
        ),
    ];
    for (text, check) in cases {
        let err = parse_plan(&text, &ids()).expect_err(&text);
        assert!(check(&err), "{text} -> {err:?}");
    }
}

#[test]
fn enforcement_never_drops_failures_paths_or_urls() {
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::User, "hello"));
    conv.push(Item::text(
        Role::User,
        "the build failed: error: linker `cc` not found",
    ));
    conv.push(Item::text(Role::User, "see ./docs/design.md"));
    let ids: Vec<String> = (0..3).map(|i| format!("t{i}")).collect();
    let text = r#"{"turns": [
        {"turnId": "t0", "strategy": "drop", "relevanceScore": 0},
        {"turnId": "t1", "strategy": "drop", "relevanceScore": 0},
        {"turnId": "t2", "strategy": "drop", "relevanceScore": 0}]}"#;
    let mut plan = parse_plan(text, &ids).unwrap();
    let facts = turn_facts(&conv.items);
    let overrides = enforce(&mut plan, &facts);
    assert_eq!(plan.turns[0].strategy, TurnStrategy::Drop);
    assert_eq!(plan.turns[1].strategy, TurnStrategy::Summarize);
    assert_eq!(plan.turns[2].strategy, TurnStrategy::Reference);
    assert_eq!(overrides.len(), 2);
    assert!(facts[1].failures[0].contains("linker `cc` not found"));
    assert_eq!(facts[2].paths, vec!["./docs/design.md".to_owned()]);
}
