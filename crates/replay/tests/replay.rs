//! Integration tests of the replay: call points, overflows, carried-forward compactions, prompt-cache
//! accounting, retention, reports and the SVG plot, on small synthetic transcripts written here; and a
//! replay of a few real sessions of the shared corpus (skipped when it is absent).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{
    Arguments, Checkpoint, Conversation, Item, ItemBody, Part, Role, ToolCall, ToolCallKind,
    ToolResult,
};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_formats::import::ImportMode;
use compact_replay::{
    load_job, replay_session, run_matrix, setup, strategy, strategy_names, Compaction, History,
    Job, NoCompaction, Outcome, Preflighter, Pricing, ProbeKind, ProbeSet, Refusal, ReplayOptions,
    Report, StrategyFactory, NONE_STRATEGY,
};

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

fn options(window: usize) -> ReplayOptions {
    ReplayOptions {
        window,
        usable: window * 3 / 4,
        counter: counter(),
        pricing: Pricing {
            prices: compact_core::registry::Pricing {
                input: 1.0,
                cached_input: 0.1,
                cache_write: 1.25,
                output: 4.0,
            },
            min_cached_prefix: 0,
        },
    }
}

fn call(id: &str, name: &str, args: &str) -> Item {
    Item::new(ItemBody::ToolCall(ToolCall {
        call_id: id.into(),
        name: name.into(),
        arguments: Arguments::Text(args.into()),
        kind: ToolCallKind::Function,
        extra: Default::default(),
    }))
    .with_id(format!("call-{id}"))
}

fn result(id: &str, text: &str, is_error: bool) -> Item {
    Item::new(ItemBody::ToolResult(ToolResult {
        call_id: id.into(),
        tool_name: None,
        parts: vec![Part::text(text)],
        is_error,
        kind: ToolCallKind::Function,
        content_was_string: true,
        extra: Default::default(),
    }))
    .with_id(format!("result-{id}"))
}

/// A coding session of `turns` tool rounds: each round is an assistant message plus a shell call and
/// its (bulky) output. One round edits a file with `apply_patch`, one fails with an error line, one
/// updates the plan.
fn session(turns: usize, output_lines: usize) -> Conversation {
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "You are a careful coding agent.").with_id("sys"));
    conv.push(
        Item::text(
            Role::User,
            "Add retry support to the HTTP client in src/net/client.rs\nYou must keep the public API unchanged.",
        )
        .with_id("u0"),
    );
    for t in 0..turns {
        conv.push(
            Item::text(Role::Assistant, format!("Round {t}: inspecting the code."))
                .with_id(format!("a{t}")),
        );
        let id = format!("c{t}");
        match t {
            1 => {
                conv.push(call(
                    &id,
                    "apply_patch",
                    "{\"input\":\"*** Begin Patch\\n*** Update File: src/net/retry.rs\\n+fn backoff() {}\\n*** End Patch\"}",
                ));
                conv.push(result(
                    &id,
                    "Success. Updated the following files:\nM src/net/retry.rs",
                    false,
                ));
            }
            2 => {
                conv.push(call(&id, "shell", "{\"command\":[\"cargo\",\"test\"]}"));
                conv.push(result(
                    &id,
                    "Exit code: 101\nerror[E0425]: cannot find function `jitter_backoff`",
                    true,
                ));
            }
            3 => {
                conv.push(call(
                    &id,
                    "update_plan",
                    "{\"plan\":[{\"step\":\"Wire retries into send_request\",\"status\":\"in_progress\"}]}",
                ));
                conv.push(result(&id, "Plan updated", false));
            }
            _ => {
                conv.push(call(
                    &id,
                    "shell",
                    &format!("{{\"command\":[\"cat\",\"src/file{t}.rs\"]}}"),
                ));
                let body: String = (0..output_lines)
                    .map(|l| format!("line {l} of file {t}: let value_{l} = compute({l});\n"))
                    .collect();
                conv.push(result(&id, &body, false));
            }
        }
    }
    conv.push(Item::text(Role::Assistant, "Done.").with_id("final"));
    conv
}

/// Keeps the system prompt, the first user message, a checkpoint naming what it dropped, and the
/// newest items, whenever the history exceeds `trigger` tokens; aims at `target`.
struct DropOldest {
    trigger: usize,
    target: usize,
}

