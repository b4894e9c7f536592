//! Where the MCP server reads its session: a transcript, the agent's latest transcript for a
//! directory, or Compact's session store.

use super::usage::{last_reported, Reported};
use crate::error::AgentsError;
use crate::hook::Agent;
use crate::transcript;
use compact_core::model::{Conversation, Item};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_session::{CompactManager, SessionConfig, SessionError, Store};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Most Codex rollouts inspected (newest first) to find the one started in a directory.
const MAX_ROLLOUTS_SCANNED: usize = 200;

/// Longest first line of a rollout read to learn its directory (its `session_meta` holds the base
/// instructions, some tens of kilobytes).
const MAX_META_LINE_BYTES: u64 = 1024 * 1024;

/// A session source.
pub enum Source {
    /// One transcript file (Claude Code JSONL, Codex rollout, or any importable format).
    Transcript(PathBuf),
    /// The agent's most recently written transcript for `cwd`, found under `home`.
    Latest {
        /// The agent.
        agent: Agent,
        /// Where the agent keeps its sessions: Claude Code, the user's home (`.claude/projects`
        /// under it); Codex, Codex's home (`$CODEX_HOME`, default `~/.codex`; `sessions` under it).
        home: PathBuf,
        /// The directory the agent runs in.
        cwd: PathBuf,
    },
    /// A session of Compact's store.
    Store {
        /// The store.
        store: Arc<dyn Store>,
        /// The session id.
        session: String,
    },
}

/// A session as the tools see it.
pub struct History {
    /// Every item of the log, the ones compaction hid included, in order.
    pub conversation: Conversation,
    /// What the model sees now (the latest view).
    pub view: Vec<Item>,
    /// Where it came from, for messages.
    pub origin: String,
    /// What the agent recorded about its context at its latest model call (transcripts only).
    pub reported: Option<Reported>,
    /// When it came from a store: the manager, for recall of truncated originals.
    manager: Option<(CompactManager, String)>,
}

