//! A typed context-overflow classifier: recognises "the request does not fit the model's context window"
//! in provider error responses (HTTP status + body) and streaming error events, with the numbers when
//! the message carries them.
//!
//! The rules, in order: rate limits (HTTP 429, `rate_limit*` codes) and per-string size errors
//! (`string_above_max_length`) are never overflows; explicit overflow codes and types
//! (`context_length_exceeded`, `request_too_large`, HTTP 413) are; otherwise the message is matched
//! against phrasings seen from OpenAI, Azure, Anthropic, Gemini, LiteLLM, vLLM, llama.cpp, Ollama,
//! OpenRouter and others. An output cap alone ("max_tokens is too large ... at most N completion
//! tokens") is not an overflow: shortening the input cannot fix it.
//!
//! It lives with the wire formats because it reads provider JSON and nothing else (no HTTP): the LLM
//! summarisers (`compact-llm`, which re-exports it) and the session runtime (`compact-session`, after a
//! provider rejects a request) both use it.

use serde_json::Value;

/// Which provider family the error looks like it came from (a hint for logs, not a guarantee).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderHint {
    /// OpenAI Chat Completions or an OpenAI-compatible server speaking its error format (Azure, DeepSeek...).
    OpenAiChat,
    /// OpenAI Responses API.
    OpenAiResponses,
    /// Anthropic Messages API.
    Anthropic,
    /// Google Gemini.
    Gemini,
    /// Azure OpenAI (GPT-5 family "configured limit" wording).
    Azure,
    /// LiteLLM proxy (the provider's own code is lost).
    LiteLlm,
    /// vLLM.
    Vllm,
    /// llama.cpp server.
    LlamaCpp,
    /// Ollama.
    Ollama,
    /// OpenRouter.
    OpenRouter,
    /// Recognised by wording only.
    Generic,
}

/// The request did not fit the model's context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextOverflow {
    /// The window (or input limit) in tokens, when the message states it.
    pub limit: Option<u64>,
    /// Tokens the request needed (input, plus requested output when the provider counts it), when stated.
    pub requested: Option<u64>,
    /// Where the error seems to come from.
    pub provider_hint: ProviderHint,
}

/// The fields of an error body that matter for classification.
#[derive(Debug, Default)]
struct ErrorFields {
    message: String,
    code: String,
    kind: String,
    status: String,
    /// llama.cpp reports the numbers as fields.
    n_prompt_tokens: Option<u64>,
    n_ctx: Option<u64>,
    anthropic_envelope: bool,
}

/// Classifies an HTTP error response. Returns `None` for successes, rate limits and unrelated errors.
pub fn classify(status: u16, body: &str) -> Option<ContextOverflow> {
    if status < 400 || status == HTTP_TOO_MANY_REQUESTS {
        return None;
    }
    let fields = parse_fields(body);
    if status == HTTP_PAYLOAD_TOO_LARGE {
        let hint = if fields.anthropic_envelope || fields.kind == "request_too_large" {
            ProviderHint::Anthropic
        } else {
            ProviderHint::Generic
        };
        return Some(ContextOverflow {
            limit: None,
            requested: None,
            provider_hint: hint,
        });
    }
    classify_fields(&fields)
}

/// Classifies one streaming event: an OpenAI Responses `error` event or `response.failed`, an
/// Anthropic `error` event, or an OpenAI-compatible chunk carrying an `error` object. `event` is the
/// SSE `event:` name when there was one; `data` is the event's data.
pub fn classify_stream_event(event: Option<&str>, data: &str) -> Option<ContextOverflow> {
    let value: Value = serde_json::from_str(data).ok()?;
    let ty = value
        .get("type")
        .and_then(Value::as_str)
        .or(event)
        .unwrap_or("");
    let error = match ty {
        "response.failed" | "response.incomplete" => value.get("response")?.get("error")?.clone(),
        _ => match value.get("error") {
            Some(e) if e.is_object() => e.clone(),
            // Responses' error event may carry code/message at the top level.
            _ if ty == "error" => value.clone(),
            _ => return None,
        },
    };
    let mut fields = fields_of_error(&error);
    fields.anthropic_envelope = event_is_anthropic(&value);
    if ty.starts_with("response.") && fields.code.contains("context_length") {
        return Some(ContextOverflow {
            limit: None,
            requested: None,
            provider_hint: ProviderHint::OpenAiResponses,
        });
    }
    classify_fields(&fields)
}

