"""Drives `compactctl mcp --transcript FILE` with the official MCP Python SDK, as a user's MCP
client would: initialise, list the tools, call each one, check the answers against the transcript
(read here independently), and check that malformed calls come back as MCP errors while the
server stays up.

Usage: python mcp_client.py COMPACTCTL TRANSCRIPT
       python mcp_client.py COMPACTCTL --http TRANSCRIPT
(the same checks over streamable HTTP: `compactctl mcp --http 127.0.0.1:0` on a free loopback port,
two sessions one after the other, then SIGTERM must stop the server cleanly), or
       python mcp_client.py COMPACTCTL --store URL SESSION REFERENCE ORIGINAL_FILE
(the second: a session of Compact's store whose truncated output REFERENCE names, ORIGINAL_FILE
holding the original output). Prints `ok` and exits 0 when every check passes; any failed check
raises.
"""

import asyncio
import json
import signal
import subprocess
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

TOOLS = {"recall", "search_history", "context_status", "checkpoint", "memory"}


def failed_results(transcript):
    """The (record uuid, text) of every tool result the transcript flags as an error."""
    found = []
    with open(transcript, encoding="utf-8") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            content = (rec.get("message") or {}).get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if block.get("type") == "tool_result" and block.get("is_error"):
                    text = block["content"]
                    if isinstance(text, list):
                        text = "\n".join(b.get("text", "") for b in text)
                    found.append((rec["uuid"], text))
    return found


def text_of(result):
    assert result.content, result
    return result.content[0].text


def field(obj, *names):
    """An attribute under the first of its spellings the SDK version uses."""
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    raise AttributeError(names)


async def expect_error(session, name, args, mentions, why):
    """A malformed call: a protocol error, or a tool error naming what is wrong (the SDK reports
    arguments that do not deserialise as tool errors, so that the model can correct its call)."""
    try:
        result = await session.call_tool(name, args)
    except MCPError as e:
        message = e.message
    else:
        assert field(result, "is_error", "isError"), f"{why}: {name}({args}) answered {result}"
        message = text_of(result)
    assert mentions in message, f"{why}: {name}({args}): {message!r} does not mention {mentions!r}"


async def check_session(session, transcript):
    """Initialise, list the tools, call each one and check the answers against the transcript;
    malformed calls must come back as MCP errors and leave the server answering."""
    failures = failed_results(transcript)
    assert failures, "the transcript has a failed tool result"
    failed_id, failed_text = failures[0]
    error_words = "mismatched sniff"

    init = await session.initialize()
    info = field(init, "server_info", "serverInfo")
    assert info.name == "compact", info

    listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == TOOLS, set(tools)
    for tool in tools.values():
        assert len(tool.description) > 60, tool.name
        schema = field(tool, "input_schema", "inputSchema")
        assert schema["type"] == "object", (tool.name, schema)
    assert "reference" in field(tools["recall"], "input_schema", "inputSchema")["required"]

    # search_history: the failed run, which compaction removed, ranks first.
    result = await session.call_tool("search_history", {"query": error_words, "limit": 1})
    assert not field(result, "is_error", "isError"), result
    found = json.loads(text_of(result))
    top = found["results"][0]
    assert top["id"] == failed_id, (top, failed_id)
    assert top["in_context"] is False, top
    assert "mismatched types" in top["snippet"], top
    assert found["total"] >= 1
    if found["total"] > 1:
        more = json.loads(text_of(await session.call_tool(
            "search_history", {"query": error_words, "limit": 1, "cursor": found["next_cursor"]})))
        assert more["results"][0]["id"] != failed_id, more

    # recall: the original output, byte for byte.
    result = await session.call_tool("recall", {"reference": failed_id})
    recalled = json.loads(text_of(result))
    assert recalled["content"] == failed_text, (recalled, failed_text)
    assert recalled["next_cursor"] is None
    tail = json.loads(text_of(await session.call_tool(
        "recall", {"reference": failed_id, "cursor": 10})))
    assert tail["content"] == failed_text[10:], tail

    # An unknown id is a tool error the model can read, not a protocol error.
    result = await session.call_tool("recall", {"reference": "no-such-item"})
    assert field(result, "is_error", "isError"), result
    assert "no item with id" in text_of(result)

    # context_status: the transcript's one compaction, the model's window.
    status = json.loads(text_of(await session.call_tool("context_status", {})))
    assert status["compactions"] == 1, status
    assert status["window"] == 200000, status
    assert 0 < status["tokens_in_context"] < status["next_compaction_at"], status

    # checkpoint: names the failure and the task list.
    result = await session.call_tool("checkpoint", {"max_tokens": 1500})
    text = text_of(result)
    assert text.startswith("# Record of earlier work"), text[:200]
    assert "Add a regression test for semicolon-separated exports" in text, text

    # memory: the facts of the whole log, each citing the items it came from.
    text = text_of(await session.call_tool("memory", {}))
    assert "constraint (active" in text and "Never change the public signature" in text, text
    assert "error[E0308]" in text, text

    # Malformed calls: MCP errors, and the server carries on.
    await expect_error(session, "recall", {}, "reference", "missing argument")
    await expect_error(session, "recall", {"reference": 42}, "invalid type", "mistyped argument")
    await expect_error(session, "recall", {"reference": "x", "extra": 1}, "extra", "unknown argument")
    await expect_error(session, "recall", {"reference": failed_id, "cursor": 10**9}, "cursor", "cursor past the end")
    await expect_error(session, "recall", {"reference": failed_id, "cursor": -1}, "invalid value", "negative cursor")
    await expect_error(session, "search_history", {"query": "sniff", "limit": 0}, "limit", "limit 0")
    await expect_error(session, "search_history", {"query": "sniff", "limit": "ten"}, "invalid type", "limit not a number")
    await expect_error(session, "search_history", {"query": " ;; "}, "query", "no words")
    await expect_error(session, "checkpoint", {"max_tokens": 5}, "max_tokens", "budget too small")
    await expect_error(session, "memory", {"all": "yes"}, "invalid type", "all not a boolean")
    await expect_error(session, "no_such_tool", {}, "not found", "unknown tool")
    status_again = json.loads(text_of(await session.call_tool("context_status", {})))
    assert status_again == status


