//! `compactctl install` / `uninstall`: the hook and the MCP server in an agent's settings (merged,
//! idempotent, `--dry-run` prints the diff; uninstall removes exactly what install adds).

use crate::exit::BadInput;
use crate::output::outln;
use anyhow::Context;
use clap::{Args, Subcommand};
use compact_agents::install::{self, codex, Change, InstallOptions, Target};
use compact_agents::AgentsError;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `compactctl install` and `compactctl uninstall`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    #[command(subcommand)]
    agent: AgentTarget,
    /// Print the changes as a diff, write nothing.
    #[arg(long, global = true)]
    dry_run: bool,
    /// The `compactctl` the agent runs (default: this executable).
    #[arg(long, global = true, value_name = "PATH")]
    exe: Option<String>,
}

#[derive(Debug, Subcommand)]
enum AgentTarget {
    /// Claude Code: hooks in `.claude/settings.json`, the server in `.mcp.json` (project) or
    /// `~/.claude/settings.json` and `~/.claude.json` (user).
    ClaudeCode {
        /// The project directory (default: the current directory).
        #[arg(long, value_name = "DIR", conflicts_with = "user")]
        project: Option<PathBuf>,
        /// The user's settings instead of a project's.
        #[arg(long)]
        user: bool,
        /// Leave the MCP server out.
        #[arg(long)]
        no_mcp: bool,
        /// Also the `PreToolUse` hook on `Bash` that runs commands under `compactctl run` (off by
        /// default); with `uninstall`, remove that hook alone.
        #[arg(long)]
        run_hook: bool,
    },
    /// Codex CLI: `[mcp_servers.compact]` in `~/.codex/config.toml`, and with `--hooks` the
    /// `SessionStart` (compact) and `PreCompact` hooks.
    Codex {
        /// Also the hooks (Codex runs them with `[features] codex_hooks = true`).
        #[arg(long)]
        hooks: bool,
    },
}

/// Install or uninstall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `compactctl install`.
    Install,
    /// `compactctl uninstall`.
    Uninstall,
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            BadInput("HOME is not set: cannot find the user's settings".to_owned()).into()
        })
}

/// Runs `install` or `uninstall`.
pub fn run(args: &InstallArgs, action: Action) -> anyhow::Result<ExitCode> {
    let exe = match &args.exe {
        Some(exe) => exe.clone(),
        None => std::env::current_exe()
            .context("finding this executable (name it with --exe)")?
            .to_string_lossy()
            .into_owned(),
    };
    let (target, hooks, mcp, run_hook) = match &args.agent {
        AgentTarget::ClaudeCode {
            project,
            user,
            no_mcp,
            run_hook,
        } => {
            let target = if *user {
                Target::ClaudeCodeUser(home()?)
            } else {
                let dir = match project {
                    Some(dir) => dir.clone(),
                    None => std::env::current_dir().context("the current directory")?,
                };
                if !dir.is_dir() {
                    return Err(
                        BadInput(format!("--project {}: not a directory", dir.display())).into(),
                    );
                }
                Target::ClaudeCodeProject(dir)
            };
            // Uninstalling the run hook alone leaves the MCP server.
            let mcp = match action {
                Action::Install => !*no_mcp,
                Action::Uninstall => !*run_hook,
            };
            (target, true, mcp, *run_hook)
        }
        AgentTarget::Codex { hooks } => (
            Target::Codex(home()?),
            *hooks || action == Action::Uninstall,
            true,
            false,
        ),
    };
    let options = InstallOptions {
        exe,
        hooks,
        mcp,
        run_hook,
    };
    let planned = match action {
        Action::Install => install::plan_install(&target, &options),
        Action::Uninstall => install::plan_uninstall(&target, &options),
    }
    .map_err(settings_error)?;
    report(&planned, args.dry_run)?;
    if !args.dry_run {
        install::apply(&planned)?;
    }
    if let (Action::Install, Target::Codex(home), true) = (action, &target, hooks) {
        if !codex::hooks_enabled(home).unwrap_or(false) {
            eprintln!(
                "compactctl: note: Codex runs hooks only with `[features] codex_hooks = true` in \
                 ~/.codex/config.toml; it was not set for you"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn settings_error(e: AgentsError) -> anyhow::Error {
    match e {
        AgentsError::Settings { .. } | AgentsError::TooLarge { .. } => {
            BadInput(e.to_string()).into()
        }
        other => other.into(),
    }
}

fn report(changes: &[Change], dry_run: bool) -> anyhow::Result<()> {
    for change in changes {
        if !change.changes() {
            outln!("{}: unchanged", change.path.display());
        } else if dry_run {
            outln!("{}", change.diff().trim_end());
        } else {
            let what = match (&change.before, &change.after) {
                (None, _) => "created",
                (_, None) => "removed",
                _ => "updated",
            };
            outln!("{}: {what}", change.path.display());
        }
    }
    Ok(())
}
