"""LangChain and LangGraph (the real packages, with ChatOpenAI / ChatAnthropic pointed at the
simulator) through `compact.langchain`: long tool-using runs with no overflow; the chat history
kept in Compact's store."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Sim
from helpers import file_text, scripted_steps

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

import compact
from compact import CompactConfig, CompactManager, CompactPolicy
from compact.langchain import CompactChatMessageHistory, CompactMiddleware, compact_pre_model_hook

WINDOW = 8192
MAX_OUTPUT = 512
STEPS = 30


@tool
def read_file(path: str) -> str:
    """Reads a file."""
    step = int(path.split("_")[1].split(".")[0])
    return file_text(path, step)


def manager() -> CompactManager:
    return CompactManager(CompactConfig(max_context_tokens=WINDOW, policy=CompactPolicy(reserved_output_tokens=1024)))


def model(sim: Sim, provider: str) -> Any:
    if provider == "openai":
        return ChatOpenAI(model="gpt-4o", base_url=sim.openai_base_url, api_key="sk-test-python", max_retries=0, max_tokens=MAX_OUTPUT)  # type: ignore[arg-type]
    return ChatAnthropic(model="claude-sonnet-4-5", base_url=sim.base_url, api_key="sk-ant-test", max_retries=0, max_tokens=MAX_OUTPUT)  # type: ignore[arg-type,call-arg]


def assert_no_overflow(sim: Sim, calls: int) -> None:
    records = [r for r in sim.requests() if r["api"] in ("chat_completions", "messages")]
    assert len(records) == calls
    assert [r["status"] for r in records] == [200] * calls, "no request was refused"
    assert max(r["input_tokens"] for r in records) + MAX_OUTPUT <= WINDOW


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_create_agent_with_the_middleware_never_overflows(sim: Sim, provider: str) -> None:
    sim.push_replies(scripted_steps(STEPS))
    middleware = CompactMiddleware(manager(), session_id=f"lc-{provider}")
    agent = create_agent(
        model(sim, provider),
        tools=[read_file],
        system_prompt="You are a careful coding agent. Use the tools to read files.",
        middleware=[middleware],
    )
    state = agent.invoke({"messages": [HumanMessage("Read every file in src/ and report the failures.")]}, {"recursion_limit": 4 * STEPS})
    messages = state["messages"]
    assert "All files read" in str(messages[-1].content)
    # The agent's state keeps the whole conversation; only the model calls were compacted.
    assert sum(isinstance(m, ToolMessage) for m in messages) == STEPS
    assert middleware.calls == STEPS + 1
    assert middleware.compactions >= 2
    assert_no_overflow(sim, STEPS + 1)


def test_the_same_agent_without_compact_overflows(sim: Sim) -> None:
    import openai

    sim.push_replies(scripted_steps(STEPS))
    agent = create_agent(model(sim, "openai"), tools=[read_file], system_prompt="You are a careful coding agent.")
    with pytest.raises(openai.BadRequestError):
        agent.invoke({"messages": [HumanMessage("Read every file.")]}, {"recursion_limit": 4 * STEPS})


def test_async_middleware(sim: Sim) -> None:
    import asyncio

    sim.push_replies(scripted_steps(12))
    middleware = CompactMiddleware(manager())
    agent = create_agent(model(sim, "openai"), tools=[read_file], middleware=[middleware])
    state = asyncio.run(
        agent.ainvoke({"messages": [HumanMessage("Read every file.")]}, {"recursion_limit": 60, "configurable": {"thread_id": "t-1"}})
    )
    assert "All files read" in str(state["messages"][-1].content)
    assert middleware.calls == 13
    assert_no_overflow(sim, 13)


def test_langgraph_pre_model_hook_never_overflows(sim: Sim) -> None:
    from langgraph.prebuilt import create_react_agent

    sim.push_replies(scripted_steps(STEPS))
    m = manager()
    agent = create_react_agent(
        model(sim, "openai"),
        tools=[read_file],
        prompt="You are a careful coding agent.",
        pre_model_hook=compact_pre_model_hook(m, session_id="graph-1"),
    )
    state = agent.invoke({"messages": [HumanMessage("Read every file in src/.")]}, {"recursion_limit": 4 * STEPS})
    assert "All files read" in str(state["messages"][-1].content)
    assert sum(isinstance(x, ToolMessage) for x in state["messages"]) == STEPS
    assert_no_overflow(sim, STEPS + 1)
    assert len(m.view("graph-1")) < len(m.history("graph-1"))


def test_chat_history_lives_in_the_store() -> None:
    m = manager()
    history = CompactChatMessageHistory("h-1", m)
    history.add_messages([SystemMessage("You are terse."), HumanMessage("hello")])
    for i in range(40):
        history.add_messages([AIMessage(f"answer {i}: " + "words " * 150), HumanMessage(f"question {i + 1}")])
    assert len(history.messages) == 82
    again = CompactChatMessageHistory("h-1", m)
    assert [x.content for x in again.messages] == [x.content for x in history.messages]
    compacted = history.compacted()
    assert compact.count_messages([{"role": "user", "content": str(x.content)} for x in compacted]) < WINDOW
    assert len(compacted) < len(history.messages)
    assert isinstance(compacted[0], SystemMessage)
    history.clear()
    assert history.messages == []
    assert history.compact_session_id == "h-1~1"
