//! One module per subcommand.

pub mod agent;
pub mod compact;
pub mod count;
pub mod diff;
pub mod hook;
pub mod inspect;
pub mod install;
pub mod mcp;
pub mod memory;
pub mod plan;
pub mod recall;
pub mod replay;
pub mod replay_store;
pub mod run;
pub mod serve;
pub mod sessions;
pub mod ui;
