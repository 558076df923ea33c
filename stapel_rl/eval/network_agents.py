"""Agents backed by a network: ``mcts`` (search, temperature 0) and ``policy`` (raw policy).

Specs: ``mcts:PATH[:sims=64][:time=SECONDS][:algorithm=puct|gumbel][:forced=skip|search][:batch=K]
[:solver=on|off][:reuse=on|off][:plan=probe|rate][:c_puct=X][:c_visit=X][:c_scale=X][:min_span=X][:considered=N]`` and
``policy:PATH``, where PATH may also be ``variant_I``, ``variant_I_zero``, ... the agents shipped with the
package (``stapel_rl.bundled``); ``make_agent`` builds them with ``mcts_from_spec_args`` and
``policy_from_spec_args``. The search constants default to those the network was trained with, except those of
``PLAY_CONSTANTS``, which play with their own.
An agent plays the variant its checkpoint was trained on; a game of the other raises ``ValueError``
(``stapel_rl.eval.agents.check_variant``).
"""

from __future__ import annotations

import dataclasses
import time
from typing import TypeVar

import numpy as np

from stapel_rl.env import engine
from stapel_rl.env.state import State, take
from stapel_rl.eval.agents import check_variant
from stapel_rl.eval.hybrid import EVALS, BlendedEvaluator
from stapel_rl.mcts import SearchConfig, SearchOutput, Tree, search
from stapel_rl.mcts.qtransforms import masked_softmax
from stapel_rl.mcts.reuse import TreeCache
from stapel_rl.mcts.search import solved
from stapel_rl.mcts.tree import grow
from stapel_rl.models.checkpoint import load_network
from stapel_rl.models.evaluator import Evaluator
from stapel_rl.models.inference import NetworkEvaluator

#: ``num_simulations`` of a search by time with no simulation limit (int32's largest: never reached).
UNLIMITED = 2**31 - 1
#: Simulations of the first chunk of a search by time, which measures the rate for the rest.
FIRST_CHUNK = 8
#: With ``plan="rate"``: the share of the simulations the last searches' rate promises that a timed search
#: plans for at once (a position can be slower than the last ones; the rest of the time is searched on).
RATE_SHARE = 0.9
#: How a timed search spends its time (``MCTSAgent.plan``).
PLANS = ("probe", "rate")
#: The options of an MCTS-minimax hybrid (``stapel_rl.eval.hybrid``).
HYBRID = {"ab_depth", "ab_weight", "ab_eval"}
#: Leaves per evaluator call of the agents the specs make (``SearchConfig.leaves_per_call``; ``batch=K``).
AGENT_LEAVES_PER_CALL = 16

_Number = TypeVar("_Number", int, float)


