//! The `PreToolUse` hook on Claude Code's `Bash` tool: the command rewritten to run under
//! `compactctl run`, so what the agent reads of its output is cut to a token budget and the rest is
//! recallable by id.
//!
//! Claude Code applies a hook's `updatedInput` only together with `permissionDecision: "allow"`,
//! and it checks its permission rules against the rewritten command. A rewrite must therefore never
//! let a command through that the user would have been asked about: the hook wraps a command only
//! when Claude Code would have run it without asking anyway, that is when the session runs with
//! `bypassPermissions`, or when the command is one simple command (no `;`, `&&`, `|`, redirection
//! or substitution) that a `Bash(...)` allow rule of the user's settings covers and no deny or ask
//! rule names. Every other command passes through unchanged (the hook prints nothing).
//!
//! Never wrapped either: commands already under `compactctl run`, recalls of kept outputs
//! (`compactctl recall`: the whole original is what is asked for), background commands, interactive
//! programs (editors, pagers, REPLs, `git rebase -i`), commands that change the shell's own state
//! (`cd`, `export`, `source`, ...: they must run in Claude Code's shell, not in a child), commands
//! whose output is small by nature (`mkdir`, `mv`, `pwd`, ... or a pipeline ending in `head`,
//! `tail`, `wc`), and commands containing a pattern the user excludes. Budgets are per command
//! family: the longest configured prefix of the command wins, else the default.

use crate::error::AgentsError;
use compact_core::memory::{gate, GateDecision, Rewrite};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Programs that need a terminal or wait for the user.
const INTERACTIVE: &[&str] = &[
    "vim",
    "vi",
    "nvim",
    "nano",
    "emacs",
    "less",
    "more",
    "most",
    "man",
    "top",
    "htop",
    "btop",
    "watch",
    "tmux",
    "screen",
    "ssh",
    "telnet",
    "ftp",
    "sftp",
    "python",
    "python3",
    "ipython",
    "node",
    "irb",
    "psql",
    "mysql",
    "sqlite3",
    "redis-cli",
    "mongo",
    "mongosh",
    "ghci",
    "gdb",
    "lldb",
    "fzf",
    "tig",
    "htop",
    "nnn",
    "ranger",
];
/// Interpreters that are interactive only without arguments.
const REPL_WITH_ARGS_OK: &[&str] = &[
    "python",
    "python3",
    "node",
    "irb",
    "psql",
    "mysql",
    "sqlite3",
    "redis-cli",
    "ssh",
];
/// Command fragments that wait for an editor or a human.
const INTERACTIVE_FRAGMENTS: &[&str] = &[
    "git rebase -i",
    "git rebase --interactive",
    "git add -p",
    "git add -i",
    "git add --patch",
    "git commit --amend --no-edit -e",
    "git mergetool",
];
/// Builtins that change the shell itself: they must run in the agent's shell.
const SHELL_STATE: &[&str] = &[
    "cd", "pushd", "popd", "export", "unset", "source", ".", "alias", "unalias", "set", "shopt",
    "eval", "exec", "ulimit", "umask", "declare", "typeset", "local", "readonly", "trap", "exit",
];
/// Programs whose output is small by nature.
const TINY: &[&str] = &[
    "pwd", "echo", "printf", "mkdir", "rm", "rmdir", "mv", "cp", "touch", "chmod", "chown", "ln",
    "which", "whoami", "date", "true", "false", "kill", "sleep", "test", "[", "basename",
    "dirname", "realpath", "wc", "head", "tail", "type", "command",
];
/// Pipeline ends that bound the output already.
const BOUNDED_TAIL: &[&str] = &["head", "tail", "wc"];
/// Characters that make a command line more than one simple command.
const COMPOUND: &[&str] = &[";", "&", "|", ">", "<", "`", "$(", "\n"];

