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

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use compact_core::model::{Conversation, Item, ItemBody};
use compact_formats::import::ImportMode;
use compact_replay::{
    call_points, load_job, prune_generic_jobs, replay_session_with_cuts, setup, strategy,
    tail_within, Job, Outcome, Preflighter, Refusal,
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
            "result:{}",
            r.tool_name
                .clone()
                .or_else(|| names.get(&r.call_id).cloned())
                .unwrap_or_default()
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

fn main() {
    let mut window = 32_000usize;
    let mut name = "tiered".to_owned();
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
            "--strategy" => name = args.next().expect("--strategy NAME"),
            "--config" => config = args.next().map(Into::into),
            "--list" => list = true,
            _ => files.push(a),
        }
    }
    let percut = std::env::var("PERCUT").is_ok();
    let dump = std::env::var("DUMP").ok();
    let full = std::env::var("FULL").ok();
    let setup = setup(config.as_deref(), window, None).expect("setup");
    let options = &setup.options;
    let counter = options.counter;
    let mut jobs: Vec<Job> = files
        .iter()
        .filter_map(|f| {
            let bytes = std::fs::read(f).ok()?;
            load_job(&bytes, f, ImportMode::Lenient, options)
                .ok()
                .map(|(j, _)| j)
        })
        .collect();
    prune_generic_jobs(&mut jobs);
    let factory = strategy(&name, &setup.policy, counter).expect("strategy");

    // (fate, label, age bucket, tail held it) -> count
    let mut misses: BTreeMap<(String, String, &str, bool), usize> = BTreeMap::new();
    // label:fate -> tokens in the requests at cuts
    let mut spend: BTreeMap<String, usize> = BTreeMap::new();
    let mut unique: BTreeMap<String, usize> = BTreeMap::new();
    let (mut expected, mut held_total, mut tail_total) = (0usize, 0usize, 0usize);
    let (mut only_strategy, mut only_tail) = (0usize, 0usize);
    for job in &jobs {
        let items = &job.conversation.items;
        let cuts: HashSet<usize> = job.continuation.cuts().iter().map(|c| c.at).collect();
        if cuts.is_empty() {
            continue;
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
        let captured = captured.lock().unwrap();
        let fixed =
            counter.count_tools(&job.conversation.tools) + counter.framing().per_request as usize;
        // The anchors each history item holds, found once for every cut of the session.
        let in_history: Vec<Vec<u32>> = items
            .iter()
            .map(|i| job.continuation.find_in(&i.plain_text()))
            .collect();
        for cut in job.continuation.cuts() {
            let Some(request) = captured.get(&cut.at) else {
                continue;
            };
            let originals: HashMap<&str, &Item> = items[..cut.at]
                .iter()
                .map(|i| (i.meta.id.as_str(), i))
                .collect();
            // Each visible request item once: its label and fate, tokens, and the anchors it holds.
            let per: Vec<(String, usize, Vec<u32>)> = request
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
                    let found = job.continuation.find_in(&text);
                    let lab = format!("{} {fate}", label(item, &names));
                    (lab, counter.count_item(item), found)
                })
                .collect();
            let present: HashSet<u32> =
                per.iter().flat_map(|(_, _, f)| f.iter().copied()).collect();
            let tokens = fixed + per.iter().map(|(_, n, _)| n).sum::<usize>();
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
            for (lab, n, found) in &per {
                *spend.entry(lab.clone()).or_default() += n;
                *unique.entry(lab.clone()).or_default() +=
                    found.iter().filter(|a| holders.get(a) == Some(&1)).count();
            }
            let mut tail: HashSet<u32> = HashSet::new();
            for item in tail_within(&items[..cut.at], &counter, fixed, tokens) {
                tail.extend(job.continuation.find_in(&item.plain_text()));
            }
            let held_ids: HashMap<&str, &Item> = request
                .items
                .iter()
                .map(|i| (i.meta.id.as_str(), i))
                .collect();
            if percut {
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
            if dump.as_deref() == Some(cut.at.to_string().as_str()) {
                let index: HashMap<&str, usize> = items[..cut.at]
                    .iter()
                    .enumerate()
                    .map(|(i, it)| (it.meta.id.as_str(), i))
                    .collect();
                for (item, (lab, n, found)) in request
                    .items
                    .iter()
                    .filter(|i| i.meta.visibility.model)
                    .zip(&per)
                {
                    let at = index.get(item.meta.id.as_str()).copied();
                    let held = found.iter().filter(|a| cut_set.contains(a)).count();
                    let whole = at.is_some_and(|a| full.as_deref() == Some(a.to_string().as_str()));
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
            for &a in &cut.anchors {
                expected += 1;
                let (s, t) = (present.contains(&a), tail.contains(&a));
                held_total += usize::from(s);
                tail_total += usize::from(t);
                only_strategy += usize::from(s && !t);
                only_tail += usize::from(t && !s);
                if s {
                    continue;
                }
                let last = in_history[..cut.at].iter().rposition(|f| f.contains(&a));
                let Some(idx) = last else { continue };
                let item = &items[idx];
                let fate = match held_ids.get(item.meta.id.as_str()) {
                    Some(h) if !h.meta.visibility.model => "hidden",
                    Some(_) => "rewritten",
                    None => "gone",
                };
                let lab = label(item, &names);
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
                *misses
                    .entry((fate.to_owned(), lab, age_bucket(age), t))
                    .or_default() += 1;
            }
        }
    }
    println!(
        "anchors expected {expected}, strategy {held_total}, tail {tail_total}, only strategy {only_strategy}, only tail {only_tail}"
    );
    println!("\nmisses by fate, last holder, age, tail held it:");
    let mut rows: Vec<_> = misses.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    for ((fate, lab, age, t), n) in rows.iter().take(60) {
        println!("{n:6}  {fate:9} {lab:28} {age:9} tail={t}");
    }
    println!("\ntokens of the requests at cuts, by item and fate:");
    let mut rows: Vec<_> = spend.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    let total: usize = rows.iter().map(|r| r.1).sum();
    for (k, n) in rows.iter().take(40) {
        let u = unique.get(k).copied().unwrap_or(0);
        println!(
            "{n:9} {:5.1}%  unique {u:5} ({:.2}/1k)  {k}",
            100.0 * *n as f64 / total as f64,
            1000.0 * u as f64 / *n as f64
        );
    }
}
