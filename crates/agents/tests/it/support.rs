//! Fixture paths and scratch directories.

use std::path::{Path, PathBuf};

/// A fixture file of this crate.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A fresh, empty directory for one test (under the target directory).
pub fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("agents-it")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The hook input JSON Claude Code documents.
pub fn claude_input(event: &str, transcript: &Path, extra: serde_json::Value) -> Vec<u8> {
    let mut v = serde_json::json!({
        "session_id": "5e1d0c7a-2b44-4c1e-9a1f-7d3e2c9b8a10",
        "transcript_path": transcript,
        "cwd": "/home/dev/ledger",
        "hook_event_name": event,
        "permission_mode": "default",
    });
    if let (Some(obj), serde_json::Value::Object(extra)) = (v.as_object_mut(), extra) {
        obj.extend(extra);
    }
    serde_json::to_vec(&v).unwrap()
}
