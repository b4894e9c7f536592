//! Replays transcript files with the `none` baseline (and any strategy the crate knows) and prints the
//! comparison table: `cargo run --release -p compact-replay --example replay_files -- --window 32000 FILE...`.

use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_formats::import::ImportMode;
use compact_replay::{
    load_job, render, run_matrix, strategy, strategy_names, Pricing, ReplayOptions, Report,
};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut window = 32_000usize;
    let mut files = Vec::new();
    let mut show_probes = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--probes" {
            show_probes = true;
        } else if arg == "--window" {
            window = args.next().ok_or("--window needs a value")?.parse()?;
        } else {
            files.push(arg);
        }
    }
    let options = ReplayOptions {
        window,
        counter: TokenCounter::new(Encoding::O200kBase),
        pricing: Pricing::default(),
    };
    let started = Instant::now();
    let mut jobs = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file)?;
        let (job, notes) = load_job(&bytes, file, ImportMode::Lenient, &options)?;
        eprintln!(
            "{}: {} items, {} probes, {} source checkpoints undone, {} items restored",
            job.name,
            job.conversation.items.len(),
            job.probes.len(),
            notes.source_checkpoints,
            notes.restored_items
        );
        if show_probes {
            for p in job.probes.probes() {
                eprintln!("  {:>12} @{:<4} {}", p.kind.as_str(), p.origin, p.text);
            }
        }
        jobs.push(job);
    }
    eprintln!("loaded in {:.2}s", started.elapsed().as_secs_f64());
    let policy = Policy::for_window(window);
    let strategies = strategy_names()
        .into_iter()
        .map(|name| strategy(name, &policy, options.counter))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<String> = strategies.iter().map(|s| s.name().to_owned()).collect();
    let bar = render::ProgressBar::new("replay");
    let runs = run_matrix(&jobs, &strategies, &options, 2, &bar);
    bar.finish();
    let report = Report::build("gpt-5", "o200k_base", window, &jobs, &names, &runs);
    print!("{}", render::table(&report));
    if std::env::var_os("REPLAY_JSON").is_some() {
        println!("{}", report.to_json());
    }
    eprintln!("total {:.2}s", started.elapsed().as_secs_f64());
    Ok(())
}
