"""The OpenAI Agents SDK (the real `Runner`, with the `openai` client pointed at the simulator)
through `compact.agents`: a long tool-using run with no overflow, and a Session that keeps the
full history in Compact's store while the model sees the compacted view."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import Sim
from helpers import file_text, scripted_steps

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel, RunConfig, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

import compact
from compact import CompactConfig, CompactManager, CompactPolicy
from compact.agents import CompactInputFilter, CompactSession

set_tracing_disabled(True)

WINDOW = 8192
MAX_OUTPUT = 512
STEPS = 30


@function_tool
def read_file(path: str) -> str:
    """Reads a file."""
    step = int(path.split("_")[1].split(".")[0])
    return file_text(path, step)


def make_agent(sim: Sim, api: str) -> Agent[Any]:
    client = AsyncOpenAI(base_url=sim.openai_base_url, api_key="sk-test-python", max_retries=0)
    model: Any = (
        OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)
        if api == "chat"
        else OpenAIResponsesModel(model="gpt-4o", openai_client=client)
    )
    return Agent(
        name="coder",
        instructions="You are a careful coding agent. Use the tools to read files.",
        model=model,
        tools=[read_file],
        model_settings=ModelSettings(max_tokens=MAX_OUTPUT),
    )


def manager() -> CompactManager:
    return CompactManager(CompactConfig(max_context_tokens=WINDOW, policy=CompactPolicy(reserved_output_tokens=1024)))


def assert_no_overflow(sim: Sim, calls: int) -> None:
    records = [r for r in sim.requests() if r["api"] in ("chat_completions", "responses")]
    assert len(records) == calls
    assert [r["status"] for r in records] == [200] * calls, "no request was refused"
    assert max(r["input_tokens"] for r in records) + MAX_OUTPUT <= WINDOW


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_long_tool_using_run_never_overflows(sim: Sim, api: str) -> None:
    sim.push_replies(scripted_steps(STEPS))
    flt = CompactInputFilter(manager(), session_id=f"agents-{api}")
    result = asyncio.run(
        Runner.run(
            make_agent(sim, api),
            "Read every file in src/ and report the failures.",
            run_config=RunConfig(call_model_input_filter=flt),
            max_turns=STEPS + 5,
        )
    )
    assert "All files read" in str(result.final_output)
    assert flt.calls == STEPS + 1
    assert_no_overflow(sim, STEPS + 1)
    # The run was several windows long, so the filter compacted along the way.
    assert compact.count_messages(result.to_input_list(), format="openai-responses") > 3 * WINDOW
    assert flt.compactions >= 2


def test_without_compact_the_same_run_overflows(sim: Sim) -> None:
    """The control: the same scripted run without the filter hits the simulator's overflow error."""
    import openai

    sim.push_replies(scripted_steps(STEPS))
    with pytest.raises(openai.BadRequestError) as err:
        asyncio.run(Runner.run(make_agent(sim, "chat"), "Read every file.", max_turns=STEPS + 5))
    assert "context length" in str(err.value)


def test_a_session_keeps_the_full_history_while_the_model_sees_the_view(sim: Sim) -> None:
    m = manager()
    session = CompactSession("chat-42", m)
    flt = CompactInputFilter(m, session_id="chat-42/model")
    agent = make_agent(sim, "responses")
    turns = 4
    per_turn = 8
    async def conversation() -> None:
        for turn in range(turns):
            sim.push_replies(
                [
                    {"text": f"Turn {turn} step {s}.", "tool_calls": [{"name": "read_file", "arguments": {"path": f"src/file_{turn * per_turn + s}.rs"}}]}
                    for s in range(per_turn)
                ]
                + [{"text": f"Turn {turn} done."}]
            )
            result = await Runner.run(
                agent, f"Turn {turn}: read the next files.", session=session, run_config=RunConfig(call_model_input_filter=flt), max_turns=per_turn + 5
            )
            assert f"Turn {turn} done." in str(result.final_output)

    asyncio.run(conversation())
    full = session.full_history()
    view = asyncio.run(session.get_items())
    # Every item the runs produced is in the store, as received; the model's view is smaller.
    assert m.history("chat-42", format="openai-responses") == full
    assert len(full) >= turns * (2 * per_turn + 2)
    assert compact.count_messages(view, format="openai-responses") < compact.count_messages(full, format="openai-responses")
    assert compact.count_messages(full, format="openai-responses") > 3 * WINDOW
    assert_no_overflow(sim, turns * (per_turn + 1))
    # A new process (a new session object over the same store) finds the same history.
    assert CompactSession("chat-42", m).full_history() == full
    popped = asyncio.run(session.pop_item())
    assert popped == full[-1]
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == []
    assert session.compact_session_id == "chat-42~1"
