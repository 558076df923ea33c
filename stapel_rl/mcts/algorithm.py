"""What the search asks of an algorithm (``Algorithm``): PUCT's and Gumbel's selection functions."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from stapel_rl.mcts.tree import Tree


class Algorithm(Protocol):
    """What ``search`` asks of an algorithm: its selection functions and its answer (mctx passes the
    same as ``root_action_selection_fn`` / ``interior_action_selection_fn``). Made per search by
    ``ALGORITHMS[config.algorithm](tree, config, rng, base_visits)`` once the roots are evaluated.
    """

    def node_actions(self) -> np.ndarray:
        """``int [B, N]`` each node's next action where it is known (-1: ask ``select_interior``, -2: over)."""
        ...

    def select_roots(self, tree: Tree, simulation: "int | np.ndarray", action: np.ndarray) -> None:
        """Fill ``action`` ``[B]`` (the roots' forced actions, -1 where there is a choice) for this simulation
        (its number, or ``int [B]`` each game's: ``lanes`` counts them per game)."""
        ...

    def select_interior(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """The action ``[G]`` at ``nodes`` of ``games``, nodes below the roots with a choice."""
        ...

    def expanded(
        self,
        tree: Tree,
        games: np.ndarray,
        nodes: np.ndarray,
        forced: np.ndarray,
        live: np.ndarray,
        prior: "np.ndarray | None",
    ) -> None:
        """New nodes were evaluated (``forced``: their forced actions; ``live``: rows not over)."""
        ...

    def simulated(self, tree: Tree, first: int, games: np.ndarray, nodes: np.ndarray) -> None:
        """A simulation backed up along the path nodes ``games``/``nodes`` (flat; the first ``first`` are roots)."""
        ...

    def placed(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> None:
        """``lanes`` placed new nodes, not yet evaluated: ``node_actions`` must end a path there (-2) until
        ``expanded``, and their parents' choices see them."""
        ...

    def resync(self, tree: Tree, nodes: np.ndarray) -> None:
        """``lanes`` backed up a step's simulations through distinct flat ``nodes`` (roots included), after
        changing and restoring their statistics: what the algorithm keeps must follow the tree again."""
        ...

    def choose(self, tree: Tree, rng: np.random.Generator) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
        """The search's answer: ``(action [B], policy [B, A], search_value [B])``."""
        ...
