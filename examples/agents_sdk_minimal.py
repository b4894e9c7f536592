"""Minimal enablement (seed 003, 8.1): an OpenAI Agents SDK agent whose every model call goes
through Compact's preflight, in under ten lines of setup.

Runs against the provider simulator, no API key needed:

    cargo run -p compact-sim -- --port 8080 --window 32000 &
    OPENAI_BASE_URL=http://127.0.0.1:8080/v1 python examples/agents_sdk_minimal.py

(against OpenAI itself: set OPENAI_API_KEY and leave OPENAI_BASE_URL unset).
"""

from __future__ import annotations

import asyncio
import os

from agents import Agent, RunConfig, Runner, set_tracing_disabled

from compact import CompactConfig, CompactManager, CompactPolicy, ConsoleExporter, FileStorage
from compact.agents import CompactInputFilter


async def main() -> None:
    if os.environ.get("OPENAI_BASE_URL"):  # the simulator (or another OpenAI-compatible server)
        os.environ.setdefault("OPENAI_API_KEY", "sk-simulator")
        set_tracing_disabled(True)
    manager = CompactManager(
        CompactConfig(
            model="gpt-4o",
            policy=CompactPolicy(trigger_pct=0.85, keep_recent_turns=6),
            exporter=ConsoleExporter(),
            archive=FileStorage(os.environ.get("COMPACT_ARCHIVE", "./.compact/archive")),
        )
    )
    agent = Agent(name="assistant", instructions="You are a helpful assistant.", model="gpt-4o")
    run_config = RunConfig(call_model_input_filter=CompactInputFilter(manager, session_id="minimal"))
    result = await Runner.run(agent, "Say hello in one sentence.", run_config=run_config)
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
