//! The crate edges that carry the architecture, read from `cargo metadata` (the manifests, not the
//! docs): the proxy (and the web view it mounts) does not build the replay harness, the core does no
//! I/O, the chart crate is std only. A test fails as soon as a manifest brings an edge back.

use crate::support::root;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::process::Command;

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

/// The workspace's packages as `cargo metadata` reads them from the manifests.
fn packages() -> Vec<Value> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut metadata: Value =
        serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
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
