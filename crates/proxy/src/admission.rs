//! Admission and load shedding: a bound on the proxied requests worked on at once (each holds a
//! slot from its arrival, before its body is read, to the end of its reply's body) and on the
//! requests waiting for a slot. A request that finds the queue full, or waits
//! [`AdmissionConfig::queue_timeout`] without a slot, is shed: answered at once with 503, a
//! `Retry-After` header and an error body in its provider's shape, which both providers' SDKs
//! retry. Health, readiness, metrics and the admin API never reach the gate.
//!
//! Sheds are counted (`compact_proxy_shed_total{reason}`) and logged as one `shed` warning per
//! [`SHED_LOG_INTERVAL`] at most, carrying how many were shed since the previous line.

use crate::config::AdmissionConfig;
use crate::log::{emit, Level};
use crate::metrics::Metrics;
use crate::reply::{error_response, BodyError, ErrorKind, ProxyBody};
use crate::route::Family;
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderValue, RETRY_AFTER};
use hyper::Response;
use serde_json::json;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// At most one `shed` log line per this interval: under overload a line per shed request would
/// flood the log at the rate the proxy refuses work.
pub const SHED_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// The largest `Retry-After` sent: the OpenAI and Anthropic SDKs ignore a longer one and fall back
/// to their own backoff.
pub const MAX_RETRY_AFTER_SECS: u64 = 60;

/// Why a request was shed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shed {
    /// Every slot was busy and the queue full (or there is no queue).
    QueueFull,
    /// It waited the queue timeout and no slot freed.
    QueueTimeout,
}

impl Shed {
    /// The metric label and log field.
    pub fn label(self) -> &'static str {
        match self {
            Shed::QueueFull => "queue_full",
            Shed::QueueTimeout => "queue_timeout",
        }
    }
}

/// The gate every proxied request passes.
pub(crate) struct Gate {
    config: AdmissionConfig,
    /// One permit per slot; `None` when there is no bound.
    slots: Option<Arc<Semaphore>>,
    /// Requests waiting for a slot now.
    queued: AtomicUsize,
    metrics: Arc<Metrics>,
    /// Sheds not yet in a log line, and when the last line was written.
    unlogged: AtomicU64,
    last_line: Mutex<Option<Instant>>,
}

/// A slot held by an admitted request; released when dropped.
pub(crate) struct Permit {
    _slot: Option<OwnedSemaphorePermit>,
    metrics: Arc<Metrics>,
    /// How long the request waited in the queue for its slot (`None`: a slot was free).
    pub waited: Option<Duration>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.metrics.in_flight_changed(-1);
    }
}

/// Takes a request off the queue gauge and count however its wait ends (a slot, the timeout, or
/// the client going away).
struct Waiting<'a>(&'a Gate);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.queued.fetch_sub(1, Ordering::AcqRel);
        self.0.metrics.queued_changed(-1);
    }
}

impl Gate {
    pub(crate) fn new(config: AdmissionConfig, metrics: Arc<Metrics>) -> Self {
        Gate {
            slots: config
                .max_in_flight
                .map(|n| Arc::new(Semaphore::new(n.clamp(1, Semaphore::MAX_PERMITS)))),
            config,
            queued: AtomicUsize::new(0),
            metrics,
            unlogged: AtomicU64::new(0),
            last_line: Mutex::new(None),
        }
    }

    /// A slot now, or after a wait in the queue; else why the request is shed.
    pub(crate) async fn admit(&self) -> Result<Permit, Shed> {
        let (slot, waited) = match &self.slots {
            None => (None, None),
            Some(slots) => match Arc::clone(slots).try_acquire_owned() {
                Ok(slot) => (Some(slot), None),
                Err(_) => {
                    let started = Instant::now();
                    let slot = self.wait(slots).await?;
                    (Some(slot), Some(started.elapsed()))
                }
            },
        };
        self.metrics.in_flight_changed(1);
        self.log_unlogged();
        Ok(Permit {
            _slot: slot,
            metrics: Arc::clone(&self.metrics),
            waited,
        })
    }

