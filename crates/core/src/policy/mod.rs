//! The compaction [`Policy`]: every setting that decides when and how a conversation is compacted,
//! with its defaults documented in one place and validated once.
//!
//! # Defaults
//!
//! | field | default | meaning |
//! |---|---|---|
//! | `mode` | `auto` | `off` never compacts, `remind` only reports, `auto` compacts |
//! | `model` | none | model name (the configuration resolves the window from the registry) |
//! | `max_context_tokens` | 128,000 | the model's context window |
//! | `reserved_output_tokens` | 20,000 | room kept for the reply (at most a quarter of the window) |
//! | `hard_cap_buffer` | 1,024 | room kept for the next user or tool step (at most 5% of the window) |
//! | `trigger_pct` | 0.95 | compact when the count reaches this fraction of the usable budget |
//! | `soft_trigger_pct` | none | in `auto` mode, remind from this fraction (soft + hard dual threshold) |
//! | `boundary_trigger_pct` | none | in `auto` mode, also compact from this fraction at a natural boundary (a user turn's end, a plan step done, checks passing after edits: [`crate::boundary`]); off when it does not lie above the target |
//! | `min_tokens_left` | none | also compact when fewer tokens than this are left in the usable budget |
//! | `target_pct` | 0.85 | compaction aims below this fraction of the usable budget (hysteresis; the gain below usually binds) |
//! | `min_gain_pct` | 0.15 | a compaction frees at least this fraction of the window: the target is lowered to lie that far below the trigger, and a compaction of a request that fits which frees less is no progress |
//! | `keep_recent_turns` | 6 | recent turns kept verbatim (tier 3 may shrink to 1) |
//! | `keep_tool_io_pairs` | 4 | recent tool call/result pairs kept verbatim (tier 3 may shrink to 1) |
//! | `roles_never_prune` | system, developer | roles that are pinned |
//! | `protected_flag` | `protected` | a wire message, tool block or content part with this key set to `true` is pinned (as is an item with `ItemMeta::protected`) |
//! | `protected_tools` | `manage_todo_list` | tools whose latest call and result are pinned |
//! | `strategy` | `tiered` | strategy name (see [`StrategyName`]) |
//! | `tool_output.mode` | `tokens` | tier-0 truncation of tool outputs: `none`, `bytes`, `tokens` |
//! | `tool_output.max_tokens` | 5,000 | tier-0 limit per tool output |
//! | `tool_output.serialization_buffer` | 1.2 | the limit is multiplied by this to allow for JSON overhead |
//! | `tool_output.head_fraction` | 0.5 | share of a truncated output kept from its head |
//! | `user_message_max_tokens` | 20,000 | user messages kept verbatim, newest first |
//! | `tier1_min_savings_tokens` | 20,000 | tier 1 runs only if it frees this much (cache invalidation cost) |
//! | `reversible` | `on` | `tiered`'s reversible stage before the lossy tiers: `on`, `off`, or `only` (that stage alone, whatever the window) |
//! | `summary_max_tokens` | 6,000 | upper bound of the checkpoint (also at most a quarter of the usable budget, a third when a free summariser's record left entries out; `--summary-max-tokens`, `COMPACT_SUMMARY_MAX_TOKENS`) |
//! | `on_summarizer_failure` | `deterministic` | fall back to the deterministic checkpoint, or `fail` |
//!
//! Absolute limits (user messages, tool outputs, summary, tier-1 minimum) scale down for small windows;
//! see [`crate::budget::Limits`].

mod decide;
mod names;
mod validate;

pub use decide::{decide, decide_at, Decision, RemindReason, TriggerReason};
pub use names::{
    Mode, ReversibleMode, StrategyName, SummarizerFailure, TruncationMode, UnknownName,
};
pub use validate::{FieldError, PolicyError};

use crate::model::Role;

