//! Tests of the memory model: lifecycle, merging, caps, reason codes, the block's budget and
//! stability, replay, and the gate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::model::{Item, ItemBody, Role, ToolCall, ToolResult};
use crate::tokens::{Encoding, TokenCounter};
use serde_json::json;

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

fn cand(kind: FactKind, subject: &str, text: &str, confidence: f64, source: &str) -> Candidate {
    Candidate {
        kind,
        subject: subject.to_owned(),
        text: text.to_owned(),
        path: None,
        confidence,
        sources: vec![source.to_owned()],
        origin: Origin::Items,
    }
}

fn decision(text: &str, source: &str) -> Candidate {
    cand(FactKind::Decision, &text.to_lowercase(), text, 0.75, source)
}

fn outcome(c: &Change) -> (Outcome, Reason) {
    match c {
        Change::Candidate {
            outcome, reason, ..
        } => (*outcome, *reason),
        Change::Moved { .. } => panic!("not a candidate: {c:?}"),
    }
}

#[test]
fn duplicates_merge_and_count_evidence_once_per_new_source() {
    let mut m = Memory::new();
    let l = Limits::default();
    let c = m.admit(
        [
            decision("Use a mutex instead of the channel", "i1"),
            decision("Use a mutex instead of the channel", "i2"),
            decision("Use a mutex instead of the channel", "i2"),
        ],
        &l,
    );
    assert_eq!(
        c.iter().map(outcome).collect::<Vec<_>>(),
        [
            (Outcome::Accepted, Reason::New),
            (Outcome::Merged, Reason::DuplicateMerged),
            (Outcome::Merged, Reason::DuplicateMerged),
        ]
    );
    assert_eq!(m.facts().len(), 1);
    assert_eq!(
        m.facts()[0].evidence,
        2,
        "a source seen again is no new evidence"
    );
    assert_eq!(m.facts()[0].sources, ["i1", "i2"]);
}

#[test]
fn low_value_candidates_are_rejected_with_their_reason() {
    let mut m = Memory::new();
    let l = Limits::default();
    let cases = [
        ("   ", Reason::Empty),
        ("2024/7/19", Reason::DateOnly),
        ("2024-07-19 12:30:01", Reason::DateOnly),
        ("ok.", Reason::Noise),
        ("-- -- --", Reason::Noise),
        ("12345 678", Reason::DateOnly),
    ];
    for (text, reason) in cases {
        let c = m.admit([decision(text, "i1")], &l);
        assert_eq!(outcome(&c[0]), (Outcome::Rejected, reason), "{text:?}");
    }
    let c = m.admit(
        [cand(
            FactKind::Decision,
            "x",
            "A guess about things",
            0.1,
            "i1",
        )],
        &l,
    );
    assert_eq!(outcome(&c[0]), (Outcome::Rejected, Reason::LowConfidence));
    assert!(m.facts().is_empty());
}

#[test]
fn a_newer_statement_about_the_same_subject_supersedes_the_older() {
    let mut m = Memory::new();
    let l = Limits::default();
    m.admit(
        [cand(
            FactKind::FileState,
            "file src/a.rs",
            "src/a.rs (modified)",
            0.85,
            "i1",
        )],
        &l,
    );
    let c = m.admit(
        [cand(
            FactKind::FileState,
            "file src/a.rs",
            "src/a.rs (deleted)",
            0.85,
            "i2",
        )],
        &l,
    );
    let old = m.facts()[0].clone();
    let new = m.facts()[1].clone();
    assert_eq!(old.lifecycle, Lifecycle::Superseded);
    assert_eq!(old.superseded_by.as_deref(), Some(new.id.as_str()));
    assert_eq!(new.lifecycle, Lifecycle::Active);
    assert!(matches!(
        &c[1],
        Change::Moved {
            to: Lifecycle::Superseded,
            reason: Reason::Superseded,
            ..
        }
    ));
    // The older state is not taken back.
    let c = m.admit(
        [cand(
            FactKind::FileState,
            "file src/a.rs",
            "src/a.rs (modified)",
            0.85,
            "i3",
        )],
        &l,
    );
    assert_eq!(outcome(&c[0]), (Outcome::Rejected, Reason::Outdated));
}