/// How the hook rewrites.
#[derive(Debug, Clone)]
pub struct RunHookOptions {
    /// The program that runs the command (`compactctl`, or the hook's own path).
    pub program: String,
    /// Budget of commands no family names, in tokens.
    pub budget: usize,
    /// Budgets per command family: (command prefix, tokens); the longest matching prefix wins.
    pub families: Vec<(String, usize)>,
    /// Commands containing any of these are never wrapped.
    pub exclude: Vec<String>,
    /// The user's home (for `~/.claude/settings.json`).
    pub home: Option<PathBuf>,
    /// The pre-tool memory gate (seed 004 §10; `None`: off): the absolute paths trusted facts
    /// remember. A known-folder probe is rewritten to the remembered path first (see
    /// [`compact_core::memory::gate()`]), then wrapped as any command; a rewrite goes out only when
    /// Claude Code would have run the rewritten command without asking.
    pub gate: Option<compact_core::memory::KnownPaths>,
}

/// The default families: test runners print their failures at length.
pub fn default_families() -> Vec<(String, usize)> {
    [
        "cargo test",
        "cargo nextest",
        "pytest",
        "python -m pytest",
        "go test",
        "npm test",
        "npx jest",
        "make test",
    ]
    .iter()
    .map(|p| ((*p).to_owned(), 2_000))
    .collect()
}

/// The `PreToolUse` input fields the rewrite reads.
struct PreToolUse<'a> {
    session_id: Option<&'a str>,
    cwd: Option<&'a str>,
    permission_mode: Option<&'a str>,
    tool_name: &'a str,
    tool_input: &'a Map<String, Value>,
}

fn parse(input: &Value) -> Result<PreToolUse<'_>, AgentsError> {
    let bad = |m: &str| AgentsError::HookInput(m.to_owned());
    let tool_name = input
        .get("tool_name")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("PreToolUse: no `tool_name`"))?;
    let tool_input = input
        .get("tool_input")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("PreToolUse: `tool_input` is not an object"))?;
    Ok(PreToolUse {
        session_id: input.get("session_id").and_then(Value::as_str),
        cwd: input.get("cwd").and_then(Value::as_str),
        permission_mode: input.get("permission_mode").and_then(Value::as_str),
        tool_name,
        tool_input,
    })
}

/// The hook's decision for a `PreToolUse` input (the JSON the agent wrote): the documented output
/// wrapping the command, or the command left as it is and why.
pub fn pre_tool_use(input: &Value, options: &RunHookOptions) -> Result<Decision, AgentsError> {
    pre_tool_use_gated(input, options).map(|(d, _)| d)
}

/// [`pre_tool_use`], and the memory gate's rewrite when it made one (for the caller to log as a
/// `compact.memory_gate` event).
pub fn pre_tool_use_gated(
    input: &Value,
    options: &RunHookOptions,
) -> Result<(Decision, Option<Rewrite>), AgentsError> {
    let event = parse(input)?;
    let Some(original) = event
        .tool_input
        .get("command")
        .and_then(Value::as_str)
        .filter(|_| event.tool_name == "Bash")
    else {
        return Ok((wrap(&event, options, None)?, None));
    };
    let gated = match options.gate.as_ref().map(|k| gate(original, k)) {
        Some(GateDecision::Rewrite(r)) => Some(r),
        _ => None,
    };
    let Some(rewrite) = gated else {
        return Ok((wrap(&event, options, None)?, None));
    };
    match wrap(&event, options, Some(&rewrite.rewritten))? {
        Decision::Rewrite(json) => Ok((Decision::Rewrite(json), Some(rewrite))),
        Decision::Keep(_) => {
            // Not wrapped: the rewrite alone, when it needs no permission the user did not give.
            if event.permission_mode != Some("bypassPermissions") {
                let rules = Rules::read(options.home.as_deref(), event.cwd.map(Path::new))?;
                if !rules.allows(&rewrite.rewritten) {
                    return Ok((
                        Decision::Keep(
                            "the remembered path's command is not allowed without asking",
                        ),
                        None,
                    ));
                }
            }
            let mut updated = event.tool_input.clone();
            updated.insert("command".to_owned(), json!(rewrite.rewritten));
            let json = json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "permissionDecisionReason": format!(
                        "Compact: `{}` is remembered at {}", rewrite.target, rewrite.path
                    ),
                    "updatedInput": updated,
                }
            });
            Ok((Decision::Rewrite(json.to_string()), Some(rewrite)))
        }
    }
}

