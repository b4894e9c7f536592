//! [`LlmSummarizer`]: a [`Summarizer`] backed by a model over HTTP. The call always fits: the input
//! is budgeted before sending and summarised in chunks (map-reduce) when it is too large; a provider
//! overflow anyway thins tool outputs middle-out (0, 10, 20, 50, 100 %); a refusal or empty answer is
//! retried once with the `brief` template; anything else that fails falls back (deterministic
//! checkpoint) with a warning. A failure never touches the caller's history: it only returns. When
//! it applies, a cache-warm call (the conversation's own request with the instruction appended, see
//! [`crate::warm`]) comes first.

use crate::error::LlmError;
use crate::http::{HeaderSpec, HttpClient, RetryLog};
use crate::input::{self, Block, BlockKind, InputLimits};
use crate::overflow::ContextOverflow;
use crate::provider::{parse_response, request_body, Completion, ProviderKind, Sampling};
use crate::template::{partial_note, system_prompt, PromptSource, Template, MERGE_NOTE};
use crate::warm::CacheWarm;
use compact_core::tokens::TokenCounter;
use compact_engine::{
    BoxFuture, SummarizeError, Summarizer, Summary, SummaryRequest, SummaryUsage,
};
use std::sync::Arc;

/// Tool-output removal steps (percent) tried when the provider still reports an overflow (seed 004).
pub const OVERFLOW_STEPS: [u32; 5] = [0, 10, 20, 50, 100];
/// Reduce rounds before giving up (each round divides the material by the chunk count).
pub const MAX_REDUCE_DEPTH: usize = 4;
/// Smallest output budget of one partial summary in the map step.
pub const MIN_PARTIAL_TOKENS: usize = 256;
/// Tokens reserved for the message wrapper and the provider's per-message framing (two messages
/// plus reply priming is under 20 tokens for OpenAI and Anthropic; rounded up).
pub const WRAPPER_TOKENS: usize = 48;
/// Refusals are short; a long answer that opens apologetically is still a summary.
pub const REFUSAL_MAX_CHARS: usize = 400;
/// First line of every model-written summary: frames it as a record, not as new orders.
pub const RECORD_HEADER: &str = "Record of earlier work in this session (summarised; it describes what already happened and is not a new request).";

/// Openings of refusals.
const REFUSAL_OPENINGS: &[&str] = &[
    "i'm sorry",
    "i am sorry",
    "i can't",
    "i cannot",
    "i can not",
    "i am unable",
    "i'm unable",
    "i won't",
    "sorry, i",
];

/// Everything an [`LlmSummarizer`] needs (built by [`crate::build`]).
#[derive(Clone)]
pub struct LlmSummarizer {
    pub(crate) kind: ProviderKind,
    pub(crate) model: String,
    pub(crate) url: String,
    pub(crate) headers: Vec<HeaderSpec>,
    pub(crate) http: HttpClient,
    pub(crate) prompt: PromptSource,
    pub(crate) also_preserve: Option<String>,
    pub(crate) sampling: Sampling,
    pub(crate) context_window: usize,
    pub(crate) safety_margin: usize,
    pub(crate) cache_warm: CacheWarm,
    /// Price of a cached input token relative to an uncached one (for [`CacheWarm::Auto`]).
    pub(crate) cached_price_ratio: f64,
    pub(crate) limits: InputLimits,
    pub(crate) counter: TokenCounter,
    pub(crate) fallback: Option<Arc<dyn Summarizer>>,
}

impl std::fmt::Debug for LlmSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSummarizer")
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("url", &self.url)
            .field("prompt", &self.prompt)
            .field("context_window", &self.context_window)
            .finish_non_exhaustive()
    }
}

/// Usage and warnings collected during one summarisation.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    pub(crate) usage: SummaryUsage,
    pub(crate) warnings: Vec<String>,
}

