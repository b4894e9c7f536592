//! The response body type: a list of chunks delivered in order, optionally ending in an error that
//! breaks the connection mid-body (a cut stream).

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A response body made of pre-computed chunks.
#[derive(Debug, Default)]
pub struct ChunkBody {
    chunks: VecDeque<Bytes>,
    cut: bool,
    /// After the chunks, stay open and silent forever (a stalled upstream).
    stall: bool,
    /// Pause before the cut, so the chunks already produced are flushed to the client first.
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// How long a cut stream waits (with its chunks flushed) before breaking the connection.
const CUT_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

impl ChunkBody {
    /// A complete body.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        ChunkBody {
            chunks: VecDeque::from([bytes.into()]),
            cut: false,
            stall: false,
            pause: None,
        }
    }

    /// A body delivered as several chunks (SSE events).
    pub fn chunks(chunks: Vec<Bytes>) -> Self {
        ChunkBody {
            chunks: chunks.into(),
            cut: false,
            stall: false,
            pause: None,
        }
    }

    /// These chunks, then silence with the connection open.
    pub fn stall_after(chunks: Vec<Bytes>) -> Self {
        ChunkBody {
            chunks: chunks.into(),
            cut: false,
            stall: true,
            pause: None,
        }
    }

    /// These chunks, then a broken connection.
    pub fn cut_after(chunks: Vec<Bytes>) -> Self {
        ChunkBody {
            chunks: chunks.into(),
            cut: true,
            stall: false,
            pause: None,
        }
    }

    /// Removes and returns the next chunk.
    pub fn take_chunk(&mut self) -> Option<Bytes> {
        self.chunks.pop_front()
    }
}

impl Body for ChunkBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(chunk) = self.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if self.stall {
            // Never woken: the client waits until it gives up or the connection is dropped.
            return Poll::Pending;
        }
        if self.cut {
            let pause = self
                .pause
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(CUT_PAUSE)));
            if pause.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.cut = false;
            return Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "simulated stream cut",
            ))));
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty() && !self.cut && !self.stall
    }

    fn size_hint(&self) -> SizeHint {
        if self.cut || self.stall {
            return SizeHint::default();
        }
        SizeHint::with_exact(self.chunks.iter().map(|c| c.len() as u64).sum())
    }
}

/// Formats one SSE event (`event:` line only when named).
pub fn sse(event: Option<&str>, data: &str) -> Bytes {
    match event {
        Some(name) => Bytes::from(format!("event: {name}\ndata: {data}\n\n")),
        None => Bytes::from(format!("data: {data}\n\n")),
    }
}
