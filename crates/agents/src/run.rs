//! `compactctl run`: a command run as the agent would have run it, its output cut to a token budget
//! for the agent to read, the full output kept for recall.
//!
//! The command inherits standard input; its standard output and error stay apart, each read on its
//! own thread and streamed line by line while it fits the head allowance
//! ([`compact_core::truncate::head_allowance`]), the rest held back. When it exits, each stream is
//! finished ([`compact_core::truncate::finish_shell_output`]): output that fits passes unchanged,
//! byte for byte; a stream that does not fit gets its densified tail, its error lines and a marker
//! naming the id under which its whole text is kept ([`keep`]). Standard error keeps up to half the
//! budget before standard output gives up any of its share. The exit code is the command's (a
//! command killed by signal `n` gives `128 + n`, as shells report it).
//!
//! Only what this process writes is cut: the command's own pipes and redirections are inside the
//! command line, so a `cmd > file` or `a | b` wrapped whole is never altered; what `run` filters is
//! only the output of the whole command line, which is what the agent reads.

use crate::error::AgentsError;
use compact_core::model::{content_id, Item, ItemBody, ItemId, ToolResult, Visibility};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_core::truncate::{finish_counted, head_allowance, HeadStreamer};
use compact_session::{CompactManager, SessionConfig, SessionError, Store};
use serde_json::json;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Bytes read from a stream at a time.
const CHUNK: usize = 64 * 1024;

/// Which stream of the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl Stream {
    /// `stdout` or `stderr`.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// What was captured of one stream.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    /// Every byte the command wrote.
    pub bytes: Vec<u8>,
    /// How many of them were printed while it ran (whole lines).
    pub printed: usize,
}

/// A command that ran, before its held-back output is printed.
#[derive(Debug)]
pub struct Ran {
    /// The command's standard output.
    pub stdout: Captured,
    /// The command's standard error.
    pub stderr: Captured,
    /// How it exited.
    pub status: ExitStatus,
    /// When it started (milliseconds since the Unix epoch).
    pub started_ms: u64,
    /// How long it ran.
    pub elapsed: Duration,
}

/// The exit code a shell would report for `status`.
pub fn exit_code(status: &ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    1
}

/// Runs `argv` (program and arguments), streaming each output's head to `out` / `err` while it fits
/// `budget`'s head allowance. `on_spawn` receives the child's process id (to forward signals).
pub fn spawn_and_stream<O, E>(
    argv: &[OsString],
    budget: usize,
    counter: &TokenCounter,
    out: O,
    err: E,
    on_spawn: impl FnOnce(u32),
) -> Result<Ran, AgentsError>
where
    O: Write + Send,
    E: Write + Send,
{
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| AgentsError::Run("no command after `--`".to_owned()))?;
    let started_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let clock = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            AgentsError::Run(format!("cannot run `{}`: {e}", program.to_string_lossy()))
        })?;
    on_spawn(child.id());
    let child_out = child.stdout.take();
    let child_err = child.stderr.take();
    let allowance = head_allowance(budget);
    let (stdout, stderr) = std::thread::scope(|scope| {
        let o = scope.spawn(|| pump(child_out, out, allowance, counter));
        let e = scope.spawn(|| pump(child_err, err, allowance, counter));
        (o.join(), e.join())
    });
    let status = child
        .wait()
        .map_err(|e| AgentsError::Run(format!("waiting for the command: {e}")))?;
    let joined = |r: std::thread::Result<Captured>| {
        r.map_err(|_| AgentsError::Run("a stream reader stopped".to_owned()))
    };
    Ok(Ran {
        stdout: joined(stdout)?,
        stderr: joined(stderr)?,
        status,
        started_ms,
        elapsed: clock.elapsed(),
    })
}

/// Reads `src` to its end, printing whole lines to `dst` while they fit `allowance` tokens. A
/// failed write stops the printing, never the reading (the command must not block on a full pipe).
fn pump<R: Read, W: Write>(
    src: Option<R>,
    mut dst: W,
    allowance: usize,
    counter: &TokenCounter,
) -> Captured {
    let mut captured = Captured::default();
    let Some(mut src) = src else {
        return captured;
    };
    let mut streamer = HeadStreamer::new(allowance);
    let mut open = true;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        captured.bytes.extend_from_slice(&buf[..n]);
        while open {
            let pending = &captured.bytes[captured.printed..];
            let Some(nl) = pending.iter().position(|&b| b == b'\n') else {
                break;
            };
            let line = &pending[..=nl];
            let fits = std::str::from_utf8(line).is_ok_and(|l| streamer.take(l, counter));
            if !fits || dst.write_all(line).and_then(|()| dst.flush()).is_err() {
                streamer.close();
                open = false;
                break;
            }
            captured.printed += line.len();
        }
    }
    captured
}

/// One stream's outcome: what to print after its head, and the original to keep when cut.
#[derive(Debug)]
pub struct Finished {
    /// Bytes to write after the printed head.
    pub rest: Vec<u8>,
    /// The item to keep (the whole text under the id the marker names) when the stream was cut.
    pub original: Option<Item>,
}

