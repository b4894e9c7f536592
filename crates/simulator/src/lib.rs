//! A loopback LLM provider simulator for tests: it speaks OpenAI Chat Completions
//! (`/v1/chat/completions`), OpenAI Responses (`/v1/responses`) and Anthropic Messages (`/v1/messages`,
//! `/v1/messages/count_tokens`), streaming (SSE, with the real event shapes) and not.
//!
//! It counts input tokens with the real tokenizer (`compact_core`'s counter, `o200k_base` by default),
//! enforces a context window with the providers' exact error bodies and statuses, reports usage like
//! the real APIs (cached tokens are the common prefix with the previous request to the same endpoint),
//! returns deterministic or scripted replies (including tool calls), injects faults (queued, or per
//! request with the `x-sim-fault` header) and records every request. A scripted model can recall
//! what a compaction moved out: [`ScriptedReply::recall_stub`] calls `compact_recall` on the first
//! `[compact:ref <id>]` stub of the request it answers. Run as a process
//! (`compact-sim`), it is scripted over HTTP through the `/sim/` control paths (see `control.rs`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), compact_sim::SimError> {
//! use compact_sim::{Fault, ScriptedReply, SimConfig, Simulator};
//! let sim = Simulator::spawn(SimConfig::with_window(4_096)).await?;
//! sim.push_reply(ScriptedReply::text("hello"));
//! sim.push_fault(Fault::ServerError);
//! println!("OpenAI base URL: {}", sim.openai_base_url());
//! assert!(sim.requests().is_empty());
//! # Ok(()) }
//! ```

pub mod agent;
mod anthropic;
mod body;
pub mod compaction;
pub mod config;
mod control;
mod count;
pub mod fault;
mod openai;
pub mod record;
pub mod reply;
pub mod script;
mod server;

pub use agent::AgentScript;
pub use config::{CacheRule, ChatOverflowWording, SimConfig};
pub use control::agent_script;
pub use fault::Fault;
pub use record::{Api, RecordedRequest};
pub use script::{ScriptedReply, ScriptedToolCall, RECALL_TOOL, STUB_ID};

use server::{lock, State};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Binding the listening socket failed.
    #[error("cannot bind simulator to {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
}

/// Entry point: [`Simulator::spawn`] starts a server on the current tokio runtime.
#[derive(Debug)]
pub struct Simulator;

impl Simulator {
    /// Binds `config.bind` and serves in the background until the handle is dropped.
    pub async fn spawn(config: SimConfig) -> Result<SimHandle, SimError> {
        let addr = config.bind;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| SimError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| SimError::Bind { addr, source })?;
        let state = Arc::new(State::new(config));
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&state)));
        Ok(SimHandle {
            addr: local,
            state,
            task,
        })
    }
}

/// Serves until the handle is dropped (which aborts this task), through the one server loop
/// (`compact_net::server`): an accept error is retried after a pause, not in a tight loop.
async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    // A simulated reset surfaces as a service error: the connection is dropped unanswered.
    let service = hyper::service::service_fn(move |req| server::handle(Arc::clone(&state), req));
    compact_net::server::serve(
        listener,
        service,
        &compact_net::server::ServeOptions::default(),
        std::future::pending(),
    )
    .await;
}

/// A running simulator. Dropping it stops accepting connections.
#[derive(Debug)]
pub struct SimHandle {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl SimHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (Anthropic-style base URL: paths are `/v1/messages`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` (OpenAI-style base URL: paths are `/chat/completions`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues a fault for the next request (FIFO; one fault per request).
    pub fn push_fault(&self, fault: Fault) {
        lock(&self.state.faults).push_back(fault);
    }

    /// Queues a scripted reply for the next successful request (FIFO).
    pub fn push_reply(&self, reply: ScriptedReply) {
        lock(&self.state.replies).push_back(reply);
    }

    /// Changes the context window.
    pub fn set_window(&self, window: u64) {
        lock(&self.state.config).window = window;
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state.records).clone()
    }

    /// Every provider compaction this simulator issued (Anthropic blocks, OpenAI items), each as the
    /// exact JSON text it sent.
    pub fn issued_compactions(&self) -> Vec<String> {
        lock(&self.state.issued).all()
    }

    /// Forgets recorded requests, queued faults and replies.
    pub fn clear(&self) {
        lock(&self.state.records).clear();
        lock(&self.state.faults).clear();
        lock(&self.state.replies).clear();
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}
