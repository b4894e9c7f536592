//! `compactctl count`: the token count of raw text.

use crate::exit::BadInput;
use crate::input::{display_name, read_input};
use crate::output::outln;
use crate::resolve::{self, ModelChoice};
use clap::Args;
use compact_formats::import::Location;
use std::process::ExitCode;

/// Arguments of `compactctl count`.
#[derive(Debug, Args)]
pub struct CountArgs {
    #[command(flatten)]
    model: ModelChoice,
    /// File to count (`-` or nothing for standard input).
    #[arg(default_value = "-")]
    file: String,
}

/// Prints the exact (or, for `estimate`, estimated) token count of the input text.
pub fn run(args: &CountArgs) -> anyhow::Result<ExitCode> {
    let counter = resolve::counter(&args.model)?;
    let bytes = read_input(&args.file)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let at = Location::at_offset(display_name(&args.file), &bytes, e.valid_up_to());
        BadInput(format!(
            "{at}: invalid UTF-8 (byte 0x{:02X}): tokens are counted on UTF-8 text",
            bytes[e.valid_up_to()]
        ))
    })?;
    outln!("{}", counter.count_text(text));
    Ok(ExitCode::SUCCESS)
}