@dataclasses.dataclass
class MCTSAgent:
    """Plays the search's choice with no noise: the most visited (PUCT) or Gumbel's pick.

    With ``seconds`` set, every decision of every game is searched until that
    much time has passed (at least one simulation, at most
    ``config.num_simulations``): the games of a call with several are searched
    one after another, each on its own clock, so ``seconds`` means the same
    whoever calls the agent (``seconds_per_decision``). A search runs in chunks
    on one growing tree (``plan``), the next ones filling the time left, and
    no simulation starts after the deadline. PUCT's choice is then that of
    one long search; Gumbel's comes from the last chunk's sequential halving,
    which starts from the earlier chunks' visits as after subtree reuse. ``simulations`` holds the largest per-game
    count of the last call (new simulations, not those of a reused subtree).

    With ``reuse`` the agent keeps the subtree of each move it played
    (``TreeCache``) and continues from it where a later call's position is
    one of its nodes, whichever game that call is for; elsewhere it starts
    afresh. With ``config.solver`` a search by time stops once every root is
    proven.

    A process's first network calls pay one-time costs (the runtime's set-up,
    its first kernels); an agent by time pays them in a short search
    (``warm_up``) before its first move's clock starts, or that move would
    search a tenth as much as the next.

    ``plan`` says how a timed search spends its time: "probe" (the default)
    searches ``FIRST_CHUNK`` simulations first to measure the rate, then the
    rest; "rate" plans one search for the simulations the time buys at
    ``rate``, the simulations a second of the agent's last full-time searches
    (a mean weighting the newest by a half), and searches on if time is left
    (its first move probes); docs/results.md has the match between the two.

    ``variant`` is the variant the network was trained on (None: not known);
    a call with a game of the other raises ``ValueError``.
    """

    evaluator: Evaluator
    config: SearchConfig
    name: str = "mcts"
    seconds: "float | None" = None
    simulations: int = 0
    reuse: bool = False
    cache: TreeCache = dataclasses.field(default_factory=TreeCache, repr=False)
    warm: bool = dataclasses.field(default=False, repr=False)
    variant: "str | None" = None
    plan: str = "probe"
    rate: float = dataclasses.field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        if self.plan not in PLANS:
            raise ValueError(f"plan must be one of {', '.join(PLANS)}, got {self.plan!r}")

    @property
    def seconds_per_decision(self) -> "float | None":
        """The agent's clock (``stapel_rl.eval.agents.clock``): ``seconds``."""
        return self.seconds

    def warm_up(self, state: State) -> None:
        """Search the first game of ``state`` briefly (``FIRST_CHUNK`` simulations), once."""
        if not self.warm:
            config = dataclasses.replace(
                self.config, num_simulations=FIRST_CHUNK, dirichlet_fraction=0.0, temperature=0.0
            )
            search(take(state, slice(0, 1)), self.evaluator, config, np.random.default_rng(0))
            self.warm = True

    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray:
        if self.variant is not None:
            check_variant(self, state.variant)
        config = dataclasses.replace(self.config, dirichlet_fraction=0.0, temperature=0.0)
        # A game with one legal action (a forced leap) gets it without a search: the search could choose nothing else.
        legal = state.legal_action_mask
        actions = legal.argmax(axis=1).astype(np.int64)
        choice = np.flatnonzero(~state.done & (legal.sum(axis=1) > 1))
        if not choice.size:
            self.simulations = 0
            return actions
        some = take(state, choice) if choice.size < state.batch_size else state
        if self.seconds is None:
            chosen, self.simulations = self._choose(some, config, rng)
        else:
            self.warm_up(some)
            # A budget per decision of each game: one deadline for a batch would share it among the games.
            each = [self._choose(take(some, slice(g, g + 1)), config, rng) for g in range(some.batch_size)]
            chosen = np.concatenate([a for a, _ in each])
            self.simulations = max(n for _, n in each)
        actions[choice] = chosen
        return actions

    def _choose(self, state: State, config: SearchConfig, rng: np.random.Generator) -> "tuple[np.ndarray, int]":
        """The search's actions for the games of ``state`` and the most simulations any of them got."""
        room = config.num_simulations + 1 if self.seconds is None else 1  # a search by time grows its tree
        tree = self.cache.take(state, room)[0] if self.reuse else None
        start = np.maximum(tree.node_visits[:, 0], 1) if tree is not None else np.ones(state.batch_size, np.int32)
        if self.seconds is None:
            out = search(state, self.evaluator, config, rng, tree=tree)
        else:
            out = self._search_for(self.seconds, state, config, rng, tree, start)
        if self.reuse:
            self.cache.store(out.tree, out.action)
        # The root's first visit is its evaluation.
        return out.action, int((out.tree.node_visits[:, 0] - start).max())

    def _search_for(
        self,
        seconds: float,
        state: State,
        config: SearchConfig,
        rng: np.random.Generator,
        tree: "Tree | None",
        start_visits: np.ndarray,
    ) -> SearchOutput:
        start = time.perf_counter()
        deadline = start + seconds
        limit = config.num_simulations
        chunk = max(FIRST_CHUNK, config.leaves_per_call)
        if self.plan == "rate" and self.rate:
            # One search of the simulations the time buys at the last searches' rate: Gumbel's sequential
            # halving is planned for the whole budget instead of for a probe and then the rest.
            chunk = max(chunk, int(RATE_SHARE * self.rate * seconds))
        chunk = min(chunk, limit)
        if tree is not None:
            tree = grow(tree, int(tree.num_nodes.max()) + chunk + 1)
        while True:
            out = search(
                state,
                self.evaluator,
                dataclasses.replace(config, num_simulations=chunk),
                rng,
                tree=tree,
                deadline=deadline,
            )
            done = int((out.tree.node_visits[:, 0] - start_visits).max())
            now = time.perf_counter()
            rate = done / max(now - start, 1e-9)
            chunk = min(limit - done, int((deadline - now) * rate))
            if chunk < 1 or config.solver and solved(out.tree):
                if now >= deadline - 0.1 * seconds:  # a search cut short by its solver tells nothing of the rate
                    self.rate = rate if not self.rate else 0.5 * (self.rate + rate)
                return out
            # Each simulation adds at most one node per game; doubling keeps the copies cheap.
            needed = int(out.tree.num_nodes.max()) + chunk
            tree = grow(out.tree, max(needed, min(2 * out.tree.capacity, limit + 1)))


