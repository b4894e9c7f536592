//! Claude Code's settings: hooks in `settings.json` (`hooks.<Event>[].hooks[]`), the MCP server in
//! `.mcp.json` (project) or `~/.claude.json` (user), both under `mcpServers`.
//!
//! A file is rewritten only when it changes, as JSON with two-space indentation (the layout Claude
//! Code writes) and its keys in their order.

use super::{
    hook_command, is_compactctl, is_our_hook, read_settings, server_args, Change, InstallOptions,
    Target, HOOK_TIMEOUT_SECS, SERVER_NAME,
};
use crate::error::AgentsError;
use crate::hook::Agent;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Install or uninstall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Add (or bring up to date) our entries.
    Install,
    /// Remove our entries.
    Uninstall,
}

/// The events the hook is installed for, with their matcher (`None`: every trigger).
/// (`PostCompact` is sent by recent versions only; older ones never run it.)
pub const EVENTS: [(&str, Option<&str>); 3] = [
    ("SessionStart", Some("compact")),
    ("PreCompact", None),
    ("PostCompact", None),
];

/// The event, and its matcher, of the `PreToolUse` hook that wraps `Bash` commands in
/// `compactctl run` (installed with [`InstallOptions::run_hook`]).
pub const RUN_EVENT: (&str, Option<&str>) = ("PreToolUse", Some("Bash"));

/// The settings file and the MCP file of a target.
pub fn files(target: &Target) -> (PathBuf, PathBuf) {
    match target {
        Target::ClaudeCodeProject(dir) => (
            dir.join(".claude").join("settings.json"),
            dir.join(".mcp.json"),
        ),
        Target::ClaudeCodeUser(home) | Target::Codex(home) => (
            home.join(".claude").join("settings.json"),
            home.join(".claude.json"),
        ),
    }
}

/// The changes to the two files.
pub fn plan(
    target: &Target,
    options: &InstallOptions,
    mode: Mode,
) -> Result<Vec<Change>, AgentsError> {
    let (settings, mcp) = files(target);
    let mut changes = Vec::new();
    if options.hooks {
        changes.push(edit(&settings, |doc| {
            hooks(doc, &options.exe, mode, options.run_hook, &settings)
        })?);
    }
    if options.mcp {
        changes.push(edit(&mcp, |doc| server(doc, &options.exe, mode, &mcp))?);
    }
    Ok(changes)
}

/// Applies `f` to the file's JSON object; the change is the file rewritten when `f` changed it.
fn edit(
    path: &Path,
    f: impl FnOnce(&mut Map<String, Value>) -> Result<bool, AgentsError>,
) -> Result<Change, AgentsError> {
    let before = read_settings(path)?;
    let mut doc = match before.as_deref() {
        None => Map::new(),
        Some(text) if text.trim().is_empty() => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(bad(path, "the file is not a JSON object")),
            Err(e) => {
                return Err(bad(
                    path,
                    &format!(
                        "invalid JSON at line {}, column {}: {e}",
                        e.line(),
                        e.column()
                    ),
                ))
            }
        },
    };
    let changed = f(&mut doc)?;
    let after = if !changed {
        before.clone()
    } else if doc.is_empty() {
        None
    } else {
        let text = serde_json::to_string_pretty(&Value::Object(doc))
            .map_err(|e| bad(path, &format!("cannot encode: {e}")))?;
        Some(format!("{text}\n"))
    };
    Ok(Change {
        path: path.to_path_buf(),
        before,
        after,
    })
}

fn bad(path: &Path, reason: &str) -> AgentsError {
    AgentsError::Settings {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    }
}

