//! `compact_agents::install`: merged into realistic settings (everything else survives),
//! idempotent, a diff for dry runs, removed exactly, never overwriting what is not ours.

use crate::support::{fixture, scratch};
use compact_agents::install::{apply, plan_install, plan_uninstall, InstallOptions, Target};
use compact_agents::AgentsError;
use serde_json::Value;
use std::path::Path;

const EXE: &str = "/opt/compact/bin/compactctl";

fn options() -> InstallOptions {
    InstallOptions {
        exe: EXE.to_owned(),
        hooks: true,
        mcp: true,
        run_hook: false,
    }
}

fn copy(fixture_name: &str, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(fixture(fixture_name), to).unwrap();
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn install(target: &Target) {
    apply(&plan_install(target, &options()).unwrap()).unwrap();
}

fn uninstall(target: &Target) {
    apply(&plan_uninstall(target, &options()).unwrap()).unwrap();
}

#[test]
fn claude_code_project_install_merges_and_uninstall_restores_the_files() {
    let dir = scratch("claude_project");
    let settings = dir.join(".claude/settings.json");
    let mcp = dir.join(".mcp.json");
    copy("claude-settings.json", &settings);
    copy("mcp.json", &mcp);
    let target = Target::ClaudeCodeProject(dir.clone());
    install(&target);

    let s = json(&settings);
    let original = json(&fixture("claude-settings.json"));
    for key in [
        "$schema",
        "permissions",
        "env",
        "statusLine",
        "someFutureKey",
    ] {
        assert_eq!(s[key], original[key], "{key}");
    }
    assert_eq!(s["hooks"]["PreToolUse"], original["hooks"]["PreToolUse"]);
    let starts = s["hooks"]["SessionStart"].as_array().unwrap();
    assert_eq!(
        starts[0], original["hooks"]["SessionStart"][0],
        "the user's group stays first"
    );
    assert_eq!(starts[1]["matcher"], "compact");
    assert_eq!(
        starts[1]["hooks"][0]["command"],
        format!("{EXE} hook claude-code")
    );
    assert_eq!(
        s["hooks"]["PreCompact"][0]["hooks"][0]["command"],
        format!("{EXE} hook claude-code")
    );
    let m = json(&mcp);
    assert_eq!(
        m["mcpServers"]["docs"],
        json(&fixture("mcp.json"))["mcpServers"]["docs"]
    );
    assert_eq!(m["mcpServers"]["compact"]["command"], EXE);
    assert_eq!(
        m["mcpServers"]["compact"]["args"],
        serde_json::json!(["mcp", "--latest", "claude-code"])
    );

    // Idempotent: a second install changes nothing.
    let again = plan_install(&target, &options()).unwrap();
    assert!(again.iter().all(|c| !c.changes()), "{again:?}");

    uninstall(&target);
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        std::fs::read_to_string(fixture("claude-settings.json")).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(&mcp).unwrap(),
        std::fs::read_to_string(fixture("mcp.json")).unwrap()
    );
}

#[test]
fn claude_code_user_install_uses_the_home_files() {
    let home = scratch("claude_user");
    let user = home.join(".claude.json");
    copy("claude-user.json", &user);
    let target = Target::ClaudeCodeUser(home.clone());
    install(&target);
    let u = json(&user);
    assert_eq!(u["numStartups"], 41);
    assert_eq!(
        u["projects"],
        json(&fixture("claude-user.json"))["projects"]
    );
    assert_eq!(u["mcpServers"]["compact"]["command"], EXE);
    assert!(u["mcpServers"]["browser"].is_object());
    assert!(json(&home.join(".claude/settings.json"))["hooks"]["SessionStart"].is_array());
    uninstall(&target);
    assert_eq!(
        std::fs::read_to_string(&user).unwrap(),
        std::fs::read_to_string(fixture("claude-user.json")).unwrap()
    );
    assert!(
        !home.join(".claude/settings.json").exists(),
        "a settings file holding only what install added is removed"
    );
}

