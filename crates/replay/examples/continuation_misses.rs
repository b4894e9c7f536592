//! Where a strategy loses the continuation anchors: at every continuation cut of a replay, each anchor
//! the strategy's request lacks, with the history item that last held it (kind, tool, age in items),
//! what the compaction did to that item (rewritten in place: a stub, a cut, a densified copy; gone:
//! summarised or dropped), and whether the same-size tail held it. Also what the request spends its
//! tokens on. A diagnostic for issue #18's work, not a figure of BENCHMARKS.md.
//!
//! ```sh
//! cargo run --release -p compact-replay --example continuation_misses -- --window 32000 \
//!     [--strategy tiered] [--config policy.yaml] [--list] FILE...
//! ```
//!
//! `--list` prints every missed anchor (session, cut, anchor, last holder, fate, age, whether the tail
//! held it); `PERCUT=1` prints each cut's count against the tail's; `DUMP=<cut>` prints, at the
//! cut at that item index, every item of the request (its index in the history, tokens, how many of
//! the cut's anchors it holds, kind and fate, and the start of its text; `FULL=<index>` prints that
//! item's whole text). The summary counts the misses by
//! fate, holder and age, and per item kind the tokens the requests spend and the anchors only that
//! item holds (per 1,000 tokens: what giving those tokens to the same-size tail would have to beat).
//! Results in Codex's JSON wrapper (`{"output": …, "metadata": …}`) are labelled `+wrapped`, and the
//! summary says how many of them the requests at cuts hold, how many were cut, how many of those are
//! still a wrapper with their metadata, and what of the printed output's error lines and last line
//! the cut ones keep.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use compact_core::model::{Conversation, Item, ItemBody};
use compact_core::plan::REFERENCE_PREFIX;
use compact_core::tokens::TokenCounter;
use compact_core::truncate::{codex_wrapped, is_error_line};
use compact_formats::import::ImportMode;
use compact_replay::{
    call_points, load_job, prune_generic_jobs, replay_session_with_cuts, setup, strategy,
    tail_within, Cut, Job, Outcome, Preflighter, Refusal, ReplayOptions, StrategyFactory,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

type Captured = Arc<Mutex<HashMap<usize, Conversation>>>;

/// Passes every call to the strategy and keeps the request it returns at the cut points.
struct Capture {
    inner: Box<dyn Preflighter>,
    points: Vec<usize>,
    next: usize,
    cuts: HashSet<usize>,
    captured: Captured,
}

impl Preflighter for Capture {
    fn preflight(&mut self, held: Conversation) -> Result<Outcome, Box<Refusal>> {
        let at = self.points.get(self.next).copied();
        self.next += 1;
        let out = self.inner.preflight(held);
        if let (Some(at), Ok(outcome)) = (at, &out) {
            if self.cuts.contains(&at) {
                self.captured
                    .lock()
                    .unwrap()
                    .insert(at, outcome.conversation.clone());
            }
        }
        out
    }
}

fn label(item: &Item, names: &HashMap<String, String>) -> String {
    match item.body() {
        ItemBody::Message(m) => format!("msg:{:?}", m.role).to_lowercase(),
        ItemBody::ToolCall(c) => format!("call:{}", c.name),
        ItemBody::ToolResult(r) => format!(
            "result:{}{}",
            r.tool_name
                .clone()
                .or_else(|| names.get(&r.call_id).cloned())
                .unwrap_or_default(),
            if codex_wrapped(&item.plain_text()).is_some() {
                "+wrapped"
            } else {
                ""
            }
        ),
        ItemBody::Reasoning(_) => "reasoning".into(),
        ItemBody::Checkpoint(_) => "checkpoint".into(),
        ItemBody::ProviderCompaction(_) => "provider-compaction".into(),
        ItemBody::Opaque(_) => "opaque".into(),
    }
}

fn age_bucket(age: usize) -> &'static str {
    match age {
        0..=9 => "a<10",
        10..=29 => "b10-29",
        30..=99 => "c30-99",
        100..=299 => "d100-299",
        _ => "e300+",
    }
}

