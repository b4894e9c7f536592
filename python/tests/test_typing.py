"""The package's type stubs and annotations are checked: mypy (strict) over the package and the
examples, and stubtest comparing `_native.pyi` with the compiled module."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_mypy_strict() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "python" / "pyproject.toml")],
        cwd=ROOT / "python",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_stubs_match_the_extension_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "compact._native"],
        cwd=ROOT / "python",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
