//! The tested deployment of issue 41: `compactctl serve` replicas on one PostgreSQL store, agents'
//! sessions in parallel, each turn landing on whichever replica the client or the balancer picks.
//! Three ways of picking: nginx's plain round-robin in front of the replicas, the client choosing a
//! replica at random (seeded), and round-robin again while one replica is killed (SIGKILL) and
//! restarted mid-run (the client retries a turn whose connection broke, as SDKs do).
//!
//! The provider simulator enforces the same window as the replicas, with the providers' real
//! overflow errors. What must hold, whatever replica serves which turn: no request passed through
//! uncompacted (no `x-compact-passthrough` answer, no `compact_passthrough_total` count), no
//! request over the window reaching the upstream, no overflow error returned to the client, every
//! turn recorded once (the calls logged equal the turns answered) and every session's export equal
//! to the last history its client sent, and every replica exiting 0 on SIGTERM at the end.
//!
//! Needs PostgreSQL and nginx (`eval "$(scripts/services start)"` starts the one and installs the
//! other; without them the tests skip, unless `COMPACT_REQUIRE_SERVICES` or `CI` is set). Runs
//! reduced here (4 sessions of 12 turns, 2 replicas); `scripts/scaleout` runs it at full size (10
//! sessions of 40 turns, 3 replicas: `COMPACT_SCALEOUT_FULL=1`).

mod agent;
mod deploy;
mod http;
mod report;

use agent::{Agent, Wire};
use deploy::Deployment;
use report::{canonical, cut, Report};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The window of the replicas and of the simulated model: small, so that compaction is due every
/// few turns.
const WINDOW: u64 = 8_000;
/// Set to 1: the full size of the "done when".
const FULL_VAR: &str = "COMPACT_SCALEOUT_FULL";
/// Attempts of a turn whose connection failed (or that the balancer answered 502-504), as SDKs
/// retry.
const ATTEMPTS: u32 = 8;
/// Pause before a retry, times the attempt's number.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// How long a killed replica stays down before it is started again.
const DOWN_FOR: Duration = Duration::from_millis(300);

/// How much runs.
#[derive(Debug, Clone, Copy)]
struct Size {
    sessions: usize,
    turns: usize,
    replicas: usize,
}

impl Size {
    fn from_env() -> Size {
        if std::env::var(FULL_VAR).is_ok_and(|v| v == "1") {
            Size {
                sessions: 10,
                turns: 40,
                replicas: 3,
            }
        } else {
            Size {
                sessions: 4,
                turns: 12,
                replicas: 2,
            }
        }
    }
}

/// Who picks the replica of each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    /// nginx, round-robin.
    Balancer,
    /// The client, at random (seeded per session).
    Random,
}

/// One way of running the sessions.
#[derive(Debug, Clone, Copy)]
struct Mode {
    name: &'static str,
    choice: Choice,
    /// One replica is killed and restarted when half the turns are done.
    kill: bool,
}

#[test]
fn scaleout_roundrobin_through_nginx() {
    deployment_test(Mode {
        name: "roundrobin",
        choice: Choice::Balancer,
        kill: false,
    });
}

#[test]
fn scaleout_random_replica_choice() {
    deployment_test(Mode {
        name: "random",
        choice: Choice::Random,
        kill: false,
    });
}

#[test]
fn scaleout_killed_replica_restarted_mid_run() {
    deployment_test(Mode {
        name: "killed",
        choice: Choice::Balancer,
        kill: true,
    });
}

/// The PostgreSQL URL and the nginx binary, when both are there. Missing: the test skips, saying
/// so, unless `COMPACT_REQUIRE_SERVICES` (or `CI`) is set.
fn services() -> Option<(String, String)> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (postgres, nginx) = (var("COMPACT_TEST_POSTGRES_URL"), var("COMPACT_TEST_NGINX"));
    if let (Some(p), Some(n)) = (&postgres, &nginx) {
        return Some((p.clone(), n.clone()));
    }
    let missing = match (postgres, nginx) {
        (None, None) => "COMPACT_TEST_POSTGRES_URL and COMPACT_TEST_NGINX are",
        (None, _) => "COMPACT_TEST_POSTGRES_URL is",
        _ => "COMPACT_TEST_NGINX is",
    };
    let required = std::env::var_os("COMPACT_REQUIRE_SERVICES").is_some_and(|v| v != "0")
        || std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !required,
        "PostgreSQL and nginx are required (COMPACT_REQUIRE_SERVICES or CI is set) but {missing} \
         not set: run `eval \"$(scripts/services start)\"` first"
    );
    println!("{missing} not set: skipping (`eval \"$(scripts/services start)\"` sets them)");
    None
}

