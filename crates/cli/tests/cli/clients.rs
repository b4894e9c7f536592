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
use std::io::{BufReader, Read};
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
pub fn client_bin(var: &str) -> Option<PathBuf> {
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
        Sim::with_steps(steps())
    }

    fn with_steps(steps: Vec<String>) -> Sim {
        Sim::with(steps, 1_000_000)
    }

    /// The scripted agent with `steps` behind a model whose window is `window`.
    fn with(steps: Vec<String>, window: u64) -> Sim {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let config = SimConfig {
            window,
            agent: Some(AgentScript {
                trigger: TRIGGER.to_owned(),
                steps,
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
    /// The proxy for `window`, its sessions in `dir`, which is also its state directory (where
    /// `compactctl run` keeps outputs for the hooks that run in the clients).
    fn start(sim: &Sim, dir: &Path, window: usize) -> Proxy {
        let base = sim.handle.base_url();
        let mut child = Command::new(env!("CARGO_BIN_EXE_compactctl"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(["--openai-base-url", &base, "--anthropic-base-url", &base])
            .args(["--window", &window.to_string()])
            .arg("--store")
            .arg(format!("sqlite:{}", dir.join("sessions.db").display()))
            .env("XDG_STATE_HOME", dir)
            .env_remove("COMPACT_CONFIG")
            .env_remove("COMPACT_RUN_SESSION")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let addr = crate::support::listening_addr(&mut stderr, "client");
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

/// A JSON value with every `cache_control` key removed, and a message content of one text block
/// written as the string it stands for (Claude Code sends a message as the one marked block while
/// it is the newest, as a string after): what the provider caches, the prompt as the model reads
/// it, is the same.
fn without_markers(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| {
                    let v = without_markers(v);
                    let v = match (k.as_str(), &v) {
                        ("content", Value::Array(blocks)) => match blocks.as_slice() {
                            [only]
                                if only["type"] == "text"
                                    && only.as_object().is_some_and(|o| o.len() == 2) =>
                            {
                                only["text"].clone()
                            }
                            _ => v,
                        },
                        _ => v,
                    };
                    (k.clone(), v)
                })
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
        Run::of_steps(client, sim, steps().len())
    }

    fn of_steps(client: Client, sim: &Sim, steps: usize) -> Run {
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
        run.steps_answered = (0..steps)
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

/// The tokens of every request a run sent the provider (the clients' own summary calls
/// included) that it answered, and their price.
#[derive(Debug, Default)]
struct Bill {
    requests: usize,
    input: u64,
    cached: u64,
    cache_creation: u64,
    output: u64,
}

impl Bill {
    fn of(client: Client, sim: &Sim) -> Bill {
        let mut bill = Bill::default();
        for r in sim.handle.requests() {
            let Some(u) = r.usage.filter(|_| r.api == client.api()) else {
                continue;
            };
            bill.requests += 1;
            bill.input += u.input;
            bill.cached += u.cached;
            bill.cache_creation += u.cache_creation;
            bill.output += u.output;
        }
        bill
    }

    /// As [`Run::cost`].
    fn cost(&self) -> f64 {
        Run {
            input: self.input,
            cached: self.cached,
            cache_creation: self.cache_creation,
            output: self.output,
            ..Run::default()
        }
        .cost()
    }

    fn line(&self, label: &str) -> String {
        format!(
            "{label}: {} requests, input {} (cached {}, written {}), output {}, cost ${:.4}",
            self.requests,
            self.input,
            self.cached,
            self.cache_creation,
            self.output,
            self.cost()
        )
    }
}

/// A session that needs compaction: the model's window is [`PROXY_WINDOW`]. The client runs the
/// task straight at it (compacting, or clearing, on its own as it does), then through the proxy
/// told that window; both must finish the task, and the proxy's run must cost less.
fn cost_when_compaction_is_needed(
    client: Client,
    direct: impl Fn(&Scratch, &str) -> Command,
    proxied: impl Fn(&Scratch, &str) -> Command,
    label: &str,
) {
    let mut bills = Vec::new();
    for through_proxy in [false, true] {
        let sim = Sim::with(steps(), PROXY_WINDOW as u64);
        let scratch = Scratch::new("window");
        let proxy = through_proxy.then(|| Proxy::start(&sim, &scratch.path("state"), PROXY_WINDOW));
        let command = match &proxy {
            Some(p) => proxied(&scratch, &p.url()),
            None => direct(&scratch, &sim.handle.base_url()),
        };
        let (code, stdout, stderr) = run_client(command);
        let log = proxy.map(Proxy::stop).unwrap_or_default();
        let bill = Bill::of(client, &sim);
        let how = if through_proxy {
            "through the proxy"
        } else {
            "direct"
        };
        eprintln!(
            "{}",
            bill.line(&format!("{label}, window {PROXY_WINDOW}, {how}"))
        );
        assert_eq!(
            code,
            0,
            "{label} {how}\nstdout:\n{}\nstderr:\n{}\nproxy:\n{}",
            tail(&stdout),
            tail(&stderr),
            tail(&log)
        );
        assert!(stdout.contains(DONE), "{label} {how}: {}", tail(&stdout));
        bills.push(bill);
    }
    assert!(
        bills[1].cost() < bills[0].cost(),
        "{label}: through the proxy ${:.4} >= direct ${:.4}",
        bills[1].cost(),
        bills[0].cost()
    );
}

/// `PATH` with the built `compactctl` first: the markers a model sees name `compactctl recall`,
/// which a user has on `PATH`.
fn path_with_compactctl() -> std::ffi::OsString {
    let exe = Path::new(env!("CARGO_BIN_EXE_compactctl"));
    let mut dirs = vec![exe.parent().unwrap().to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// Claude Code headless, pointed at `base_url`, in `project` with its own home.
fn claude(bin: &Path, scratch: &Scratch, base_url: &str, model: Option<&str>) -> Command {
    let mut cmd = claude_prompt(
        bin,
        scratch,
        base_url,
        &format!("{TRIGGER}, one command at a time."),
    );
    if let Some(model) = model {
        cmd.args(["--model", model]);
    }
    cmd
}

/// Claude Code headless on `prompt` (a slash command too).
fn claude_prompt(bin: &Path, scratch: &Scratch, base_url: &str, prompt: &str) -> Command {
    let mut cmd = claude_env(bin, scratch, base_url);
    cmd.args(["-p", prompt])
        .args(["--dangerously-skip-permissions", "--output-format", "json"]);
    cmd
}

/// Claude Code in the scratch project, with its own home and state, pointed at `base_url`.
fn claude_env(bin: &Path, scratch: &Scratch, base_url: &str) -> Command {
    let mut cmd = Command::new(bin);
    cmd.current_dir(scratch.path("project"))
        .env_clear()
        .env("PATH", path_with_compactctl())
        .env("HOME", scratch.path("home"))
        .env("XDG_STATE_HOME", scratch.path("state"))
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-ant-test-clients")
        .env("IS_SANDBOX", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    cmd
}

/// Runs a Claude Code command to its end and fails with its output (and the first messages of any
/// request the provider refused) unless it succeeded; its standard output.
fn claude_ok(sim: &Sim, cmd: Command) -> String {
    let (code, stdout, stderr) = run_client(cmd);
    if code != 0 {
        for r in sim.handle.requests().iter().filter(|r| r.status == 400) {
            let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
            for (i, m) in messages.iter().enumerate().take(4) {
                let shown: String = m.to_string().chars().take(400).collect();
                eprintln!("refused, message {i}: {shown}");
            }
        }
    }
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{}", tail(&stderr));
    stdout
}

/// The Codex CLI headless (`codex exec`), its provider `base_url`, with its own `CODEX_HOME`.
fn codex(bin: &Path, scratch: &Scratch, base_url: &str) -> Command {
    codex_with(bin, scratch, base_url, None)
}

/// [`codex`], told the model's window when given (it then compacts on its own before it).
fn codex_with(bin: &Path, scratch: &Scratch, base_url: &str, window: Option<usize>) -> Command {
    let home = scratch.path("codex-home");
    let limits = window.map_or(String::new(), |w| {
        format!(
            "model_context_window = {w}\nmodel_auto_compact_token_limit = {}\n",
            w * 9 / 10
        )
    });
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"sim\"\n{limits}\n[model_providers.sim]\nname = \"sim\"\n\
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
    through_the_proxy_at(client, command, label, PROXY_WINDOW)
}

/// [`through_the_proxy`] with another window.
fn through_the_proxy_at(
    client: Client,
    command: impl Fn(&Scratch, &str) -> Command,
    label: &str,
    window: usize,
) -> Run {
    let sim = Sim::start();
    let scratch = Scratch::new("proxy");
    let proxy = Proxy::start(&sim, &scratch.path("state"), window);
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
        run.max_input <= window as u64,
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
    cost_when_compaction_is_needed(
        Client::ClaudeCode,
        |scratch, url| claude(&bin, scratch, url, None),
        |scratch, url| claude(&bin, scratch, url, None),
        "claude code (default model)",
    );
}

#[test]
fn claude_code_on_an_older_model_is_compacted_and_keeps_its_cache() {
    let Some(bin) = client_bin("COMPACT_CLAUDE_BIN") else {
        return;
    };
    // This model's fixed prompt (system, tools) is about 18k tokens: a window twice that leaves
    // compaction room to work in.
    let run = through_the_proxy_at(
        Client::ClaudeCode,
        |scratch, url| claude(&bin, scratch, url, Some("claude-sonnet-4-5")),
        "claude code (claude-sonnet-4-5)",
        48_000,
    );
    assert!(
        run.prefix_changes <= 4,
        "{} prefix changes",
        run.prefix_changes
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
    cost_when_compaction_is_needed(
        Client::Codex,
        |scratch, url| codex_with(&bin, scratch, url, Some(PROXY_WINDOW)),
        |scratch, url| codex(&bin, scratch, url),
        "codex",
    );
}

/// The steps of the hooks test: an output `compactctl run` cuts, its recall through the shell
/// before any compaction, outputs that fill the window, then an item the checkpoint cites and a run
/// output recalled
/// through the proxy's `compact_recall`.
fn hook_steps() -> Vec<String> {
    let mut steps = vec![
        "seq 1 900".to_owned(),
        compact_sim::agent::RECALL_RUN_STEP.to_owned(),
    ];
    steps.extend((0..16).map(|i| format!("seq {} {}", i * 10_000, i * 10_000 + 700)));
    steps.extend((16..22).map(|i| format!("seq {} {}", i * 10_000, i * 10_000 + 700)));
    steps.push("seq 300000 300900".to_owned());
    steps.push(compact_sim::agent::RECALL_CITED_STEP.to_owned());
    steps.push(compact_sim::agent::RECALL_RUN_STEP.to_owned());
    steps
}

/// The text of the tool result answering the scripted agent's step `step` in the first request
/// the simulator received with it (the proxy's detours included): as the model first read it,
/// before any compaction.
fn step_result(sim: &Sim, step: usize) -> Option<String> {
    let marker = format!("{}{step}_", compact_sim::agent::STEP_MARKER);
    sim.handle.requests().iter().find_map(|r| {
        let messages = r.body["messages"].as_array()?;
        messages.iter().find_map(|m| {
            m["content"].as_array()?.iter().find_map(|b| {
                let id = b["tool_use_id"].as_str()?;
                if b["type"] != "tool_result" || !id.contains(&marker) {
                    return None;
                }
                Some(match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            })
        })
    })
}

#[test]
fn claude_code_runs_compacts_hooks_and_recalls_from_every_marker() {
    let Some(bin) = client_bin("COMPACT_CLAUDE_BIN") else {
        return;
    };
    let scratch = Scratch::new("hooks");
    let (home, state) = (scratch.path("home"), scratch.path("state"));
    let installed = Command::new(env!("CARGO_BIN_EXE_compactctl"))
        .args(["install", "claude-code", "--user", "--run-hook"])
        .env("HOME", &home)
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let steps = hook_steps();
    let sim = Sim::with_steps(steps.clone());
    let window = 30_000;
    let proxy = Proxy::start(&sim, &state, window);

    // The task, through the proxy, with the PreToolUse hook wrapping Bash.
    let stdout = claude_ok(&sim, claude(&bin, &scratch, &proxy.url(), None));
    assert!(stdout.contains(DONE), "{}", tail(&stdout));
    let session = serde_json::from_str::<Value>(&stdout).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = Run::of_steps(Client::ClaudeCode, &sim, steps.len());
    run.print("claude code with the hooks");
    assert_eq!(run.refused, 0);
    assert_eq!(run.steps_answered, steps.len());
    assert!(
        run.max_input <= window as u64,
        "{} tokens\n{}",
        run.max_input,
        tail(&http_get(&proxy.addr, "/metrics"))
    );
    // The first output went through `compactctl run`: cut, with a marker naming its id...
    let cut = step_result(&sim, 0).expect("the first step's output");
    assert!(
        cut.contains("compactctl recall "),
        "not wrapped: {}",
        tail(&cut)
    );
    assert!(cut.len() < 10_000, "{} bytes", cut.len());
    // ...which the shell gave back whole before any compaction...
    let through_cli = step_result(&sim, 1).expect("the recall through the shell");
    assert!(
        through_cli.contains("\n1\n2\n3\n") || through_cli.starts_with("1\n2\n3\n"),
        "{}",
        tail(&through_cli)
    );
    assert!(through_cli.contains("\n900"), "{}", tail(&through_cli));
    // ...and the proxy's tool after it: a compaction's stub, then the run output again.
    let compactions = proxy.metric("compact_proxy_compactions_total", "");
    assert!(compactions >= 1);
    assert!(
        proxy.metric("compact_recall_calls_total", "found") >= 2,
        "{:?}\n{:?}\n{}",
        step_result(&sim, steps.len() - 2).map(|t| tail(&t)),
        step_result(&sim, steps.len() - 1).map(|t| tail(&t)),
        tail(&http_get(&proxy.addr, "/metrics"))
    );
    assert_eq!(proxy.metric("compact_recall_calls_total", "not_found"), 0);
    for step in [steps.len() - 2, steps.len() - 1] {
        let through_tool = step_result(&sim, step).expect("the recalls through the tool");
        assert!(
            !through_tool.contains("compact:ref") && through_tool.lines().count() > 100,
            "{}",
            tail(&through_tool)
        );
    }

    // The MCP server the install added (user scope) is one Claude Code connects to.
    let mut list = claude_env(&bin, &scratch, &proxy.url());
    list.args(["mcp", "list"]);
    let listed = claude_ok(&sim, list);
    let line = listed
        .lines()
        .find(|l| l.starts_with("compact:"))
        .unwrap_or_else(|| panic!("no compact server in:\n{listed}"));
    assert!(line.contains("mcp") && line.contains("Connected"), "{line}");

    // Claude Code's own compaction of the resumed session: the PreCompact and SessionStart hooks
    // run, and the next request carries Compact's checkpoint of what it dropped.
    let mut compact = claude_prompt(&bin, &scratch, &proxy.url(), "/compact");
    compact.args(["--resume", &session]);
    claude_ok(&sim, compact);
    let before = sim.handle.requests().len();
    let mut next = claude_prompt(&bin, &scratch, &proxy.url(), "What did the task find?");
    next.args(["--resume", &session]);
    claude_ok(&sim, next);
    let after: Vec<_> = sim.handle.requests()[before..]
        .iter()
        .filter(|r| r.api == Api::Messages)
        .map(|r| String::from_utf8_lossy(&r.raw).into_owned())
        .collect();
    assert!(
        after
            .iter()
            .any(|t| t.contains("Compact: details the compaction summary may have left out")),
        "no checkpoint from the SessionStart hook in {} requests",
        after.len()
    );
    let log = proxy.stop();
    assert!(!log.contains("\"level\":\"warn\""), "{}", tail(&log));
}
