//! `compactctl memory`: the facts the session runtime remembers for a session (`--session ID`) or a
//! project (`--project P`, the log its sessions promote durable facts to) in a store (`--store
//! sqlite:PATH`): list them, show one with every decision about it, forget one (logged, so it is
//! never injected again), and run the pre-tool gate on a shell command.

use crate::cmd::sessions::open_store;
use crate::exit::BadInput;
use crate::output::outln;
use anyhow::Context;
use clap::{Args, Subcommand};
use compact_core::memory::{gate, Change, Fact, GateDecision, KnownPaths, Lifecycle, Memory};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_session::memory::{project_session, read_changes, read_memory, LoggedChange};
use compact_session::{CompactManager, SessionConfig, SessionError, Store};
use serde_json::{json, Value};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `compactctl memory`.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// The store: `sqlite:PATH` (the file must exist) or `postgres://...`.
    #[arg(long, global = true, value_name = "URL")]
    store: Option<String>,
    /// A session's memory.
    #[arg(long, global = true, value_name = "ID", conflicts_with = "project")]
    session: Option<String>,
    /// A project's memory (its id, or the directory its sessions ran in).
    #[arg(long, global = true, value_name = "PROJECT")]
    project: Option<String>,
    /// Configuration file: its `memory.project` is the project when neither `--session` nor
    /// `--project` is given.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<String>,
    #[command(subcommand)]
    command: MemoryCommand,
}