/// The wrapping decision for the event's command, or `command` in its place.
fn wrap(
    event: &PreToolUse<'_>,
    options: &RunHookOptions,
    command: Option<&str>,
) -> Result<Decision, AgentsError> {
    if event.tool_name != "Bash" {
        return Ok(Decision::Keep("not the Bash tool"));
    }
    let command = match command {
        Some(c) => c,
        None => event
            .tool_input
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                AgentsError::HookInput(
                    "PreToolUse: `tool_input.command` is not a string".to_owned(),
                )
            })?,
    };
    if event
        .tool_input
        .get("run_in_background")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return Ok(Decision::Keep("a background command"));
    }
    if let Some(why) = never_wrapped(command, &options.exclude) {
        return Ok(Decision::Keep(why));
    }
    if event.permission_mode != Some("bypassPermissions") {
        let cwd = event.cwd.map(Path::new);
        let rules = Rules::read(options.home.as_deref(), cwd)?;
        if !rules.allows(command) {
            return Ok(Decision::Keep(
                "not allowed without asking: a rewrite must not widen the permissions",
            ));
        }
    }
    let budget = budget_for(command, options);
    let mut wrapped = format!("{} run --budget {budget}", shell_quote(&options.program));
    if let Some(session) = event.session_id.filter(|s| plain_id(s)) {
        wrapped.push_str(&format!(" --session {session}"));
    }
    wrapped.push_str(&format!(" -- bash -c {}", shell_quote(command)));
    let mut updated = event.tool_input.clone();
    updated.insert("command".to_owned(), json!(wrapped));
    Ok(Decision::Rewrite(
        json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "permissionDecisionReason": "Compact: output filtered by compactctl run (full output recallable)",
                "updatedInput": updated,
            }
        })
        .to_string(),
    ))
}

/// What the hook decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Print this JSON: the command wrapped.
    Rewrite(String),
    /// Leave the command alone, and why.
    Keep(&'static str),
}

/// Why `command` is never wrapped, if it is not.
pub fn never_wrapped(command: &str, exclude: &[String]) -> Option<&'static str> {
    let trimmed = command.trim();
    if trimmed.is_empty() {
        return Some("an empty command");
    }
    if trimmed.contains("compactctl run") {
        return Some("already wrapped");
    }
    // A recalled original is asked for whole: cutting it again would hand back another marker.
    if trimmed.contains("compactctl recall ") {
        return Some("a recall of a kept output");
    }
    if exclude
        .iter()
        .any(|p| !p.is_empty() && trimmed.contains(p.as_str()))
    {
        return Some("excluded by the user");
    }
    if INTERACTIVE_FRAGMENTS.iter().any(|f| trimmed.contains(f)) {
        return Some("interactive");
    }
    let segments = segments(trimmed);
    for words in &segments {
        let Some(first) = words.first() else { continue };
        if SHELL_STATE.contains(first) {
            return Some("changes the shell's state");
        }
        if INTERACTIVE.contains(first) && !(REPL_WITH_ARGS_OK.contains(first) && words.len() > 1) {
            return Some("interactive");
        }
    }
    if segments
        .iter()
        .all(|w| w.first().is_none_or(|f| TINY.contains(f)))
    {
        return Some("small output by nature");
    }
    let last_pipe = trimmed
        .rsplit('|')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .next();
    if trimmed.contains('|') && last_pipe.is_some_and(|w| BOUNDED_TAIL.contains(&w)) {
        return Some("its output is bounded already");
    }
    if trimmed.contains("sed -n") && trimmed.contains('|') {
        return Some("its output is bounded already");
    }
    None
}

