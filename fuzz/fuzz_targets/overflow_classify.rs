//! The context-overflow classifier: `classify(status, body)` and `classify_stream_event`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| compact_fuzz::overflow_classify(data));
