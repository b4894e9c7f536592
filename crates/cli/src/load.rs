//! Loading a conversation from a file: read (bounded), detect or take the format, import.

use crate::exit::BadInput;
use crate::input::{display_name, read_input};
use clap::Args;
use compact_core::model::Format;
use compact_formats::import::{import, ImportMode, ImportOptions, Imported};

/// Most items (and JSONL records) a conversation may have: one million. Reading, counting and
/// compacting take time and memory in proportion to the items (about 3.5 KB per item at the peak of
/// a compaction), so a file of millions of tiny records is refused (exit 2) instead; a JSONL file
/// is refused before it is parsed.
pub const MAX_ITEMS: usize = 1_000_000;

/// The input flags shared by commands that read a conversation.
#[derive(Debug, Args, Clone)]
pub struct LoadArgs {
    /// Conversation or transcript file (`-` for standard input).
    pub file: String,
    /// Input format (default: detected). One of openai-chat, openai-responses, anthropic,
    /// claude-code, codex-rollout, swe-agent, openhands, aider, atif.
    #[arg(long)]
    pub format: Option<String>,
    /// Skip malformed records with a warning instead of failing.
    #[arg(long)]
    pub lenient: bool,
}

/// A loaded conversation.
pub struct Loaded {
    /// Display name of the input.
    pub name: String,
    /// The import result.
    pub imported: Imported,
}

/// Reads and imports the input; warnings go to stderr.
pub fn load(args: &LoadArgs) -> anyhow::Result<Loaded> {
    let format = match &args.format {
        Some(f) => Some(
            f.parse::<Format>()
                .map_err(|e| BadInput(format!("--format: {e}")))?,
        ),
        None => None,
    };
    let bytes = read_input(&args.file)?;
    let name = display_name(&args.file).to_owned();
    let records = jsonl_records(&bytes);
    if records > MAX_ITEMS {
        return Err(BadInput(format!(
            "{name}: {records} JSONL records, more than the {MAX_ITEMS} a conversation may have"
        ))
        .into());
    }
    let mode = if args.lenient {
        ImportMode::Lenient
    } else {
        ImportMode::Strict
    };
    let options = ImportOptions { format, mode };
    let imported = import(&bytes, &name, &options).map_err(|e| BadInput(e.to_string()))?;
    let items = imported.conversation.items.len();
    if items > MAX_ITEMS {
        return Err(BadInput(format!(
            "{name}: {items} items, more than the {MAX_ITEMS} a conversation may have"
        ))
        .into());
    }
    for warning in &imported.warnings {
        eprintln!("compactctl: warning: {warning}");
    }
    Ok(Loaded { name, imported })
}

/// The JSONL records of `bytes`: lines that open a JSON object (a whole-file JSON document has one
/// such line, its first). A byte scan: no parsing, no allocation.
fn jsonl_records(bytes: &[u8]) -> usize {
    let mut records = usize::from(bytes.first() == Some(&b'{'));
    for pair in bytes.windows(2) {
        if pair == b"\n{" {
            records += 1;
        }
    }
    records
}
