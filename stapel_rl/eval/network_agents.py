"""Agents backed by a network: ``mcts`` (search, temperature 0) and ``policy`` (raw policy).

Specs: ``mcts:PATH[:sims=64][:algorithm=puct|gumbel]`` and ``policy:PATH``.
Importing this module registers both with ``make_agent``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stapel_rl.env.state import State
from stapel_rl.eval.agents import register_agent
from stapel_rl.mcts import SearchConfig, search
from stapel_rl.mcts.search import masked_softmax
from stapel_rl.models.evaluator import Evaluator


@dataclasses.dataclass
class MCTSAgent:
    """Plays the search's choice with no noise: the most visited (PUCT) or Gumbel's pick."""

    evaluator: Evaluator
    config: SearchConfig
    name: str = "mcts"

    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray:
        config = dataclasses.replace(self.config, dirichlet_fraction=0.0, temperature=0.0)
        return search(state, self.evaluator, config, rng).action


@dataclasses.dataclass
class PolicyAgent:
    """Plays the legal action the network's policy likes best, without search."""

    evaluator: Evaluator
    name: str = "policy"

    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray:
        prior = masked_softmax(self.evaluator(state).logits, state.legal_action_mask)
        return prior.argmax(axis=1)


def load_evaluator(path: str, device: str = "cpu") -> "tuple[Evaluator, dict]":
    """A ``NetworkEvaluator`` for the network saved in checkpoint ``path``, and the checkpoint."""
    from stapel_rl.models import NetworkConfig, NetworkEvaluator, PolicyValueNet
    from stapel_rl.train.checkpoint import load

    checkpoint = load(path)
    net = PolicyValueNet(NetworkConfig(**checkpoint["model_config"]))
    net.load_state_dict(checkpoint["model"])
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


def _mcts(args: "list[str]") -> MCTSAgent:
    path, options = _options(args, "mcts")
    unknown = set(options) - {"sims", "algorithm"}
    if unknown:
        raise ValueError(f"unknown mcts agent option(s) {sorted(unknown)}: use sims=N, algorithm=puct|gumbel")
    evaluator, checkpoint = load_evaluator(path)
    search_defaults = checkpoint.get("config", {}).get("mcts", {})
    config = SearchConfig(
        num_simulations=int(options.get("sims", 64)),
        algorithm=options.get("algorithm", search_defaults.get("algorithm", "puct")),
        c_puct=float(search_defaults.get("c_puct", 1.5)),
    )
    return MCTSAgent(evaluator, config)


def _policy(args: "list[str]") -> PolicyAgent:
    path, options = _options(args, "policy")
    if options:
        raise ValueError(f"policy agents take no options, got {sorted(options)}")
    return PolicyAgent(load_evaluator(path)[0])


register_agent("mcts", _mcts)
register_agent("policy", _policy)
