//! `compactctl plan`: a dry run — what each tier would do, tokens before and after.

use crate::engine::{self, EngineArgs};
use crate::load::{load, LoadArgs};
use crate::output::{out, outln};
use clap::Args;
use std::process::ExitCode;

/// Arguments of `compactctl plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    load: LoadArgs,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Prints the plan without summarising or applying it.
pub fn run(args: &PlanArgs) -> anyhow::Result<ExitCode> {
    let loaded = load(&args.load)?;
    let compactor = engine::compactor(&args.engine)?;
    let dry = compactor.plan(&loaded.imported.conversation)?;
    if dry.input_repairs > 0 {
        outln!(
            "input: {} normalisation repairs (orphaned calls or results)",
            dry.input_repairs
        );
    }
    out!("{}", dry.plan);
    Ok(ExitCode::SUCCESS)
}
