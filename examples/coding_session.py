"""A coding session (seed 003's second example) on the plain OpenAI client and Compact's core
API: preflight before every call, usage fed back, overflow recovery, a protected policy message,
a `/compact` command, and recall of what compaction replaced.

The agent reads the files of a small (made-up) repository until it has seen all of them, so its
history grows to several context windows. Against the provider simulator the model's replies are
scripted (tool calls to `read_file`), so the run is the same every time, with no API key:

    cargo run -p compact-sim -- --port 8080 --window 16000 &
    OPENAI_BASE_URL=http://127.0.0.1:8080/v1 python examples/coding_session.py
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

import openai

from compact import CompactConfig, CompactManager, CompactPolicy, MemoryExporter, Message, count_messages

WINDOW = int(os.environ.get("COMPACT_WINDOW", "16000"))
FILES = 40
SESSION = "coding-session"


def read_file(path: str) -> str:
    """The made-up repository: each file is 60 lines of handlers, one of them broken."""
    n = int(path.split("_")[1].split(".")[0])
    lines = [f"{path}:{i}: fn handler_{n}_{i}(req: &Request) -> Result<Response> {{ route(req, {i}) }}" for i in range(60)]
    lines[7] = f"{path}:7: error[E0308]: mismatched types: expected `u32`, found `&str` (handler_{n}_7)"
    return "\n".join(lines)


def script_simulator(base_url: str) -> bool:
    """Queues the model's replies when `base_url` is the provider simulator; false otherwise."""
    replies = [
        {"text": f"Reading src/file_{n}.rs.", "tool_calls": [{"name": "read_file", "arguments": {"path": f"src/file_{n}.rs"}}]}
        for n in range(FILES)
    ]
    replies.append({"text": "Every file has the same type error on line 7: a `&str` passed where a `u32` is expected."})
    root = base_url.rstrip("/").removesuffix("/v1")
    request = urllib.request.Request(root + "/sim/replies", data=json.dumps(replies).encode(), method="POST")
    request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=5):
            return True
    except OSError:
        return False


def main() -> None:
    base_url = os.environ.get("OPENAI_BASE_URL")
    if base_url and script_simulator(base_url):
        os.environ.setdefault("OPENAI_API_KEY", "sk-simulator")
    client = openai.OpenAI(max_retries=0)
    events = MemoryExporter()
    manager = CompactManager(
        CompactConfig(
            model="gpt-4o",
            max_context_tokens=WINDOW,
            policy=CompactPolicy(reserved_output_tokens=1024, keep_recent_turns=4),
            exporter=events,
        )
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file of the repository",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            },
        }
    ]
    messages: list[Any] = [
        Message("system", "You are a careful coding agent. Read files with read_file, then report."),
        Message("developer", "Policy: never push to main; every fix needs a test.", {"protected": True}),
        Message("user", f"Find the bug shared by src/file_0.rs to src/file_{FILES - 1}.rs."),
    ]
    calls = 0
    while True:
        to_send = manager.preflight(SESSION, messages, tools=tools, model="gpt-4o")
        wire = [m.to_dict() for m in to_send]
        try:
            reply = client.chat.completions.create(model="gpt-4o", messages=wire, tools=tools, max_tokens=512)  # type: ignore[arg-type]
        except openai.BadRequestError as e:  # a context overflow: compact harder and retry
            body = e.response.text
            wire = [m.to_dict() for m in manager.recover(SESSION, e.status_code, body)]
            reply = client.chat.completions.create(model="gpt-4o", messages=wire, tools=tools, max_tokens=512)  # type: ignore[arg-type]
        calls += 1
        if reply.usage is not None:
            manager.record_usage(SESSION, reply.usage.prompt_tokens, model="gpt-4o")
        choice = reply.choices[0].message
        tool_calls: list[dict[str, Any]] = [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in choice.tool_calls or []
            if c.type == "function"
        ]
        meta: dict[str, Any] = {"tool_calls": tool_calls} if tool_calls else {}
        messages.append(Message("assistant", choice.content, meta))
        if not tool_calls:
            print(choice.content)
            break
        for call in tool_calls:
            path = json.loads(call["function"]["arguments"])["path"]
            output = manager.truncate_tool_output(SESSION, call["id"], read_file(path))
            messages.append(Message("tool", output, {"tool_call_id": call["id"]}))

    history_tokens = count_messages(messages)
    view_tokens = count_messages(manager.view(SESSION))
    compactions = len(events.named("compact.compacted"))
    print(f"{calls} model calls; history {history_tokens} tokens ({history_tokens / WINDOW:.1f} windows), "
          f"the model's view {view_tokens} tokens; {compactions} compactions")

    # A `/compact` command: compact now, whatever the size.
    compacted = manager.manual_compact(SESSION, messages, note="user-command")
    print(f"/compact: {count_messages(messages)} -> {count_messages(compacted)} tokens")
    # Everything compaction replaced is still in the log.
    first_output = next(m for m in messages if m.role == "tool")
    assert manager.history(SESSION)[4]["content"] == first_output.content
    print("the first tool output is still in the session log, whole")


if __name__ == "__main__":
    main()
