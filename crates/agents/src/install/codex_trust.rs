//! Codex's hook trust, as Codex 0.169 records it.
//!
//! Codex runs a hook from the user's `config.toml` only once the user has trusted it: the `/hooks`
//! review of the interactive CLI ("Trust all and continue") writes, per hook handler,
//!
//! ```toml
//! [hooks.state."/home/u/.codex/config.toml:session_start:1:0"]
//! trusted_hash = "sha256:…"
//! ```
//!
//! into the same `config.toml`. The key is the file Codex read the hook from (its home resolved:
//! symlinks followed, made absolute; the file name itself kept), the event in snake case, the
//! index of the matcher group among the event's groups in that file and the index of the handler
//! in the group. The hash is SHA-256 over the handler's identity: the JSON of
//! `{"event_name", "matcher", "hooks": [{"type": "command", "command", "timeout", "async",
//! "statusMessage"}]}` with its keys sorted and no spaces, `matcher` and `statusMessage` left out
//! when absent, `timeout` 600 when absent. A handler whose hash no longer matches (its command
//! changed) is "modified" and does not run until trusted again; `codex exec
//! --dangerously-bypass-hook-trust` runs untrusted hooks for one invocation.

use super::sha256;
use serde_json::{Map, Value};
use std::path::{Component, Path, PathBuf};

/// Seconds Codex gives a command hook that names no `timeout`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;

/// Codex's name of an event in trust keys and hashes (`PreCompact`: `pre_compact`).
pub fn event_key(event: &str) -> String {
    let mut out = String::with_capacity(event.len() + 4);
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// What Codex hashes of one command handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler<'a> {
    /// The event (`SessionStart`).
    pub event: &'a str,
    /// The matcher of the handler's group.
    pub matcher: Option<&'a str>,
    /// The command.
    pub command: &'a str,
    /// `timeout` in seconds (`None`: Codex's default).
    pub timeout: Option<u64>,
    /// `async`.
    pub is_async: bool,
    /// `statusMessage`.
    pub status_message: Option<&'a str>,
}

/// The `trusted_hash` Codex records for `handler`: `sha256:` and 64 hex digits.
pub fn hash(handler: &Handler<'_>) -> String {
    // Keys inserted in sorted order: the JSON is the same whether or not serde_json keeps order.
    let mut hook = Map::new();
    hook.insert("async".to_owned(), Value::Bool(handler.is_async));
    hook.insert(
        "command".to_owned(),
        Value::String(handler.command.to_owned()),
    );
    if let Some(message) = handler.status_message {
        hook.insert(
            "statusMessage".to_owned(),
            Value::String(message.to_owned()),
        );
    }
    let timeout = handler.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1);
    hook.insert("timeout".to_owned(), Value::from(timeout));
    hook.insert("type".to_owned(), Value::String("command".to_owned()));
    let mut identity = Map::new();
    identity.insert(
        "event_name".to_owned(),
        Value::String(event_key(handler.event)),
    );
    identity.insert("hooks".to_owned(), Value::Array(vec![Value::Object(hook)]));
    if let Some(matcher) = handler.matcher {
        identity.insert("matcher".to_owned(), Value::String(matcher.to_owned()));
    }
    let text = Value::Object(identity).to_string();
    format!("sha256:{}", sha256::hex(text.as_bytes()))
}

/// The key of the handler `handler` of group `group` of `event` in the file `source`.
pub fn key(source: &Path, event: &str, group: usize, handler: usize) -> String {
    format!(
        "{}:{}:{group}:{handler}",
        source.display(),
        event_key(event)
    )
}

/// The path Codex names `CODEX_HOME/config.toml` by in its keys: the home made absolute and its
/// symlinks followed as far as it exists (Codex resolves its home; an install may create it).
pub fn source_path(codex_home: &Path) -> PathBuf {
    let absolute = std::path::absolute(codex_home).unwrap_or_else(|_| codex_home.to_path_buf());
    let mut rest = Vec::new();
    let mut existing = absolute.as_path();
    let resolved = loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            break real;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last.as_os_str().to_owned());
                existing = parent;
            }
            _ => {
                rest.clear();
                break lexical(&absolute);
            }
        }
    };
    let mut path = resolved;
    for name in rest.iter().rev() {
        if name == ".." {
            path.pop();
        } else if name != "." {
            path.push(name);
        }
    }
    path.join("config.toml")
}

/// `path` with `.` and `..` taken out without reading the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn event_names_are_snake_case() {
        assert_eq!(event_key("SessionStart"), "session_start");
        assert_eq!(event_key("PreCompact"), "pre_compact");
        assert_eq!(event_key("UserPromptSubmit"), "user_prompt_submit");
    }

    #[test]
    fn hashes_match_the_ones_codex_0_169_lists() {
        // `hooks/list` of `codex app-server` 0.169.0 on these two handlers (`currentHash`).
        let command = "cat >> /tmp/cx/h1/hooklog.txt; echo >> /tmp/cx/h1/hooklog.txt";
        let pre = Handler {
            event: "PreCompact",
            matcher: None,
            command,
            timeout: Some(30),
            is_async: false,
            status_message: None,
        };
        assert_eq!(
            hash(&pre),
            "sha256:409c903f3ec1e8be2bf3a7244e5dbf388b964223c31744b9cbfb0bdc19de61c5"
        );
        let start = Handler {
            event: "SessionStart",
            matcher: Some("compact"),
            ..pre
        };
        assert_eq!(
            hash(&start),
            "sha256:9082d2cdc11482fc2ef19d587f3142db64fce4a2c8f6a260c049b8cce8145c0a"
        );
    }

    #[test]
    fn keys_name_the_file_event_group_and_handler() {
        assert_eq!(
            key(Path::new("/h/.codex/config.toml"), "PreCompact", 2, 0),
            "/h/.codex/config.toml:pre_compact:2:0"
        );
    }

    #[test]
    fn the_source_resolves_what_exists_and_keeps_the_rest() {
        let base = std::env::temp_dir().join(format!("compact-trust-{}", std::process::id()));
        let real = base.join("real");
        std::fs::create_dir_all(&real).unwrap();
        let real = std::fs::canonicalize(&real).unwrap();
        #[cfg(unix)]
        {
            let link = base.join("link");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&real, &link).unwrap();
            assert_eq!(source_path(&link), real.join("config.toml"));
            assert_eq!(
                source_path(&link.join("new/../codex")),
                real.join("codex/config.toml")
            );
        }
        assert_eq!(
            source_path(&real.join("not/yet")),
            real.join("not/yet/config.toml")
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
