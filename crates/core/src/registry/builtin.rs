//! The built-in model table. Figures as published on the providers' model and pricing pages, as known
//! in November 2026; prices in US dollars per million tokens. Config overrides all of them.

use super::{ModelInfo, Pricing, Provider};
use crate::tokens::Encoding;

/// Anthropic bills 5-minute prompt-cache writes at 1.25 × the input price.
const ANTHROPIC_CACHE_WRITE: f64 = 1.25;
/// Anthropic bills prompt-cache reads at 0.1 × the input price.
const ANTHROPIC_CACHE_READ: f64 = 0.1;
/// Google bills implicit/explicit cache hits on Gemini 2.5 and later at 0.1 × the input price
/// (storage per hour is not modelled).
const GEMINI_CACHE_READ: f64 = 0.1;

/// GPT-4.1's context window: 1,047,576 tokens (1 Mi minus 1,000).
const GPT41_CONTEXT: u32 = 1_047_576;
/// Gemini's 1M context window: 1,048,576 tokens (1 Mi).
const GEMINI_CONTEXT: u32 = 1_048_576;
/// Llama 3.1+ and most current open models: 128 Ki tokens.
const OPEN_128K: u32 = 131_072;
/// Open-weight models have no API output cap; 8,192 is the common serving default.
const OPEN_MAX_OUTPUT: u32 = 8_192;

/// Prices with an explicit cached-input price and no cache-write surcharge (OpenAI, DeepSeek).
fn auto_cached(input: f64, cached_input: f64, output: f64) -> Option<Pricing> {
    Some(Pricing {
        input,
        cached_input,
        cache_write: input,
        output,
    })
}

/// Prices without any cache discount.
fn flat(input: f64, output: f64) -> Option<Pricing> {
    Some(Pricing {
        input,
        cached_input: input,
        cache_write: input,
        output,
    })
}

/// Anthropic prices: cache reads and writes derived from the input price.
fn anthropic_price(input: f64, output: f64) -> Option<Pricing> {
    Some(Pricing {
        input,
        cached_input: input * ANTHROPIC_CACHE_READ,
        cache_write: input * ANTHROPIC_CACHE_WRITE,
        output,
    })
}

/// Gemini prices (prompts up to 200k tokens): cache reads at 10%.
fn gemini_price(input: f64, output: f64) -> Option<Pricing> {
    Some(Pricing {
        input,
        cached_input: input * GEMINI_CACHE_READ,
        cache_write: input,
        output,
    })
}

/// One table row.
fn m(
    name: &str,
    aliases: &[&str],
    provider: Provider,
    encoding: Encoding,
    (context_window, max_output_tokens): (u32, u32),
    pricing: Option<Pricing>,
) -> ModelInfo {
    ModelInfo {
        name: name.to_owned(),
        aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
        provider,
        context_window,
        max_output_tokens,
        encoding,
        framing: provider.framing(),
        pricing,
    }
}

