//! `compact_agents::install::project`: a project's install names `compactctl` bare in the files
//! teams commit when the `PATH` given finds this executable there, else writes its path into the
//! project's local settings; moving between the two and uninstalling leave every file as it was.

use crate::support::{fixture, scratch};
use compact_agents::install::project::{
    claude_project_key, find_on_path, plan_install, plan_uninstall, Placement, ProjectPlan,
};
use compact_agents::install::{apply, plan_install as plan_target, InstallOptions, Target};
use compact_agents::AgentsError;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A project (a git repository of its own), a home and a directory for executables.
struct Machine {
    project: PathBuf,
    home: PathBuf,
    bin: PathBuf,
    /// The `compactctl` being installed (outside `bin`).
    exe: PathBuf,
}

impl Machine {
    fn new(test: &str) -> Machine {
        let base = scratch(test);
        let m = Machine {
            project: base.join("project"),
            home: base.join("home"),
            bin: base.join("bin"),
            exe: base.join("opt/compact/bin/compactctl"),
        };
        std::fs::create_dir_all(m.project.join(".git")).unwrap();
        std::fs::create_dir_all(&m.home).unwrap();
        std::fs::create_dir_all(&m.bin).unwrap();
        executable(&m.exe);
        m
    }

    /// A `PATH` holding only `bin`.
    fn path(&self) -> OsString {
        std::env::join_paths([&self.bin]).unwrap()
    }

    /// `bin/compactctl` linked to the executable installed.
    #[cfg(unix)]
    fn link_exe(&self) {
        std::os::unix::fs::symlink(&self.exe, self.bin.join("compactctl")).unwrap();
    }

    fn options(&self) -> InstallOptions {
        InstallOptions {
            exe: self.exe.to_string_lossy().into_owned(),
            hooks: true,
            mcp: true,
            run_hook: false,
            trust: true,
            codex_home_env: None,
        }
    }

    fn install(&self, options: &InstallOptions) -> ProjectPlan {
        let plan =
            plan_install(&self.project, Some(&self.home), options, Some(&self.path())).unwrap();
        apply(&plan.changes).unwrap();
        plan
    }

    fn uninstall(&self, options: &InstallOptions) -> ProjectPlan {
        let plan =
            plan_uninstall(&self.project, Some(&self.home), options, Some(&self.path())).unwrap();
        apply(&plan.changes).unwrap();
        plan
    }

    fn settings(&self) -> PathBuf {
        self.project.join(".claude/settings.json")
    }
    fn local_settings(&self) -> PathBuf {
        self.project.join(".claude/settings.local.json")
    }
    fn mcp(&self) -> PathBuf {
        self.project.join(".mcp.json")
    }
    fn user(&self) -> PathBuf {
        self.home.join(".claude.json")
    }
    fn key(&self) -> String {
        std::fs::canonicalize(&self.project)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }
}

fn executable(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn copy(fixture_name: &str, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(fixture(fixture_name), to).unwrap();
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&text(path)).unwrap()
}

/// Every hook command under `hooks` in a settings document.
fn hook_commands(settings: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for groups in settings["hooks"]
        .as_object()
        .into_iter()
        .flat_map(|h| h.values())
    {
        for group in groups.as_array().into_iter().flatten() {
            for hook in group["hooks"].as_array().into_iter().flatten() {
                out.push(hook["command"].as_str().unwrap().to_owned());
            }
        }
    }
    out
}

