//! `compactctl replay`: replays transcripts call by call through one or more strategies and reports
//! overflows, compactions, tokens, cost with prompt caching, fact retention and preflight latency.
//!
//! A file that cannot be read or imported does not stop the batch: it is named with the reason on
//! stderr and in the report (`skipped`), and the other files are replayed. The exit status is 0 when
//! at least one file was replayed (the failures are in the report), 2 when none could be read.

use crate::exit::BadInput;
use crate::input::read_input;
use crate::output::write_output;
use compact_config::Overrides;
use compact_core::policy::ReversibleMode;
use compact_formats::import::ImportMode;
use compact_replay::{
    family_of, load_job, project_of, prune_generic_jobs, render, run_matrix, runtime_strategy_with,
    score_boundaries, setup_with, split, strategy_names, strategy_with, Half, Job, ProgressSink,
    Report, SkippedFile, SplitEntry, StrategyFactory, NONE_STRATEGY,
};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `compactctl replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Transcripts to replay (any format `inspect` reads). Files that cannot be read are skipped and
    /// reported; the command fails (exit 2) only when none can be read.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Context window in tokens: a request above it is an overflow.
    #[arg(long)]
    pub window: usize,
    /// Model whose tokenizer and prices are used (default: the config's, else gpt-5).
    #[arg(long)]
    pub model: Option<String>,
    /// One strategy to replay (beside the `none` baseline).
    #[arg(long, conflicts_with = "compare")]
    pub strategy: Option<String>,
    /// Strategies to compare, comma separated (`all` for every one; default: none and the config's
    /// strategy).
    #[arg(long, value_delimiter = ',')]
    pub compare: Option<Vec<String>>,
    /// Configuration file (YAML): policy, summariser, and `models:` overrides including prices.
    #[arg(long)]
    pub config: Option<String>,
    /// The summariser of the strategies' checkpoints (its calls priced at the replayed model's
    /// prices).
    #[command(flatten)]
    pub llm: crate::engine::SummarizerFlags,
    /// Print the report as JSON (per strategy and per session).
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the report as Markdown.
    #[arg(long)]
    pub markdown: bool,
    /// Write an SVG plot of the tokens sent at each call, per strategy, to this file.
    #[arg(long)]
    pub plot: Option<String>,
    /// Write the report as one self-contained HTML file (per-strategy table, cost and retention
    /// charts, the probes each strategy lost, the sawtooth of every session; no network needed to
    /// view it).
    #[arg(long, value_name = "PATH")]
    pub html: Option<String>,
    /// Also run every transcript through the session runtime (`CompactManager`, with the
    /// configuration's strategy) into this store, one session per file named after it, call by
    /// call: `sqlite:PATH` (created when missing) or `postgres://...`. `compactctl ui` shows it.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Worker threads (default: the available cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Skip malformed records with a warning instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// Run only `tiered`'s reversible stage, before every call whatever the window (policy
    /// `reversible: only`): what it removes without losing anything.
    #[arg(long = "reversible-only")]
    pub reversible_only: bool,
    /// Which preflight replays the calls: `runtime` (the session runtime, as the proxy and the
    /// Python binding run it: the whole history sent on every call, the view kept incrementally)
    /// or `engine` (the engine's stateless preflight on the history as last sent).
    #[arg(long, value_enum, default_value_t = PreflightPath::Runtime)]
    pub preflight: PreflightPath,
    /// Replay only one half of the files given, split by project (source repository) and balanced
    /// per agent family by a stable hash of the project name (`compact_replay::split` documents
    /// the rule): tune on one half, report on the other.
    #[arg(long, value_enum)]
    pub split: Option<SplitHalf>,
    /// Print each file's project, family and half (tab separated), without replaying.
    #[arg(long)]
    pub list_split: bool,
}

/// See [`ReplayArgs::split`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SplitHalf {
    /// The first half.
    #[value(name = "A", alias = "a")]
    A,
    /// The second half.
    #[value(name = "B", alias = "b")]
    B,
}

/// See [`ReplayArgs::preflight`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PreflightPath {
    /// The session runtime.
    Runtime,
    /// The engine's stateless preflight.
    Engine,
}

/// Replays shorter than this many (session, strategy) pairs finish too fast to need a progress bar.
const PROGRESS_MIN_REPLAYS: usize = 8;

