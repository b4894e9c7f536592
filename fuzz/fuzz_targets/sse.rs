//! The one SSE reader, fed in chunks the input chooses; chunked and whole readings must agree.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| compact_fuzz::sse(data));
