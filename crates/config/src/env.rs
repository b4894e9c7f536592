//! Environment overrides: `COMPACT_*` variables, parsed into an [`Overrides`] layer.
//!
//! | variable | field |
//! |---|---|
//! | `COMPACT_MODE` | `policy.mode` |
//! | `COMPACT_MODEL` | `model` |
//! | `COMPACT_MAX_CONTEXT_TOKENS` | `max_context_tokens` |
//! | `COMPACT_RESERVED_OUTPUT_TOKENS` | `policy.reserved_output_tokens` |
//! | `COMPACT_HARD_CAP_BUFFER` | `policy.hard_cap_buffer` |
//! | `COMPACT_TRIGGER_PCT` | `policy.trigger_pct` |
//! | `COMPACT_SOFT_TRIGGER_PCT` | `policy.soft_trigger_pct` |
//! | `COMPACT_BOUNDARY_TRIGGER_PCT` | `policy.boundary_trigger_pct` |
//! | `COMPACT_MIN_TOKENS_LEFT` | `policy.min_tokens_left` |
//! | `COMPACT_TARGET_PCT` | `policy.target_pct` |
//! | `COMPACT_MIN_GAIN_PCT` | `policy.min_gain_pct` |
//! | `COMPACT_KEEP_RECENT_TURNS` | `policy.keep_recent_turns` |
//! | `COMPACT_KEEP_TOOL_IO_PAIRS` | `policy.keep_tool_io_pairs` |
//! | `COMPACT_ROLES_NEVER_PRUNE` | `policy.roles_never_prune` (comma-separated) |
//! | `COMPACT_PROTECTED_FLAG` | `policy.protected_flag` |
//! | `COMPACT_PROTECTED_TOOLS` | `policy.protected_tools` (comma-separated) |
//! | `COMPACT_STRATEGY` | `policy.strategy` |
//! | `COMPACT_REVERSIBLE` | `policy.reversible` |
//! | `COMPACT_TOOL_OUTPUT_TRUNCATION` | `policy.tool_output.mode` |
//! | `COMPACT_TOOL_OUTPUT_MAX_TOKENS` | `policy.tool_output.max_tokens` |
//! | `COMPACT_TOOL_OUTPUT_SERIALIZATION_BUFFER` | `policy.tool_output.serialization_buffer` |
//! | `COMPACT_TOOL_OUTPUT_HEAD_FRACTION` | `policy.tool_output.head_fraction` |
//! | `COMPACT_USER_MESSAGE_MAX_TOKENS` | `policy.user_message_max_tokens` |
//! | `COMPACT_TIER1_MIN_SAVINGS_TOKENS` | `policy.tier1_min_savings_tokens` |
//! | `COMPACT_OVERFLOW_MAX_RETRIES` | `policy.overflow_max_retries` |
//! | `COMPACT_IDLE_DELAY_MS` | `policy.idle_delay_ms` (0: off) |
//! | `COMPACT_SUMMARY_MAX_TOKENS` | `policy.summary_max_tokens` |
//! | `COMPACT_ON_SUMMARIZER_FAILURE` | `policy.on_summarizer_failure` |
//! | `COMPACT_SUMMARIZER` | `summarizer.kind` |
//! | `COMPACT_SUMMARIZER_MODEL` | `summarizer.model` |
//! | `COMPACT_SUMMARIZER_BASE_URL` | `summarizer.base_url` |
//! | `COMPACT_SUMMARIZER_TEMPLATE` | `summarizer.template` |
//! | `COMPACT_SUMMARIZER_CACHE_WARM` | `summarizer.cache_warm` |
//! | `COMPACT_PROXY_LISTEN` | `proxy.listen` |
//! | `COMPACT_PROXY_OPENAI_BASE_URL` | `proxy.openai.base_url` |
//! | `COMPACT_PROXY_ANTHROPIC_BASE_URL` | `proxy.anthropic.base_url` |
//! | `COMPACT_PROXY_MAX_IN_FLIGHT` | `proxy.max_in_flight` (a number, or `off`) |
//! | `COMPACT_PROXY_MAX_QUEUE` | `proxy.max_queue` |
//! | `COMPACT_PROXY_QUEUE_TIMEOUT_MS` | `proxy.queue_timeout_ms` |
//!
//! Other `COMPACT_*` variables are ignored (other tools may use the prefix), but an empty or unparsable
//! value of a listed variable is an error naming the variable.