/// The words of each simple command in a command line (split on `;`, `&&`, `||`, `|`, newlines),
/// leading variable assignments skipped.
fn segments(command: &str) -> Vec<Vec<&str>> {
    command
        .split([';', '|', '&', '\n', '(', ')'])
        .map(|s| {
            s.split_whitespace()
                .skip_while(|w| w.contains('=') && !w.starts_with('='))
                .collect::<Vec<_>>()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

fn budget_for(command: &str, options: &RunHookOptions) -> usize {
    let command = command.trim_start();
    options
        .families
        .iter()
        .filter(|(prefix, _)| command.starts_with(prefix.as_str()))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(options.budget, |(_, n)| *n)
}

fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// `s` quoted for a POSIX shell (single quotes; a quote inside becomes `'\''`).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The `Bash` permission rules of the user's Claude Code settings.
#[derive(Debug, Default)]
struct Rules {
    allow: Vec<Rule>,
    refuse: Vec<Rule>,
}

#[derive(Debug)]
enum Rule {
    All,
    Prefix(String),
    Exact(String),
}

impl Rule {
    fn parse(text: &str) -> Option<Rule> {
        let text = text.trim();
        if text == "Bash" || text == "Bash(*)" {
            return Some(Rule::All);
        }
        let inner = text.strip_prefix("Bash(")?.strip_suffix(')')?;
        if let Some(p) = inner
            .strip_suffix(":*")
            .or_else(|| inner.strip_suffix(" *"))
        {
            return Some(Rule::Prefix(p.to_owned()));
        }
        if let Some(p) = inner.strip_suffix('*') {
            return Some(Rule::Prefix(p.to_owned()));
        }
        Some(Rule::Exact(inner.to_owned()))
    }

    fn matches(&self, command: &str) -> bool {
        match self {
            Rule::All => true,
            Rule::Prefix(p) => {
                command == p
                    || command.starts_with(&format!("{p} "))
                    || (p.ends_with(' ') && command.starts_with(p.as_str()))
            }
            Rule::Exact(e) => command == e,
        }
    }
}

impl Rules {
    /// Rules of `~/.claude/settings.json`, `<cwd>/.claude/settings.json` and
    /// `<cwd>/.claude/settings.local.json` (files that do not exist add none).
    fn read(home: Option<&Path>, cwd: Option<&Path>) -> Result<Rules, AgentsError> {
        let mut files = Vec::new();
        if let Some(home) = home {
            files.push(home.join(".claude/settings.json"));
        }
        if let Some(cwd) = cwd {
            files.push(cwd.join(".claude/settings.json"));
            files.push(cwd.join(".claude/settings.local.json"));
        }
        let mut rules = Rules::default();
        for file in files {
            let bytes = match std::fs::read(&file) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(AgentsError::io(&file, e)),
            };
            let value: Value =
                serde_json::from_slice(&bytes).map_err(|e| AgentsError::Settings {
                    path: file.clone(),
                    reason: e.to_string(),
                })?;
            let list = |key: &str| -> Vec<Rule> {
                value
                    .pointer(&format!("/permissions/{key}"))
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .filter_map(Rule::parse)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            rules.allow.extend(list("allow"));
            rules.refuse.extend(list("deny"));
            rules.refuse.extend(list("ask"));
        }
        Ok(rules)
    }

    /// True when `command` is one simple command an allow rule covers and no deny or ask rule names.
    fn allows(&self, command: &str) -> bool {
        let command = command.trim();
        if COMPOUND.iter().any(|c| command.contains(c)) {
            return false;
        }
        let refused = self.refuse.iter().any(|r| match r {
            // Any mention of the refused prefix anywhere refuses: stricter than Claude Code.
            Rule::Prefix(p) | Rule::Exact(p) => command.contains(p.as_str()),
            Rule::All => true,
        });
        !refused && self.allow.iter().any(|r| r.matches(command))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn never_wrapped_by_nature() {
        let none: Vec<String> = Vec::new();
        assert_eq!(
            never_wrapped("cd src && ls", &none),
            Some("changes the shell's state")
        );
        assert_eq!(never_wrapped("vim a.rs", &none), Some("interactive"));
        assert_eq!(never_wrapped("python3", &none), Some("interactive"));
        assert_eq!(never_wrapped("python3 -c 'print(1)'", &none), None);
        assert_eq!(
            never_wrapped("mkdir -p a && mv b a/", &none),
            Some("small output by nature")
        );
        assert_eq!(
            never_wrapped("cargo test 2>&1 | tail -20", &none),
            Some("its output is bounded already")
        );
        assert_eq!(
            never_wrapped("compactctl run -- ls", &none),
            Some("already wrapped")
        );
        assert_eq!(
            never_wrapped("/opt/bin/compactctl recall r0a1b2c3d4", &none),
            Some("a recall of a kept output")
        );
        assert_eq!(
            never_wrapped("git rebase -i HEAD~3", &none),
            Some("interactive")
        );
        assert_eq!(
            never_wrapped("make build", &["make".to_owned()]),
            Some("excluded by the user")
        );
        assert_eq!(never_wrapped("FOO=1 cargo build", &none), None);
        assert_eq!(never_wrapped("cargo build --release", &none), None);
    }

    #[test]
    fn allow_rules_cover_only_simple_commands() {
        let rules = Rules {
            allow: vec![
                Rule::parse("Bash(cargo test:*)").unwrap(),
                Rule::parse("Bash(ls)").unwrap(),
            ],
            refuse: vec![Rule::parse("Bash(cargo test --release:*)").unwrap()],
        };
        assert!(rules.allows("cargo test -p core"));
        assert!(rules.allows("ls"));
        assert!(!rules.allows("ls -la"));
        assert!(!rules.allows("cargo test; rm -rf /"));
        assert!(!rules.allows("cargo test --release"));
        assert!(!rules.allows("cargo testx"));
    }

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("/usr/bin/compactctl"), "/usr/bin/compactctl");
    }

    fn gate_options(home: &Path) -> RunHookOptions {
        use compact_core::memory::{Candidate, FactKind, Limits, Memory, Origin};
        let mut memory = Memory::new();
        memory.admit(
            [Candidate {
                kind: FactKind::FileState,
                subject: "dir /srv/shop/release".to_owned(),
                text: "/srv/shop/release (directory)".to_owned(),
                path: Some("/srv/shop/release".to_owned()),
                confidence: 0.85,
                sources: vec!["i1".to_owned()],
                origin: Origin::Items,
            }],
            &Limits::default(),
        );
        RunHookOptions {
            program: "compactctl".to_owned(),
            budget: 4_000,
            families: default_families(),
            exclude: Vec::new(),
            home: Some(home.to_path_buf()),
            gate: Some(compact_core::memory::KnownPaths::from_facts(memory.facts())),
        }
    }

    fn bash(command: &str, mode: &str) -> Value {
        json!({"hook_event_name": "PreToolUse", "session_id": "s1", "permission_mode": mode,
               "tool_name": "Bash", "tool_input": {"command": command}})
    }

    #[test]
    fn the_memory_gate_rewrites_probes_within_the_permissions() {
        let home = std::env::temp_dir().join(format!("compact-gate-{}", std::process::id()));
        let options = gate_options(&home);
        // Under bypassPermissions: `cd` is never wrapped, so the rewrite goes out alone.
        let (decision, rewrite) =
            pre_tool_use_gated(&bash("cd release && make", "bypassPermissions"), &options).unwrap();
        let rewrite = rewrite.expect("rewritten");
        assert_eq!(rewrite.rewritten, "cd /srv/shop/release && make");
        let Decision::Rewrite(json) = decision else {
            panic!("{decision:?}")
        };
        let out: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            out["hookSpecificOutput"]["updatedInput"]["command"],
            "cd /srv/shop/release && make"
        );
        // A probe that is wrapped is wrapped in its rewritten form.
        let (decision, rewrite) =
            pre_tool_use_gated(&bash("ls -la release", "bypassPermissions"), &options).unwrap();
        assert!(rewrite.is_some());
        let Decision::Rewrite(json) = decision else {
            panic!("{decision:?}")
        };
        assert!(json.contains("/srv/shop/release"), "{json}");
        // Destructive commands and unknown names pass through the gate untouched.
        for command in ["cd release && rm -rf build", "ls releases"] {
            let (_, rewrite) =
                pre_tool_use_gated(&bash(command, "bypassPermissions"), &options).unwrap();
            assert!(rewrite.is_none(), "{command}");
        }
        // Without a rule allowing it, no rewrite: it would widen the permissions.
        let (decision, rewrite) =
            pre_tool_use_gated(&bash("cd release && make", "default"), &options).unwrap();
        assert!(rewrite.is_none() && matches!(decision, Decision::Keep(_)));
        // The gate off: nothing changes.
        let off = RunHookOptions {
            gate: None,
            ..options
        };
        let (decision, rewrite) =
            pre_tool_use_gated(&bash("cd release && make", "bypassPermissions"), &off).unwrap();
        assert!(rewrite.is_none() && matches!(decision, Decision::Keep(_)));
    }
}
