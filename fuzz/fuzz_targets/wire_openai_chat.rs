//! `compact_formats::decode(Format::OpenAiChat)` on fuzzed JSON; a decoded request must encode back and
//! decode again (see `compact_fuzz::wire`).
#![no_main]

use compact_core::model::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| compact_fuzz::wire(Format::OpenAiChat, data));
