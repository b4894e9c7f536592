//! Measures the `SessionStart` hook on real transcripts (`bench/hooks.sh`): at every compaction a
//! transcript records, the fact probes of `compact-replay` (files modified, failed commands with
//! their error line, requests, constraints, plan steps) that came from the dropped span, and the
//! share of them present in the hook's added context, in the agent's own summary, and in both
//! together; with the sizes in tokens. Prints a Markdown table.
//!
//!   cargo run -p compact-agents --example hook_probes -- FILE...
//!   cargo run -p compact-agents --example hook_probes -- --max-tokens 1500 FILE...
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_agents::checkpoint::{counter, hook_context, DEFAULT_HOOK_TOKENS};
use compact_agents::transcript::load;
use compact_core::model::ItemBody;
use compact_replay::{ProbeKind, ProbeSet};
use std::collections::HashSet;

#[derive(Default)]
struct Tally {
    probes: [usize; ProbeKind::COUNT],
    hook: [usize; ProbeKind::COUNT],
    summary: [usize; ProbeKind::COUNT],
    both: [usize; ProbeKind::COUNT],
    hook_tokens: Vec<usize>,
    summary_tokens: Vec<usize>,
    cuts: usize,
    sessions: usize,
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / d as f64)
    }
}

fn median(v: &mut [usize]) -> usize {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut max_tokens = DEFAULT_HOOK_TOKENS;
    if args.first().map(String::as_str) == Some("--max-tokens") {
        max_tokens = args[1].parse().expect("--max-tokens N");
        args.drain(..2);
    }
    let count = counter();
    let mut t = Tally::default();
    for file in &args {
        let imported = match load(std::path::Path::new(file)) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("skipped {file}: {e}");
                continue;
            }
        };
        let conv = &imported.conversation;
        let probes = ProbeSet::derive(conv);
        let mut any = false;
        for (at, item) in conv.items.iter().enumerate() {
            let ItemBody::Checkpoint(summary) = item.body() else {
                continue;
            };
            let covered: HashSet<_> = summary.covers.iter().collect();
            let dropped: Vec<usize> = (0..at)
                .filter(|&k| covered.contains(&conv.items[k].meta.id))
                .filter(|&k| !matches!(conv.items[k].body(), ItemBody::Checkpoint(_)))
                .collect();
            if dropped.is_empty() {
                continue;
            }
            let span: Vec<_> = dropped.iter().map(|&k| conv.items[k].clone()).collect();
            let Some(context) = hook_context(&span, max_tokens) else {
                continue;
            };
            let positions: HashSet<usize> = dropped.iter().copied().collect();
            let in_hook: HashSet<u32> = probes.find_in(&context).into_iter().collect();
            let in_summary: HashSet<u32> = probes.find_in(&summary.text).into_iter().collect();
            for (k, probe) in probes.probes().iter().enumerate() {
                if !positions.contains(&probe.origin) || !probe.expected_at(at) {
                    continue;
                }
                let kind = probe.kind.index();
                let k = k as u32;
                t.probes[kind] += 1;
                t.hook[kind] += usize::from(in_hook.contains(&k));
                t.summary[kind] += usize::from(in_summary.contains(&k));
                t.both[kind] += usize::from(in_hook.contains(&k) || in_summary.contains(&k));
            }
            t.hook_tokens.push(count.count_text(&context));
            t.summary_tokens.push(count.count_text(&summary.text));
            t.cuts += 1;
            any = true;
        }
        t.sessions += usize::from(any);
    }
    println!(
        "{} compactions in {} sessions; hook budget {max_tokens} tokens (o200k_base)\n",
        t.cuts, t.sessions
    );
    println!("| probes | count | in hook output | in the agent's summary | in either |");
    println!("|---|---:|---:|---:|---:|");
    let sum = |a: &[usize; ProbeKind::COUNT]| a.iter().sum::<usize>();
    for kind in ProbeKind::ALL {
        let k = kind.index();
        println!(
            "| {} | {} | {} | {} | {} |",
            kind.as_str(),
            t.probes[k],
            pct(t.hook[k], t.probes[k]),
            pct(t.summary[k], t.probes[k]),
            pct(t.both[k], t.probes[k])
        );
    }
    println!(
        "| all | {} | {} | {} | {} |",
        sum(&t.probes),
        pct(sum(&t.hook), sum(&t.probes)),
        pct(sum(&t.summary), sum(&t.probes)),
        pct(sum(&t.both), sum(&t.probes))
    );
    let (hook_total, summary_total): (usize, usize) =
        (t.hook_tokens.iter().sum(), t.summary_tokens.iter().sum());
    println!(
        "\nSize in tokens: hook output median {}, max {}, total {hook_total}; agent's summary median {}, max {}, total {summary_total}.",
        median(&mut t.hook_tokens.clone()),
        t.hook_tokens.iter().max().unwrap_or(&0),
        median(&mut t.summary_tokens.clone()),
        t.summary_tokens.iter().max().unwrap_or(&0),
    );
}
