//! A minimal progress bar on stderr for long replays (no dependencies).

use crate::parallel::ProgressSink;
use std::io::Write;
use std::sync::Mutex;
use std::time::Instant;

/// Width of the bar, in characters.
const BAR_WIDTH: usize = 30;

/// Draws `[#####.....] done/total  elapsed` on one line of stderr, redrawn in place.
#[derive(Debug)]
pub struct ProgressBar {
    label: String,
    started: Instant,
    lock: Mutex<()>,
}

impl ProgressBar {
    /// A bar labelled `label` (e.g. `replay`).
    pub fn new(label: impl Into<String>) -> Self {
        ProgressBar {
            label: label.into(),
            started: Instant::now(),
            lock: Mutex::new(()),
        }
    }

    /// Erases the bar's line.
    pub fn finish(&self) {
        let _guard = self.lock.lock();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{}\r", " ".repeat(BAR_WIDTH + self.label.len() + 40));
        let _ = err.flush();
    }
}

impl ProgressSink for ProgressBar {
    fn advance(&self, done: usize, total: usize) {
        let _guard = self.lock.lock();
        let filled = (done * BAR_WIDTH)
            .checked_div(total)
            .unwrap_or(BAR_WIDTH)
            .min(BAR_WIDTH);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{} [{}{}] {done}/{total}  {:.1}s",
            self.label,
            "#".repeat(filled),
            ".".repeat(BAR_WIDTH - filled),
            self.started.elapsed().as_secs_f64()
        );
        let _ = err.flush();
    }
}
