//! Property tests: randomly generated requests of each wire format (with random unknown fields at every
//! level) decode and re-encode to an equal value, and convert to the other formats into requests that
//! decode and keep their client tool pairs; decoding them again from any message on
//! (`IncrementalDecode`) gives what a full decode gives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Format, ToolCallKind};
use compact_formats::wire::{decode, encode, IncrementalDecode};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Cases per property: enough to hit every branch of the generators, small enough for a fast debug run.
const CASES: u32 = 192;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "\\PC{0,16}",
        1 => Just(String::new()),
        1 => "[a-z ]{0,12}".prop_map(|t| format!("<compact-checkpoint generation=\"2\">\n{t}\n</compact-checkpoint>")),
        1 => Just("<compact-checkpoint generation=\"x\">broken".to_owned()),
    ]
}

fn id() -> impl Strategy<Value = String> {
    "[a-z]{1,3}_[0-9]{1,3}"
}

fn small_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z]{0,6}".prop_map(Value::String),
        Just(json!({"k": [1, {"z": null}]})),
        Just(json!([])),
    ]
}

/// Unknown fields (`x_` keys never collide with modelled ones).
fn unknown() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("x_[a-z]{1,4}", small_json(), 0..3)
        .prop_map(|m| m.into_iter().collect())
}

/// `base` plus the unknown fields.
fn with(base: Value, extra: Map<String, Value>) -> Value {
    let mut o = base.as_object().cloned().unwrap_or_default();
    for (k, v) in extra {
        o.entry(k).or_insert(v);
    }
    Value::Object(o)
}

fn opt<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<T>> {
    prop::option::of(s)
}

/// Puts `value` under `key` when present.
fn put(mut v: Value, key: &str, value: Option<Value>) -> Value {
    if let (Some(o), Some(x)) = (v.as_object_mut(), value) {
        o.insert(key.to_owned(), x);
    }
    v
}

fn tools() -> impl Strategy<Value = Option<Value>> {
    opt(prop::collection::vec(
        ("[a-z]{1,6}", unknown()).prop_map(|(n, x)| {
            with(
                json!({"name": n, "type": "function", "parameters": {"type": "object"}}),
                x,
            )
        }),
        0..3,
    )
    .prop_map(Value::Array))
}

// ---------- Anthropic ----------

fn a_media_source() -> impl Strategy<Value = Value> {
    prop_oneof![
        ("[A-Za-z0-9+/]{0,12}", opt(Just("image/png"))).prop_map(|(d, m)| put(
            json!({"type": "base64", "data": d}),
            "media_type",
            m.map(Value::from)
        )),
        "https://[a-z]{1,6}\\.invalid/[a-z]{1,4}".prop_map(|u| json!({"type": "url", "url": u})),
        id().prop_map(|f| json!({"type": "file", "file_id": f})),
        text().prop_map(|t| json!({"type": "text", "media_type": "text/plain", "data": t})),
        Just(json!({"type": "content", "content": [{"type": "text", "text": "c"}]})),
    ]
}

fn a_part_block() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (text(), unknown(), opt(Just(json!({"type": "ephemeral"})))).prop_map(|(t, x, cc)| put(with(json!({"type": "text", "text": t}), x), "cache_control", cc)),
        1 => (a_media_source(), unknown()).prop_map(|(s, x)| with(json!({"type": "image", "source": s}), x)),
        1 => (a_media_source(), opt(text()), unknown()).prop_map(|(s, t, x)| put(with(json!({"type": "document", "source": s}), x), "title", t.map(Value::from))),
        1 => small_json().prop_map(|d| json!({"type": "x_block", "data": d})),
    ]
}

