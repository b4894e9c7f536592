//! `compactctl install` / `uninstall`: adding the hook and the MCP server to an agent's settings,
//! and taking exactly that back out.
//!
//! Every change is a merge: keys, hooks and servers already in the file stay as they are, in their
//! order. Installing twice changes nothing the second time. An entry already present under our
//! name that is not ours (an `mcpServers.compact` whose command is not `compactctl`) is never
//! overwritten: the install stops with an error naming it. Uninstalling removes the hook
//! commands and the server this installs (recognised by their command: `compactctl hook <agent>`,
//! `compactctl mcp`), then the groups, event lists and tables that only held them; a file that
//! the install created and that holds nothing else afterwards is removed.
//!
//! Files (module [`claude`], [`codex`]):
//! - Claude Code, project: `DIR/.claude/settings.json` (hooks) and `DIR/.mcp.json` (server), files
//!   teams commit, when they can name `compactctl` bare (found on `PATH`); else this machine's own
//!   `DIR/.claude/settings.local.json` and the project's entry of `~/.claude.json`
//!   (`projects."<DIR>".mcpServers`, Claude Code's local scope), with the executable's path
//!   ([`project`] chooses); user: `~/.claude/settings.json` and `~/.claude.json` (top-level
//!   `mcpServers`).
//! - Codex: `config.toml` in Codex's home (`$CODEX_HOME`, default `~/.codex`):
//!   `[mcp_servers.compact]`, and with hooks `[[hooks.SessionStart]]` (matcher `compact`) and
//!   `[[hooks.PreCompact]]`, trusted as Codex records it (`[hooks.state."<key>"]`).
//!
//! The caller plans ([`plan_install`], [`plan_uninstall`]), shows the [`Change`]s (`--dry-run`:
//! [`Change::diff`]) or writes them ([`apply`]: a temporary file renamed over the old one).

pub mod claude;
pub mod codex;
pub mod codex_trust;
mod diff;
pub mod project;
mod sha256;

use crate::error::AgentsError;
use crate::hook::Agent;
use std::path::{Path, PathBuf};

pub use diff::diff;

/// The command a file shared between machines names: `compactctl`, found on the agent's `PATH`.
pub const PATH_COMMAND: &str = "compactctl";

/// The name the MCP server is registered under.
pub const SERVER_NAME: &str = "compact";

/// Seconds an agent lets the hook run before giving up on it.
pub const HOOK_TIMEOUT_SECS: u64 = 30;

/// Largest settings file read (16 MiB; `~/.claude.json` grows with project history).
pub const MAX_SETTINGS_BYTES: u64 = 16 * 1024 * 1024;

/// Which settings to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Claude Code, one project: `DIR/.claude/settings.json` and `DIR/.mcp.json`, files teams
    /// commit (see [`project`]).
    ClaudeCodeProject(PathBuf),
    /// Claude Code, one project on this machine only: `DIR/.claude/settings.local.json` (hooks)
    /// and the project's entry in `HOME/.claude.json` (`projects."<key>".mcpServers`, the key
    /// [`project::claude_project_key`]), neither committed.
    ClaudeCodeLocal {
        /// The project directory.
        project: PathBuf,
        /// The user's home.
        home: PathBuf,
    },
    /// Claude Code, the user (`HOME`): `~/.claude/settings.json` and `~/.claude.json`.
    ClaudeCodeUser(PathBuf),
    /// Codex CLI: its home (`$CODEX_HOME`, default `~/.codex`, [`codex::home_dir`]), holding
    /// `config.toml`.
    Codex(PathBuf),
}

impl Target {
    /// The agent whose settings these are.
    pub fn agent(&self) -> Agent {
        match self {
            Target::ClaudeCodeProject(_)
            | Target::ClaudeCodeLocal { .. }
            | Target::ClaudeCodeUser(_) => Agent::ClaudeCode,
            Target::Codex(_) => Agent::Codex,
        }
    }
}

/// What to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallOptions {
    /// The `compactctl` executable the agent will run, as written: an absolute path, or
    /// [`PATH_COMMAND`] in files shared between machines.
    pub exe: String,
    /// Install the hooks (Claude Code: always; Codex: when asked, see [`codex`]).
    pub hooks: bool,
    /// Install the MCP server.
    pub mcp: bool,
    /// Claude Code: the `PreToolUse` hook on `Bash` that wraps commands in `compactctl run` (off by
    /// default). Uninstalling with it set removes that hook alone.
    pub run_hook: bool,
    /// Codex: record the installed hooks as trusted, as Codex's own review does (Codex runs no
    /// untrusted hook). Uninstalling always removes that record.
    pub trust: bool,
    /// Codex: the `CODEX_HOME` the MCP server is started with, when Codex's home is not the
    /// default `~/.codex` (Codex passes its MCP servers a few variables only, never this one).
    pub codex_home_env: Option<String>,
}

/// One file's planned change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file.
    pub path: PathBuf,
    /// Its text now (`None`: it does not exist).
    pub before: Option<String>,
    /// Its text after (`None`: it is removed).
    pub after: Option<String>,
}

impl Change {
    /// True when the file would change.
    pub fn changes(&self) -> bool {
        self.before != self.after
    }