impl History {
    /// The original item a reference names: the log's copy (a store also knows originals that a
    /// write-time truncation replaced), else the transcript's item with that id or cited prefix.
    pub fn recall(&self, reference: &str) -> Result<Option<Item>, AgentsError> {
        if let Some((manager, session)) = &self.manager {
            match manager.recall(session, reference) {
                Ok(item) => return Ok(Some(item)),
                Err(SessionError::UnknownReference { .. } | SessionError::InvalidSessionId(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(self.conversation.find_cited(reference).cloned())
    }

    /// The facts remembered for the session: the runtime's memory of a store session when it
    /// keeps one (with the user's forgets and pins), else the facts read from every item of the
    /// log now (tool-call fields, messages, checkpoints and provider summaries), admitted with the
    /// default caps.
    pub fn memory(&self) -> Result<compact_core::memory::Memory, AgentsError> {
        if let Some((manager, session)) = &self.manager {
            let kept = manager.memory(session)?;
            if !kept.facts().is_empty() {
                return Ok(kept);
            }
        }
        let mut memory = compact_core::memory::Memory::new();
        memory.admit(
            compact_session::memory::candidates_of(&self.conversation.items),
            &compact_core::memory::Limits::default(),
        );
        Ok(memory)
    }

    /// The model the session talks to, when recorded.
    pub fn model(&self) -> Option<String> {
        self.conversation
            .extra
            .get("model")
            .and_then(|m| m.as_str())
            .map(str::to_owned)
    }
}

impl Source {
    /// Reads the session now.
    pub fn load(&self) -> Result<History, AgentsError> {
        match self {
            Source::Transcript(path) => from_transcript(path),
            Source::Latest { agent, home, cwd } => from_transcript(&latest(*agent, home, cwd)?),
            Source::Store { store, session } => {
                let config =
                    SessionConfig::new(Policy::default(), TokenCounter::new(Encoding::O200kBase));
                let manager = CompactManager::open(config, Arc::clone(store))?;
                let conversation = manager.history(session)?;
                let view = manager.view(session)?.items.clone();
                Ok(History {
                    conversation,
                    view,
                    origin: format!("session `{session}` of the store"),
                    reported: None,
                    manager: Some((manager, session.clone())),
                })
            }
        }
    }

    /// A key that changes when the session may have changed (a transcript's size and time), or
    /// `None` when it must be read again on every call (a store).
    pub fn version(&self) -> Option<(PathBuf, u64, Option<SystemTime>)> {
        let path = match self {
            Source::Transcript(path) => path.clone(),
            Source::Latest { agent, home, cwd } => latest(*agent, home, cwd).ok()?,
            Source::Store { .. } => return None,
        };
        let meta = std::fs::metadata(&path).ok()?;
        Some((path, meta.len(), meta.modified().ok()))
    }
}

fn from_transcript(path: &Path) -> Result<History, AgentsError> {
    let (imported, bytes) = transcript::load_with_bytes(path)?;
    let reported = last_reported(&bytes);
    let view = imported
        .conversation
        .items
        .iter()
        .filter(|i| i.meta.visibility.model)
        .cloned()
        .collect();
    Ok(History {
        conversation: imported.conversation,
        view,
        origin: path.display().to_string(),
        reported,
        manager: None,
    })
}

/// Transcripts written within this long of the newest one are as recent as it: `latest` cannot
/// tell which of them is the session meant (two agents running in the same directory).
pub const SAME_TIME: Duration = Duration::from_secs(5);

/// Lines at the start of a transcript read to find the directory it records.
const MAX_CWD_LINES: usize = 64;

/// The agent's most recently written transcript for `cwd`, unambiguously.
///
/// The candidates are Claude Code's transcripts in the project directory named after `cwd`, or
/// the Codex rollouts under `sessions` of Codex's home (`home`: `$CODEX_HOME`, default
/// `~/.codex`). Of these, the ones recording `cwd` as their
/// directory are preferred (Claude Code's project directory names are lossy: `/a/b-c` and
/// `/a/b/c` share one); Claude Code transcripts recording no directory come next; a Codex rollout
/// must record it. Among the preferred, the newest wins, unless another was written within
/// [`SAME_TIME`] of it: then the error lists them all ([`AgentsError::AmbiguousLatest`]).
pub fn latest(agent: Agent, home: &Path, cwd: &Path) -> Result<PathBuf, AgentsError> {
    let (dir, mut files) = candidates(agent, home, cwd)?;
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
    files.truncate(MAX_ROLLOUTS_SCANNED);
    let wanted = cwd.to_string_lossy();
    let mut tied = newest_group(&files, |path| {
        recorded_cwd(path).as_deref() == Some(wanted.as_ref())
    });
    if tied.is_empty() && agent == Agent::ClaudeCode {
        tied = newest_group(&files, |path| recorded_cwd(path).is_none());
    }
    match tied.len() {
        0 => Err(missing(&dir)),
        1 => Ok(tied.remove(0)),
        _ => Err(AgentsError::AmbiguousLatest {
            agent: agent.name().to_owned(),
            cwd: cwd.to_path_buf(),
            candidates: tied,
            window_secs: SAME_TIME.as_secs(),
        }),
    }
}

/// The transcript of session `id` among the agent's sessions for `cwd`: Claude Code's
/// `<project dir>/<id>.jsonl`, or the Codex rollout whose file name ends with `id` or whose
/// `session_meta` records it.
pub fn find_session(
    agent: Agent,
    home: &Path,
    cwd: &Path,
    id: &str,
) -> Result<PathBuf, AgentsError> {
    let id = id.trim();
    let (dir, files) = candidates(agent, home, cwd)?;
    let not_found = || {
        AgentsError::io(
            &dir,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no {} session `{id}` here", agent.name()),
            ),
        )
    };
    if id.is_empty() || id.contains(['/', '\\']) || id.contains("..") {
        return Err(not_found());
    }
    let found = match agent {
        Agent::ClaudeCode => files
            .into_iter()
            .map(|(path, _)| path)
            .find(|path| path.file_stem().is_some_and(|s| s == id)),
        Agent::Codex => files.into_iter().map(|(path, _)| path).find(|path| {
            path.file_stem()
                .is_some_and(|s| s.to_string_lossy().ends_with(id))
                || meta_field(path, "id").as_deref() == Some(id)
        }),
    };
    found.ok_or_else(not_found)
}

/// The directory an agent keeps `cwd`'s sessions in, and its transcripts with their times.
fn candidates(
    agent: Agent,
    home: &Path,
    cwd: &Path,
) -> Result<(PathBuf, Vec<(PathBuf, SystemTime)>), AgentsError> {
    Ok(match agent {
        Agent::ClaudeCode => {
            let dir = home
                .join(".claude")
                .join("projects")
                .join(claude_project_dir(cwd));
            let files = jsonl_in(&dir)?;
            (dir, files)
        }
        Agent::Codex => {
            let dir = home.join("sessions");
            let mut files = Vec::new();
            collect_rollouts(&dir, 0, &mut files);
            (dir, files)
        }
    })
}

/// Of `files` (newest first), the newest one `wanted` accepts and every other it accepts written
/// within [`SAME_TIME`] of it, newest first.
fn newest_group(files: &[(PathBuf, SystemTime)], wanted: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut group = Vec::new();
    let mut newest = None;
    for (path, time) in files {
        if let Some(newest) = newest {
            let apart = SystemTime::duration_since(&newest, *time).unwrap_or_default();
            if apart > SAME_TIME {
                break;
            }
        }
        if wanted(path) {
            newest.get_or_insert(*time);
            group.push(path.clone());
        }
    }
    group
}

fn missing(dir: &Path) -> AgentsError {
    AgentsError::io(
        dir,
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no session transcript for this directory",
        ),
    )
}

/// The directory Claude Code keeps a project's sessions in: the project's path with every
/// character but ASCII letters and digits replaced by `-`.
pub fn claude_project_dir(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn jsonl_in(dir: &Path) -> Result<Vec<(PathBuf, SystemTime)>, AgentsError> {
    let entries = std::fs::read_dir(dir).map_err(|e| AgentsError::io(dir, e))?;
    Ok(entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .filter_map(|p| {
            let t = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
            Some((p, t))
        })
        .collect())
}

/// Rollouts under `sessions/YYYY/MM/DD/`.
fn collect_rollouts(dir: &Path, depth: usize, out: &mut Vec<(PathBuf, SystemTime)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() && depth < 3 {
            collect_rollouts(&path, depth + 1, out);
        } else if path.extension().is_some_and(|x| x == "jsonl") {
            if let Ok(t) = std::fs::metadata(&path).and_then(|m| m.modified()) {
                out.push((path, t));
            }
        }
    }
}

/// The directory a transcript records: the first `cwd` of a Claude Code record, or the `cwd` of a
/// Codex rollout's `session_meta`, in its first [`MAX_CWD_LINES`] lines.
fn recorded_cwd(path: &Path) -> Option<String> {
    meta_field(path, "cwd")
}

/// The first string `field` of a record, or of a record's `payload`, in the first lines of the
/// transcript at `path` (each read up to [`MAX_META_LINE_BYTES`]).
fn meta_field(path: &Path, field: &str) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    for _ in 0..MAX_CWD_LINES {
        line.clear();
        let read = std::io::Read::take(&mut reader, MAX_META_LINE_BYTES)
            .read_until(b'\n', &mut line)
            .ok()?;
        if read == 0 {
            return None;
        }
        if !line.ends_with(b"\n") && read as u64 == MAX_META_LINE_BYTES {
            // A line longer than read: the rest of the file is not looked at.
            return None;
        }
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(&line) else {
            continue;
        };
        let found = value
            .get(field)
            .or_else(|| value.get("payload").and_then(|p| p.get(field)))
            .and_then(|c| c.as_str());
        if let Some(found) = found {
            return Some(found.to_owned());
        }
    }
    None
}