fn a_block() -> impl Strategy<Value = Value> {
    let result_content = opt(prop_oneof![
        text().prop_map(Value::from),
        prop::collection::vec(a_part_block(), 0..3).prop_map(Value::Array),
        Just(Value::Null),
    ]);
    prop_oneof![
        4 => a_part_block(),
        2 => (id(), "[a-z]{1,5}", unknown()).prop_map(|(i, n, x)| with(json!({"type": "tool_use", "id": i, "name": n, "input": {"a": 1}}), x)),
        2 => (id(), result_content, opt(any::<bool>()), unknown()).prop_map(|(i, c, e, x)| {
            put(put(with(json!({"type": "tool_result", "tool_use_id": i}), x), "content", c), "is_error", e.map(Value::Bool))
        }),
        1 => (text(), opt("[a-zA-Z0-9]{1,8}"), unknown()).prop_map(|(t, s, x)| put(with(json!({"type": "thinking", "thinking": t}), x), "signature", s.map(Value::from))),
        1 => "[a-zA-Z0-9]{1,8}".prop_map(|d| json!({"type": "redacted_thinking", "data": d})),
        1 => (id(), unknown()).prop_map(|(i, x)| with(json!({"type": "server_tool_use", "id": i, "name": "web_search", "input": {"query": "q"}}), x)),
        1 => (id(), opt(small_json())).prop_map(|(i, c)| put(json!({"type": "web_search_tool_result", "tool_use_id": i}), "content", c)),
        1 => (id(), text()).prop_map(|(i, t)| json!({"type": "mcp_tool_use", "id": i, "name": "m", "server_name": "s", "input": {"t": t}})),
        1 => (id(), opt(text())).prop_map(|(i, c)| put(json!({"type": "mcp_tool_result", "tool_use_id": i}), "content", c.map(Value::from))),
    ]
}

fn a_message() -> impl Strategy<Value = Value> {
    let content = prop_oneof![
        text().prop_map(Value::from),
        prop::collection::vec(a_block(), 0..5).prop_map(Value::Array)
    ];
    (
        // `system`: Claude Code sends one among the messages.
        prop_oneof![3 => Just("user"), 3 => Just("assistant"), 1 => Just("system")],
        content,
        unknown(),
    )
        .prop_map(|(r, c, x)| with(json!({"role": r, "content": c}), x))
}

fn anthropic_request() -> impl Strategy<Value = Value> {
    let system = opt(prop_oneof![
        text().prop_map(Value::from),
        prop::collection::vec(
            (text(), unknown()).prop_map(|(t, x)| with(json!({"type": "text", "text": t}), x)),
            0..3
        )
        .prop_map(Value::Array),
    ]);
    (
        // At least one message: an empty `messages` list does not decode (the API rejects it).
        prop::collection::vec(a_message(), 1..6),
        system,
        tools(),
        unknown(),
    )
        .prop_map(|(m, s, t, x)| {
            put(
                put(
                    with(
                        json!({"model": "claude", "max_tokens": 64, "messages": m}),
                        x,
                    ),
                    "system",
                    s,
                ),
                "tools",
                t,
            )
        })
}

// ---------- Chat ----------

fn c_part() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (text(), unknown()).prop_map(|(t, x)| with(json!({"type": "text", "text": t}), x)),
        1 => text().prop_map(|t| json!({"type": "refusal", "refusal": t})),
        1 => ("https://[a-z]{1,5}\\.invalid/i|data:image/png;base64,[A-Za-z0-9]{0,8}", opt(prop_oneof![Just("low"), Just("high")]), unknown())
            .prop_map(|(u, d, x)| with(json!({"type": "image_url", "image_url": put(with(json!({"url": u}), x.clone()), "detail", d.map(Value::from))}), x)),
        1 => ("[A-Za-z0-9]{0,8}", unknown()).prop_map(|(d, x)| json!({"type": "input_audio", "input_audio": with(json!({"data": d, "format": "wav"}), x)})),
        1 => prop_oneof![
            id().prop_map(|f| json!({"file_id": f})),
            "(data:application/pdf;base64,)?[A-Za-z0-9]{0,8}".prop_map(|d| json!({"file_data": d, "filename": "f.pdf"})),
            Just(json!({"file_id": "a", "file_data": "b"})),
        ].prop_map(|f| json!({"type": "file", "file": f})),
        1 => small_json().prop_map(|v| json!({"type": "x_part", "v": v})),
    ]
}

