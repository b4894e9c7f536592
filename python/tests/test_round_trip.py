"""Every message shape of the three wire formats goes through the binding and comes back equal
(unknown keys included), both by itself and through a preflight that changes nothing."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import compact
from compact import CompactConfig, CompactManager, Message

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "developer", "content": [{"type": "text", "text": "Prefer small diffs."}], "protected": True},
    {"role": "user", "content": "Hello", "name": "ada", "x_custom": {"nested": [1, 2.5, None, True]}},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Look at this"},
            {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png", "detail": "low"}},
        ],
    },
    {
        "role": "assistant",
        "content": "Reading two files.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a.rs\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"b.rs\"}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "fn a() {}"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "fn b() {}"}]},
    {"role": "assistant", "content": "Done: both files compile.", "refusal": None},
]

RESPONSES: list[dict[str, Any]] = [
    {"role": "user", "content": "Fix the bug", "type": "message"},
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be careful."}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look at main."}], "encrypted_content": "gAAAA=="},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash", "arguments": "{\"cmd\":\"cargo test\"}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "test result: FAILED"},
    {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin Patch"},
    {"type": "custom_tool_call_output", "call_id": "call_2", "output": "ok"},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Fixed.", "annotations": [], "logprobs": []}],
    },
    {"role": "user", "content": [{"type": "input_text", "text": "thanks"}, {"type": "input_image", "image_url": "https://example.invalid/b.png", "detail": "auto"}]},
]

ANTHROPIC: list[dict[str, Any]] = [
    {"role": "user", "content": "Run the tests."},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Use cargo.", "signature": "c2ln"},
            {"type": "text", "text": "Running them."},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "cargo test"}, "cache_control": {"type": "ephemeral"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "1 failed"}], "is_error": True},
            {"type": "text", "text": "Please fix it."},
        ],
    },
    {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "abc"}, {"type": "text", "text": "Fixing."}]},
    {
        "role": "user",
        "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "text", "text": "and this screenshot", "cache_control": {"type": "ephemeral"}},
        ],
    },
]

SHAPES = [("openai-chat", CHAT), ("openai-responses", RESPONSES), ("anthropic", ANTHROPIC)]


@pytest.mark.parametrize(("fmt", "messages"), SHAPES, ids=[s[0] for s in SHAPES])
def test_every_shape_round_trips(fmt: str, messages: list[dict[str, Any]]) -> None:
    original = copy.deepcopy(messages)
    assert compact.detect_format(messages) == fmt
    assert compact.round_trip(messages) == original
    assert compact.round_trip(messages, format=fmt) == original  # type: ignore[arg-type]
    assert messages == original, "the input is not modified"


@pytest.mark.parametrize(("fmt", "messages"), SHAPES, ids=[s[0] for s in SHAPES])
def test_a_preflight_that_changes_nothing_returns_the_callers_objects(fmt: str, messages: list[dict[str, Any]]) -> None:
    manager = CompactManager(CompactConfig(max_context_tokens=128_000))
    prepared = manager.prepare("s-" + fmt, messages)
    assert prepared.format == fmt
    assert prepared.unchanged
    assert prepared.messages == messages
    assert all(a is b for a, b in zip(prepared.messages, messages))
    # The log holds every item: the history reads back equal, in the same shape.
    assert manager.history("s-" + fmt) == messages


def test_messages_round_trip_as_message_objects() -> None:
    messages = [
        Message("system", "You are terse."),
        Message("developer", "Never push to main.", {"protected": True}),
        Message("user", "hi", {"turn_id": 7}),
    ]
    manager = CompactManager(CompactConfig(max_context_tokens=128_000))
    out = manager.preflight("m", messages)
    assert out == messages
    assert all(isinstance(m, Message) for m in out)
    assert compact.round_trip(messages) == [m.to_dict() for m in messages]


def test_the_system_prompt_is_given_apart_in_each_format() -> None:
    manager = CompactManager(CompactConfig(max_context_tokens=128_000))
    for fmt, messages in SHAPES:
        out = manager.preflight("sys-" + fmt, messages, system="You are a coding agent.", format=fmt)  # type: ignore[arg-type]
        assert out == messages, fmt