/// The command line: flags, files, and the environment's extra printouts.
struct Args {
    window: usize,
    strategy: String,
    config: Option<std::path::PathBuf>,
    /// Print every missed anchor.
    list: bool,
    files: Vec<String>,
    /// `PERCUT`: print each cut's count against the tail's.
    percut: bool,
    /// `DUMP`: the cut whose request items to print.
    dump: Option<String>,
    /// `FULL`: the history index of the item whose whole text the dump prints.
    full: Option<String>,
}

impl Args {
    fn read() -> Self {
        let mut window = 32_000usize;
        let mut strategy = "tiered".to_owned();
        let mut config: Option<std::path::PathBuf> = None;
        let mut list = false;
        let mut files = Vec::new();
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--window" => {
                    window = args
                        .next()
                        .and_then(|v| v.parse().ok())
                        .expect("--window N")
                }
                "--strategy" => strategy = args.next().expect("--strategy NAME"),
                "--config" => config = args.next().map(Into::into),
                "--list" => list = true,
                _ => files.push(a),
            }
        }
        Args {
            window,
            strategy,
            config,
            list,
            files,
            percut: std::env::var("PERCUT").is_ok(),
            dump: std::env::var("DUMP").ok(),
            full: std::env::var("FULL").ok(),
        }
    }
}

/// The counts the summary prints, summed over every cut of every session.
#[derive(Default)]
struct Tally {
    /// (fate, label, age bucket, tail held it) -> count
    misses: BTreeMap<(String, String, &'static str, bool), usize>,
    /// label:fate -> tokens in the requests at cuts
    spend: BTreeMap<String, usize>,
    /// label:fate -> anchors of a cut that only that item of the request holds
    unique: BTreeMap<String, usize>,
    expected: usize,
    held_total: usize,
    tail_total: usize,
    only_strategy: usize,
    only_tail: usize,
    wrapped: WrappedTally,
}

/// Codex's wrapped results in the requests at cuts (an item counts once per cut that holds it).
#[derive(Default)]
struct WrappedTally {
    /// Wrapped results the requests hold.
    held: usize,
    /// Of those, replaced by a reference stub.
    stubs: usize,
    /// Of those, rewritten otherwise (cut, densified).
    cut: usize,
    /// Distinct items cut at some cut.
    cut_items: HashSet<String>,
    /// Cut ones that are still a wrapper with the original's metadata (exit code).
    still_wrapped: usize,
    /// Distinct error lines of the printed output of the cut ones, and those kept.
    error_lines: usize,
    error_lines_kept: usize,
    /// Cut ones whose printed output's last non-blank line is kept.
    last_line_kept: usize,
}

impl WrappedTally {
    /// Counts `held`, the request's copy of `original` (a wrapped result).
    fn add(&mut self, original: &Item, held: &Item) {
        let Some(w) = codex_wrapped(&original.plain_text()) else {
            return;
        };
        self.held += 1;
        let text = held.plain_text();
        if text == original.plain_text() {
            return;
        }
        if text.starts_with(REFERENCE_PREFIX) {
            self.stubs += 1;
            return;
        }
        self.cut += 1;
        self.cut_items.insert(original.meta.id.as_str().to_owned());
        let kept = codex_wrapped(&text);
        if kept
            .as_ref()
            .is_some_and(|k| k.has_metadata == w.has_metadata && k.exit_code == w.exit_code)
        {
            self.still_wrapped += 1;
        }
        // A line is kept when the cut wrapper's output shows it, or, for a wrapper cut as one
        // line, when the text shows it as JSON escapes it.
        let shows = |line: &str| {
            kept.as_ref().is_some_and(|k| k.output.contains(line))
                || serde_json::to_string(line).is_ok_and(|e| text.contains(&e[1..e.len() - 1]))
        };
        let errors: HashSet<&str> = w
            .output
            .lines()
            .map(str::trim_end)
            .filter(|l| is_error_line(l))
            .collect();
        self.error_lines += errors.len();
        self.error_lines_kept += errors.iter().filter(|l| shows(l)).count();
        if w.output
            .lines()
            .map(str::trim_end)
            .rfind(|l| !l.is_empty())
            .is_none_or(shows)
        {
            self.last_line_kept += 1;
        }
    }
}

/// One session replayed: the strategy's requests at its cuts, and what each history item holds.
struct Session<'a> {
    job: &'a Job,
    /// The request the strategy returned at each cut, by the cut's item index.
    captured: HashMap<usize, Conversation>,
    /// Tool names by call id (for results that do not name their tool).
    names: HashMap<String, String>,
    /// Tokens every request spends besides its items (tools, framing).
    fixed: usize,
    /// The anchors each history item holds, found once for every cut of the session.
    in_history: Vec<Vec<u32>>,
}