fn c_content() -> impl Strategy<Value = Option<Value>> {
    opt(prop_oneof![
        3 => text().prop_map(Value::from),
        3 => prop::collection::vec(c_part(), 0..4).prop_map(Value::Array),
        1 => Just(Value::Null),
    ])
}

fn c_call() -> impl Strategy<Value = Value> {
    let args = prop_oneof![
        "\\{\"[a-z]\":[0-9]\\}".prop_map(Value::from),
        "[a-z ]{0,6}".prop_map(Value::from),
        Just(json!({"a": 1})),
    ];
    prop_oneof![
        3 => (id(), "[a-z]{1,5}", args, opt(Just("function")), unknown(), unknown()).prop_map(|(i, n, a, t, fx, x)| {
            put(with(json!({"id": i, "function": with(json!({"name": n, "arguments": a}), fx)}), x), "type", t.map(Value::from))
        }),
        1 => (id(), "[a-z]{1,5}", text()).prop_map(|(i, n, t)| json!({"id": i, "type": "custom", "custom": {"name": n, "input": t}})),
    ]
}

fn c_message() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (prop_oneof![Just("system"), Just("developer"), Just("user")], c_content(), opt("[a-z]{1,4}"), unknown())
            .prop_map(|(r, c, n, x)| put(put(with(json!({"role": r}), x), "content", c), "name", n.map(Value::from))),
        3 => (c_content(), opt(prop::collection::vec(c_call(), 0..3)), opt(("[a-z]{1,4}", "\\{\\}").prop_map(|(n, a)| json!({"name": n, "arguments": a}))), opt(small_json()), unknown())
            .prop_map(|(c, calls, fc, refusal, x)| {
                let m = put(with(json!({"role": "assistant"}), x), "content", c);
                let m = put(m, "tool_calls", calls.map(Value::Array));
                put(put(m, "function_call", fc), "refusal", refusal)
            }),
        2 => (id(), c_content(), unknown()).prop_map(|(i, c, x)| put(with(json!({"role": "tool", "tool_call_id": i}), x), "content", c)),
        1 => ("[a-z]{1,4}", c_content()).prop_map(|(n, c)| put(json!({"role": "function", "name": n}), "content", c)),
    ]
}

fn chat_request() -> impl Strategy<Value = Value> {
    (prop::collection::vec(c_message(), 0..7), tools(), unknown())
        .prop_map(|(m, t, x)| put(with(json!({"model": "gpt", "messages": m}), x), "tools", t))
}

// ---------- Responses ----------

fn r_part() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (prop_oneof![Just("input_text"), Just("output_text")], text(), unknown()).prop_map(|(ty, t, x)| with(json!({"type": ty, "text": t}), x)),
        1 => text().prop_map(|t| json!({"type": "refusal", "refusal": t})),
        1 => (prop_oneof![Just("image_url"), Just("file_id")], "[a-z:/.]{1,10}", opt(Just("auto")), unknown())
            .prop_map(|(k, v, d, x)| put(with(json!({"type": "input_image", k: v}), x), "detail", d.map(Value::from))),
        1 => (prop_oneof![Just("file_id"), Just("file_data"), Just("file_url")], "(data:application/pdf;base64,)?[a-z]{1,8}", opt("[a-z]{1,4}\\.pdf"))
            .prop_map(|(k, v, n)| put(json!({"type": "input_file", k: v}), "filename", n.map(Value::from))),
        1 => Just(json!({"type": "input_image", "image_url": "u", "file_id": "f"})),
        1 => small_json().prop_map(|v| json!({"type": "input_video", "v": v})),
    ]
}

fn r_content() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(Value::from),
        prop::collection::vec(r_part(), 0..4).prop_map(Value::Array)
    ]
}

