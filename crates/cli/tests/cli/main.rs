//! End-to-end tests of the `compactctl` binary: every subcommand run as a process on fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agents;
mod arch;
mod clients;
mod codex;
mod compact;
mod count;
mod exit;
mod golden;
mod golden_proxy;
mod inspect;
mod limits;
mod llm;
mod memory;
mod plan_diff;
mod recall;
mod replay;
mod run;
mod scaleout;
mod serve;
mod sessions;
mod shutdown;
mod support;
mod ui;