/// The budgets of standard output and standard error given their sizes in tokens: both whole when
/// they fit together; else standard error keeps what it needs up to half the budget (or all that
/// standard output leaves), standard output the rest.
pub fn split_budget(budget: usize, stdout_tokens: usize, stderr_tokens: usize) -> (usize, usize) {
    if stdout_tokens + stderr_tokens <= budget {
        return (budget, budget);
    }
    let stderr = stderr_tokens.min((budget / 2).max(budget.saturating_sub(stdout_tokens)));
    (budget - stderr, stderr)
}

/// Finishes both streams of `ran` within `budget` (see the module documentation). `meta` is
/// recorded with a kept original (the command, its directory, the exit code).
///
/// Output whose bytes fit the budget passes without being counted (a token is at least one
/// byte), so a command with little output never loads the tokenizer; otherwise each stream is
/// counted once.
pub fn finish(
    ran: &Ran,
    budget: usize,
    counter: &TokenCounter,
    meta: &serde_json::Map<String, serde_json::Value>,
) -> (Finished, Finished) {
    let unchanged = |c: &Captured| Finished {
        rest: c.bytes[c.printed..].to_vec(),
        original: None,
    };
    if ran.stdout.bytes.len() + ran.stderr.bytes.len() <= budget {
        return (unchanged(&ran.stdout), unchanged(&ran.stderr));
    }
    let out_text = String::from_utf8_lossy(&ran.stdout.bytes);
    let err_text = String::from_utf8_lossy(&ran.stderr.bytes);
    let (out_tokens, err_tokens) = (counter.count_text(&out_text), counter.count_text(&err_text));
    let (out_budget, err_budget) = split_budget(budget, out_tokens, err_tokens);
    let exit = exit_code(&ran.status);
    let one = |stream: Stream, captured: &Captured, text: &str, tokens: usize, budget: usize| {
        if tokens <= budget {
            return unchanged(captured);
        }
        let mut result = ToolResult::text(format!("compactctl-run:{}", stream.name()), text);
        result.tool_name = Some("compactctl run".to_owned());
        result.is_error = exit != 0;
        result.extra = meta.clone();
        result
            .extra
            .insert("stream".to_owned(), json!(stream.name()));
        result.extra.insert("exit_code".to_owned(), json!(exit));
        result
            .extra
            .insert("started_ms".to_owned(), json!(ran.started_ms));
        let mut original = Item::new(ItemBody::ToolResult(result));
        original.meta.id = content_id(&original);
        original.meta.visibility = Visibility {
            model: false,
            user: true,
        };
        let cut = finish_counted(
            text,
            tokens,
            captured.printed,
            budget,
            counter,
            &original.meta.id,
        );
        Finished {
            rest: if cut.changed {
                cut.rest.into_bytes()
            } else {
                captured.bytes[captured.printed..].to_vec()
            },
            original: cut.changed.then_some(original),
        }
    };
    (
        one(
            Stream::Stdout,
            &ran.stdout,
            &out_text,
            out_tokens,
            out_budget,
        ),
        one(
            Stream::Stderr,
            &ran.stderr,
            &err_text,
            err_tokens,
            err_budget,
        ),
    )
}

/// Keeps the originals of the cut streams in `session` of the manager's store.
pub fn keep(
    manager: &CompactManager,
    session: &str,
    originals: impl IntoIterator<Item = Item>,
    ran: &Ran,
) -> Result<Vec<ItemId>, AgentsError> {
    let mut kept = Vec::new();
    for item in originals {
        let id = item.meta.id.clone();
        let fields = json!({
            "source": "compactctl run",
            "exit_code": exit_code(&ran.status),
            "elapsed_ms": ran.elapsed.as_millis() as u64,
        });
        manager.keep_original(session, item, fields)?;
        kept.push(id);
    }
    Ok(kept)
}

/// The output `compactctl run` kept under `id`, looked up in every session of `store`.
pub fn recall_kept(store: &Arc<dyn Store>, id: &str) -> Result<Option<Item>, AgentsError> {
    let config = SessionConfig::new(Policy::default(), TokenCounter::new(Encoding::O200kBase));
    let manager = CompactManager::open(config, Arc::clone(store))?;
    for session in store.sessions().map_err(SessionError::from)? {
        match manager.recall(&session, id) {
            Ok(item) => return Ok(Some(item)),
            Err(SessionError::UnknownReference { .. } | SessionError::InvalidSessionId(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(None)
}

/// The metadata recorded with a kept output: the command line and its directory.
pub fn command_meta(
    argv: &[OsString],
    cwd: Option<PathBuf>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "command".to_owned(),
        json!(argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()),
    );
    if let Some(cwd) = cwd {
        meta.insert("cwd".to_owned(), json!(cwd.to_string_lossy()));
    }
    meta
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_keeps_up_to_half_before_stdout_gives_way() {
        assert_eq!(split_budget(1_000, 300, 200), (1_000, 1_000));
        assert_eq!(split_budget(1_000, 5_000, 200), (800, 200));
        assert_eq!(split_budget(1_000, 5_000, 5_000), (500, 500));
        assert_eq!(split_budget(1_000, 100, 5_000), (100, 900));
    }
}
