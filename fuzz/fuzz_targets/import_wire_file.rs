//! The plain wire-file importer (a request, an array or JSONL of messages / items), forced to each
//! of the three wire formats in turn (see `compact_fuzz::import_as`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for format in compact_fuzz::WIRE {
        compact_fuzz::import_as(Some(format), "request.json", data);
    }
});
