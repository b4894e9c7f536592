//! `compactctl count`: the token count of raw text.

use crate::input::read_input;
use crate::output::outln;
use crate::resolve::{self, ModelChoice};
use clap::Args;
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
    let text = String::from_utf8_lossy(&bytes);
    outln!("{}", counter.count_text(&text));
    Ok(ExitCode::SUCCESS)
}
