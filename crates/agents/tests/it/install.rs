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
        trust: true,
        codex_home_env: None,
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
    let target = Target::Codex(home.join(".codex"));
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
    let target = Target::Codex(home.join(".codex"));
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
    let err = plan_install(&Target::Codex(home.join(".codex")), &options()).unwrap_err();
    assert!(err.to_string().contains("invalid TOML"), "{err}");
    assert!(err.to_string().contains("line 2"), "{err}");
    std::fs::write(&config, "[mcp_servers.compact]\ncommand = \"python\"\n").unwrap();
    let err = plan_install(&Target::Codex(home.join(".codex")), &options()).unwrap_err();
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

/// Codex's trust key and hash of our handler at `group` of `event` in `codex_home`'s config.
fn codex_trust_of(
    codex_home: &Path,
    event: &str,
    group: usize,
    matcher: Option<&str>,
    exe: &str,
) -> (String, String) {
    use compact_agents::install::codex_trust::{hash, key, source_path, Handler};
    let command = format!("{exe} hook codex");
    let handler = Handler {
        event,
        matcher,
        command: &command,
        timeout: Some(30),
        is_async: false,
        status_message: None,
    };
    (
        key(&source_path(codex_home), event, group, 0),
        hash(&handler),
    )
}

fn trusted_hash(doc: &toml_edit::DocumentMut, key: &str) -> Option<String> {
    doc.get("hooks")?
        .get("state")?
        .get(key)?
        .get("trusted_hash")?
        .as_str()
        .map(str::to_owned)
}

fn toml(path: &Path) -> toml_edit::DocumentMut {
    std::fs::read_to_string(path).unwrap().parse().unwrap()
}

#[test]
fn codex_hooks_are_trusted_where_codex_home_says_as_codex_records_it() {
    // A Codex home that is not `~/.codex` (CODEX_HOME), reached through a symlink: Codex names
    // the file by the resolved path in its keys.
    let base = scratch("codex_trust");
    let real = base.join("real-codex-home");
    std::fs::create_dir_all(&real).unwrap();
    let codex_home = base.join("codex-home");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&real, &codex_home).unwrap();
    #[cfg(not(unix))]
    let codex_home = real.clone();
    copy("codex-config.toml", &codex_home.join("config.toml"));
    let target = Target::Codex(codex_home.clone());
    install(&target);
    let config = codex_home.join("config.toml");
    let doc = toml(&config);
    // The fixture's own SessionStart group comes first: ours is group 1 there, group 0 of PreCompact.
    let (start_key, start_hash) =
        codex_trust_of(&codex_home, "SessionStart", 1, Some("compact"), EXE);
    let (pre_key, pre_hash) = codex_trust_of(&codex_home, "PreCompact", 0, None, EXE);
    let canonical = std::fs::canonicalize(&real).unwrap().join("config.toml");
    assert_eq!(
        start_key,
        format!("{}:session_start:1:0", canonical.display())
    );
    assert_eq!(trusted_hash(&doc, &start_key), Some(start_hash));
    assert_eq!(trusted_hash(&doc, &pre_key), Some(pre_hash));
    assert_eq!(doc["hooks"]["state"].as_table().unwrap().len(), 2);
    assert!(!base.join(".codex").exists());

    // Idempotent: nothing changes the second time.
    assert!(plan_install(&target, &options())
        .unwrap()
        .iter()
        .all(|c| !c.changes()));

    // A moved executable: the command and its trust are updated in place, nothing added.
    let moved = InstallOptions {
        exe: "/usr/local/bin/compactctl".to_owned(),
        ..options()
    };
    apply(&plan_install(&target, &moved).unwrap()).unwrap();
    let doc = toml(&config);
    let (key, hash) = codex_trust_of(
        &codex_home,
        "SessionStart",
        1,
        Some("compact"),
        "/usr/local/bin/compactctl",
    );
    assert_eq!(key, start_key);
    assert_eq!(trusted_hash(&doc, &key), Some(hash));
    assert_eq!(doc["hooks"]["state"].as_table().unwrap().len(), 2);
    assert_eq!(
        doc["hooks"]["SessionStart"]
            .as_array_of_tables()
            .unwrap()
            .len(),
        2
    );

    // Uninstall removes the hooks and their trust: the file is the fixture again.
    apply(&plan_uninstall(&target, &moved).unwrap()).unwrap();
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        std::fs::read_to_string(fixture("codex-config.toml")).unwrap()
    );
}