    /// Waits in the queue, when it has room, for at most the queue timeout. The semaphore is
    /// fair: a freed slot goes to the longest waiter, never to a request that just arrived.
    async fn wait(&self, slots: &Arc<Semaphore>) -> Result<OwnedSemaphorePermit, Shed> {
        if self.queued.fetch_add(1, Ordering::AcqRel) >= self.config.max_queue {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return Err(Shed::QueueFull);
        }
        self.metrics.queued_changed(1);
        let _waiting = Waiting(self);
        match tokio::time::timeout(self.config.queue_timeout, Arc::clone(slots).acquire_owned())
            .await
        {
            Ok(Ok(slot)) => Ok(slot),
            // The semaphore is never closed; a closed one admits nobody.
            Ok(Err(_)) | Err(_) => Err(Shed::QueueTimeout),
        }
    }

    /// The `Retry-After` of a shed request in whole seconds: the queue timeout rounded up (a
    /// request retried sooner would most likely meet the same queue), from 1 to
    /// [`MAX_RETRY_AFTER_SECS`].
    pub(crate) fn retry_after_secs(&self) -> u64 {
        let t = self.config.queue_timeout;
        (t.as_secs() + u64::from(t.subsec_nanos() > 0)).clamp(1, MAX_RETRY_AFTER_SECS)
    }

    /// Counts and logs a shed request on `route` and writes its answer.
    pub(crate) fn shed(
        &self,
        route: &'static str,
        family: Family,
        shed: Shed,
    ) -> Response<ProxyBody> {
        self.metrics.shed(shed.label());
        self.metrics.request(route, 503);
        self.unlogged.fetch_add(1, Ordering::AcqRel);
        self.log_unlogged();
        let retry_after = self.retry_after_secs();
        let why = match shed {
            Shed::QueueFull => "every request slot is busy and the queue is full".to_owned(),
            Shed::QueueTimeout => format!(
                "no request slot freed within {} ms",
                self.config.queue_timeout.as_millis()
            ),
        };
        let message =
            format!("the Compact proxy is overloaded ({why}); retry after {retry_after} s");
        let mut response = error_response(family, ErrorKind::Overloaded, &message);
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(retry_after));
        response
    }

    /// Writes the `shed` line for the sheds not yet logged, unless one was written less than
    /// [`SHED_LOG_INTERVAL`] ago (an admitted request calls it too, so the last sheds of an
    /// overload are logged once it ends).
    fn log_unlogged(&self) {
        if self.unlogged.load(Ordering::Acquire) == 0 {
            return;
        }
        let now = Instant::now();
        {
            let mut last = self
                .last_line
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|at| now.duration_since(at) < SHED_LOG_INTERVAL) {
                return;
            }
            *last = Some(now);
        }
        let shed = self.unlogged.swap(0, Ordering::AcqRel);
        if shed == 0 {
            return;
        }
        emit(
            Level::Warn,
            "shed",
            json!({"shed": shed, "in_flight": self.metrics.in_flight(), "queued": self.metrics.queued(),
                   "max_in_flight": self.config.max_in_flight, "max_queue": self.config.max_queue,
                   "queue_timeout_ms": self.config.queue_timeout.as_millis() as u64,
                   "retry_after_secs": self.retry_after_secs()}),
        );
    }
}

/// A reply whose body holds its request's slot: the slot is released when the body has been sent
/// (or the client went away), so a streamed reply counts as in flight until its last event.
pub(crate) fn hold(response: Response<ProxyBody>, permit: Permit) -> Response<ProxyBody> {
    response.map(|body| {
        http_body_util::BodyExt::boxed_unsync(Held {
            body,
            _permit: permit,
        })
    })
}

struct Held {
    body: ProxyBody,
    _permit: Permit,
}

impl Body for Held {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::log::MemoryLog;
    use tracing_subscriber::layer::SubscriberExt;

