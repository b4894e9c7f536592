"""Fixtures of the browser tests: a session store filled by replaying corpus sessions (and one
transcript with planted markup) through `compactctl replay --store --html`, `compactctl ui` serving
it on 127.0.0.1, and Chromium driven by Playwright.

Environment: `COMPACTCTL_BIN` (the built binary), `COMPACT_TEST_CHROMIUM` (default
/usr/bin/chromium), `COMPACT_REQUIRE_CORPUS` (a missing corpus fails instead of skipping),
`COMPACT_BROWSER_SHOTS` (where screenshots go; default a temporary directory).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
# Two small real sessions (a Codex rollout and a SWE-agent trajectory) that compact several times
# at WINDOW.
CORPUS_FILES = [
    "codex-rollout/Python-AI-Solutions__rollout-2025-09-29T13-09-19-01999469-65fd-7fa2-ab93-d24bb4c714cb.jsonl",
    "swe-agent/SWE-agent__tests__test_data__trajectories__gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1__pydicom__pydicom-1458.traj",
]
WINDOW = "8000"
# The planted transcript's file name, hence its session id, is markup too.
HOSTILE_NAME = "h<img src=x onerror=window.__pwned=1>.json"

# What an attacker plants in a transcript: each sets window.__pwned if it ever runs.
HOSTILE = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    '"><svg onload=window.__pwned=1>',
    '<a href="javascript:window.__pwned=1">click me</a>',
]


def hostile_transcript(path: Path) -> None:
    """A Chat Completions request whose messages, tool arguments and outputs carry every planted
    string, long enough to be compacted at WINDOW."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the build. " + " ".join(HOSTILE)},
    ]
    for i in range(30):
        call = f"call_{i}"
        messages.append(
            {
                "role": "assistant",
                "content": f"Reading file {i}. {HOSTILE[i % 4]}",
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"command": f"cat src/f{i}.rs {HOSTILE[(i + 1) % 4]}"}),
                        },
                    }
                ],
            }
        )
        body = "".join(f"line {n} of f{i}: {HOSTILE[n % 4]} fn f{i}_{n}() {{}}\n" for n in range(60))
        messages.append({"role": "tool", "tool_call_id": call, "content": body})
    messages.append({"role": "assistant", "content": "Done. " + HOSTILE[0]})
    path.write_text(json.dumps({"model": "gpt-5", "messages": messages}))


@pytest.fixture(scope="session")
def compactctl() -> str:
    binary = os.environ.get("COMPACTCTL_BIN")
    if not binary or not Path(binary).is_file():
        pytest.fail("COMPACTCTL_BIN must name the built compactctl binary (scripts/test sets it)")
    return binary


@pytest.fixture(scope="session")
def corpus_files() -> list[str]:
    if not CORPUS.is_dir():
        if os.environ.get("COMPACT_REQUIRE_CORPUS", "0") not in ("", "0") or os.environ.get("CI") in ("true", "1"):
            pytest.fail(f"the shared corpus is required but missing at {CORPUS}")
        pytest.skip(f"corpus not found at {CORPUS}")
    files = [CORPUS / f for f in CORPUS_FILES]
    missing = [str(f) for f in files if not f.is_file()]
    assert not missing, f"corpus files missing: {missing}"
    return [str(f) for f in files]


@pytest.fixture(scope="session")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="compact-browser-") as d:
        yield Path(d)


@pytest.fixture(scope="session")
def shots(work: Path) -> Path:
    d = Path(os.environ.get("COMPACT_BROWSER_SHOTS") or (work / "shots"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="session")
def replayed(compactctl: str, corpus_files: list[str], work: Path) -> dict[str, Path]:
    """Replays the corpus sessions and the hostile transcript into a store and an HTML report."""
    hostile = work / HOSTILE_NAME
    hostile_transcript(hostile)
    store = work / "sessions.db"
    report = work / "report.html"
    subprocess.run(
        [compactctl, "replay", *corpus_files, str(hostile), "--window", WINDOW,
         "--store", f"sqlite:{store}", "--html", str(report)],
        check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
    )
    return {"store": store, "report": report}


@pytest.fixture(scope="session")
def base_url(compactctl: str, replayed: dict[str, Path]) -> Iterator[str]:
    proc = subprocess.Popen(
        [compactctl, "ui", "--store", f"sqlite:{replayed['store']}", "--port", "0"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:"), line
        yield line.removeprefix("listening on ").rstrip("/")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("COMPACT_TEST_CHROMIUM", "/usr/bin/chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture()
def page(browser: object) -> Iterator[object]:
    """A fresh page that records dialogs and page errors (a planted script that ran would show)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    pg = context.new_page()
    pg.dialogs = []  # type: ignore[attr-defined]
    pg.errors = []  # type: ignore[attr-defined]

    def on_dialog(d: object) -> None:
        pg.dialogs.append(d.message)  # type: ignore[attr-defined]
        d.dismiss()  # type: ignore[attr-defined]

    pg.on("dialog", on_dialog)
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))  # type: ignore[attr-defined]
    yield pg
    context.close()
