//! Loading a conversation from a file: read (bounded), detect or take the format, import.

use crate::exit::BadInput;
use crate::input::{display_name, read_input};
use clap::Args;
use compact_core::model::Format;
use compact_formats::import::{import, ImportError, ImportMode, ImportOptions, Imported, Location};

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
    let imported = import(&bytes, &name, &options).map_err(|e| match e {
        ImportError::UnknownFormat { .. } => match not_text(&bytes, &name) {
            Some(why) => BadInput(why),
            None => BadInput(e.to_string()),
        },
        e => BadInput(e.to_string()),
    })?;
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

/// Why `bytes` is not text any import format could hold, when it is not: UTF-16 (a byte order mark),
/// a NUL byte (binary data) or invalid UTF-8, with the place.
fn not_text(bytes: &[u8], name: &str) -> Option<String> {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Some(format!(
            "{name}: UTF-16 text (byte order mark {:02X} {:02X}): every input format is UTF-8; convert the file",
            bytes[0], bytes[1]
        ));
    }
    let utf8_end = std::str::from_utf8(bytes).err().map(|e| e.valid_up_to());
    let nul = bytes.iter().position(|&b| b == 0);
    match (nul, utf8_end) {
        (Some(n), end) if end.is_none_or(|e| n < e) => Some(format!(
            "{}: binary data (a NUL byte): every input format is UTF-8 text",
            Location::at_offset(name, bytes, n)
        )),
        (_, Some(e)) => Some(format!(
            "{}: invalid UTF-8 (byte 0x{:02X}): every input format is UTF-8 text",
            Location::at_offset(name, bytes, e),
            bytes[e]
        )),
        _ => None,
    }
}