#[test]
fn a_dry_run_shows_the_diff_and_writes_nothing() {
    let dir = scratch("dry_run");
    let settings = dir.join(".claude/settings.json");
    copy("claude-settings.json", &settings);
    let planned = plan_install(&Target::ClaudeCodeProject(dir.clone()), &options()).unwrap();
    let diff: String = planned.iter().map(|c| c.diff()).collect();
    assert!(
        diff.contains(&format!(
            "+            \"command\": \"{EXE} hook claude-code\","
        )),
        "{diff}"
    );
    assert!(diff.contains("(new file)"), "the .mcp.json is new: {diff}");
    assert!(!diff.contains("-  \"permissions\""), "{diff}");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        std::fs::read_to_string(fixture("claude-settings.json")).unwrap()
    );
    assert!(!dir.join(".mcp.json").exists());
}

#[test]
fn an_entry_that_is_not_ours_is_never_overwritten() {
    let dir = scratch("foreign");
    let mcp = dir.join(".mcp.json");
    let foreign = "{\n  \"mcpServers\": {\n    \"compact\": {\n      \"command\": \"node\",\n      \"args\": [\"other.js\"]\n    }\n  }\n}\n";
    std::fs::write(&mcp, foreign).unwrap();
    let err = plan_install(&Target::ClaudeCodeProject(dir.clone()), &options()).unwrap_err();
    assert!(err.to_string().contains("mcpServers.compact"), "{err}");
    assert_eq!(std::fs::read_to_string(&mcp).unwrap(), foreign);
    // And uninstall leaves it alone.
    let planned = plan_uninstall(&Target::ClaudeCodeProject(dir), &options()).unwrap();
    assert!(planned.iter().all(|c| !c.changes()));
}

#[test]
fn an_updated_executable_path_replaces_our_own_entries_only() {
    let dir = scratch("moved");
    let target = Target::ClaudeCodeProject(dir.clone());
    install(&target);
    let moved = InstallOptions {
        exe: "/usr/local/bin/compactctl".to_owned(),
        ..options()
    };
    apply(&plan_install(&target, &moved).unwrap()).unwrap();
    let s = json(&dir.join(".claude/settings.json"));
    assert_eq!(s["hooks"]["SessionStart"].as_array().unwrap().len(), 1);
    assert_eq!(
        s["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        "/usr/local/bin/compactctl hook claude-code"
    );
    apply(&plan_uninstall(&target, &moved).unwrap()).unwrap();
    assert!(!dir.join(".claude/settings.json").exists());
    assert!(!dir.join(".mcp.json").exists());
}

#[test]
fn malformed_settings_are_refused_naming_the_place() {
    let dir = scratch("malformed");
    let settings = dir.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        "{\n  \"hooks\": {\n    \"SessionStart\": [,]\n  }\n}\n",
    )
    .unwrap();
    let err = plan_install(&Target::ClaudeCodeProject(dir.clone()), &options()).unwrap_err();
    assert!(matches!(err, AgentsError::Settings { .. }));
    assert!(err.to_string().contains("line 3"), "{err}");
    std::fs::write(&settings, "{\"hooks\": [1, 2]}").unwrap();
    let err = plan_install(&Target::ClaudeCodeProject(dir.clone()), &options()).unwrap_err();
    assert!(
        err.to_string().contains("`hooks` is not an object"),
        "{err}"
    );
    std::fs::write(&settings, "[]").unwrap();
    let err = plan_install(&Target::ClaudeCodeProject(dir), &options()).unwrap_err();
    assert!(err.to_string().contains("not a JSON object"), "{err}");
}