/// Adds or removes our hook groups; true when the document changed.
fn hooks(
    doc: &mut Map<String, Value>,
    exe: &str,
    mode: Mode,
    run_hook: bool,
    path: &Path,
) -> Result<bool, AgentsError> {
    let agent = Agent::ClaudeCode;
    let events: Vec<(&str, Option<&str>)> = match (mode, run_hook) {
        (Mode::Install, false) => EVENTS.to_vec(),
        (Mode::Uninstall, true) => vec![RUN_EVENT],
        _ => EVENTS.iter().copied().chain([RUN_EVENT]).collect(),
    };
    let command = hook_command(exe, agent);
    if mode == Mode::Uninstall && !doc.contains_key("hooks") {
        return Ok(false);
    }
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err(bad(path, "`hooks` is not an object"));
    };
    let mut changed = false;
    for (event, matcher) in events {
        if mode == Mode::Uninstall && !hooks.contains_key(event) {
            continue;
        }
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(groups) = list else {
            return Err(bad(path, &format!("`hooks.{event}` is not a list")));
        };
        changed |= match mode {
            Mode::Install => install_group(groups, &command, matcher, agent)
                .map_err(|reason| bad(path, &format!("`hooks.{event}`: {reason}")))?,
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

/// Ensures one group runs our hook with `command`; true when something changed.
fn install_group(
    groups: &mut Vec<Value>,
    command: &str,
    matcher: Option<&str>,
    agent: Agent,
) -> Result<bool, &'static str> {
    for group in groups.iter_mut() {
        let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            continue;
        };
        for hook in list.iter_mut() {
            let ours = hook
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| is_our_hook(c, agent));
            if !ours {
                continue;
            }
            if hook.get("command").and_then(Value::as_str) == Some(command) {
                return Ok(false);
            }
            let Some(obj) = hook.as_object_mut() else {
                return Err("a hook is not an object");
            };
            obj.insert("command".to_owned(), Value::String(command.to_owned()));
            return Ok(true);
        }
    }
    let mut group = Map::new();
    if let Some(m) = matcher {
        group.insert("matcher".to_owned(), Value::String(m.to_owned()));
    }
    group.insert(
        "hooks".to_owned(),
        json!([{ "type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECS }]),
    );
    groups.push(Value::Object(group));
    Ok(true)
}

/// Removes our hooks from the groups, and the groups they leave empty; true when any was removed.
fn remove_ours(groups: &mut Vec<Value>, agent: Agent) -> bool {
    let mut removed = false;
    groups.retain_mut(|group| {
        let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let n = list.len();
        list.retain(|hook| {
            !hook
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| is_our_hook(c, agent))
        });
        if list.len() == n {
            return true;
        }
        removed = true;
        !list.is_empty()
    });
    removed
}

/// Adds or removes `mcpServers.compact`; true when the document changed.
fn server(
    doc: &mut Map<String, Value>,
    exe: &str,
    mode: Mode,
    path: &Path,
) -> Result<bool, AgentsError> {
    let entry = json!({
        "type": "stdio",
        "command": exe,
        "args": server_args(Agent::ClaudeCode),
    });
    if mode == Mode::Uninstall && !doc.contains_key("mcpServers") {
        return Ok(false);
    }
    let servers = doc
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(bad(path, "`mcpServers` is not an object"));
    };
    let existing = servers.get(SERVER_NAME);
    let ours = existing
        .and_then(|s| s.get("command"))
        .and_then(Value::as_str)
        .is_some_and(is_compactctl);
    let changed = match (mode, existing) {
        (Mode::Install, Some(current)) if *current == entry => false,
        (Mode::Install, Some(_)) if !ours => {
            return Err(bad(
                path,
                &format!(
                    "`mcpServers.{SERVER_NAME}` exists and does not run compactctl: not \
                     overwritten (rename or remove it first)"
                ),
            ))
        }
        (Mode::Install, _) => {
            servers.insert(SERVER_NAME.to_owned(), entry);
            true
        }
        (Mode::Uninstall, Some(_)) if ours => {
            servers.remove(SERVER_NAME);
            true
        }
        (Mode::Uninstall, _) => false,
    };
    if servers.is_empty() {
        doc.remove("mcpServers");
    }
    Ok(changed)
}
