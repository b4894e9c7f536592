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

/// The LLM client's response parsing: the SSE splitter, the streamed and plain response parsers of
/// both providers, and the stream-event overflow classifier on every event.
pub fn llm_sse(data: &[u8]) {
    use compact_llm::provider::{parse_response, sse_events, ProviderKind, StreamMode};
    let body = String::from_utf8_lossy(data);
    for event in sse_events(&body) {
        let _ = compact_llm::classify_stream_event(event.event.as_deref(), &event.data);
    }
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        for stream in [StreamMode::On, StreamMode::Off] {
            if let Err(e) = parse_response(kind, stream, &body) {
                let _ = e.to_string();
            }
        }
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
