//! Codex CLI's `config.toml` in Codex's home (`$CODEX_HOME`, default `~/.codex`): the MCP server
//! as `[mcp_servers.compact]` (`command`, `args`), and, when asked, the hooks as
//! `[[hooks.SessionStart]]` (matcher `compact`) and `[[hooks.PreCompact]]`, each with a
//! `[[hooks.<Event>.hooks]]` command table, trusted the way Codex records a trusted hook
//! (`[hooks.state."<key>"] trusted_hash`, module [`super::codex_trust`]).
//!
//! The file is edited in place (`toml_edit`): comments, order and layout of everything else stay.
//!
//! Hooks are opt-in (`--hooks`). Codex 0.169 reads them from `config.toml` with its `hooks`
//! feature on (the default; `[features] hooks = false`, or the older name `codex_hooks = false`,
//! turns it off: [`hooks_enabled`]), and runs one only once it is trusted. Uninstalling removes
//! our handlers and their trust entries, and moves the trust entries of the handlers that follow
//! them in the same event to their new positions (a key names a position).

use super::codex_trust::{self, Handler};
use super::{
    hook_command, is_compactctl, is_our_hook, read_settings, server_args, Change, InstallOptions,
    HOOK_TIMEOUT_SECS, SERVER_NAME,
};
use crate::error::AgentsError;
use crate::hook::Agent;
use std::ffi::OsStr;
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

/// Codex's home: `codex_home_env` (the value of `CODEX_HOME`) when set and not empty, else
/// `HOME/.codex`; `None` when neither is known.
pub fn home_dir(codex_home_env: Option<&OsStr>, home: Option<&Path>) -> Option<PathBuf> {
    match codex_home_env.filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => home
            .filter(|h| !h.as_os_str().is_empty())
            .map(|h| h.join(".codex")),
    }
}

/// `CODEX_HOME/config.toml`.
pub fn config_file(codex_home: &Path) -> PathBuf {
    codex_home.join("config.toml")
}

/// False when the config turns Codex's hooks off: `[features] hooks = false`, or, without
/// `hooks`, the older name `codex_hooks = false` (Codex 0.169 runs hooks by default).
pub fn hooks_enabled(codex_home: &Path) -> Result<bool, AgentsError> {
    let path = config_file(codex_home);
    let Some(text) = read_settings(&path)? else {
        return Ok(true);
    };
    let doc = parse(&path, &text)?;
    let features = doc.get("features");
    let flag = |name: &str| features.and_then(|f| f.get(name)).and_then(Item::as_bool);
    Ok(flag("hooks")
        .or_else(|| flag("codex_hooks"))
        .unwrap_or(true))
}

/// The change to `config.toml`.
pub fn plan(
    codex_home: &Path,
    options: &InstallOptions,
    mode: Mode,
) -> Result<Vec<Change>, AgentsError> {
    let path = config_file(codex_home);
    let before = read_settings(&path)?;
    let mut doc = parse(&path, before.as_deref().unwrap_or(""))?;
    let bad = |reason: String| AgentsError::Settings {
        path: path.clone(),
        reason,
    };
    let mut changed = false;
    if options.mcp {
        let env = options.codex_home_env.as_deref();
        changed |= server(&mut doc, &options.exe, env, mode).map_err(bad)?;
    }
    if options.hooks {
        // Trust is written on install when asked, and always taken out with the hooks.
        let trust = (mode == Mode::Uninstall || options.trust)
            .then(|| codex_trust::source_path(codex_home));
        changed |= hooks(&mut doc, &options.exe, mode, trust.as_deref()).map_err(bad)?;
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

/// Adds or removes `[mcp_servers.compact]` (with `env = { CODEX_HOME = ... }` when `codex_home`
/// is given: Codex starts its MCP servers with a few variables only, never `CODEX_HOME`); true
/// when the document changed.
fn server(
    doc: &mut DocumentMut,
    exe: &str,
    codex_home: Option<&str>,
    mode: Mode,
) -> Result<bool, String> {
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
            })
        && existing
            .and_then(|s| s.get("env"))
            .and_then(|e| e.get("CODEX_HOME"))
            .and_then(Item::as_str)
            == codex_home;
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
            if let Some(dir) = codex_home {
                let mut env = toml_edit::InlineTable::new();
                env.insert("CODEX_HOME", dir.into());
                table.insert("env", value(env));
            }
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

/// Adds or removes our hook groups, and with `trust` (the file's path as Codex names it in
/// trust keys) their trust entries; true when the document changed.
fn hooks(
    doc: &mut DocumentMut,
    exe: &str,
    mode: Mode,
    trust: Option<&Path>,
) -> Result<bool, String> {
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
    // Uninstall: each handler's trust key before, and after (`None`: ours, removed).
    let mut moves: Vec<(String, Option<String>)> = Vec::new();
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
            Mode::Uninstall => {
                if let Some(source) = trust {
                    moves.extend(removal_moves(groups, agent).into_iter().map(|(old, new)| {
                        let key = |(g, h)| codex_trust::key(source, event, g, h);
                        (key(old), new.map(key))
                    }));
                }
                remove_ours(groups, agent)
            }
        };
        if groups.is_empty() {
            hooks.remove(event);
        }
    }
    if let Some(source) = trust {
        changed |= match mode {
            Mode::Install => trust_ours(hooks, source, agent)?,
            Mode::Uninstall => move_trust(hooks, &moves)?,
        };
    }
    if hooks.is_empty() {
        doc.remove("hooks");
    }
    Ok(changed)
}

