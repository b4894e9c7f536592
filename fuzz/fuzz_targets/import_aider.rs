//! The Aider transcript importer (format forced), strict and lenient (see `compact_fuzz::import_as`).
#![no_main]

use compact_core::model::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| compact_fuzz::import_as(
    Some(Format::Aider),
    ".aider.chat.history.md",
    data
));
