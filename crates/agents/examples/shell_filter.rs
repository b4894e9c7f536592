//! Replays every recorded shell result of transcripts through the filter of `compactctl run`
//! (`bench/shell_filter.sh`): per format and budget, shell-output tokens before and after (overall
//! and the median session), the share of outputs passed unchanged, of error lines kept, of last
//! lines kept, and the replay's fact probes found in the filtered transcript against the unfiltered
//! one. Prints a Markdown table.
//!
//!   cargo run -p compact-agents --example shell_filter -- [--budgets 500,1000,2000] FILE...
//!
//! With `SHELL_FILTER_MISSES=1` it also lists, on stderr, each cut output that lost error lines;
//! with `SHELL_FILTER_ERRORS=1`, every error line (`is_error_line`) of every shell output, once per
//! output, to compare two versions of the rule; with `SHELL_FILTER_DIST=1`, the tokens of the outputs
//! that fit the budget and what lossless densification would make them; with `SHELL_FILTER_DUMP=DIR`,
//! every output's lines with their token counts (raw and as a terminal shows them) under `DIR`, to
//! measure what outputs consist of.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Conversation, Item, ItemBody, Part};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_core::truncate::{error_message_key, filter_shell_output, is_error_line, render_line};
use compact_formats::import::{import, ImportMode, ImportOptions};
use compact_replay::ProbeSet;
use std::collections::{HashMap, HashSet};

/// Tools that run a shell command, lowercased (Claude Code, Codex, SWE-agent, OpenHands).
const SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "exec_command",
    "execute_bash",
    "local_shell",
    "shell_command",
    "container.exec",
    "run_shell_command",
    "terminal",
];

#[derive(Default)]
struct Tally {
    sessions: usize,
    outputs: usize,
    unchanged: usize,
    tokens_before: usize,
    tokens_after: usize,
    session_savings: Vec<f64>,
    error_lines: usize,
    error_kept: usize,
    error_messages: usize,
    error_messages_kept: usize,
    /// Error lines (and those kept) of the cut outputs whose error lines together fit in half the
    /// budget, the most the filter ever gives them.
    fitting_lines: usize,
    fitting_kept: usize,
    last_lines: usize,
    last_kept: usize,
    probes_before: usize,
    probes_lost: usize,
    /// Tokens of the outputs that fit the budget, and what lossless densification would make them.
    fitting_tokens: usize,
    fitting_densified: usize,
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / d as f64)
    }
}

fn text_of(item: &Item) -> Option<String> {
    let ItemBody::ToolResult(r) = item.body() else {
        return None;
    };
    let texts: Vec<&str> = r.parts.iter().filter_map(Part::as_text).collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// The indices of shell results in `conv`.
fn shell_results(conv: &Conversation) -> Vec<usize> {
    let mut names: HashMap<&str, String> = HashMap::new();
    for item in &conv.items {
        if let ItemBody::ToolCall(c) = item.body() {
            names.insert(c.call_id.as_str(), c.name.to_ascii_lowercase());
        }
    }
    conv.items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.meta.visibility.model)
        .filter_map(|(i, item)| {
            let ItemBody::ToolResult(r) = item.body() else {
                return None;
            };
            let name = r
                .tool_name
                .as_deref()
                .map(str::to_ascii_lowercase)
                .or_else(|| names.get(r.call_id.as_str()).cloned())?;
            SHELL_TOOLS.contains(&name.as_str()).then_some(i)
        })
        .collect()
}

fn rendered(line: &str) -> String {
    render_line(line).trim_end().to_owned()
}

/// The budgets (`--budgets N,N`, first) and the transcript files.
fn arguments() -> (Vec<usize>, Vec<String>) {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut budgets = vec![500usize, 1_000, 2_000];
    if args.first().map(String::as_str) == Some("--budgets") {
        budgets = args[1]
            .split(',')
            .map(|b| b.parse().expect("--budgets N,N"))
            .collect();
        args.drain(..2);
    }
    (budgets, args)
}

/// One transcript's shell results, with the probes found in it before any filtering.
struct Transcript<'a> {
    file: &'a str,
    conv: &'a Conversation,
    /// Indices of the shell results.
    shell: Vec<usize>,
    probes: ProbeSet,
    /// Probes the whole transcript holds.
    found_before: HashSet<u32>,
    /// Probes the items other than shell results hold (the filter cannot lose them).
    found_other: HashSet<u32>,
}