    /// A line diff of the change, headed by the file name.
    pub fn diff(&self) -> String {
        let before = self.before.as_deref().unwrap_or("");
        let after = self.after.as_deref().unwrap_or("");
        let what = match (&self.before, &self.after) {
            (None, Some(_)) => " (new file)",
            (Some(_), None) => " (removed)",
            _ => "",
        };
        format!(
            "--- {path}\n+++ {path}{what}\n{}",
            diff(before, after),
            path = self.path.display()
        )
    }
}

/// The changes installing into `target` makes (unchanged files included, with `before == after`).
pub fn plan_install(target: &Target, options: &InstallOptions) -> Result<Vec<Change>, AgentsError> {
    match target {
        Target::ClaudeCodeProject(_)
        | Target::ClaudeCodeLocal { .. }
        | Target::ClaudeCodeUser(_) => claude::plan(target, options, claude::Mode::Install),
        Target::Codex(codex_home) => codex::plan(codex_home, options, codex::Mode::Install),
    }
}

/// The changes uninstalling from `target` makes.
pub fn plan_uninstall(
    target: &Target,
    options: &InstallOptions,
) -> Result<Vec<Change>, AgentsError> {
    match target {
        Target::ClaudeCodeProject(_)
        | Target::ClaudeCodeLocal { .. }
        | Target::ClaudeCodeUser(_) => claude::plan(target, options, claude::Mode::Uninstall),
        Target::Codex(codex_home) => codex::plan(codex_home, options, codex::Mode::Uninstall),
    }
}

/// Writes the changes: each file through a temporary file renamed over it (the directory is
/// created when needed); a file whose `after` is `None` is removed.
pub fn apply(changes: &[Change]) -> Result<(), AgentsError> {
    for change in changes.iter().filter(|c| c.changes()) {
        match &change.after {
            Some(text) => write_atomic(&change.path, text)?,
            None => {
                std::fs::remove_file(&change.path).map_err(|e| AgentsError::io(&change.path, e))?
            }
        }
    }
    Ok(())
}

fn write_atomic(path: &Path, text: &str) -> Result<(), AgentsError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| AgentsError::io(dir, e))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".compact-tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| AgentsError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| AgentsError::io(path, e))
}

/// The file's text, `None` when it does not exist.
fn read_settings(path: &Path) -> Result<Option<String>, AgentsError> {
    if !path.exists() {
        return Ok(None);
    }
    let bytes = crate::transcript::read_bounded(path, MAX_SETTINGS_BYTES)?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| AgentsError::Settings {
            path: path.to_path_buf(),
            reason: format!("not UTF-8 (byte {})", e.utf8_error().valid_up_to()),
        })
}

/// `exe` as one shell word (single-quoted when it holds anything but safe characters).
pub fn shell_word(exe: &str) -> String {
    let safe = !exe.is_empty()
        && exe
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c));
    if safe {
        exe.to_owned()
    } else {
        format!("'{}'", exe.replace('\'', r"'\''"))
    }
}

/// The hook command for `agent`.
pub fn hook_command(exe: &str, agent: Agent) -> String {
    format!("{} hook {}", shell_word(exe), agent.name())
}

/// True when `command` runs `compactctl hook <agent>` (whatever the path to `compactctl`).
pub fn is_our_hook(command: &str, agent: Agent) -> bool {
    hook_exe(command, agent).is_some_and(is_compactctl)
}

/// The executable `command` runs as `<exe> hook <agent>` (unquoted), if it has that shape.
pub fn hook_exe(command: &str, agent: Agent) -> Option<&str> {
    let rest = command.trim().strip_suffix(agent.name())?;
    let exe = rest.trim_end().strip_suffix(" hook")?;
    Some(exe.trim().trim_matches('\''))
}

/// True when `exe` names an executable by a path (an earlier install's machine path), not a
/// bare name looked up on `PATH`.
pub fn is_path(exe: &str) -> bool {
    exe.contains('/') || exe.contains(std::path::MAIN_SEPARATOR)
}

/// True when `exe` names a `compactctl` executable.
pub fn is_compactctl(exe: &str) -> bool {
    Path::new(exe)
        .file_name()
        .is_some_and(|n| n == "compactctl" || n == "compactctl.exe")
}

/// The MCP server's arguments: the agent's latest session in the directory it starts in.
pub fn server_args(agent: Agent) -> Vec<String> {
    vec![
        "mcp".to_owned(),
        "--latest".to_owned(),
        agent.name().to_owned(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_hook_is_recognised_whatever_the_path() {
        assert!(is_our_hook(
            "/usr/local/bin/compactctl hook claude-code",
            Agent::ClaudeCode
        ));
        assert!(is_our_hook(
            &hook_command("/opt/my tools/compactctl", Agent::Codex),
            Agent::Codex
        ));
        assert!(!is_our_hook(
            "/usr/local/bin/compactctl hook codex",
            Agent::ClaudeCode
        ));
        assert!(!is_our_hook(
            "/usr/bin/other hook claude-code",
            Agent::ClaudeCode
        ));
        assert!(!is_our_hook(
            "echo compactctl hook claude-code",
            Agent::ClaudeCode
        ));
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("/usr/bin/compactctl"), "/usr/bin/compactctl");
        assert_eq!(shell_word("/a b/it's"), r"'/a b/it'\''s'");
    }
}
