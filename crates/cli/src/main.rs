//! `compactctl`: the command line of Compact.
fn main() {}
