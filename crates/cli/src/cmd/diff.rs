//! `compactctl diff`: per item, what compaction does to it (kept, truncated, referenced, summarised,
//! dropped), coloured, plus the checkpoint it adds.

use crate::engine::{self, EngineArgs};
use crate::load::{load, LoadArgs};
use crate::output::outln;
use clap::{Args, ValueEnum};
use compact_core::model::{Conversation, ItemBody};
use compact_core::normalize::normalize;
use compact_core::plan::{Action, Plan};
use compact_engine::{block_on, CompactError};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Characters of item text shown per line.
const PREVIEW_CHARS: usize = 72;

/// When to colour the output.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum ColorChoice {
    /// When standard output is a terminal and `NO_COLOR` is unset.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Arguments of `compactctl diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    load: LoadArgs,
    #[command(flatten)]
    engine: EngineArgs,
    /// Colour the output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
}

const RESET: &str = "\x1b[0m";

/// Marker and colour of an action.
fn style(action: &Action) -> (&'static str, &'static str) {
    match action {
        Action::Keep => ("=", ""),
        Action::Truncate { .. } => ("~", "\x1b[33m"),
        Action::Densify { .. } => ("d", "\x1b[32m"),
        Action::Reference { .. } => ("&", "\x1b[36m"),
        Action::SummarizeInto => ("S", "\x1b[35m"),
        Action::Drop => ("-", "\x1b[31m"),
    }
}

/// Runs `diff`: compacts (with the deterministic summariser unless configured otherwise) and shows
/// every item's fate. An input the strategy leaves as it is (below the target) is listed as kept,
/// with "nothing to do", and is a success.
pub fn run(args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let color = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    };
    let loaded = load(&args.load)?;
    let compactor = engine::compactor(&args.engine)?;
    let conv = &loaded.imported.conversation;
    let done = match block_on(compactor.compact(conv)) {
        Ok(done) => done,
        Err(e @ CompactError::NoProgress { .. }) => {
            // A plan that changes nothing is an answer, not a failure (as `plan` shows it).
            let dry = compactor.plan(conv)?;
            if !dry.plan.is_noop() {
                return Err(e.into());
            }
            print_items(&dry.plan, &dry.conversation, None, color)?;
            for note in &dry.plan.notes {
                outln!("note: {note}");
            }
            outln!(
                "nothing to do: {} tokens, {} items kept ({})",
                dry.plan.tokens_before,
                dry.plan.items.len(),
                dry.plan.strategy
            );
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e.into()),
    };
    // The plan's indices point into the normalised input.
    let source = &normalize(conv, &compactor.rules_for(conv)).conversation;
    print_items(&done.plan, source, Some(&done.conversation), color)?;
    let r = &done.report;
    outln!(
        "{} -> {} tokens, {} -> {} items ({})",
        r.tokens_before,
        r.tokens_after,
        r.items_before,
        r.items_after,
        r.strategy
    );
    Ok(ExitCode::SUCCESS)
}

/// One line per item of `plan` (whose indices point into `source`), with the checkpoint of the
/// compacted conversation, when there is one, where the plan places it.
fn print_items(
    plan: &Plan,
    source: &Conversation,
    compacted: Option<&Conversation>,
    color: bool,
) -> std::io::Result<()> {
    let checkpoint_at = plan.checkpoint.as_ref().map(|c| c.position);
    for entry in &plan.items {
        if let Some(compacted) = compacted.filter(|_| checkpoint_at == Some(entry.index)) {
            print_checkpoint(compacted, color)?;
        }
        let (mark, colour) = style(&entry.action);
        let text = source
            .items
            .get(entry.index)
            .map(|i| i.plain_text())
            .unwrap_or_default();
        let preview: String = text
            .chars()
            .take(PREVIEW_CHARS)
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let kind = match &entry.tool {
            Some(t) => format!("{}({t})", entry.kind.as_str()),
            None => entry.kind.as_str().to_owned(),
        };
        let line = format!(
            "{mark} {:<10} {:<26} {:<9} {:>6} -> {:<6} {preview}",
            entry.id.as_str(),
            kind,
            entry.action.as_str(),
            entry.tokens_before,
            entry.tokens_after
        );
        if color && !colour.is_empty() {
            outln!("{colour}{line}{RESET}");
        } else {
            outln!("{line}");
        }
    }
    Ok(())
}

fn print_checkpoint(conv: &Conversation, color: bool) -> std::io::Result<()> {
    let Some(cp) = conv.items.iter().find_map(|i| match i.body() {
        ItemBody::Checkpoint(c) => Some(c),
        _ => None,
    }) else {
        return Ok(());
    };
    let line = format!(
        "+ checkpoint generation {}, covers {} items, {} lines",
        cp.generation,
        cp.covers.len(),
        cp.text.lines().count()
    );
    if color {
        outln!("\x1b[32m{line}{RESET}");
    } else {
        outln!("{line}");
    }
    Ok(())
}