#[test]
fn caps_evict_the_weakest_and_reject_what_is_weaker_than_all() {
    let mut l = Limits::default();
    l.caps[FactKind::Decision.index()] = 2;
    let mut m = Memory::new();
    m.admit(
        [
            decision("Use alpha for the parser", "i1"),
            decision("Use beta for the lexer", "i2"),
            decision("Use beta for the lexer", "i3"),
        ],
        &l,
    );
    // A strong newcomer evicts the weakest (alpha: evidence 1).
    let c = m.admit(
        [cand(
            FactKind::Decision,
            "gamma",
            "Use gamma for output",
            0.95,
            "i4",
        )],
        &l,
    );
    assert_eq!(outcome(&c[0]), (Outcome::Accepted, Reason::New));
    assert!(matches!(
        &c[1],
        Change::Moved {
            to: Lifecycle::Stale,
            reason: Reason::Evicted,
            ..
        }
    ));
    assert_eq!(m.trusted_count(FactKind::Decision), 2);
    let alpha = m.facts().iter().find(|f| f.text.contains("alpha")).unwrap();
    assert_eq!(alpha.lifecycle, Lifecycle::Stale);
    // A weak one is refused.
    let c = m.admit(
        [cand(
            FactKind::Decision,
            "delta",
            "Use delta somewhere",
            0.4,
            "i5",
        )],
        &l,
    );
    assert_eq!(outcome(&c[0]), (Outcome::Rejected, Reason::CapReached));
    assert_eq!(m.trusted_count(FactKind::Decision), 2);
    // Pinned facts are never evicted: with both pinned, nothing gets in.
    let ids: Vec<String> = m.trusted().map(|f| f.id.clone()).collect();
    for id in &ids {
        m.set_lifecycle(id, Lifecycle::Pinned).unwrap();
    }
    let c = m.admit(
        [cand(
            FactKind::Decision,
            "eps",
            "Use epsilon everywhere",
            1.0,
            "i6",
        )],
        &l,
    );
    assert_eq!(outcome(&c[0]), (Outcome::Rejected, Reason::CapReached));
    // Other kinds are not affected by this kind's cap.
    let c = m.admit(
        [cand(
            FactKind::Constraint,
            "c",
            "Never push to main",
            0.9,
            "i7",
        )],
        &l,
    );
    assert_eq!(outcome(&c[0]), (Outcome::Accepted, Reason::New));
}

#[test]
fn a_stale_fact_seen_again_is_revived() {
    let mut l = Limits::default();
    l.caps[FactKind::Decision.index()] = 1;
    let mut m = Memory::new();
    m.admit([decision("Use alpha for the parser", "i1")], &l);
    m.admit([decision("Use beta for the lexer", "i2")], &l);
    assert_eq!(m.facts()[0].lifecycle, Lifecycle::Stale);
    let c = m.admit([decision("Use alpha for the parser", "i3")], &l);
    assert_eq!(outcome(&c[0]), (Outcome::Merged, Reason::Revived));
    assert_eq!(m.facts()[0].lifecycle, Lifecycle::Active);
    assert_eq!(m.facts()[1].lifecycle, Lifecycle::Stale);
}

#[test]
fn lifecycle_transitions_are_checked_and_forgetting_is_final() {
    let mut m = Memory::new();
    let l = Limits::default();
    m.admit([decision("Use a mutex instead of the channel", "i1")], &l);
    let id = m.facts()[0].id.clone();
    assert!(m.set_lifecycle(&id, Lifecycle::Pinned).unwrap().is_some());
    assert!(m.set_lifecycle(&id, Lifecycle::Active).unwrap().is_some());
    assert!(m
        .set_lifecycle(&id, Lifecycle::Forgotten)
        .unwrap()
        .is_some());
    assert_eq!(m.set_lifecycle(&id, Lifecycle::Forgotten), Ok(None));
    assert!(matches!(
        m.set_lifecycle(&id, Lifecycle::Active),
        Err(MemoryError::Transition { .. })
    ));
    assert!(matches!(
        m.set_lifecycle("f0000000000", Lifecycle::Forgotten),
        Err(MemoryError::UnknownFact(_))
    ));
    // Never admitted again, never rendered.
    let c = m.admit([decision("Use a mutex instead of the channel", "i9")], &l);
    assert_eq!(outcome(&c[0]), (Outcome::Rejected, Reason::Forgotten));
    assert_eq!(render::render(&m, 1_000, &counter()), None);
    // The transition table.
    use Lifecycle::*;
    assert!(Active.can_move_to(Stale) && Stale.can_move_to(Active));
    assert!(!Superseded.can_move_to(Active) && !Forgotten.can_move_to(Active));
    assert!(!Pinned.can_move_to(Stale), "pinned facts are never evicted");
}