/// Runs `replay`.
pub fn run(args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let flags = args.llm.over(Overrides::default());
    let mut setup = setup_with(
        args.config.as_deref().map(Path::new),
        args.window,
        args.model.as_deref(),
        flags,
    )
    .map_err(|e| BadInput(e.to_string()))?;
    let summarizer = crate::engine::summarizer(&setup.summarizer)?;
    if args.reversible_only {
        setup.policy.reversible = ReversibleMode::Only;
    }
    let names = strategy_list(args, setup.policy.strategy.as_str());
    let strategies = names
        .iter()
        .map(|n| {
            let build = match args.preflight {
                PreflightPath::Runtime => runtime_strategy_with,
                PreflightPath::Engine => strategy_with,
            };
            build(
                n,
                &setup.policy,
                setup.options.counter,
                Arc::clone(&summarizer),
            )
        })
        .collect::<Result<Vec<StrategyFactory>, _>>()
        .map_err(|e| BadInput(format!("--compare/--strategy: {e}")))?;
    if setup.pricing_source == "none" {
        eprintln!(
            "compactctl: note: {} has no API price in the registry; costs are 0",
            setup.model
        );
    }

    let mode = if args.lenient {
        ImportMode::Lenient
    } else {
        ImportMode::Strict
    };
    let mut jobs = Vec::with_capacity(args.files.len());
    let mut loaded_files: Vec<&str> = Vec::with_capacity(args.files.len());
    let mut skipped = Vec::new();
    for file in &args.files {
        let loaded = read_input(file).and_then(|bytes| {
            load_job(&bytes, file, mode, &setup.options).map_err(anyhow::Error::from)
        });
        let (job, notes) = match loaded {
            Ok(loaded) => loaded,
            Err(e) => {
                eprintln!("compactctl: warning: skipping {file}: {e}");
                skipped.push(SkippedFile {
                    file: file.clone(),
                    reason: e.to_string(),
                });
                continue;
            }
        };
        for warning in &notes.warnings {
            eprintln!("compactctl: warning: {warning}");
        }
        if notes.source_checkpoints > 0 {
            eprintln!(
                "compactctl: note: {file}: undid {} compaction(s) recorded in the transcript ({} items restored)",
                notes.source_checkpoints, notes.restored_items
            );
        }
        jobs.push(job);
        loaded_files.push(file);
    }
    if args.split.is_some() || args.list_split {
        let kept = select_half(args, &mut jobs, &loaded_files, setup.options.counter);
        if args.list_split {
            write_output(None, &kept)?;
            return Ok(ExitCode::SUCCESS);
        }
        if jobs.is_empty() && !loaded_files.is_empty() {
            return Err(BadInput(format!(
                "--split: none of the {} transcripts read is in this half",
                loaded_files.len()
            ))
            .into());
        }
    }
    if jobs.is_empty() {
        let reasons: Vec<String> = skipped
            .iter()
            .map(|k| format!("  {}: {}", k.file, k.reason))
            .collect();
        return Err(BadInput(format!(
            "no transcript could be read:\n{}",
            reasons.join("\n")
        ))
        .into());
    }

    prune_generic_jobs(&mut jobs);
    let threads = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let total = jobs.len() * strategies.len();
    let runs = if total >= PROGRESS_MIN_REPLAYS && std::io::stderr().is_terminal() {
        let bar = render::ProgressBar::new("replay");
        let runs = run_matrix(
            &jobs,
            &strategies,
            &setup.options,
            threads,
            &bar as &dyn ProgressSink,
        );
        bar.finish();
        runs
    } else {
        run_matrix(&jobs, &strategies, &setup.options, threads, &())
    };
    let encoding = setup.options.counter.encoding().name();
    let report = Report::build(&setup.model, encoding, args.window, &jobs, &names, &runs)
        .with_skipped(skipped)
        .with_boundaries(&score_boundaries(&jobs, &setup.options));

    if let Some(path) = &args.html {
        write_output(Some(path), &render::html(&report))?;
    }
    if let Some(url) = &args.store {
        crate::cmd::replay_store::fill(url, &jobs, &setup)?;
    }
    if let Some(path) = &args.plot {
        write_output(
            Some(path),
            &render::svg(&report, render::PlotOptions::default()),
        )?;
    }
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&report.to_json())?;
        s.push('\n');
        s
    } else if args.markdown {
        render::markdown(&report)
    } else {
        render::table(&report)
    };
    write_output(None, &text)?;
    Ok(ExitCode::SUCCESS)
}

/// Keeps the jobs of the half `--split` names (all with `--list-split` alone) and returns the
/// listing `--list-split` prints: file, project, family and half, one line each.
fn select_half(
    args: &ReplayArgs,
    jobs: &mut Vec<Job>,
    files: &[&str],
    counter: compact_core::tokens::TokenCounter,
) -> String {
    let mut manifests = std::collections::HashMap::new();
    let entries: Vec<SplitEntry> = jobs
        .iter()
        .zip(files)
        .map(|(job, file)| SplitEntry {
            project: project_of(Path::new(file), &mut manifests),
            family: family_of(&job.format).to_owned(),
            weight: counter.total(&job.conversation) as u64,
        })
        .collect();
    let halves = split(&entries);
    let want = args.split.map(|h| match h {
        SplitHalf::A => Half::A,
        SplitHalf::B => Half::B,
    });
    let mut listing = String::new();
    for ((file, entry), half) in files.iter().zip(&entries).zip(&halves) {
        if want.is_none_or(|w| w == *half) {
            listing.push_str(&format!(
                "{file}\t{}\t{}\t{}\n",
                entry.project,
                entry.family,
                half.as_str()
            ));
        }
    }
    let mut keep = halves.iter().map(|h| want.is_none_or(|w| w == *h));
    jobs.retain(|_| keep.next().unwrap_or(false));
    listing
}

/// The strategies to replay, baseline first, without duplicates.
fn strategy_list(args: &ReplayArgs, default: &str) -> Vec<String> {
    let requested: Vec<String> = match (&args.compare, &args.strategy) {
        (Some(list), _) if list.iter().any(|s| s == "all") => {
            strategy_names().iter().map(|s| (*s).to_owned()).collect()
        }
        (Some(list), _) => list
            .iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        (None, Some(one)) => vec![NONE_STRATEGY.to_owned(), one.clone()],
        (None, None) => vec![NONE_STRATEGY.to_owned(), default.to_owned()],
    };
    let mut out: Vec<String> = Vec::new();
    for name in requested {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}
