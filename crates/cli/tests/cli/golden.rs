//! Golden outputs on the corpus: what `compactctl` produces for every real transcript, through the
//! engine (`compact`) and through the session runtime the proxy and the Python binding run
//! (`replay`'s runtime preflight), is pinned by a digest per file in `tests/golden/corpus.txt`.
//!
//! A refactor must leave every digest as it is; a change meant to alter outputs (a quality change)
//! re-blesses the file with `COMPACT_BLESS=1 cargo nextest run -p compactctl -E 'test(/golden/)'` and
//! says why in its commit, so that the diff of this file shows which sessions changed. The file
//! holds file names and digests only, never corpus text.

use crate::support::{corpus, corpus_files, run};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The window every output is taken at: small enough that every long session compacts.
const WINDOW: &str = "16000";

fn golden_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/corpus.txt")
}

/// FNV-1a, 64 bits: a stable digest with no dependency (not a security property).
pub(crate) fn digest(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Drops what a run measures rather than decides (timings) from a replay report, recursively.
fn without_timings(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|k, _| !k.starts_with("preflight_us"));
            map.values_mut().for_each(without_timings);
        }
        Value::Array(items) => items.iter_mut().for_each(without_timings),
        _ => {}
    }
}

fn key(host: &str, file: &Path) -> String {
    format!("{host} {}", file.file_name().unwrap().to_string_lossy())
}

/// Every digest of this build: `compact` per file, and the runtime replay's per-session figures.
fn digests(files: &[PathBuf]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for file in files {
        let path = file.to_string_lossy();
        let r = run(&["compact", "--lenient", "--window", WINDOW, &path]);
        let stdout = if r.code == 0 {
            r.stdout
        } else {
            format!("exit {}", r.code)
        };
        out.insert(key("compact", file), digest(stdout.as_bytes()));
    }
    let mut args = vec![
        "replay",
        "--lenient",
        "--window",
        WINDOW,
        "--compare",
        "tiered",
        "--json",
    ];
    let paths: Vec<String> = files
        .iter()
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    args.extend(paths.iter().map(String::as_str));
    let r = run(&args).ok();
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    for session in report["sessions"].as_array().unwrap() {
        let name = session["name"].as_str().unwrap();
        let file = files
            .iter()
            .find(|f| {
                f.to_string_lossy() == name
                    || f.file_name()
                        .is_some_and(|n| name.ends_with(&*n.to_string_lossy()))
            })
            .unwrap_or_else(|| panic!("replay named a session `{name}` that is no corpus file"));
        let mut figures = session["strategies"].clone();
        without_timings(&mut figures);
        out.insert(key("runtime", file), digest(figures.to_string().as_bytes()));
    }
    out
}

/// Compares `now` with the golden file at `path` and fails naming every key that changed, came or
/// went; with `COMPACT_BLESS` set, writes `now` there instead (the proxy's golden test uses it too).
pub(crate) fn compare_or_bless(path: &Path, now: &BTreeMap<String, String>) {
    let text: String = now.iter().map(|(k, d)| format!("{k} {d}\n")).collect();
    if std::env::var_os("COMPACT_BLESS").is_some() {
        std::fs::write(path, &text).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}; bless it with COMPACT_BLESS=1", path.display()));
    let was: BTreeMap<&str, &str> = golden.lines().filter_map(|l| l.rsplit_once(' ')).collect();
    let mut changed = Vec::new();
    for (k, d) in now {
        match was.get(k.as_str()) {
            Some(old) if old == d => {}
            Some(_) => changed.push(format!("changed: {k}")),
            None => changed.push(format!("new: {k}")),
        }
    }
    for k in was.keys() {
        if !now.contains_key(*k) {
            changed.push(format!("gone: {k}"));
        }
    }
    assert!(
        changed.is_empty(),
        "{} of {} corpus outputs differ from {} (a refactor must change none; a change meant to \
         alter outputs re-blesses with COMPACT_BLESS=1 and says why):\n{}",
        changed.len(),
        now.len(),
        path.display(),
        changed.join("\n")
    );
}

#[test]
fn golden_corpus_outputs_are_unchanged() {
    let Some(dir) = corpus() else { return };
    let files = corpus_files(&dir);
    assert!(!files.is_empty());
    let now = digests(&files);
    compare_or_bless(&golden_path(), &now);
}

#[test]
fn golden_digest_sees_a_one_byte_change() {
    assert_ne!(digest(b"tokens 100"), digest(b"tokens 101"));
    assert_eq!(digest(b""), "cbf29ce484222325");
    let mut v: Value =
        serde_json::json!({"a": 1, "preflight_us_p50": 7, "b": [{"preflight_us_max": 3, "c": 2}]});
    without_timings(&mut v);
    assert_eq!(v, serde_json::json!({"a": 1, "b": [{"c": 2}]}));
}
