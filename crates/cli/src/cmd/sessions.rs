//! `compactctl sessions`: the session logs the session runtime keeps in a store (`--store
//! sqlite:PATH`): list them, show one, recall an original by reference, export a session's history
//! (or its latest view) in a wire format, compact one now (`compact`, with `--review` to read and edit
//! the checkpoint in `$EDITOR` first), and remove old sessions (`gc`).

use crate::cmd::compact::parse_target;
use crate::exit::BadInput;
use crate::output::{outln, print_original, write_output};
use anyhow::Context;
use clap::{Args, Subcommand};
use compact_config::StorageSettings;
use compact_core::model::Format;
use compact_core::normalize::{normalize, ProviderRules};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_session::event::{EventData, EventKind};
use compact_session::record::{ItemSource, Record};
use compact_session::{CompactManager, SessionConfig, SessionError, Store};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Arguments of `compactctl sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// The store: `sqlite:PATH` (the file must exist).
    #[arg(long, global = true, value_name = "URL")]
    store: Option<String>,
    /// Configuration file: when it sets `storage.archive`, `recall` falls back to the archive and
    /// `gc` also applies the archive's retention (`max_age_days`, `max_bytes`).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<String>,
    #[command(subcommand)]
    command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// Every session: records, items received, compactions, last activity.
    List {
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One session: its log by record kind, events by kind, what was last sent.
    Show {
        /// The session id.
        id: String,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The original of an item, by the reference a marker, stub or checkpoint names.
    Recall {
        /// The session id.
        id: String,
        /// The item id.
        reference: String,
    },
    /// The session's history as received (or its latest view) as a wire request.
    Export {
        /// The session id.
        id: String,
        /// openai-chat, openai-responses or anthropic (default: the format the items came in,
        /// else openai-chat).
        #[arg(long)]
        format: Option<String>,
        /// The latest view (what the model is shown, normalised) instead of the history.
        #[arg(long)]
        view: bool,
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<String>,
    },
    /// Compact a session now (a manual compaction: its next request starts from the new view).
    Compact {
        /// The session id.
        id: String,
        /// Open the planned checkpoint in `$VISUAL` / `$EDITOR` first; the compaction applies with
        /// what is saved (an unchanged file applies it as planned, an empty one cancels).
        #[arg(long)]
        review: bool,
        /// The context window to compact for (default: the one the session last ran at, else the
        /// configuration's).
        #[arg(long)]
        window: Option<usize>,
        /// A note logged with the compaction.
        #[arg(long, default_value = "compactctl sessions compact")]
        note: String,
    },
    /// Remove sessions whose latest event is older than a duration.
    Gc {
        /// Age: a number and a unit, `s`, `m`, `h` or `d` (`30d`).
        #[arg(long, value_name = "DURATION")]
        older_than: String,
        /// List what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Runs a `sessions` subcommand.
pub fn run(args: &SessionsArgs) -> anyhow::Result<ExitCode> {
    // Listing a SQLite store no session has created yet is an empty list, not an error.
    if let (SessionsCommand::List { json }, Some(path)) = (&args.command, missing_sqlite(args)) {
        eprintln!("compactctl: no sessions yet (`{path}` does not exist)");
        let empty = compact_session::MemoryStore::new();
        return list(&empty, *json);
    }
    let store = open_store(args.store.as_deref())?;
    let archive = match &args.config {
        None => None,
        Some(path) => {
            let config = compact_config::Config::load(
                Some(Path::new(path)),
                &compact_config::Overrides::default(),
            )
            .map_err(|e| BadInput(e.to_string()))?;
            let retention = compact_session::archive_retention(&config);
            let env = compact_wiring::Env::process();
            let client =
                compact_wiring::client(&config, &env).map_err(|e| BadInput(e.to_string()))?;
            compact_wiring::archive(&config, &env, Some(&client))
                .map_err(|e| BadInput(e.to_string()))?
                .map(|a| (a, retention))
        }
    };
    match &args.command {
        SessionsCommand::List { json } => list(store.as_ref(), *json),
        SessionsCommand::Show { id, json } => show(store.as_ref(), id, *json),
        SessionsCommand::Recall { id, reference } => {
            recall(store, archive.map(|(a, _)| a), id, reference)
        }
        SessionsCommand::Export {
            id,
            format,
            view,
            output,
        } => export(store, id, format.as_deref(), *view, output.as_deref()),
        SessionsCommand::Compact {
            id,
            review,
            window,
            note,
        } => compact_now(store, args.config.as_deref(), id, *review, *window, note),
        SessionsCommand::Gc {
            older_than,
            dry_run,
        } => {
            gc(store.as_ref(), older_than, *dry_run)?;
            if let Some((archive, retention)) = &archive {
                gc_archive(archive.as_ref(), retention, *dry_run)?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Applies the configured retention to the archive (oldest first; `dry_run` lists only).
fn gc_archive(
    archive: &dyn compact_session::Archive,
    retention: &compact_session::archive::Retention,
    dry_run: bool,
) -> anyhow::Result<()> {
    let now = SystemTime::now();
    if dry_run {
        let objects = archive.list(None)?;
        let doomed = compact_session::archive::plan_gc(&objects, retention, now);
        let bytes: u64 = doomed.iter().map(|&i| objects[i].size).sum();
        outln!(
            "{} archived object(s) ({bytes} bytes) would be deleted",
            doomed.len()
        );
    } else {
        let report = compact_session::archive::gc(archive, retention, now)?;
        outln!(
            "{} archived object(s) deleted ({} bytes), {} kept ({} bytes)",
            report.deleted.len(),
            report.freed_bytes,
            report.kept,
            report.kept_bytes
        );
    }
    Ok(())
}

/// The path of `--store` when it names a SQLite file that does not exist.
fn missing_sqlite(args: &SessionsArgs) -> Option<String> {
    match StorageSettings::parse_url(args.store.as_deref()?).ok()? {
        StorageSettings::Sqlite { path } if !path.exists() => Some(path.display().to_string()),
        _ => None,
    }
}

/// Opens `--store`: `sqlite:PATH` of an existing file, or `postgres://...`. A memory store is
/// refused (nothing persists between two runs of a command).
pub fn open_store(url: Option<&str>) -> anyhow::Result<Arc<dyn Store>> {
    let url = url.ok_or_else(|| BadInput("--store is required (sqlite:PATH)".to_owned()))?;
    open_store_url(url, false)
}

