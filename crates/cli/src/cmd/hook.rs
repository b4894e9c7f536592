//! `compactctl hook claude-code|codex`: run by the agent's `SessionStart` (source `compact`) and
//! `PreCompact` hooks, and (Claude Code, when installed with `--run-hook`) its `PreToolUse` hook on
//! `Bash`, which wraps commands in `compactctl run`. Reads the hook input on standard input and prints the documented output
//! (or nothing). It never fails the agent: any error prints nothing, exits 0 and is appended to
//! the log (`--log`, default `$XDG_STATE_HOME/compact/hook.log`, else
//! `~/.local/state/compact/hook.log`).

use crate::cmd::agent::AgentName;
use clap::Args;
use compact_agents::checkpoint::{DEFAULT_HOOK_TOKENS, MAX_HOOK_TOKENS, MIN_HOOK_TOKENS};
use compact_agents::hook::Agent;
use compact_agents::hook::{self, HookOptions, HookOutcome, MAX_INPUT_BYTES};
use compact_agents::log;
use compact_agents::pretool::{default_families, RunHookOptions};
use compact_core::truncate::{DEFAULT_SHELL_BUDGET, MAX_SHELL_BUDGET, MIN_SHELL_BUDGET};
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
    /// PreToolUse: budget of a wrapped command's output, in tokens, when no family names it
    /// (100 to 1000000).
    #[arg(long, default_value_t = DEFAULT_SHELL_BUDGET, value_name = "N")]
    run_budget: usize,
    /// PreToolUse: the budget of a command family, as `PREFIX=N` (repeatable; the longest matching
    /// prefix wins; test runners get 2000 unless set).
    #[arg(long, value_name = "PREFIX=N")]
    family: Vec<String>,
    /// PreToolUse: never wrap a command containing this text (repeatable).
    #[arg(long, value_name = "TEXT")]
    exclude: Vec<String>,
    /// PreToolUse memory gate: the store holding the memory whose remembered paths rewrite
    /// known-folder probes (`sqlite:PATH`); with `--memory-session` or `--memory-project`.
    #[arg(long, value_name = "URL")]
    memory_store: Option<String>,
    /// PreToolUse memory gate: the session whose facts are read (and where rewrites are logged).
    #[arg(long, value_name = "ID", conflicts_with = "memory_project")]
    memory_session: Option<String>,
    /// PreToolUse memory gate: the project whose facts are read (and where rewrites are logged).
    #[arg(long, value_name = "PROJECT")]
    memory_project: Option<String>,
    /// PreToolUse memory gate from a configuration file: with `memory.gate: true`, the gate reads
    /// the project's memory (`memory.project`, else the agent's working directory) in the store
    /// `storage:` names.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// The memory gate's store and log, when the flags name them.
type GateLog = (std::sync::Arc<dyn compact_session::Store>, String);

/// The store and log of the memory gate, and the paths its trusted facts remember.
fn gate_options(
    args: &HookArgs,
    input: &[u8],
) -> Result<Option<(GateLog, compact_core::memory::KnownPaths)>, String> {
    let (store, log) = match (&args.memory_store, &args.config) {
        (Some(url), _) => {
            let log = match (&args.memory_session, &args.memory_project) {
                (Some(s), _) => s.clone(),
                (None, Some(p)) => compact_session::memory::project_session(p),
                (None, None) => {
                    return Err(
                        "--memory-store needs --memory-session or --memory-project".to_owned()
                    )
                }
            };
            let store = crate::cmd::sessions::open_store(Some(url)).map_err(|e| e.to_string())?;
            (store, log)
        }
        (None, Some(path)) => {
            let config = compact_config::Config::load(
                Some(path.as_path()),
                &compact_config::Overrides::default(),
            )
            .map_err(|e| e.to_string())?;
            let Some(memory) = config.session().memory.as_ref().filter(|m| m.gate) else {
                return Ok(None);
            };
            // The project: the configuration's, else the directory the agent works in.
            let cwd = serde_json::from_slice::<serde_json::Value>(input)
                .ok()
                .and_then(|v| v.get("cwd")?.as_str().map(PathBuf::from))
                .and_then(|d| std::fs::canonicalize(d).ok())
                .map(|d| d.to_string_lossy().into_owned());
            let Some(project) = memory.project.clone().or(cwd) else {
                return Err("memory.gate: no `memory.project` and no `cwd` in the input".to_owned());
            };
            let store = compact_session::open_store(&config)
                .ok_or_else(|| "memory.gate: the configuration names no `storage`".to_owned())?
                .map_err(|e| e.to_string())?;
            (store, compact_session::memory::project_session(&project))
        }
        (None, None) => return Ok(None),
    };
    let memory = compact_session::memory::read_memory(store.as_ref(), &log)
        .map_err(|e| format!("reading the memory of `{log}`: {e}"))?;
    let known = compact_core::memory::KnownPaths::from_facts(memory.facts());
    Ok(Some(((store, log), known)))
}