async def main(exe, transcript):
    params = StdioServerParameters(command=exe, args=["mcp", "--transcript", transcript])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await check_session(session, transcript)
    print("ok")


async def main_store(exe, url, session_id, reference, original_file):
    with open(original_file, encoding="utf-8") as f:
        original = f.read()
    params = StdioServerParameters(command=exe, args=["mcp", "--store", url, "--session", session_id])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            # The original behind the truncation marker, whole, over as many pages as it takes.
            content, cursor = "", 0
            while cursor is not None:
                page = json.loads(text_of(await session.call_tool(
                    "recall", {"reference": reference, "cursor": cursor})))
                content += page["content"]
                cursor = page["next_cursor"]
                assert len(text_of(await session.call_tool(
                    "recall", {"reference": reference, "cursor": page["from"]}))) <= 12000
            assert content == original, (len(content), len(original))
            found = json.loads(text_of(await session.call_tool(
                "search_history", {"query": "perihelion drift"})))
            assert found["total"] >= 1, found
            status = json.loads(text_of(await session.call_tool("context_status", {})))
            assert status["items_in_log"] == 4, status
            await expect_error(session, "recall", {"reference": 7}, "invalid type", "mistyped argument")
    print("ok")


def http_client(url):
    """The SDK's streamable HTTP client: `streamable_http_client` (mcp 2.x) or
    `streamablehttp_client` (mcp 1.x, which also yields a session id getter)."""
    import mcp.client.streamable_http as transport

    if hasattr(transport, "streamable_http_client"):
        return transport.streamable_http_client(url)
    return transport.streamablehttp_client(url)


async def main_http(exe, transcript):
    server = subprocess.Popen(
        [exe, "mcp", "--transcript", transcript, "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The server names its endpoint on standard error once it listens.
        line = server.stderr.readline()
        assert "http://127.0.0.1:" in line, f"no endpoint announced: {line!r}"
        url = line[line.index("http://"):].strip()
        assert url.endswith("/mcp"), url
        # Two sessions in turn: the server is stateful per session and outlives each client.
        for _ in range(2):
            async with http_client(url) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    await check_session(session, transcript)
        # A JSON-RPC request the server cannot parse: an error answer, and it keeps serving.
        import httpx

        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        with httpx.Client() as raw:
            bad = raw.post(url, content=b"{not json", headers=headers)
            assert 400 <= bad.status_code < 500, (bad.status_code, bad.text)
        async with http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                status = json.loads(text_of(await session.call_tool("context_status", {})))
                assert status["compactions"] == 1, status
        # SIGTERM: a clean stop (the hang guard below is not a timing check).
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
        rest = server.stderr.read()
        assert code == 0, f"exit {code} after SIGTERM; stderr: {rest}"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    print("ok")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "--http":
        asyncio.run(main_http(sys.argv[1], sys.argv[3]))
    elif len(sys.argv) > 2 and sys.argv[2] == "--store":
        asyncio.run(main_store(*sys.argv[1:2], *sys.argv[3:7]))
    else:
        asyncio.run(main(sys.argv[1], sys.argv[2]))
