//! The one reader of a provider's `usage` object: the token counts of one reply, in the field
//! names of the API that wrote it, as [`TokenUsage`]. The proxy (the session's calibration and
//! recall detours), the LLM client (its summariser's cost) and the agent integrations (Claude
//! Code's recorded usage) all map from it.
//!
//! | API | input | output | cached part of the input |
//! |---|---|---|---|
//! | Chat Completions | `prompt_tokens` (cached included) | `completion_tokens` | `prompt_tokens_details.cached_tokens` |
//! | Responses | `input_tokens` (cached included) | `output_tokens` | `input_tokens_details.cached_tokens` |
//! | Anthropic Messages | `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens` | `output_tokens` | `cache_read_input_tokens` |
//!
//! Anthropic's `usage.iterations` (a reply in which the provider compacted: one entry per pass,
//! the `compaction` one and the `message` one) are read too. Where the object sits: a whole
//! reply's `usage`; streamed, Chat's last chunk (`usage`, `choices` empty), Responses'
//! `response.completed` (`response.usage`), Anthropic's `message_start` (`message.usage`, the
//! input) and `message_delta` (`usage`, the output; [`usage_holder`] finds each).
//!
//! Reading never fails: a field that is absent or not a non-negative integer is `None`, and a
//! `usage` that is not an object reads as all `None`.

use compact_core::model::Format;
use serde_json::Value;

/// Which API wrote a `usage` object (its field names differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UsageApi {
    /// OpenAI Chat Completions (and the OpenAI-compatible servers).
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Messages,
}

impl UsageApi {
    /// The API of a wire format (`None` for transcript formats, which are not replies).
    pub fn of(format: Format) -> Option<UsageApi> {
        match format {
            Format::OpenAiChat => Some(UsageApi::Chat),
            Format::OpenAiResponses => Some(UsageApi::Responses),
            Format::Anthropic => Some(UsageApi::Messages),
            _ => None,
        }
    }
}

/// The token counts of one `usage` object, each as its API names it (`None`: absent or not a
/// count).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Chat `prompt_tokens`, Responses `input_tokens` (both include the cached part), Anthropic
    /// `input_tokens` (which leaves out what was read from or written to the cache).
    pub input_tokens: Option<u64>,
    /// Chat `completion_tokens`, Responses and Anthropic `output_tokens`.
    pub output_tokens: Option<u64>,
    /// OpenAI's cached part of the input: Chat `prompt_tokens_details.cached_tokens`, Responses
    /// `input_tokens_details.cached_tokens` (Anthropic: `None`).
    pub cached_tokens: Option<u64>,
    /// Anthropic `cache_read_input_tokens` (OpenAI: `None`).
    pub cache_read_input_tokens: Option<u64>,
    /// Anthropic `cache_creation_input_tokens` (OpenAI: `None`).
    pub cache_creation_input_tokens: Option<u64>,
    /// Anthropic `iterations`, when the reply lists them (it does when the provider compacted).
    pub iterations: Option<Vec<Iteration>>,
}

/// One pass of an Anthropic reply (`usage.iterations[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Iteration {
    /// `type`: `compaction` for the provider's compaction pass, `message` for the answer.
    pub kind: Option<String>,
    /// `input_tokens` of the pass.
    pub input_tokens: Option<u64>,
    /// `output_tokens` of the pass.
    pub output_tokens: Option<u64>,
    /// `cache_read_input_tokens` of the pass.
    pub cache_read_input_tokens: Option<u64>,
}

fn count(object: &Value, key: &str) -> Option<u64> {
    object.get(key).and_then(Value::as_u64)
}

impl TokenUsage {
    /// Reads a `usage` object written by `api`.
    pub fn read(api: UsageApi, usage: &Value) -> TokenUsage {
        match api {
            UsageApi::Chat => TokenUsage {
                input_tokens: count(usage, "prompt_tokens"),
                output_tokens: count(usage, "completion_tokens"),
                cached_tokens: usage
                    .get("prompt_tokens_details")
                    .and_then(|d| count(d, "cached_tokens")),
                ..TokenUsage::default()
            },
            UsageApi::Responses => TokenUsage {
                input_tokens: count(usage, "input_tokens"),
                output_tokens: count(usage, "output_tokens"),
                cached_tokens: usage
                    .get("input_tokens_details")
                    .and_then(|d| count(d, "cached_tokens")),
                ..TokenUsage::default()
            },
            UsageApi::Messages => TokenUsage {
                input_tokens: count(usage, "input_tokens"),
                output_tokens: count(usage, "output_tokens"),
                cached_tokens: None,
                cache_read_input_tokens: count(usage, "cache_read_input_tokens"),
                cache_creation_input_tokens: count(usage, "cache_creation_input_tokens"),
                iterations: usage
                    .get("iterations")
                    .and_then(Value::as_array)
                    .map(|list| {
                        list.iter()
                            .map(|i| Iteration {
                                kind: i.get("type").and_then(Value::as_str).map(str::to_owned),
                                input_tokens: count(i, "input_tokens"),
                                output_tokens: count(i, "output_tokens"),
                                cache_read_input_tokens: count(i, "cache_read_input_tokens"),
                            })
                            .collect()
                    }),
            },
        }
    }

    /// Every input token the provider counted: the input plus Anthropic's cache reads and writes
    /// (absent counts are 0). OpenAI's input already holds its cached part.
    pub fn total_input(&self) -> u64 {
        [
            self.input_tokens,
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
        ]
        .into_iter()
        .flatten()
        .fold(0, u64::saturating_add)
    }

    /// The part of the input read from the provider's prompt cache: OpenAI's `cached_tokens`,
    /// Anthropic's `cache_read_input_tokens`.
    pub fn cached_input(&self) -> Option<u64> {
        self.cached_tokens.or(self.cache_read_input_tokens)
    }

    /// The provider's compaction pass among the iterations, if it ran one.
    pub fn compaction(&self) -> Option<&Iteration> {
        self.iterations
            .as_deref()?
            .iter()
            .find(|i| i.kind.as_deref() == Some("compaction"))
    }

    /// Input tokens billed over every iteration (absent counts 0), when the usage lists them.
    pub fn billed_input(&self) -> Option<u64> {
        self.iteration_sum(|i| i.input_tokens)
    }

    /// Output tokens billed over every iteration, when the usage lists them.
    pub fn billed_output(&self) -> Option<u64> {
        self.iteration_sum(|i| i.output_tokens)
    }

    /// Cache-read input tokens over every iteration, when the usage lists them.
    pub fn billed_cache_read(&self) -> Option<u64> {
        self.iteration_sum(|i| i.cache_read_input_tokens)
    }

    fn iteration_sum(&self, field: impl Fn(&Iteration) -> Option<u64>) -> Option<u64> {
        let iterations = self.iterations.as_deref()?;
        Some(
            iterations
                .iter()
                .filter_map(field)
                .fold(0, u64::saturating_add),
        )
    }
}

/// The object that carries the `usage` object in a whole reply or one stream event: the value
/// itself (a reply, a Chat chunk, an Anthropic `message_delta`), its `response` (a Responses
/// stream event) or its `message` (Anthropic's `message_start`). Its `model` is the model that
/// answered; `None` when none of them has a `usage` object.
pub fn usage_holder(value: &Value) -> Option<&Value> {
    [value, &value["response"], &value["message"]]
        .into_iter()
        .find(|v| v.get("usage").is_some_and(Value::is_object))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
