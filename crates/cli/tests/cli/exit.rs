//! Usage errors exit with 2 (clap's own errors included); help and version succeed.

use crate::support::run;

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["frobnicate"][..],
        &["inspect", "examples/session.json", "--no-such-flag"],
        &["compact", "examples/session.json", "--window", "many"],
        &["recall", "examples/session.json"],
        &[],
    ] {
        let out = run(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(!out.stderr.is_empty(), "{args:?}: no message");
    }
}

#[test]
fn help_and_version_succeed() {
    let out = run(&["--help"]).ok();
    for cmd in ["count", "inspect", "compact", "plan", "diff", "recall"] {
        assert!(out.stdout.contains(cmd), "help lacks {cmd}");
    }
    let out = run(&["--version"]).ok();
    assert!(
        out.stdout.contains(env!("CARGO_PKG_VERSION")),
        "{}",
        out.stdout
    );
}