/// What the shared parts of a run are: where requests go, and how far the sessions got.
struct Run {
    mode: Mode,
    size: Size,
    balancer: String,
    replicas: Vec<String>,
    /// Turns answered so far, all sessions together.
    answered: AtomicUsize,
    /// Sessions finished (or stopped early).
    finished: AtomicUsize,
}

/// What one session's client saw.
#[derive(Debug)]
struct Session {
    id: String,
    wire: Wire,
    /// Turns answered 200.
    answered: usize,
    /// Requests sent, retries included.
    attempts: usize,
    /// Pass-through answers: (turn, reason).
    passthrough: Vec<(usize, String)>,
    /// Overflow errors returned to the client.
    overflows: usize,
    /// What ended the session before its last turn.
    stopped: Option<String>,
    /// The history of the last request a replica answered (the system prompt first).
    sent: Vec<String>,
}

fn deployment_test(mode: Mode) {
    let Some((postgres, nginx)) = services() else {
        return;
    };
    let size = Size::from_env();
    let started = Instant::now();
    let mut deployment = Deployment::start(
        mode.name,
        size.replicas,
        (&postgres, &nginx),
        compact_sim::SimConfig {
            window: WINDOW,
            validate: true,
            agent: Some(compact_sim::AgentScript {
                trigger: agent::TRIGGER.to_owned(),
                steps: agent::steps(size.turns + 8),
                done: agent::DONE.to_owned(),
            }),
            ..compact_sim::SimConfig::default()
        },
    );
    let (sessions, killed) = run_sessions(&mut deployment, mode, size);
    let elapsed = started.elapsed();

    let report = Report::gather(size, &sessions, &deployment);
    let codes = deployment.terminate();
    // Connections nginx could not make or that broke (a killed replica): each moved on to the
    // next replica or answered 502.
    let balancer_errors = deployment.nginx.error_log().matches("[error]").count();
    let mut failures = report.failures(&sessions, mode);
    let why: Vec<String> = deployment.logged("preflight_failed");
    if !why.is_empty() {
        let shown: Vec<&str> = why.iter().take(5).map(String::as_str).collect();
        failures.push(format!(
            "{} preflights failed, as the replicas logged them: {}",
            why.len(),
            shown.join(" | ")
        ));
    }
    if mode.kill && !killed {
        failures.push("no replica was killed: the sessions ended before half the turns".into());
    }
    if codes.iter().any(|c| c != "0") {
        failures.push(format!(
            "replicas did not exit 0 on SIGTERM: exit codes {codes:?}"
        ));
    }
    let summary = format!(
        "scaleout {}: {} sessions x {} turns, {} replicas, {:.1} s: {}; {balancer_errors} errors \
         in nginx's log; SIGTERM exit codes {codes:?}",
        mode.name,
        size.sessions,
        size.turns,
        size.replicas,
        elapsed.as_secs_f64(),
        report.line()
    );
    eprintln!("{summary}");
    if failures.is_empty() {
        deployment.clean_up();
        return;
    }
    panic!(
        "{summary}\n- {}\n(replica and nginx logs in {}; the store is schema {})",
        failures.join("\n- "),
        deployment.dir.display(),
        deployment.schema
    );
}