use crate::error::ConfigError;
use crate::layer::Overrides;
use std::str::FromStr;

/// Every variable read, in documentation order.
pub const VARIABLES: [&str; 38] = [
    "COMPACT_MODE",
    "COMPACT_MODEL",
    "COMPACT_MAX_CONTEXT_TOKENS",
    "COMPACT_RESERVED_OUTPUT_TOKENS",
    "COMPACT_HARD_CAP_BUFFER",
    "COMPACT_TRIGGER_PCT",
    "COMPACT_SOFT_TRIGGER_PCT",
    "COMPACT_BOUNDARY_TRIGGER_PCT",
    "COMPACT_MIN_TOKENS_LEFT",
    "COMPACT_TARGET_PCT",
    "COMPACT_KEEP_RECENT_TURNS",
    "COMPACT_KEEP_TOOL_IO_PAIRS",
    "COMPACT_ROLES_NEVER_PRUNE",
    "COMPACT_PROTECTED_FLAG",
    "COMPACT_PROTECTED_TOOLS",
    "COMPACT_STRATEGY",
    "COMPACT_TOOL_OUTPUT_TRUNCATION",
    "COMPACT_TOOL_OUTPUT_MAX_TOKENS",
    "COMPACT_TOOL_OUTPUT_SERIALIZATION_BUFFER",
    "COMPACT_TOOL_OUTPUT_HEAD_FRACTION",
    "COMPACT_USER_MESSAGE_MAX_TOKENS",
    "COMPACT_OVERFLOW_MAX_RETRIES",
    "COMPACT_IDLE_DELAY_MS",
    "COMPACT_TIER1_MIN_SAVINGS_TOKENS",
    "COMPACT_SUMMARY_MAX_TOKENS",
    "COMPACT_ON_SUMMARIZER_FAILURE",
    "COMPACT_SUMMARIZER",
    "COMPACT_SUMMARIZER_MODEL",
    "COMPACT_SUMMARIZER_BASE_URL",
    "COMPACT_SUMMARIZER_TEMPLATE",
    "COMPACT_SUMMARIZER_CACHE_WARM",
    "COMPACT_PROXY_LISTEN",
    "COMPACT_PROXY_OPENAI_BASE_URL",
    "COMPACT_PROXY_ANTHROPIC_BASE_URL",
    "COMPACT_PROXY_MAX_IN_FLIGHT",
    "COMPACT_PROXY_MAX_QUEUE",
    "COMPACT_PROXY_QUEUE_TIMEOUT_MS",
    "COMPACT_CONFIG",
];

fn num<T: FromStr>(var: &str, value: &str) -> Result<Option<T>, ConfigError> {
    value
        .trim()
        .parse::<T>()
        .map(Some)
        .map_err(|_| ConfigError::Env {
            var: var.to_owned(),
            value: value.to_owned(),
            reason: "not a valid number".to_owned(),
        })
}

fn list(value: &str) -> Option<Vec<String>> {
    Some(
        value
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
    )
}