@dataclasses.dataclass
class PolicyAgent:
    """Plays the legal action the network's policy likes best, without search; ``variant`` as ``MCTSAgent``'s."""

    evaluator: Evaluator
    name: str = "policy"
    variant: "str | None" = None

    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray:
        if self.variant is not None:
            check_variant(self, state.variant)
        prior = masked_softmax(self.evaluator(state).logits, state.legal_action_mask)
        return prior.argmax(axis=1)


def load_evaluator(path: str, device: str = "cpu") -> "tuple[Evaluator, dict]":
    """A ``NetworkEvaluator`` for the network saved in checkpoint ``path``, and the checkpoint."""
    net, checkpoint = load_network(path)
    return NetworkEvaluator(net, device=device), checkpoint


def _options(args: "list[str]", spec_kind: str) -> "tuple[str, dict[str, str]]":
    if not args or not args[0]:
        raise ValueError(f"agent spec '{spec_kind}' needs a checkpoint path: '{spec_kind}:PATH'")
    path, options = args[0], {}
    for item in args[1:]:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"agent option {item!r} should look like key=value")
        options[key] = value
    return path, options


def _parsed(options: "dict[str, str]", key: str, kind: "type[_Number]") -> "_Number":
    """Option ``key`` as a ``kind``; a ``ValueError`` naming it otherwise."""
    try:
        return kind(options[key])
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"mcts agent option {key}={options[key]!r} is not {what}") from None


def _number(options: "dict[str, str]", key: str, kind: "type[_Number]") -> "_Number | None":
    """Option ``key`` as a positive ``kind``, None if absent; a ``ValueError`` naming it otherwise."""
    if key not in options:
        return None
    value = _parsed(options, key, kind)
    if not 0 < value < float("inf"):
        raise ValueError(f"mcts agent option {key} must be positive and finite, got {options[key]!r}")
    return value


#: The search constants an mcts spec may set: option -> (``SearchConfig`` field, type).
CONSTANTS: "dict[str, tuple[str, type]]" = {
    "c_puct": ("c_puct", float),
    "c_visit": ("c_visit", float),
    "c_scale": ("c_scale", float),
    "min_span": ("min_span", float),
    "considered": ("max_considered", int),
}

#: Search constants the agents play with whatever their network was trained with (``SearchConfig`` field -> value),
#: unless the spec names another; the matches that chose them are in docs/results.md, "Search constants and time".
#: Training keeps ``mcts.min_span``: there it shapes the policy targets, and no ablation has said more.
PLAY_CONSTANTS: "dict[str, float]" = {"min_span": 0.5}


def _constants(options: "dict[str, str]") -> "dict[str, float | int]":
    """The search constants ``options`` set, by ``SearchConfig`` field (which checks their ranges)."""
    found: "dict[str, float | int]" = {}
    for option, (field, kind) in CONSTANTS.items():
        if option in options:
            found[field] = _parsed(options, option, kind)
    return found


