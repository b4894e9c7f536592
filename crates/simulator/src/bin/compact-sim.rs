//! `compact-sim`: runs the provider simulator on a loopback port until interrupted.

use clap::Parser;
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
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
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
        ..SimConfig::default()
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