const HTTP_TOO_MANY_REQUESTS: u16 = 429;
const HTTP_PAYLOAD_TOO_LARGE: u16 = 413;

fn event_is_anthropic(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("error")
        && v.get("error")
            .and_then(|e| e.get("type"))
            .and_then(Value::as_str)
            .is_some()
}

fn parse_fields(body: &str) -> ErrorFields {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return ErrorFields {
            message: body.to_owned(),
            ..ErrorFields::default()
        };
    };
    // Some servers wrap the error in a one-element array (Gemini over REST sometimes does).
    let value = match value {
        Value::Array(mut a) if !a.is_empty() => a.swap_remove(0),
        v => v,
    };
    let mut fields = match value.get("error") {
        Some(e @ Value::Object(_)) => fields_of_error(e),
        Some(Value::String(s)) => {
            let mut f = fields_of_error(&value);
            f.message = s.clone();
            f
        }
        _ => fields_of_error(&value),
    };
    fields.anthropic_envelope = event_is_anthropic(&value);
    if fields.message.is_empty() {
        if let Some(d) = value.get("detail").and_then(Value::as_str) {
            fields.message = d.to_owned();
        }
    }
    fields
}

fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn fields_of_error(e: &Value) -> ErrorFields {
    ErrorFields {
        message: text_of(e.get("message")),
        code: text_of(e.get("code")).to_ascii_lowercase(),
        kind: text_of(e.get("type")).to_ascii_lowercase(),
        status: text_of(e.get("status")),
        n_prompt_tokens: e.get("n_prompt_tokens").and_then(Value::as_u64),
        n_ctx: e.get("n_ctx").and_then(Value::as_u64),
        anthropic_envelope: false,
    }
}

/// Codes that say "not an overflow" even when the wording is similar.
const NOT_OVERFLOW_CODES: &[&str] = &[
    "string_above_max_length",
    "rate_limit_exceeded",
    "insufficient_quota",
];

/// Phrasings of an output cap alone: fixing them needs a smaller `max_tokens`, not a shorter input.
const OUTPUT_CAP_PHRASES: &[&str] = &[
    "completion tokens, whereas you provided",
    "maximum allowed number of output tokens",
    "max_tokens: ",
];

/// Overflow phrasings (lower case) and the provider they point to.
const OVERFLOW_PHRASES: &[(&str, ProviderHint)] = &[
    ("litellm.contextwindowexceedederror", ProviderHint::LiteLlm),
    ("exceeds the available context size", ProviderHint::LlamaCpp),
    ("exceed_context_size_error", ProviderHint::LlamaCpp),
    ("input token count", ProviderHint::Gemini),
    ("prompt is too long", ProviderHint::Anthropic),
    ("exceed context limit", ProviderHint::Anthropic),
    (
        "your input exceeds the context window",
        ProviderHint::OpenAiResponses,
    ),
    (
        "input tokens exceed the configured limit",
        ProviderHint::Azure,
    ),
    (
        "endpoint's maximum context length",
        ProviderHint::OpenRouter,
    ),
    ("maximum context length", ProviderHint::OpenAiChat),
    ("longer than the model's context length", ProviderHint::Vllm),
    ("longer than the maximum model length", ProviderHint::Vllm),
    ("exceeded max context length", ProviderHint::Ollama),
    ("exceeds the context length", ProviderHint::Ollama),
    ("input length exceeds", ProviderHint::Ollama),
    ("maximum input length is", ProviderHint::Generic),
    ("context length exceeded", ProviderHint::Generic),
    ("context window exceeded", ProviderHint::Generic),
    ("maximum prompt length", ProviderHint::Generic),
    ("input is too long", ProviderHint::Generic),
    ("too many input tokens", ProviderHint::Generic),
    ("too large for model with", ProviderHint::Generic),
];

