//! A project-scope Claude Code install: what a committed file can hold.
//!
//! A project's `.claude/settings.json` and `.mcp.json` are committed and shared by a team, so they
//! may name `compactctl` only as every machine finds it: the bare name, looked up on `PATH`. That
//! is written when the first `compactctl` on this `PATH` is the executable being installed
//! ([`Placement::Shared`]). Otherwise the command is this machine's path, and it goes where Claude
//! Code keeps a project's settings for one machine ([`Placement::Local`]): the hooks in
//! `.claude/settings.local.json`, the MCP server in the project's entry of `~/.claude.json` (what
//! `claude mcp add --scope local` writes). Installing into one place takes out of the other our
//! entries that name a path (there, or in the shared files as earlier installs wrote them), so the
//! hooks never run twice and no machine path stays in a committed file; uninstalling takes our
//! entries out of both.

use super::claude::{self, Mode};
use super::{is_path, Change, InstallOptions, Target, PATH_COMMAND};
use crate::error::AgentsError;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Where a project's install goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// `.claude/settings.json` and `.mcp.json`, which teams commit, naming `compactctl` bare.
    Shared,
    /// `.claude/settings.local.json` and the project's entry of `~/.claude.json`, which are never
    /// committed, naming this machine's path.
    Local,
}

/// A planned project-scope install or uninstall.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectPlan {
    /// Where the entries go (uninstall: where an install now would put them).
    pub placement: Placement,
    /// The command written: [`PATH_COMMAND`], or the executable's path.
    pub command: String,
    /// The first `compactctl` on `PATH`, when there is one.
    pub on_path: Option<PathBuf>,
    /// The changes: the placement's files (unchanged ones included), then the other placement's
    /// files that change.
    pub changes: Vec<Change>,
}

/// Plans installing into the project `dir`. `home` is the user's home (needed for the local
/// placement), `path` the `PATH` the agent runs commands with.
pub fn plan_install(
    dir: &Path,
    home: Option<&Path>,
    options: &InstallOptions,
    path: Option<&OsStr>,
) -> Result<ProjectPlan, AgentsError> {
    plan(dir, home, options, path, Mode::Install)
}

/// Plans uninstalling from the project `dir`: our entries out of both placements.
pub fn plan_uninstall(
    dir: &Path,
    home: Option<&Path>,
    options: &InstallOptions,
    path: Option<&OsStr>,
) -> Result<ProjectPlan, AgentsError> {
    plan(dir, home, options, path, Mode::Uninstall)
}

fn plan(
    dir: &Path,
    home: Option<&Path>,
    options: &InstallOptions,
    path: Option<&OsStr>,
    mode: Mode,
) -> Result<ProjectPlan, AgentsError> {
    let on_path = find_on_path(PATH_COMMAND, path);
    let shared = same_file_on_path(&options.exe, on_path.as_deref(), path);
    let (placement, command) = if shared {
        (Placement::Shared, PATH_COMMAND.to_owned())
    } else {
        (Placement::Local, options.exe.clone())
    };
    let written = InstallOptions {
        exe: command.clone(),
        ..options.clone()
    };
    let shared_target = Target::ClaudeCodeProject(dir.to_path_buf());
    let local_target = home.map(|home| Target::ClaudeCodeLocal {
        project: dir.to_path_buf(),
        home: home.to_path_buf(),
    });
    let (mut changes, others) = match (placement, &local_target) {
        (Placement::Local, None) => {
            return Err(AgentsError::NoHome(
                "the local settings of a project (`~/.claude.json`) are under it",
            ))
        }
        (Placement::Local, Some(local)) => {
            let other = match mode {
                Mode::Install => Mode::RemovePaths,
                _ => mode,
            };
            (
                claude::plan(local, &written, mode)?,
                claude::plan(&shared_target, &written, other)?,
            )
        }
        (Placement::Shared, local) => {
            let other = match mode {
                Mode::Install => Mode::RemovePaths,
                _ => mode,
            };
            let others = match local {
                Some(local) => claude::plan(local, &written, other)?,
                None => Vec::new(),
            };
            (claude::plan(&shared_target, &written, mode)?, others)
        }
    };
    changes.extend(others.into_iter().filter(Change::changes));
    Ok(ProjectPlan {
        placement,
        command,
        on_path,
        changes,
    })
}

/// The first executable file named `name` in the directories of `path` (a `PATH` value).
pub fn find_on_path(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    let path = path?;
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// True when `exe` (a path, or a bare name looked up on `path`) is the file `on_path`.
fn same_file_on_path(exe: &str, on_path: Option<&Path>, path: Option<&OsStr>) -> bool {
    let Some(on_path) = on_path else {
        return false;
    };
    let exe = if is_path(exe) {
        PathBuf::from(exe)
    } else {
        match find_on_path(exe, path) {
            Some(found) => found,
            None => return false,
        }
    };
    same_file(&exe, on_path)
}

/// True when `a` and `b` are one file: the same path once symbolic links are resolved, or (Unix)
/// the same inode, as hard links are.
fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ca), Ok(cb)) = (std::fs::canonicalize(a), std::fs::canonicalize(b)) else {
        return false;
    };
    if ca == cb {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(ma), Ok(mb)) = (std::fs::metadata(&ca), std::fs::metadata(&cb)) {
            return ma.dev() == mb.dev() && ma.ino() == mb.ino();
        }
    }
    false
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// The key Claude Code files the project `dir` under in `~/.claude.json` (`projects."<key>"`), as
/// Claude Code 2.1 computes it: the root of the git repository holding `dir` (for a linked
/// worktree, its main repository's root), else `dir`, symbolic links resolved.
pub fn claude_project_key(dir: &Path) -> PathBuf {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    for ancestor in dir.ancestors() {
        let git = ancestor.join(".git");
        if git.is_dir() {
            return ancestor.to_path_buf();
        }
        if git.is_file() {
            return worktree_main_root(&git).unwrap_or_else(|| ancestor.to_path_buf());
        }
    }
    dir
}

/// For a `.git` file (`gitdir: PATH`) of a linked worktree: its main repository's root, the
/// parent of the common git directory its `commondir` names. `None` for anything else (a
/// submodule's `.git` file has no `commondir`).
fn worktree_main_root(git_file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_file).ok()?;
    let gitdir = text.trim().strip_prefix("gitdir:")?.trim();
    let gitdir = git_file.parent()?.join(gitdir);
    let common = std::fs::read_to_string(gitdir.join("commondir")).ok()?;
    let common = std::fs::canonicalize(gitdir.join(common.trim())).ok()?;
    (common.file_name()? == ".git").then(|| common.parent().map(Path::to_path_buf))?
}
