//! The pre-tool memory gate (seed 004 §10): a shell command that probes for a folder or file by
//! name (`ls foo`, `cd foo && make`, `find . -name foo`) is rewritten to the absolute path a trusted
//! fact remembers, so the agent does not rediscover it. Conservative by construction:
//!
//! - only three exact shapes are rewritten: `ls [-flags] NAME`, `cd NAME` (alone or before `&&`)
//!   and `find . [-type d|f] -name NAME`; anything else is left as it is;
//! - `NAME` must equal the last component of exactly one remembered absolute path (a plain name:
//!   no glob, no `..`, no `~`, no variable); two remembered paths with that name leave it alone;
//! - never when the command writes or destroys anything (`rm`, `mv`, `dd`, `chmod`, `git reset`,
//!   `git clean`, a redirection that writes, ...), holds a command substitution, or already names an
//!   absolute path;
//! - only trusted facts (active, pinned) are read.

use super::fact::Fact;
use std::collections::BTreeMap;

/// Programs never rewritten around: they write, move, delete or change permissions.
const DESTRUCTIVE: &[&str] = &[
    "rm", "rmdir", "mv", "cp", "dd", "chmod", "chown", "chgrp", "truncate", "shred", "mkfs", "ln",
    "tee", "install", "unlink", "sudo", "doas", "kill", "pkill", "killall", "touch", "mkdir",
    "rsync", "scp", "patch", "xargs", "eval", "exec",
];
/// Git subcommands that discard or rewrite work.
const GIT_DESTRUCTIVE: &[&str] = &[
    "reset",
    "clean",
    "checkout",
    "restore",
    "rebase",
    "push",
    "rm",
    "mv",
    "stash",
    "branch",
    "switch",
    "merge",
    "apply",
    "am",
    "gc",
    "prune",
    "filter-branch",
    "update-ref",
];

/// Why the gate left a command unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not one of the probe shapes.
    NotAProbe,
    /// The command writes or destroys something.
    Destructive,
    /// The command already names an absolute path.
    AlreadyAbsolute,
    /// No trusted fact remembers the name.
    UnknownName,
    /// More than one remembered path has the name.
    Ambiguous,
}

impl Skip {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::NotAProbe => "not_a_probe",
            Skip::Destructive => "destructive",
            Skip::AlreadyAbsolute => "already_absolute",
            Skip::UnknownName => "unknown_name",
            Skip::Ambiguous => "ambiguous",
        }
    }
}

/// A rewrite the gate made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The command as the agent wrote it.
    pub original: String,
    /// The command to run instead.
    pub rewritten: String,
    /// The name probed for.
    pub target: String,
    /// The remembered absolute path it became.
    pub path: String,
    /// The fact that remembered it.
    pub fact: String,
}

/// The gate's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    /// Run this instead.
    Rewrite(Rewrite),
    /// Run the command as it is, for this reason.
    Unchanged(Skip),
}

/// Remembered absolute paths by their last component (`None` when two differ).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownPaths {
    by_name: BTreeMap<String, Option<(String, String)>>,
}

impl KnownPaths {
    /// The paths trusted `facts` remember: each fact's path and the directories above it (a file
    /// remembered at `/srv/app/src/main.rs` tells where `src` and `app` are).
    pub fn from_facts<'a>(facts: impl IntoIterator<Item = &'a Fact>) -> KnownPaths {
        let mut known = KnownPaths::default();
        for f in facts.into_iter().filter(|f| f.lifecycle.trusted()) {
            let Some(path) = f.path.as_deref() else {
                continue;
            };
            let mut p = path.trim_end_matches('/');
            while let Some(cut) = p.rfind('/') {
                let name = &p[cut + 1..];
                if !name.is_empty() {
                    known.add(name, p, &f.id);
                }
                p = &p[..cut];
            }
        }
        known
    }

    fn add(&mut self, name: &str, path: &str, fact: &str) {
        match self.by_name.get_mut(name) {
            None => {
                self.by_name
                    .insert(name.to_owned(), Some((path.to_owned(), fact.to_owned())));
            }
            Some(Some((held, _))) if held == path => {}
            Some(slot) => *slot = None,
        }
    }

    /// The path remembered for `name`.
    fn lookup(&self, name: &str) -> Result<(&str, &str), Skip> {
        match self.by_name.get(name) {
            None => Err(Skip::UnknownName),
            Some(None) => Err(Skip::Ambiguous),
            Some(Some((path, fact))) => Ok((path, fact)),
        }
    }

    /// Number of names known.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether no name is known.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// Decides about one shell command.
pub fn gate(command: &str, known: &KnownPaths) -> GateDecision {
    match decide(command, known) {
        Ok(r) => GateDecision::Rewrite(r),
        Err(skip) => GateDecision::Unchanged(skip),
    }
}

