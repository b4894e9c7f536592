//! Injected faults: queued by tests or requested per call with the `x-sim-fault` header.

use std::time::Duration;

/// Request header that asks for a fault on this request, e.g. `rate-limit;retry-after=2`,
/// `server-error`, `slow;ms=300`, `reset`, `malformed-json`, `malformed-sse`, `stream-cut;after=3`,
/// `stream-stall;after=2`, `overflow`, `compaction-empty;stop=refusal`, `compaction-unavailable`,
/// `not-found`.
pub const FAULT_HEADER: &str = "x-sim-fault";

/// One injected fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 429 with a `Retry-After` header (whole seconds, rounded up) and a rate-limit body.
    RateLimit {
        /// The advertised wait.
        retry_after: Duration,
    },
    /// HTTP 500 with the provider's internal-error body.
    ServerError,
    /// Wait this long before answering (then answer normally).
    Slow {
        /// The delay.
        delay: Duration,
    },
    /// Close the connection without answering.
    Reset,
    /// HTTP 200 whose body is not valid JSON.
    MalformedJson,
    /// Streaming: stop after this many events and break the connection (non-streaming: cut the body).
    StreamCut {
        /// Events (or, non-streaming, body bytes / 2) delivered before the cut.
        after_events: usize,
    },
    /// Answer with the endpoint's context-overflow error whatever the request size.
    Overflow,
    /// HTTP 200 `text/event-stream` whose events are not valid JSON and that ends without the
    /// endpoint's terminal event.
    MalformedSse,
    /// Streaming: send this many events, then keep the connection open and silent (a stalled
    /// upstream; non-streaming requests get the whole reply).
    StreamStall {
        /// Events delivered before the stall.
        after_events: usize,
    },
    /// An Anthropic on-demand compaction that produced no summary: HTTP 200, empty content, this
    /// stop reason (`max_tokens`, `model_context_window_exceeded`, `tool_use`, `refusal`, `end_turn`).
    CompactionEmpty {
        /// The stop reason.
        stop: String,
    },
    /// Anthropic compaction temporarily unavailable: 529 `overloaded_error` with
    /// `error.details.error_code: "compaction_unavailable"`.
    CompactionUnavailable,
    /// HTTP 404, as the standalone compact endpoint answers on some backends.
    NotFound,
}

/// Why a fault header could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad {FAULT_HEADER} header `{0}`")]
pub struct BadFault(pub String);

impl Fault {
    /// Parses the header syntax `name[;key=value]*`.
    pub fn parse(spec: &str) -> Result<Fault, BadFault> {
        let mut parts = spec.split(';').map(str::trim);
        let name = parts.next().unwrap_or("");
        let mut num = |key: &str, default: u64| -> Result<u64, BadFault> {
            for p in parts.by_ref() {
                if let Some((k, v)) = p.split_once('=') {
                    if k.trim() == key {
                        return v.trim().parse().map_err(|_| BadFault(spec.to_owned()));
                    }
                }
            }
            Ok(default)
        };
        Ok(match name {
            "rate-limit" | "429" => Fault::RateLimit {
                retry_after: Duration::from_secs(num("retry-after", 1)?),
            },
            "server-error" | "500" => Fault::ServerError,
            "slow" => Fault::Slow {
                delay: Duration::from_millis(num("ms", 1_000)?),
            },
            "reset" => Fault::Reset,
            "malformed-json" => Fault::MalformedJson,
            "stream-cut" => Fault::StreamCut {
                after_events: usize::try_from(num("after", 2)?).unwrap_or(usize::MAX),
            },
            "overflow" => Fault::Overflow,
            "malformed-sse" => Fault::MalformedSse,
            "compaction-empty" => {
                let stop = spec
                    .split(';')
                    .filter_map(|p| p.trim().strip_prefix("stop="))
                    .next()
                    .unwrap_or("end_turn");
                if !crate::compaction::EMPTY_STOP_REASONS.contains(&stop) {
                    return Err(BadFault(spec.to_owned()));
                }
                Fault::CompactionEmpty {
                    stop: stop.to_owned(),
                }
            }
            "compaction-unavailable" => Fault::CompactionUnavailable,
            "not-found" | "404" => Fault::NotFound,
            "stream-stall" => Fault::StreamStall {
                after_events: usize::try_from(num("after", 2)?).unwrap_or(usize::MAX),
            },
            _ => return Err(BadFault(spec.to_owned())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_header_syntax() {
        assert_eq!(
            Fault::parse("rate-limit;retry-after=3"),
            Ok(Fault::RateLimit {
                retry_after: Duration::from_secs(3)
            })
        );
        assert_eq!(
            Fault::parse("slow; ms=20"),
            Ok(Fault::Slow {
                delay: Duration::from_millis(20)
            })
        );
        assert_eq!(
            Fault::parse("stream-cut"),
            Ok(Fault::StreamCut { after_events: 2 })
        );
        assert_eq!(
            Fault::parse("stream-stall;after=1"),
            Ok(Fault::StreamStall { after_events: 1 })
        );
        assert_eq!(Fault::parse("malformed-sse"), Ok(Fault::MalformedSse));
        assert_eq!(
            Fault::parse("compaction-empty;stop=refusal"),
            Ok(Fault::CompactionEmpty {
                stop: "refusal".into()
            })
        );
        assert!(Fault::parse("compaction-empty;stop=bored").is_err());
        assert!(Fault::parse("explode").is_err());
        assert!(Fault::parse("slow;ms=abc").is_err());
    }
}
