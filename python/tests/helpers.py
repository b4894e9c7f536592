"""Synthetic tool-using histories and tool outputs for the tests."""

from __future__ import annotations

import json
from typing import Any

SYSTEM = "You are a careful coding agent. Use the tools to read and fix files."
POLICY = "Never push to main. Every change needs a test."  # the protected developer message


def file_text(path: str, step: int, lines: int = 40) -> str:
    out = []
    for i in range(lines):
        if i % 17 == 3:
            out.append(f"{path}:{i}: error[E0308]: mismatched types (step {step})")
        else:
            out.append(f"{path}:{i}: fn handler_{step}_{i}(req: &Request) -> Result<Response, Error> {{ route(req, {i * 7 + step}) }}")
    return "\n".join(out)


def chat_history(steps: int, lines: int = 40) -> list[dict[str, Any]]:
    """A Chat Completions tool-using history: system, a protected developer policy, a task, then
    `steps` rounds of read_file call + output + assistant note."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "developer", "content": POLICY, "protected": True},
        {"role": "user", "content": "Fix the failing tests in src/."},
    ]
    for step in range(steps):
        call_id = f"call_{step}"
        path = f"src/file_{step}.rs"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": file_text(path, step, lines)})
        messages.append({"role": "assistant", "content": f"Step {step}: {path} has a type error on line 3."})
    return messages


def scripted_steps(steps: int) -> list[dict[str, Any]]:
    """Simulator replies: `steps` read_file calls, then a final answer."""
    replies: list[dict[str, Any]] = [
        {"text": f"Step {s}: reading src/file_{s}.rs.", "tool_calls": [{"name": "read_file", "arguments": {"path": f"src/file_{s}.rs"}}]}
        for s in range(steps)
    ]
    replies.append({"text": "All files read; the failures are type errors."})
    return replies