    fn gate_with(
        max_in_flight: Option<usize>,
        max_queue: usize,
        timeout_ms: u64,
    ) -> (Gate, Arc<Metrics>, MemoryLog) {
        let metrics = Arc::new(Metrics::default());
        let log = MemoryLog::default();
        let config = AdmissionConfig {
            max_in_flight,
            max_queue,
            queue_timeout: Duration::from_millis(timeout_ms),
        };
        (Gate::new(config, Arc::clone(&metrics)), metrics, log)
    }

    #[tokio::test]
    async fn past_the_slots_requests_queue_and_past_the_queue_they_are_shed_at_once() {
        let (gate, metrics, _) = gate_with(Some(1), 1, 60_000);
        let first = gate.admit().await.unwrap();
        assert_eq!((metrics.in_flight(), metrics.queued()), (1, 0));
        let second = gate.admit();
        tokio::pin!(second);
        // Polled once: it joins the queue and waits.
        assert!(poll_once(second.as_mut()).is_none());
        assert_eq!(metrics.queued(), 1);
        assert_eq!(gate.admit().await.err(), Some(Shed::QueueFull));
        drop(first);
        let second = second.await.unwrap();
        assert_eq!((metrics.in_flight(), metrics.queued()), (1, 0));
        drop(second);
        assert_eq!(metrics.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_request_that_waits_the_timeout_is_shed_and_leaves_the_queue() {
        let (gate, metrics, _) = gate_with(Some(1), 4, 20);
        let _held = gate.admit().await.unwrap();
        assert_eq!(gate.admit().await.err(), Some(Shed::QueueTimeout));
        assert_eq!(metrics.queued(), 0);
        assert_eq!(
            gate.retry_after_secs(),
            1,
            "20 ms rounds up to one whole second"
        );
    }

    #[tokio::test]
    async fn without_a_queue_or_without_a_bound() {
        let (gate, _, _) = gate_with(Some(1), 0, 60_000);
        let _held = gate.admit().await.unwrap();
        assert_eq!(gate.admit().await.err(), Some(Shed::QueueFull));
        let (open, metrics, _) = gate_with(None, 0, 1);
        let held: Vec<_> = admit_all(&open, 1_000).await;
        assert_eq!((held.len(), metrics.in_flight()), (1_000, 1_000));
    }

    #[tokio::test]
    async fn sheds_are_logged_once_per_interval_with_their_count() {
        let (gate, metrics, log) = gate_with(Some(1), 0, 1);
        // This test's thread logs to `log` (a current-thread runtime: the gate runs here).
        let _logging =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(log.clone()));
        let held = gate.admit().await.unwrap();
        for _ in 0..50 {
            let response = gate.shed(
                "messages",
                Family::Anthropic,
                gate.admit().await.err().unwrap(),
            );
            assert_eq!(response.status(), 503);
            assert_eq!(response.headers()[RETRY_AFTER], "1");
        }
        let lines = || -> Vec<String> {
            log.lines()
                .into_iter()
                .filter(|l| l.contains("\"event\":\"shed\""))
                .collect()
        };
        assert_eq!(lines().len(), 1, "{:?}", log.lines());
        assert!(lines()[0].contains("\"shed\":1,"), "{:?}", lines());
        assert_eq!(metrics.requests_of("messages", 503), 50);
        // Once the interval has passed, the next admitted request logs the other 49.
        *gate.last_line.lock().unwrap() = Some(Instant::now() - SHED_LOG_INTERVAL);
        drop(held);
        let _next = gate.admit().await.unwrap();
        assert_eq!(lines().len(), 2);
        assert!(lines()[1].contains("\"shed\":49,"), "{:?}", lines());
    }

    /// Polls `future` once.
    fn poll_once<F: std::future::Future>(future: Pin<&mut F>) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        match future.poll(&mut Context::from_waker(waker)) {
            Poll::Ready(v) => Some(v),
            Poll::Pending => None,
        }
    }

    async fn admit_all(gate: &Gate, n: usize) -> Vec<Permit> {
        let mut held = Vec::with_capacity(n);
        for _ in 0..n {
            held.push(gate.admit().await.unwrap());
        }
        held
    }
}
