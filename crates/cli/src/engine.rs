//! Building a [`Compactor`] from the command line: config file, environment and flags resolved once.

use crate::exit::BadInput;
use crate::resolve::{self, ModelChoice};
use clap::Args;
use compact_config::{Config, Overrides, SummarizerKind, SummarizerSettings};
use compact_engine::{Compactor, Summarizer};
use std::path::Path;
use std::sync::Arc;

/// Flags shared by `compact`, `plan` and `diff`.
#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// Context window in tokens (default: the model's window, else the config's).
    #[arg(long)]
    pub window: Option<usize>,
    #[command(flatten)]
    pub model: ModelChoice,
    /// Strategy: tiered, codex, segmented, observation-masking, sliding-window, deletion, cfpm.
    #[arg(long)]
    pub strategy: Option<String>,
    /// Configuration file (YAML).
    #[arg(long)]
    pub config: Option<String>,
    /// Upper bound of the checkpoint in tokens (policy `summary_max_tokens`; it also stays within
    /// 15% of the usable budget).
    #[arg(long = "summary-max-tokens")]
    pub summary_max_tokens: Option<usize>,
    #[command(flatten)]
    pub llm: SummarizerFlags,
    /// Summary template: checkpoint, task_state, brief, decision_log, code_delta, step_ledger,
    /// requirements_ledger, extractive_brief, checkpoint_handoff, plan.
    #[arg(long)]
    pub template: Option<String>,
    /// Run only the reversible stage (superseded outputs, repeated blocks, densifiers), whatever
    /// the window: policy `reversible: only`.
    #[arg(long = "reversible-only")]
    pub reversible_only: bool,
}

/// The summariser flags of `compact`, `plan`, `diff` and `replay`.
#[derive(Debug, Args, Clone, Default)]
pub struct SummarizerFlags {
    /// Summariser: deterministic (no model, the default), openai (any OpenAI-compatible server),
    /// anthropic, or anthropic-compaction (Anthropic's own compaction). The API key is read from
    /// OPENAI_API_KEY / ANTHROPIC_API_KEY. `replay` makes its calls for real and prices them from
    /// the usage the provider reports (point --base-url at `compact-sim` to need no key).
    #[arg(long)]
    pub summarizer: Option<String>,
    /// Model the summariser calls (default: the provider's cheap default).
    #[arg(long = "summarizer-model")]
    pub summarizer_model: Option<String>,
    /// Base URL of the summariser's API (e.g. http://127.0.0.1:8000/v1 for vLLM).
    #[arg(long = "base-url")]
    pub base_url: Option<String>,
}

impl SummarizerFlags {
    /// `flags` with these set on top.
    pub fn over(&self, flags: Overrides) -> Overrides {
        Overrides {
            summarizer_kind: self.summarizer.clone(),
            summarizer_model: self.summarizer_model.clone(),
            summarizer_base_url: self.base_url.clone(),
            ..flags
        }
    }
}

/// The configuration: the file (`--config` or `COMPACT_CONFIG`), then `COMPACT_*` variables, then
/// these flags, resolved and validated once.
pub fn config(args: &EngineArgs) -> anyhow::Result<Config> {
    let flags = Overrides {
        model: args.model.model.clone(),
        max_context_tokens: args.window,
        strategy: args.strategy.clone(),
        reversible: args.reversible_only.then(|| "only".to_owned()),
        summary_max_tokens: args.summary_max_tokens,
        summarizer_template: args.template.clone(),
        ..args.llm.over(Overrides::default())
    };
    Config::load(args.config.as_deref().map(Path::new), &flags)
        .map_err(|e| BadInput(e.to_string()).into())
}

/// Resolves the configuration and builds the compactor with the summariser it selects.
pub fn compactor(args: &EngineArgs) -> anyhow::Result<Compactor> {
    let config = config(args)?;
    let counter = match &args.model.encoding {
        Some(_) => resolve::counter(&args.model)?,
        None => config.counter(),
    };
    let summarizer = summarizer_for(&config, config.summarizer())?;
    Compactor::new(config.policy().clone(), summarizer, counter)
        .map_err(|e| BadInput(e.to_string()).into())
}

/// The command line's own rule on top of the wiring's: `--template` (like a model or a base URL)
/// needs an LLM summariser, since the deterministic checkpoint has no template to choose.
pub fn refuse_unused(settings: &SummarizerSettings) -> anyhow::Result<()> {
    if settings.kind == SummarizerKind::Deterministic
        && (settings.model.is_some() || settings.base_url.is_some() || settings.template.is_some())
    {
        return Err(BadInput(
            "--summarizer-model, --base-url and --template need --summarizer openai or anthropic"
                .into(),
        )
        .into());
    }
    Ok(())
}

/// The summariser the settings select, built by `compact-wiring` as every host builds it.
pub fn summarizer(settings: &SummarizerSettings) -> anyhow::Result<Arc<dyn Summarizer>> {
    refuse_unused(settings)?;
    summarizer_with(settings, None)
}

/// The summariser `settings` select, a model one sending through the configuration's outbound
/// client (`network:` over the process's proxy and CA variables); the deterministic one needs none.
pub fn summarizer_for(
    config: &Config,
    settings: &SummarizerSettings,
) -> anyhow::Result<Arc<dyn Summarizer>> {
    if settings.kind == SummarizerKind::Deterministic {
        return summarizer(settings);
    }
    let client = compact_wiring::client(config, &compact_wiring::Env::process())
        .map_err(|e| BadInput(e.to_string()))?;
    summarizer_with(settings, Some(&client))
}

/// [`summarizer`] sending through `client` (a server's one outbound client).
pub fn summarizer_with(
    settings: &SummarizerSettings,
    client: Option<&compact_net::Client>,
) -> anyhow::Result<Arc<dyn Summarizer>> {
    refuse_unused(settings)?;
    compact_wiring::summarizer(settings, client).map_err(|e| BadInput(e.to_string()).into())
}