#[test]
fn codex_config_keeps_comments_and_is_restored_exactly() {
    let home = scratch("codex");
    let config = home.join(".codex/config.toml");
    copy("codex-config.toml", &config);
    let target = Target::Codex(home.clone());
    install(&target);
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.starts_with("# Codex configuration (hand-edited)\n"),
        "{text}"
    );
    assert!(text.contains("# Search over the team's docs."));
    assert!(text.contains("[profiles.fast]"));
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    assert_eq!(doc["mcp_servers"]["compact"]["command"].as_str(), Some(EXE));
    assert_eq!(doc["mcp_servers"]["docs"]["command"].as_str(), Some("npx"));
    let starts = doc["hooks"]["SessionStart"].as_array_of_tables().unwrap();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts.get(0).unwrap()["matcher"].as_str(), Some("startup"));
    assert_eq!(starts.get(1).unwrap()["matcher"].as_str(), Some("compact"));
    let ours = starts.get(1).unwrap()["hooks"]
        .as_array_of_tables()
        .unwrap();
    assert_eq!(
        ours.get(0).unwrap()["command"].as_str(),
        Some(format!("{EXE} hook codex").as_str())
    );
    assert!(doc["hooks"]["PreCompact"].is_array_of_tables());

    let again = plan_install(&target, &options()).unwrap();
    assert!(again.iter().all(|c| !c.changes()));

    uninstall(&target);
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        std::fs::read_to_string(fixture("codex-config.toml")).unwrap()
    );
}

#[test]
fn codex_install_into_a_new_home_creates_and_removes_the_config() {
    let home = scratch("codex_new");
    let target = Target::Codex(home.clone());
    let only_mcp = InstallOptions {
        hooks: false,
        ..options()
    };
    apply(&plan_install(&target, &only_mcp).unwrap()).unwrap();
    let text = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(text.contains("[mcp_servers.compact]"), "{text}");
    assert!(!text.contains("hooks"), "{text}");
    uninstall(&target);
    assert!(!home.join(".codex/config.toml").exists());
}

#[test]
fn codex_refuses_invalid_toml_and_foreign_servers() {
    let home = scratch("codex_bad");
    let config = home.join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "model = \"x\"\n[mcp_servers\n").unwrap();
    let err = plan_install(&Target::Codex(home.clone()), &options()).unwrap_err();
    assert!(err.to_string().contains("invalid TOML"), "{err}");
    assert!(err.to_string().contains("line 2"), "{err}");
    std::fs::write(&config, "[mcp_servers.compact]\ncommand = \"python\"\n").unwrap();
    let err = plan_install(&Target::Codex(home), &options()).unwrap_err();
    assert!(err.to_string().contains("not overwritten"), "{err}");
}

#[test]
fn the_run_hook_is_off_by_default_and_uninstalls_alone() {
    let dir = scratch("claude_run_hook");
    let settings = dir.join(".claude/settings.json");
    copy("claude-settings.json", &settings);
    let target = Target::ClaudeCodeProject(dir.clone());
    install(&target);
    let plain = std::fs::read_to_string(&settings).unwrap();
    let original = json(&fixture("claude-settings.json"));
    assert_eq!(
        json(&settings)["hooks"]["PreToolUse"],
        original["hooks"]["PreToolUse"],
        "off by default"
    );
    let run = InstallOptions {
        run_hook: true,
        ..options()
    };
    apply(&plan_install(&target, &run).unwrap()).unwrap();
    let s = json(&settings);
    let groups = s["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(groups[0], original["hooks"]["PreToolUse"][0]);
    let ours = groups.last().unwrap();
    assert_eq!(ours["matcher"], "Bash");
    assert_eq!(
        ours["hooks"][0]["command"],
        format!("{EXE} hook claude-code")
    );
    assert!(
        plan_install(&target, &run)
            .unwrap()
            .iter()
            .all(|c| !c.changes()),
        "installing twice changes nothing"
    );
    apply(&plan_uninstall(&target, &run).unwrap()).unwrap();
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        plain,
        "uninstalling the run hook removes exactly it"
    );
}
