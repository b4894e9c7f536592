//! The LLM client's SSE splitter and response parsers (streamed and not, both providers).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| compact_fuzz::llm_sse(data));