impl<'a> Session<'a> {
    /// Replays `job` with the strategy, keeping its request at each continuation cut; `None` for
    /// a session without cuts.
    fn replay(job: &'a Job, factory: &StrategyFactory, options: &ReplayOptions) -> Option<Self> {
        let items = &job.conversation.items;
        let cuts: HashSet<usize> = job.continuation.cuts().iter().map(|c| c.at).collect();
        if cuts.is_empty() {
            return None;
        }
        let captured: Captured = Arc::default();
        let mut capture = Capture {
            inner: factory.start(),
            points: call_points(items),
            next: 0,
            cuts,
            captured: Arc::clone(&captured),
        };
        replay_session_with_cuts(
            &job.conversation,
            &job.probes,
            &job.continuation,
            &mut capture,
            options,
        );
        let names: HashMap<String, String> = items
            .iter()
            .filter_map(|i| match i.body() {
                ItemBody::ToolCall(c) => Some((c.call_id.clone(), c.name.clone())),
                _ => None,
            })
            .collect();
        let captured = std::mem::take(&mut *captured.lock().unwrap());
        let counter = options.counter;
        let fixed =
            counter.count_tools(&job.conversation.tools) + counter.framing().per_request as usize;
        let in_history: Vec<Vec<u32>> = items
            .iter()
            .map(|i| job.continuation.find_in(&i.plain_text()))
            .collect();
        Some(Session {
            job,
            captured,
            names,
            fixed,
            in_history,
        })
    }

    /// Each visible item of `request` (the request at `cut`) once: its label and fate, its
    /// tokens, and the anchors it holds.
    fn request_items(
        &self,
        cut: &Cut,
        request: &Conversation,
        counter: &TokenCounter,
    ) -> Vec<(String, usize, Vec<u32>)> {
        let originals: HashMap<&str, &Item> = self.job.conversation.items[..cut.at]
            .iter()
            .map(|i| (i.meta.id.as_str(), i))
            .collect();
        request
            .items
            .iter()
            .filter(|i| i.meta.visibility.model)
            .map(|item| {
                let text = item.plain_text();
                let fate = match originals.get(item.meta.id.as_str()) {
                    Some(o) if o.plain_text() == text => "verbatim",
                    Some(_) => "rewritten",
                    None => "new",
                };
                let found = self.job.continuation.find_in(&text);
                let lab = format!("{} {fate}", label(item, &self.names));
                (lab, counter.count_item(item), found)
            })
            .collect()
    }
}