/// Opens the store at `url` (`sqlite:PATH` or `postgres://...`; a memory store is refused); a
/// SQLite file is created when missing only if `create` (a command that writes sessions).
pub fn open_store_url(url: &str, create: bool) -> anyhow::Result<Arc<dyn Store>> {
    compact_wiring::store_at(url, create, false).map_err(|e| BadInput(e.to_string()).into())
}

/// A manager over `store` for reading (its policy is never used to compact).
fn reader(store: Arc<dyn Store>) -> anyhow::Result<CompactManager> {
    let config = SessionConfig::new(Policy::default(), TokenCounter::new(Encoding::O200kBase));
    Ok(CompactManager::open(config, store)?)
}

/// Unknown sessions are bad input.
fn session_error(id: &str, e: SessionError) -> anyhow::Error {
    match e {
        SessionError::UnknownSession(_) | SessionError::InvalidSessionId(_) => {
            BadInput(format!("unknown session `{id}`")).into()
        }
        other => anyhow::Error::new(other).context(format!("session `{id}`")),
    }
}

/// What one log holds, by record kind.
#[derive(Debug, Default)]
struct Tally {
    records: u64,
    items: usize,
    originals: usize,
    views: usize,
    events: BTreeMap<&'static str, usize>,
    last_sent: Option<serde_json::Value>,
    first_ms: Option<u64>,
    last_ms: Option<u64>,
    parent: Option<String>,
    /// What the provider holds (the latest `compact.provider_state`).
    provider: Option<serde_json::Value>,
}

fn tally(store: &dyn Store, id: &str) -> anyhow::Result<Tally> {
    let records = store.read(id, 0).map_err(|e| match e {
        compact_session::StoreError::UnknownSession(_) => {
            anyhow::Error::new(BadInput(format!("unknown session `{id}`")))
        }
        other => anyhow::Error::new(other),
    })?;
    let mut t = Tally::default();
    for stored in &records {
        t.records = stored.seq;
        match &stored.record {
            Record::Item(r) if r.source == ItemSource::Received => t.items += 1,
            Record::Item(_) => t.originals += 1,
            Record::View(_) => t.views += 1,
            Record::Event(e) => {
                *t.events.entry(e.kind.as_str()).or_default() += 1;
                t.first_ms.get_or_insert(e.at_ms);
                t.last_ms = Some(e.at_ms);
                if e.kind == EventKind::SessionLinked && t.parent.is_none() {
                    t.parent = compact_session::LinkedEvent::from_event(e).map(|l| l.parent);
                }
                if e.kind == EventKind::Sent {
                    t.last_sent = Some(serde_json::Value::Object(e.data.clone()));
                }
                if let Some(held) = compact_session::ProviderHeld::from_event(e) {
                    t.provider = held.map(|h| h.to_json());
                }
            }
        }
    }
    Ok(t)
}

