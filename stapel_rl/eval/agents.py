"""Agents: anything that picks an action for every game of a batch.

An agent is called at every decision point, including between the leaps of a
capture, and returns one board action id per game (ignored for finished
games). Agents are named by short specs on the command line:

    random                      uniformly random legal action
    greedy                      the full move that leaves it controlling the most
                                men (Variant II: most points first), ties random
    alphabeta[:DEPTH][:q=N]     negamax with alpha-beta over full moves (default depth 2)
    classical[:time=SECONDS][:depth=N][:nodes=N][:eval=PATH]
                                compiled (numba) alpha-beta, iterative deepening, weights
                                from PATH (default: the fitted ones shipped); time=1.0 s
                                per move when no limit is given; the first limit hit stops it
    mcts:PATH[:sims=64][:time=SECONDS][:algorithm=puct|gumbel][:forced=skip|search]
                                checkpoint + search, temperature 0; with time=, each
                                decision of each game searches that long (sims= then
                                limits it); more options in docs/evaluation.md, among
                                them ab_depth=N: an MCTS-minimax hybrid (eval.hybrid)
    policy:PATH                 the checkpoint's raw policy, no search
    sb3:PATH[:deterministic=true|false]
                                a saved sb3-contrib MaskablePPO policy (the extra "sb3")

PATH may be ``variant_I`` or ``variant_II``, the strongest trained agents shipped
in the package, or ``variant_I_zero``/``variant_II_zero``, those learned by
self-play from zero (``stapel_rl.pretrained``); a file of that name in the working
directory is an explicit path and wins.

``time=`` is one budget for every decision of every game, whoever calls the
agent: an agent with a clock says so by its ``seconds_per_decision``
(``clock``), and the matches call it with one game at a time
(``stapel_rl.eval.arena.play_match``). An agent made for one variant (a
network's, a weights file's) says which by its ``variant``; ``check_variant``
refuses it a game of the other.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Protocol

import numpy as np

from stapel_rl.env import expand_full_moves
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.env.state import State, take
from stapel_rl.env.variants import Variant, get_variant


class Agent(Protocol):
    name: str

    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray: ...


def clock(agent: Agent) -> "float | None":
    """The seconds ``agent`` searches each decision of each game (its ``time=``), None for an agent without a clock."""
    return getattr(agent, "seconds_per_decision", None)


def check_variant(agent: Agent, variant: "Variant | str") -> None:
    """Raise ``ValueError`` if ``agent`` was made for another variant than ``variant`` (a network trained on the
    other game, weights fitted for it); agents that play either (``variant`` absent or None) pass."""
    made_for = getattr(agent, "variant", None)
    playing = get_variant(variant).name
    if made_for is not None and made_for != playing:
        raise ValueError(
            f"agent {agent.name!r} is made for Variant {made_for} and cannot play Variant {playing}: "
            f"use an agent of Variant {playing}, or play Variant {made_for}"
        )


@dataclasses.dataclass
class RandomAgent:
    name: str = "random"

    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray:
        return random_legal_actions(state.legal_action_mask, rng)


def controlled_men(state: State, player: np.ndarray) -> np.ndarray:
    """``int [B]`` men in the stacks ``player`` controls (top man of that colour)."""
    top_black = (state.colours & np.uint64(1)).astype(bool)
    mine = (state.height > 0) & (top_black == (np.asarray(player)[:, None] == 1))
    return np.where(mine, state.height, 0).sum(axis=1)


@dataclasses.dataclass
class GreedyAgent:
    """One-ply greedy: maximise men controlled after the full move (Variant II: points first)."""

    name: str = "greedy"

    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray:
        actions = np.zeros(state.batch_size, np.int64)
        live = np.flatnonzero(~state.done)
        if not live.size:
            return actions
        moves = expand_full_moves(take(state, live))
        mover = state.current_player[live][moves.parent]
        score = controlled_men(moves.state, mover).astype(np.float64)
        if state.variant.points_decide:
            score += 100.0 * moves.state.points[np.arange(moves.parent.size), mover]
        score += rng.random(score.shape) * 0.5  # random among ties (scores are integers)
        best = np.full(live.size, -np.inf)
        np.maximum.at(best, moves.parent, score)
        chosen = np.flatnonzero(score == best[moves.parent])
        actions[live[moves.parent[chosen]]] = moves.actions[chosen, 0]
        return actions


#: Agent kinds: a factory, or where one lives (``"module:function"``), taking the spec's ``:``-separated
#: arguments. Factories named by place are imported on first use, so that naming ``random`` costs
#: neither torch nor numba (the entry-point pattern of Gymnasium's registry).
def _without_options(make: "Callable[[], Agent]", kind: str) -> "Callable[[list[str]], Agent]":
    """The factory of a spec that takes no options: ``random:3`` is a typing mistake, not ``random``."""

    def factory(args: "list[str]") -> Agent:
        if args:
            raise ValueError(f"agent spec {kind!r} takes no options, got {':'.join([kind, *args])!r}")
        return make()

    return factory


AGENT_KINDS: "dict[str, Callable[[list[str]], Agent] | str]" = {
    "random": _without_options(RandomAgent, "random"),
    "greedy": _without_options(GreedyAgent, "greedy"),
    "alphabeta": "stapel_rl.eval.alphabeta:from_spec_args",
    "classical": "stapel_rl.eval.classical_agent:from_spec_args",
    "mcts": "stapel_rl.eval.network_agents:mcts_from_spec_args",
    "policy": "stapel_rl.eval.network_agents:policy_from_spec_args",
    "sb3": "stapel_rl.eval.sb3_agent:from_spec_args",
}


def register_agent(kind: str, factory: "Callable[[list[str]], Agent] | str") -> None:
    """Make ``kind[:args...]`` specs build agents with ``factory(args)`` (a callable or ``"module:function"``)."""
    AGENT_KINDS[kind] = factory


def make_agent(spec: str) -> Agent:
    """An agent from a spec such as ``random``, ``greedy``, ``mcts:run/ckpt.pt:sims=64``."""
    kind, *args = spec.split(":")
    if kind not in AGENT_KINDS:
        raise ValueError(f"unknown agent {spec!r}: expected one of {sorted(AGENT_KINDS)}")
    factory = AGENT_KINDS[kind]
    if isinstance(factory, str):
        module, _, name = factory.partition(":")
        try:
            factory = AGENT_KINDS[kind] = getattr(importlib.import_module(module), name)
        except ModuleNotFoundError as error:  # an optional extra (sb3: stable-baselines3) is not installed
            raise ValueError(f"agent {kind!r} needs the package {error.name!r}, which is not installed") from None
    agent = factory(args)
    agent.name = spec
    return agent
