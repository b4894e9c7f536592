//! Structure-aware: generated conversations compacted by every strategy; a compacted request must
//! pass the provider rules whenever the input did (see `compact_fuzz::conversation`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|spec: compact_fuzz::conversation::Spec| compact_fuzz::conversation::run(&spec));
