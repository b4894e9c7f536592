//! [`Overrides`]: one layer of settings where every field is optional. The file, the environment and
//! the command line each produce one; later layers win field by field.

/// Settings from one source; `None` means "not set here". The CLI fills one of these from its flags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `off`, `remind` or `auto`.
    pub mode: Option<String>,
    /// Model name (looked up in the registry for its window and output cap).
    pub model: Option<String>,
    /// Context window in tokens.
    pub max_context_tokens: Option<usize>,
    /// Tokens reserved for the reply.
    pub reserved_output_tokens: Option<usize>,
    /// Tokens reserved for the next step.
    pub hard_cap_buffer: Option<usize>,
    /// Trigger fraction of the usable budget.
    pub trigger_pct: Option<f64>,
    /// Soft (reminder) fraction.
    pub soft_trigger_pct: Option<f64>,
    /// Floor (fraction of the usable budget) from which a natural boundary compacts.
    pub boundary_trigger_pct: Option<f64>,
    /// Absolute trigger: tokens left.
    pub min_tokens_left: Option<usize>,
    /// Target fraction after compaction.
    pub target_pct: Option<f64>,
    /// Least share of the window a compaction frees.
    pub min_gain_pct: Option<f64>,
    /// Recent turns kept.
    pub keep_recent_turns: Option<usize>,
    /// Recent tool pairs kept.
    pub keep_tool_io_pairs: Option<usize>,
    /// Roles never pruned (`system`, `developer`, `user`, `assistant`, `tool`).
    pub roles_never_prune: Option<Vec<String>>,
    /// Metadata key of protected items.
    pub protected_flag: Option<String>,
    /// Protected tools.
    pub protected_tools: Option<Vec<String>>,
    /// Strategy name.
    pub strategy: Option<String>,
    /// Tool-output truncation mode (`none`, `bytes`, `tokens`).
    pub tool_output_mode: Option<String>,
    /// Tool-output limit in tokens.
    pub tool_output_max_tokens: Option<usize>,
    /// Serialisation buffer.
    pub tool_output_serialization_buffer: Option<f64>,
    /// Head share of truncated outputs.
    pub tool_output_head_fraction: Option<f64>,
    /// User-message budget.
    pub user_message_max_tokens: Option<usize>,
    /// `policy.overflow_max_retries`: overflow recoveries per turn in the session runtime.
    pub overflow_max_retries: Option<u32>,
    /// `policy.idle_delay_ms`: quiet time after which the session runtime compacts a session
    /// whose next call would (0: never).
    pub idle_delay_ms: Option<u64>,
    /// `policy.manual_trigger_phrases`: latest-user-message phrases that ask for a compaction.
    pub manual_trigger_phrases: Option<Vec<String>>,
    /// Tier-1 minimum savings.
    pub tier1_min_savings_tokens: Option<usize>,
    /// `policy.reversible`: `on`, `off` or `only`.
    pub reversible: Option<String>,
    /// Checkpoint size bound.
    pub summary_max_tokens: Option<usize>,
    /// `deterministic` or `fail`.
    pub on_summarizer_failure: Option<String>,
    /// Summariser kind (`deterministic`, `openai`, `anthropic`).
    pub summarizer_kind: Option<String>,
    /// Summariser model.
    pub summarizer_model: Option<String>,
    /// Summariser base URL.
    pub summarizer_base_url: Option<String>,
    /// Summariser template name or text.
    pub summarizer_template: Option<String>,
    /// `summarizer.cache_warm`: `auto`, `always` or `off`.
    pub summarizer_cache_warm: Option<String>,
    /// `proxy.listen`.
    pub proxy_listen: Option<String>,
    /// `proxy.openai.base_url`.
    pub proxy_openai_base_url: Option<String>,
    /// `proxy.anthropic.base_url`.
    pub proxy_anthropic_base_url: Option<String>,
    /// `proxy.max_in_flight`: a number, or `off`.
    pub proxy_max_in_flight: Option<String>,
    /// `proxy.max_queue`.
    pub proxy_max_queue: Option<usize>,
    /// `proxy.queue_timeout_ms`.
    pub proxy_queue_timeout_ms: Option<u64>,
}

macro_rules! merge_fields {
    ($dst:ident, $src:ident, $($f:ident),+ $(,)?) => {
        $( if $src.$f.is_some() { $dst.$f = $src.$f.clone(); } )+
    };
}

impl Overrides {
    /// Applies `other` on top of `self` (fields set in `other` win).
    pub fn merge(&mut self, other: &Overrides) {
        merge_fields!(
            self,
            other,
            mode,
            model,
            max_context_tokens,
            reserved_output_tokens,
            hard_cap_buffer,
            trigger_pct,
            soft_trigger_pct,
            boundary_trigger_pct,
            min_tokens_left,
            target_pct,
            min_gain_pct,
            keep_recent_turns,
            keep_tool_io_pairs,
            roles_never_prune,
            protected_flag,
            protected_tools,
            strategy,
            tool_output_mode,
            tool_output_max_tokens,
            tool_output_serialization_buffer,
            tool_output_head_fraction,
            user_message_max_tokens,
            overflow_max_retries,
            idle_delay_ms,
            manual_trigger_phrases,
            tier1_min_savings_tokens,
            reversible,
            summary_max_tokens,
            on_summarizer_failure,
            summarizer_kind,
            summarizer_model,
            summarizer_base_url,
            summarizer_template,
            summarizer_cache_warm,
            proxy_listen,
            proxy_openai_base_url,
            proxy_anthropic_base_url,
            proxy_max_in_flight,
            proxy_max_queue,
            proxy_queue_timeout_ms,
        );
    }
}