impl Preflighter for DropOldest {
    fn preflight(&mut self, mut held: Conversation) -> Result<Outcome, Box<Refusal>> {
        let c = counter();
        if c.total(&held) <= self.trigger {
            return Ok(Outcome {
                conversation: held,
                compaction: None,
                history: History::AsHeld,
            });
        }
        let head: Vec<Item> = held.items.drain(..2).collect();
        held.items
            .retain(|i| !matches!(i.body(), ItemBody::Checkpoint(_)));
        let mut dropped = Vec::new();
        while c.total(&held) > self.target && held.items.len() > 1 {
            dropped.push(held.items.remove(0));
        }
        // Keep tool pairs whole: a leading result without its call goes too.
        while held
            .items
            .first()
            .is_some_and(|i| i.as_tool_result().is_some())
        {
            dropped.push(held.items.remove(0));
        }
        let text = format!("Dropped {} items.", dropped.len());
        let mut items = head;
        items.push(
            Item::new(ItemBody::Checkpoint(Checkpoint {
                text,
                generation: 1,
                ..Checkpoint::default()
            }))
            .with_id("cp"),
        );
        items.append(&mut held.items);
        held.items = items;
        Ok(Outcome {
            conversation: held,
            compaction: Some(Compaction {
                tiers: vec!["drop".into()],
                ..Compaction::default()
            }),
            history: History::AsHeld,
        })
    }
}

#[test]
fn one_call_per_assistant_run() {
    let conv = session(12, 5);
    let run = replay_session(
        &conv,
        &ProbeSet::derive(&conv),
        &mut NoCompaction,
        &options(1_000_000),
    );
    // 12 rounds (message + call are one run) plus the final message.
    assert_eq!(run.calls.len(), 13);
    assert_eq!(run.overflows(), 0);
    assert_eq!(run.compactions(), 0);
}

#[test]
fn baseline_counts_overflows_honestly() {
    let conv = session(20, 40);
    let window = 6_000;
    let run = replay_session(
        &conv,
        &ProbeSet::derive(&conv),
        &mut NoCompaction,
        &options(window),
    );
    // Independent recount: the full history before each call, counted from scratch.
    let mut expected = 0;
    for record in &run.calls {
        let prefix = Conversation {
            items: conv.items[..record.at].to_vec(),
            ..Conversation::default()
        };
        let fresh: Vec<Item> = prefix
            .items
            .iter()
            .map(|i| Item::new(i.body().clone()))
            .collect();
        let total = counter().total(&Conversation {
            items: fresh,
            ..Conversation::default()
        });
        assert_eq!(record.tokens, total, "call at {}", record.at);
        expected += usize::from(total > window);
    }
    assert!(expected > 5, "the fixture must overflow the window");
    assert_eq!(run.overflows(), expected);
}

#[test]
fn compactions_are_carried_forward() {
    let conv = session(40, 40);
    let window = 8_000;
    let mut strategy = DropOldest {
        trigger: 6_000,
        target: 4_000,
    };
    let run = replay_session(
        &conv,
        &ProbeSet::derive(&conv),
        &mut strategy,
        &options(window),
    );
    assert_eq!(run.overflows(), 0);
    assert!(run.compactions() > 0);
    // Hysteresis carried forward: a compaction is followed by calls that need none.
    assert!(
        run.compactions() * 3 < run.calls.len(),
        "{} of {}",
        run.compactions(),
        run.calls.len()
    );
    assert!(run.peak_tokens() <= 6_000 + 2_000);
}

