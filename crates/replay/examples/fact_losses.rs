//! Where the deterministic checkpoint loses fact probes: for every probe a strategy lost by a
//! session's last call, the stage that lost it, and what the checkpoints spend their tokens on. A
//! diagnostic for issue #45's work, not a figure of BENCHMARKS.md.
//!
//! ```sh
//! cargo run --release -p compact-replay --example fact_losses -- --window 16000 \
//!     [--strategy tiered] [--list] FILE...
//! ```
//!
//! Each session is replayed through the session runtime with a summariser that records every
//! checkpoint it writes (its items, the record it folds in, its budget); the checkpoints the requests
//! really carried are followed in order. A lost probe is put in one stage:
//! - *not summarised*: no checkpoint covered the item the probe came from (it was cut or stubbed in
//!   place, or dropped);
//! - *not extracted*: the first checkpoint that covered it would not hold it even with no budget
//!   limit (the fact was not taken, or was written in another form);
//! - *dropped* / *shortened* at the first checkpoint (`select`: the entry left out under the budget, or
//!   kept in a shorter form that no longer holds the probe's text);
//! - *dropped* / *shortened* / *merged away* at a later fold: an earlier checkpoint held it, and the
//!   next one lost it under its budget, or lost it while folding the earlier record in (`merge`:
//!   absent even with no budget limit).
//!
//! The token summary splits each checkpoint the requests carried into its header, its sections
//! (heading, entries, notes) and the cites (` [i3, i7]`) of its entries, against its budget.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use compact_core::checkpoint::{build, CheckpointOptions};
use compact_core::model::{Checkpoint, Conversation, Item, ItemBody};
use compact_core::tokens::TokenCounter;
use compact_engine::{
    BoxFuture, DeterministicSummarizer, SummarizeError, Summarizer, Summary, SummaryRequest,
};
use compact_formats::import::ImportMode;
use compact_replay::{
    load_job, replay_session, runtime_strategy_with, setup, Outcome, Preflighter, ProbeKind,
    Refusal,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A budget no record reaches: the checkpoint with every entry its sections hold.
const UNLIMITED: usize = 10_000_000;

/// One checkpoint written: what it was given and what it wrote.
#[derive(Clone)]
struct Written {
    items: Vec<Item>,
    previous: Option<Checkpoint>,
    max_tokens: usize,
    counter: TokenCounter,
    text: String,
}

impl Written {
    /// The same checkpoint with no budget limit.
    fn unlimited(&self) -> String {
        let options = CheckpointOptions {
            max_tokens: UNLIMITED,
            counter: self.counter,
        };
        build(&self.items, self.previous.as_ref(), &options).text
    }

    fn covers(&self, id: &str) -> bool {
        self.items.iter().any(|i| i.meta.id.as_str() == id)
    }
}

type Log = Arc<Mutex<Vec<Written>>>;

/// The deterministic checkpoint, recording every call.
struct Recording {
    log: Log,
}

impl Summarizer for Recording {
    fn costs_a_call(&self) -> bool {
        DeterministicSummarizer.costs_a_call()
    }
    fn name(&self) -> &str {
        DeterministicSummarizer.name()
    }
    fn summarize<'a>(
        &'a self,
        request: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        let written = Written {
            items: request.items.to_vec(),
            previous: request.previous.cloned(),
            max_tokens: request.max_tokens,
            counter: request.counter,
            text: String::new(),
        };
        Box::pin(async move {
            let summary = DeterministicSummarizer.summarize(request).await?;
            self.log.lock().unwrap().push(Written {
                text: summary.text.clone(),
                ..written
            });
            Ok(summary)
        })
    }
}

/// Passes every call on and notes which written checkpoint each compacted request carries.
struct Follow {
    inner: Box<dyn Preflighter>,
    log: Log,
    used: Arc<Mutex<Vec<usize>>>,
    seen: usize,
    /// The last request returned.
    last: Option<Conversation>,
}

