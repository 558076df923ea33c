"""The python examples of the docs run as written, at smaller sizes, and print what their comments say.

Each ``python`` block of a docs page runs in a fresh folder with only its sizes
shrunk (``SMALLER``: thousands of games or a long PPO run become a few); a
``print`` followed by a comment, on its line or the next, must print what the
comment shows (up to its ``...``). A renamed function, a changed argument or a
changed output breaks the page's test, not a reader's first try.
"""

from __future__ import annotations

import builtins
import re

import pytest
from commands import REPO

#: Sizes that make an example slow, and what the test runs instead (the code around them unchanged).
SMALLER = {
    "batch_size=4096": "batch_size=8",
    "num_envs=1024": "num_envs=4",
    'MaskablePPO("MlpPolicy", env, seed=0)': 'MaskablePPO("MlpPolicy", env, seed=0, n_steps=32, batch_size=32)',
    ".learn(100_000)": ".learn(32)",
}

BLOCKS = [
    (page.name, index, block)
    for page in sorted((REPO / "docs").glob("*.md"))
    for index, block in enumerate(re.findall(r"^```python\n(.*?)^```", page.read_text(), re.MULTILINE | re.DOTALL))
]


def expected_prints(source: str) -> "list[str | None]":
    """For each ``print(`` line of ``source``, in order, the output its comment shows (the text before
    ``...``), or ``None`` where no comment says."""
    lines = source.splitlines()
    expected: "list[str | None]" = []
    for i, line in enumerate(lines):
        if not line.startswith("print("):
            continue
        comment = line.split("  # ", 1)[1] if "  # " in line else None
        if comment is None and i + 1 < len(lines) and lines[i + 1].startswith("# "):
            comment = lines[i + 1][2:]
        expected.append(comment.split("...")[0].strip() if comment else None)
    return expected


def test_the_docs_have_their_python_examples():
    assert {page for page, _, _ in BLOCKS} == {"environments.md", "interop.md"} and len(BLOCKS) >= 5
    assert sum(1 for e in expected_prints("\n".join(b for _, _, b in BLOCKS)) if e) >= 2


@pytest.mark.slow
@pytest.mark.parametrize(("page", "index", "block"), BLOCKS, ids=[f"{p}:{i}" for p, i, _ in BLOCKS])
def test_doc_example_runs_and_prints_what_it_says(page, index, block, tmp_path, monkeypatch):
    source = block
    for big, small in SMALLER.items():
        source = source.replace(big, small)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    printed: "list[str]" = []

    def record(*args: object, **kwargs: object) -> None:
        printed.append(" ".join(map(str, args)))

    exec(compile(source, f"docs/{page} python block {index}", "exec"), {"print": record, "__builtins__": builtins})
    expected = expected_prints(block)
    assert len(printed) == len(expected), f"{len(printed)} lines printed for {len(expected)} print calls"
    for output, shown in zip(printed, expected, strict=True):
        if shown:
            assert output.startswith(shown), f"printed {output[:80]!r}, the page shows {shown!r}"