#[derive(Debug, Subcommand)]
enum MemoryCommand {
    /// The facts: id, kind, lifecycle, evidence, confidence, text (trusted ones unless `--all`).
    List {
        /// Stale, superseded and forgotten facts too.
        #[arg(long)]
        all: bool,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One fact: its fields, its provenance and every decision about it.
    Show {
        /// The fact id (`f` and ten hex digits).
        id: String,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Forget a fact: logged (append-only), never injected or admitted again.
    Forget {
        /// The fact id.
        id: String,
    },
    /// Pin a fact: always injected first, never evicted by the caps nor superseded by a newer
    /// fact on the same subject (logged, append-only).
    Pin {
        /// The fact id.
        id: String,
    },
    /// Unpin a fact: back to an ordinary active fact.
    Unpin {
        /// The fact id.
        id: String,
    },
    /// Run the pre-tool gate on a shell command: print the command to run (rewritten to a
    /// remembered path, or as it is). A rewrite is logged in the session (`compact.memory_gate`).
    Gate {
        /// The command line.
        command: String,
        /// The tool's name, for the event.
        #[arg(long, default_value = "Bash")]
        tool: String,
        /// JSON (the decision and its reason) instead of the command alone.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `memory` subcommand.
pub fn run(args: &MemoryArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(args.store.as_deref())?;
    let log = target(args)?;
    match &args.command {
        MemoryCommand::List { all, json } => list(store.as_ref(), &log, *all, *json),
        MemoryCommand::Show { id, json } => show(store.as_ref(), &log, id, *json),
        MemoryCommand::Forget { id } => forget(store, &log, id),
        MemoryCommand::Pin { id } => set_lifecycle(store, &log, id, Lifecycle::Pinned),
        MemoryCommand::Unpin { id } => set_lifecycle(store, &log, id, Lifecycle::Active),
        MemoryCommand::Gate {
            command,
            tool,
            json,
        } => run_gate(store, &log, args.session.is_some(), command, tool, *json),
    }
}

/// The log to read: the session's, or the project's.
fn target(args: &MemoryArgs) -> anyhow::Result<String> {
    if let Some(s) = &args.session {
        return Ok(s.clone());
    }
    if let Some(p) = &args.project {
        return Ok(project_session(p));
    }
    if let Some(path) = &args.config {
        let config = compact_config::Config::load(
            Some(Path::new(path)),
            &compact_config::Overrides::default(),
        )
        .map_err(|e| BadInput(e.to_string()))?;
        if let Some(p) = config
            .session()
            .memory
            .as_ref()
            .and_then(|m| m.project.clone())
        {
            return Ok(project_session(&p));
        }
    }
    Err(BadInput("name the memory: --session ID or --project PROJECT".to_owned()).into())
}

/// The memory of `log`; an unknown log is bad input.
fn memory_of(store: &dyn Store, log: &str) -> anyhow::Result<(Memory, Vec<LoggedChange>)> {
    let changes = read_changes(store, log).map_err(|e| match e {
        compact_session::StoreError::UnknownSession(_) => {
            anyhow::Error::new(BadInput(format!("no memory for `{log}`")))
        }
        other => anyhow::Error::new(other),
    })?;
    let mut memory = Memory::new();
    for c in &changes {
        memory.apply(&c.change);
    }
    Ok((memory, changes))
}

fn list(store: &dyn Store, log: &str, all: bool, as_json: bool) -> anyhow::Result<ExitCode> {
    let (memory, _) = memory_of(store, log)?;
    let facts: Vec<&Fact> = memory
        .facts()
        .iter()
        .filter(|f| all || f.lifecycle.trusted())
        .collect();
    if as_json {
        let rows: Vec<Value> = facts.iter().map(|f| f.to_json()).collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<12} {:<11} {:<10} {:>8} {:>10}  text",
        "fact",
        "kind",
        "lifecycle",
        "evidence",
        "confidence"
    );
    for f in facts {
        outln!(
            "{:<12} {:<11} {:<10} {:>8} {:>10.2}  {}",
            f.id,
            f.kind.as_str(),
            f.lifecycle.as_str(),
            f.evidence,
            f.confidence,
            f.text
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A logged change as JSON, when it concerns `id`.
fn history_entry(c: &LoggedChange, id: &str) -> Option<Value> {
    match &c.change {
        Change::Candidate {
            candidate,
            outcome,
            reason,
            fact,
        } if fact.as_deref() == Some(id) => Some(json!({
            "seq": c.seq, "ts_ms": c.at_ms, "decision": outcome.as_str(), "reason": reason.as_str(),
            "sources": candidate.sources, "origin": candidate.origin.as_str(),
        })),
        Change::Moved {
            fact,
            to,
            reason,
            by,
        } if fact == id => Some(json!({
            "seq": c.seq, "ts_ms": c.at_ms, "moved_to": to.as_str(), "reason": reason.as_str(),
            "by": by,
        })),
        _ => None,
    }
}

fn show(store: &dyn Store, log: &str, id: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let (memory, changes) = memory_of(store, log)?;
    let fact = memory
        .get(id)
        .ok_or_else(|| BadInput(format!("no fact `{id}` in `{log}`")))?;
    let history: Vec<Value> = changes
        .iter()
        .filter_map(|c| history_entry(c, id))
        .collect();
    if as_json {
        let mut doc = fact.to_json();
        doc["history"] = Value::Array(history);
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("fact {}", fact.id);
    outln!("  kind        {}", fact.kind);
    outln!("  lifecycle   {}", fact.lifecycle);
    outln!("  text        {}", fact.text);
    if let Some(p) = &fact.path {
        outln!("  path        {p}");
    }
    outln!("  confidence  {:.2}", fact.confidence);
    outln!("  evidence    {}", fact.evidence);
    outln!("  origin      {}", fact.origin.as_str());
    outln!("  sources     {}", fact.sources.join(", "));
    if let Some(by) = &fact.superseded_by {
        outln!("  superseded  by {by}");
    }
    outln!("  history");
    for h in &history {
        let what = h["decision"]
            .as_str()
            .or_else(|| h["moved_to"].as_str())
            .unwrap_or("");
        outln!(
            "    #{:<6} {:<10} {}",
            h["seq"],
            what,
            h["reason"].as_str().unwrap_or("")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A manager over `store` for memory operations (its policy is never used to compact).
fn manager(store: Arc<dyn Store>) -> anyhow::Result<CompactManager> {
    let config = SessionConfig::new(Policy::default(), TokenCounter::new(Encoding::O200kBase));
    Ok(CompactManager::open(config, store)?)
}

fn forget(store: Arc<dyn Store>, log: &str, id: &str) -> anyhow::Result<ExitCode> {
    let manager = manager(store)?;
    match manager.forget(log, id) {
        Ok(Some(_)) => outln!("forgotten: {id}"),
        Ok(None) => outln!("already forgotten: {id}"),
        Err(SessionError::UnknownSession(_) | SessionError::InvalidSessionId(_)) => {
            return Err(BadInput(format!("no memory for `{log}`")).into())
        }
        Err(SessionError::Memory { source, .. }) => return Err(BadInput(source.to_string()).into()),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("forgetting {id}"))),
    }
    Ok(ExitCode::SUCCESS)
}

/// `pin` / `unpin`: moves a fact to `to` (pinned or active), logged like every decision.
fn set_lifecycle(
    store: Arc<dyn Store>,
    log: &str,
    id: &str,
    to: Lifecycle,
) -> anyhow::Result<ExitCode> {
    let manager = manager(store)?;
    match manager.set_fact_lifecycle(log, id, to) {
        Ok(Some(_)) => outln!("{}: {id}", to.as_str()),
        Ok(None) => outln!("already {}: {id}", to.as_str()),
        Err(SessionError::UnknownSession(_) | SessionError::InvalidSessionId(_)) => {
            return Err(BadInput(format!("no memory for `{log}`")).into())
        }
        Err(SessionError::Memory { source, .. }) => return Err(BadInput(source.to_string()).into()),
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!("setting {id} {}", to.as_str())))
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run_gate(
    store: Arc<dyn Store>,
    log: &str,
    is_session: bool,
    command: &str,
    tool: &str,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let memory = read_memory(store.as_ref(), log)?;
    let known = KnownPaths::from_facts(memory.facts());
    let decision = gate(command, &known);
    let (run, doc) = match &decision {
        GateDecision::Rewrite(r) => {
            if is_session {
                manager(store)?
                    .log_gate_rewrite(log, tool, r)
                    .with_context(|| format!("logging the rewrite in `{log}`"))?;
            }
            (
                r.rewritten.clone(),
                json!({"decision": "rewrite", "command": r.rewritten, "original_command": r.original,
                       "target": r.target, "path": r.path, "fact": r.fact}),
            )
        }
        GateDecision::Unchanged(skip) => (
            command.to_owned(),
            json!({"decision": "unchanged", "command": command, "reason": skip.as_str()}),
        ),
    };
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        outln!("{run}");
    }
    Ok(ExitCode::SUCCESS)
}