impl Preflighter for Follow {
    fn preflight(&mut self, held: Conversation) -> Result<Outcome, Box<Refusal>> {
        let out = self.inner.preflight(held);
        let log = self.log.lock().unwrap();
        if let Ok(outcome) = &out {
            if outcome.compaction.is_some() && log.len() > self.seen {
                let carried = outcome
                    .conversation
                    .items
                    .iter()
                    .find_map(|i| match i.body() {
                        ItemBody::Checkpoint(c) => Some(c.text.clone()),
                        _ => None,
                    });
                let which = (self.seen..log.len())
                    .rev()
                    .find(|&k| carried.as_deref() == Some(log[k].text.as_str()))
                    .unwrap_or(log.len() - 1);
                self.used.lock().unwrap().push(which);
            }
        }
        self.seen = log.len();
        if let Ok(outcome) = &out {
            self.last = Some(outcome.conversation.clone());
        }
        out
    }
}

/// Where a probe was lost.
fn stage(probe: &str, origin_id: &str, used: &[&Written], held: &Conversation) -> String {
    let Some(first) = used.iter().position(|w| w.covers(origin_id)) else {
        let still = held.items.iter().any(|i| i.meta.id.as_str() == origin_id);
        return if still {
            "not summarised: item held, rewritten".into()
        } else {
            "not summarised: item gone".into()
        };
    };
    let at_first = used[first];
    if !at_first.unlimited().contains(probe) {
        let given = at_first
            .items
            .iter()
            .any(|i| i.plain_text().contains(probe));
        return if given {
            // What the record wrote for the item instead, if anything.
            let cite = compact_core::checkpoint::cite_id(origin_id);
            let full = at_first.unlimited();
            let instead = full
                .lines()
                .find(|l| l.contains(cite.as_str()))
                .unwrap_or("");
            format!(
                "not extracted\t{}",
                instead.chars().take(160).collect::<String>()
            )
        } else {
            "not extracted: item given rewritten".into()
        };
    }
    if !at_first.text.contains(probe) {
        return format!("{} at first", selection(probe, at_first));
    }
    for (age, w) in used[first + 1..].iter().enumerate() {
        if w.text.contains(probe) {
            continue;
        }
        let full = w.unlimited();
        if !full.contains(probe) {
            return "merged away at a fold".into();
        }
        return format!(
            "{} at a fold\t{}",
            selection(probe, w),
            entry_of(probe, &full, age + 1, w)
        );
    }
    "held by the last checkpoint".into()
}

/// For a probe lost at a fold: the section of the entry that held it, whether that failure was
/// resolved, how many folds after the first checkpoint that held it, the fold's budget and what
/// its written record spent by section (tokens), and the entry itself.
fn entry_of(probe: &str, full: &str, age: usize, w: &Written) -> String {
    let mut section = "";
    let mut line = "";
    for l in full.lines() {
        if let Some(t) = l.strip_prefix("## ") {
            section = t;
        }
        if l.contains(probe) {
            line = l;
            break;
        }
    }
    let resolved = if line.contains(" — resolved") {
        "resolved"
    } else {
        "open"
    };
    let count = |s: &str| w.counter.count_text(s);
    let spent: Vec<String> = w
        .text
        .split("\n## ")
        .skip(1)
        .map(|part| {
            let title: String = part.lines().next().unwrap_or("").chars().take(12).collect();
            format!("{title}={}", count(part))
        })
        .collect();
    format!(
        "{section}\t{resolved}\tfold+{age}\tbudget {}\t{}\t{}",
        w.max_tokens,
        spent.join(","),
        line.chars().take(140).collect::<String>()
    )
}

/// `dropped` or `shortened`: whether the written checkpoint has the entry (same opening, same
/// cites) that holds the probe when nothing is left out.
fn selection(probe: &str, w: &Written) -> &'static str {
    let full = w.unlimited();
    let Some(line) = full.lines().find(|l| l.contains(probe)) else {
        return "dropped";
    };
    let cites = line.rfind(" [").map_or("", |at| &line[at..]);
    let opening: String = line.chars().take(14).collect();
    let kept = w
        .text
        .lines()
        .any(|l| l.starts_with(&opening) && (cites.is_empty() || l.ends_with(cites)));
    if kept {
        "shortened"
    } else {
        "dropped"
    }
}