#[test]
fn replaying_the_changes_rebuilds_the_same_memory() {
    let mut l = Limits::default();
    l.caps[FactKind::Decision.index()] = 2;
    let mut m = Memory::new();
    let mut log = m.admit(
        [
            decision("Use alpha for the parser", "i1"),
            decision("Use beta for the lexer", "i2"),
            decision("Use beta for the lexer", "i3"),
            cand(
                FactKind::Decision,
                "gamma",
                "Use gamma for output",
                0.95,
                "i4",
            ),
            cand(FactKind::FileState, "file a", "a (modified)", 0.85, "i5"),
            cand(FactKind::FileState, "file a", "a (deleted)", 0.85, "i6"),
            decision("2024/7/19", "i7"),
        ],
        &l,
    );
    let id = m.facts()[1].id.clone();
    log.extend(m.set_lifecycle(&id, Lifecycle::Forgotten).unwrap());
    let mut replayed = Memory::new();
    for change in &log {
        replayed.apply(change);
    }
    assert_eq!(replayed, m);
}

#[test]
fn the_block_respects_its_budget_and_is_stable() {
    let mut m = Memory::new();
    let l = Limits::default();
    let many: Vec<Candidate> = (0..40)
        .map(|i| {
            decision(
                &format!("Use component number {i} for the storage layer of the system"),
                &format!("i{i}"),
            )
        })
        .collect();
    m.admit(many, &l);
    let c = counter();
    for budget in [60, 120, 300, 1_000] {
        let block = render::render(&m, budget, &c);
        if let Some(block) = &block {
            assert!(c.count_text(block) <= budget, "{budget}");
            assert!(block.starts_with(render::MARKER) && block.ends_with(render::END_MARKER));
        }
        assert_eq!(
            block,
            render::render(&m, budget, &c),
            "same facts, same bytes"
        );
    }
    assert_eq!(render::render(&m, 10, &c), None, "nothing fits");
    let all = render::render(&m, 100_000, &c).unwrap();
    assert_eq!(all.matches("\n- ").count(), 24, "the cap held");
    // The strongest are kept first.
    m.admit(
        [decision(
            "Use component number 39 for the storage layer of the system",
            "z",
        )],
        &l,
    );
    let small = render::render(&m, 80, &c).unwrap();
    assert!(small.contains("number 39 "), "{small}");
}

#[test]
fn candidates_come_from_extracted_facts() {
    let mut items = vec![
        Item::text(
            Role::User,
            "Fix the build. Never push to main. I prefer small commits.",
        ),
        Item::new(ItemBody::ToolCall(ToolCall::function(
            "c1",
            "Bash",
            json!({"command": "cd /srv/app && cargo add serde@1"}),
        ))),
        Item::new(ItemBody::ToolResult(ToolResult::text("c1", "Adding serde"))),
        Item::new(ItemBody::ToolCall(ToolCall::function(
            "c2",
            "Edit",
            json!({"file_path": "/srv/app/src/main.rs", "old_string": "a", "new_string": "b"}),
        ))),
        Item::new(ItemBody::ToolResult(ToolResult::text("c2", "ok"))),
        Item::text(
            Role::Assistant,
            "I'll use serde instead of a hand-written parser.",
        ),
    ];
    for (i, item) in items.iter_mut().enumerate() {
        item.meta.id = crate::model::ItemId::new(format!("i{i}"));
    }
    let facts = crate::facts::extract(&items);
    let cands = from_facts(&facts);
    let kinds = |k: FactKind| cands.iter().filter(|c| c.kind == k).count();
    assert_eq!(kinds(FactKind::Constraint), 1, "{cands:#?}");
    assert_eq!(kinds(FactKind::Preference), 1);
    assert_eq!(kinds(FactKind::Decision), 1);
    assert_eq!(kinds(FactKind::Dependency), 1);
    let files: Vec<&Candidate> = cands
        .iter()
        .filter(|c| c.kind == FactKind::FileState)
        .collect();
    assert!(files
        .iter()
        .any(|c| c.path.as_deref() == Some("/srv/app/src/main.rs")));
    assert!(files.iter().any(|c| c.path.as_deref() == Some("/srv/app")));
    assert!(cands.iter().all(|c| !c.sources.is_empty()), "provenance");
    let summary = "# Record of earlier work (checkpoint 1, covering 3 items)\n\n## Constraints and preferences\n- Keep the public API stable [i1]\n\n## Decisions\n- Going with sqlite for storage [i2]\n";
    let from_summary = from_summary(summary, "ck1");
    assert_eq!(from_summary.len(), 2, "{from_summary:#?}");
    assert!(from_summary
        .iter()
        .all(|c| c.origin == Origin::Summary && c.sources == ["ck1"]));
}