fn list(store: &dyn Store, as_json: bool) -> anyhow::Result<ExitCode> {
    let mut rows = Vec::new();
    for summary in store.list_sessions()? {
        let t = tally(store, &summary.id)?;
        rows.push(json!({
            "id": summary.id, "records": summary.version, "items": t.items,
            "compactions": t.events.get(EventKind::Compacted.as_str()).copied().unwrap_or(0),
            "last_event_ms": summary.last_event_ms, "parent": t.parent,
        }));
    }
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<40} {:>8} {:>8} {:>11}  last activity",
        "session (subagents below their parent)",
        "records",
        "items",
        "compactions"
    );
    let tree = compact_session::link::tree_order(
        &rows,
        |r| r["id"].as_str().unwrap_or(""),
        |r| r["parent"].as_str(),
    );
    for (r, depth) in tree {
        let name = format!("{}{}", "  ".repeat(depth), r["id"].as_str().unwrap_or(""));
        outln!(
            "{:<40} {:>8} {:>8} {:>11}  {}",
            name,
            r["records"],
            r["items"],
            r["compactions"],
            r["last_event_ms"]
                .as_u64()
                .map_or_else(|| "-".to_owned(), ago)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn show(store: &dyn Store, id: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let t = tally(store, id)?;
    let doc = json!({
        "id": id, "records": t.records, "items_received": t.items,
        "truncated_originals": t.originals, "views": t.views, "events": t.events,
        "first_event_ms": t.first_ms, "last_event_ms": t.last_ms, "last_sent": t.last_sent,
        "provider": t.provider,
    });
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("session {id}");
    outln!("  records             {}", t.records);
    outln!("  items received      {}", t.items);
    outln!("  truncated originals {}", t.originals);
    outln!("  views (compactions) {}", t.views);
    if let Some(ms) = t.last_ms {
        outln!("  last activity       {}", ago(ms));
    }
    if let Some(sent) = &t.last_sent {
        outln!(
            "  last sent           {} items, {} tokens ({} reused)",
            sent["items"],
            sent["tokens"],
            sent["reused_items"]
        );
    }
    if let Some(p) = &t.provider {
        let at = match (p["index"].as_u64(), p["wire"].as_str()) {
            (Some(i), Some(wire)) => format!("{wire} at item {i}"),
            _ => "announced by a reply, not yet sent back".to_owned(),
        };
        outln!(
            "  provider holds      a compaction ({at}) superseding {} items, {} tokens",
            p["superseded_items"],
            p["superseded_tokens"]
        );
    }
    outln!("  events");
    for (kind, n) in &t.events {
        outln!("    {kind:<28} {n}");
    }
    Ok(ExitCode::SUCCESS)
}

fn recall(
    store: Arc<dyn Store>,
    archive: Option<Arc<dyn compact_session::Archive>>,
    id: &str,
    reference: &str,
) -> anyhow::Result<ExitCode> {
    let mut manager = reader(store)?;
    if let Some(archive) = archive {
        manager = manager.with_archive(archive);
    }
    let item = manager.recall(id, reference).map_err(|e| match e {
        SessionError::UnknownReference { .. } => {
            BadInput(format!("session `{id}` has no item with id `{reference}`")).into()
        }
        other => session_error(id, other),
    })?;
    print_original(&item.plain_text())?;
    Ok(ExitCode::SUCCESS)
}

fn export(
    store: Arc<dyn Store>,
    id: &str,
    format: Option<&str>,
    view: bool,
    output: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let target = parse_target(format)
        .map_err(|e| BadInput(e.to_string().replacen("--to", "--format", 1)))?;
    let manager = reader(store)?;
    let conv = if view {
        (*manager.view(id).map_err(|e| session_error(id, e))?).clone()
    } else {
        manager.history(id).map_err(|e| session_error(id, e))?
    };
    let target = target
        .or(conv.format)
        .or_else(|| conv.items.iter().find_map(|i| i.meta.origin))
        .filter(|f| f.is_wire())
        .unwrap_or(Format::OpenAiChat);
    let conv = if view {
        normalize(&conv, &ProviderRules::for_format(target)).conversation
    } else {
        conv
    };
    let encoded = compact_formats::wire::encode(&conv, target)
        .with_context(|| format!("encoding session `{id}` as {target}"))?;
    for loss in &encoded.losses {
        eprintln!("compactctl: note: {target} cannot carry everything: {loss}");
    }
    let mut text = serde_json::to_string_pretty(&encoded.value)?;
    text.push('\n');
    write_output(output, &text)?;
    Ok(ExitCode::SUCCESS)
}

/// Seconds per unit of a `--older-than` duration.
const UNITS: [(char, u64); 4] = [('s', 1), ('m', 60), ('h', 3_600), ('d', 86_400)];

/// Parses `30d`, `12h`, `90m`, `45s`.
fn parse_duration(text: &str) -> anyhow::Result<Duration> {
    let bad = || {
        BadInput(format!(
            "--older-than `{text}`: expected a number and a unit (s, m, h, d), e.g. 30d"
        ))
    };
    let text = text.trim();
    let unit = text.chars().last().ok_or_else(bad)?;
    let (_, seconds) = UNITS.iter().find(|(u, _)| *u == unit).ok_or_else(bad)?;
    let n: u64 = text[..text.len() - 1].parse().map_err(|_| bad())?;
    let secs = n.checked_mul(*seconds).ok_or_else(bad)?;
    Ok(Duration::from_secs(secs))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `12 s ago`, `3 d ago`.
fn ago(ms: u64) -> String {
    let secs = now_ms().saturating_sub(ms) / 1_000;
    let (unit, size) = UNITS
        .iter()
        .rev()
        .find(|(_, size)| secs >= *size)
        .copied()
        .unwrap_or(('s', 1));
    format!("{} {unit} ago", secs / size)
}

fn gc(store: &dyn Store, older_than: &str, dry_run: bool) -> anyhow::Result<ExitCode> {
    let age = parse_duration(older_than)?;
    let cutoff = now_ms().saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX));
    let mut removed = 0;
    for summary in store.list_sessions()? {
        // A project's memory outlives its sessions: `compactctl memory forget --project` prunes it.
        if compact_session::memory::is_project_session(&summary.id) {
            continue;
        }
        // A session with no event yet was created and never used: its age is unknown, so it stays.
        let Some(last) = summary.last_event_ms else {
            continue;
        };
        if last >= cutoff {
            continue;
        }
        if dry_run {
            outln!("would remove {} (last activity {})", summary.id, ago(last));
        } else if store.delete_session(&summary.id)? {
            outln!("removed {} (last activity {})", summary.id, ago(last));
        }
        removed += 1;
    }
    outln!(
        "{removed} session(s) {}",
        if dry_run {
            "would be removed"
        } else {
            "removed"
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The window `id` last ran at (its latest `compact.trigger_decision` event).
fn last_window(store: &dyn Store, id: &str) -> anyhow::Result<Option<usize>> {
    match compact_session::last_window(store, id) {
        Err(compact_session::StoreError::UnknownSession(_)) => {
            Err(BadInput(format!("unknown session `{id}`")).into())
        }
        other => Ok(other?),
    }
}

/// `sessions compact ID [--review]`.
fn compact_now(
    store: Arc<dyn Store>,
    config: Option<&str>,
    id: &str,
    review: bool,
    window: Option<usize>,
    note: &str,
) -> anyhow::Result<ExitCode> {
    let config =
        compact_config::Config::load(config.map(Path::new), &compact_config::Overrides::default())
            .map_err(|e| BadInput(e.to_string()))?;
    let mut session = SessionConfig::from_config(&config);
    let window = match window {
        Some(w) => Some(w),
        None => last_window(store.as_ref(), id)?,
    };
    if let Some(w) = window {
        session.policy.max_context_tokens = w;
    }
    let manager = CompactManager::open(session, store).map_err(|e| BadInput(e.to_string()))?;
    let done = if review {
        let proposal = manager.propose(id).map_err(|e| session_error(id, e))?;
        let Some(planned) = proposal.checkpoint.clone() else {
            return Err(BadInput(format!(
                "session `{id}`: the planned compaction writes no checkpoint to review"
            ))
            .into());
        };
        let edited = edit(&planned)?;
        if edited.trim().is_empty() {
            outln!("session `{id}`: empty checkpoint saved, nothing applied");
            return Ok(ExitCode::SUCCESS);
        }
        let edit = (edited.trim() != planned.trim()).then_some(edited.as_str());
        manager
            .apply(&proposal, edit)
            .map_err(|e| session_error(id, e))?
    } else {
        manager
            .manual_compact(id, note)
            .map_err(|e| session_error(id, e))?
    };
    outln!(
        "session `{id}` compacted: {} -> {} tokens ({} saved), {} items compressed",
        done.tokens_before,
        done.tokens_after,
        done.tokens_saved,
        done.items_compressed
    );
    Ok(ExitCode::SUCCESS)
}

/// Opens `text` in `$VISUAL` or `$EDITOR` (run by `sh`, so either may hold arguments) and returns
/// what was saved.
fn edit(text: &str) -> anyhow::Result<String> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .or_else(|| {
            std::env::var("EDITOR")
                .ok()
                .filter(|e| !e.trim().is_empty())
        })
        .ok_or_else(|| BadInput("--review needs $VISUAL or $EDITOR".to_owned()))?;
    let path = std::env::temp_dir().join(format!(
        "compact-checkpoint-{}-{}.md",
        std::process::id(),
        now_ms()
    ));
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status()
        .with_context(|| format!("cannot run the editor `{editor}`"))?;
    let saved = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    if !status.success() {
        return Err(BadInput(format!(
            "the editor `{editor}` failed ({status}): nothing applied"
        ))
        .into());
    }
    saved.with_context(|| format!("cannot read {}", path.display()))
}