/// Default context window when neither the configuration nor the model registry gives one.
pub const DEFAULT_MAX_CONTEXT_TOKENS: usize = 128_000;
/// Default reserved output: OpenCode reserves min(20,000, max output) for the reply.
pub const DEFAULT_RESERVED_OUTPUT_TOKENS: usize = 20_000;
/// Seed 003's `hard_cap_buffer`: room for the next user or tool step.
pub const DEFAULT_HARD_CAP_BUFFER: usize = 1_024;
/// Compact at 95% of the usable budget (which already leaves room for the reply and the next step):
/// late enough to keep the context whole for long, with room below for the hysteresis gap.
pub const DEFAULT_TRIGGER_PCT: f64 = 0.95;
/// Hysteresis target as a share of the usable budget: an upper bound; the minimum gain below usually
/// decides where compaction aims.
pub const DEFAULT_TARGET_PCT: f64 = 0.85;
/// Each compaction frees at least 15% of the window, so compactions are at least that many new
/// tokens apart (no thrash). Chosen by replaying the corpus at 16k and 32k over 0.25, 0.20, 0.15 and
/// 0.10 (BENCHMARKS.md, "Continuation"): 0.15 keeps the most of what the agent uses next for at most
/// 7% more cache-aware cost than 0.25; 0.10 costs 6-7% more again for no clear gain.
pub const DEFAULT_MIN_GAIN_PCT: f64 = 0.15;
/// Seed 003: six recent turns.
pub const DEFAULT_KEEP_RECENT_TURNS: usize = 6;
/// Seed 003: four recent tool I/O pairs.
pub const DEFAULT_KEEP_TOOL_IO_PAIRS: usize = 4;
/// Seed 000: tool outputs over 5,000 tokens are truncated.
pub const DEFAULT_TOOL_OUTPUT_MAX_TOKENS: usize = 5_000;
/// Seed 000: a 20% serialisation buffer for JSON overhead.
pub const DEFAULT_SERIALIZATION_BUFFER: f64 = 1.2;
/// Seed 000: a 50/50 head/tail split.
pub const DEFAULT_HEAD_FRACTION: f64 = 0.5;
/// Seed 000 / Codex: 20,000 tokens of user messages survive compaction.
pub const DEFAULT_USER_MESSAGE_MAX_TOKENS: usize = 20_000;
/// OpenCode clears old tool outputs only when that frees more than 20,000 tokens: less is not worth a
/// prompt-cache invalidation.
pub const DEFAULT_TIER1_MIN_SAVINGS_TOKENS: usize = 20_000;
/// A checkpoint long enough for goals, files, commands, errors and next steps of a long session.
pub const DEFAULT_SUMMARY_MAX_TOKENS: usize = 6_000;
/// Seed 003's `protected_flag`.
pub const DEFAULT_PROTECTED_FLAG: &str = "protected";
/// Seed 000's protected tool.
pub const DEFAULT_PROTECTED_TOOL: &str = "manage_todo_list";

/// Tier-0 truncation of tool outputs (seed 000).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutputPolicy {
    /// How outputs are measured (or `none`: never truncated).
    pub mode: TruncationMode,
    /// Limit per output, in tokens (bytes mode uses 4 bytes per token).
    pub max_tokens: usize,
    /// The limit is multiplied by this factor to allow for serialisation overhead.
    pub serialization_buffer: f64,
    /// Share of a truncated output kept from its head (the rest from its tail).
    pub head_fraction: f64,
}

impl Default for ToolOutputPolicy {
    fn default() -> Self {
        ToolOutputPolicy {
            mode: TruncationMode::Tokens,
            max_tokens: DEFAULT_TOOL_OUTPUT_MAX_TOKENS,
            serialization_buffer: DEFAULT_SERIALIZATION_BUFFER,
            head_fraction: DEFAULT_HEAD_FRACTION,
        }
    }
}

impl ToolOutputPolicy {
    /// The equivalent [`crate::truncate::TruncationPolicy`] (for truncating outputs as they arrive).
    pub fn truncation_policy(&self) -> crate::truncate::TruncationPolicy {
        use crate::truncate::{TruncationMode as Mode, TruncationPolicy};
        /// Bytes mode measures four bytes per token (seed 000's `APPROX_CHARS_PER_TOKEN`).
        const BYTES_PER_TOKEN: usize = 4;
        let mode = match self.mode {
            TruncationMode::None => Mode::None,
            TruncationMode::Bytes => Mode::Bytes(self.max_tokens.saturating_mul(BYTES_PER_TOKEN)),
            TruncationMode::Tokens => Mode::Tokens(self.max_tokens),
        };
        TruncationPolicy {
            mode,
            serialization_buffer: self.serialization_buffer,
            head_fraction: self.head_fraction,
            keep_error_lines: true,
        }
    }

    /// The effective limit in tokens (`max_tokens x serialization_buffer`), `None` when disabled.
    pub fn effective_max_tokens(&self) -> Option<usize> {
        match self.mode {
            TruncationMode::None => None,
            TruncationMode::Bytes | TruncationMode::Tokens => {
                Some((self.max_tokens as f64 * self.serialization_buffer).floor() as usize)
            }
        }
    }
}