/// Counts (and prints, as asked) what the request at `cut` holds against the same-size tail.
fn tally_cut(
    tally: &mut Tally,
    session: &Session<'_>,
    cut: &Cut,
    request: &Conversation,
    counter: &TokenCounter,
    args: &Args,
) {
    let (job, items) = (session.job, &session.job.conversation.items);
    let per = session.request_items(cut, request, counter);
    let present: HashSet<u32> = per.iter().flat_map(|(_, _, f)| f.iter().copied()).collect();
    let tokens = session.fixed + per.iter().map(|(_, n, _)| n).sum::<usize>();
    // Anchors of this cut that only one item of the request holds, per item label.
    let cut_set: HashSet<u32> = cut.anchors.iter().copied().collect();
    let mut holders: HashMap<u32, usize> = HashMap::new();
    for a in per
        .iter()
        .flat_map(|(_, _, f)| f)
        .filter(|a| cut_set.contains(a))
    {
        *holders.entry(*a).or_default() += 1;
    }
    let originals: HashMap<&str, &Item> = items[..cut.at]
        .iter()
        .map(|i| (i.meta.id.as_str(), i))
        .collect();
    for held in request.items.iter().filter(|i| i.meta.visibility.model) {
        if let Some(original) = originals.get(held.meta.id.as_str()) {
            if original.as_tool_result().is_some() {
                tally.wrapped.add(original, held);
            }
        }
    }
    for (lab, n, found) in &per {
        *tally.spend.entry(lab.clone()).or_default() += n;
        *tally.unique.entry(lab.clone()).or_default() +=
            found.iter().filter(|a| holders.get(a) == Some(&1)).count();
    }
    let mut tail: HashSet<u32> = HashSet::new();
    for item in tail_within(&items[..cut.at], counter, session.fixed, tokens) {
        tail.extend(job.continuation.find_in(&item.plain_text()));
    }
    let held_ids: HashMap<&str, &Item> = request
        .items
        .iter()
        .map(|i| (i.meta.id.as_str(), i))
        .collect();
    if args.percut {
        let s = cut.anchors.iter().filter(|a| present.contains(a)).count();
        let t = cut.anchors.iter().filter(|a| tail.contains(a)).count();
        println!(
            "cut {} @{} tokens {} anchors {} strategy {} tail {} diff {:+.3}",
            job.name,
            cut.at,
            tokens,
            cut.anchors.len(),
            s,
            t,
            (s as f64 - t as f64) / cut.anchors.len() as f64
        );
    }
    if args.dump.as_deref() == Some(cut.at.to_string().as_str()) {
        print_dump(session, cut, request, &per, args.full.as_deref());
    }
    tally_anchors(tally, session, cut, (&present, &tail), &held_ids, args.list);
}

/// Counts each anchor of `cut` as held by the request (`present`), the same-size tail, both or
/// neither; a miss is counted (and listed, as asked) by the fate of the history item that last
/// held it, its label and its age.
fn tally_anchors(
    tally: &mut Tally,
    session: &Session<'_>,
    cut: &Cut,
    (present, tail): (&HashSet<u32>, &HashSet<u32>),
    held_ids: &HashMap<&str, &Item>,
    list: bool,
) {
    let (job, items) = (session.job, &session.job.conversation.items);
    for &a in &cut.anchors {
        tally.expected += 1;
        let (s, t) = (present.contains(&a), tail.contains(&a));
        tally.held_total += usize::from(s);
        tally.tail_total += usize::from(t);
        tally.only_strategy += usize::from(s && !t);
        tally.only_tail += usize::from(t && !s);
        if s {
            continue;
        }
        let last = session.in_history[..cut.at]
            .iter()
            .rposition(|f| f.contains(&a));
        let Some(idx) = last else { continue };
        let item = &items[idx];
        let fate = match held_ids.get(item.meta.id.as_str()) {
            Some(h) if !h.meta.visibility.model => "hidden",
            Some(_) => "rewritten",
            None => "gone",
        };
        let lab = label(item, &session.names);
        let age = cut.at - idx;
        if list {
            println!(
                "{}\t{}\t{}\t{}\t{}\tage {}\ttail {}",
                job.name,
                cut.at,
                job.continuation.anchors()[a as usize].text,
                lab,
                fate,
                age,
                t
            );
        }
        *tally
            .misses
            .entry((fate.to_owned(), lab, age_bucket(age), t))
            .or_default() += 1;
    }
}