/// Tokens a checkpoint spends, by part.
fn spend(w: &Written, totals: &mut BTreeMap<String, usize>) {
    let count = |s: &str| w.counter.count_text(s);
    let text = &w.text;
    let (header, rest) = match text.find("\n## ") {
        Some(at) => (&text[..at], &text[at..]),
        None => (text.as_str(), ""),
    };
    *totals.entry("0 budget".into()).or_default() += w.max_tokens;
    *totals.entry("0 used".into()).or_default() += count(text);
    *totals.entry("1 header".into()).or_default() += count(header);
    for part in rest.split("\n## ").filter(|p| !p.trim().is_empty()) {
        let title = part.lines().next().unwrap_or("").trim().to_owned();
        let mut cites = 0;
        for line in part.lines().filter(|l| l.starts_with("- ")) {
            if let Some(at) = line.rfind(" [") {
                if line.ends_with(']') {
                    cites += count(&line[at..]);
                }
            }
        }
        *totals.entry(format!("2 {title}")).or_default() += count(part);
        *totals.entry("3 cites (all sections)".into()).or_default() += cites;
    }
    let unlimited = count(&w.unlimited());
    *totals.entry("4 unlimited record".into()).or_default() += unlimited;
    if unlimited > w.max_tokens {
        *totals.entry("5 records over budget".into()).or_default() += 1;
    }
    *totals.entry("5 records".into()).or_default() += 1;
}

fn main() {
    let mut window = 16_000usize;
    let mut name = "tiered".to_owned();
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
            "--list" => list = true,
            _ => files.push(a),
        }
    }
    let setup = setup(None, window, None).expect("setup");
    let options = setup.options;
    let mut stages: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    let mut tokens: BTreeMap<String, usize> = BTreeMap::new();
    for file in &files {
        let bytes = std::fs::read(file).expect("read");
        let Ok((job, _)) = load_job(&bytes, file, ImportMode::Lenient, &options) else {
            continue;
        };
        let log: Log = Arc::default();
        let used: Arc<Mutex<Vec<usize>>> = Arc::default();
        let factory = runtime_strategy_with(
            &name,
            &setup.policy,
            options.counter,
            Arc::new(Recording { log: log.clone() }),
        )
        .expect("strategy");
        let mut follow = Follow {
            inner: factory.start(),
            log: log.clone(),
            used: used.clone(),
            seen: 0,
            last: None,
        };
        let run = replay_session(&job.conversation, &job.probes, &mut follow, &options);
        let log = log.lock().unwrap();
        let used: Vec<&Written> = used.lock().unwrap().iter().map(|&k| &log[k]).collect();
        for w in &used {
            spend(w, &mut tokens);
        }
        // `DUMP=<part of a file name>`: that session's last checkpoint, with its budget.
        if let (Ok(d), Some(w)) = (std::env::var("DUMP"), used.last()) {
            if file.contains(&d) {
                println!(
                    "--- {} budget {} used {}\n{}\n---",
                    short(file),
                    w.max_tokens,
                    w.counter.count_text(&w.text),
                    w.text
                );
            }
        }
        let held = follow.last.take().unwrap_or_default();
        for &p in &run.lost {
            let probe = &job.probes.probes()[p as usize];
            let origin = &job.conversation.items[probe.origin];
            let where_ = stage(&probe.text, origin.meta.id.as_str(), &used, &held);
            let kind = probe.kind.as_str();
            if list {
                println!("{}\t{kind}\t{where_}\t{}", short(file), probe.text);
            }
            let where_ = where_.split('\t').next().unwrap_or_default().to_owned();
            *stages.entry((where_, kind)).or_default() += 1;
        }
        let lost_facts = run.lost.len();
        let expected = job
            .probes
            .probes()
            .iter()
            .filter(|p| run.calls.last().is_some_and(|c| p.expected_at(c.at)))
            .count();
        eprintln!(
            "{}: {lost_facts} of {expected} probes lost, {} checkpoints",
            short(file),
            used.len()
        );
    }
    println!("\nLost probes by stage and kind:");
    let kinds: Vec<&str> = ProbeKind::ALL.iter().map(|k| k.as_str()).collect();
    println!("| stage | {} | all |", kinds.join(" | "));
    let mut by_stage: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for ((s, k), n) in &stages {
        let row = by_stage
            .entry(s.as_str())
            .or_insert_with(|| vec![0; kinds.len()]);
        row[kinds.iter().position(|x| x == k).unwrap()] += n;
    }
    for (s, row) in &by_stage {
        let cells: Vec<String> = row.iter().map(ToString::to_string).collect();
        println!(
            "| {s} | {} | {} |",
            cells.join(" | "),
            row.iter().sum::<usize>()
        );
    }
    println!("\nCheckpoint tokens (summed over the checkpoints the requests carried):");
    for (k, v) in &tokens {
        println!("{k}\t{v}");
    }
}

fn short(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}
