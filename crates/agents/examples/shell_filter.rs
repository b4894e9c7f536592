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
//! measure what outputs consist of; with `SHELL_FILTER_JSON=1`, the outputs that are pretty-printed
//! JSON documents and what re-encoding them compactly before the filter would save
//! (`SHELL_FILTER_JSON_LIST=1`: each of them).
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
    /// `SHELL_FILTER_JSON`: pretty JSON outputs and what re-encoding them would save.
    json: JsonTally,
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
    // What `compactctl run` filters is what the command printed: Codex's harness wraps it (and
    // its exit code) in JSON after the filter has run, so the wrapper is looked through here.
    (!texts.is_empty()).then(|| printed_output(&texts.join("\n")))
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
    show_json: bool,
) {
    t.sessions += 1;
    let mut found_after = tr.found_other.clone();
    let (mut before, mut after) = (0usize, 0usize);
    for &i in &tr.shell {
        let item = &tr.conv.items[i];
        let Some(text) = text_of(item) else { continue };
        let (out, cut) = filter_shell_output(&text, budget, counter, &item.meta.id);
        t.outputs += 1;
        if show_json {
            tally_json(&mut t.json, tr, item, &text, budget, counter);
        }
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
    // SHELL_FILTER_JSON=1 prints, on stderr, the pretty JSON outputs and what re-encoding them
    // compactly would save (SHELL_FILTER_JSON_LIST=1: each of them).
    let show_json = std::env::var_os("SHELL_FILTER_JSON").is_some();
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
            tally_budget(
                t,
                &transcript,
                budget,
                &counter,
                show_misses,
                show_dist,
                show_json,
            );
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
    if show_json {
        for (t, budget) in tallies.iter().zip(&budgets) {
            let j = &t.json;
            eprintln!(
                "{budget}: pretty JSON: {} outputs, {} of {} tokens; fit: {} outputs, {} tokens, \
                 re-encoded {} (spaced) / {} (tight); cut: {} outputs, {} tokens, after {} / \
                 re-encoded first {}; net saved {} ({:.2} points); file views left alone: {} \
                 outputs, {} tokens; upper bound (JSON-shaped lines of outputs that fit, unindented): {} -> {}",
                j.outputs,
                j.tokens,
                t.tokens_before,
                j.fit_outputs,
                j.fit_tokens,
                j.fit_spaced,
                j.fit_tight,
                j.cut_outputs,
                j.cut_tokens,
                j.cut_after,
                j.cut_after_reencoded,
                j.saved,
                100.0 * j.saved as f64 / t.tokens_before.max(1) as f64,
                j.views,
                j.view_tokens,
                j.loose_tokens,
                j.loose_after,
            );
        }
    }
    if skipped > 0 {
        eprintln!("{skipped} files could not be read");
    }
}

/// `SHELL_FILTER_JSON=1` (issue 45): what re-encoding pretty-printed JSON outputs compactly, before
/// the filter, would save. An output counts when it is one or more JSON documents (objects or
/// arrays, whitespace between) printed over several lines, and the command is not a file view
/// ([`is_file_view`]); Codex's harness wrapper is looked through (its `output` is what the command
/// printed). Measured, not built: the replay's figures are those of the filter as it is.
#[derive(Default)]
struct JsonTally {
    /// Pretty JSON outputs by the rule, and their tokens.
    outputs: usize,
    tokens: usize,
    /// Of them, those that fit the budget: tokens, and re-encoded (`", "`/`": "` kept; none).
    fit_outputs: usize,
    fit_tokens: usize,
    fit_spaced: usize,
    fit_tight: usize,
    /// Those cut: their tokens, the filter's tokens after, and after when re-encoded first.
    cut_outputs: usize,
    cut_tokens: usize,
    cut_after: usize,
    cut_after_reencoded: usize,
    /// Net tokens saved on the half (the note paid; only where it saves).
    saved: usize,
    /// Pretty JSON outputs left alone as file views, and their tokens.
    views: usize,
    view_tokens: usize,
    /// Upper bound over every output that fits, file views included: tokens before and after
    /// the indentation of every line shaped like a JSON member or bracket is dropped.
    loose_tokens: usize,
    loose_after: usize,
}

/// The command of the call `call_id` answers (Claude Code `command`, Codex `command` array or `cmd`).
fn command_of(conv: &Conversation, call_id: &str) -> String {
    for item in &conv.items {
        if let ItemBody::ToolCall(c) = item.body() {
            if c.call_id == call_id {
                let Some(v) = c.arguments.to_value() else {
                    return String::new();
                };
                let cmd = v.get("command").or_else(|| v.get("cmd"));
                return match cmd {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(serde_json::Value::Array(a)) => {
                        a.last().and_then(|x| x.as_str()).unwrap_or("").to_owned()
                    }
                    _ => String::new(),
                };
            }
        }
    }
    String::new()
}

/// Whether `command` shows a file's text as it is (the agent may edit it by exact match): the
/// last command of the line is a pipeline whose source prints a file (`cat`, `head`, `tail`,
/// `sed`, `less`, `more`, `bat`, `nl`, `tac`; `git show`, `git diff`, `git cat-file`, `git log
/// -p`) and whose later stages only select lines (`head`, `tail`, `sed`, `grep`, `cat`, `nl`).
fn is_file_view(command: &str) -> bool {
    const VIEWERS: &[&str] = &[
        "cat", "head", "tail", "sed", "less", "more", "bat", "nl", "tac",
    ];
    const SELECTORS: &[&str] = &["head", "tail", "sed", "grep", "cat", "nl", "less", "more"];
    let line = command
        .replace("&&", "\n")
        .replace("||", "\n")
        .replace(';', "\n");
    let Some(last) = line.lines().rev().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let stages: Vec<Vec<&str>> = last
        .split('|')
        .map(|s| {
            s.split_whitespace()
                .skip_while(|w| w.contains('=') || *w == "sudo" || *w == "command")
                .collect()
        })
        .collect();
    let program = |words: &Vec<&str>| -> String {
        words
            .first()
            .map(|w| w.rsplit('/').next().unwrap_or(w).to_owned())
            .unwrap_or_default()
    };
    let source = &stages[0];
    let viewer = match program(source).as_str() {
        "git" => source
            .iter()
            .skip(1)
            .find(|w| !w.starts_with('-'))
            .is_some_and(|sub| {
                matches!(*sub, "show" | "diff" | "cat-file")
                    || (*sub == "log" && source.iter().any(|w| *w == "-p" || *w == "--patch"))
            }),
        p => VIEWERS.contains(&p),
    };
    viewer
        && stages[1..]
            .iter()
            .all(|s| SELECTORS.contains(&program(s).as_str()))
}

/// `text` as compact JSON when it is one or more pretty-printed JSON documents (objects or
/// arrays): whitespace outside strings dropped, `", "` and `": "` kept when `spaced`, one document
/// a line; strings, numbers and key order as they are. `None` for anything else.
fn compact_json(text: &str, spaced: bool) -> Option<String> {
    let body = text.trim();
    if !body.starts_with(['{', '[']) || !body.contains('\n') {
        return None;
    }
    let mut documents = 0;
    for value in serde_json::Deserializer::from_str(body).into_iter::<serde_json::Value>() {
        if !matches!(
            value.ok()?,
            serde_json::Value::Object(_) | serde_json::Value::Array(_)
        ) {
            return None;
        }
        documents += 1;
    }
    if documents == 0 {
        return None;
    }
    let mut out = String::with_capacity(body.len());
    let (mut in_string, mut escaped, mut depth) = (false, false, 0usize);
    // Printed over several lines: a line break inside a document (JSON lines are compact already).
    let mut pretty = false;
    for c in body.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '\n' => pretty |= depth > 0,
            ' ' | '\t' | '\r' => {}
            ',' | ':' => {
                out.push(c);
                if spaced {
                    out.push(' ');
                }
            }
            '{' | '[' => {
                depth += 1;
                out.push(c);
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                out.push(c);
                if depth == 0 {
                    out.push('\n');
                }
            }
            _ => out.push(c),
        }
    }
    pretty.then(|| out.trim_end().to_owned())
}

