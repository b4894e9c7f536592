"""Golden outputs of the Python binding on the corpus: the calls the proxy's golden test sends
(crates/cli/tests/cli/golden_proxy.rs: the first MAX_CALLS model calls of every corpus session, each
the agent's whole history so far in its provider's wire format) go through a default
``CompactManager`` at a 16k window, and a digest per file of what it returns is pinned in
crates/cli/tests/golden/python.txt (file names and digests only, never corpus text).

The calls come from the replay crate's loader (``AgentCalls``, printed by its example
``agent_requests``: ``$COMPACT_AGENT_REQUESTS_BIN``, else the target directory's, else built with
cargo), so both hosts see the same requests. The corpus is ``../shared/corpus`` beside the
project; the test skips when it is missing unless ``COMPACT_REQUIRE_CORPUS`` (or ``CI``) is set.

A refactor must leave every digest as it is; a change meant to alter outputs re-blesses with
``COMPACT_BLESS=1`` and says why.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from compact import CompactConfig, CompactError, CompactManager

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
GOLDEN = ROOT / "crates" / "cli" / "tests" / "golden" / "python.txt"
# The same as golden_proxy.rs: calls per session, the model named, the window.
MAX_CALLS = 40
MODEL = "compact-golden"
WINDOW = 16000


def fnv(data: bytes, h: int = 0xCBF29CE484222325) -> int:
    """FNV-1a, 64 bits, continued from ``h`` (the digest of golden.rs and golden_proxy.rs)."""
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def corpus_files() -> list[Path]:
    """Every file of the corpus's format directories, sorted by path (as the Rust tests walk it)."""
    if not CORPUS.is_dir():
        required = os.environ.get("COMPACT_REQUIRE_CORPUS", "0") != "0" or os.environ.get("CI") in ("true", "1")
        if required:
            pytest.fail(f"the shared corpus is required (COMPACT_REQUIRE_CORPUS or CI is set) but missing at {CORPUS}")
        pytest.skip(f"corpus not found at {CORPUS}")
    return sorted(f for d in CORPUS.iterdir() if d.is_dir() for f in d.iterdir() if f.is_file())


def requests_binary() -> str:
    explicit = os.environ.get("COMPACT_AGENT_REQUESTS_BIN")
    if explicit:
        return explicit
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    candidate = target / "debug" / "examples" / "agent_requests"
    if not candidate.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "compact-replay", "--example", "agent_requests"], cwd=ROOT, check=True)
    return str(candidate)


def agent_calls(files: list[Path]) -> Iterator[dict[str, Any]]:
    """The calls, one dict per line of ``agent_requests``, read as it prints them."""
    proc = subprocess.Popen(
        [requests_binary(), "--max-calls", str(MAX_CALLS), *map(str, files)],
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        yield json.loads(line)
    assert proc.wait() == 0, "agent_requests failed"


def call_args(request: dict[str, Any], format: str) -> dict[str, Any]:
    """A wire request as the manager takes it: the message list, the system prompt kept outside it
    (Anthropic ``system``, Responses ``instructions``) and the tools."""
    if format == "openai-responses":
        messages, system = request["input"], request.get("instructions")
    else:
        messages, system = request["messages"], request.get("system")
    return {"messages": messages, "system": system, "tools": request.get("tools"), "format": format}


def digests(files: list[Path]) -> dict[str, str]:
    manager = CompactManager(CompactConfig(max_context_tokens=WINDOW))
    sessions = {f.name: f"golden-{i:03}" for i, f in enumerate(files)}
    state: dict[str, int] = {f.name: fnv(b"") for f in files}
    for call in agent_calls(files):
        name = call["file"]
        if "request" not in call:
            text = f"not loaded: {call['error']}"
        else:
            args = call_args(call["request"], call["format"])
            try:
                out = manager.prepare(sessions[name], args["messages"], format=args["format"], system=args["system"], tools=args["tools"], model=MODEL)
                text = f"call {call['call']}\n" + json.dumps(out.messages, ensure_ascii=False, separators=(",", ":"))
            except CompactError as e:
                text = f"call {call['call']} error {type(e).__name__}: {e}"
        state[name] = fnv(text.encode() + b"\n", state[name])
    return {f"python {name}": f"{h:016x}" for name, h in state.items()}


def test_golden_python_outputs_are_unchanged() -> None:
    files = corpus_files()
    now = digests(files)
    text = "".join(f"{k} {d}\n" for k, d in sorted(now.items()))
    if os.environ.get("COMPACT_BLESS"):
        GOLDEN.write_text(text)
        return
    assert GOLDEN.exists(), f"{GOLDEN}: missing; bless it with COMPACT_BLESS=1"
    was = dict(line.rsplit(" ", 1) for line in GOLDEN.read_text().splitlines() if " " in line)
    changed = [f"changed: {k}" for k in sorted(now) if k in was and was[k] != now[k]]
    changed += [f"new: {k}" for k in sorted(now) if k not in was]
    changed += [f"gone: {k}" for k in sorted(was) if k not in now]
    assert not changed, (
        f"{len(changed)} of {len(now)} corpus outputs differ from {GOLDEN} (a refactor must change none; "
        "a change meant to alter outputs re-blesses with COMPACT_BLESS=1 and says why):\n" + "\n".join(changed)
    )


def test_golden_digest_is_the_rust_one() -> None:
    assert f"{fnv(b''):016x}" == "cbf29ce484222325"
    assert fnv(b"100", fnv(b"tokens ")) == fnv(b"tokens 100")
    assert fnv(b"tokens 100") != fnv(b"tokens 101")
