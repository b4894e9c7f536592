//! The configuration file layer (YAML, or JSON which YAML reads) resolved into a config.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| compact_fuzz::config_file(data));