/// Runs the sessions in parallel, one thread each, and in the `kill` mode kills and restarts a
/// replica once half the turns are answered: what each client saw, and whether the kill happened.
fn run_sessions(deployment: &mut Deployment, mode: Mode, size: Size) -> (Vec<Session>, bool) {
    let run_state = Run {
        mode,
        size,
        balancer: deployment.nginx.addr.clone(),
        replicas: deployment.replicas.iter().map(|r| r.addr.clone()).collect(),
        answered: AtomicUsize::new(0),
        finished: AtomicUsize::new(0),
    };
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..size.sessions)
            .map(|i| {
                let run_state = &run_state;
                scope.spawn(move || {
                    let session = converse(run_state, i);
                    run_state.finished.fetch_add(1, Ordering::SeqCst);
                    session
                })
            })
            .collect();
        let mut killed = false;
        if mode.kill {
            let half = size.sessions * size.turns / 2;
            let running = || run_state.finished.load(Ordering::SeqCst) < size.sessions;
            while run_state.answered.load(Ordering::SeqCst) < half && running() {
                std::thread::sleep(Duration::from_millis(10));
            }
            if running() {
                deployment.kill_and_restart_one(DOWN_FOR);
                killed = true;
            }
        }
        let sessions = threads.into_iter().map(|t| t.join().unwrap()).collect();
        (sessions, killed)
    })
}

/// Runs session `i` to its last turn (or until a turn fails for good).
fn converse(run_state: &Run, i: usize) -> Session {
    let wire = if i.is_multiple_of(2) {
        Wire::Chat
    } else {
        Wire::Messages
    };
    let id = format!("{}-{i}", run_state.mode.name);
    let mut agent = Agent::new(wire, &id, i);
    let mut rng = Rng(0x5ca1_e0a7 ^ (i as u64) << 16);
    let mut out = Session {
        id: id.clone(),
        wire,
        answered: 0,
        attempts: 0,
        passthrough: Vec::new(),
        overflows: 0,
        stopped: None,
        sent: Vec::new(),
    };
    for turn in 0..run_state.size.turns {
        let stream = (turn + i) % 3 == 1;
        let body = serde_json::to_vec(&agent.request(stream)).unwrap();
        let headers = agent.headers();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut last_error = String::new();
        let mut answer = None;
        for attempt in 1..=ATTEMPTS {
            let addr = match run_state.mode.choice {
                Choice::Balancer => run_state.balancer.as_str(),
                Choice::Random => {
                    let n = run_state.replicas.len() as u64;
                    run_state.replicas[(rng.next() % n) as usize].as_str()
                }
            };
            out.attempts += 1;
            match http::post(addr, wire.path(), &headers, &body) {
                Ok(r) if !(502..=504).contains(&r.status) => {
                    answer = Some(r);
                    break;
                }
                Ok(r) => last_error = format!("{} from {addr}: {}", r.status, r.text()),
                Err(e) => last_error = format!("{addr}: {e}"),
            }
            std::thread::sleep(RETRY_PAUSE * attempt);
        }
        let Some(response) = answer else {
            out.stopped = Some(format!(
                "turn {turn}: no answer in {ATTEMPTS} attempts: {last_error}"
            ));
            break;
        };
        out.sent = canonical(&agent.request(stream), wire);
        if let Some(reason) = response.header(PASSTHROUGH) {
            out.passthrough.push((turn, reason.to_owned()));
        }
        if response.status != 200 {
            let text = response.text();
            if is_overflow(&text) {
                out.overflows += 1;
            }
            out.stopped = Some(format!(
                "turn {turn}: {} {}",
                response.status,
                cut(&text, 300)
            ));
            break;
        }
        match agent.read(&response.body, stream) {
            Ok(reply) => {
                out.answered += 1;
                run_state.answered.fetch_add(1, Ordering::SeqCst);
                if turn + 1 < run_state.size.turns {
                    agent.answer(turn, reply);
                }
            }
            Err(e) => {
                out.stopped = Some(format!("turn {turn}: {}", cut(&e, 300)));
                break;
            }
        }
    }
    out
}

/// The proxy's pass-through header.
const PASSTHROUGH: &str = "x-compact-passthrough";

/// An overflow error as the providers word it.
fn is_overflow(body: &str) -> bool {
    [
        "context_length_exceeded",
        "prompt is too long",
        "exceed context limit",
        "maximum context length",
    ]
    .iter()
    .any(|m| body.contains(m))
}

/// A small seeded generator (splitmix64): the random replica choice repeats run after run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