fn r_item() -> impl Strategy<Value = Value> {
    let role = prop_oneof![
        Just("user"),
        Just("assistant"),
        Just("system"),
        Just("developer")
    ];
    prop_oneof![
        3 => (role.clone(), r_content(), unknown()).prop_map(|(r, c, x)| with(json!({"role": r, "content": c}), x)),
        2 => (role, r_content(), opt(id()), unknown()).prop_map(|(r, c, i, x)| put(with(json!({"type": "message", "role": r, "content": c}), x), "id", i.map(Value::from))),
        2 => (id(), "[a-z]{1,5}", prop_oneof!["\\{\\}".prop_map(Value::from), Just(json!({"a": 1}))], opt(id()), unknown())
            .prop_map(|(c, n, a, i, x)| put(with(json!({"type": "function_call", "call_id": c, "name": n, "arguments": a}), x), "id", i.map(Value::from))),
        2 => (prop_oneof![Just("function_call_output"), Just("custom_tool_call_output")], id(), r_content(), unknown())
            .prop_map(|(ty, c, o, x)| with(json!({"type": ty, "call_id": c, "output": o}), x)),
        1 => (id(), "[a-z]{1,5}", text()).prop_map(|(c, n, t)| json!({"type": "custom_tool_call", "call_id": c, "name": n, "input": t})),
        1 => (id(), id()).prop_map(|(c, i)| json!({"type": "local_shell_call", "id": i, "call_id": c, "status": "completed", "action": {"type": "exec", "command": ["ls"]}})),
        1 => (opt(id()), opt(id()), text()).prop_filter("needs an id", |(a, b, _)| a.is_some() || b.is_some())
            .prop_map(|(c, i, o)| put(put(json!({"type": "local_shell_call_output", "output": o}), "call_id", c.map(Value::from)), "id", i.map(Value::from))),
        1 => (id(), prop::collection::vec(text(), 0..3), opt(prop_oneof!["[a-zA-Z0-9=]{1,8}".prop_map(Value::from), Just(Value::Null)]), unknown())
            .prop_map(|(i, s, e, x)| {
                let summary: Vec<Value> = s.into_iter().map(|t| json!({"type": "summary_text", "text": t})).collect();
                put(with(json!({"type": "reasoning", "id": i, "summary": summary}), x), "encrypted_content", e)
            }),
        1 => Just(json!({"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text"}]})),
        1 => "[a-zA-Z0-9=]{1,8}".prop_map(|e| json!({"type": "compaction", "encrypted_content": e})),
        1 => small_json().prop_map(|v| json!({"type": "x_item", "v": v})),
    ]
}

fn responses_request() -> impl Strategy<Value = Value> {
    let input = opt(prop_oneof![
        1 => text().prop_map(Value::from),
        4 => prop::collection::vec(r_item(), 0..7).prop_map(Value::Array),
    ]);
    (input, opt(text()), tools(), unknown()).prop_map(|(i, ins, t, x)| {
        put(
            put(
                put(with(json!({"model": "gpt"}), x), "input", i),
                "instructions",
                ins.map(Value::from),
            ),
            "tools",
            t,
        )
    })
}

// ---------- properties ----------

fn check_round_trip(format: Format, v: &Value) -> Result<(), TestCaseError> {
    let conv = decode(format, v).map_err(|e| TestCaseError::fail(format!("decode: {e}")))?;
    let out = encode(&conv, format).unwrap();
    prop_assert_eq!(&out.value, v);
    prop_assert!(out.losses.is_empty(), "losses: {:?}", out.losses);
    // With items hidden from the model (as compaction does), messages regroup around the holes and
    // the result is still a request of the format.
    for phase in 0..2 {
        let mut holed = conv.clone();
        for (i, item) in holed.items.iter_mut().enumerate() {
            item.meta.visibility.model = i % 2 == phase;
        }
        let out = encode(&holed, format).unwrap();
        let back = decode(format, &out.value)
            .map_err(|e| TestCaseError::fail(format!("holed: {e}\n{}", out.value)))?;
        prop_assert_eq!(encode(&back, format).unwrap().value, out.value);
    }
    Ok(())
}

