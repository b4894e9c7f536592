//! The crate edges that carry the architecture, read from `cargo metadata` (the manifests, not the
//! docs): the proxy (and the web view it mounts) does not build the replay harness, the core does no
//! I/O, the chart crate is std only. A test fails as soon as a manifest brings an edge back. The
//! session runtime and the proxy import without circles, and no function outside tests and data
//! tables runs past 150 lines.

use crate::support::root;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::process::Command;

mod fn_length;

/// What `compact-core` depends on (normal and build dependencies). Growing it is a decision: the
/// core is pure (no I/O, no async), so a new entry must be neither, and is added here on purpose.
const CORE_ALLOWED: [&str; 4] = ["bpe-openai", "regex", "serde_json", "thiserror"];

/// Crates that do I/O or run async code: none may be a dependency of `compact-core`, whatever the
/// allow-list says (async runtimes and futures, HTTP clients and servers, sockets and TLS,
/// databases, object stores, telemetry exporters, file watching and memory maps).
const IO_CRATES: &[&str] = &[
    "tokio",
    "tokio-util",
    "async-std",
    "smol",
    "futures",
    "futures-util",
    "async-trait",
    "mio",
    "socket2",
    "hyper",
    "hyper-util",
    "hyper-rustls",
    "http-body-util",
    "h2",
    "reqwest",
    "ureq",
    "rustls",
    "tokio-rustls",
    "native-tls",
    "openssl",
    "rusqlite",
    "postgres",
    "tokio-postgres",
    "sqlx",
    "diesel",
    "redis",
    "rusty-s3",
    "aws-sdk-s3",
    "opentelemetry",
    "opentelemetry-otlp",
    "opentelemetry_sdk",
    "tonic",
    "notify",
    "memmap2",
    "rmcp",
    "axum",
];

/// `cargo metadata --format-version 1 --offline` with `extra` arguments, parsed.
fn metadata(extra: &[&str]) -> Value {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(extra)
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// The workspace's packages as `cargo metadata` reads them from the manifests.
fn packages() -> Vec<Value> {
    let mut metadata = metadata(&["--no-deps"]);
    match metadata["packages"].take() {
        Value::Array(packages) => packages,
        other => panic!("no package list: {other}"),
    }
}

/// Each workspace package's dependencies that it builds with (normal and build, not dev), by name.
fn build_dependencies() -> HashMap<String, BTreeSet<String>> {
    let mut edges = HashMap::new();
    for package in packages() {
        let name = package["name"].as_str().expect("a package name").to_owned();
        let deps = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .map(|d| d["name"].as_str().expect("a dependency name").to_owned())
            .collect();
        edges.insert(name, deps);
    }
    edges
}

/// Every workspace package `package` builds, itself included (only workspace packages can depend
/// on a workspace package, so the closure over them is complete for the workspace's crates).
fn builds(edges: &HashMap<String, BTreeSet<String>>, package: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![package.to_owned()];
    while let Some(p) = todo.pop() {
        if let Some(deps) = edges.get(&p) {
            todo.extend(deps.iter().filter(|d| !seen.contains(*d)).cloned());
        }
        seen.insert(p);
    }
    seen
}

#[test]
fn arch_the_web_view_and_the_proxy_do_not_build_the_replay_harness() {
    let edges = build_dependencies();
    let ui = &edges["compact-ui"];
    assert!(
        !ui.contains("compact-replay"),
        "compact-ui depends on compact-replay; the replay's HTML report lives in compact-replay (render::html)"
    );
    for package in ["compact-ui", "compact-proxy"] {
        let built = builds(&edges, package);
        assert!(
            !built.contains("compact-replay"),
            "{package} builds compact-replay: {built:?}"
        );
    }
    // The report moved, it did not vanish: replay draws it with the shared chart crate.
    assert!(edges["compact-replay"].contains("compact-chart"));
    assert!(ui.contains("compact-chart"));
}

/// The benchmarks that need several crates live in `compact-bench`: no library crate takes the
/// replay harness or the session runtime in as a dev-dependency for a benchmark. (`compact-llm`
/// keeps `compact-session` for one test of its cache-warm call through the runtime.)
#[test]
fn arch_benchmarks_that_need_other_crates_live_in_compact_bench() {
    let allowed: &[(&str, &str)] = &[("compact-llm", "compact-session")];
    for package in packages() {
        let name = package["name"].as_str().expect("a package name");
        if matches!(name, "compactctl" | "compact-bench" | "compact-wiring") {
            continue;
        }
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let dep_name = dep["name"].as_str().expect("a dependency name");
            let heavy = matches!(
                dep_name,
                "compact-replay" | "compact-session" | "compact-proxy"
            );
            if dep["kind"].as_str() == Some("dev") && heavy && !allowed.contains(&(name, dep_name))
            {
                // The crates above the runtime may test through it; a library below it may not.
                let above = builds(&build_dependencies(), name).contains(dep_name)
                    || matches!(
                        name,
                        "compact-proxy"
                            | "compact-agents"
                            | "compact-ui"
                            | "compact-python"
                            | "compact-replay"
                    );
                assert!(
                    above,
                    "{name} takes {dep_name} in as a dev-dependency: move what needs it to compact-bench"
                );
            }
        }
    }
}