#[cfg(unix)]
#[test]
fn on_path_the_shared_files_name_compactctl_bare_and_uninstall_restores_them() {
    let m = Machine::new("project_on_path");
    m.link_exe();
    copy("claude-settings.json", &m.settings());
    copy("mcp.json", &m.mcp());
    copy("claude-user.json", &m.user());
    let plan = m.install(&m.options());
    assert_eq!(plan.placement, Placement::Shared);
    assert_eq!(plan.command, "compactctl");
    assert_eq!(plan.on_path, Some(m.bin.join("compactctl")));
    assert_eq!(
        plan.changes.iter().map(|c| &c.path).collect::<Vec<_>>(),
        [&m.settings(), &m.mcp()],
        "the local files are not touched"
    );

    let s = json_of(&m.settings());
    let ours: Vec<String> = hook_commands(&s)
        .into_iter()
        .filter(|c| c.contains("hook claude-code"))
        .collect();
    assert_eq!(ours.len(), 3, "{s}");
    assert!(
        ours.iter().all(|c| c == "compactctl hook claude-code"),
        "{ours:?}"
    );
    let mcp = json_of(&m.mcp());
    assert_eq!(mcp["mcpServers"]["compact"]["command"], "compactctl");
    assert!(!text(&m.settings()).contains(&*m.exe.to_string_lossy()));
    assert!(!m.local_settings().exists());
    assert_eq!(text(&m.user()), text(&fixture("claude-user.json")));

    // Idempotent.
    let again = plan_install(&m.project, Some(&m.home), &m.options(), Some(&m.path())).unwrap();
    assert!(again.changes.iter().all(|c| !c.changes()), "{again:?}");

    m.uninstall(&m.options());
    assert_eq!(text(&m.settings()), text(&fixture("claude-settings.json")));
    assert_eq!(text(&m.mcp()), text(&fixture("mcp.json")));
    assert_eq!(text(&m.user()), text(&fixture("claude-user.json")));
}

#[test]
fn not_on_path_the_machine_path_goes_to_the_local_files_only() {
    let m = Machine::new("project_not_on_path");
    copy("claude-settings.json", &m.settings());
    copy("mcp.json", &m.mcp());
    copy("claude-user.json", &m.user());
    let plan = m.install(&m.options());
    assert_eq!(plan.placement, Placement::Local);
    assert_eq!(plan.command, m.options().exe);
    assert_eq!(plan.on_path, None);
    assert_eq!(
        plan.changes.iter().map(|c| &c.path).collect::<Vec<_>>(),
        [&m.local_settings(), &m.user()],
        "the shared files are not touched"
    );
    assert_eq!(text(&m.settings()), text(&fixture("claude-settings.json")));
    assert_eq!(text(&m.mcp()), text(&fixture("mcp.json")));

    let local = json_of(&m.local_settings());
    let commands = hook_commands(&local);
    assert_eq!(commands.len(), 3, "{local}");
    let expected = format!("{} hook claude-code", m.exe.display());
    assert!(commands.iter().all(|c| *c == expected), "{commands:?}");
    // Claude Code's local scope: the project's entry of ~/.claude.json, keyed by its real path.
    let user = json_of(&m.user());
    let original = json_of(&fixture("claude-user.json"));
    assert_eq!(
        user["projects"]["/home/dev/ledger"],
        original["projects"]["/home/dev/ledger"]
    );
    assert_eq!(
        user["mcpServers"], original["mcpServers"],
        "the user scope stays"
    );
    assert_eq!(
        user["projects"][m.key()]["mcpServers"]["compact"],
        json!({"type": "stdio", "command": m.exe, "args": ["mcp", "--latest", "claude-code"]})
    );

    let again = plan_install(&m.project, Some(&m.home), &m.options(), Some(&m.path())).unwrap();
    assert!(again.changes.iter().all(|c| !c.changes()), "{again:?}");

    m.uninstall(&m.options());
    assert!(
        !m.local_settings().exists(),
        "created by the install, removed"
    );
    assert_eq!(text(&m.user()), text(&fixture("claude-user.json")));
    assert_eq!(text(&m.settings()), text(&fixture("claude-settings.json")));
    assert_eq!(text(&m.mcp()), text(&fixture("mcp.json")));
}

