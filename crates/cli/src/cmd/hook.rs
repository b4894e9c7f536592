//! `compactctl hook claude-code|codex`: run by the agent's `SessionStart` (source `compact`) and
//! `PreCompact` hooks. Reads the hook input on standard input and prints the documented output
//! (or nothing). It never fails the agent: any error prints nothing, exits 0 and is appended to
//! the log (`--log`, default `$XDG_STATE_HOME/compact/hook.log`, else
//! `~/.local/state/compact/hook.log`).

use crate::cmd::agent::AgentName;
use clap::Args;
use compact_agents::checkpoint::{DEFAULT_HOOK_TOKENS, MAX_HOOK_TOKENS, MIN_HOOK_TOKENS};
use compact_agents::hook::{self, HookOptions, HookOutcome, MAX_INPUT_BYTES};
use compact_agents::log;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `compactctl hook`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The agent running the hook.
    agent: AgentName,
    /// Budget of the added context, in tokens (200 to 50000).
    #[arg(long, default_value_t = DEFAULT_HOOK_TOKENS)]
    max_tokens: usize,
    /// Where PreCompact saves its checkpoint for SessionStart (default: `compact/hooks` under
    /// `$XDG_STATE_HOME`, else `~/.local/state`).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// The log of failures (default: `compact/hook.log` under `$XDG_STATE_HOME`, else
    /// `~/.local/state`).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
}

/// Where the hook keeps its state: `$XDG_STATE_HOME/compact`, else `~/.local/state/compact`, else
/// the temporary directory.
pub fn state_base() -> PathBuf {
    let xdg = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty());
    let home = std::env::var_os("HOME").filter(|v| !v.is_empty());
    match (xdg, home) {
        (Some(x), _) => PathBuf::from(x).join("compact"),
        (None, Some(h)) => PathBuf::from(h).join(".local/state/compact"),
        (None, None) => std::env::temp_dir().join("compact"),
    }
}

/// Runs the hook; always exits 0.
pub fn run(args: &HookArgs) -> anyhow::Result<ExitCode> {
    let base = state_base();
    let log_path = args.log.clone().unwrap_or_else(|| base.join("hook.log"));
    let agent = args.agent.agent();
    let mut input = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut input);
    let event = event_name(&input);
    if let Err(e) = read {
        log::append(
            &log_path,
            &log::line(
                agent.name(),
                &event,
                &format!("reading standard input: {e}"),
            ),
        );
        return Ok(ExitCode::SUCCESS);
    }
    if !(MIN_HOOK_TOKENS..=MAX_HOOK_TOKENS).contains(&args.max_tokens) {
        let reason = format!(
            "--max-tokens {} is outside {MIN_HOOK_TOKENS}..={MAX_HOOK_TOKENS}",
            args.max_tokens
        );
        log::append(&log_path, &log::line(agent.name(), &event, &reason));
        return Ok(ExitCode::SUCCESS);
    }
    let options = HookOptions {
        agent,
        max_tokens: args.max_tokens,
        state_dir: args.state_dir.clone().unwrap_or_else(|| base.join("hooks")),
    };
    match hook::run(&input, &options) {
        Ok(HookOutcome::Emit(json)) => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(json.as_bytes()).and_then(|()| out.flush()) {
                log::append(
                    &log_path,
                    &log::line(
                        agent.name(),
                        &event,
                        &format!("writing standard output: {e}"),
                    ),
                );
            }
        }
        Ok(HookOutcome::Saved(_) | HookOutcome::Nothing(_)) => {}
        Err(e) => log::append(&log_path, &log::line(agent.name(), &event, &e.to_string())),
    }
    Ok(ExitCode::SUCCESS)
}

/// The event named in the input, for the log (`?` when the input is not readable).
fn event_name(input: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(input)
        .ok()
        .and_then(|v| v.get("hook_event_name")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}