impl<'a> Transcript<'a> {
    /// The transcript `conv` read from `file`; `None` when it has no shell result.
    fn of(file: &'a str, conv: &'a Conversation) -> Option<Self> {
        let shell = shell_results(conv);
        if shell.is_empty() {
            return None;
        }
        let probes = ProbeSet::derive(conv);
        let mut found_before: HashSet<u32> = HashSet::new();
        for item in &conv.items {
            found_before.extend(probes.find_in_item(item));
        }
        let shell_set: HashSet<usize> = shell.iter().copied().collect();
        let mut found_other: HashSet<u32> = HashSet::new();
        for (i, item) in conv.items.iter().enumerate() {
            if !shell_set.contains(&i) {
                found_other.extend(probes.find_in_item(item));
            }
        }
        Some(Transcript {
            file,
            conv,
            shell,
            probes,
            found_before,
            found_other,
        })
    }

    /// Lists on stderr every error line of every shell output, once per output
    /// (`SHELL_FILTER_ERRORS`).
    fn print_error_lines(&self) {
        for &i in &self.shell {
            let Some(text) = text_of(&self.conv.items[i]) else {
                continue;
            };
            let errors: HashSet<&str> = text.lines().filter(|l| is_error_line(l)).collect();
            for line in errors {
                eprintln!("{}\t{}", self.conv.items[i].meta.id, line.trim_end());
            }
        }
    }
}

/// Filters every shell output of `tr` to `budget` and adds what it kept to `t`; with
/// `show_misses`, lists on stderr each cut output that lost error lines.
fn tally_budget(
    t: &mut Tally,
    tr: &Transcript<'_>,
    budget: usize,
    counter: &TokenCounter,
    show_misses: bool,
    show_dist: bool,
) {
    t.sessions += 1;
    let mut found_after = tr.found_other.clone();
    let (mut before, mut after) = (0usize, 0usize);
    for &i in &tr.shell {
        let item = &tr.conv.items[i];
        let Some(text) = text_of(item) else { continue };
        let (out, cut) = filter_shell_output(&text, budget, counter, &item.meta.id);
        t.outputs += 1;
        if let Some(dir) = std::env::var_os("SHELL_FILTER_DUMP") {
            dump(std::path::Path::new(&dir), tr.file, &text, &cut, counter);
        }
        if cut.original_tokens <= budget && show_dist {
            t.fitting_tokens += cut.original_tokens;
            t.fitting_densified += counter.count_text(&compact_core::truncate::densify(&text));
        }
        before += cut.original_tokens;
        after += cut.tokens;
        found_after.extend(tr.probes.find_in(&out));
        if !cut.changed {
            t.unchanged += 1;
            continue;
        }
        let (missed, errors) = tally_errors(t, &text, &out, budget, counter);
        if show_misses && !missed.is_empty() {
            eprintln!(
                "{budget}\t{}\t{}\t{} of {} error lines missed, {} -> {} tokens",
                tr.file,
                item.meta.id,
                missed.len(),
                errors,
                cut.original_tokens,
                cut.tokens
            );
            for m in &missed {
                eprintln!("\t\t{}", m.chars().take(160).collect::<String>());
            }
        }
        tally_last_line(t, &text, &out);
    }
    t.tokens_before += before;
    t.tokens_after += after;
    if before > 0 {
        t.session_savings.push(1.0 - after as f64 / before as f64);
    }
    t.probes_before += tr.found_before.len();
    t.probes_lost += tr.found_before.difference(&found_after).count();
}

/// Writes one output for offline analysis (`SHELL_FILTER_DUMP=DIR`): its lines, each after its
/// token count and a tab, in `DIR/N.tsv`, and a row `N, fits, tokens, file` in `DIR/index.tsv`.
fn dump(
    dir: &std::path::Path,
    file: &str,
    text: &str,
    cut: &compact_core::truncate::ShellCut,
    counter: &TokenCounter,
) {
    use std::io::Write;
    std::fs::create_dir_all(dir).unwrap();
    let n = std::fs::read_dir(dir).unwrap().count();
    let mut lines = String::new();
    for line in text.split('\n') {
        let shown = counter.count_text(render_line(line).trim_end()) + 1;
        lines.push_str(&format!(
            "{}\t{shown}\t{}\n",
            counter.count_text(line) + 1,
            line
        ));
    }
    std::fs::write(dir.join(format!("{n}.tsv")), lines).unwrap();
    let mut index = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("index.tsv"))
        .unwrap();
    writeln!(
        index,
        "{n}\t{}\t{}\t{}\t{}",
        !cut.changed, cut.original_tokens, cut.tokens, file
    )
    .unwrap();
}

