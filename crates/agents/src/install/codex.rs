//! Codex CLI's `~/.codex/config.toml`: the MCP server as `[mcp_servers.compact]` (`command`,
//! `args`), and, when asked, the hooks as `[[hooks.SessionStart]]` (matcher `compact`) and
//! `[[hooks.PreCompact]]`, each with a `[[hooks.<Event>.hooks]]` command table.
//!
//! The file is edited in place (`toml_edit`): comments, order and layout of everything else stay.
//!
//! Hooks are opt-in (`--hooks`): Codex runs hooks only with `[features] codex_hooks = true`, which
//! this never sets (a feature flag is the user's choice), and a `SessionStart` hook with the
//! `compact` source needs a Codex version that sends it ([`hooks_enabled`] tells the caller
//! whether the flag is on).

use super::{
    hook_command, is_compactctl, is_our_hook, read_settings, server_args, Change, InstallOptions,
    HOOK_TIMEOUT_SECS, SERVER_NAME,
};
use crate::error::AgentsError;
use crate::hook::Agent;
use std::path::{Path, PathBuf};
use toml_edit::{value, Array, ArrayOfTables, DocumentMut, Item, Table};

/// Install or uninstall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Add (or bring up to date) our entries.
    Install,
    /// Remove our entries.
    Uninstall,
}

/// The events the hook is installed for, with their matcher (`None`: every trigger).
pub const EVENTS: [(&str, Option<&str>); 2] =
    [("SessionStart", Some("compact")), ("PreCompact", None)];

/// `HOME/.codex/config.toml`.
pub fn config_file(home: &Path) -> PathBuf {
    home.join(".codex").join("config.toml")
}

/// True when the config turns hooks on (`[features] codex_hooks = true`).
pub fn hooks_enabled(home: &Path) -> Result<bool, AgentsError> {
    let path = config_file(home);
    let Some(text) = read_settings(&path)? else {
        return Ok(false);
    };
    let doc = parse(&path, &text)?;
    Ok(doc
        .get("features")
        .and_then(|f| f.get("codex_hooks"))
        .and_then(Item::as_bool)
        == Some(true))
}

/// The change to `config.toml`.
pub fn plan(home: &Path, options: &InstallOptions, mode: Mode) -> Result<Vec<Change>, AgentsError> {
    let path = config_file(home);
    let before = read_settings(&path)?;
    let mut doc = parse(&path, before.as_deref().unwrap_or(""))?;
    let bad = |reason: String| AgentsError::Settings {
        path: path.clone(),
        reason,
    };
    let mut changed = false;
    if options.mcp {
        changed |= server(&mut doc, &options.exe, mode).map_err(bad)?;
    }
    if options.hooks {
        changed |= hooks(&mut doc, &options.exe, mode).map_err(bad)?;
    }
    let after = if !changed {
        before.clone()
    } else if doc.as_table().is_empty()
        && doc.trailing().as_str().is_none_or(|t| t.trim().is_empty())
    {
        None
    } else {
        Some(doc.to_string())
    };
    Ok(vec![Change {
        path,
        before,
        after,
    }])
}

fn parse(path: &Path, text: &str) -> Result<DocumentMut, AgentsError> {
    text.parse::<DocumentMut>()
        .map_err(|e| AgentsError::Settings {
            path: path.to_path_buf(),
            reason: format!("invalid TOML: {}", e.to_string().trim()),
        })
}

/// Adds or removes `[mcp_servers.compact]`; true when the document changed.
fn server(doc: &mut DocumentMut, exe: &str, mode: Mode) -> Result<bool, String> {
    if mode == Mode::Uninstall && doc.get("mcp_servers").is_none() {
        return Ok(false);
    }
    let servers = doc.entry("mcp_servers").or_insert_with(implicit_table);
    let Some(servers) = servers.as_table_mut() else {
        return Err("`mcp_servers` is not a table".to_owned());
    };
    let existing = servers.get(SERVER_NAME);
    let command = existing
        .and_then(|s| s.get("command"))
        .and_then(Item::as_str)
        .map(str::to_owned);
    let ours = command.as_deref().is_some_and(is_compactctl);
    let args = server_args(Agent::Codex);
    let same = ours
        && command.as_deref() == Some(exe)
        && existing
            .and_then(|s| s.get("args"))
            .and_then(Item::as_array)
            .is_some_and(|a| {
                a.iter()
                    .map(|v| v.as_str())
                    .eq(args.iter().map(|s| Some(s.as_str())))
            });
    let changed = match (mode, existing.is_some()) {
        (Mode::Install, true) if same => false,
        (Mode::Install, true) if !ours => {
            return Err(format!(
                "`mcp_servers.{SERVER_NAME}` exists and does not run compactctl: not overwritten \
                 (rename or remove it first)"
            ))
        }
        (Mode::Install, _) => {
            let mut table = Table::new();
            table.insert("command", value(exe));
            table.insert("args", value(args.iter().collect::<Array>()));
            servers.insert(SERVER_NAME, Item::Table(table));
            true
        }
        (Mode::Uninstall, true) if ours => {
            servers.remove(SERVER_NAME);
            true
        }
        (Mode::Uninstall, _) => false,
    };
    if servers.is_empty() {
        doc.remove("mcp_servers");
    }
    Ok(changed)
}

