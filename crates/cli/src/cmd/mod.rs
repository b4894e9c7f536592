//! One module per subcommand.

pub mod compact;
pub mod count;
pub mod diff;
pub mod inspect;
pub mod plan;
pub mod recall;
pub mod replay;
pub mod serve;
pub mod sessions;
