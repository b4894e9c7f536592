//! The model registry: lookups by name, alias and dated snapshot; overrides from plain data.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::registry::{ModelOverride, ModelRegistry, Pricing, Provider, RegistryError};
use compact_core::tokens::{Encoding, Framing, MediaModel};

fn name_of(reg: &ModelRegistry, query: &str) -> Option<String> {
    reg.lookup(query).map(|m| m.name.clone())
}

#[test]
fn lookup_by_name_alias_and_snapshot() {
    let reg = ModelRegistry::builtin();
    let cases = [
        ("gpt-4o", "gpt-4o"),
        ("GPT-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("openai/gpt-4.1-mini", "gpt-4.1-mini"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
        ("gpt-5-2025-08-07", "gpt-5"),
        ("gpt-5-mini", "gpt-5-mini"),
        ("gpt-5.1", "gpt-5.1"),
        ("o3-2025-04-16", "o3"),
        ("o3-mini-2025-01-31", "o3-mini"),
        ("o4-mini", "o4-mini"),
        ("gpt-4-0613", "gpt-4"),
        ("gpt-4-turbo-2024-04-09", "gpt-4-turbo"),
        ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("anthropic/claude-opus-4.1", "claude-opus-4-1"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("claude-opus-4-0", "claude-opus-4"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet"),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        (
            "anthropic.claude-3-5-sonnet-20241022-v2:0",
            "claude-3-5-sonnet",
        ),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b"),
        ("llama3.1:8b", "llama-3.1-8b"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"),
        ("qwen3-235b-a22b-instruct-2507", "qwen3-235b-a22b"),
        ("deepseek-ai/DeepSeek-R1", "deepseek-reasoner"),
        ("deepseek-v3-0324", "deepseek-chat"),
        ("mistral-large-2411", "mistral-large"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b"),
    ];
    for (query, want) in cases {
        assert_eq!(
            name_of(&reg, query).as_deref(),
            Some(want),
            "lookup({query:?})"
        );
    }
    for unknown in ["", "   ", "totally-unknown-model", "bert-base"] {
        assert_eq!(name_of(&reg, unknown), None, "lookup({unknown:?})");
    }
}

#[test]
fn builtin_figures_are_consistent() {
    let reg = ModelRegistry::builtin();
    assert!(reg.models().len() >= 50);
    for m in reg.models() {
        assert!(
            m.context_window > 0 && m.max_output_tokens > 0,
            "{}",
            m.name
        );
        assert!(
            m.max_output_tokens <= m.context_window,
            "{}: output above context",
            m.name
        );
        assert_eq!(m.framing, m.provider.framing(), "{}", m.name);
        if let Some(p) = m.pricing {
            assert!(
                p.input > 0.0 && p.output >= p.input * 0.5,
                "{}: odd prices",
                m.name
            );
            assert!(p.cached_input <= p.input, "{}: cached above input", m.name);
        }
        // Every canonical name and alias resolves to its own model.
        for name in std::iter::once(&m.name).chain(&m.aliases) {
            assert_eq!(
                name_of(&reg, name).as_deref(),
                Some(m.name.as_str()),
                "{name}"
            );
        }
    }
    let gpt4o = reg.lookup("gpt-4o").unwrap();
    assert_eq!(gpt4o.encoding, Encoding::O200kBase);
    assert_eq!(gpt4o.provider, Provider::OpenAi);
    assert_eq!(reg.lookup("gpt-4").unwrap().encoding, Encoding::Cl100kBase);
    assert_eq!(
        reg.lookup("gpt-3.5-turbo").unwrap().encoding,
        Encoding::Cl100kBase
    );
    let sonnet = reg.lookup("claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.encoding, Encoding::Estimate);
    assert_eq!(sonnet.framing, Framing::ANTHROPIC);
    let p = sonnet.pricing.unwrap();
    assert!((p.cache_write - 3.75).abs() < 1e-9 && (p.cached_input - 0.30).abs() < 1e-9);
    assert!((p.cost(1_000_000, 0, 0, 1_000_000) - 18.0).abs() < 1e-9);
    assert_eq!(
        reg.lookup("gemini-2.5-pro").unwrap().context_window,
        1_048_576
    );
    assert_eq!(sonnet.counter().media(), MediaModel::Anthropic);
    let gemini = reg.lookup("gemini-2.5-pro").unwrap().counter();
    assert_eq!(gemini.media(), MediaModel::Gemini);
    assert_eq!(gpt4o.counter().media(), MediaModel::OpenAi);
    assert_eq!(gpt4o.counter().framing(), Framing::OPENAI);
}

#[test]
fn overrides_patch_known_models_and_add_new_ones() {
    let reg = ModelRegistry::builtin()
        .with_overrides([
            ModelOverride {
                name: "gpt-4o".into(),
                context_window: Some(64_000),
                aliases: vec!["my-4o".into()],
                ..ModelOverride::default()
            },
            ModelOverride {
                name: "acme-coder-v2".into(),
                provider: Some(Provider::Other),
                context_window: Some(32_000),
                encoding: Some(Encoding::Cl100kBase),
                pricing: Some(Pricing {
                    input: 1.0,
                    cached_input: 0.1,
                    cache_write: 1.0,
                    output: 2.0,
                }),
                ..ModelOverride::default()
            },
        ])
        .unwrap();
    let m = reg.lookup("gpt-4o-2024-11-20").unwrap();
    assert_eq!(m.context_window, 64_000);
    assert_eq!(
        m.max_output_tokens, 16_384,
        "untouched fields keep built-in values"
    );
    assert_eq!(reg.lookup("my-4o").unwrap().name, "gpt-4o");
    let acme = reg.lookup("acme-coder-v2-2026-01-01").unwrap();
    assert_eq!(
        (acme.context_window, acme.max_output_tokens),
        (32_000, 32_000)
    );
    assert_eq!(acme.encoding, Encoding::Cl100kBase);
    assert_eq!(acme.framing, Framing::CHAT_TEMPLATE);
    assert_eq!(acme.counter().encoding(), Encoding::Cl100kBase);

    let mut reg = reg;
    let mut copy = reg.lookup("o3").unwrap().clone();
    copy.max_output_tokens = 50_000;
    reg.insert(copy);
    assert_eq!(reg.lookup("o3").unwrap().max_output_tokens, 50_000);
    assert_eq!(reg.models().iter().filter(|m| m.name == "o3").count(), 1);
}

#[test]
fn bad_overrides_name_the_entry() {
    let base = ModelRegistry::builtin;
    let err = base()
        .with_overrides([ModelOverride {
            name: "new-model".into(),
            ..Default::default()
        }])
        .unwrap_err();
    assert_eq!(
        err,
        RegistryError::MissingContextWindow {
            name: "new-model".into()
        }
    );
    assert!(err.to_string().contains("new-model"));
    let err = base()
        .with_overrides([ModelOverride {
            name: "gpt-4o".into(),
            context_window: Some(0),
            ..Default::default()
        }])
        .unwrap_err();
    assert!(matches!(
        err,
        RegistryError::Zero {
            field: "context_window",
            ..
        }
    ));
    let err = base()
        .with_overrides([ModelOverride {
            name: "gpt-4o".into(),
            pricing: Some(Pricing {
                input: f64::NAN,
                cached_input: 0.0,
                cache_write: 0.0,
                output: 1.0,
            }),
            ..Default::default()
        }])
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::BadPrice { field: "input", .. }),
        "{err}"
    );
    let err = base()
        .with_overrides([ModelOverride::default()])
        .unwrap_err();
    assert_eq!(err, RegistryError::EmptyName { index: 0 });
    assert_eq!(Provider::parse("Anthropic"), Some(Provider::Anthropic));
    assert_eq!(Provider::parse("nope"), None);
}
