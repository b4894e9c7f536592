//! What the fuzz targets check, shared so each target in `fuzz_targets/` is one line.
//!
//! Every function here takes untrusted input and must return normally: a panic, an abort, a
//! timeout or running out of memory is a finding. The assertions are the properties each target
//! checks besides "no panic".

pub mod conversation;

use compact_core::model::Format;
use compact_formats::import::{import, ImportMode, ImportOptions};
use compact_formats::wire::{decode, encode};
use serde_json::Value;

/// The wire formats.
pub const WIRE: [Format; 3] = [
    Format::OpenAiChat,
    Format::OpenAiResponses,
    Format::Anthropic,
];

/// Bytes -> JSON -> `decode(format)`; when it decodes: `encode` back to `format`, which must
/// succeed and give the same JSON value (the round trip `compact_formats::wire` documents), `decode`
/// of that, which must succeed, and `encode` to the other wire formats, which must not panic.
pub fn wire(format: Format, data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let conv = match decode(format, &value) {
        Ok(conv) => conv,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let encoded = match encode(&conv, format) {
        Ok(encoded) => encoded,
        Err(e) => panic!("decoded as {format} but does not encode back to it: {e}"),
    };
    // The documented round trip: `encode(decode(v)) == v` (as JSON values).
    if encoded.value != value {
        panic!(
            "encode(decode(v)) != v for {format}\n v: {value}\n encoded: {}",
            encoded.value
        );
    }
    if let Err(e) = decode(format, &encoded.value) {
        panic!(
            "decode(encode(x)) fails for {format}: {e}\nre-encoded: {}",
            encoded.value
        );
    }
    for other in WIRE {
        if other != format {
            if let Ok(converted) = encode(&conv, other) {
                for loss in &converted.losses {
                    let _ = loss.to_string();
                }
            }
        }
    }
}

/// `import` of `data` as `file_name`, strict and lenient, the format forced (`Some`) or detected;
/// an imported conversation is then written in its provider's wire format (as `compactctl compact`
/// does), which must not panic.
pub fn import_as(format: Option<Format>, file_name: &str, data: &[u8]) {
    for mode in [ImportMode::Strict, ImportMode::Lenient] {
        let options = ImportOptions { format, mode };
        match import(data, file_name, &options) {
            Ok(imported) => {
                for warning in &imported.warnings {
                    let _ = warning.to_string();
                }
                let _ = encode(&imported.conversation, imported.format.wire_target());
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
}

/// The configuration file layer: `data` as the YAML (or JSON, which YAML reads) of a config file,
/// resolved with no environment and no flags.
pub fn config_file(data: &[u8]) {
    use compact_config::{Config, Overrides};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let none = Overrides::default();
    match Config::from_sources(Some(("compact.yaml", text)), &none, &none) {
        Ok(config) => {
            let _ = config.policy();
            let _ = config.counter();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// The LLM client's response parsing: the SSE reader on the whole body, the streamed and plain
/// response parsers of both providers, and the stream-event overflow classifier on every event.
pub fn llm_sse(data: &[u8]) {
    use compact_formats::sse::parse_body;
    use compact_llm::provider::{parse_response, ProviderKind, StreamMode};
    for event in parse_body(data) {
        let _ = compact_llm::classify_stream_event(event.event.as_deref(), &event.data);
    }
    let body = String::from_utf8_lossy(data);
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        for stream in [StreamMode::On, StreamMode::Off] {
            if let Err(e) = parse_response(kind, stream, &body) {
                let _ = e.to_string();
            }
        }
    }
}

/// The one SSE reader (`compact_formats::sse`), fed in chunks the input chooses: the first byte
/// picks the reader's most bytes an event may hold (1 to 255, or the default for 0), the second
/// seeds the chunk lengths (1 to 16 bytes, a fixed pseudo-random walk), the rest is the stream.
/// Checked: the chunked reading gives the same events and errors as one push of the whole, and no
/// event's data is longer than its maximum allows (three decoded bytes a stream byte).
pub fn sse(data: &[u8]) {
    use compact_formats::sse::{SseParser, DEFAULT_MAX_EVENT_BYTES};
    let (limit, seed, stream) = match data {
        [limit, seed, rest @ ..] => (*limit, *seed, rest),
        _ => return,
    };
    let limit = match limit {
        0 => DEFAULT_MAX_EVENT_BYTES,
        n => usize::from(n),
    };
    let mut whole = SseParser::with_max_event_bytes(limit);
    let mut expected = whole.push(stream);
    expected.extend(whole.finish().map(Ok));

    let mut chunked = SseParser::with_max_event_bytes(limit);
    let mut got = Vec::new();
    let mut state = u32::from(seed) | 0x100;
    let mut rest = stream;
    while !rest.is_empty() {
        // A linear congruential step; only the low bits pick the length.
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let len = (((state >> 16) % 16) as usize + 1).min(rest.len());
        let (chunk, tail) = rest.split_at(len);
        got.extend(chunked.push(chunk));
        rest = tail;
    }
    got.extend(chunked.finish().map(Ok));
    assert_eq!(got, expected, "chunked reading differs from whole");
    // The limit counts stream bytes; decoded, an invalid byte becomes U+FFFD (three bytes).
    for event in got.iter().flatten() {
        assert!(
            event.data.len() <= limit.saturating_mul(3),
            "an event of {} bytes from a reader holding at most {limit} stream bytes",
            event.data.len()
        );
    }
}

/// The context-overflow classifier: the first two bytes are the HTTP status, the rest the body.
pub fn overflow_classify(data: &[u8]) {
    let (status, body) = match data {
        [a, b, rest @ ..] => (u16::from_le_bytes([*a, *b]), rest),
        _ => (400, data),
    };
    let body = String::from_utf8_lossy(body);
    if let Some(o) = compact_llm::classify(status, &body) {
        let _ = format!("{o:?}");
    }
    let _ = compact_llm::classify_stream_event(None, &body);
    let _ = compact_llm::classify_stream_event(Some("error"), &body);
}
