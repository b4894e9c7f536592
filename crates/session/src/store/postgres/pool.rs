//! The PostgreSQL store's connections: a small bounded pool, opened lazily, and closed where
//! closing is safe.
//!
//! A call takes an idle connection (the most recently used first), or opens one while fewer than
//! `pool_max_size` are open, or waits for one to come back (at most [`POOL_WAIT`]). The slot is
//! counted before connecting, so concurrent callers never open more than the maximum. A
//! connection the server closed (a restart, `idle_session_timeout`) is discarded; a call that
//! fails on a connection taken from the idle list which turns out dead is run once more on a
//! new connection, so a server restart between calls fails none of them. (The one ambiguous case,
//! a connection lost during `COMMIT`, is the same for every client; a repeated append then meets
//! the version it moved on itself and writes nothing, [`crate::StoreError::Conflict`].)
//!
//! A `postgres::Client` runs a Tokio runtime of its own and closes the connection by blocking on
//! it when dropped, which panics inside another runtime ("Cannot start a runtime from within a
//! runtime"): where a host drops its last reference to the store, as the proxy does when its
//! server stops. So connections are closed on a thread of their own, whoever drops them.

use super::backend;
use super::tls::{self, MakeRustls, SslMode};
use crate::store::StoreError;
use postgres::{Client, Config, NoTls};
use std::sync::{mpsc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long a call waits for a connection when all `pool_max_size` are in use: far longer than
/// any one call holds one (a transaction of one session), so reaching it means the database is
/// stuck, which the caller then hears about.
pub const POOL_WAIT: Duration = Duration::from_secs(30);

/// How long dropping the store waits for its connections to close: a `Terminate` message and the
/// server's goodbye take a round trip; an unreachable server is not waited for longer.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// How long the check that a failed connection is dead may take (an empty query).
const ALIVE_CHECK: Duration = Duration::from_secs(2);

/// Opens connections: the configuration and the TLS connector.
pub(super) struct Connector {
    pub config: Config,
    pub sslmode: SslMode,
    pub tls: Option<MakeRustls>,
}

impl Connector {
    fn connect(&self) -> Result<Client, StoreError> {
        let Some(tls) = &self.tls else {
            return self.config.connect(NoTls).map_err(backend);
        };
        match self.config.connect(tls.clone()) {
            Ok(client) => Ok(client),
            // libpq's `prefer`: a handshake that fails is tried again without TLS.
            Err(e) if self.sslmode == SslMode::Prefer && tls::is_handshake_failure(&e) => {
                let mut plain = self.config.clone();
                plain.ssl_mode(postgres::config::SslMode::Disable);
                plain.connect(NoTls).map_err(backend)
            }
            Err(e) => Err(backend(e)),
        }
    }
}

struct State {
    idle: Vec<Client>,
    /// Connections open: idle, in use, or being opened.
    open: usize,
}

/// At most `max` connections to one database.
pub(super) struct Pool {
    connector: Connector,
    max: usize,
    state: Mutex<State>,
    freed: Condvar,
}

/// A connection taken from the pool; given back (or discarded, when closed) when dropped.
pub(super) struct Slot<'p> {
    pool: &'p Pool,
    client: Option<Client>,
    /// Taken from the idle list (it may have died while it waited there).
    reused: bool,
}

impl Pool {
    pub fn new(connector: Connector, max: usize) -> Pool {
        Pool {
            connector,
            max: max.max(1),
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.connector.config
    }

    pub fn sslmode(&self) -> SslMode {
        self.connector.sslmode
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Connections open now (idle or in use).
    pub fn open(&self) -> usize {
        self.lock().open
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while the lock is held: the state is consistent even if poisoned.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle connection, or a new one while fewer than `max` are open; else waits.
    pub fn take(&self) -> Result<Slot<'_>, StoreError> {
        let deadline = Instant::now() + POOL_WAIT;
        let mut state = self.lock();
        loop {
            // (A connection that died while idle is found out by `run`.)
            if let Some(client) = state.idle.pop() {
                return Ok(Slot {
                    pool: self,
                    client: Some(client),
                    reused: true,
                });
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                let mut slot = Slot {
                    pool: self,
                    client: None,
                    reused: false,
                };
                // On failure the slot, dropped empty, gives its place back.
                slot.client = Some(self.connector.connect()?);
                return Ok(slot);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(StoreError::Backend(format!(
                    "postgres: all {} connections of the pool stayed busy for {} s (pool_max_size)",
                    self.max,
                    POOL_WAIT.as_secs()
                )));
            }
            state = self
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Runs `op` on a connection; once more on a new connection when it failed on an idle one
    /// that turns out dead.
    pub fn run<T>(
        &self,
        op: impl Fn(&mut Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut slot = self.take()?;
        let result = op(slot.client()?);
        match result {
            Err(StoreError::Backend(_)) if slot.reused && slot.is_dead() => {
                slot.reconnect()?;
                op(slot.client()?)
            }
            other => other,
        }
    }
}

impl Slot<'_> {
    pub fn client(&mut self) -> Result<&mut Client, StoreError> {
        self.client
            .as_mut()
            .ok_or_else(|| StoreError::Backend("postgres: no connection".to_owned()))
    }

    fn is_dead(&mut self) -> bool {
        self.client
            .as_mut()
            .is_none_or(|c| c.is_closed() || c.is_valid(ALIVE_CHECK).is_err())
    }

    fn reconnect(&mut self) -> Result<(), StoreError> {
        if let Some(dead) = self.client.take() {
            close_elsewhere(vec![dead]);
        }
        self.reused = false;
        self.client = Some(self.pool.connector.connect()?);
        Ok(())
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut state = self.pool.lock();
        match self.client.take() {
            Some(client) if !client.is_closed() => state.idle.push(client),
            closed => {
                state.open -= 1;
                drop(state);
                close_elsewhere(closed.into_iter().collect());
            }
        }
        self.pool.freed.notify_one();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let idle = std::mem::take(&mut self.lock().idle);
        close_elsewhere(idle);
    }
}

/// Closes `clients` on a thread of their own (see the module's documentation), waiting for it at
/// most [`CLOSE_WAIT`].
fn close_elsewhere(clients: Vec<Client>) {
    if clients.is_empty() {
        return;
    }
    let (give, receive) = mpsc::channel::<Vec<Client>>();
    let (done, closed) = mpsc::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("compact-pg-close".to_owned())
        .spawn(move || {
            drop(receive.recv());
            let _ = done.send(());
        });
    match spawned {
        Ok(_) => match give.send(clients) {
            Ok(()) => {
                let _ = closed.recv_timeout(CLOSE_WAIT);
            }
            // The thread is gone: leave the sockets to the process's end rather than panic here.
            Err(mpsc::SendError(clients)) => std::mem::forget(clients),
        },
        // No thread to be had (the process is at its limits): the same.
        Err(_) => std::mem::forget(clients),
    }
}
