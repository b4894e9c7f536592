//! Replays a few real transcripts from the shared corpus (when present) at a 32k window: every
//! strategy except the `none` baseline must keep every call within the window.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_formats::import::ImportMode;
use compact_replay::{
    load_job, run_matrix, setup, strategy, strategy_names, Report, NONE_STRATEGY,
};
use std::path::Path;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus");
const WINDOW: usize = 32_000;

/// Sessions that outgrow a 32k window (so the baseline overflows and the strategies have work to
/// do), one per agent family that does.
const FILES: [&str; 3] = [
    "codex-rollout/bumpy-croc__rollout-2025-10-14T22-34-26-0199e4a5-5b78-78f2-b041-6b876f71fdab.jsonl",
    "codex-rollout/MoonLadderStudios__rollout-2025-11-13T18-21-11-019a802a-aab1-7c31-9831-d2510c7a74a2.jsonl",
    "aider/AlexShchuka__aider.chat.history.md",
];

#[test]
fn no_strategy_overflows_a_32k_window_on_corpus_sessions() {
    if !Path::new(CORPUS).is_dir() {
        println!("corpus not found at {CORPUS}; skipping");
        return;
    }
    let setup = setup(None, WINDOW, Some("gpt-5")).unwrap();
    let jobs: Vec<_> = FILES
        .iter()
        .map(|f| {
            let bytes = std::fs::read(Path::new(CORPUS).join(f)).unwrap();
            load_job(&bytes, f, ImportMode::Strict, &setup.options)
                .unwrap()
                .0
        })
        .collect();
    let names: Vec<String> = strategy_names().iter().map(|s| (*s).to_owned()).collect();
    let strategies: Vec<_> = names
        .iter()
        .map(|n| strategy(n, &setup.policy, setup.options.counter).unwrap())
        .collect();
    let runs = run_matrix(&jobs, &strategies, &setup.options, 2, &());
    let report = Report::build(&setup.model, "o200k_base", WINDOW, &jobs, &names, &runs);

    let baseline = &report.aggregate[0];
    assert_eq!(baseline.strategy, NONE_STRATEGY);
    assert!(
        baseline.overflows > 0,
        "these sessions must outgrow the window"
    );
    let mut failures = Vec::new();
    for session in &report.sessions {
        for t in session
            .strategies
            .iter()
            .filter(|t| t.strategy != NONE_STRATEGY)
        {
            assert_eq!(
                t.calls, session.strategies[0].calls,
                "every strategy sees every call"
            );
            if t.overflows > 0 {
                failures.push(format!(
                    "{} / {}: {} overflows, peak {}, {:?}",
                    session.name, t.strategy, t.overflows, t.peak_tokens, t.refusal_reasons
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "calls over the window:\n{}",
        failures.join("\n")
    );
}