fn implicit_table() -> Item {
    let mut table = Table::new();
    table.set_implicit(true);
    Item::Table(table)
}

/// Adds or removes our hook groups; true when the document changed.
fn hooks(doc: &mut DocumentMut, exe: &str, mode: Mode) -> Result<bool, String> {
    let agent = Agent::Codex;
    if mode == Mode::Uninstall && doc.get("hooks").is_none() {
        return Ok(false);
    }
    let command = hook_command(exe, agent);
    let hooks = doc.entry("hooks").or_insert_with(implicit_table);
    let Some(hooks) = hooks.as_table_mut() else {
        return Err(
            "`hooks` is not a table (inline hooks are not edited: add the hook by hand)".to_owned(),
        );
    };
    let mut changed = false;
    for (event, matcher) in EVENTS {
        if mode == Mode::Uninstall && hooks.get(event).is_none() {
            continue;
        }
        let list = hooks
            .entry(event)
            .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()));
        let Some(groups) = list.as_array_of_tables_mut() else {
            return Err(format!(
                "`hooks.{event}` is not an array of tables (`[[hooks.{event}]]`): add the hook by hand"
            ));
        };
        changed |= match mode {
            Mode::Install => install_group(groups, &command, matcher, agent),
            Mode::Uninstall => remove_ours(groups, agent),
        };
        if groups.is_empty() {
            hooks.remove(event);
        }
    }
    if hooks.is_empty() {
        doc.remove("hooks");
    }
    Ok(changed)
}

fn hook_tables(group: &mut Table) -> Option<&mut ArrayOfTables> {
    group
        .get_mut("hooks")
        .and_then(Item::as_array_of_tables_mut)
}

fn command_of(hook: &Table) -> Option<&str> {
    hook.get("command").and_then(Item::as_str)
}

fn install_group(
    groups: &mut ArrayOfTables,
    command: &str,
    matcher: Option<&str>,
    agent: Agent,
) -> bool {
    for group in groups.iter_mut() {
        let Some(list) = hook_tables(group) else {
            continue;
        };
        for hook in list.iter_mut() {
            if !command_of(hook).is_some_and(|c| is_our_hook(c, agent)) {
                continue;
            }
            if command_of(hook) == Some(command) {
                return false;
            }
            hook.insert("command", value(command));
            return true;
        }
    }
    let mut hook = Table::new();
    hook.insert("type", value("command"));
    hook.insert("command", value(command));
    hook.insert(
        "timeout",
        value(i64::try_from(HOOK_TIMEOUT_SECS).unwrap_or(i64::MAX)),
    );
    let mut list = ArrayOfTables::new();
    list.push(hook);
    let mut group = Table::new();
    if let Some(m) = matcher {
        group.insert("matcher", value(m));
    }
    group.insert("hooks", Item::ArrayOfTables(list));
    groups.push(group);
    true
}

fn remove_ours(groups: &mut ArrayOfTables, agent: Agent) -> bool {
    let mut removed = false;
    groups.retain(|group| {
        let Some(list) = group.get("hooks").and_then(Item::as_array_of_tables) else {
            return true;
        };
        let ours = list
            .iter()
            .filter(|h| command_of(h).is_some_and(|c| is_our_hook(c, agent)))
            .count();
        if ours == 0 {
            return true;
        }
        removed = true;
        ours < list.len()
    });
    for group in groups.iter_mut() {
        if let Some(list) = hook_tables(group) {
            list.retain(|h| !command_of(h).is_some_and(|c| is_our_hook(c, agent)));
        }
    }
    removed
}