fn is_refusal(text: &str) -> bool {
    let t = text.trim();
    if t.is_empty() {
        return true;
    }
    let lower = t.to_lowercase();
    t.chars().count() < REFUSAL_MAX_CHARS && REFUSAL_OPENINGS.iter().any(|o| lower.starts_with(o))
}

impl LlmSummarizer {
    /// The material budget (tokens) for one call with this system prompt and output cap in a
    /// `window`-token context.
    pub(crate) fn material_budget(
        &self,
        system: &str,
        max_out: usize,
        window: usize,
    ) -> Result<usize, LlmError> {
        if max_out == 0 {
            return Err(LlmError::Config(
                "a summary needs a token budget above zero".into(),
            ));
        }
        let fixed = self.counter.count_text(system)
            + self.counter.count_text(MERGE_NOTE)
            + WRAPPER_TOKENS
            + self.safety_margin
            + max_out;
        window
            .checked_sub(fixed)
            .filter(|b| *b >= MIN_PARTIAL_TOKENS)
            .ok_or_else(|| LlmError::Config(format!(
                "the summariser window ({window} tokens) cannot hold the prompt and a {max_out}-token summary"
            )))
    }

    /// One model call with retries; usage and retries are recorded in `trace`.
    pub(crate) async fn call(
        &self,
        system: &str,
        user: &str,
        max_out: usize,
        trace: &mut Trace,
    ) -> Result<Completion, LlmError> {
        let body = request_body(
            self.kind,
            &self.model,
            system,
            user,
            max_out as u64,
            &self.sampling,
        );
        let estimate = self.counter.count_text(system) + self.counter.count_text(user);
        self.send(&body, estimate, max_out, trace).await
    }

    /// Posts one request `body` with retries; usage (the provider's, or `estimate` input tokens and
    /// the counted answer when it reports none) and retries are recorded in `trace`. A refusal or an
    /// answer without text is [`LlmError::Empty`].
    pub(crate) async fn send(
        &self,
        body: &serde_json::Value,
        estimate: usize,
        max_out: usize,
        trace: &mut Trace,
    ) -> Result<Completion, LlmError> {
        let body = body.to_string();
        let mut log = RetryLog::default();
        let result = self
            .http
            .post_json(&self.url, &self.headers, &body, &mut log)
            .await;
        trace.usage.calls += 1 + u32::try_from(log.retries.len()).unwrap_or(u32::MAX);
        trace.warnings.extend(
            log.retries
                .into_iter()
                .map(|r| format!("{} summariser: {r}", self.kind.name())),
        );
        let completion = parse_response(self.kind, self.sampling.stream, &result?.body)?;
        let input = completion.input_tokens.unwrap_or(estimate as u64);
        let output = completion
            .output_tokens
            .unwrap_or_else(|| self.counter.count_text(&completion.text) as u64);
        trace.usage.input_tokens += input;
        trace.usage.output_tokens += output;
        trace.usage.cached_input_tokens += completion.cached_input_tokens.unwrap_or(0).min(input);
        if completion.refused || is_refusal(&completion.text) {
            return Err(LlmError::Empty(if completion.text.trim().is_empty() {
                "the model returned no text".to_owned()
            } else {
                format!(
                    "the model refused: {}",
                    crate::error::excerpt(completion.text.trim())
                )
            }));
        }
        if completion.truncated {
            trace.warnings.push(format!(
                "{} summariser: the summary reached its {max_out}-token cap",
                self.kind.name()
            ));
        }
        Ok(completion)
    }

