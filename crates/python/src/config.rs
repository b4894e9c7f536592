//! The configuration: the Python package writes its `CompactConfig` as a configuration document
//! (the YAML file's shape, as JSON) or passes a YAML file's text, and it is resolved and validated
//! here by `compact-config`, exactly as `compactctl` resolves its file. Nothing is validated twice.

use crate::errors::{raise, Failure};
use compact_config::{Config, Overrides, SummarizerKind};
use compact_engine::Summarizer;
use compact_llm::Template;
use compact_session::SessionConfig;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

/// Resolves a configuration document (`name` is used in error messages). With `env`, the
/// `COMPACT_*` environment variables are applied on top, as `compactctl` does.
pub fn resolve(name: &str, text: &str, env: bool) -> Result<Config, Failure> {
    let env_layer = if env {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        compact_config::env::from_vars(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))?
    } else {
        Overrides::default()
    };
    Ok(Config::from_sources(
        Some((name, text)),
        &env_layer,
        &Overrides::default(),
    )?)
}

/// The summariser a configuration's `summarizer:` names, built by `compact-wiring` as
/// `compactctl` builds it (`None` for the deterministic one). Failures of a model summariser are
/// left to the policy's `on_summarizer_failure`.
pub fn llm_summarizer(
    config: &Config,
    client: &compact_net::Client,
) -> Result<Option<Arc<dyn Summarizer>>, Failure> {
    if config.summarizer().kind == SummarizerKind::Deterministic {
        return Ok(None);
    }
    compact_wiring::summarizer(config.summarizer(), Some(client))
        .map(Some)
        .map_err(|e| Failure::new("ConfigError", "summarizer", e.to_string()))
}

/// The summary template the configuration names (`summarizer.template`, or seed 003's
/// `policy.strategy: task_state`), `checkpoint` by default.
pub fn template(config: &Config) -> Result<Template, Failure> {
    match &config.summarizer().template {
        Some(name) => name.parse().map_err(|e| {
            Failure::new(
                "ConfigError",
                "summarizer",
                format!("summarizer.template: {e}"),
            )
        }),
        None => Ok(Template::Checkpoint),
    }
}

/// The session settings of a resolved configuration.
pub fn session_config(config: &Config) -> SessionConfig {
    SessionConfig::from_config(config)
}

/// The resolved configuration as a dict: the window, the usable budget and the policy as the
/// engine will apply it.
fn describe<'py>(py: Python<'py>, config: &Config) -> PyResult<Bound<'py, PyDict>> {
    let p = config.policy();
    let budget = compact_core::budget::Budget::new(p);
    let d = PyDict::new(py);
    d.set_item("model", p.model.clone())?;
    d.set_item("max_context_tokens", p.max_context_tokens)?;
    d.set_item("reserved_output_tokens", p.reserved_output_tokens)?;
    d.set_item("hard_cap_buffer", p.hard_cap_buffer)?;
    d.set_item("usable_tokens", budget.usable)?;
    d.set_item("trigger_tokens", budget.trigger)?;
    d.set_item("trigger_pct", p.trigger_pct)?;
    d.set_item("soft_trigger_pct", p.soft_trigger_pct)?;
    d.set_item("boundary_trigger_pct", p.boundary_trigger_pct)?;
    d.set_item("min_tokens_left", p.min_tokens_left)?;
    d.set_item("target_pct", p.target_pct)?;
    d.set_item("min_gain_pct", p.min_gain_pct)?;
    d.set_item("keep_recent_turns", p.keep_recent_turns)?;
    d.set_item("keep_tool_io_pairs", p.keep_tool_io_pairs)?;
    let roles: Vec<String> = p
        .roles_never_prune
        .iter()
        .map(|r| format!("{r:?}").to_ascii_lowercase())
        .collect();
    d.set_item("roles_never_prune", roles)?;
    d.set_item("protected_flag", p.protected_flag.clone())?;
    d.set_item("protected_tools", p.protected_tools.clone())?;
    d.set_item("strategy", p.strategy.as_str())?;
    d.set_item("mode", p.mode.as_str())?;
    d.set_item("summary_max_tokens", p.summary_max_tokens)?;
    d.set_item("tool_output_max_tokens", p.tool_output.max_tokens)?;
    d.set_item("on_summarizer_failure", p.on_summarizer_failure.as_str())?;
    d.set_item("encoding", config.counter().encoding().to_string())?;
    d.set_item("summarizer", config.summarizer().kind.as_str())?;
    Ok(d)
}

/// The engine's defaults (a configuration that sets nothing), as a dict.
#[pyfunction]
pub fn default_policy(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let config = raise(py, resolve("defaults", "", false))?;
    describe(py, &config)
}

/// Resolves and validates a configuration document; returns it as the engine will apply it.
/// Raises `ConfigError` naming the key.
#[pyfunction]
#[pyo3(signature = (text, name="CompactConfig", env=false))]
pub fn check_config<'py>(
    py: Python<'py>,
    text: &str,
    name: &str,
    env: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let config = raise(py, resolve(name, text, env))?;
    raise(py, template(&config))?;
    describe(py, &config)
}

/// The names of the built-in summary templates (`task_state`, `brief`, `decision_log`, ...).
#[pyfunction]
pub fn templates() -> Vec<&'static str> {
    compact_llm::template::ALL_TEMPLATES
        .iter()
        .map(|t| t.name())
        .collect()
}
