//! `compactctl recall`: the original content of one item, by id (what a reference stub or truncation
//! marker points to).

use crate::exit::BadInput;
use crate::load::{load, LoadArgs};
use crate::output::print_original;
use clap::Args;
use std::process::ExitCode;

/// Arguments of `compactctl recall`.
#[derive(Debug, Args)]
pub struct RecallArgs {
    #[command(flatten)]
    load: LoadArgs,
    /// The item id (as shown by `inspect`, `plan`, `diff`, reference stubs and truncation markers,
    /// or as a checkpoint cites it: a UUID shortened to its first eight hex digits).
    id: String,
}

/// Prints the item's full original text.
pub fn run(args: &RecallArgs) -> anyhow::Result<ExitCode> {
    let loaded = load(&args.load)?;
    let conv = &loaded.imported.conversation;
    let item = conv.find_cited(&args.id).ok_or_else(|| {
        BadInput(format!(
            "{}: no item with id `{}` ({} items)",
            loaded.name,
            args.id,
            conv.len()
        ))
    })?;
    print_original(&item.plain_text())?;
    Ok(ExitCode::SUCCESS)
}
