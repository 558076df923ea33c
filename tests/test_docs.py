"""The docs site builds with ``mkdocs build --strict``, and the README stays a front page."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]

#: One page per area of the API reference (docs/api/<area>.md).
API_PAGES = ["index", "env", "models", "mcts", "eval", "classical"]

#: The set-up command and the test command, exactly as the README's quick start gives them.
TWO_COMMANDS = [
    "pip install -e . && stapel-train",
    'pip install -e ".[dev]" && python -m pytest',
]

#: Labels the project's files do not use: figures name versions and commits instead.
WORK_PERIOD_WORDING = re.compile(
    r"\bsessions?[- ]\d+|\bperiod \d+|\bstop \d+|\btoday\b(?!\()|this version's default|committed before"
    r"|default config of this version",
    re.IGNORECASE,
)


@pytest.mark.slow
def test_docs_build_strict(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # Material's banner about MkDocs 2.0 (not a warning)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(REPO / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (site / "index.html").is_file()
    for page in API_PAGES:
        path = site / "api" / ("index.html" if page == "index" else f"{page}/index.html")
        assert path.is_file(), f"API page {page} not built"
    # mkdocstrings rendered the docstrings, not just the page headings.
    env_page = (site / "api" / "env" / "index.html").read_text()
    assert 'id="stapel_rl.env.engine.step"' in env_page
    assert 'id="stapel_rl.env.state.State"' in env_page


def test_readme_is_a_front_page():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    size = len(text.encode("utf-8"))  # as wc -c counts
    assert size <= 10_000, f"README.md has {size} bytes; move sections into docs/"
    for command in TWO_COMMANDS:
        assert command in text


def test_docs_name_versions_not_work_periods():
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "checkpoints").glob("*.md"))]
    # The code's docstrings, comments and strings too (this file spells the labels out).
    code = [*(REPO / "stapel_rl").rglob("*.py"), *(REPO / "scripts").rglob("*.py"), *(REPO / "tests").rglob("*.py")]
    files += sorted(path for path in code if path != pathlib.Path(__file__).resolve())
    files += sorted((REPO / "configs").rglob("*.yaml"))
    found = [
        f"{path.relative_to(REPO)}: {match.group(0)!r}"
        for path in files
        for match in WORK_PERIOD_WORDING.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, "label figures by version or commit: " + "; ".join(found)