#[test]
fn another_compactctl_on_path_is_not_named() {
    let m = Machine::new("project_other_on_path");
    executable(&m.bin.join("compactctl"));
    let plan = m.install(&m.options());
    assert_eq!(plan.placement, Placement::Local);
    assert_eq!(plan.on_path, Some(m.bin.join("compactctl")));
    assert!(!m.settings().exists() && !m.mcp().exists());
    // Nor is a file of that name that is not executable, or a directory.
    assert_eq!(find_on_path("compactctl", Some(&OsString::new())), None);
    let dir = scratch("project_not_executable");
    std::fs::write(dir.join("compactctl"), "").unwrap();
    std::fs::create_dir_all(dir.join("sub/compactctl")).unwrap();
    let path = std::env::join_paths([dir.join("sub"), dir.clone()]).unwrap();
    #[cfg(unix)]
    assert_eq!(find_on_path("compactctl", Some(&path)), None);
    // Not on PATH and no home: nowhere to write.
    let err = plan_install(&m.project, None, &m.options(), Some(&m.path())).unwrap_err();
    assert!(matches!(err, AgentsError::NoHome(_)), "{err}");
}

#[cfg(unix)]
#[test]
fn moving_between_the_placements_leaves_one_copy_and_uninstall_restores_everything() {
    let m = Machine::new("project_moves");
    copy("claude-settings.json", &m.settings());
    copy("mcp.json", &m.mcp());
    copy("claude-user.json", &m.user());
    // With the run hook too: it moves with the rest.
    let options = InstallOptions {
        run_hook: true,
        ..m.options()
    };
    assert_eq!(m.install(&options).placement, Placement::Local);

    // compactctl is put on PATH: installing again moves everything to the shared files.
    m.link_exe();
    let plan = m.install(&options);
    assert_eq!(plan.placement, Placement::Shared);
    assert_eq!(
        plan.changes.iter().map(|c| &c.path).collect::<Vec<_>>(),
        [&m.settings(), &m.mcp(), &m.local_settings(), &m.user()]
    );
    assert!(!m.local_settings().exists());
    assert_eq!(text(&m.user()), text(&fixture("claude-user.json")));
    let shared = hook_commands(&json_of(&m.settings()));
    assert_eq!(
        shared
            .iter()
            .filter(|c| *c == "compactctl hook claude-code")
            .count(),
        4,
        "{shared:?}"
    );

    // Taken off PATH again: back to the local files; the shared files hold no path, so they stay.
    std::fs::remove_file(m.bin.join("compactctl")).unwrap();
    let plan = m.install(&options);
    assert_eq!(plan.placement, Placement::Local);
    assert_eq!(plan.changes.len(), 2, "{plan:?}");
    assert!(text(&m.settings()).contains("\"compactctl hook claude-code\""));

    // Uninstalling from either state takes ours out of both.
    m.uninstall(&m.options());
    assert_eq!(text(&m.settings()), text(&fixture("claude-settings.json")));
    assert_eq!(text(&m.mcp()), text(&fixture("mcp.json")));
    assert_eq!(text(&m.user()), text(&fixture("claude-user.json")));
    assert!(!m.local_settings().exists());
}

#[test]
fn a_machine_path_an_earlier_install_committed_is_moved_to_the_local_files() {
    let m = Machine::new("project_legacy");
    copy("claude-settings.json", &m.settings());
    copy("mcp.json", &m.mcp());
    // What installs wrote before: this machine's path in the shared files.
    let legacy = Target::ClaudeCodeProject(m.project.clone());
    apply(&plan_target(&legacy, &m.options()).unwrap()).unwrap();
    assert!(text(&m.mcp()).contains(&*m.exe.to_string_lossy()));

    let plan = m.install(&m.options());
    assert_eq!(plan.placement, Placement::Local);
    assert_eq!(
        plan.changes.iter().map(|c| &c.path).collect::<Vec<_>>(),
        [&m.local_settings(), &m.user(), &m.settings(), &m.mcp()]
    );
    assert_eq!(text(&m.settings()), text(&fixture("claude-settings.json")));
    assert_eq!(text(&m.mcp()), text(&fixture("mcp.json")));
    assert_eq!(hook_commands(&json_of(&m.local_settings())).len(), 3);

    m.uninstall(&m.options());
    assert!(!m.local_settings().exists());
    assert!(
        !m.user().exists(),
        "a ~/.claude.json the install created is removed"
    );
}