#[test]
fn cache_accounting_matches_hand_computation() {
    // Calls at a1 (history: s, u), a2 (history + a1, r1... ) with a rewrite at the third call.
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "system prompt").with_id("s"));
    conv.push(Item::text(Role::User, "first request").with_id("u"));
    conv.push(Item::text(Role::Assistant, "first answer").with_id("a1"));
    conv.push(Item::text(Role::User, "second request").with_id("u2"));
    conv.push(Item::text(Role::Assistant, "second answer").with_id("a2"));
    conv.push(Item::text(Role::User, "third request").with_id("u3"));
    conv.push(Item::text(Role::Assistant, "third answer").with_id("a3"));

    /// Rewrites the first user message at the third call.
    /// Rewrites the first user message at the third call, reporting it as a compaction or (second
    /// field `Repaired`) as an in-place repair.
    struct RewriteAtThird(usize, History);
    impl Preflighter for RewriteAtThird {
        fn preflight(&mut self, mut held: Conversation) -> Result<Outcome, Box<Refusal>> {
            self.0 += 1;
            if self.0 == 3 {
                held.items[1].set_body(Item::text(Role::User, "FIRST REQUEST").body().clone());
                let compaction = (self.1 == History::AsHeld).then(Compaction::default);
                return Ok(Outcome {
                    conversation: held,
                    compaction,
                    history: self.1,
                });
            }
            Ok(Outcome {
                conversation: held,
                compaction: None,
                history: History::AsHeld,
            })
        }
    }

    let c = counter();
    let tok = |id: &str| c.count_item(conv.find(id).unwrap());
    let per_request = c.framing().per_request as usize;
    let opts = options(100_000);
    let repaired = replay_session(
        &conv,
        &ProbeSet::derive(&conv),
        &mut RewriteAtThird(0, History::Repaired),
        &opts,
    );
    let run = replay_session(
        &conv,
        &ProbeSet::derive(&conv),
        &mut RewriteAtThird(0, History::AsHeld),
        &opts,
    );
    // A repair is not a compaction, but the cache sees the rewrite all the same.
    assert_eq!((run.compactions(), repaired.compactions()), (1, 0));
    let figures = |r: &compact_replay::SessionRun| -> Vec<(usize, usize)> {
        r.calls
            .iter()
            .map(|c| (c.tokens, c.cached_tokens))
            .collect()
    };
    assert_eq!(figures(&run), figures(&repaired));
    assert_eq!(run.calls.len(), 3);
    let [first, second, third] = [&run.calls[0], &run.calls[1], &run.calls[2]];
    assert_eq!(first.tokens, per_request + tok("s") + tok("u"));
    assert_eq!(first.cached_tokens, 0);
    assert_eq!(second.tokens, first.tokens + tok("a1") + tok("u2"));
    assert_eq!(second.cached_tokens, tok("s") + tok("u"));
    // The rewrite of `u` leaves only `s` shared.
    assert_eq!(third.cached_tokens, tok("s"));
    let rewritten = c.count_item(&Item::text(Role::User, "FIRST REQUEST"));
    assert_eq!(
        third.tokens,
        per_request + tok("s") + rewritten + tok("a1") + tok("u2") + tok("a2") + tok("u3")
    );
    // Cost: cached at 0.1, the rest written at 1.25, output at 4 (USD per million).
    let expected_cost = (third.cached_tokens as f64 * 0.1
        + (third.tokens - third.cached_tokens) as f64 * 1.25
        + tok("a3") as f64 * 4.0)
        / 1e6;
    assert!((third.cost - expected_cost).abs() < 1e-12);
    assert_eq!(third.output_tokens, tok("a3"));
}

#[test]
fn probes_are_derived_from_the_transcript() {
    let conv = session(6, 3);
    let probes = ProbeSet::derive(&conv);
    let texts = |kind: ProbeKind| -> Vec<String> {
        probes
            .probes()
            .iter()
            .filter(|p| p.kind == kind)
            .map(|p| p.text.clone())
            .collect()
    };
    assert_eq!(texts(ProbeKind::FileModified), vec!["src/net/retry.rs"]);
    assert_eq!(
        texts(ProbeKind::FailedCommand),
        vec!["error[E0425]: cannot find function `jitter_backoff`"]
    );
    assert_eq!(
        texts(ProbeKind::UserRequest),
        vec!["Add retry support to the HTTP client in src/net/client.rs"]
    );
    assert_eq!(
        texts(ProbeKind::Constraint),
        vec!["You must keep the public API unchanged."]
    );
    assert_eq!(
        texts(ProbeKind::PlanStep),
        vec!["Wire retries into send_request"]
    );
}

