//! The LLM client's response parsers (streamed and not, both providers) over the one SSE reader.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| compact_fuzz::llm_sse(data));