#[test]
fn a_project_claude_code_already_knows_keeps_its_entry_exactly() {
    let m = Machine::new("project_known");
    // As Claude Code writes a project it has run in: `mcpServers` always there, other keys around.
    let mut known = json_of(&fixture("claude-user.json"));
    known["projects"][m.key()] = json!({
        "allowedTools": [],
        "mcpServers": {"their-db": {"type": "stdio", "command": "db-mcp", "args": []}},
        "enabledMcpjsonServers": [],
        "hasTrustDialogAccepted": true
    });
    let original = format!("{}\n", serde_json::to_string_pretty(&known).unwrap());
    std::fs::write(m.user(), &original).unwrap();
    m.install(&m.options());
    let user = json_of(&m.user());
    let servers = user["projects"][m.key()]["mcpServers"].as_object().unwrap();
    assert_eq!(
        servers.keys().collect::<Vec<_>>(),
        ["their-db", "compact"],
        "ours added after theirs"
    );
    // The user adds two more servers after ours; uninstalling keeps their order.
    let mut edited = user.clone();
    let list = edited["projects"][m.key()]["mcpServers"]
        .as_object_mut()
        .unwrap();
    list.insert("later-a".into(), json!({"command": "a"}));
    list.insert("later-b".into(), json!({"command": "b"}));
    std::fs::write(
        m.user(),
        serde_json::to_string_pretty(&edited).unwrap() + "\n",
    )
    .unwrap();
    m.uninstall(&m.options());
    let after = json_of(&m.user());
    assert_eq!(
        after["projects"][m.key()]["mcpServers"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["their-db", "later-a", "later-b"]
    );
    // Without those, the file is what it was, byte for byte; an emptied `mcpServers` stays.
    std::fs::write(m.user(), &original).unwrap();
    m.install(&m.options());
    m.uninstall(&m.options());
    assert_eq!(text(&m.user()), original);
    known["projects"][m.key()]["mcpServers"] = json!({});
    let emptied = format!("{}\n", serde_json::to_string_pretty(&known).unwrap());
    std::fs::write(m.user(), &emptied).unwrap();
    m.install(&m.options());
    m.uninstall(&m.options());
    assert_eq!(text(&m.user()), emptied);
}

#[test]
fn the_project_key_is_the_repository_root_as_claude_code_files_it() {
    let base = scratch("project_key");
    let base = std::fs::canonicalize(&base).unwrap();
    // A subdirectory of a repository: the repository's root.
    std::fs::create_dir_all(base.join("main/.git/worktrees/wt")).unwrap();
    std::fs::create_dir_all(base.join("main/src/deep")).unwrap();
    assert_eq!(
        claude_project_key(&base.join("main/src/deep")),
        base.join("main")
    );
    assert_eq!(claude_project_key(&base.join("main")), base.join("main"));
    // A linked worktree (a `.git` file): its main repository's root.
    std::fs::create_dir_all(base.join("wt/sub")).unwrap();
    std::fs::write(
        base.join("wt/.git"),
        format!(
            "gitdir: {}\n",
            base.join("main/.git/worktrees/wt").display()
        ),
    )
    .unwrap();
    std::fs::write(base.join("main/.git/worktrees/wt/commondir"), "../..\n").unwrap();
    assert_eq!(claude_project_key(&base.join("wt/sub")), base.join("main"));
    // A submodule's `.git` file (no `commondir`): the submodule itself.
    std::fs::create_dir_all(base.join("main/.git/modules/lib")).unwrap();
    std::fs::create_dir_all(base.join("main/lib")).unwrap();
    std::fs::write(base.join("main/lib/.git"), "gitdir: ../.git/modules/lib\n").unwrap();
    assert_eq!(
        claude_project_key(&base.join("main/lib")),
        base.join("main/lib")
    );
    // A symbolic link is resolved.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(base.join("main/src"), base.join("link")).unwrap();
        assert_eq!(claude_project_key(&base.join("link")), base.join("main"));
    }
}