/// Every compaction setting. Build it with [`Policy::default`] and field updates (or from a
/// configuration file with the `compact-config` crate), then call [`Policy::validate`] once.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Off, remind or auto.
    pub mode: Mode,
    /// Model name, if known.
    pub model: Option<String>,
    /// Context window in tokens.
    pub max_context_tokens: usize,
    /// Tokens reserved for the model's reply.
    pub reserved_output_tokens: usize,
    /// Tokens reserved for the next user or tool step.
    pub hard_cap_buffer: usize,
    /// Compaction trigger as a fraction of the usable budget.
    pub trigger_pct: f64,
    /// Optional soft threshold (fraction of the usable budget) from which `auto` mode reminds.
    pub soft_trigger_pct: Option<f64>,
    /// Optional floor (fraction of the usable budget) from which `auto` mode compacts at the next
    /// natural boundary ([`crate::boundary::natural_boundary`]) instead of waiting for the trigger.
    pub boundary_trigger_pct: Option<f64>,
    /// Optional absolute trigger: compact when at most this many usable tokens are left.
    pub min_tokens_left: Option<usize>,
    /// Target after compaction, as a fraction of the usable budget (below the trigger).
    pub target_pct: f64,
    /// Least a compaction frees, as a fraction of the window (see [`crate::budget::Budget::target`]).
    pub min_gain_pct: f64,
    /// Recent turns kept verbatim.
    pub keep_recent_turns: usize,
    /// Recent tool call/result pairs kept verbatim.
    pub keep_tool_io_pairs: usize,
    /// Roles whose items are never pruned.
    pub roles_never_prune: Vec<Role>,
    /// Metadata key that marks an item protected.
    pub protected_flag: String,
    /// Tools whose calls and results are never pruned.
    pub protected_tools: Vec<String>,
    /// Strategy used by the compactor.
    pub strategy: StrategyName,
    /// Tier-0 truncation of tool outputs.
    pub tool_output: ToolOutputPolicy,
    /// Budget of user messages kept verbatim.
    pub user_message_max_tokens: usize,
    /// Minimum tokens tier 1 must free to run at all.
    pub tier1_min_savings_tokens: usize,
    /// Whether `tiered` runs its reversible stage first (`on`), never (`off`) or alone (`only`).
    pub reversible: ReversibleMode,
    /// Upper bound of the checkpoint, in tokens.
    pub summary_max_tokens: usize,
    /// What happens when the summariser fails.
    pub on_summarizer_failure: SummarizerFailure,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            mode: Mode::Auto,
            model: None,
            max_context_tokens: DEFAULT_MAX_CONTEXT_TOKENS,
            reserved_output_tokens: DEFAULT_RESERVED_OUTPUT_TOKENS,
            hard_cap_buffer: DEFAULT_HARD_CAP_BUFFER,
            trigger_pct: DEFAULT_TRIGGER_PCT,
            soft_trigger_pct: None,
            boundary_trigger_pct: None,
            min_tokens_left: None,
            target_pct: DEFAULT_TARGET_PCT,
            min_gain_pct: DEFAULT_MIN_GAIN_PCT,
            keep_recent_turns: DEFAULT_KEEP_RECENT_TURNS,
            keep_tool_io_pairs: DEFAULT_KEEP_TOOL_IO_PAIRS,
            roles_never_prune: vec![Role::System, Role::Developer],
            protected_flag: DEFAULT_PROTECTED_FLAG.to_owned(),
            protected_tools: vec![DEFAULT_PROTECTED_TOOL.to_owned()],
            strategy: StrategyName::Tiered,
            tool_output: ToolOutputPolicy::default(),
            user_message_max_tokens: DEFAULT_USER_MESSAGE_MAX_TOKENS,
            tier1_min_savings_tokens: DEFAULT_TIER1_MIN_SAVINGS_TOKENS,
            reversible: ReversibleMode::On,
            summary_max_tokens: DEFAULT_SUMMARY_MAX_TOKENS,
            on_summarizer_failure: SummarizerFailure::Deterministic,
        }
    }
}

impl Policy {
    /// The default policy for a given context window.
    pub fn for_window(max_context_tokens: usize) -> Self {
        Policy {
            max_context_tokens,
            ..Policy::default()
        }
    }

    /// True when `role` is never pruned.
    pub fn is_role_pinned(&self, role: Role) -> bool {
        self.roles_never_prune.contains(&role)
    }

    /// True when `tool` is a protected tool.
    pub fn is_tool_protected(&self, tool: &str) -> bool {
        self.protected_tools.iter().any(|t| t == tool)
    }
}
