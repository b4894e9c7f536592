"""The examples run against the simulator with no API key."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, Sim


def run(example: str, sim: Sim, tmp_path: Path) -> str:
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    env.update(
        OPENAI_BASE_URL=sim.openai_base_url,
        COMPACT_ARCHIVE=str(tmp_path / "archive"),
        COMPACT_WINDOW=str(sim.window),
        PYTHONPATH=os.pathsep.join(sys.path),
    )
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / example)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def test_agents_sdk_minimal(sim: Sim, tmp_path: Path) -> None:
    out = run("agents_sdk_minimal.py", sim, tmp_path)
    assert "Simulated reply" in out
    assert [r["status"] for r in sim.requests()] == [200]


def test_coding_session(sim: Sim, tmp_path: Path) -> None:
    sim.set_window(16_000)
    out = run("coding_session.py", sim, tmp_path)
    assert "type error on line 7" in out
    m = re.search(r"history (\d+) tokens \(([\d.]+) windows\), the model's view (\d+) tokens; (\d+) compactions", out)
    assert m, out
    assert float(m.group(2)) > 3.0
    assert int(m.group(3)) < 16_000
    assert int(m.group(4)) >= 2
    assert all(r["status"] == 200 for r in sim.requests())
    assert "still in the session log" in out
