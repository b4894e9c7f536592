//! [`StreamBody`]: an upstream reply forwarded to the client frame by frame as it arrives (never
//! buffered whole), with a copy of server-sent events read on the side for the usage, an idle
//! timeout, and a clean end: when the upstream breaks or goes silent mid-stream, an SSE reply gets
//! one error event in the provider's shape and then ends, so the client's SDK raises a typed
//! error instead of hanging on a half-open connection. A client that goes away drops the body,
//! which drops the upstream connection.

use crate::reply::BodyError;
use crate::route::Route;
use crate::usage::usage_in;
use bytes::Bytes;
use compact_formats::sse::SseParser;
use compact_session::Usage;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// How a forwarded reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The upstream finished it.
    Completed,
    /// The upstream connection broke mid-reply.
    UpstreamBroken,
    /// The upstream sent nothing for the idle timeout.
    Idle,
    /// The client went away first.
    ClientGone,
}

/// Called once when the reply ends, with the usage read from it (if any).
pub type OnEnd = Box<dyn FnOnce(StreamEnd, Option<Usage>) + Send>;

/// Reads SSE events of a forwarded reply for its usage.
#[derive(Debug)]
pub struct UsageTap {
    route: Route,
    sse: SseParser,
    usage: Option<Usage>,
}

impl UsageTap {
    /// A tap for a reply on `route`.
    pub fn new(route: Route) -> Self {
        UsageTap {
            route,
            sse: SseParser::default(),
            usage: None,
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        // An event too large to read is skipped: it is still forwarded, only not read.
        for event in self.sse.push(chunk).into_iter().flatten() {
            if !event.data.contains("usage") {
                continue;
            }
            if let Ok(value) = serde_json::from_str(&event.data) {
                if let Some(u) = usage_in(self.route, &value) {
                    self.usage = Some(u);
                }
            }
        }
    }
}

/// A forwarded reply body.
pub struct StreamBody {
    head: VecDeque<Bytes>,
    inner: Option<Incoming>,
    tap: Option<UsageTap>,
    idle: Duration,
    sleep: Pin<Box<tokio::time::Sleep>>,
    /// The event sent when the upstream breaks or goes silent (SSE replies only).
    error_event: Option<Bytes>,
    on_end: Option<OnEnd>,
}

impl std::fmt::Debug for StreamBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamBody").finish_non_exhaustive()
    }
}

impl StreamBody {
    /// `head` (chunks already read from `inner`), then the rest of `inner` (none: the reply ends
    /// after the head).
    pub fn new(head: Vec<Bytes>, inner: Option<Incoming>, idle: Duration) -> Self {
        StreamBody {
            head: head.into(),
            inner,
            tap: None,
            idle,
            sleep: Box::pin(tokio::time::sleep(idle)),
            error_event: None,
            on_end: None,
        }
    }

    /// Reads the reply's usage (the head is read too).
    #[must_use]
    pub fn with_tap(mut self, mut tap: UsageTap) -> Self {
        for chunk in &self.head {
            tap.feed(chunk);
        }
        self.tap = Some(tap);
        self
    }

    /// Ends a broken or silent stream with this event instead of a broken connection.
    #[must_use]
    pub fn with_error_event(mut self, event: Bytes) -> Self {
        self.error_event = Some(event);
        self
    }

    /// Calls `on_end` once when the reply ends (or the client goes away).
    #[must_use]
    pub fn on_end(mut self, on_end: OnEnd) -> Self {
        self.on_end = Some(on_end);
        self
    }

    fn finish(&mut self, end: StreamEnd) {
        self.inner = None;
        if let Some(f) = self.on_end.take() {
            let usage = self.tap.as_mut().and_then(|t| t.usage.take());
            f(end, usage);
        }
    }

    fn fail(
        &mut self,
        end: StreamEnd,
        error: BodyError,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        self.finish(end);
        match self.error_event.take() {
            Some(event) => Poll::Ready(Some(Ok(Frame::data(event)))),
            None => Poll::Ready(Some(Err(error))),
        }
    }
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if let Some(chunk) = this.head.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        let Some(inner) = this.inner.as_mut() else {
            if this.on_end.is_some() {
                this.finish(StreamEnd::Completed);
            }
            return Poll::Ready(None);
        };
        match Pin::new(inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(tap)) = (frame.data_ref(), this.tap.as_mut()) {
                    tap.feed(data);
                }
                let deadline = tokio::time::Instant::now() + this.idle;
                this.sleep.as_mut().reset(deadline);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => this.fail(StreamEnd::UpstreamBroken, Box::new(e)),
            Poll::Ready(None) => {
                this.finish(StreamEnd::Completed);
                Poll::Ready(None)
            }
            Poll::Pending => {
                if this.sleep.as_mut().poll(cx).is_ready() {
                    let idle = this.idle;
                    return this.fail(
                        StreamEnd::Idle,
                        format!("the upstream sent nothing for {idle:?}").into(),
                    );
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_empty() && self.inner.is_none() && self.on_end.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        let head: u64 = self.head.iter().map(|c| c.len() as u64).sum();
        match &self.inner {
            Some(inner) if self.error_event.is_none() => {
                let h = inner.size_hint();
                let mut hint = SizeHint::new();
                hint.set_lower(h.lower() + head);
                if let Some(u) = h.upper() {
                    hint.set_upper(u + head);
                }
                hint
            }
            Some(_) => SizeHint::new(),
            None => SizeHint::with_exact(head),
        }
    }
}

impl Drop for StreamBody {
    fn drop(&mut self) {
        if self.on_end.is_some() {
            self.finish(StreamEnd::ClientGone);
        }
    }
}
