"""Bad input raises a clear exception naming the place, and changes nothing; runtime errors
arrive as typed exceptions with the Rust error's kind."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import chat_history

import compact
from compact import CompactConfig, CompactManager, CompactPolicy


def snapshot(m: CompactManager, session: str) -> tuple[Any, Any]:
    return m.sessions(), m.history(session)


@pytest.mark.parametrize(
    ("bad", "place", "kind"),
    [
        ({"role": "user", "content": {1, 2}}, "messages[{n}].content", "bad_value"),
        ({"role": "user", "content": float("nan")}, "messages[{n}].content", "bad_value"),
        ({"role": "user", 7: "x"}, "messages[{n}]", "bad_value"),
        ({"role": "tool", "content": "orphan output without a call id"}, "messages[{n}]", "undecodable"),
        ({"role": "wizard", "content": "hi"}, "messages[{n}].role", "undecodable"),
        ({"role": "assistant", "content": "x", "tool_calls": [{"id": "c", "type": "function", "function": {"name": 5}}]}, "messages[{n}].tool_calls[0].function", "undecodable"),
    ],
)
def test_bad_messages_raise_and_change_nothing(bad: dict[Any, Any], place: str, kind: str) -> None:
    m = CompactManager(CompactConfig(max_context_tokens=16_000))
    good = chat_history(1)
    m.preflight("s", good)
    before = snapshot(m, "s")
    with pytest.raises(compact.InvalidInputError) as err:
        m.preflight("s", [*good, bad])
    assert isinstance(err.value, ValueError)
    assert err.value.kind == kind
    place = place.format(n=len(good))
    assert place in str(err.value), str(err.value)
    assert snapshot(m, "s") == before
    # The session goes on as if the bad call never happened.
    assert m.prepare("s", good).report["new_items"] == 0


def test_bad_arguments() -> None:
    m = CompactManager(CompactConfig(max_context_tokens=16_000))
    with pytest.raises(compact.InvalidInputError, match="session_id"):
        m.preflight("", [{"role": "user", "content": "hi"}])
    with pytest.raises(compact.InvalidInputError, match="format"):
        m.preflight("s", [{"role": "user", "content": "hi"}], format="gemini")  # type: ignore[arg-type]
    with pytest.raises(compact.InvalidInputError) as empty:
        m.preflight("s", [])
    assert empty.value.kind in ("empty_request", "undecodable")
    with pytest.raises(compact.InvalidInputError, match="messages"):
        m.preflight("s", "hello")  # type: ignore[arg-type]
    assert m.sessions() == []


def test_state_and_lookup_errors() -> None:
    m = CompactManager(CompactConfig(max_context_tokens=16_000))
    with pytest.raises(compact.UnknownSessionError) as unknown:
        m.history("nobody")
    assert unknown.value.kind == "unknown_session"
    assert isinstance(unknown.value, LookupError)
    with pytest.raises(compact.UnknownSessionError):
        m.record_usage("nobody", 100)
    with pytest.raises(compact.UnknownSessionError):
        m.recover("nobody", 400, "{}")


def test_an_irreducible_floor_over_the_window_is_insufficient_budget() -> None:
    m = CompactManager(CompactConfig(max_context_tokens=4096, policy=CompactPolicy(reserved_output_tokens=512)))
    huge = "policy clause " * 3000
    messages = [{"role": "system", "content": huge}, {"role": "user", "content": "hi"}]
    with pytest.raises(compact.InsufficientBudgetError) as err:
        m.preflight("floor", messages)
    assert err.value.kind == "insufficient_budget"
    assert err.value.details["floor"] > err.value.details["budget"]
    assert isinstance(err.value, compact.CompactError)
    # The items of a request that cannot be compacted are still logged (the log misses nothing).
    assert m.history("floor") == messages