#[test]
fn retention_follows_what_the_model_sees() {
    let conv = session(30, 40);
    let probes = ProbeSet::derive(&conv);
    let baseline = replay_session(&conv, &probes, &mut NoCompaction, &options(1_000_000));
    let last = baseline.final_retention();
    assert_eq!(last.overall(), Some(1.0));
    assert_eq!(last.expected.iter().sum::<u32>(), 5);
    // Before the failing round, the failure is not expected yet.
    let early = &baseline.calls[2];
    assert_eq!(early.retention.of(ProbeKind::FailedCommand), None);

    // Dropping old items loses the failure, the edit and the plan but keeps the pinned user message.
    let mut strategy = DropOldest {
        trigger: 6_000,
        target: 4_000,
    };
    let run = replay_session(&conv, &probes, &mut strategy, &options(8_000));
    let last = run.final_retention();
    assert_eq!(last.of(ProbeKind::FailedCommand), Some(0.0));
    assert_eq!(last.of(ProbeKind::FileModified), Some(0.0));
    assert_eq!(last.of(ProbeKind::UserRequest), Some(1.0));
    assert_eq!(last.of(ProbeKind::Constraint), Some(1.0));
    assert_eq!(last.overall(), Some(2.0 / 5.0));
    // The run names the probes it lost: the three the final retention counts as missing.
    assert!(baseline.lost.is_empty());
    let lost: Vec<ProbeKind> = run
        .lost
        .iter()
        .map(|&i| probes.probes()[i as usize].kind)
        .collect();
    assert_eq!(lost.len(), 3, "{lost:?}");
    for kind in [ProbeKind::FailedCommand, ProbeKind::FileModified] {
        assert!(lost.contains(&kind), "{lost:?}");
    }
    assert!(!lost.contains(&ProbeKind::UserRequest));
}

#[test]
fn probes_in_a_checkpoint_count_as_present() {
    let conv = session(30, 40);
    let probes = ProbeSet::derive(&conv);

    /// Drops everything but the newest items and writes a checkpoint quoting the failure.
    struct Quoting;
    impl Preflighter for Quoting {
        fn preflight(&mut self, mut held: Conversation) -> Result<Outcome, Box<Refusal>> {
            if held.items.len() < 20 {
                return Ok(Outcome {
                    conversation: held,
                    compaction: None,
                    history: History::AsHeld,
                });
            }
            let keep = held.items.split_off(held.items.len() - 4);
            let text = "Failed: error[E0425]: cannot find function `jitter_backoff`".to_owned();
            held.items = vec![Item::new(ItemBody::Checkpoint(Checkpoint {
                text,
                generation: 1,
                ..Default::default()
            }))
            .with_id("cp")];
            held.items.extend(keep);
            Ok(Outcome {
                conversation: held,
                compaction: Some(Compaction {
                    tiers: vec!["summary".into()],
                    ..Compaction::default()
                }),
                history: History::AsHeld,
            })
        }
    }
    let run = replay_session(&conv, &probes, &mut Quoting, &options(1_000_000));
    assert!(run.compactions() > 0);
    assert_eq!(
        run.final_retention().of(ProbeKind::FailedCommand),
        Some(1.0)
    );
}

#[test]
fn refusals_are_recorded_and_the_history_sent_as_held() {
    struct Refuses;
    impl Preflighter for Refuses {
        fn preflight(&mut self, held: Conversation) -> Result<Outcome, Box<Refusal>> {
            Err(Box::new(Refusal {
                conversation: held,
                reason: "insufficient budget".into(),
            }))
        }
    }
    let conv = session(5, 5);
    let run = replay_session(&conv, &ProbeSet::derive(&conv), &mut Refuses, &options(10));
    assert_eq!(run.refusals(), run.calls.len());
    assert_eq!(run.overflows(), run.calls.len());
}

fn report(window: usize) -> Report {
    let opts = options(window);
    let jobs = vec![
        Job::new("long", "native", session(40, 40), &opts),
        Job::new("short", "native", session(5, 5), &opts),
    ];
    let strategies = vec![
        StrategyFactory::none(),
        StrategyFactory::new("drop-oldest", || {
            Box::new(DropOldest {
                trigger: 6_000,
                target: 4_000,
            })
        }),
    ];
    let names: Vec<String> = strategies.iter().map(|s| s.name().to_owned()).collect();
    let runs = run_matrix(&jobs, &strategies, &opts, 2, &());
    Report::build("test-model", "o200k_base", window, &jobs, &names, &runs)
}