def mcts_from_spec_args(args: "list[str]") -> MCTSAgent:
    path, options = _options(args, "mcts")
    unknown = sorted(
        set(options) - {"sims", "time", "algorithm", "forced", "batch", "solver", "reuse", "plan", *CONSTANTS, *HYBRID}
    )
    choices = {
        "forced": ("skip", "search"),
        "solver": ("on", "off"),
        "reuse": ("on", "off"),
        "plan": PLANS,
    }
    unknown += [options[key] for key, allowed in choices.items() if options.get(key, allowed[0]) not in allowed]
    if unknown:
        raise ValueError(
            f"unknown mcts agent option(s) {unknown}: use sims=N, time=SECONDS, "
            "algorithm=puct|gumbel, forced=skip|search, batch=K, solver=on|off, reuse=on|off, plan=probe|rate, "
            "c_puct=X, c_visit=X, c_scale=X, min_span=X, considered=N, ab_depth=N, ab_weight=X, ab_eval=hand|nnue|PATH"
        )
    sims, seconds = _number(options, "sims", int), _number(options, "time", float)
    batch = _number(options, "batch", int) or AGENT_LEAVES_PER_CALL
    constants = _constants(options)
    evaluator, checkpoint = load_evaluator(path)
    if set(options) & HYBRID:  # an MCTS-minimax hybrid (stapel_rl.eval.hybrid)
        if "ab_depth" not in options:
            raise ValueError("mcts agent spec: ab_weight= and ab_eval= go with ab_depth=N (the leaves' search depth)")
        # The weight's range, [0, 1], is the evaluator's to check.
        depth = _number(options, "ab_depth", int)
        weight = _parsed(options, "ab_weight", float) if "ab_weight" in options else None
        try:
            evaluator = BlendedEvaluator(
                evaluator, depth or 0, 0.5 if weight is None else weight, options.get("ab_eval", EVALS[0])
            )
        except ValueError as problem:
            raise ValueError(f"mcts agent spec: {problem}") from None
    search_defaults = checkpoint.get("config", {}).get("mcts", {})
    try:
        config = SearchConfig(
            # By time, sims (if given) is a limit: whichever comes first.
            num_simulations=sims or (SearchConfig.num_simulations if seconds is None else UNLIMITED),
            algorithm=options.get("algorithm", search_defaults.get("algorithm", SearchConfig.algorithm)),
            # skip: forced actions get no node of their own (SearchConfig.skip_forced); search: one node per leap.
            skip_forced=options.get("forced", "skip") == "skip",
            leaves_per_call=batch,
            solver=options.get("solver", "on") == "on",
            # The search constants the network was trained with or those of play, unless the spec names others.
            **{
                field: constants.get(
                    field, PLAY_CONSTANTS.get(field, kind(search_defaults.get(field, getattr(SearchConfig, field))))
                )
                for field, kind in CONSTANTS.values()
            },
        )
    except ValueError as problem:
        named = [option for option, (field, _) in CONSTANTS.items() if option != field and field in str(problem)]
        raise ValueError(f"mcts agent spec: {problem}" + "".join(f" (option {o}=)" for o in named)) from None
    variant = checkpoint.get("variant")
    reuse = options.get("reuse", "on") == "on"
    agent = MCTSAgent(
        evaluator, config, seconds=seconds, reuse=reuse, variant=variant, plan=options.get("plan", PLANS[0])
    )
    # Warmed when made, not on the first move, so that a match's time per move leaves the set-up out.
    agent.warm_up(engine.init(variant or "I", 1))
    return agent


def policy_from_spec_args(args: "list[str]") -> PolicyAgent:
    path, options = _options(args, "policy")
    if options:
        raise ValueError(f"policy agents take no options, got {sorted(options)}")
    evaluator, checkpoint = load_evaluator(path)
    return PolicyAgent(evaluator, variant=checkpoint.get("variant"))
