//! Overflow recovery end to end against the provider simulator: the simulator's forced-overflow
//! fault answers with each provider's real overflow error, the manager recovers within three
//! attempts, and a request that cannot be made to fit ends in a typed error, never a loop.

use crate::common::Agent;
use bytes::Bytes;
use compact_core::model::{Conversation, Format, Item, Role};
use compact_core::policy::Policy;
use compact_formats::validate::validate;
use compact_formats::wire::encode;
use compact_session::{
    CompactManager, MemoryStore, Recovery, RecoveryError, SessionConfig,
    DEFAULT_OVERFLOW_MAX_RETRIES,
};
use compact_sim::{Fault, SimConfig, SimHandle, Simulator};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::sync::Arc;

const WINDOW: usize = 32_000;
const MAX_OUTPUT: usize = 1_024;

struct Provider {
    runtime: tokio::runtime::Runtime,
    sim: SimHandle,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Provider {
    fn new(window: usize) -> Provider {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let sim = runtime
            .block_on(Simulator::spawn(SimConfig::with_window(window as u64)))
            .unwrap();
        let client = runtime.block_on(async { Client::builder(TokioExecutor::new()).build_http() });
        Provider {
            runtime,
            sim,
            client,
        }
    }

    /// Encodes `conv` for `format` (checking it against the provider rules) and sends it.
    fn send(&self, conv: &Conversation, format: Format) -> (u16, String) {
        let encoded = encode(conv, format).unwrap().value;
        let violations = validate(&encoded, format);
        assert!(violations.is_empty(), "{format}: {violations:?}");
        let url = match format {
            Format::OpenAiChat => format!("{}/chat/completions", self.sim.openai_base_url()),
            Format::OpenAiResponses => format!("{}/responses", self.sim.openai_base_url()),
            _ => format!("{}/v1/messages", self.sim.base_url()),
        };
        let request = hyper::Request::post(url)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(encoded.to_string())))
            .unwrap();
        self.runtime.block_on(async {
            let response = self.client.request(request).await.unwrap();
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8_lossy(&body).into_owned())
        })
    }
}

fn manager() -> CompactManager {
    let mut policy = Policy::for_window(WINDOW);
    policy.reserved_output_tokens = MAX_OUTPUT;
    CompactManager::open(
        SessionConfig::new(policy, crate::common::counter()),
        Arc::new(MemoryStore::new()),
    )
    .unwrap()
}

fn agent(seed: u64, format: Format, steps: usize) -> Agent {
    let mut agent = Agent::new(seed, format);
    let cap = if format == Format::OpenAiResponses {
        "max_output_tokens"
    } else {
        "max_tokens"
    };
    agent.history.extra.insert(cap.into(), json!(MAX_OUTPUT));
    for _ in 0..steps {
        agent.step();
    }
    agent
}

/// Sends `request`, recovering from overflows; the number of recoveries it took, or the error.
fn send_with_recovery(
    provider: &Provider,
    manager: &CompactManager,
    session: &str,
    mut request: Conversation,
    format: Format,
) -> Result<u32, RecoveryError> {
    let mut recoveries = 0;
    // Bounded by construction: the manager gives up after its attempts; the bound here only turns
    // a regression into a failure instead of a hang.
    for _ in 0..=DEFAULT_OVERFLOW_MAX_RETRIES + 1 {
        let (status, body) = provider.send(&request, format);
        if status == 200 {
            return Ok(recoveries);
        }
        let parsed: Value = serde_json::from_str(&body).unwrap();
        assert!(
            parsed.get("error").is_some() || parsed.get("type").is_some(),
            "{body}"
        );
        match manager.recover(session, &request, status, &body).unwrap() {
            Recovery::Retry(next) => {
                recoveries += 1;
                request = next;
            }
            Recovery::GiveUp(e) => return Err(e),
        }
    }
    panic!("recovery looped past {DEFAULT_OVERFLOW_MAX_RETRIES} attempts");
}

#[test]
fn a_forced_overflow_is_recovered_within_three_attempts_in_every_format() {
    let provider = Provider::new(WINDOW);
    for (n, format) in [
        Format::OpenAiChat,
        Format::OpenAiResponses,
        Format::Anthropic,
    ]
    .into_iter()
    .enumerate()
    {
        let manager = manager();
        let session = format!("s{n}");
        let mut agent = agent(40 + n as u64, format, 25);
        let prepared = manager.preflight(&session, &agent.history).unwrap();
        // The provider refuses the first send with its real overflow error; the retry is accepted.
        provider.sim.push_fault(Fault::Overflow);
        let recoveries = send_with_recovery(
            &provider,
            &manager,
            &session,
            (*prepared.conversation).clone(),
            format,
        )
        .unwrap_or_else(|e| panic!("{format}: gave up: {e}"));
        assert!((1..=3).contains(&recoveries), "{format}: {recoveries}");
        // Two forced overflows in a row: still recovered within the attempts of a turn.
        agent.step();
        let prepared = manager.preflight(&session, &agent.history).unwrap();
        provider.sim.push_fault(Fault::Overflow);
        provider.sim.push_fault(Fault::Overflow);
        let recoveries = send_with_recovery(
            &provider,
            &manager,
            &session,
            (*prepared.conversation).clone(),
            format,
        )
        .unwrap_or_else(|e| panic!("{format}: gave up: {e}"));
        assert_eq!(recoveries, 2, "{format}");
        // And the session goes on from the recovered view.
        agent.step();
        let next = manager.preflight(&session, &agent.history).unwrap();
        assert_eq!(provider.send(&next.conversation, format).0, 200, "{format}");
    }
}

#[test]
fn an_overflow_that_never_ends_gives_up_with_a_typed_error() {
    let provider = Provider::new(WINDOW);
    let manager = manager();
    let agent = agent(7, Format::OpenAiChat, 25);
    let prepared = manager.preflight("s", &agent.history).unwrap();
    for _ in 0..10 {
        provider.sim.push_fault(Fault::Overflow);
    }
    let error = send_with_recovery(
        &provider,
        &manager,
        "s",
        (*prepared.conversation).clone(),
        Format::OpenAiChat,
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            RecoveryError::AttemptsExhausted { attempts: 3 } | RecoveryError::NoProgress { .. }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("start a new session"));
}

#[test]
fn a_hopeless_request_gives_up_with_a_typed_error_not_a_loop() {
    // The simulated model's window is far smaller than the pinned system prompt the manager was
    // told fits (its configured window is the larger one): nothing can make the request fit.
    let provider = Provider::new(4_096);
    let manager = manager();
    let mut agent = agent(3, Format::Anthropic, 2);
    agent
        .history
        .items
        .insert(1, Item::text(Role::System, "policy clause ".repeat(6_000)));
    let mut history = Conversation {
        items: Vec::new(),
        ..agent.history.clone()
    };
    history.extend_unique(agent.history.items.iter().cloned());
    let prepared = manager.preflight("s", &history).unwrap();
    let error = send_with_recovery(
        &provider,
        &manager,
        "s",
        (*prepared.conversation).clone(),
        Format::Anthropic,
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            RecoveryError::Hopeless { .. } | RecoveryError::NoProgress { .. }
        ),
        "{error:?}"
    );
}