#[test]
fn json_report_has_every_field() {
    let json = report(8_000).to_json();
    let strategies = json["strategies"].as_array().unwrap();
    assert_eq!(strategies.len(), 2);
    for s in strategies {
        for field in [
            "calls",
            "overflows",
            "compactions",
            "peak_tokens",
            "input_tokens",
            "cached_tokens",
            "cost",
            "retention",
            "retention_failed_approaches",
            "preflight_us_p50",
            "preflight_us_p99",
        ] {
            assert!(s.get(field).is_some(), "missing {field} in {s}");
        }
    }
    assert!(strategies[0]["overflows"].as_u64().unwrap() > 0);
    assert_eq!(strategies[1]["overflows"].as_u64(), Some(0));
    assert!(strategies[1]["compactions"].as_u64().unwrap() > 0);
    let sessions = json["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(
        sessions[0]["strategies"][0]["tokens_per_call"]
            .as_array()
            .unwrap()
            .len(),
        41
    );
    assert_eq!(json["sessions"][1]["probes"]["files"].as_u64(), Some(1));
}

#[test]
fn figures_are_also_given_per_format() {
    let opts = options(8_000);
    let jobs = vec![
        Job::new("long", "codex-rollout", session(40, 40), &opts),
        Job::new("short", "claude-code", session(5, 5), &opts),
        Job::new("other", "claude-code", session(12, 10), &opts),
    ];
    let strategies = vec![StrategyFactory::none()];
    let names = vec![NONE_STRATEGY.to_owned()];
    let runs = run_matrix(&jobs, &strategies, &opts, 2, &());
    let r = Report::build("test-model", "o200k_base", 8_000, &jobs, &names, &runs);
    let formats: Vec<&str> = r.by_format.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(formats, ["claude-code", "codex-rollout"]);
    let claude = &r.by_format[0].1[0];
    assert_eq!(claude.sessions, 2);
    assert_eq!(
        claude.calls,
        runs[1][0].calls.len() + runs[2][0].calls.len()
    );
    assert_eq!(r.by_format[1].1[0].overflows, runs[0][0].overflows());
    let json = r.to_json();
    assert_eq!(
        json["by_format"]["claude-code"][0]["sessions"].as_u64(),
        Some(2)
    );
    let md = compact_replay::render::markdown(&r);
    assert!(md.contains("`claude-code` (2 session(s))"), "{md}");
}

#[test]
fn table_and_markdown_list_every_strategy() {
    let r = report(8_000);
    let table = compact_replay::render::table(&r);
    let md = compact_replay::render::markdown(&r);
    for name in ["none", "drop-oldest"] {
        assert!(table.contains(name));
        assert!(md.contains(&format!("| {name} |")));
    }
}

/// A minimal XML well-formedness check: tags nest and close, attributes are quoted, and every `&`
/// starts an entity.
fn check_xml(doc: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = doc;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                    .iter()
                    .any(|e| entity.starts_with(e)),
                "bare & in {text}"
            );
        }
        let close = rest[open..].find('>').expect("unclosed tag") + open;
        let tag = &rest[open + 1..close];
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes in <{tag}>"
        );
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap().to_owned());
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
}

#[test]
fn svg_is_well_formed_and_labelled() {
    let r = report(8_000);
    let doc = compact_replay::render::svg(&r, compact_replay::render::PlotOptions::default());
    assert!(doc.starts_with("<svg"));
    check_xml(&doc);
    assert_eq!(doc.matches("<polyline").count(), 2);
    for label in [
        "window 8.0k",
        "none (no compaction)",
        "drop-oldest</tspan> — 0 overflows",
        "tokens sent",
        "model call",
    ] {
        assert!(doc.contains(label), "missing {label}");
    }
}

