//! Reading input files (or standard input) with a size bound and a clear error naming the file.

use crate::exit::BadInput;
use anyhow::Context;
use std::io::Read;
use std::path::Path;

/// Largest input accepted (1 GiB): larger files are refused rather than exhausting memory.
pub const MAX_INPUT_BYTES: u64 = 1 << 30;

/// Reads `path` (`-` for standard input) fully, refusing inputs over [`MAX_INPUT_BYTES`].
pub fn read_input(path: &str) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    if path == "-" {
        std::io::stdin()
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut buf)
            .context("reading standard input")?;
    } else {
        let file = std::fs::File::open(Path::new(path))
            .map_err(|e| BadInput(format!("cannot open {path}: {e}")))?;
        file.take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(|e| BadInput(format!("cannot read {path}: {e}")))?;
    }
    if buf.len() as u64 > MAX_INPUT_BYTES {
        return Err(BadInput(format!("{path}: input larger than {MAX_INPUT_BYTES} bytes")).into());
    }
    Ok(buf)
}

/// Display name of an input path.
pub fn display_name(path: &str) -> &str {
    if path == "-" {
        "<stdin>"
    } else {
        path
    }
}
