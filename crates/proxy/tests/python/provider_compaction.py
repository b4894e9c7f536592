"""Drives sessions that use the providers' own compaction through the Compact proxy, with the
official SDKs.

Usage: provider_compaction.py MODE BASE_URL STEPS LINES
  MODE: codex-trigger | anthropic-threshold | anthropic-on-demand

The simulator behind the proxy is scripted by the Rust test: STEPS replies that call `read_file`,
then one text reply. Tool outputs have LINES lines, so the history grows past several windows.
- codex-trigger: a Codex-style Responses client (streaming, `store: false`) that, every few steps,
  ends its input with a `compaction_trigger`, expects exactly one `compaction` item, and replaces
  its history with its user messages and that item (what Codex does);
- anthropic-threshold: `context_management` with a `compact_20260112` edit: the client appends every
  reply, compaction blocks included;
- anthropic-on-demand: every few steps a `compaction: {type: "summarize"}` call; the history becomes
  the block alone, first.
Any API error raises and fails the run. The last stdout line is a JSON summary: the client-side
history, the compactions received (as the SDK gave them), the number of model calls.
"""

import json
import sys

SYSTEM = "You are a careful coding agent. Use the tools to read and fix files."
USER = "Fix the failing tests in src/."
MAX_TOKENS = 512
COMPACT_EVERY = 6
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def read_file_output(path: str, step: int, lines: int) -> str:
    out = []
    for i in range(lines):
        if i % 17 == 3:
            out.append(f"{path}:{i}: error[E0308]: mismatched types (step {step})")
        else:
            out.append(f"{path}:{i}: fn handler_{step}_{i}(req: &Request) -> Result<Response, Error> "
                       f"{{ route(req, {i * 7 + step}) }}")
    return "\n".join(out)


def check_call(step: int, name: str, args: str) -> None:
    assert name == "read_file", name
    assert json.loads(args) == {"path": f"src/file_{step}.rs"}, args


def codex_trigger(base_url: str, steps: int, lines: int) -> dict:
    from openai import OpenAI

    client = OpenAI(base_url=base_url + "/v1", api_key="sk-test-python", max_retries=0, timeout=120)
    tools = [{"type": "function", "name": "read_file", "description": "Read a file", "parameters": SCHEMA}]
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": USER}]}]
    compactions, calls_made = [], 0

    def run(input_items):
        nonlocal calls_made
        calls_made += 1
        response, compacting = None, 0
        for event in client.responses.create(model="sim-model", instructions=SYSTEM, input=input_items,
                                             tools=tools, max_output_tokens=MAX_TOKENS, store=False,
                                             stream=True):
            assert event.type not in ("error", "response.failed"), event
            if event.type == "response.compaction.compacting":
                compacting += 1
            if event.type == "response.completed":
                response = event.response
        assert response is not None, "the stream did not complete"
        return response, compacting

    for step in range(steps + 1):
        if step > 0 and step % COMPACT_EVERY == 0:
            response, compacting = run(items + [{"type": "compaction_trigger"}])
            assert compacting == 1, f"{compacting} compacting events"
            output = [o.model_dump(exclude_none=True) for o in response.output]
            assert [o["type"] for o in output] == ["compaction"], output
            compactions.append(output[0])
            users = [i for i in items if i.get("type") == "message" and i.get("role") == "user"]
            items = users + output
        response, _ = run(items)
        calls = [(o.call_id, o.name, o.arguments) for o in response.output if o.type == "function_call"]
        items.extend(o.model_dump(exclude_none=True) for o in response.output)
        if step == steps:
            assert "All done" in response.output_text and not calls, response.output_text
            break
        assert len(calls) == 1, calls
        check_call(step, calls[0][1], calls[0][2])
        items.append({"type": "function_call_output", "call_id": calls[0][0],
                      "output": read_file_output(f"src/file_{step}.rs", step, lines)})
    return {"history": items, "compactions": compactions, "calls": calls_made}


def anthropic_session(base_url: str, steps: int, lines: int, on_demand: bool) -> dict:
    from anthropic import Anthropic

    client = Anthropic(base_url=base_url, api_key="sk-ant-test-python", max_retries=0, timeout=120)
    tools = [{"name": "read_file", "description": "Read a file", "input_schema": SCHEMA}]
    messages = [{"role": "user", "content": USER}]
    compactions, calls_made, total_history = [], 0, 0
    beta = "compact-2026-09-04" if on_demand else "compact-2026-01-12"
    extra = {} if on_demand else {"context_management": {"edits": [
        {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50000}}]}}
    for step in range(steps + 1):
        if on_demand and step > 0 and step % COMPACT_EVERY == 0:
            calls_made += 1
            reply = client.beta.messages.create(model="sim-model", max_tokens=MAX_TOKENS, system=SYSTEM,
                                                messages=messages, tools=tools, betas=[beta],
                                                extra_body={"compaction": {"type": "summarize"}})
            assert reply.stop_reason == "compaction", reply.stop_reason
            block = reply.content[0].model_dump(exclude_none=True)
            assert block["type"] == "compaction", block
            compactions.append(block)
            messages = [{"role": "assistant", "content": [block]},
                        {"role": "user", "content": "Continue where you left off."}]
        calls_made += 1
        with client.beta.messages.stream(model="sim-model", max_tokens=MAX_TOKENS, system=SYSTEM,
                                         messages=messages, tools=tools, betas=[beta],
                                         extra_body=extra) as s:
            message = s.get_final_message()
        content = [b.model_dump(exclude_none=True) for b in message.content]
        compactions.extend(b for b in content if b["type"] == "compaction")
        text = "".join(b["text"] for b in content if b["type"] == "text")
        calls = [b for b in content if b["type"] == "tool_use"]
        messages.append({"role": "assistant", "content": content})
        if step == steps:
            assert "All done" in text and not calls, text
            break
        assert len(calls) == 1, calls
        check_call(step, calls[0]["name"], json.dumps(calls[0]["input"]))
        output = read_file_output(f"src/file_{step}.rs", step, lines)
        total_history += len(output)
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": calls[0]["id"], "content": output}]})
    return {"history": messages, "compactions": compactions, "calls": calls_made,
            "tool_output_chars": total_history}


def main() -> None:
    mode, base_url, steps, lines = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode == "codex-trigger":
        summary = codex_trigger(base_url, steps, lines)
    elif mode == "anthropic-threshold":
        summary = anthropic_session(base_url, steps, lines, on_demand=False)
    elif mode == "anthropic-on-demand":
        summary = anthropic_session(base_url, steps, lines, on_demand=True)
    else:
        raise SystemExit(f"unknown mode {mode}")
    summary["mode"] = mode
    print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main()