/// Prints every visible item of the request at `cut` (`DUMP`): its history index, tokens, how
/// many of the cut's anchors it holds, label, and the start of its text (all of it for `full`).
fn print_dump(
    session: &Session<'_>,
    cut: &Cut,
    request: &Conversation,
    per: &[(String, usize, Vec<u32>)],
    full: Option<&str>,
) {
    let cut_set: HashSet<u32> = cut.anchors.iter().copied().collect();
    let index: HashMap<&str, usize> = session.job.conversation.items[..cut.at]
        .iter()
        .enumerate()
        .map(|(i, it)| (it.meta.id.as_str(), i))
        .collect();
    for (item, (lab, n, found)) in request
        .items
        .iter()
        .filter(|i| i.meta.visibility.model)
        .zip(per)
    {
        let at = index.get(item.meta.id.as_str()).copied();
        let held = found.iter().filter(|a| cut_set.contains(a)).count();
        let whole = at.is_some_and(|a| full == Some(a.to_string().as_str()));
        let text: String = item
            .plain_text()
            .chars()
            .take(if whole { 4000 } else { 90 })
            .collect();
        println!(
            "  {:>5} {n:6} {held:3} {lab:28} {}",
            at.map_or("-".into(), |a| a.to_string()),
            text.replace('\n', " ")
        );
    }
}

/// Prints the totals, the misses by fate, holder and age, and the tokens the requests spend per
/// item kind and fate.
fn print_summary(tally: Tally) {
    println!(
        "anchors expected {}, strategy {}, tail {}, only strategy {}, only tail {}",
        tally.expected, tally.held_total, tally.tail_total, tally.only_strategy, tally.only_tail
    );
    let w = &tally.wrapped;
    println!(
        "wrapped results held {}, stubs {}, cut {} ({} items), cut still a wrapper with its metadata {}, \
         error lines of the cut ones kept {}/{}, last line kept {}",
        w.held,
        w.stubs,
        w.cut,
        w.cut_items.len(),
        w.still_wrapped,
        w.error_lines_kept,
        w.error_lines,
        w.last_line_kept
    );
    println!("\nmisses by fate, last holder, age, tail held it:");
    let mut rows: Vec<_> = tally.misses.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    for ((fate, lab, age, t), n) in rows.iter().take(60) {
        println!("{n:6}  {fate:9} {lab:28} {age:9} tail={t}");
    }
    println!("\ntokens of the requests at cuts, by item and fate:");
    let mut rows: Vec<_> = tally.spend.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    let total: usize = rows.iter().map(|r| r.1).sum();
    for (k, n) in rows.iter().take(40) {
        let u = tally.unique.get(k).copied().unwrap_or(0);
        println!(
            "{n:9} {:5.1}%  unique {u:5} ({:.2}/1k)  {k}",
            100.0 * *n as f64 / total as f64,
            1000.0 * u as f64 / *n as f64
        );
    }
}

fn main() {
    let args = Args::read();
    let setup = setup(args.config.as_deref(), args.window, None).expect("setup");
    let options = &setup.options;
    let counter = options.counter;
    let mut jobs: Vec<Job> = args
        .files
        .iter()
        .filter_map(|f| {
            let bytes = std::fs::read(f).ok()?;
            load_job(&bytes, f, ImportMode::Lenient, options)
                .ok()
                .map(|(j, _)| j)
        })
        .collect();
    prune_generic_jobs(&mut jobs);
    let factory = strategy(&args.strategy, &setup.policy, counter).expect("strategy");
    let mut tally = Tally::default();
    for job in &jobs {
        let Some(session) = Session::replay(job, &factory, options) else {
            continue;
        };
        for cut in job.continuation.cuts() {
            if let Some(request) = session.captured.get(&cut.at) {
                tally_cut(&mut tally, &session, cut, request, &counter, &args);
            }
        }
    }
    print_summary(tally);
}
