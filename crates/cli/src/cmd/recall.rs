//! `compactctl recall`: the original content of one item, by id (what a reference stub or truncation
//! marker points to): from a conversation or transcript file, or, given the id alone, an output
//! `compactctl run` kept in its store.

use crate::cmd::run::{open_run_store, reader_config};
use crate::exit::BadInput;
use crate::load::{load, LoadArgs};
use crate::output::print_original;
use clap::Args;
use compact_session::{CompactManager, SessionError};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `compactctl recall`.
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// Conversation or transcript file (`-` for standard input), or alone the id a `compactctl run`
    /// marker names.
    first: String,
    /// The item id (as shown by `inspect`, `plan`, `diff`, reference stubs and truncation markers,
    /// or as a checkpoint cites it: a UUID shortened to its first eight hex digits).
    id: Option<String>,
    /// Input format (default: detected). One of openai-chat, openai-responses, anthropic,
    /// claude-code, codex-rollout, swe-agent, openhands, aider, atif.
    #[arg(long)]
    format: Option<String>,
    /// Skip malformed records with a warning instead of failing.
    #[arg(long)]
    lenient: bool,
    /// With an id alone: the store `compactctl run` keeps outputs in (default: its default).
    #[arg(long, value_name = "PATH")]
    store: Option<PathBuf>,
}

/// Prints the item's full original text.
pub fn run(args: &RecallArgs) -> anyhow::Result<ExitCode> {
    let Some(id) = &args.id else {
        return recall_run_output(&args.first, args.store.clone());
    };
    let loaded = load(&LoadArgs {
        file: args.first.clone(),
        format: args.format.clone(),
        lenient: args.lenient,
    })?;
    let conv = &loaded.imported.conversation;
    let item = conv.find_cited(id).ok_or_else(|| {
        BadInput(format!(
            "{}: no item with id `{}` ({} items)",
            loaded.name,
            id,
            conv.len()
        ))
    })?;
    print_original(&item.plain_text())?;
    Ok(ExitCode::SUCCESS)
}

/// An output kept by `compactctl run`, looked up in every session of its store.
fn recall_run_output(id: &str, store: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let path = store.unwrap_or_else(crate::cmd::run::default_store);
    if !path.is_file() {
        return Err(BadInput(format!(
            "no item with id `{id}`: {} does not exist (pass a transcript file before the id)",
            path.display()
        ))
        .into());
    }
    let store = open_run_store(Some(path.clone()))?;
    let manager = CompactManager::open(reader_config(), store.clone())?;
    for session in store.sessions()? {
        match manager.recall(&session, id) {
            Ok(item) => {
                print_original(&item.plain_text())?;
                return Ok(ExitCode::SUCCESS);
            }
            Err(SessionError::UnknownReference { .. } | SessionError::InvalidSessionId(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(BadInput(format!("no item with id `{id}` in {}", path.display())).into())
}
