//! Writing results: a file or standard output, created atomically for files.

use anyhow::Context;
use std::io::Write;

/// Writes `text` to `path` (`-` or none: standard output). Files are written to a temporary sibling
/// and renamed, so a failure never leaves a half-written output.
pub fn write_output(path: Option<&str>, text: &str) -> anyhow::Result<()> {
    match path {
        // `/dev/stdout` is a symlink to the process's fd 1: renaming a temporary file onto it would
        // replace the symlink itself, so it means standard output.
        None | Some("-") | Some("/dev/stdout") => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .context("writing standard output")?;
            out.flush().context("writing standard output")
        }
        Some(path) if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) => {
            // A symlink, device or pipe (`/dev/stderr`, a FIFO): write in place, through the link,
            // never replacing the link itself.
            std::fs::write(path, text).with_context(|| format!("writing {path}"))
        }
        Some(path) => {
            let tmp = format!("{path}.tmp-{}", std::process::id());
            std::fs::write(&tmp, text).with_context(|| format!("writing {tmp}"))?;
            std::fs::rename(&tmp, path).with_context(|| format!("renaming {tmp} to {path}"))
        }
    }
}

/// `println!` that returns the write error instead of panicking (a closed pipe, as in
/// `compactctl inspect ... | head`, is reported by [`crate::exit::report`] as success).
macro_rules! outln {
    () => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock())?
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

/// `print!` that returns the write error instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*)?
    }};
}

pub(crate) use {out, outln};

/// Prints an original item's text byte for byte, adding a newline only when it lacks one (`recall`).
pub fn print_original(text: &str) -> anyhow::Result<()> {
    if text.ends_with('\n') {
        out!("{text}");
    } else {
        outln!("{text}");
    }
    Ok(())
}