#[test]
fn codex_uninstall_moves_the_trust_of_the_hooks_after_ours() {
    let codex_home = scratch("codex_trust_moves").join("codex");
    let config = codex_home.join("config.toml");
    copy("codex-config.toml", &config);
    let target = Target::Codex(codex_home.clone());
    install(&target);
    // The user then adds and trusts a hook after ours, and trusts their own first one.
    let source = compact_agents::install::codex_trust::source_path(&codex_home);
    let key = |g: usize| format!("{}:session_start:{g}:0", source.display());
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[[hooks.SessionStart]]\nmatcher = \"resume\"\n\n[[hooks.SessionStart.hooks]]\n\
         type = \"command\"\ncommand = \"echo resumed\"\n\n\
         [hooks.state.\"{}\"]\ntrusted_hash = \"sha256:theirs-after\"\n\n\
         [hooks.state.\"{}\"]\ntrusted_hash = \"sha256:theirs-first\"\nenabled = true\n",
        key(2),
        key(0)
    ));
    std::fs::write(&config, &text).unwrap();
    uninstall(&target);
    let doc = toml(&config);
    let starts = doc["hooks"]["SessionStart"].as_array_of_tables().unwrap();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts.get(1).unwrap()["matcher"].as_str(), Some("resume"));
    let state = doc["hooks"]["state"].as_table().unwrap();
    assert_eq!(state.len(), 2, "{}", doc);
    assert_eq!(
        trusted_hash(&doc, &key(1)).as_deref(),
        Some("sha256:theirs-after")
    );
    assert_eq!(
        trusted_hash(&doc, &key(0)).as_deref(),
        Some("sha256:theirs-first")
    );
    assert_eq!(
        doc["hooks"]["state"][&key(0)]["enabled"].as_bool(),
        Some(true)
    );
    assert!(doc.get("mcp_servers").unwrap().get("compact").is_none());
    assert!(doc["hooks"].get("PreCompact").is_none());
}

#[test]
fn codex_hooks_can_be_left_untrusted_and_uninstall_still_cleans_up() {
    let codex_home = scratch("codex_untrusted").join("codex");
    let target = Target::Codex(codex_home.clone());
    let untrusted = InstallOptions {
        trust: false,
        ..options()
    };
    apply(&plan_install(&target, &untrusted).unwrap()).unwrap();
    let doc = toml(&codex_home.join("config.toml"));
    assert!(doc["hooks"].get("state").is_none(), "{doc}");
    assert!(doc["hooks"]["PreCompact"].is_array_of_tables());
    // Trusting later adds only the trust.
    let planned = plan_install(&target, &options()).unwrap();
    let diff = planned[0].diff();
    assert!(diff.contains("+trusted_hash = \"sha256:"), "{diff}");
    assert!(!diff.contains("+command"), "{diff}");
    // A dry run writes nothing.
    assert!(trusted_hash(
        &toml(&codex_home.join("config.toml")),
        &codex_trust_of(&codex_home, "PreCompact", 0, None, EXE).0
    )
    .is_none());
    apply(&planned).unwrap();
    uninstall(&target);
    assert!(!codex_home.join("config.toml").exists());
}

#[test]
fn codex_mcp_server_is_told_a_codex_home_that_is_not_the_default() {
    use compact_agents::install::codex::{home_dir, hooks_enabled};
    use std::ffi::OsStr;
    assert_eq!(
        home_dir(Some(OsStr::new("/srv/codex")), Some(Path::new("/home/u"))),
        Some("/srv/codex".into())
    );
    assert_eq!(
        home_dir(Some(OsStr::new("")), Some(Path::new("/home/u"))),
        Some("/home/u/.codex".into())
    );
    assert_eq!(home_dir(None, None), None);

    let codex_home = scratch("codex_home_env").join("codex");
    let dir = codex_home.to_string_lossy().into_owned();
    let target = Target::Codex(codex_home.clone());
    let pinned = InstallOptions {
        codex_home_env: Some(dir.clone()),
        hooks: false,
        ..options()
    };
    apply(&plan_install(&target, &pinned).unwrap()).unwrap();
    let doc = toml(&codex_home.join("config.toml"));
    assert_eq!(
        doc["mcp_servers"]["compact"]["env"]["CODEX_HOME"].as_str(),
        Some(dir.as_str())
    );
    assert!(plan_install(&target, &pinned)
        .unwrap()
        .iter()
        .all(|c| !c.changes()));
    // The default home again: the variable goes.
    let plain = InstallOptions {
        hooks: false,
        ..options()
    };
    apply(&plan_install(&target, &plain).unwrap()).unwrap();
    let doc = toml(&codex_home.join("config.toml"));
    assert!(doc["mcp_servers"]["compact"].get("env").is_none(), "{doc}");

    // Codex 0.169 runs hooks unless `[features] hooks` (or, without it, `codex_hooks`) is false.
    let config = codex_home.join("config.toml");
    for (features, on) in [
        ("", true),
        ("[features]\nhooks = false\n", false),
        ("[features]\ncodex_hooks = false\n", false),
        ("[features]\nhooks = true\ncodex_hooks = false\n", true),
        ("[features]\ncodex_hooks = true\n", true),
    ] {
        std::fs::write(&config, features).unwrap();
        assert_eq!(hooks_enabled(&codex_home).unwrap(), on, "{features}");
    }
    std::fs::remove_file(&config).unwrap();
    assert!(hooks_enabled(&codex_home).unwrap());
}
