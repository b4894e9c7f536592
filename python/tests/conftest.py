"""Fixtures: the provider simulator (`compact-sim`, run as a process on 127.0.0.1 and scripted
through its `/sim/` control paths), and managers.

The simulator binary is `$COMPACT_SIM_BIN` (scripts/test builds it and sets it), else the
workspace's `target/debug/compact-sim` (or `$CARGO_TARGET_DIR`'s), else it is built with cargo.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def sim_binary() -> str:
    explicit = os.environ.get("COMPACT_SIM_BIN")
    if explicit:
        return explicit
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for profile in ("debug", "release"):
        candidate = target / profile / "compact-sim"
        if candidate.exists():
            return str(candidate)
    subprocess.run(["cargo", "build", "-q", "-p", "compact-sim"], cwd=ROOT, check=True)
    return str(target / "debug" / "compact-sim")


class Sim:
    """A running simulator."""

    def __init__(self, window: int) -> None:
        self.proc = subprocess.Popen(
            [sim_binary(), "--port", "0", "--window", str(window)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"compact-sim did not start: {line!r} {self.proc.stderr.read() if self.proc.stderr else ''}")
        self.base_url = m.group(1)
        self.openai_base_url = self.base_url + "/v1"
        self.window = window

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("content-type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def push_replies(self, replies: list[dict[str, Any]]) -> None:
        self._call("POST", "/sim/replies", replies)

    def requests(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/sim/requests"))

    def set_window(self, window: int) -> None:
        self._call("POST", "/sim/window", {"window": window})
        self.window = window

    def clear(self) -> None:
        self._call("POST", "/sim/clear", {})

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def sim() -> Iterator[Sim]:
    s = Sim(window=8192)
    try:
        yield s
    finally:
        s.stop()
