//! Running the built binary and reading its output: the helpers every test module shares.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// What one run of the binary produced.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// Panics with the run's output unless it exited with `code`.
    pub fn expect_code(self, code: i32) -> Out {
        assert_eq!(
            self.code, code,
            "exit code {} (wanted {code})\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// Panics unless the run succeeded.
    pub fn ok(self) -> Out {
        self.expect_code(0)
    }

    /// Standard output parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// The workspace root (where `examples/` lives); commands run from there.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Absolute path of a fixture of this crate.
pub fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// The binary, run from the workspace root, with no `COMPACT_*` variable of the caller's
/// environment leaking into the run.
/// A state directory for this test process (`XDG_STATE_HOME` of every `compactctl` it starts
/// without one of its own), so that no test reads or writes the user's `~/.local/state`.
pub fn scratch_state() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| temp_dir("state"))
}

fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_compactctl"));
    cmd.args(args)
        .current_dir(root())
        .env("XDG_STATE_HOME", scratch_state());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("COMPACT_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

fn finish(output: std::process::Output) -> Out {
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs the binary with `args` and no standard input.
pub fn run(args: &[&str]) -> Out {
    run_env(args, &[])
}

/// Runs the binary with `args` and extra environment variables.
pub fn run_env(args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = command(args);
    cmd.envs(env.iter().copied()).stdin(Stdio::null());
    finish(cmd.output().expect("running compactctl"))
}

/// Runs the binary with `input` on standard input.
pub fn run_stdin(args: &[&str], input: &[u8]) -> Out {
    let mut child = command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning compactctl");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().expect("waiting for compactctl");
    // A run that fails before reading its input closes the pipe: that is not the test's failure.
    match writer.join().unwrap() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.unwrap(),
    }
    finish(output)
}

/// `inspect --json` of `path` (plus `extra` flags); must succeed.
pub fn inspect(path: &str, extra: &[&str]) -> Value {
    let mut args = vec!["inspect", path, "--json"];
    args.extend_from_slice(extra);
    run(&args).ok().json()
}

/// A fresh empty directory for one test's outputs.
pub fn temp_dir(test: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "compactctl-test-{}-{}-{test}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A path inside `dir`, as a string.
pub fn in_dir(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

/// Reads a JSON file (relative paths from the workspace root, like the commands).
pub fn read_json(path: &str) -> Value {
    let text = std::fs::read_to_string(root().join(path))
        .unwrap_or_else(|e| panic!("reading {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is not JSON ({e})"))
}

/// Exact token count by tiktoken-rs (an implementation independent of ours), special-token strings
/// counted as ordinary text.
pub fn oracle(encoding: &str, text: &str) -> usize {
    use std::sync::OnceLock;
    static O200K: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
    static CL100K: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
    let bpe = match encoding {
        "o200k_base" => O200K.get_or_init(|| tiktoken_rs::o200k_base().unwrap()),
        "cl100k_base" => CL100K.get_or_init(|| tiktoken_rs::cl100k_base().unwrap()),
        other => panic!("no oracle for {other}"),
    };
    bpe.encode_ordinary(text).len()
}

/// The corpus of real transcripts, when present.
pub fn corpus() -> Option<PathBuf> {
    corpus_dir::dir()
}

/// Every file of the corpus's format directories, sorted by path.
pub fn corpus_files(dir: &std::path::Path) -> Vec<PathBuf> {
    corpus_dir::files(dir)
}

#[path = "../../../core/tests/fixtures/corpus.rs"]
mod corpus_dir;

/// The provider simulator served in-process on 127.0.0.1 with `config`, and the runtime that keeps
/// serving it on its worker thread while the test runs the binary (drop both at the end).
pub fn simulator(
    config: compact_sim::SimConfig,
) -> (tokio::runtime::Runtime, compact_sim::SimHandle) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let sim = rt
        .block_on(compact_sim::Simulator::spawn(config))
        .expect("simulator");
    (rt, sim)
}

/// The address `compactctl serve` (spawned with `--listen 127.0.0.1:0` and stderr piped) says it
/// listens on: its first log line, `listening`. Panics naming `what` and the line when it is not.
pub fn listening_addr(
    stderr: &mut std::io::BufReader<std::process::ChildStderr>,
    what: &str,
) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let listening: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("{what}: compactctl serve did not start ({e}): {line}"));
    listening["addr"].as_str().unwrap().to_owned()
}
