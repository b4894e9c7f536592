"""Drives a long tool-using conversation through the Compact proxy with an official SDK.

Usage: drive.py SDK BASE_URL STEPS [--stream]
  SDK: openai-chat | openai-responses | anthropic | agents-chat | agents-responses

The provider behind the proxy (the simulator) is scripted by the Rust test: STEPS replies that
call `read_file`, then one text reply. Every tool output is large, so the history grows to several
context windows; the proxy must keep each request inside the window. Any API error (a context
overflow included) raises and fails the run. The last stdout line is a JSON summary with the
client-side history, which the Rust test measures.
"""

import json
import sys

SYSTEM = "You are a careful coding agent. Use the tools to read and fix files."
USER = "Fix the failing tests in src/."
OUTPUT_LINES = 40
MAX_TOKENS = 512
SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}


def read_file_output(path: str, step: int) -> str:
    lines = []
    for i in range(OUTPUT_LINES):
        if i % 17 == 3:
            lines.append(f"{path}:{i}: error[E0308]: mismatched types (step {step})")
        else:
            lines.append(
                f"{path}:{i}: fn handler_{step}_{i}(req: &Request) -> Result<Response, Error> "
                f"{{ route(req, {i * 7 + step}) }}"
            )
    return "\n".join(lines)


def check_step(step: int, text: str, calls: list) -> None:
    assert f"Step {step}:" in text, f"step {step}: unexpected text {text!r}"
    assert len(calls) == 1, f"step {step}: expected one tool call, got {calls!r}"
    name, args = calls[0][1], json.loads(calls[0][2])
    assert name == "read_file", name
    assert args == {"path": f"src/file_{step}.rs"}, args


def openai_chat(base_url: str, steps: int, stream: bool) -> list:
    from openai import OpenAI

    client = OpenAI(base_url=base_url + "/v1", api_key="sk-test-python", max_retries=0, timeout=60)
    tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": SCHEMA}}]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    for step in range(steps + 1):
        kwargs = dict(model="sim-model", messages=messages, tools=tools, max_tokens=MAX_TOKENS)
        if stream:
            text, calls = "", {}
            usage = None
            for chunk in client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs):
                if chunk.usage is not None:
                    usage = chunk.usage
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                text += delta.content or ""
                for tc in delta.tool_calls or []:
                    entry = calls.setdefault(tc.index, ["", "", ""])
                    entry[0] = tc.id or entry[0]
                    if tc.function is not None:
                        entry[1] = tc.function.name or entry[1]
                        entry[2] += tc.function.arguments or ""
            assert usage is not None and usage.prompt_tokens > 0, "no usage in the stream"
            calls = [tuple(calls[i]) for i in sorted(calls)]
        else:
            reply = client.chat.completions.create(**kwargs)
            message = reply.choices[0].message
            text = message.content or ""
            calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
        if step == steps:
            assert "All done" in text and not calls, text
            messages.append({"role": "assistant", "content": text})
            return messages
        check_step(step, text, calls)
        messages.append({"role": "assistant", "content": text, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]})
        for call_id, _, args in calls:
            messages.append({"role": "tool", "tool_call_id": call_id,
                             "content": read_file_output(json.loads(args)["path"], step)})
    return messages


def openai_responses(base_url: str, steps: int, stream: bool) -> list:
    from openai import OpenAI

    client = OpenAI(base_url=base_url + "/v1", api_key="sk-test-python", max_retries=0, timeout=60)
    tools = [{"type": "function", "name": "read_file", "description": "Read a file", "parameters": SCHEMA}]
    items = [{"role": "user", "content": USER}]
    for step in range(steps + 1):
        kwargs = dict(model="sim-model", instructions=SYSTEM, input=items, tools=tools,
                      max_output_tokens=MAX_TOKENS, store=False)
        if stream:
            response = None
            for event in client.responses.create(stream=True, **kwargs):
                if event.type == "response.completed":
                    response = event.response
                assert event.type not in ("error", "response.failed"), event
            assert response is not None, "the stream did not complete"
        else:
            response = client.responses.create(**kwargs)
        assert response.usage is not None and response.usage.input_tokens > 0
        text = response.output_text
        calls = [(o.call_id, o.name, o.arguments) for o in response.output if o.type == "function_call"]
        items.extend(o.model_dump(exclude_none=True) for o in response.output)
        if step == steps:
            assert "All done" in text and not calls, text
            return items
        check_step(step, text, calls)
        for call_id, _, args in calls:
            items.append({"type": "function_call_output", "call_id": call_id,
                          "output": read_file_output(json.loads(args)["path"], step)})
    return items


def anthropic(base_url: str, steps: int, stream: bool) -> list:
    from anthropic import Anthropic

    client = Anthropic(base_url=base_url, api_key="sk-ant-test-python", max_retries=0, timeout=60)
    tools = [{"name": "read_file", "description": "Read a file", "input_schema": SCHEMA}]
    messages = [{"role": "user", "content": USER}]
    for step in range(steps + 1):
        kwargs = dict(model="sim-model", max_tokens=MAX_TOKENS, system=SYSTEM, messages=messages, tools=tools)
        if stream:
            with client.messages.stream(**kwargs) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        assert message.usage.input_tokens > 0
        text = "".join(b.text for b in message.content if b.type == "text")
        calls = [(b.id, b.name, json.dumps(b.input)) for b in message.content if b.type == "tool_use"]
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        if step == steps:
            assert "All done" in text and not calls, text
            return messages
        check_step(step, text, calls)
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id,
             "content": read_file_output(json.loads(args)["path"], step)} for call_id, _, args in calls]})
    return messages


def agents(base_url: str, steps: int, stream: bool, api: str) -> list:
    import asyncio

    from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner,
                        function_tool, set_tracing_disabled)
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base_url + "/v1", api_key="sk-test-python", max_retries=0, timeout=60)
    model = (OpenAIChatCompletionsModel if api == "chat" else OpenAIResponsesModel)(
        model="sim-model", openai_client=client)
    seen = []

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        step = len(seen)
        assert path == f"src/file_{step}.rs", (path, step)
        seen.append(path)
        return read_file_output(path, step)

    agent = Agent(name="coder", instructions=SYSTEM, tools=[read_file], model=model,
                  model_settings=ModelSettings(max_tokens=MAX_TOKENS))

    async def run():
        if stream:
            result = Runner.run_streamed(agent, USER, max_turns=steps + 5)
            async for _ in result.stream_events():
                pass
            return result
        return await Runner.run(agent, USER, max_turns=steps + 5)

    result = asyncio.run(run())
    assert len(seen) == steps, f"{len(seen)} tool calls for {steps} steps"
    assert "All done" in str(result.final_output), result.final_output
    return result.to_input_list()


def main() -> None:
    sdk, base_url, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    stream = "--stream" in sys.argv[4:]
    if sdk == "openai-chat":
        history = openai_chat(base_url, steps, stream)
    elif sdk == "openai-responses":
        history = openai_responses(base_url, steps, stream)
    elif sdk == "anthropic":
        history = anthropic(base_url, steps, stream)
    elif sdk in ("agents-chat", "agents-responses"):
        history = agents(base_url, steps, stream, sdk.split("-")[1])
    else:
        raise SystemExit(f"unknown SDK {sdk}")
    print(json.dumps({"sdk": sdk, "stream": stream, "history": history}, default=str))


if __name__ == "__main__":
    main()