/// The built-in models.
pub(super) fn models() -> Vec<ModelInfo> {
    use Encoding::{Cl100kBase as CL, Estimate as EST, O200kBase as O2};
    use Provider::*;
    vec![
        // --- OpenAI: o200k_base for GPT-4o and later, cl100k_base for GPT-4 / GPT-3.5.
        m(
            "gpt-5.1",
            &[],
            OpenAi,
            O2,
            (400_000, 128_000),
            auto_cached(1.25, 0.125, 10.0),
        ),
        m(
            "gpt-5",
            &["gpt-5-chat-latest", "gpt-5-codex"],
            OpenAi,
            O2,
            (400_000, 128_000),
            auto_cached(1.25, 0.125, 10.0),
        ),
        m(
            "gpt-5-mini",
            &[],
            OpenAi,
            O2,
            (400_000, 128_000),
            auto_cached(0.25, 0.025, 2.0),
        ),
        m(
            "gpt-5-nano",
            &[],
            OpenAi,
            O2,
            (400_000, 128_000),
            auto_cached(0.05, 0.005, 0.40),
        ),
        m(
            "gpt-4.1",
            &[],
            OpenAi,
            O2,
            (GPT41_CONTEXT, 32_768),
            auto_cached(2.0, 0.50, 8.0),
        ),
        m(
            "gpt-4.1-mini",
            &[],
            OpenAi,
            O2,
            (GPT41_CONTEXT, 32_768),
            auto_cached(0.40, 0.10, 1.60),
        ),
        m(
            "gpt-4.1-nano",
            &[],
            OpenAi,
            O2,
            (GPT41_CONTEXT, 32_768),
            auto_cached(0.10, 0.025, 0.40),
        ),
        m(
            "gpt-4o",
            &["chatgpt-4o-latest"],
            OpenAi,
            O2,
            (128_000, 16_384),
            auto_cached(2.50, 1.25, 10.0),
        ),
        m(
            "gpt-4o-mini",
            &[],
            OpenAi,
            O2,
            (128_000, 16_384),
            auto_cached(0.15, 0.075, 0.60),
        ),
        m(
            "o3",
            &[],
            OpenAi,
            O2,
            (200_000, 100_000),
            auto_cached(2.0, 0.50, 8.0),
        ),
        m(
            "o3-pro",
            &[],
            OpenAi,
            O2,
            (200_000, 100_000),
            flat(20.0, 80.0),
        ),
        m(
            "o3-mini",
            &[],
            OpenAi,
            O2,
            (200_000, 100_000),
            auto_cached(1.10, 0.55, 4.40),
        ),
        m(
            "o4-mini",
            &[],
            OpenAi,
            O2,
            (200_000, 100_000),
            auto_cached(1.10, 0.275, 4.40),
        ),
        m(
            "o1",
            &[],
            OpenAi,
            O2,
            (200_000, 100_000),
            auto_cached(15.0, 7.50, 60.0),
        ),
        m(
            "o1-mini",
            &[],
            OpenAi,
            O2,
            (128_000, 65_536),
            auto_cached(1.10, 0.55, 4.40),
        ),
        m(
            "gpt-4-turbo",
            &[
                "gpt-4-turbo-preview",
                "gpt-4-1106-preview",
                "gpt-4-0125-preview",
            ],
            OpenAi,
            CL,
            (128_000, 4_096),
            flat(10.0, 30.0),
        ),
        m(
            "gpt-4-32k",
            &[],
            OpenAi,
            CL,
            (32_768, 32_768),
            flat(60.0, 120.0),
        ),
        m("gpt-4", &[], OpenAi, CL, (8_192, 8_192), flat(30.0, 60.0)),
        m(
            "gpt-3.5-turbo",
            &["gpt-35-turbo"],
            OpenAi,
            CL,
            (16_385, 4_096),
            flat(0.50, 1.50),
        ),
        // --- Anthropic: tokenizer not public -> calibrated estimate.
        m(
            "claude-opus-4-5",
            &["claude-opus-4.5"],
            Anthropic,
            EST,
            (200_000, 64_000),
            anthropic_price(5.0, 25.0),
        ),
        m(
            "claude-opus-4-1",
            &["claude-opus-4.1"],
            Anthropic,
            EST,
            (200_000, 32_000),
            anthropic_price(15.0, 75.0),
        ),
        m(
            "claude-opus-4",
            &["claude-opus-4-0", "claude-4-opus"],
            Anthropic,
            EST,
            (200_000, 32_000),
            anthropic_price(15.0, 75.0),
        ),
        m(
            "claude-sonnet-4-5",
            &["claude-sonnet-4.5"],
            Anthropic,
            EST,
            (200_000, 64_000),
            anthropic_price(3.0, 15.0),
        ),
        m(
            "claude-sonnet-4",
            &["claude-sonnet-4-0", "claude-4-sonnet"],
            Anthropic,
            EST,
            (200_000, 64_000),
            anthropic_price(3.0, 15.0),
        ),
        m(
            "claude-haiku-4-5",
            &["claude-haiku-4.5"],
            Anthropic,
            EST,
            (200_000, 64_000),
            anthropic_price(1.0, 5.0),
        ),
        m(
            "claude-3-7-sonnet",
            &["claude-3.7-sonnet"],
            Anthropic,
            EST,
            (200_000, 64_000),
            anthropic_price(3.0, 15.0),
        ),
        m(
            "claude-3-5-sonnet",
            &["claude-3.5-sonnet"],
            Anthropic,
            EST,
            (200_000, 8_192),
            anthropic_price(3.0, 15.0),
        ),
        m(
            "claude-3-5-haiku",
            &["claude-3.5-haiku"],
            Anthropic,
            EST,
            (200_000, 8_192),
            anthropic_price(0.80, 4.0),
        ),
        m(
            "claude-3-opus",
            &[],
            Anthropic,
            EST,
            (200_000, 4_096),
            anthropic_price(15.0, 75.0),
        ),
        m(
            "claude-3-haiku",
            &[],
            Anthropic,
            EST,
            (200_000, 4_096),
            anthropic_price(0.25, 1.25),
        ),
        // --- Google Gemini (prices for prompts up to 200k tokens).
        m(
            "gemini-3-pro-preview",
            &["gemini-3-pro"],
            Google,
            EST,
            (GEMINI_CONTEXT, 65_536),
            gemini_price(2.0, 12.0),
        ),
        m(
            "gemini-2.5-pro",
            &[],
            Google,
            EST,
            (GEMINI_CONTEXT, 65_536),
            gemini_price(1.25, 10.0),
        ),
        m(
            "gemini-2.5-flash",
            &[],
            Google,
            EST,
            (GEMINI_CONTEXT, 65_536),
            gemini_price(0.30, 2.50),
        ),
        m(
            "gemini-2.5-flash-lite",
            &[],
            Google,
            EST,
            (GEMINI_CONTEXT, 65_536),
            gemini_price(0.10, 0.40),
        ),
        m(
            "gemini-2.0-flash",
            &[],
            Google,
            EST,
            (GEMINI_CONTEXT, 8_192),
            gemini_price(0.10, 0.40),
        ),
        // --- Meta Llama (open weights; no first-party API price).
        m(
            "llama-4-scout",
            &["llama-4-scout-17b-16e"],
            Meta,
            EST,
            (10_000_000, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "llama-4-maverick",
            &["llama-4-maverick-17b-128e"],
            Meta,
            EST,
            (1_000_000, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "llama-3.3-70b",
            &["llama3.3", "llama3.3-70b"],
            Meta,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "llama-3.2-3b",
            &["llama3.2", "llama3.2-3b"],
            Meta,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "llama-3.2-1b",
            &["llama3.2-1b"],
            Meta,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "llama-3.1-405b",
            &["llama3.1-405b"],
            Meta,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "llama-3.1-70b",
            &["llama3.1-70b"],
            Meta,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "llama-3.1-8b",
            &["llama3.1", "llama3.1-8b"],
            Meta,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "llama-3-70b",
            &["llama3-70b", "meta-llama-3-70b"],
            Meta,
            EST,
            (8_192, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "llama-3-8b",
            &["llama3", "llama3-8b", "meta-llama-3-8b"],
            Meta,
            EST,
            (8_192, OPEN_MAX_OUTPUT),
            None,
        ),
        // --- Qwen (open weights). Qwen2.5 is 32k native (128k only with YaRN); Qwen3 is served at 128k.
        m(
            "qwen3-coder",
            &["qwen3-coder-480b-a35b"],
            Alibaba,
            EST,
            (262_144, 65_536),
            None,
        ),
        m(
            "qwen3-235b-a22b",
            &["qwen3-235b"],
            Alibaba,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "qwen3-30b-a3b",
            &[],
            Alibaba,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "qwen3-32b",
            &[],
            Alibaba,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "qwen3-14b",
            &[],
            Alibaba,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "qwen3-8b",
            &["qwen3"],
            Alibaba,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "qwen2.5-coder-32b",
            &[],
            Alibaba,
            EST,
            (32_768, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "qwen2.5-72b",
            &[],
            Alibaba,
            EST,
            (32_768, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "qwen2.5-32b",
            &[],
            Alibaba,
            EST,
            (32_768, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "qwen2.5-14b",
            &[],
            Alibaba,
            EST,
            (32_768, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "qwen2.5-7b",
            &["qwen2.5"],
            Alibaba,
            EST,
            (32_768, OPEN_MAX_OUTPUT),
            None,
        ),
        // --- DeepSeek: API names map to the current V3.x / R1 weights (128k context).
        m(
            "deepseek-chat",
            &["deepseek-v3", "deepseek-v3.1", "deepseek-v3.2"],
            DeepSeek,
            EST,
            (128_000, 8_192),
            auto_cached(0.28, 0.028, 0.42),
        ),
        m(
            "deepseek-reasoner",
            &["deepseek-r1"],
            DeepSeek,
            EST,
            (128_000, 65_536),
            auto_cached(0.28, 0.028, 0.42),
        ),
        // --- Mistral (API prices; open-weight sizes where published).
        m(
            "mistral-large",
            &["mistral-large-latest"],
            Mistral,
            EST,
            (131_072, OPEN_MAX_OUTPUT),
            flat(2.0, 6.0),
        ),
        m(
            "mistral-medium-3",
            &["mistral-medium", "mistral-medium-latest"],
            Mistral,
            EST,
            (131_072, OPEN_MAX_OUTPUT),
            flat(0.40, 2.0),
        ),
        m(
            "mistral-small-3.1",
            &["mistral-small", "mistral-small-latest"],
            Mistral,
            EST,
            (131_072, OPEN_MAX_OUTPUT),
            flat(0.10, 0.30),
        ),
        m(
            "codestral",
            &["codestral-latest"],
            Mistral,
            EST,
            (256_000, OPEN_MAX_OUTPUT),
            flat(0.30, 0.90),
        ),
        m(
            "mistral-nemo",
            &["open-mistral-nemo"],
            Mistral,
            EST,
            (OPEN_128K, OPEN_MAX_OUTPUT),
            flat(0.15, 0.15),
        ),
        m(
            "mixtral-8x22b",
            &["open-mixtral-8x22b"],
            Mistral,
            EST,
            (65_536, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "mixtral-8x7b",
            &["open-mixtral-8x7b"],
            Mistral,
            EST,
            (32_768, OPEN_MAX_OUTPUT),
            None,
        ),
        m(
            "mistral-7b",
            &["open-mistral-7b"],
            Mistral,
            EST,
            (32_768, OPEN_MAX_OUTPUT),
            None,
        ),
    ]
}
