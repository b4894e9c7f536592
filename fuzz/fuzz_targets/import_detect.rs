//! Format auto-detection then import. The file name, which detection takes as a hint (`.traj`,
//! `.md`), is picked by the input's length so each input costs one detection.
#![no_main]

use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 3] = ["session.jsonl", "run.traj", "chat.history.md"];

fuzz_target!(|data: &[u8]| compact_fuzz::import_as(None, NAMES[data.len() % 3], data));