/// `hooks.state`, created when missing.
fn state_table(hooks: &mut Table) -> Result<&mut Table, String> {
    hooks
        .entry("state")
        .or_insert_with(implicit_table)
        .as_table_mut()
        .ok_or_else(|| "`hooks.state` is not a table".to_owned())
}

/// Records our handlers as trusted (`hooks.state."<key>".trusted_hash`); true when that changed.
fn trust_ours(hooks: &mut Table, source: &Path, agent: Agent) -> Result<bool, String> {
    let mut wanted = Vec::new();
    for (event, _) in EVENTS {
        let Some(groups) = hooks.get(event).and_then(Item::as_array_of_tables) else {
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let matcher = group.get("matcher").and_then(Item::as_str);
            let Some(list) = group.get("hooks").and_then(Item::as_array_of_tables) else {
                continue;
            };
            for (h, hook) in list.iter().enumerate() {
                let Some(command) = command_of(hook).filter(|c| is_our_hook(c, agent)) else {
                    continue;
                };
                let handler = Handler {
                    event,
                    matcher,
                    command,
                    timeout: hook
                        .get("timeout")
                        .and_then(Item::as_integer)
                        .and_then(|t| u64::try_from(t).ok()),
                    is_async: hook.get("async").and_then(Item::as_bool).unwrap_or(false),
                    status_message: hook.get("statusMessage").and_then(Item::as_str),
                };
                wanted.push((
                    codex_trust::key(source, event, g, h),
                    codex_trust::hash(&handler),
                ));
            }
        }
    }
    if wanted.is_empty() {
        return Ok(false);
    }
    let state = state_table(hooks)?;
    let mut changed = false;
    for (key, hash) in wanted {
        let entry = state
            .entry(&key)
            .or_insert_with(|| Item::Table(Table::new()));
        let Some(entry) = entry.as_table_mut() else {
            return Err(format!("`hooks.state.\"{key}\"` is not a table"));
        };
        if entry.get("trusted_hash").and_then(Item::as_str) != Some(hash.as_str()) {
            entry.insert("trusted_hash", value(hash));
            changed = true;
        }
    }
    Ok(changed)
}

/// Removes the trust entries of removed handlers (`(key, None)`) and moves the others' to their
/// new keys, in order (a handler only ever moves to a position freed before it); true when the
/// state changed.
fn move_trust(hooks: &mut Table, moves: &[(String, Option<String>)]) -> Result<bool, String> {
    let Some(state) = hooks.get_mut("state") else {
        return Ok(false);
    };
    let Some(state) = state.as_table_mut() else {
        return Err("`hooks.state` is not a table".to_owned());
    };
    let mut changed = false;
    for (old, new) in moves {
        if new.as_ref() == Some(old) {
            continue;
        }
        let Some(entry) = state.remove(old) else {
            continue;
        };
        changed = true;
        if let Some(new) = new {
            state.insert(new, entry);
        }
    }
    if state.is_empty() {
        hooks.remove("state");
    }
    Ok(changed)
}

/// A handler's place: the index of its group among the event's groups, and its index in the group.
type Position = (usize, usize);

/// Each handler's position, and where it is once [`remove_ours`] has run
/// (`None`: it is ours, removed). Handlers written inline (`hooks = [{...}]`) count as others'.
fn removal_moves(groups: &ArrayOfTables, agent: Agent) -> Vec<(Position, Option<Position>)> {
    let mut moves = Vec::new();
    let mut new_group = 0;
    for (g, group) in groups.iter().enumerate() {
        let commands: Vec<Option<&str>> = match group.get("hooks") {
            Some(Item::ArrayOfTables(list)) => list.iter().map(command_of).collect(),
            Some(Item::Value(toml_edit::Value::Array(list))) => list.iter().map(|_| None).collect(),
            _ => Vec::new(),
        };
        let ours = |c: &Option<&str>| c.is_some_and(|c| is_our_hook(c, agent));
        let kept_group = commands.iter().any(|c| !ours(c)) || commands.is_empty();
        let mut new_handler = 0;
        for (h, command) in commands.iter().enumerate() {
            if ours(command) {
                moves.push(((g, h), None));
            } else {
                moves.push(((g, h), Some((new_group, new_handler))));
                new_handler += 1;
            }
        }
        if kept_group {
            new_group += 1;
        }
    }
    moves
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