/// What the command printed: Codex's harness wrapper (`{"output": …, "metadata": …}`) looked
/// through, any other text as it is.
fn printed_output(text: &str) -> String {
    match compact_core::truncate::codex_wrapped(text) {
        Some(w) if w.has_metadata => w.output,
        _ => text.to_owned(),
    }
}

/// Adds the shell output `text` (answering `call_id`) to `j` when it is pretty JSON.
fn tally_json(
    j: &mut JsonTally,
    tr: &Transcript<'_>,
    item: &Item,
    text: &str,
    budget: usize,
    counter: &TokenCounter,
) {
    let ItemBody::ToolResult(r) = item.body() else {
        return;
    };
    let printed = printed_output(text);
    let tokens = counter.count_text(&printed);
    if tokens <= budget {
        let (stripped, any) = strip_json_indentation(&printed);
        if any {
            j.loose_tokens += tokens;
            j.loose_after += counter.count_text(&stripped);
        }
    }
    let Some(spaced) = compact_json(&printed, true) else {
        return;
    };
    if is_file_view(&command_of(tr.conv, &r.call_id)) {
        j.views += 1;
        j.view_tokens += tokens;
        return;
    }
    let tight = compact_json(&printed, false).unwrap_or_default();
    let note = format!(
        "[JSON re-encoded compactly; as printed: compactctl recall {}]\n",
        item.meta.id
    );
    let reencoded = format!("{note}{spaced}\n");
    let (_, before) = filter_shell_output(&printed, budget, counter, &item.meta.id);
    let (_, with) = filter_shell_output(&reencoded, budget, counter, &item.meta.id);
    j.outputs += 1;
    j.tokens += tokens;
    if tokens <= budget {
        j.fit_outputs += 1;
        j.fit_tokens += tokens;
        j.fit_spaced += counter.count_text(&spaced);
        j.fit_tight += counter.count_text(&tight);
    } else {
        j.cut_outputs += 1;
        j.cut_tokens += tokens;
        j.cut_after += before.tokens;
        j.cut_after_reencoded += with.tokens;
    }
    j.saved += before.tokens.saturating_sub(with.tokens);
    if std::env::var_os("SHELL_FILTER_JSON_LIST").is_some() {
        eprintln!(
            "json\t{budget}\t{}\t{tokens} -> spaced {} / tight {}; filtered {} -> {}\t{}",
            tr.file,
            counter.count_text(&spaced),
            counter.count_text(&tight),
            before.tokens,
            with.tokens,
            command_of(tr.conv, &r.call_id)
                .chars()
                .take(100)
                .collect::<String>()
        );
    }
}

/// `text` with the indentation of every line shaped like a JSON member (`"key":`) or bracket
/// dropped, and whether there was any.
fn strip_json_indentation(text: &str) -> (String, bool) {
    let mut any = false;
    let lines: Vec<&str> = text
        .split('\n')
        .map(|line| {
            let body = line.trim_start();
            let shaped = (body.starts_with('"') && body.contains("\":"))
                || matches!(
                    body.trim_end(),
                    "{" | "}" | "[" | "]" | "}," | "]," | "{}" | "[]"
                );
            if shaped && body.len() < line.len() {
                any = true;
                body
            } else {
                line
            }
        })
        .collect();
    (lines.join("\n"), any)
}