/// The `PreToolUse` options from the flags, or why they are refused.
fn run_options(args: &HookArgs) -> Result<RunHookOptions, String> {
    let check = |what: &str, n: usize| {
        if (MIN_SHELL_BUDGET..=MAX_SHELL_BUDGET).contains(&n) {
            Ok(n)
        } else {
            Err(format!(
                "{what} {n} is outside {MIN_SHELL_BUDGET}..={MAX_SHELL_BUDGET}"
            ))
        }
    };
    let budget = check("--run-budget", args.run_budget)?;
    let mut families = default_families();
    for family in &args.family {
        let (prefix, n) = family
            .rsplit_once('=')
            .ok_or_else(|| format!("--family `{family}`: expected PREFIX=N"))?;
        let n: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("--family `{family}`: `{n}` is not a number"))?;
        let n = check(&format!("--family `{prefix}`:"), n)?;
        families.retain(|(p, _)| p != prefix.trim());
        families.push((prefix.trim().to_owned(), n));
    }
    let program = std::env::current_exe()
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "compactctl".to_owned());
    Ok(RunHookOptions {
        program,
        budget,
        families,
        exclude: args.exclude.clone(),
        home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
        gate: None,
    })
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
    let mut run = match run_options(args) {
        Ok(run) => run,
        Err(reason) => {
            log::append(&log_path, &log::line(agent.name(), &event, &reason));
            return Ok(ExitCode::SUCCESS);
        }
    };
    // The memory gate only on PreToolUse: other events need no store.
    let mut gate_log = None;
    if event == "PreToolUse" {
        match gate_options(args, &input) {
            Ok(Some((log, known))) => {
                run.gate = Some(known);
                gate_log = Some(log);
            }
            Ok(None) => {}
            // The gate is off for this call; the command goes on as the rest of the hook decides.
            Err(reason) => log::append(&log_path, &log::line(agent.name(), &event, &reason)),
        }
    }
    let options = HookOptions {
        agent,
        max_tokens: args.max_tokens,
        state_dir: args.state_dir.clone().unwrap_or_else(|| base.join("hooks")),
        // Codex's hooks cannot rewrite a command in every version: only Claude Code's is wrapped.
        run: (agent == Agent::ClaudeCode).then_some(run),
    };
    let outcome = match hook::run(&input, &options) {
        Ok(HookOutcome::Gated(json, rewrite)) => {
            if let Some((store, log)) = &gate_log {
                let manager = compact_session::CompactManager::open(
                    crate::cmd::run::reader_config(),
                    std::sync::Arc::clone(store),
                );
                let logged = manager.map_err(|e| e.to_string()).and_then(|m| {
                    m.log_gate_rewrite(log, "Bash", &rewrite)
                        .map_err(|e| e.to_string())
                });
                if let Err(reason) = logged {
                    log::append(
                        &log_path,
                        &log::line(
                            agent.name(),
                            &event,
                            &format!("logging the gate's rewrite: {reason}"),
                        ),
                    );
                }
            }
            Ok(HookOutcome::Emit(json))
        }
        other => other,
    };
    match outcome {
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
        Ok(HookOutcome::Saved(_) | HookOutcome::Nothing(_) | HookOutcome::Gated(..)) => {}
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
