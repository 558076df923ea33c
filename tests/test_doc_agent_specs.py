"""Every agent spec that README.md and docs/*.md show builds with ``make_agent``.

A spec that names a file only a run makes (``mcts:runs/.../ckpt_00000245.pt:sims=64``,
``classical:eval=runs/fit3_I/weights_I.json``) is built with a shipped file in
its place, so its options are still checked; ``variant_<V>`` is built for both
variants. Left out, as no spec to build: usage notation (``PATH``, ``NAME``,
``DEPTH``, ``[...]``, ``...``, shell ``$(...)``), a kind named alone in prose
(``mcts``, ``policy``, ``sb3``), and ``sb3:`` specs, which need a policy that
examples/sb3_maskable_ppo.py trains.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from stapel_rl.classical import nnue
from stapel_rl.classical.evaluation import weights_path
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.network_agents import MCTSAgent

REPO = pathlib.Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

SPEC = re.compile(r"(?<![\w/.$-])(?:alphabeta|classical|mcts|policy|sb3)(?::[^\s`'\"),;]+)?")
NOTATION = ("PATH", "NAME", "DEPTH", "[", "...", "$(")
SHIPPED = ("variant_I", "variant_II", "variant_I_zero", "variant_II_zero")


def shown_specs() -> "dict[str, set[str]]":
    """Every spec the pages show (trailing punctuation dropped), with the pages that show it."""
    found: "dict[str, set[str]]" = {}
    for page in PAGES:
        for match in SPEC.finditer(page.read_text(encoding="utf-8")):
            found.setdefault(match.group(0).rstrip(".:"), set()).add(page.name)
    return found


def buildable(spec: str) -> "list[str]":
    """The specs to build for a shown one: none for notation, prose and sb3; run files replaced by shipped ones."""
    kind, *args = spec.split(":")
    if any(mark in spec for mark in NOTATION) or kind == "sb3" or (kind in ("mcts", "policy") and not args):
        return []
    if kind in ("mcts", "policy") and args[0] not in SHIPPED and "<V>" not in args[0]:
        if pathlib.Path(args[0]).is_absolute() or not (REPO / args[0]).is_file():
            args[0] = "variant_I"  # a run's checkpoint, or a file outside: the options on a shipped network
    for i, arg in enumerate(args):
        key, _, value = arg.partition("=")
        if key == "eval" and value != "nnue" and not (REPO / value).is_file():
            args[i] = f"eval={nnue.packaged_path('I') if value.endswith('.npz') else weights_path('I')}"
    built = ":".join([kind, *args])
    return [built.replace("<V>", v) for v in ("I", "II")] if "<V>" in built else [built]


SHOWN = shown_specs()
BUILDS = {built: spec for spec in SHOWN for built in buildable(spec)}


def test_the_docs_show_the_specs_of_every_kind():
    # The extraction finds them (a changed regex or page layout would leave the test below nothing to build).
    for spec in (
        "alphabeta:4",
        "classical:eval=nnue",
        "classical:time=0.1",
        "mcts:variant_I:sims=64",
        "policy:variant_I",
    ):
        assert spec in BUILDS
    assert "mcts:variant_II:sims=64" in BUILDS  # from mcts:variant_<V>:sims=64 too
    assert buildable("mcts:runs/hour/I_cap/snapshots/ckpt_00000245.pt:sims=64") == ["mcts:variant_I:sims=64"]
    assert buildable("mcts:/etc/passwd") == ["mcts:variant_I"]
    assert buildable("mcts:PATH:sims=64") == [] and buildable("sb3:runs/x.zip") == [] and buildable("mcts") == []
    assert len(BUILDS) >= 25


@pytest.mark.parametrize("built", sorted(BUILDS))
def test_a_shown_spec_builds(built, monkeypatch):
    # Building parses the spec and loads the network; the first search that warms it up checks nothing here.
    monkeypatch.setattr(MCTSAgent, "warm_up", lambda self, state: None)
    shown = BUILDS[built]
    try:
        agent = make_agent(built)
    except (ValueError, FileNotFoundError) as problem:
        pytest.fail(f"{shown!r} (in {', '.join(sorted(SHOWN[shown]))}) does not build: {problem}")
    assert callable(agent)