fn check_conversions(from: Format, v: &Value) -> Result<(), TestCaseError> {
    let conv = decode(from, v).map_err(|e| TestCaseError::fail(format!("decode: {e}")))?;
    let calls = |c: &compact_core::model::Conversation| {
        c.items
            .iter()
            .filter(|i| {
                i.as_tool_call()
                    .is_some_and(|t| t.kind != ToolCallKind::Server)
            })
            .count()
    };
    for to in [
        Format::OpenAiChat,
        Format::OpenAiResponses,
        Format::Anthropic,
    ] {
        let out = encode(&conv, to).unwrap();
        let back = decode(to, &out.value)
            .map_err(|e| TestCaseError::fail(format!("{from} -> {to}: {e}\n{}", out.value)))?;
        prop_assert_eq!(calls(&back), calls(&conv), "{} -> {}", from, to);
        prop_assert_eq!(&encode(&back, to).unwrap().value, &out.value);
    }
    Ok(())
}

/// For every split of the request's message list: after decoding the request cut at the split,
/// decoding the whole one from there on gives the full decode (ids, turns and fingerprints too).
fn check_incremental(format: Format, v: &Value) -> Result<(), TestCaseError> {
    let key = if format == Format::OpenAiResponses {
        "input"
    } else {
        "messages"
    };
    let Some(Value::Array(list)) = v.get(key) else {
        return Ok(());
    };
    let full = decode(format, v).unwrap();
    for k in 0..=list.len() {
        let mut cut = v.clone();
        cut[key] = Value::Array(list[..k].to_vec());
        let mut inc = IncrementalDecode::new();
        if inc.decode(format, &cut, 0).is_err() {
            continue; // an Anthropic request needs a message
        }
        let got = inc
            .decode(format, v, k)
            .map_err(|e| TestCaseError::fail(format!("from {k}: {e}")))?
            .clone();
        prop_assert_eq!(&got, &full);
        for (a, b) in got.items.iter().zip(&full.items) {
            prop_assert_eq!(&a.meta.id, &b.meta.id);
            prop_assert_eq!(a.meta.turn, b.meta.turn);
            prop_assert_eq!(a.wire_digest(), b.wire_digest());
        }
        prop_assert_eq!(inc.decoded(), list.len() - k);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn anthropic_requests_round_trip(v in anthropic_request()) {
        check_round_trip(Format::Anthropic, &v)?;
        check_conversions(Format::Anthropic, &v)?;
        check_incremental(Format::Anthropic, &v)?;
    }

    #[test]
    fn chat_requests_round_trip(v in chat_request()) {
        check_round_trip(Format::OpenAiChat, &v)?;
        check_conversions(Format::OpenAiChat, &v)?;
        check_incremental(Format::OpenAiChat, &v)?;
    }

    #[test]
    fn responses_requests_round_trip(v in responses_request()) {
        check_round_trip(Format::OpenAiResponses, &v)?;
        check_conversions(Format::OpenAiResponses, &v)?;
        check_incremental(Format::OpenAiResponses, &v)?;
    }

    /// Arbitrary JSON never panics a decoder (it decodes or names a path) or the validator.
    #[test]
    fn arbitrary_json_never_panics(v in arbitrary_json()) {
        for f in [Format::OpenAiChat, Format::OpenAiResponses, Format::Anthropic] {
            let wrapped = [v.clone(), json!({"messages": [v.clone()]}), json!({"input": [v.clone()]}), json!({"messages": [{"role": "user", "content": [v.clone()]}]})];
            for w in &wrapped {
                // Nor the provider-rules validator (it reports shapes it cannot read).
                let _ = compact_formats::validate::validate(w, f);
                if let Ok(conv) = decode(f, w) {
                    let _ = encode(&conv, Format::Anthropic);
                    let _ = encode(&conv, Format::OpenAiChat);
                    let _ = encode(&conv, Format::OpenAiResponses);
                }
            }
        }
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("type"),
            Just("text"),
            Just("tool_use"),
            Just("tool_result"),
            Just("user"),
            Just("assistant"),
            Just("message"),
            Just("function_call"),
            Just("image"),
            Just("base64")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type"),
                    Just("role"),
                    Just("content"),
                    Just("id"),
                    Just("name"),
                    Just("input"),
                    Just("text"),
                    Just("source"),
                    Just("tool_use_id"),
                    Just("call_id"),
                    Just("output"),
                    Just("arguments"),
                    Just("tool_calls"),
                    Just("function")
                ]
                .prop_map(str::to_owned),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