/// The overrides layer from `vars` (name, value) pairs, e.g. `std::env::vars()`.
pub fn from_vars<I, K, V>(vars: I) -> Result<Overrides, ConfigError>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut o = Overrides::default();
    for (k, v) in vars {
        let (var, value) = (k.as_ref(), v.as_ref());
        if !var.starts_with("COMPACT_") {
            continue;
        }
        if VARIABLES.contains(&var) && value.trim().is_empty() {
            return Err(ConfigError::Env {
                var: var.to_owned(),
                value: value.to_owned(),
                reason: "empty value".to_owned(),
            });
        }
        let s = Some(value.trim().to_owned());
        match var {
            "COMPACT_MODE" => o.mode = s,
            "COMPACT_MODEL" => o.model = s,
            "COMPACT_MAX_CONTEXT_TOKENS" => o.max_context_tokens = num(var, value)?,
            "COMPACT_RESERVED_OUTPUT_TOKENS" => o.reserved_output_tokens = num(var, value)?,
            "COMPACT_HARD_CAP_BUFFER" => o.hard_cap_buffer = num(var, value)?,
            "COMPACT_TRIGGER_PCT" => o.trigger_pct = num(var, value)?,
            "COMPACT_SOFT_TRIGGER_PCT" => o.soft_trigger_pct = num(var, value)?,
            "COMPACT_BOUNDARY_TRIGGER_PCT" => o.boundary_trigger_pct = num(var, value)?,
            "COMPACT_MIN_TOKENS_LEFT" => o.min_tokens_left = num(var, value)?,
            "COMPACT_TARGET_PCT" => o.target_pct = num(var, value)?,
            "COMPACT_MIN_GAIN_PCT" => o.min_gain_pct = num(var, value)?,
            "COMPACT_KEEP_RECENT_TURNS" => o.keep_recent_turns = num(var, value)?,
            "COMPACT_KEEP_TOOL_IO_PAIRS" => o.keep_tool_io_pairs = num(var, value)?,
            "COMPACT_ROLES_NEVER_PRUNE" => o.roles_never_prune = list(value),
            "COMPACT_PROTECTED_FLAG" => o.protected_flag = s,
            "COMPACT_PROTECTED_TOOLS" => o.protected_tools = list(value),
            "COMPACT_STRATEGY" => o.strategy = s,
            "COMPACT_TOOL_OUTPUT_TRUNCATION" => o.tool_output_mode = s,
            "COMPACT_TOOL_OUTPUT_MAX_TOKENS" => o.tool_output_max_tokens = num(var, value)?,
            "COMPACT_TOOL_OUTPUT_SERIALIZATION_BUFFER" => {
                o.tool_output_serialization_buffer = num(var, value)?
            }
            "COMPACT_TOOL_OUTPUT_HEAD_FRACTION" => o.tool_output_head_fraction = num(var, value)?,
            "COMPACT_USER_MESSAGE_MAX_TOKENS" => o.user_message_max_tokens = num(var, value)?,
            "COMPACT_OVERFLOW_MAX_RETRIES" => o.overflow_max_retries = num(var, value)?,
            "COMPACT_IDLE_DELAY_MS" => o.idle_delay_ms = num(var, value)?,
            "COMPACT_TIER1_MIN_SAVINGS_TOKENS" => o.tier1_min_savings_tokens = num(var, value)?,
            "COMPACT_REVERSIBLE" => o.reversible = s,
            "COMPACT_SUMMARY_MAX_TOKENS" => o.summary_max_tokens = num(var, value)?,
            "COMPACT_ON_SUMMARIZER_FAILURE" => o.on_summarizer_failure = s,
            "COMPACT_SUMMARIZER" => o.summarizer_kind = s,
            "COMPACT_SUMMARIZER_MODEL" => o.summarizer_model = s,
            "COMPACT_SUMMARIZER_BASE_URL" => o.summarizer_base_url = s,
            "COMPACT_SUMMARIZER_TEMPLATE" => o.summarizer_template = s,
            "COMPACT_SUMMARIZER_CACHE_WARM" => o.summarizer_cache_warm = s,
            "COMPACT_PROXY_LISTEN" => o.proxy_listen = s,
            "COMPACT_PROXY_OPENAI_BASE_URL" => o.proxy_openai_base_url = s,
            "COMPACT_PROXY_ANTHROPIC_BASE_URL" => o.proxy_anthropic_base_url = s,
            "COMPACT_PROXY_MAX_IN_FLIGHT" => o.proxy_max_in_flight = s,
            "COMPACT_PROXY_MAX_QUEUE" => o.proxy_max_queue = num(var, value)?,
            "COMPACT_PROXY_QUEUE_TIMEOUT_MS" => o.proxy_queue_timeout_ms = num(var, value)?,
            _ => {}
        }
    }
    Ok(o)
}
