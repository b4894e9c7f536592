//! `compactctl`: the command line of Compact (inspect, count, compact, plan, diff, recall, replay, run,
//! sessions, memory, serve, ui, and the agent integrations: hook, install, uninstall, mcp).

mod cmd;
mod engine;
mod exit;
mod input;
mod load;
mod logging;
mod output;
mod resolve;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// mimalloc instead of the system allocator: see the dependency's note in Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Compact: keep an agent's conversation inside its context window.
#[derive(Debug, Parser)]
#[command(name = "compactctl", version, about, propagate_version = true)]
struct Cli {
    /// How log lines on standard error are written (which ones: RUST_LOG, default
    /// `warn,compact=info`).
    #[arg(long, global = true, value_enum, default_value = "json")]
    log_format: logging::LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the token count of raw text.
    Count(cmd::count::CountArgs),
    /// Describe a conversation or transcript: items, tool calls, orphans, errors, tokens.
    Inspect(cmd::inspect::InspectArgs),
    /// Compact a conversation into a window and write it in a wire format.
    Compact(cmd::compact::CompactArgs),
    /// Dry run: what each tier would do, tokens before and after.
    Plan(cmd::plan::PlanArgs),
    /// Per item: kept, truncated, referenced, summarised or dropped.
    Diff(cmd::diff::DiffArgs),
    /// Print the original content of an item.
    Recall(cmd::recall::RecallArgs),
    /// Replay transcripts through strategies: overflows, cost with prompt caching, fact retention.
    Replay(cmd::replay::ReplayArgs),
    /// Run a command, its output cut to a token budget for the agent (the full output recallable).
    Run(cmd::run::RunArgs),
    /// Session logs of the session runtime: list, show, recall, export, gc.
    Sessions(cmd::sessions::SessionsArgs),
    /// Remembered facts of a session or project: list, show, forget, and the pre-tool gate.
    Memory(cmd::memory::MemoryArgs),
    /// Run as a Claude Code or Codex hook: add back what the agent's compaction drops.
    Hook(cmd::hook::HookArgs),
    /// Add the hook and the MCP server to an agent's settings (merged, idempotent).
    Install(cmd::install::InstallArgs),
    /// Remove what `install` added.
    Uninstall(cmd::install::InstallArgs),
    /// An MCP server over stdio: recall, search_history, context_status, checkpoint.
    Mcp(cmd::mcp::McpArgs),
    /// Run the compaction proxy (OpenAI- and Anthropic-compatible) in front of a provider.
    Serve(cmd::serve::ServeArgs),
    /// Web view of a session store: sessions, the token sawtooth, compaction diffs, recall, search.
    Ui(cmd::ui::UiArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.log_format);
    let result = match &cli.command {
        Command::Count(args) => cmd::count::run(args),
        Command::Inspect(args) => cmd::inspect::run(args),
        Command::Compact(args) => cmd::compact::run(args),
        Command::Plan(args) => cmd::plan::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Recall(args) => cmd::recall::run(args),
        Command::Replay(args) => cmd::replay::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Sessions(args) => cmd::sessions::run(args),
        Command::Memory(args) => cmd::memory::run(args),
        Command::Hook(args) => cmd::hook::run(args),
        Command::Install(args) => cmd::install::run(args, cmd::install::Action::Install),
        Command::Uninstall(args) => cmd::install::run(args, cmd::install::Action::Uninstall),
        Command::Mcp(args) => cmd::mcp::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Ui(args) => cmd::ui::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => exit::report(&err),
    }
}
