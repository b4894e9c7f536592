//! Claude Code's settings: hooks in `settings.json` or `settings.local.json`
//! (`hooks.<Event>[].hooks[]`), the MCP server under `mcpServers` in `.mcp.json` (project),
//! `~/.claude.json` (user) or the project's entry of `~/.claude.json` (`projects."<key>"`, the
//! local scope).
//!
//! A file is rewritten only when it changes, as JSON with two-space indentation (the layout Claude
//! Code writes) and its keys in their order (a key removed closes the gap: later keys keep theirs).

use super::{
    hook_command, hook_exe, is_compactctl, is_path, read_settings, server_args, Change,
    InstallOptions, Target, HOOK_TIMEOUT_SECS, SERVER_NAME,
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
    /// Remove, of the entries an install covers, ours that run `compactctl` by a path, keeping
    /// those that run it from `PATH`: what an install into a project's other placement supersedes
    /// (see [`super::project`]).
    RemovePaths,
}

impl Mode {
    /// True when this entry of ours (running `exe`) goes.
    fn removes(self, exe: &str) -> bool {
        match self {
            Mode::Install => false,
            Mode::Uninstall => true,
            Mode::RemovePaths => is_path(exe),
        }
    }
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
        Target::ClaudeCodeLocal { project, home } => (
            project.join(".claude").join("settings.local.json"),
            home.join(".claude.json"),
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
        changes.push(match target {
            Target::ClaudeCodeLocal { project, .. } => {
                let key = super::project::claude_project_key(project);
                let key = key.to_string_lossy();
                edit(&mcp, |doc| {
                    local_server(doc, &key, &options.exe, mode, &mcp)
                })?
            }
            _ => edit(&mcp, |doc| top_server(doc, &options.exe, mode, &mcp))?,
        });
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
        (Mode::Install | Mode::RemovePaths, false) => EVENTS.to_vec(),
        (Mode::Uninstall, true) => vec![RUN_EVENT],
        _ => EVENTS.iter().copied().chain([RUN_EVENT]).collect(),
    };
    let command = hook_command(exe, agent);
    if mode != Mode::Install && !doc.contains_key("hooks") {
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
        if mode != Mode::Install && !hooks.contains_key(event) {
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
            Mode::Uninstall | Mode::RemovePaths => remove_ours(groups, agent, mode),
        };
        if groups.is_empty() {
            hooks.shift_remove(event);
        }
    }
    if hooks.is_empty() {
        doc.shift_remove("hooks");
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
                .and_then(|c| hook_exe(c, agent))
                .is_some_and(is_compactctl);
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

/// Removes our hooks (those `mode` removes) from the groups, and the groups they leave empty; true
/// when any was removed.
fn remove_ours(groups: &mut Vec<Value>, agent: Agent, mode: Mode) -> bool {
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
                .and_then(|c| hook_exe(c, agent))
                .is_some_and(|exe| is_compactctl(exe) && mode.removes(exe))
        });
        if list.len() == n {
            return true;
        }
        removed = true;
        !list.is_empty()
    });
    removed
}

/// Adds or removes `mcpServers.compact` at the top of the document; true when it changed.
fn top_server(
    doc: &mut Map<String, Value>,
    exe: &str,
    mode: Mode,
    path: &Path,
) -> Result<bool, AgentsError> {
    if mode != Mode::Install && !doc.contains_key("mcpServers") {
        return Ok(false);
    }
    let servers = object(doc, "mcpServers", "mcpServers", path)?;
    let changed = server(servers, exe, mode, path)?;
    if servers.is_empty() {
        doc.shift_remove("mcpServers");
    }
    Ok(changed)
}

/// Adds or removes `projects."<key>".mcpServers.compact` (`~/.claude.json`, a project's local
/// scope); true when the document changed.
///
/// Claude Code keeps an `mcpServers` object, empty or not, in every project entry it writes:
/// uninstalling leaves it, and removes only a project entry holding nothing else (one the install
/// created).
fn local_server(
    doc: &mut Map<String, Value>,
    key: &str,
    exe: &str,
    mode: Mode,
    path: &Path,
) -> Result<bool, AgentsError> {
    let present = doc
        .get("projects")
        .and_then(|p| p.get(key))
        .is_some_and(|p| p.get("mcpServers").is_some());
    if mode != Mode::Install && !present {
        return Ok(false);
    }
    let projects = object(doc, "projects", "projects", path)?;
    let project = object(projects, key, &format!("projects.\"{key}\""), path)?;
    let servers = object(
        project,
        "mcpServers",
        &format!("projects.\"{key}\".mcpServers"),
        path,
    )?;
    let changed = server(servers, exe, mode, path)?;
    let emptied = servers.is_empty();
    if emptied && project.len() == 1 {
        projects.shift_remove(key);
        if projects.is_empty() {
            doc.shift_remove("projects");
        }
    }
    Ok(changed)
}

/// The object under `key` in `map`, created empty when missing (`name`: the key's place, for
/// errors).
fn object<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
    name: &str,
    path: &Path,
) -> Result<&'a mut Map<String, Value>, AgentsError> {
    match map.entry(key).or_insert_with(|| Value::Object(Map::new())) {
        Value::Object(inner) => Ok(inner),
        _ => Err(bad(path, &format!("`{name}` is not an object"))),
    }
}

/// Adds or removes `compact` in an `mcpServers` object; true when it changed.
fn server(
    servers: &mut Map<String, Value>,
    exe: &str,
    mode: Mode,
    path: &Path,
) -> Result<bool, AgentsError> {
    let entry = json!({
        "type": "stdio",
        "command": exe,
        "args": server_args(Agent::ClaudeCode),
    });
    let existing = servers.get(SERVER_NAME);
    let command = existing
        .and_then(|s| s.get("command"))
        .and_then(Value::as_str);
    let ours = command.is_some_and(is_compactctl);
    Ok(match (mode, existing) {
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
        (_, Some(_)) if ours && command.is_some_and(|c| mode.removes(c)) => {
            servers.shift_remove(SERVER_NAME);
            true
        }
        (_, _) => false,
    })
}