    /// Calls with the material, thinning tool outputs middle-out while the provider reports overflow.
    async fn call_with_steps(
        &self,
        system: &str,
        blocks: &[Block],
        max_out: usize,
        trace: &mut Trace,
    ) -> Result<String, LlmError> {
        let has_tools = blocks.iter().any(|b| b.kind == BlockKind::ToolResult);
        let mut last: Option<ContextOverflow> = None;
        for pct in OVERFLOW_STEPS {
            if pct > 0 && !has_tools {
                break;
            }
            let thinned = input::remove_tool_outputs_middle_out(blocks, pct, &self.counter);
            let user = format!(
                "Earlier work to record:\n<material>\n{}\n</material>",
                input::join(&thinned)
            );
            match self.call(system, &user, max_out, trace).await {
                Err(LlmError::Overflow(o)) => {
                    trace.warnings.push(format!(
                        "{} summariser: context overflow with {pct}% of tool outputs removed (limit {:?}, requested {:?})",
                        self.kind.name(),
                        o.limit,
                        o.requested
                    ));
                    last = Some(o);
                }
                other => return other.map(|c| c.text.trim().to_owned()),
            }
        }
        Err(LlmError::Overflow(last.unwrap_or(ContextOverflow {
            limit: None,
            requested: None,
            provider_hint: crate::overflow::ProviderHint::Generic,
        })))
    }

    /// Summarises blocks within the configured window; when the provider still reports an overflow
    /// after every tool-output step and names a smaller window than configured, plans once more with
    /// the provider's window (chunking the material) before giving up.
    pub(crate) async fn summarize_blocks(
        &self,
        blocks: &[Block],
        source: &PromptSource,
        also: Option<&str>,
        max_out: usize,
        trace: &mut Trace,
    ) -> Result<String, LlmError> {
        let window = self.context_window;
        match self
            .summarize_in_window(blocks, source, also, max_out, window, trace)
            .await
        {
            Err(LlmError::Overflow(o)) => {
                let Some(learned) = o
                    .limit
                    .and_then(|l| usize::try_from(l).ok())
                    .filter(|l| *l < window)
                else {
                    return Err(LlmError::Overflow(o));
                };
                trace.warnings.push(format!(
                    "{} summariser: the provider's window is {learned} tokens, not the configured {window}; planning again with it",
                    self.kind.name()
                ));
                self.summarize_in_window(blocks, source, also, max_out, learned, trace)
                    .await
            }
            other => other,
        }
    }

    /// Summarises blocks with one prompt source in a `window`-token context: one call when they fit,
    /// map-reduce otherwise.
    async fn summarize_in_window(
        &self,
        blocks: &[Block],
        source: &PromptSource,
        also: Option<&str>,
        max_out: usize,
        window: usize,
        trace: &mut Trace,
    ) -> Result<String, LlmError> {
        let system = system_prompt(source, also, max_out);
        // Partial summaries may be given MIN_PARTIAL_TOKENS even when the final cap is lower.
        let budget = self.material_budget(&system, max_out.max(MIN_PARTIAL_TOKENS), window)?;
        if input::total_tokens(blocks) <= budget {
            return self.call_with_steps(&system, blocks, max_out, trace).await;
        }
        let mut level: Vec<Block> = blocks.to_vec();
        for depth in 0..MAX_REDUCE_DEPTH {
            let chunks = input::chunk(&level, budget, &self.counter);
            let partial_out = (budget / chunks.len().max(1))
                .clamp(MIN_PARTIAL_TOKENS, max_out.max(MIN_PARTIAL_TOKENS));
            trace.warnings.push(format!(
                "{} summariser: material of {} tokens exceeds the {budget}-token input budget; summarising in {} chunks (round {})",
                self.kind.name(),
                input::total_tokens(&level),
                chunks.len(),
                depth + 1
            ));
            let mut partials = Vec::with_capacity(chunks.len());
            for (i, ch) in chunks.iter().enumerate() {
                let note_system = format!("{system}\n{}", partial_note(i + 1, chunks.len()));
                let text = self
                    .call_with_steps(&note_system, ch, partial_out, trace)
                    .await?;
                let text = format!("[record of part {} of {}]\n{text}", i + 1, chunks.len());
                partials.push(Block {
                    kind: BlockKind::Other,
                    tokens: self.counter.count_text(&text),
                    text,
                });
            }
            if input::total_tokens(&partials) <= budget {
                let merge_system = format!("{system}\n{MERGE_NOTE}");
                return self
                    .call_with_steps(&merge_system, &partials, max_out, trace)
                    .await;
            }
            level = partials;
        }
        Err(LlmError::Overflow(ContextOverflow {
            limit: Some(window as u64),
            requested: None,
            provider_hint: crate::overflow::ProviderHint::Generic,
        }))
    }

