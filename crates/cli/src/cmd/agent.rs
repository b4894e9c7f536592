//! The agent names the `hook`, `install`, `uninstall` and `mcp` commands take.

use clap::ValueEnum;
use compact_agents::hook::Agent;

/// An agent, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentName {
    /// Claude Code.
    ClaudeCode,
    /// Codex CLI.
    Codex,
}

impl AgentName {
    /// The library's agent.
    pub fn agent(self) -> Agent {
        match self {
            AgentName::ClaudeCode => Agent::ClaudeCode,
            AgentName::Codex => Agent::Codex,
        }
    }
}