fn known(paths: &[&str]) -> KnownPaths {
    let mut m = Memory::new();
    let facts: Vec<Candidate> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| Candidate {
            path: Some((*p).to_owned()),
            ..cand(
                FactKind::FileState,
                &format!("dir {p}"),
                &format!("{p} (directory)"),
                0.85,
                &format!("i{i}"),
            )
        })
        .collect();
    m.admit(facts, &Limits::default());
    KnownPaths::from_facts(m.facts())
}

#[test]
fn the_gate_rewrites_exact_probes_only() {
    let k = known(&[
        "/home/u/Desktop",
        "/srv/app/src/main.rs",
        "/a/dup",
        "/b/dup",
    ]);
    let rewrite = |cmd: &str| match gate(cmd, &k) {
        GateDecision::Rewrite(r) => Ok(r.rewritten),
        GateDecision::Unchanged(s) => Err(s),
    };
    let table: &[(&str, Result<&str, Skip>)] = &[
        ("ls Desktop", Ok("ls /home/u/Desktop")),
        ("ls -la Desktop/", Ok("ls -la /home/u/Desktop")),
        ("cd Desktop", Ok("cd /home/u/Desktop")),
        ("cd app && cargo test", Ok("cd /srv/app && cargo test")),
        (
            "find . -name main.rs",
            Ok("find /srv/app/src -maxdepth 1 -name main.rs"),
        ),
        (
            "find . -type d -name 'src'",
            Ok("find /srv/app -maxdepth 1 -type d -name 'src'"),
        ),
        // Near misses: not exact, ambiguous, unknown, already absolute.
        ("ls Desk", Err(Skip::UnknownName)),
        ("ls desktop", Err(Skip::UnknownName)),
        ("ls dup", Err(Skip::Ambiguous)),
        ("ls Desktop/notes", Err(Skip::NotAProbe)),
        ("ls ~/Desktop", Err(Skip::NotAProbe)),
        ("ls $HOME/Desktop", Err(Skip::NotAProbe)),
        ("ls Desktop src", Err(Skip::NotAProbe)),
        ("ls *.rs", Err(Skip::NotAProbe)),
        ("ls ..", Err(Skip::NotAProbe)),
        ("ls", Err(Skip::NotAProbe)),
        ("ls /home/u/Desktop", Err(Skip::AlreadyAbsolute)),
        ("cd app && ls /etc", Err(Skip::AlreadyAbsolute)),
        ("find . -name '*.rs'", Err(Skip::NotAProbe)),
        ("find src -name main.rs", Err(Skip::NotAProbe)),
        ("cat Desktop", Err(Skip::NotAProbe)),
        ("cd app || make", Err(Skip::NotAProbe)),
        // Destructive: never, whatever the shape.
        ("cd app && rm -rf target", Err(Skip::Destructive)),
        ("cd app && git reset --hard", Err(Skip::Destructive)),
        ("cd app && git clean -fdx", Err(Skip::Destructive)),
        ("cd app && mv a b", Err(Skip::Destructive)),
        ("cd app && dd if=a of=b", Err(Skip::Destructive)),
        ("cd app && chmod -R 777 .", Err(Skip::Destructive)),
        ("cd app && echo x > f", Err(Skip::Destructive)),
        ("ls Desktop > listing.txt", Err(Skip::Destructive)),
        ("ls Desktop >> listing.txt", Err(Skip::Destructive)),
        ("cd app && sed -i s/a/b/ f", Err(Skip::Destructive)),
        ("find . -name main.rs -delete", Err(Skip::Destructive)),
        ("cd $(ls app)", Err(Skip::Destructive)),
        ("cd app && sudo make install", Err(Skip::Destructive)),
        ("ls Desktop 2>&1", Err(Skip::NotAProbe)),
    ];
    for (cmd, want) in table {
        assert_eq!(rewrite(cmd), want.map(str::to_owned), "{cmd}");
    }
    // Only trusted facts are read.
    let mut m = Memory::new();
    m.admit(
        [Candidate {
            path: Some("/home/u/Desktop".to_owned()),
            ..cand(
                FactKind::FileState,
                "dir d",
                "/home/u/Desktop (directory)",
                0.85,
                "i1",
            )
        }],
        &Limits::default(),
    );
    let id = m.facts()[0].id.clone();
    m.set_lifecycle(&id, Lifecycle::Forgotten).unwrap();
    assert_eq!(
        gate("ls Desktop", &KnownPaths::from_facts(m.facts())),
        GateDecision::Unchanged(Skip::UnknownName)
    );
}
