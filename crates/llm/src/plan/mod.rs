//! Agent-driven plan mode (seed 001): the model assigns keep / summarize / reference / drop to every
//! turn with a relevance score and extracts structured facts, as JSON. The JSON is validated strictly
//! (typed [`PlanError`]s); invalid output falls back. Whatever the model says, turns holding failed
//! approaches, file paths or URLs are never dropped: that rule is enforced after parsing, and the
//! paths and URLs are always written into the record.

mod facts;
mod parse;
mod render;

pub use facts::{enforce, turn_facts, Override, TurnFacts, FAILURE_EXCERPT_CHARS};
pub use parse::{parse_plan, PlanError};
pub use render::render_plan;

use crate::error::LlmError;
use crate::input::{self, Block};
use crate::summarizer::{LlmSummarizer, Trace, RECORD_HEADER};
use crate::template::{PromptSource, Template, PREAMBLE};
use compact_core::model::Item;
use compact_engine::SummaryRequest;

/// What to do with a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TurnStrategy {
    /// Critical: keep verbatim.
    Keep,
    /// Important: condense to key points.
    Summarize,
    /// Keep paths, commands and URLs only (restorable by re-running).
    Reference,
    /// No future value.
    Drop,
}

impl TurnStrategy {
    fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "keep" => Some(TurnStrategy::Keep),
            "summarize" | "summarise" => Some(TurnStrategy::Summarize),
            "reference" => Some(TurnStrategy::Reference),
            "drop" => Some(TurnStrategy::Drop),
            _ => None,
        }
    }
}

/// The model's decision for one turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnPlan {
    /// Turn id (`t<N>`).
    pub turn_id: String,
    /// Strategy (after enforcement, when read from [`AgentPlan::turns`] of an enforced plan).
    pub strategy: TurnStrategy,
    /// Relevance in 0..=1.
    pub relevance: f64,
    /// Why.
    pub reason: String,
}

/// Kinds of extracted fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FactKind {
    /// A decision and its rationale.
    Decision,
    /// An error or failed approach.
    Error,
    /// A file and its state.
    FileState,
    /// A dependency.
    Dependency,
    /// A constraint.
    Constraint,
}

impl FactKind {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "decision" => Some(FactKind::Decision),
            "error" => Some(FactKind::Error),
            "file" | "file_state" => Some(FactKind::FileState),
            "dependency" => Some(FactKind::Dependency),
            "constraint" => Some(FactKind::Constraint),
            _ => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            FactKind::Decision => "decision",
            FactKind::Error => "error",
            FactKind::FileState => "file",
            FactKind::Dependency => "dependency",
            FactKind::Constraint => "constraint",
        }
    }
}

/// One extracted fact.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// Kind.
    pub kind: FactKind,
    /// The fact.
    pub content: String,
    /// The turn it came from.
    pub source: String,
}

/// A validated plan.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPlan {
    /// One entry per turn, in the order of the conversation.
    pub turns: Vec<TurnPlan>,
    /// Extracted facts.
    pub facts: Vec<Fact>,
    /// The model's own size estimate, if given.
    pub estimated_tokens: Option<u64>,
}

/// The plan-mode instructions.
const PLAN_INSTRUCTIONS: &str = "Analyse the conversation turns below for compaction. Assign each turn one strategy:\n\
- keep: critical for the current task; kept verbatim\n\
- summarize: important context; condensed to key points\n\
- reference: only its file paths, commands and URLs are kept (the output can be re-created)\n\
- drop: no future value\n\
Never drop failed approaches; preserve every file path and URL; extract key facts and decisions; favour \
information density; a recent turn need not be kept if irrelevant, an old one should be kept if still relevant.\n\
Answer with JSON only, exactly this shape:\n\
{\"turns\": [{\"turnId\": \"t0\", \"strategy\": \"keep|summarize|reference|drop\", \"relevanceScore\": 0.0-1.0, \"reason\": \"...\"}],\n \
\"extractedFacts\": [{\"type\": \"decision|error|file_state|dependency|constraint\", \"content\": \"...\", \"source\": \"t0\"}],\n \
\"estimatedTokens\": 0}\n\
Give every turn id exactly once.\n";

/// Smallest output budget for the JSON plan (about 40 tokens per turn plus facts).
pub const PLAN_MIN_OUTPUT: usize = 1_024;

fn group_turns(items: &[Item], limits: &input::InputLimits) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for item in items.iter().filter(|i| i.meta.visibility.model) {
        let id = format!("t{}", item.meta.turn);
        if out.last().is_none_or(|(t, _)| *t != id) {
            out.push((id, Vec::new()));
        }
        if let (Some((_, texts)), Some((_, text))) =
            (out.last_mut(), input::render_item(item, limits))
        {
            texts.push(text);
        }
    }
    out
}

/// Runs plan mode: asks for a plan, validates and enforces it, and renders the record. Material too
/// large for one call goes through the `checkpoint` template instead; an invalid plan is an error
/// (the caller falls back to the deterministic checkpoint).
pub(crate) async fn run(
    s: &LlmSummarizer,
    request: &SummaryRequest<'_>,
    trace: &mut Trace,
) -> Result<String, LlmError> {
    let turns = group_turns(request.items, &s.limits);
    let blocks: Vec<Block> = turns
        .iter()
        .map(|(id, texts)| {
            let text = format!("<turn id=\"{id}\">\n{}\n</turn>", texts.join("\n"));
            Block {
                kind: input::BlockKind::Other,
                tokens: s.counter.count_text(&text),
                text,
            }
        })
        .collect();
    let also = request.also_preserve.or(s.also_preserve.as_deref());
    let max_out = request.max_tokens.max(PLAN_MIN_OUTPUT);
    let system = format!("{PREAMBLE}\n{PLAN_INSTRUCTIONS}");
    let budget = s.material_budget(&system, max_out, s.context_window)?;
    if input::total_tokens(&blocks) > budget || request.previous.is_some() {
        trace.warnings.push("plan mode: material needs chunking or folds an earlier record; using the checkpoint template".into());
        let all = input::render(request.items, request.previous, &s.limits, &s.counter);
        let text = s
            .summarize_blocks(
                &all,
                &PromptSource::Builtin(Template::Checkpoint),
                also,
                request.max_tokens,
                trace,
            )
            .await?;
        return Ok(format!("{RECORD_HEADER}\n\n{text}"));
    }
    let user = format!("Conversation turns:\n{}", input::join(&blocks));
    let completion = s.call(&system, &user, max_out, trace).await?;
    let ids: Vec<String> = turns.iter().map(|(id, _)| id.clone()).collect();
    let mut plan =
        parse_plan(&completion.text, &ids).map_err(|e| LlmError::Malformed(e.to_string()))?;
    let facts = turn_facts(request.items);
    for o in enforce(&mut plan, &facts) {
        trace.warnings.push(format!("plan mode: {o}"));
    }
    Ok(render_plan(
        &plan,
        &facts,
        &turns,
        request.max_tokens,
        &s.counter,
    ))
}
