//! `compactctl compact`: compact a conversation and write it in a wire format, with a report.

use crate::engine::{self, EngineArgs};
use crate::exit::BadInput;
use crate::load::{load, LoadArgs};
use crate::output::write_output;
use clap::Args;
use compact_core::model::Format;
use compact_core::normalize::{normalize, ProviderRules};
use compact_engine::{block_on, CompactError};
use serde_json::json;
use std::process::ExitCode;

/// Arguments of `compactctl compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    #[command(flatten)]
    load: LoadArgs,
    #[command(flatten)]
    engine: EngineArgs,
    /// Output file (default: standard output).
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
    /// Output wire format (default: the input's, or its provider's for transcripts).
    #[arg(long = "to")]
    to: Option<String>,
    /// Write the report as JSON to this file (`-` for standard output).
    #[arg(long = "report-json")]
    report_json: Option<String>,
}

/// Runs `compact`.
pub fn run(args: &CompactArgs) -> anyhow::Result<ExitCode> {
    let to = parse_target(args.to.as_deref())?;
    let loaded = load(&args.load)?;
    let target = to.unwrap_or_else(|| loaded.imported.format.wire_target());
    let compactor = engine::compactor(&args.engine)?;
    let conv = &loaded.imported.conversation;
    let (compacted, report) = match block_on(compactor.compact(conv)) {
        Ok(done) => {
            let r = &done.report;
            eprintln!(
                "compacted {}: {} -> {} tokens ({:.0}% smaller), {} -> {} items, strategy {}, tiers {:?}",
                loaded.name,
                r.tokens_before,
                r.tokens_after,
                100.0 * r.saved() as f64 / r.tokens_before.max(1) as f64,
                r.items_before,
                r.items_after,
                r.strategy,
                r.tiers_applied
            );
            for w in &r.warnings {
                eprintln!("compactctl: warning: {w}");
            }
            let mut json = r.to_json();
            json["compacted"] = true.into();
            (done.conversation, json)
        }
        // Already at or below the target: nothing to gain. The request is written unchanged (but
        // normalised, so it is valid to send) rather than failing.
        Err(CompactError::NoProgress { before, .. }) if compactor.budget().fits(before) => {
            let sent = block_on(compactor.preflight(conv))?;
            eprintln!(
                "compactctl: nothing to compact in {}: {before} tokens already fit (target {}); written unchanged",
                loaded.name,
                compactor.budget().target
            );
            let json = json!({
                "tokens_before": before,
                "tokens_after": compactor.counter().total(&sent.conversation),
                "items_before": conv.len(),
                "items_after": sent.conversation.len(),
                "strategy": compactor.strategy().as_str(),
                "tiers_applied": [],
                "compacted": false,
            });
            (sent.conversation, json)
        }
        // The provider's own compaction call (an in-band `compaction_trigger`, an Anthropic
        // `compaction` request) must reach the provider as it is: written back unchanged.
        Err(e @ CompactError::ProviderCompactionCall(_)) => {
            eprintln!("compactctl: {}: {e}; written unchanged", loaded.name);
            let tokens = compactor.counter().total(conv);
            let json = json!({
                "tokens_before": tokens,
                "tokens_after": tokens,
                "items_before": conv.len(),
                "items_after": conv.len(),
                "strategy": compactor.strategy().as_str(),
                "tiers_applied": [],
                "compacted": false,
                "provider_compaction_call": true,
            });
            let encoded = compact_formats::wire::encode(conv, target).map_err(|e| {
                anyhow::anyhow!("encoding the provider compaction call as {target}: {e}")
            })?;
            for loss in &encoded.losses {
                eprintln!("compactctl: note: {target} cannot carry everything: {loss}");
            }
            return finish(args, &loaded, target, &encoded.value, json);
        }
        Err(e) => return Err(e.into()),
    };
    // The compactor normalised for the input's provider; a request for another provider must meet
    // that provider's rules (Chat, for one, answers each assistant message's calls before the next
    // message, where Anthropic merges consecutive assistant messages into one turn).
    let rules = ProviderRules::for_format(target);
    let compacted = if rules == compactor.rules_for(conv) {
        compacted
    } else {
        normalize(&compacted, &rules).conversation
    };
    let encoded = compact_formats::wire::encode(&compacted, target)
        .map_err(|e| anyhow::anyhow!("encoding the compacted conversation as {target}: {e}"))?;
    for loss in &encoded.losses {
        eprintln!("compactctl: note: {target} cannot carry everything: {loss}");
    }
    finish(args, &loaded, target, &encoded.value, report)
}

/// Writes the request and, when asked, the report.
fn finish(
    args: &CompactArgs,
    loaded: &crate::load::Loaded,
    target: Format,
    request: &serde_json::Value,
    report: serde_json::Value,
) -> anyhow::Result<ExitCode> {
    let mut text = serde_json::to_string_pretty(request)?;
    text.push('\n');
    write_output(args.output.as_deref(), &text)?;
    if let Some(path) = &args.report_json {
        let mut json = report;
        json["input_format"] = loaded.imported.format.name().into();
        json["output_format"] = target.name().into();
        let mut text = serde_json::to_string_pretty(&json)?;
        text.push('\n');
        write_output(Some(path), &text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Parses `--to`: a wire format name.
pub fn parse_target(to: Option<&str>) -> anyhow::Result<Option<Format>> {
    let Some(name) = to else { return Ok(None) };
    let format: Format = name.parse().map_err(|e| BadInput(format!("--to: {e}")))?;
    if !format.is_wire() {
        return Err(BadInput(format!(
            "--to: `{format}` is a transcript format; write openai-chat, openai-responses or anthropic"
        ))
        .into());
    }
    Ok(Some(format))
}
