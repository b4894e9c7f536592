//! The deployment under test: a fresh PostgreSQL schema, the provider simulator enforcing the
//! window (served in-process), `compactctl serve` replicas on that one store, and nginx in front of
//! them with plain round-robin, each a process of its own on 127.0.0.1, stopped when dropped.

use super::http;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a replica may take to drain and exit after SIGTERM before it counts as hung.
const STOP_WAIT: Duration = Duration::from_secs(30);

/// Runs `sql` on the database at `url` with `psql` (Debian's `postgresql` puts it on `PATH`).
pub fn psql(url: &str, sql: &str) {
    let out = Command::new("psql")
        .args([url, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run psql ({e}): scripts/services installs PostgreSQL's client")
        });
    assert!(
        out.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A new empty schema in the test database, and the store URL whose connections work in it.
pub fn fresh_schema(base: &str, name: &str) -> (String, String) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!("scaleout_{name}_{}_{nanos}", std::process::id());
    psql(base, &format!("CREATE SCHEMA {schema}"));
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
    (schema, url)
}

/// Everything a run needs, started in order: the schema, the simulator, the replicas, nginx.
pub struct Deployment {
    /// Where nginx and the logs live.
    pub dir: PathBuf,
    /// The test database's URL, and the schema the store lives in.
    pub postgres: String,
    pub schema: String,
    /// The replicas' store URL.
    pub store: String,
    pub sim: compact_sim::SimHandle,
    _sim_runtime: tokio::runtime::Runtime,
    pub replicas: Vec<Replica>,
    pub nginx: Nginx,
    window: u64,
}

impl Deployment {
    /// Starts `replicas` replicas of window `sim.window` and nginx in front of them, on a schema
    /// named after `name`.
    pub fn start(
        name: &str,
        replicas: usize,
        (postgres, nginx_bin): (&str, &str),
        sim: compact_sim::SimConfig,
    ) -> Deployment {
        let dir = crate::support::temp_dir(&format!("scaleout-{name}"));
        let (schema, store) = fresh_schema(postgres, name);
        let window = sim.window;
        let (runtime, sim) = crate::support::simulator(sim);
        let replicas: Vec<Replica> = (0..replicas)
            .map(|_| Replica::start("127.0.0.1:0", &store, &sim.base_url(), window))
            .collect();
        let addrs: Vec<String> = replicas.iter().map(|r| r.addr.clone()).collect();
        let nginx = Nginx::start(nginx_bin, &dir, &addrs);
        Deployment {
            dir,
            postgres: postgres.to_owned(),
            schema,
            store,
            sim,
            _sim_runtime: runtime,
            replicas,
            nginx,
            window,
        }
    }

    /// Kills the last replica (SIGKILL) and starts it again on its address after `down_for`.
    pub fn kill_and_restart_one(&mut self, down_for: Duration) {
        let upstream = self.sim.base_url();
        if let Some(victim) = self.replicas.last_mut() {
            victim.kill_and_restart(down_for, &self.store, &upstream, self.window);
        }
    }

    /// Stops every replica with SIGTERM and writes their logs into [`Deployment::dir`]: each one's
    /// exit code (or how it ended otherwise).
    pub fn terminate(&mut self) -> Vec<String> {
        let mut codes = Vec::new();
        for (i, r) in self.replicas.iter_mut().enumerate() {
            codes.push(match r.terminate() {
                Some(status) => status
                    .code()
                    .map_or_else(|| status.to_string(), |c| c.to_string()),
                None => format!("still running {}s after SIGTERM", STOP_WAIT.as_secs()),
            });
            std::fs::write(self.dir.join(format!("replica-{i}.log")), r.log()).unwrap();
        }
        codes
    }

    /// The lines of the replicas' logs that report `event` (`preflight_failed`: why a request was
    /// passed through).
    pub fn logged(&self, event: &str) -> Vec<String> {
        let needle = format!("\"event\":\"{event}\"");
        self.replicas
            .iter()
            .flat_map(|r| {
                r.log()
                    .lines()
                    .filter(|l| l.contains(&needle))
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Removes the schema and the directory (after a run that passed).
    pub fn clean_up(self) {
        psql(
            &self.postgres,
            &format!("DROP SCHEMA {} CASCADE", self.schema),
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One `compactctl serve` process and everything it wrote on standard error.
pub struct Replica {
    pub addr: String,
    child: Option<Child>,
    log: Arc<Mutex<String>>,
    /// `/metrics` as read just before the replica was killed (its counters die with it).
    pub metrics_before_kill: Vec<String>,
}

impl Replica {
    /// Starts a replica listening on `listen` (`127.0.0.1:0`: a free port) for `upstream`.
    fn start(listen: &str, store: &str, upstream: &str, window: u64) -> Replica {
        let mut replica = Replica {
            addr: listen.to_owned(),
            child: None,
            log: Arc::default(),
            metrics_before_kill: Vec::new(),
        };
        replica.spawn(store, upstream, window);
        replica
    }

    fn spawn(&mut self, store: &str, upstream: &str, window: u64) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_compactctl"))
            .args(["serve", "--listen", &self.addr, "--store", store])
            .args(["--window", &window.to_string()])
            .args([
                "--openai-base-url",
                upstream,
                "--anthropic-base-url",
                upstream,
            ])
            .env_remove("COMPACT_CONFIG")
            .env_remove("COMPACT_ADMIN_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting compactctl serve");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let listening: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            panic!("compactctl serve did not start ({e}): {line}{rest}")
        });
        self.addr = listening["addr"].as_str().unwrap().to_owned();
        let log = Arc::clone(&self.log);
        log.lock().unwrap().push_str(&line);
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let mut log = log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        self.child = Some(child);
    }

    /// SIGKILL, `down_for` without it, then a new process on the same address and store.
    fn kill_and_restart(&mut self, down_for: Duration, store: &str, upstream: &str, window: u64) {
        self.metrics_before_kill.push(self.metrics());
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.log
            .lock()
            .unwrap()
            .push_str("--- killed (SIGKILL) ---\n");
        std::thread::sleep(down_for);
        self.spawn(store, upstream, window);
    }

    /// `/metrics` as text (empty when it cannot be read).
    pub fn metrics(&self) -> String {
        http::get(&self.addr, "/metrics").map_or_else(|_| String::new(), |r| r.text())
    }

    /// The log so far.
    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// SIGTERM, then the exit status (`None`: still running after [`STOP_WAIT`], then killed).
    fn terminate(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let started = Instant::now();
        while started.elapsed() < STOP_WAIT {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// nginx as the load balancer: its own configuration, pid file, temporary directories and logs in
/// `dir`, one process (`master_process off`) in the foreground, as the current user.
pub struct Nginx {
    pub addr: String,
    dir: PathBuf,
    child: Child,
}

impl Nginx {
    /// Starts nginx on a free port of 127.0.0.1, balancing over `upstreams` in turn.
    fn start(bin: &str, dir: &Path, upstreams: &[String]) -> Nginx {
        let port = free_port();
        let servers: String = upstreams
            .iter()
            // A replica that refused a connection is tried again a second later (it may be
            // restarting), not the default ten.
            .map(|a| format!("    server {a} max_fails=1 fail_timeout=1s;\n"))
            .collect();
        let d = dir.display();
        let config = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log info;\nevents {{ worker_connections 1024; }}\n\
             http {{\n  access_log {d}/access.log;\n  client_body_temp_path {d}/client_body;\n\
             \x20 proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
             \x20 uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             \x20 client_max_body_size 64m;\n  upstream compact {{\n{servers}  }}\n\
             \x20 server {{\n    listen 127.0.0.1:{port};\n    location / {{\n\
             \x20     proxy_pass http://compact;\n      proxy_http_version 1.1;\n\
             \x20     proxy_set_header Connection \"\";\n      proxy_buffering off;\n\
             \x20     proxy_next_upstream error timeout;\n      proxy_read_timeout 300s;\n\
             \x20   }}\n  }}\n}}\n"
        );
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, config).unwrap();
        let mut child = Command::new(bin)
            .arg("-p")
            .arg(dir)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {bin}: {e}"));
        let addr = format!("127.0.0.1:{port}");
        let started = Instant::now();
        while std::net::TcpStream::connect(&addr).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
                panic!("nginx exited ({status}):\n{log}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "nginx did not listen on {addr}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nginx {
            addr,
            dir: dir.to_owned(),
            child,
        }
    }

    /// Its error log (connection failures and retries on the next upstream are logged there).
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port of 127.0.0.1 free right now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
