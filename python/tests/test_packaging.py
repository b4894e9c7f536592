"""The distribution as a user gets it: the wheel built, installed by its name (`compact-context`)
into a fresh virtualenv, and the README's Python example run there; and the extras naming the
ranges the tests run against.

The wheel is built in the debug profile (`maturin build`, reusing what `maturin develop` just
compiled): the README's `--release` build makes the same wheel, optimised, in minutes rather than
seconds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from conftest import ROOT

DISTRIBUTION = "compact-context"
PYTHON_DIR = ROOT / "python"


def readme_python_section() -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"^## Python\b.*?(?=^## )", text, re.S | re.M)
    assert m, "README.md has no Python section"
    return m.group(0)


def readme_example() -> str:
    m = re.search(r"^```python\n(.*?)^```", readme_python_section(), re.S | re.M)
    assert m, "the README's Python section has no python block"
    return m.group(1)


def clean_env() -> dict[str, str]:
    """The environment without what would make the fresh virtualenv see this one or the tree."""
    env = dict(os.environ)
    for var in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(var, None)
    return env


def test_the_readme_installs_by_the_distribution_name() -> None:
    section = readme_python_section()
    assert "maturin build --release" in section
    assert f"pip install --find-links python/dist {DISTRIBUTION}" in section
    assert f"{DISTRIBUTION}[agents]" in section and f"{DISTRIBUTION}[langchain]" in section


def test_the_wheel_installs_by_name_in_a_fresh_virtualenv_and_runs_the_readme_example(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "maturin", "build", "--locked", "--quiet", "-o", str(dist)],
        cwd=PYTHON_DIR,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    wheels = list(dist.glob("*.whl"))
    assert len(wheels) == 1, wheels
    # One wheel for every CPython from 3.10: the stable ABI.
    assert re.fullmatch(r"compact_context-[\d.]+-cp310-abi3-[\w.]+\.whl", wheels[0].name), wheels[0].name

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=clean_env(), timeout=300)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(dist), DISTRIBUTION],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr[-4000:]

    work = tmp_path / "work"
    work.mkdir()
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.metadata as m, compact; print(m.version('compact-context')); print(compact.__file__)",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert where.returncode == 0, where.stderr[-4000:]
    version, module = where.stdout.split()
    assert version.count(".") == 2, version
    assert Path(module).is_relative_to(venv), f"imported from {module}, not the fresh virtualenv"

    example = tmp_path / "readme_example.py"
    example.write_text(readme_example())
    store = re.search(r'SqliteStore\("([^"]+)"\)', example.read_text())
    assert store, "the example keeps its sessions in SQLite"
    ran = subprocess.run(
        [str(python), str(example)], cwd=work, capture_output=True, text=True, env=clean_env(), timeout=300
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert (work / store.group(1)).is_file(), "the example's SqliteStore was not written"


def requirement_lines(path: Path) -> dict[str, Requirement]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            out[req.name] = req
    return out


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_extras_name_the_ranges_the_tests_run_against() -> None:
    import importlib.metadata
    import tomllib

    project = tomllib.loads((PYTHON_DIR / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    extras = project["optional-dependencies"]
    assert set(extras) == {"agents", "langchain"}
    tested = requirement_lines(ROOT / "scripts" / "python-test-requirements.txt")
    for extra, lines in extras.items():
        for line in lines:
            req = Requirement(line)
            assert req.specifier, f"{extra}: {line} names no range"
            if req.name in tested:
                # The test requirements pin one version (`==`): the extra's range holds it.
                pinned = [s.version for s in tested[req.name].specifier if s.operator == "=="]
                assert len(pinned) == 1, f"{tested[req.name]} is not pinned"
                assert req.specifier.contains(pinned[0], prereleases=True), (extra, line, str(tested[req.name]))
            # What the tests ran against is inside the range.
            version = importlib.metadata.version(req.name)
            assert req.specifier.contains(version, prereleases=True), (extra, line, version)


def test_the_test_requirements_are_pinned() -> None:
    # Each tool the tests install is one exact version: a new release reaches CI only by a commit.
    tested = requirement_lines(ROOT / "scripts" / "python-test-requirements.txt")
    assert tested
    for name, req in tested.items():
        operators = [s.operator for s in req.specifier]
        assert operators == ["=="], f"{name}: {req} is not pinned to one version"
