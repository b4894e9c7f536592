//! `compact-sim`: runs the provider simulator on a loopback port until interrupted.

use clap::Parser;
use compact_core::tokens::Encoding;
use compact_sim::{ChatOverflowWording, SimConfig, Simulator};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(
    name = "compact-sim",
    about = "Loopback LLM provider simulator (OpenAI Chat/Responses, Anthropic Messages)"
)]
struct Args {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to bind (loopback by default).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    host: IpAddr,
    /// Context window in tokens.
    #[arg(long, default_value_t = compact_sim::config::DEFAULT_WINDOW)]
    window: u64,
    /// Largest accepted request body in bytes.
    #[arg(long, default_value_t = compact_sim::config::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// Use the GPT-5 "configured limit" wording for Chat overflow errors.
    #[arg(long)]
    configured_limit_wording: bool,
    /// Length of the provider compaction summaries, in tokens (padded with filler; default: one
    /// short sentence).
    #[arg(long, value_name = "TOKENS")]
    compaction_summary_tokens: Option<u64>,
    /// How requests are counted, for both providers: `o200k_base` (exact, the default),
    /// `cl100k_base`, or `estimate` (a cheap estimate: for load benchmarks, where exact counting
    /// would make the simulator the bottleneck).
    #[arg(long, value_name = "ENCODING")]
    encoding: Option<Encoding>,
    /// A scripted agent task (a JSON file `{"trigger", "steps": [commands], "done"}`, as `POST
    /// /sim/agent` takes): requests that are steps of it are answered with the next command through
    /// the client's shell tool.
    #[arg(long, value_name = "FILE")]
    agent: Option<std::path::PathBuf>,
    /// Refuse requests that break the provider's rules with its 400 (tool pairing, roles, changed
    /// thinking blocks).
    #[arg(long)]
    validate: bool,
    /// Worker threads (1: everything on the main thread, the default).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: u16,
}

fn main() {
    let args = Args::parse();
    let runtime = if args.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(usize::from(args.threads))
            .enable_all()
            .build()
    };
    match runtime {
        Ok(rt) => rt.block_on(run(args)),
        Err(e) => {
            eprintln!("compact-sim: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(args: Args) {
    let agent = match args.agent.as_deref().map(read_agent).transpose() {
        Ok(agent) => agent.flatten(),
        Err(e) => {
            eprintln!("compact-sim: {e}");
            std::process::exit(2);
        }
    };
    let defaults = SimConfig::default();
    let config = SimConfig {
        bind: SocketAddr::new(args.host, args.port),
        window: args.window,
        max_body_bytes: args.max_body_bytes,
        chat_wording: if args.configured_limit_wording {
            ChatOverflowWording::ConfiguredLimit
        } else {
            ChatOverflowWording::Classic
        },
        compaction_summary_tokens: args.compaction_summary_tokens,
        openai_encoding: args.encoding.unwrap_or(defaults.openai_encoding),
        anthropic_encoding: args.encoding.unwrap_or(defaults.anthropic_encoding),
        agent,
        validate: args.validate,
        ..defaults
    };
    match Simulator::spawn(config).await {
        Ok(sim) => {
            println!(
                "compact-sim listening on {} (window {} tokens)",
                sim.base_url(),
                args.window
            );
            let _ = tokio::signal::ctrl_c().await;
        }
        Err(e) => {
            eprintln!("compact-sim: {e}");
            std::process::exit(1);
        }
    }
}

/// Reads the `--agent` file.
fn read_agent(path: &std::path::Path) -> Result<Option<compact_sim::AgentScript>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    compact_sim::agent_script(&value).map_err(|e| format!("{}: {e}", path.display()))
}
