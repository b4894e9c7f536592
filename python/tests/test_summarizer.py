"""A Python summariser (sync or async) writes the checkpoints; its failure falls back to the
deterministic checkpoint and is reported; under `on_summarizer_failure="fail"` it raises."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers import chat_history

import compact
from compact import CompactConfig, CompactManager, CompactPolicy, SummaryRequest

WINDOW = 8192


def config(summarizer: object, **policy: object) -> CompactConfig:
    return CompactConfig(
        max_context_tokens=WINDOW,
        policy=CompactPolicy(reserved_output_tokens=1024, strategy="task_state", **policy),  # type: ignore[arg-type]
        summarizer=summarizer,  # type: ignore[arg-type]
    )


class Recorder:
    name = "recorder"

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return f"SUMMARY-FROM-PYTHON of {len(request.messages)} messages"


def test_a_sync_summarizer_writes_the_checkpoint() -> None:
    recorder = Recorder()
    m = CompactManager(config(recorder))
    prepared = m.prepare("s", chat_history(40))
    assert prepared.compacted
    assert recorder.requests, "the summariser was called"
    request = recorder.requests[0]
    assert request.style == "task_state"
    assert "Goals" in request.instructions or "goal" in request.instructions.lower()
    assert request.messages and request.material
    assert request.max_tokens > 0
    assert "SUMMARY-FROM-PYTHON" in json.dumps(prepared.messages)
    assert prepared.report["compaction"]["summarizer"] == "python:recorder"


def test_a_plain_async_function_works_from_sync_and_async_callers() -> None:
    calls: list[int] = []

    async def summarize(request: SummaryRequest) -> str:
        await asyncio.sleep(0)
        calls.append(len(request.messages))
        return "ASYNC-SUMMARY"

    m = CompactManager(config(summarize))
    assert "ASYNC-SUMMARY" in json.dumps(m.preflight("sync", chat_history(40)))

    async def main() -> list[object]:
        return await m.apreflight("async", chat_history(40))

    assert "ASYNC-SUMMARY" in json.dumps(asyncio.run(main()))
    assert len(calls) >= 2


def test_a_failing_summarizer_falls_back_and_says_so() -> None:
    def broken(request: SummaryRequest) -> str:
        raise ConnectionError("model endpoint unreachable")

    m = CompactManager(config(broken))
    history = chat_history(40)
    prepared = m.prepare("s", history)
    assert prepared.compacted
    report = prepared.report["compaction"]
    assert report["summarizer"] == "deterministic"
    assert any("ConnectionError: model endpoint unreachable" in w and "deterministic" in w for w in report["warnings"])
    assert m.history("s") == history, "a failed summariser changes no history"


def test_a_summarizer_returning_nothing_falls_back() -> None:
    m = CompactManager(config(lambda request: "  "))
    prepared = m.prepare("s", chat_history(40))
    assert prepared.report["compaction"]["summarizer"] == "deterministic"


def test_under_fail_a_failing_summarizer_raises() -> None:
    def broken(request: SummaryRequest) -> str:
        raise RuntimeError("quota exceeded")

    m = CompactManager(config(broken, on_summarizer_failure="fail"))
    with pytest.raises(compact.SummarizerError) as err:
        m.preflight("s", chat_history(40))
    assert "quota exceeded" in str(err.value)
    assert err.value.kind == "summarizer"