/// Counts the error lines of the shell output `text` that its filtered form `out` kept (lines,
/// distinct messages, and lines whose errors fit in half the budget). The lines missed (each
/// as looked for) and how many error lines there were.
fn tally_errors(
    t: &mut Tally,
    text: &str,
    out: &str,
    budget: usize,
    counter: &TokenCounter,
) -> (Vec<String>, usize) {
    let errors: HashSet<String> = text
        .lines()
        .filter(|l| is_error_line(l))
        .map(rendered)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut missed = Vec::new();
    for line in &errors {
        t.error_lines += 1;
        let probe: String = line.chars().take(400).collect();
        if out.contains(&probe) {
            t.error_kept += 1;
        } else {
            missed.push(probe);
        }
    }
    // The same message (digits aside) counts once, kept when any of its lines is.
    let mut messages: HashMap<String, bool> = HashMap::new();
    for line in &errors {
        let probe: String = line.chars().take(400).collect();
        *messages.entry(error_message_key(line)).or_default() |= out.contains(&probe);
    }
    let error_tokens: usize = errors.iter().map(|l| counter.count_text(l)).sum();
    if error_tokens <= budget / 2 {
        t.fitting_lines += errors.len();
        t.fitting_kept += errors.len() - missed.len();
    }
    t.error_messages += messages.len();
    t.error_messages_kept += messages.values().filter(|k| **k).count();
    (missed, errors.len())
}

/// Counts whether the filtered output `out` kept the last non-blank line of `text` (itself, as
/// the count of a repeat, or the end of a long line).
fn tally_last_line(t: &mut Tally, text: &str, out: &str) {
    if let Some(last) = text.lines().map(rendered).rfind(|l| !l.trim().is_empty()) {
        t.last_lines += 1;
        let tail = out.trim_end();
        let last_out = tail.rsplit('\n').next().unwrap_or("");
        if tail.ends_with(&last)
            || tail.contains(&format!("{last} (repeated"))
            || (last_out.len() >= 16 && last.ends_with(last_out))
        {
            t.last_kept += 1;
        }
    }
}

/// Prints the Markdown table: one row per budget.
fn print_table(budgets: &[usize], tallies: &mut [Tally]) {
    println!(
        "| budget | sessions | shell outputs | passed unchanged | shell tokens before | after | saved | median session saved | error lines kept | error lines kept where they fit in half the budget | distinct error messages kept | last line kept | probes lost (all in recallable outputs) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (b, t) in tallies.iter_mut().enumerate() {
        t.session_savings.sort_by(|a, b| a.total_cmp(b));
        let median = t
            .session_savings
            .get(t.session_savings.len() / 2)
            .copied()
            .unwrap_or(0.0);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1}% | {} ({}/{}) | {} ({}/{}) | {} ({}/{}) | {} | {} of {} ({}) |",
            budgets[b],
            t.sessions,
            t.outputs,
            pct(t.unchanged, t.outputs),
            t.tokens_before,
            t.tokens_after,
            pct(
                t.tokens_before - t.tokens_after.min(t.tokens_before),
                t.tokens_before
            ),
            100.0 * median,
            pct(t.error_kept, t.error_lines),
            t.error_kept,
            t.error_lines,
            pct(t.fitting_kept, t.fitting_lines),
            t.fitting_kept,
            t.fitting_lines,
            pct(t.error_messages_kept, t.error_messages),
            t.error_messages_kept,
            t.error_messages,
            pct(t.last_kept, t.last_lines),
            t.probes_lost,
            t.probes_before,
            pct(t.probes_lost, t.probes_before),
        );
    }
}

fn main() {
    let (budgets, files) = arguments();
    // SHELL_FILTER_MISSES=1 lists, on stderr, every cut output whose error lines were not all kept.
    let show_misses = std::env::var_os("SHELL_FILTER_MISSES").is_some();
    let show_errors = std::env::var_os("SHELL_FILTER_ERRORS").is_some();
    // SHELL_FILTER_DIST=1 prints, on stderr, the tokens of the outputs that fit the budget and what
    // lossless densification would make them.
    let show_dist = std::env::var_os("SHELL_FILTER_DIST").is_some();
    let counter = TokenCounter::new(Encoding::O200kBase);
    let mut tallies: Vec<Tally> = budgets.iter().map(|_| Tally::default()).collect();
    let mut skipped = 0;
    for file in &files {
        let bytes = std::fs::read(file).expect("reading a transcript");
        // Lenient, as `compactctl replay --lenient`: a broken line is skipped, not the whole session.
        let options = ImportOptions {
            mode: ImportMode::Lenient,
            ..ImportOptions::default()
        };
        let imported = match import(&bytes, file, &options) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("skipped {file}: {e}");
                skipped += 1;
                continue;
            }
        };
        let Some(transcript) = Transcript::of(file, &imported.conversation) else {
            continue;
        };
        if show_errors {
            transcript.print_error_lines();
        }
        for (t, &budget) in tallies.iter_mut().zip(&budgets) {
            tally_budget(t, &transcript, budget, &counter, show_misses, show_dist);
        }
    }
    print_table(&budgets, &mut tallies);
    if show_dist {
        for (t, budget) in tallies.iter().zip(&budgets) {
            eprintln!(
                "{budget}: outputs that fit: {} of {} tokens, densified {}",
                t.fitting_tokens, t.tokens_before, t.fitting_densified
            );
        }
    }
    if skipped > 0 {
        eprintln!("{skipped} files could not be read");
    }
}