fn classify_fields(f: &ErrorFields) -> Option<ContextOverflow> {
    if NOT_OVERFLOW_CODES.iter().any(|c| f.code == *c)
        || f.code.contains("rate_limit")
        || f.kind.contains("rate_limit")
    {
        return None;
    }
    let lower = f.message.to_ascii_lowercase();
    let by_code = matches!(
        f.code.as_str(),
        "context_length_exceeded" | "context_window_exceeded"
    ) || f.kind == "request_too_large"
        || f.kind == "exceed_context_size_error";
    let by_phrase = OVERFLOW_PHRASES
        .iter()
        .find(|(p, _)| lower.contains(p))
        .map(|(_, h)| *h);
    if !by_code && by_phrase.is_none() {
        return None;
    }
    if by_phrase.is_none() && OUTPUT_CAP_PHRASES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    let mut hint = by_phrase.unwrap_or(if f.anthropic_envelope || f.kind == "request_too_large" {
        ProviderHint::Anthropic
    } else {
        ProviderHint::OpenAiChat
    });
    if f.status == "INVALID_ARGUMENT" {
        hint = ProviderHint::Gemini;
    }
    let (limit, requested) = numbers(&lower, f);
    // "input + max_tokens > limit" where max_tokens alone is over the limit: no input cut can help.
    if let (Some(l), Some(out)) = (limit, max_tokens_part(&lower)) {
        if out >= l {
            return None;
        }
    }
    Some(ContextOverflow {
        limit,
        requested,
        provider_hint: hint,
    })
}

/// The output-token part of an "input + output > limit" message, when present.
fn max_tokens_part(lower: &str) -> Option<u64> {
    if let Some(rest) = after(lower, "exceed context limit:") {
        let nums = integers(rest);
        return nums.get(1).copied();
    }
    if let Some(rest) = after(lower, "is too large:") {
        if lower.contains("context length") {
            return integers(rest).first().copied();
        }
    }
    None
}

fn after<'a>(s: &'a str, needle: &str) -> Option<&'a str> {
    s.find(needle).map(|i| &s[i + needle.len()..])
}

/// All unsigned integers in `s`, in order (digits separated by commas are joined: `128,000`).
fn integers(s: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut cur: Option<u64> = None;
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b.is_ascii_digit() {
            let d = u64::from(b - b'0');
            cur = Some(cur.unwrap_or(0).saturating_mul(10).saturating_add(d));
        } else if b == b',' && cur.is_some() && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
            // thousands separator
        } else if let Some(n) = cur.take() {
            out.push(n);
        }
    }
    out.extend(cur);
    out
}

fn first_after(lower: &str, needle: &str) -> Option<u64> {
    after(lower, needle).and_then(|r| integers(r).first().copied())
}

/// Extracts (limit, requested) from the known phrasings.
fn numbers(lower: &str, f: &ErrorFields) -> (Option<u64>, Option<u64>) {
    if f.n_ctx.is_some() || f.n_prompt_tokens.is_some() {
        return (f.n_ctx, f.n_prompt_tokens);
    }
    if let Some(rest) = after(lower, "prompt is too long:") {
        let n = integers(rest);
        return (n.get(1).copied(), n.first().copied());
    }
    if let Some(rest) = after(lower, "exceed context limit:") {
        let n = integers(rest);
        if let [input, output, limit, ..] = n[..] {
            return (Some(limit), Some(input.saturating_add(output)));
        }
        return (None, None);
    }
    if let Some(rest) = after(lower, "input token count") {
        let n = integers(rest);
        return (n.get(1).copied(), n.first().copied());
    }
    if let Some(limit) = first_after(lower, "configured limit of") {
        return (Some(limit), first_after(lower, "resulted in"));
    }
    if let Some(limit) = first_after(lower, "maximum context length is") {
        // vLLM: "... and your request has M input tokens (X > N - M)".
        if let Some(input) = first_after(lower, "your request has") {
            let output = first_after(lower, "is too large:").unwrap_or(0);
            return (Some(limit), Some(input.saturating_add(output)));
        }
        let requested =
            first_after(lower, "resulted in").or_else(|| first_after(lower, "you requested"));
        return (Some(limit), requested);
    }
    if let Some(limit) = first_after(lower, "maximum prompt length is") {
        return (Some(limit), first_after(lower, "contains"));
    }
    if lower.contains("longer than the model's context length")
        || lower.contains("longer than the maximum model length")
    {
        let n = integers(lower);
        return (n.get(1).copied(), n.first().copied());
    }
    if let Some(limit) = first_after(lower, "maximum input length is") {
        return (Some(limit), None);
    }
    if let Some(rest) = after(lower, "prompt contains") {
        let requested = integers(rest).first().copied();
        return (first_after(lower, "too large for model with"), requested);
    }
    (None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_handle_separators() {
        assert_eq!(integers("a 128,000 b 7, 8"), vec![128_000, 7, 8]);
        assert_eq!(integers("(1000 > 4096 - 3500)"), vec![1000, 4096, 3500]);
    }
}
