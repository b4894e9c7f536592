//! `compactctl install` / `uninstall`: the hook and the MCP server in an agent's settings (merged,
//! idempotent, `--dry-run` prints the diff; uninstall removes exactly what install adds). A
//! project's install names `compactctl` bare in the files teams commit when it is on `PATH`, else
//! writes this machine's path into the project's local settings, and says which
//! (`compact_agents::install::project`).

use crate::exit::BadInput;
use crate::output::outln;
use anyhow::Context;
use clap::{Args, Subcommand};
use compact_agents::install::project::{self, Placement, ProjectPlan};
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
    /// Claude Code: hooks in `.claude/settings.json`, the server in `.mcp.json` (project, naming
    /// `compactctl` found on PATH; else this machine's path in `.claude/settings.local.json` and
    /// the project's entry of `~/.claude.json`) or `~/.claude/settings.json` and `~/.claude.json`
    /// (user).
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
    /// Codex CLI: `[mcp_servers.compact]` in `config.toml` of Codex's home (`$CODEX_HOME`, default
    /// `~/.codex`), and with `--hooks` the `SessionStart` (compact) and `PreCompact` hooks,
    /// trusted as Codex's `/hooks` review records it.
    Codex {
        /// Also the hooks.
        #[arg(long)]
        hooks: bool,
        /// With `--hooks`: leave them untrusted (Codex then asks to review them at its next
        /// interactive start, and `codex exec` skips them).
        #[arg(long, requires = "hooks")]
        no_trust: bool,
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

/// Codex's home: `$CODEX_HOME` when set (made absolute), else `~/.codex`.
pub fn codex_home() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let dir = codex::home_dir(std::env::var_os("CODEX_HOME").as_deref(), home.as_deref())
        .ok_or_else(|| {
            BadInput("neither CODEX_HOME nor HOME is set: cannot find Codex's home".to_owned())
        })?;
    Ok(std::path::absolute(&dir).unwrap_or(dir))
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
    let (target, hooks, mcp, run_hook, trust, codex_home_env) = match &args.agent {
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
            (target, true, mcp, *run_hook, false, None)
        }
        AgentTarget::Codex { hooks, no_trust } => {
            let dir = codex_home()?;
            // Not the default home: the MCP server, which Codex starts without CODEX_HOME, is told.
            let default = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".codex"));
            let env = (default.as_ref() != Some(&dir)).then(|| dir.to_string_lossy().into_owned());
            (
                Target::Codex(dir),
                *hooks || action == Action::Uninstall,
                true,
                false,
                !*no_trust,
                env,
            )
        }
    };
    let options = InstallOptions {
        exe,
        hooks,
        mcp,
        run_hook,
        trust,
        codex_home_env,
    };
    if let Target::ClaudeCodeProject(dir) = &target {
        return run_project(dir, &options, action, args.dry_run);
    }
    let planned = match action {
        Action::Install => install::plan_install(&target, &options),
        Action::Uninstall => install::plan_uninstall(&target, &options),
    }
    .map_err(settings_error)?;
    report(&planned, args.dry_run)?;
    if !args.dry_run {
        install::apply(&planned)?;
    }
    if let (Action::Install, Target::Codex(codex_home), true) = (action, &target, hooks) {
        codex_notes(codex_home, trust, args.dry_run);
    }
    Ok(ExitCode::SUCCESS)
}

/// A project's Claude Code install or uninstall: placed by whether `compactctl` is on `PATH`.
fn run_project(
    dir: &std::path::Path,
    options: &InstallOptions,
    action: Action,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let path = std::env::var_os("PATH");
    let planned = match action {
        Action::Install => project::plan_install(dir, home.as_deref(), options, path.as_deref()),
        Action::Uninstall => {
            project::plan_uninstall(dir, home.as_deref(), options, path.as_deref())
        }
    }
    .map_err(settings_error)?;
    report(&planned.changes, dry_run)?;
    if !dry_run {
        install::apply(&planned.changes)?;
    }
    if action == Action::Install {
        placement_note(&planned, options, dry_run);
        if planned.placement == Placement::Local {
            ignore_note(dir, &planned);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Claude Code makes git ignore `.claude/settings.local.json` when it creates the file itself; one
/// the install created is not, unless the project or the user's git configuration says so.
fn ignore_note(dir: &std::path::Path, planned: &ProjectPlan) {
    let Some(local) = planned
        .changes
        .iter()
        .map(|c| c.path.as_path())
        .find(|p| p.ends_with(".claude/settings.local.json"))
    else {
        return;
    };
    let Ok(rel) = local.strip_prefix(dir) else {
        return;
    };
    // `git check-ignore` exits 0 when ignored, 1 when not, 128 outside a repository.
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["check-ignore", "-q", "--no-index", "--"])
        .arg(rel)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if status.is_ok_and(|s| s.code() == Some(1)) {
        eprintln!(
            "compactctl: note: git does not ignore {}: add it to the project's .gitignore (or \
             the user's git excludes) so that it is never committed",
            rel.display()
        );
    }
}

/// Where a project's install went and why: committed files hold no machine path.
fn placement_note(planned: &ProjectPlan, options: &InstallOptions, dry_run: bool) {
    let will = if dry_run { "would be" } else { "are" };
    let what = if options.mcp {
        "the hooks and the MCP server"
    } else {
        "the hooks"
    };
    match planned.placement {
        Placement::Shared => eprintln!(
            "compactctl: note: {what} {will} written with the command `{}` (found on PATH), not \
             a path of this machine: the project's files can be committed",
            planned.command
        ),
        Placement::Local => {
            let why = match &planned.on_path {
                Some(other) => format!(
                    "the `compactctl` on PATH ({}) is not this executable",
                    other.display()
                ),
                None => "`compactctl` is not on PATH".to_owned(),
            };
            let files: Vec<String> = planned
                .changes
                .iter()
                .take(usize::from(options.hooks) + usize::from(options.mcp))
                .map(|c| c.path.display().to_string())
                .collect();
            eprintln!(
                "compactctl: note: {why}, so {what} name this machine's path ({}) and {will} \
                 written to Claude Code's settings of the project for this machine only, not to \
                 the files teams commit: {}; with this compactctl on PATH, `compactctl install \
                 claude-code` writes the project's shared .claude/settings.json and .mcp.json \
                 instead",
                planned.command,
                files.join(" and ")
            );
        }
    }
}

/// What the user must know after installing Codex's hooks: whether Codex will run them.
fn codex_notes(codex_home: &std::path::Path, trust: bool, dry_run: bool) {
    let config = codex::config_file(codex_home);
    if !codex::hooks_enabled(codex_home).unwrap_or(true) {
        eprintln!(
            "compactctl: note: {} turns Codex's hooks off (`[features] hooks = false` or \
             `codex_hooks = false`); they run once it says `hooks = true`",
            config.display()
        );
    }
    let will = if dry_run { "would be" } else { "are" };
    if trust {
        eprintln!(
            "compactctl: note: the hooks {will} marked trusted in {} (`[hooks.state]`, as Codex's \
             /hooks review records it); `compactctl uninstall codex` removes them and that record",
            config.display()
        );
    } else {
        eprintln!(
            "compactctl: note: the hooks {will} untrusted, and Codex runs no untrusted hook: run \
             `codex` once and choose \"Trust all and continue\" (or review them with /hooks); \
             `codex exec` skips them until then (`--dangerously-bypass-hook-trust` runs them for \
             one invocation)"
        );
    }
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