#[test]
fn arch_the_core_has_no_io_or_async_dependency() {
    let edges = build_dependencies();
    let core = &edges["compact-core"];
    let io: Vec<&String> = core
        .iter()
        .filter(|d| IO_CRATES.contains(&d.as_str()))
        .collect();
    assert!(
        io.is_empty(),
        "compact-core depends on I/O or async crates: {io:?}"
    );
    let unexpected: Vec<&String> = core
        .iter()
        .filter(|d| !CORE_ALLOWED.contains(&d.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "compact-core gained dependencies {unexpected:?}: the core does no I/O and no async; if a new one is neither, add it to CORE_ALLOWED"
    );
}

#[test]
fn arch_the_chart_crate_has_no_dependency() {
    let chart = packages()
        .into_iter()
        .find(|p| p["name"] == "compact-chart")
        .expect("the workspace has compact-chart");
    assert_eq!(
        chart["dependencies"].as_array().map(Vec::len),
        Some(0),
        "compact-chart is std only (dev-dependencies included): {}",
        chart["dependencies"]
    );
}

/// The modules of the crate at `src` (a top-level file or directory of it is one module; `lib.rs`
/// and `main.rs` are the crate's root, not modules) and, per module, the other modules its code
/// names through `crate::` (comments and `#[cfg(test)]` modules left out).
fn module_edges(src: &std::path::Path) -> HashMap<String, BTreeSet<String>> {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut all = Vec::new();
    files(src, &mut all);
    let mut edges: HashMap<String, BTreeSet<String>> = HashMap::new();
    for path in all {
        let rel = path.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let targets = edges.entry(module.clone()).or_default();
        for line in code.lines() {
            let line = line.split("//").next().unwrap_or_default();
            for (at, _) in line.match_indices("crate::") {
                let name: String = line[at + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !name.is_empty() && name != module {
                    targets.insert(name);
                }
            }
        }
    }
    let modules: BTreeSet<String> = edges.keys().cloned().collect();
    for targets in edges.values_mut() {
        targets.retain(|t| modules.contains(t));
    }
    edges
}

/// A circle of modules, if the edges hold one (the first found, in order).
fn circle(edges: &HashMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &HashMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    let mut names: Vec<&String> = edges.keys().collect();
    names.sort();
    for name in names {
        if let Some(found) = visit(name, edges, &mut Vec::new(), &mut done) {
            return Some(found);
        }
    }
    None
}

/// The session runtime's files import one way: no circle of modules (a file that implements
/// `CompactManager` imports the manager, so the manager imports none of them).
#[test]
fn arch_the_session_runtime_has_no_import_circle() {
    let edges = module_edges(&root().join("crates/session/src"));
    assert!(edges.contains_key("manager") && edges.contains_key("preflight"));
    assert_eq!(circle(&edges), None, "{edges:?}");
    // The check sees a circle when there is one.
    let mut with_one = edges.clone();
    with_one
        .get_mut("store")
        .unwrap()
        .insert("manager".to_owned());
    assert!(circle(&with_one).is_some());
}

/// The proxy's files import one way too: the request state lives in `state.rs`, which imports no
/// handler, so the handlers and the server import it without a circle.
#[test]
fn arch_the_proxy_has_no_import_circle() {
    let edges = module_edges(&root().join("crates/proxy/src"));
    assert!(edges.contains_key("server") && edges.contains_key("state"));
    assert_eq!(circle(&edges), None, "{edges:?}");
}

/// Functions allowed past [`fn_length::LIMIT`] lines because they are data, not steps: one entry
/// a line, read top to bottom (path from the workspace root, function name).
const DATA_TABLES: &[(&str, &str)] = &[
    // The built-in model registry: one literal per model.
    ("crates/core/src/registry/builtin.rs", "models"),
];

/// No function outside tests runs past 150 lines (issue 42), data tables excepted: a longer body
/// is a sequence of steps that want names (`crates/core/src/strategy/tiered.rs` shows the shape).
#[test]
fn arch_no_function_runs_past_150_lines() {
    let long = fn_length::long_functions(&root());
    let over: Vec<String> = long
        .iter()
        .filter(|(path, f)| {
            let entry = (path.as_str(), f.name.as_str());
            !DATA_TABLES.contains(&entry)
        })
        .map(|(path, f)| format!("{path}:{} `{}`: {} lines", f.line, f.name, f.lines))
        .collect();
    assert!(
        over.is_empty(),
        "functions over {} lines: split each into named steps (or, for a data table, add it to DATA_TABLES):\n{}",
        fn_length::LIMIT,
        over.join("\n")
    );
    // The allow-list stays true: an entry that is no longer long (or gone) is dropped from it.
    for (path, name) in DATA_TABLES {
        assert!(
            long.iter().any(|(p, f)| p == path && f.name == *name),
            "{path} `{name}` is in DATA_TABLES but not over {} lines: drop the entry",
            fn_length::LIMIT
        );
    }
}

/// The Rust version every workspace crate declares (inherited from the workspace) is at least what
/// each dependency in the lock file declares: `cargo` then refuses an older toolchain with a clear
/// message instead of a compile error deep in a dependency. Every crate also stays unpublished.
#[test]
fn arch_the_declared_rust_version_covers_every_dependency() {
    let metadata = metadata(&["--locked"]);
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .expect("workspace members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // `1.89` and `1.89.0` are the same version: compared as three numbers.
    let version = |v: &str| -> [u64; 3] {
        let mut out = [0; 3];
        for (slot, n) in out.iter_mut().zip(v.split('.')) {
            *slot = n.parse().expect("a numeric rust-version");
        }
        out
    };
    let mut needed: Option<([u64; 3], String)> = None;
    let mut declared = Vec::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("a package name");
        let id = package["id"].as_str().expect("a package id");
        let rust_version = package["rust_version"].as_str();
        if members.contains(id) {
            let Some(v) = rust_version else {
                panic!("{name} declares no rust-version: add `rust-version.workspace = true`");
            };
            assert_eq!(
                package["publish"],
                Value::Array(Vec::new()),
                "{name} must say `publish = false`"
            );
            declared.push((name.to_owned(), version(v)));
        } else if let Some(v) = rust_version {
            if needed.as_ref().is_none_or(|(n, _)| version(v) > *n) {
                needed = Some((version(v), format!("{name} {}", package["version"])));
            }
        }
    }
    let (needed, by) = needed.expect("some dependency declares a rust-version");
    for (name, v) in declared {
        assert!(
            v >= needed,
            "{name} declares rust-version {v:?}, below the {needed:?} that {by} needs: raise the workspace's rust-version"
        );
    }
}
