//! The real agent CLIs under Compact: Claude Code and the Codex CLI (the versions `scripts/clients`
//! pins, found through `COMPACT_CLAUDE_BIN` and `COMPACT_CODEX_BIN`) each run a multi-step tool
//! session headless against the provider simulator's scripted agent (`compact_sim::agent`: one
//! shell command per turn through the client's own shell tool, thinking blocks signed and checked,
//! every request validated against the provider's rules), directly and through `compactctl serve`
//! with a window that forces compaction.
//!
//! Through the proxy a session must see: no request passed through uncompacted, no request the
//! provider refuses, compaction happening, no request over the window, at most one change of the
//! prefix the provider caches per compaction (a moved `cache_control` marker is not a change), at
//! most four `cache_control` markers per request, every step of the task run and the task's answer
//! reaching the user. Each run's tokens and cost with cache pricing are printed (BENCHMARKS.md,
//! "Real clients").
//!
//! Without a CLI the tests say they skipped, unless `COMPACT_REQUIRE_CLIENTS` (or `CI`) is set: then
//! a missing CLI fails them.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use compact_sim::{AgentScript, Api, RecordedRequest, SimConfig, SimHandle, Simulator};

/// The task's trigger: the prompt holds it.
const TRIGGER: &str = "Run the scripted maintenance task";
/// The task's answer.
const DONE: &str = "The maintenance task is finished: every step ran.";
/// The window the proxy compacts for: about three times the clients' own fixed prompt (their
/// system prompt, reminders and tool declarations), so that the task overflows it.
const PROXY_WINDOW: usize = 36_000;
/// Longest a CLI run may take.
const RUN_LIMIT: Duration = Duration::from_secs(420);

/// The task: commands whose outputs are a few thousand tokens each (under the clients' own
/// output cuts), some failing, deterministic on any machine.
fn steps() -> Vec<String> {
    let mut steps = Vec::new();
    for i in 0..14 {
        steps.push(match i % 4 {
            0 => format!(
                "for n in $(seq 1 110); do echo \"src/module_{i}/file_$n.rs:$n: fn handler_{i}_$n(req: &Request) -> Result<Response, Error> {{ route(req, $n) }}\"; done"
            ),
            1 => format!("seq {} {}", i * 1000, i * 1000 + 900),
            2 => format!(
                "printf 'error[E0308]: mismatched types in step {i}\\n  --> src/lib.rs:{i}:5\\n'; for n in $(seq 1 90); do echo \"test module_{i}::case_$n ... ok\"; done; exit 1"
            ),
            _ => format!(
                "for n in $(seq 1 100); do echo \"{{\\\"step\\\": {i}, \\\"row\\\": $n, \\\"status\\\": \\\"ready\\\", \\\"path\\\": \\\"data/part_$n.json\\\"}}\"; done"
            ),
        });
    }
    steps
}

/// A CLI binary from the environment, or `None` (the test skips, saying so) when it is not set
/// and not required.
fn client_bin(var: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let required = ["COMPACT_REQUIRE_CLIENTS", "CI"]
        .iter()
        .any(|k| std::env::var_os(k).is_some_and(|v| v != "0" && !v.is_empty()));
    assert!(
        !required,
        "{var} is not set but the real clients are required (COMPACT_REQUIRE_CLIENTS or CI): run \
         `eval \"$(scripts/clients)\"` first"
    );
    eprintln!("skipped: {var} is not set (eval \"$(scripts/clients)\" installs the real CLIs)");
    None
}

/// A scratch directory removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "compact-clients-{name}-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn path(&self, rel: &str) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The simulator with the scripted agent, on its own runtime.
struct Sim {
    handle: SimHandle,
    _runtime: tokio::runtime::Runtime,
}

impl Sim {
    fn start() -> Sim {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let config = SimConfig {
            // The models' real windows are far larger than what the proxy is told.
            window: 1_000_000,
            agent: Some(AgentScript {
                trigger: TRIGGER.to_owned(),
                steps: steps(),
                done: DONE.to_owned(),
            }),
            validate: true,
            ..SimConfig::default()
        };
        let handle = runtime.block_on(Simulator::spawn(config)).unwrap();
        Sim {
            handle,
            _runtime: runtime,
        }
    }
}