#[test]
fn compactions_recorded_in_the_transcript_are_undone() {
    let mut conv = session(3, 2);
    let covered: Vec<_> = conv.items[2..5].iter().map(|i| i.meta.id.clone()).collect();
    for item in &mut conv.items[2..5] {
        item.meta.visibility.model = false;
    }
    let checkpoint = Checkpoint {
        text: "earlier work".into(),
        generation: 1,
        covers: covered,
        ..Default::default()
    };
    conv.items.insert(
        5,
        Item::new(ItemBody::Checkpoint(checkpoint)).with_id("source-cp"),
    );
    let before = conv.items.len();
    let notes = compact_replay::undo_source_compactions(&mut conv);
    assert_eq!(notes.source_checkpoints, 1);
    assert_eq!(notes.restored_items, 3);
    assert_eq!(conv.items.len(), before - 1);
    assert!(conv.items.iter().all(|i| i.meta.visibility.model));
}

#[test]
fn json_has_per_call_series() {
    let r = report(8_000);
    let json = r.to_json();
    let series = json["sessions"][0]["strategies"][1]["retention_per_call_series"]
        .as_array()
        .unwrap();
    assert_eq!(series.len(), 41);
    // Before the first user message's probes are expected nothing is measured; afterwards a fraction.
    assert!(series
        .iter()
        .skip(1)
        .all(|v| v.as_f64().is_some_and(|f| (0.0..=1.0).contains(&f))));
    // The probes each strategy lost by the last call, kind and text, as the report holds them.
    let strategies = json["sessions"][0]["strategies"].as_array().unwrap();
    for (k, strategy) in strategies.iter().enumerate() {
        let lost = strategy["lost_probes"].as_array().unwrap();
        let expected = &r.sessions[0].lost_probes[k];
        assert_eq!(lost.len(), expected.len());
        for (p, (kind, text)) in lost.iter().zip(expected) {
            assert_eq!(p["kind"], kind.as_str());
            assert_eq!(p["text"], text.as_str());
        }
    }
}