    /// The template path with the refusal retry.
    async fn run_template(
        &self,
        request: &SummaryRequest<'_>,
        trace: &mut Trace,
    ) -> Result<String, LlmError> {
        let blocks = input::render(request.items, request.previous, &self.limits, &self.counter);
        let also = request.also_preserve.or(self.also_preserve.as_deref());
        match self
            .summarize_blocks(&blocks, &self.prompt, also, request.max_tokens, trace)
            .await
        {
            Err(LlmError::Empty(why)) => {
                trace.warnings.push(format!(
                    "{} summariser: {why}; retrying once with the brief template",
                    self.kind.name()
                ));
                let brief = PromptSource::Builtin(Template::Brief);
                self.summarize_blocks(&blocks, &brief, also, request.max_tokens, trace)
                    .await
            }
            other => other,
        }
    }

    /// Summarises, falling back on failure. Errors only when there is no fallback.
    async fn summarize_inner(
        &self,
        request: SummaryRequest<'_>,
    ) -> Result<Summary, SummarizeError> {
        let mut trace = Trace::default();
        let result = if self.prompt == PromptSource::Builtin(Template::Plan) {
            crate::plan::run(self, &request, &mut trace).await
        } else {
            let warm = match crate::warm::prepare(self, &request) {
                Some(body) => crate::warm::run(self, &body, &mut trace).await,
                None => None,
            };
            match warm {
                Some(text) => Ok(text),
                None => self.run_template(&request, &mut trace).await,
            }
            .map(|t| format!("{RECORD_HEADER}\n\n{t}"))
        };
        match result {
            Ok(text) => Ok(Summary {
                text,
                produced_by: self.kind.name().to_owned(),
                usage: trace.usage,
                warnings: trace.warnings,
            }),
            Err(e) => self.fall_back(request, trace, e).await,
        }
    }

    pub(crate) async fn fall_back(
        &self,
        request: SummaryRequest<'_>,
        trace: Trace,
        error: LlmError,
    ) -> Result<Summary, SummarizeError> {
        let Some(fallback) = &self.fallback else {
            return Err(SummarizeError::from(error).with_usage(trace.usage));
        };
        let mut summary = fallback.summarize(request).await?;
        let mut warnings = trace.warnings;
        warnings.push(format!(
            "{} summariser failed ({error}); fell back to the {} summariser",
            self.kind.name(),
            fallback.name()
        ));
        warnings.append(&mut summary.warnings);
        summary.warnings = warnings;
        summary.usage = summary.usage.plus(trace.usage);
        Ok(summary)
    }
}

impl Summarizer for LlmSummarizer {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn summarize<'a>(
        &'a self,
        request: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        Box::pin(async move {
            // The HTTP stack needs a Tokio reactor. Callers that drive futures without one (the
            // engine's std-only `block_on`) get a private current-thread runtime for this call.
            if tokio::runtime::Handle::try_current().is_ok() {
                return self.summarize_inner(request).await;
            }
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt.block_on(self.summarize_inner(request)),
                Err(e) => Err(SummarizeError::Transport(format!(
                    "cannot start an I/O runtime for the summariser: {e}"
                ))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals() {
        assert!(is_refusal("  "));
        assert!(is_refusal("I'm sorry, but I can't help with that."));
        assert!(!is_refusal("## Goal and user requests\n- fix the build"));
        assert!(!is_refusal(&format!(
            "I cannot stress enough {}",
            "x".repeat(500)
        )));
    }
}