/// `compactctl serve` in front of the simulator.
struct Proxy {
    child: Child,
    addr: String,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Proxy {
    fn start(sim: &Sim, store: &Path) -> Proxy {
        let base = sim.handle.base_url();
        let mut child = Command::new(env!("CARGO_BIN_EXE_compactctl"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(["--openai-base-url", &base, "--anthropic-base-url", &base])
            .args(["--window", &PROXY_WINDOW.to_string()])
            .arg("--store")
            .arg(format!("sqlite:{}", store.display()))
            .env_remove("COMPACT_CONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let listening: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("compactctl serve did not start ({e}): {line}"));
        let addr = listening["addr"].as_str().unwrap().to_owned();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Proxy {
            child,
            addr,
            stderr: Some(stderr),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A counter of `/metrics`, summed over its labels matching `label` (empty: all).
    fn metric(&self, name: &str, label: &str) -> u64 {
        let text = http_get(&self.addr, "/metrics");
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| {
                l.split([' ', '{']).next() == Some(name) && (label.is_empty() || l.contains(label))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// Stops the proxy (SIGTERM) and returns its log.
    fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        self.stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_get(addr: &str, path: &str) -> String {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// Runs a CLI to its end (killed past [`RUN_LIMIT`]); its exit code and output.
fn run_client(mut cmd: Command) -> (i32, String, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code().unwrap_or(-1);
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break -2;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (code, out.join().unwrap(), err.join().unwrap())
}

/// Which client ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    ClaudeCode,
    Codex,
}

impl Client {
    fn api(self) -> Api {
        match self {
            Client::ClaudeCode => Api::Messages,
            Client::Codex => Api::Responses,
        }
    }

    /// The name of the shell tool the scripted agent calls.
    fn shell(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Bash",
            Client::Codex => "exec_command",
        }
    }

    /// The conversation list of a request body.
    fn list(self, body: &Value) -> Vec<Value> {
        let key = match self {
            Client::ClaudeCode => "messages",
            Client::Codex => "input",
        };
        body[key].as_array().cloned().unwrap_or_default()
    }
}

/// The requests of the agent's own loop (its shell tool offered), in order.
fn loop_requests(client: Client, sim: &Sim) -> Vec<RecordedRequest> {
    sim.handle
        .requests()
        .into_iter()
        .filter(|r| r.api == client.api())
        .filter(|r| {
            r.body["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["name"] == client.shell()))
        })
        .collect()
}

/// A JSON value with every `cache_control` key removed.
fn without_markers(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_markers(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_markers).collect()),
        other => other.clone(),
    }
}

fn count_markers(v: &Value) -> usize {
    match v {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| usize::from(k == "cache_control") + count_markers(v))
            .sum(),
        Value::Array(items) => items.iter().map(count_markers).sum(),
        _ => 0,
    }
}

/// What a run's loop requests show.
#[derive(Debug, Default)]
struct Run {
    requests: usize,
    refused: usize,
    max_input: u64,
    /// Requests whose conversation does not extend the previous one's (markers aside).
    prefix_changes: usize,
    max_markers: usize,
    /// Steps whose output the agent sent back.
    steps_answered: usize,
    input: u64,
    cached: u64,
    cache_creation: u64,
    output: u64,
}

impl Run {
    fn of(client: Client, sim: &Sim) -> Run {
        let requests = loop_requests(client, sim);
        let mut run = Run {
            requests: requests.len(),
            ..Run::default()
        };
        let mut previous: Option<Vec<Value>> = None;
        for r in &requests {
            if r.status != 200 {
                run.refused += 1;
                eprintln!(
                    "refused ({}): {}",
                    r.status,
                    String::from_utf8_lossy(&r.raw)
                        .chars()
                        .take(300)
                        .collect::<String>()
                );
                continue;
            }
            run.max_input = run.max_input.max(r.input_tokens.unwrap_or(0));
            run.max_markers = run.max_markers.max(count_markers(&r.body));
            let list: Vec<Value> = client.list(&r.body).iter().map(without_markers).collect();
            if let Some(prev) = &previous {
                if list.len() < prev.len() || list[..prev.len()] != prev[..] {
                    run.prefix_changes += 1;
                }
            }
            previous = Some(list);
            if let Some(u) = r.usage {
                run.input += u.input;
                run.cached += u.cached;
                run.cache_creation += u.cache_creation;
                run.output += u.output;
            }
        }
        // A step is answered once a request carries its output (later ones may hold it
        // compacted away).
        let texts: Vec<String> = requests
            .iter()
            .map(|r| String::from_utf8_lossy(&r.raw).into_owned())
            .collect();
        run.steps_answered = (0..steps().len())
            .filter(|s| {
                let id = format!("{}{s}_", compact_sim::agent::STEP_MARKER);
                texts.iter().any(|t| t.contains(&id))
            })
            .count();
        run
    }

    /// Dollars at the list prices of a Sonnet-class model: input $3/M, cache writes 1.25x, cache
    /// reads 0.1x, output $15/M (the same prices for both clients, so that direct and proxied runs
    /// compare).
    fn cost(&self) -> f64 {
        let fresh = self.input - self.cached - self.cache_creation;
        (fresh as f64 * 3.0
            + self.cache_creation as f64 * 3.75
            + self.cached as f64 * 0.3
            + self.output as f64 * 15.0)
            / 1e6
    }

    fn print(&self, label: &str) {
        eprintln!(
            "{label}: {} requests, {} refused, input {} (cached {}, written {}), output {}, max \
             input {}, prefix changes {}, cost ${:.4}",
            self.requests,
            self.refused,
            self.input,
            self.cached,
            self.cache_creation,
            self.output,
            self.max_input,
            self.prefix_changes,
            self.cost()
        );
    }
}

/// Claude Code headless, pointed at `base_url`, in `project` with its own home.
fn claude(bin: &Path, scratch: &Scratch, base_url: &str, model: Option<&str>) -> Command {
    let mut cmd = Command::new(bin);
    cmd.current_dir(scratch.path("project"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", scratch.path("home"))
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-ant-test-clients")
        .env("IS_SANDBOX", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["-p", &format!("{TRIGGER}, one command at a time.")])
        .args(["--dangerously-skip-permissions", "--output-format", "json"]);
    if let Some(model) = model {
        cmd.args(["--model", model]);
    }
    cmd
}

/// The Codex CLI headless (`codex exec`), its provider `base_url`, with its own `CODEX_HOME`.
fn codex(bin: &Path, scratch: &Scratch, base_url: &str) -> Command {
    let home = scratch.path("codex-home");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"sim\"\n\n[model_providers.sim]\nname = \"sim\"\n\
             base_url = \"{base_url}/v1\"\nenv_key = \"COMPACT_TEST_KEY\"\nwire_api = \"responses\"\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new(bin);
    cmd.current_dir(scratch.path("project"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", scratch.path("home"))
        .env("CODEX_HOME", &home)
        .env("COMPACT_TEST_KEY", "sk-test-clients")
        .args(["exec", "--skip-git-repo-check"])
        .arg("--dangerously-bypass-approvals-and-sandbox")
        .arg(format!("{TRIGGER}, one command at a time."));
    cmd
}

/// Runs `client` through the proxy and checks everything the module's doc names; returns the
/// run's figures.
fn through_the_proxy(
    client: Client,
    command: impl Fn(&Scratch, &str) -> Command,
    label: &str,
) -> Run {
    let sim = Sim::start();
    let scratch = Scratch::new("proxy");
    let proxy = Proxy::start(&sim, &scratch.0.join("sessions.db"));
    let (code, stdout, stderr) = run_client(command(&scratch, &proxy.url()));
    let compactions = proxy.metric("compact_proxy_compactions_total", "");
    let passthrough = proxy.metric("compact_passthrough_total", "");
    let expected = proxy.metric("compact_passthrough_total", "provider_compaction");
    let log = proxy.stop();
    let run = Run::of(client, &sim);
    run.print(&format!("{label} through the proxy"));
    assert_eq!(
        code,
        0,
        "{label} failed\nstdout:\n{stdout}\nstderr:\n{}\nproxy:\n{}",
        tail(&stderr),
        tail(&log)
    );
    assert!(stdout.contains(DONE), "{label}'s answer: {}", tail(&stdout));
    assert_eq!(
        run.refused,
        0,
        "requests the provider refused\n{}",
        tail(&log)
    );
    assert_eq!(
        passthrough - expected,
        0,
        "requests passed through uncompacted\n{}",
        tail(&log)
    );
    assert!(compactions >= 1, "no compaction\n{}", tail(&log));
    assert!(
        run.max_input <= PROXY_WINDOW as u64,
        "a request of {} tokens went over the window",
        run.max_input
    );
    assert!(
        run.prefix_changes as u64 <= compactions,
        "{} prefix changes for {compactions} compactions",
        run.prefix_changes
    );
    assert!(
        run.max_markers <= 4,
        "{} cache_control markers",
        run.max_markers
    );
    assert_eq!(run.steps_answered, steps().len(), "steps run");
    run
}

/// Runs `client` straight at the simulator; its figures.
fn direct(client: Client, command: impl Fn(&Scratch, &str) -> Command, label: &str) -> Run {
    let sim = Sim::start();
    let scratch = Scratch::new("direct");
    let (code, stdout, stderr) = run_client(command(&scratch, &sim.handle.base_url()));
    let run = Run::of(client, &sim);
    run.print(&format!("{label} direct"));
    assert_eq!(
        code,
        0,
        "{label} failed\nstdout:\n{stdout}\nstderr:\n{}",
        tail(&stderr)
    );
    assert_eq!(run.refused, 0, "requests the provider refused");
    assert_eq!(run.steps_answered, steps().len(), "steps run");
    drop(scratch);
    run
}

fn tail(text: &str) -> String {
    let start = text.len().saturating_sub(4_000);
    let start = (start..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    text[start..].to_owned()
}

#[test]
fn claude_code_on_its_default_model_is_compacted_and_keeps_its_cache() {
    let Some(bin) = client_bin("COMPACT_CLAUDE_BIN") else {
        return;
    };
    let direct_run = direct(
        Client::ClaudeCode,
        |scratch, url| claude(&bin, scratch, url, None),
        "claude code (default model)",
    );
    let proxied = through_the_proxy(
        Client::ClaudeCode,
        |scratch, url| claude(&bin, scratch, url, None),
        "claude code (default model)",
    );
    assert!(
        proxied.input < direct_run.input,
        "tokens sent through the proxy {} >= direct {}",
        proxied.input,
        direct_run.input
    );
}

#[test]
fn claude_code_on_an_older_model_is_compacted_and_keeps_its_cache() {
    let Some(bin) = client_bin("COMPACT_CLAUDE_BIN") else {
        return;
    };
    through_the_proxy(
        Client::ClaudeCode,
        |scratch, url| claude(&bin, scratch, url, Some("claude-sonnet-4-5")),
        "claude code (claude-sonnet-4-5)",
    );
}

#[test]
fn codex_is_compacted_and_keeps_its_cache() {
    let Some(bin) = client_bin("COMPACT_CODEX_BIN") else {
        return;
    };
    let direct_run = direct(
        Client::Codex,
        |scratch, url| codex(&bin, scratch, url),
        "codex",
    );
    let proxied = through_the_proxy(
        Client::Codex,
        |scratch, url| codex(&bin, scratch, url),
        "codex",
    );
    assert!(
        proxied.input < direct_run.input,
        "tokens sent through the proxy {} >= direct {}",
        proxied.input,
        direct_run.input
    );
}