#[test]
fn engine_strategies_keep_a_long_synthetic_session_in_the_window() {
    let window = 16_000;
    let conv = session(80, 40);
    let setup = setup(None, window, Some("gpt-5")).unwrap();
    let probes = ProbeSet::derive(&conv);
    let baseline = replay_session(&conv, &probes, &mut NoCompaction, &setup.options);
    assert!(
        baseline.peak_tokens() > 3 * window,
        "the session must be at least 3x the window"
    );
    let mut failures = Vec::new();
    for name in strategy_names().into_iter().filter(|n| *n != NONE_STRATEGY) {
        let factory = strategy(name, &setup.policy, setup.options.counter).unwrap();
        let run = replay_session(&conv, &probes, factory.start().as_mut(), &setup.options);
        assert_eq!(run.calls.len(), baseline.calls.len(), "{name}");
        if run.overflows() > 0 || run.compactions() == 0 {
            let reason = run.calls.iter().find_map(|c| c.refusal.clone());
            failures.push(format!(
                "{name}: {} overflows, {} compactions, peak {}, first refusal {reason:?}",
                run.overflows(),
                run.compactions(),
                run.peak_tokens()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A session of `turns` user turns, each a chain of `chain` shell reads and a closing answer; a turn
/// adds less than lies between the boundary floor and the trigger of the test below.
fn turns_session(turns: usize, chain: usize) -> Conversation {
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "You are a careful coding agent.").with_id("sys"));
    for t in 0..turns {
        conv.push(
            Item::text(Role::User, format!("Turn {t}: read the next files."))
                .with_id(format!("u{t}")),
        );
        for k in 0..chain {
            let id = format!("c{t}_{k}");
            conv.push(call(
                &id,
                "shell",
                &format!("{{\"command\":[\"cat\",\"src/f{t}_{k}.rs\"]}}"),
            ));
            let body: String = (0..10)
                .map(|l| format!("line {l} of file {t}/{k}: let value_{l} = compute({l});\n"))
                .collect();
            conv.push(result(&id, &body, false));
        }
        conv.push(Item::text(Role::Assistant, format!("Turn {t} done.")).with_id(format!("a{t}")));
    }
    conv
}

#[test]
fn compactions_are_counted_where_they_land_and_a_floor_moves_them_to_turn_ends() {
    let window = 16_000;
    let conv = turns_session(80, 4);
    let setup = setup(None, window, Some("gpt-5")).unwrap();
    let probes = ProbeSet::derive(&conv);
    let landed = |floor: Option<f64>| {
        let mut policy = setup.policy.clone();
        policy.boundary_trigger_pct = floor;
        let factory = strategy("tiered", &policy, setup.options.counter).unwrap();
        let run = replay_session(&conv, &probes, factory.start().as_mut(), &setup.options);
        assert_eq!(run.overflows(), 0);
        let totals = compact_replay::StrategyTotals::from_runs("tiered", [&run]);
        assert_eq!(
            totals.landed.at_boundary() + totals.landed.mid_work,
            totals.compactions
        );
        let json = totals.to_json();
        assert_eq!(
            json["compactions_landed"]["turn_end"].as_u64(),
            Some(totals.landed.turn_end as u64)
        );
        totals.landed
    };
    let hard = landed(None);
    assert!(hard.mid_work > 0, "{hard:?}");
    // A floor halfway between the target and the trigger.
    let b = compact_core::budget::Budget::new(&setup.policy);
    let floor = ((b.target + b.trigger) / 2) as f64 / b.usable as f64;
    let soft = landed(Some(floor));
    assert!(
        soft.turn_end > hard.turn_end && soft.mid_work < hard.mid_work,
        "with the floor {soft:?}, without {hard:?}"
    );
}

// ---- Corpus: every real session at 32k and 128k -------------------------------------------------

#[path = "../../core/tests/fixtures/corpus.rs"]
mod corpus;

/// Every transcript of the corpus, read leniently (a few Claude Code files have lines broken by
/// their owners' redaction).
fn corpus_jobs(options: &ReplayOptions) -> Option<Vec<Job>> {
    let paths = corpus::files(&corpus::dir()?);
    Some(
        paths
            .iter()
            .map(|p| {
                let bytes = std::fs::read(p).unwrap();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                load_job(&bytes, &name, ImportMode::Lenient, options)
                    .unwrap_or_else(|e| panic!("{name}: {e}"))
                    .0
            })
            .collect(),
    )
}

/// Tokens a session appends over its life: every model-visible item of the transcript.
fn new_tokens(job: &Job, counter: &TokenCounter) -> usize {
    job.conversation
        .items
        .iter()
        .filter(|i| i.meta.visibility.model)
        .map(|i| counter.count_item(i))
        .sum()
}

/// The whole corpus at 32k and 128k under every strategy: no call over the window, no refusal, and
/// no thrash: a session compacts fewer than `new tokens / (min_gain_pct x window) + 1` times.
#[test]
fn every_strategy_keeps_every_corpus_session_in_the_window_without_thrash() {
    for window in [32_000, 128_000] {
        let setup = setup(None, window, Some("gpt-5")).unwrap();
        let Some(jobs) = corpus_jobs(&setup.options) else {
            return;
        };
        let names: Vec<String> = strategy_names().iter().map(|s| (*s).to_owned()).collect();
        let strategies: Vec<_> = names
            .iter()
            .map(|n| strategy(n, &setup.policy, setup.options.counter).unwrap())
            .collect();
        let runs = run_matrix(&jobs, &strategies, &setup.options, 2, &());
        let mut failures = Vec::new();
        let mut overflowed = 0;
        for (job, row) in jobs.iter().zip(&runs) {
            let fresh = new_tokens(job, &setup.options.counter);
            let gain = setup.policy.min_gain_pct;
            assert!(gain >= 0.1, "the default gain keeps compactions apart");
            let bound = fresh as f64 / (gain * window as f64) + 1.0;
            for (name, run) in names.iter().zip(row) {
                if name == NONE_STRATEGY {
                    overflowed += run.overflows();
                    continue;
                }
                if run.overflows() > 0 || run.refusals() > 0 {
                    failures.push(format!(
                        "{window} {} / {name}: {} overflows, {} refusals, peak {}",
                        job.name,
                        run.overflows(),
                        run.refusals(),
                        run.peak_tokens()
                    ));
                }
                if run.compactions() as f64 >= bound {
                    failures.push(format!(
                        "{window} {} / {name}: {} compactions for {fresh} new tokens (bound {bound:.1})",
                        job.name,
                        run.compactions()
                    ));
                }
            }
        }
        assert!(
            overflowed > 0,
            "{window}: some sessions must outgrow the window"
        );
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}

/// `tiered`'s reversible stage alone (`reversible: only`, before every call whatever the window)
/// over the corpus, per format family: the share of the tokens sent it removes, against the `none`
/// baseline, with no call over the window and no refusal. The Claude Code sessions (file reads read
/// again, edited, searched, with reminders repeated after each read) must lose at least
/// [`CLAUDE_CODE_MIN_SHARE`] of their tokens.
#[test]
fn the_reversible_stage_alone_removes_a_share_of_every_family() {
    const CLAUDE_CODE_MIN_SHARE: f64 = REVERSIBLE_MIN_SHARE;
    let mut setup = setup(None, 1_000_000, Some("gpt-5")).unwrap();
    setup.policy.reversible = compact_core::policy::ReversibleMode::Only;
    let Some(jobs) = corpus_jobs(&setup.options) else {
        return;
    };
    let strategies = [
        strategy(NONE_STRATEGY, &setup.policy, setup.options.counter).unwrap(),
        strategy("tiered", &setup.policy, setup.options.counter).unwrap(),
    ];
    let runs = run_matrix(&jobs, &strategies, &setup.options, 2, &());
    let mut families: std::collections::BTreeMap<&str, (u64, u64)> = Default::default();
    for (job, row) in jobs.iter().zip(&runs) {
        let [none, tiered] = &row[..] else {
            panic!("two strategies")
        };
        assert_eq!(tiered.overflows() + tiered.refusals(), 0, "{}", job.name);
        let e = families.entry(job.format.as_str()).or_default();
        e.0 += none.input_tokens();
        e.1 += tiered.input_tokens();
    }
    let mut lines = Vec::new();
    for (family, (none, tiered)) in &families {
        assert!(tiered <= none, "{family}: the stage never adds tokens");
        let share = 1.0 - *tiered as f64 / (*none).max(1) as f64;
        lines.push(format!(
            "{family}: {none} -> {tiered} tokens sent ({:.1}% removed)",
            share * 100.0
        ));
    }
    println!("{}", lines.join("\n"));
    let (none, tiered) = families["claude-code"];
    let share = 1.0 - tiered as f64 / none as f64;
    assert!(share >= CLAUDE_CODE_MIN_SHARE, "{}", lines.join("\n"));
}

/// The share the reversible stage removes from the Claude Code sessions of the corpus, at the least.
const REVERSIBLE_MIN_SHARE: f64 = 0.22;

/// Through the session runtime (the replay's default path, as the proxy runs it): the runtime is
/// sent the whole history each call and keeps the view, and the replay sees what it would send:
/// no overflow, compactions carried forward, and the same shape of result as the engine's path
/// on the same session.
#[test]
fn the_runtime_path_replays_like_a_proxy_session() {
    use compact_core::policy::Policy;
    let conv = session(40, 40);
    let window = 8_000;
    let policy = Policy::for_window(window);
    let probes = ProbeSet::derive(&conv);
    let engine = strategy("tiered", &policy, counter()).unwrap();
    let runtime = compact_replay::runtime_strategy_with(
        "tiered",
        &policy,
        counter(),
        std::sync::Arc::new(compact_engine::DeterministicSummarizer),
    )
    .unwrap();
    let engine_run = replay_session(&conv, &probes, engine.start().as_mut(), &options(window));
    let runtime_run = replay_session(&conv, &probes, runtime.start().as_mut(), &options(window));
    for run in [&engine_run, &runtime_run] {
        assert_eq!(run.overflows(), 0);
        assert!(run.compactions() > 0);
        assert!(run.compactions() * 2 < run.calls.len());
        assert_eq!(run.calls.len(), engine_run.calls.len());
    }
    assert!(runtime_run.peak_tokens() <= window);
    // The runtime leaves room for the calls to come: it compacts no more often than the engine.
    assert!(runtime_run.compactions() <= engine_run.compactions());
    // An unknown strategy is refused by name, as on the engine's path.
    assert!(compact_replay::runtime_strategy_with(
        "no-such",
        &policy,
        counter(),
        std::sync::Arc::new(compact_engine::DeterministicSummarizer),
    )
    .is_err());
}