fn decide(command: &str, known: &KnownPaths) -> Result<Rewrite, Skip> {
    if writes(command) {
        return Err(Skip::Destructive);
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    if words
        .iter()
        .any(|w| w.starts_with('/') || w.starts_with("'/") || w.starts_with("\"/"))
    {
        return Err(Skip::AlreadyAbsolute);
    }
    // Each shape: the name probed for, and the command rebuilt from (path, parent directory).
    type Build = Box<dyn Fn(&str, &str) -> String>;
    let (target, build): (&str, Build) = match words.as_slice() {
        ["ls", rest @ ..] if !rest.is_empty() => {
            let (flags, names) = rest.split_at(rest.len() - 1);
            if !flags.iter().all(|f| f.starts_with('-') && f.len() > 1) {
                return Err(Skip::NotAProbe);
            }
            let head = std::iter::once("ls")
                .chain(flags.iter().copied())
                .collect::<Vec<_>>()
                .join(" ");
            (names[0], Box::new(move |path, _| format!("{head} {path}")))
        }
        ["cd", name] => (*name, Box::new(|path, _| format!("cd {path}"))),
        ["cd", name, "&&", rest @ ..] if !rest.is_empty() => {
            let rest = rest.join(" ");
            (
                *name,
                Box::new(move |path, _| format!("cd {path} && {rest}")),
            )
        }
        ["find", ".", "-name", pattern] => {
            let pattern = (*pattern).to_owned();
            (
                unquote(words[3]).ok_or(Skip::NotAProbe)?,
                Box::new(move |_, parent| format!("find {parent} -maxdepth 1 -name {pattern}")),
            )
        }
        ["find", ".", "-type", t @ ("d" | "f"), "-name", pattern] => {
            let (t, pattern) = ((*t).to_owned(), (*pattern).to_owned());
            (
                unquote(words[5]).ok_or(Skip::NotAProbe)?,
                Box::new(move |_, parent| {
                    format!("find {parent} -maxdepth 1 -type {t} -name {pattern}")
                }),
            )
        }
        _ => return Err(Skip::NotAProbe),
    };
    let name = target.strip_suffix('/').unwrap_or(target);
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || "._-+@".contains(c));
    if !plain {
        return Err(Skip::NotAProbe);
    }
    let (path, fact) = known.lookup(name)?;
    let parent = match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => return Err(Skip::UnknownName),
    };
    let rewritten = build(path, parent);
    if rewritten == command {
        return Err(Skip::NotAProbe);
    }
    Ok(Rewrite {
        original: command.to_owned(),
        rewritten,
        target: name.to_owned(),
        path: path.to_owned(),
        fact: fact.to_owned(),
    })
}

/// A `find` pattern without its quotes, when it is a plain name.
fn unquote(pattern: &str) -> Option<&str> {
    let p = pattern
        .strip_prefix('\'')
        .and_then(|p| p.strip_suffix('\''))
        .or_else(|| pattern.strip_prefix('"').and_then(|p| p.strip_suffix('"')))
        .unwrap_or(pattern);
    (!p.contains(['*', '?', '[', '\'', '"'])).then_some(p)
}

/// Whether the command may write or destroy: a destructive program or git subcommand in any
/// segment, a redirection that writes, a substitution the gate cannot see into, `sed -i`,
/// `find -delete` / `-exec`.
fn writes(command: &str) -> bool {
    if command.contains("$(") || command.contains('`') || command.contains("<(") {
        return true;
    }
    let without_dups = command
        .replace("2>&1", "")
        .replace(">&2", "")
        .replace("1>&2", "");
    if without_dups.contains('>') {
        return true;
    }
    for segment in command.split(['&', ';', '|', '(', ')', '\n']) {
        let words: Vec<&str> = segment.split_whitespace().collect();
        let Some(first) = words.iter().find(|w| !w.contains('=')) else {
            continue;
        };
        let program = first.rsplit('/').next().unwrap_or(first);
        if DESTRUCTIVE.contains(&program) {
            return true;
        }
        if program == "git"
            && words
                .iter()
                .skip(1)
                .find(|w| !w.starts_with('-'))
                .is_some_and(|sub| GIT_DESTRUCTIVE.contains(sub))
        {
            return true;
        }
        if program == "sed"
            && words
                .iter()
                .any(|w| w.starts_with("-i") || *w == "--in-place")
        {
            return true;
        }
        if program == "find"
            && words
                .iter()
                .any(|w| matches!(*w, "-delete" | "-exec" | "-execdir" | "-ok" | "-fprint"))
        {
            return true;
        }
    }
    false
}
