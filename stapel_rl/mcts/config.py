"""The search's settings, read by the generic loop (``search``) and by the algorithms' selection functions."""

from __future__ import annotations

import dataclasses

#: The algorithms ``search`` runs (``search.ALGORITHMS`` maps each to its selection functions).
ALGORITHM_NAMES = ("puct", "gumbel")


@dataclasses.dataclass
class SearchConfig:
    """The ``mcts`` group of the training config (through ``SelfPlayConfig``); agents build their own.

    Attributes:
    num_simulations: simulations (node expansions) per search.
    algorithm: "puct" (AlphaZero) or "gumbel" (Gumbel AlphaZero).
    c_puct: PUCT exploration constant.
    dirichlet_alpha: concentration of the root Dirichlet noise (PUCT).
    dirichlet_fraction: weight of that noise in the root prior; 0 disables it.
    temperature: move choice. PUCT: from visit counts N^(1/T), 0 plays the most
        visited. Gumbel: 0 drops the Gumbel noise (deterministic top-k by prior
        and value), any other value keeps it (self-play exploration).
    max_considered: Gumbel: actions sampled at the root (sequential halving over them).
    c_visit, c_scale: Gumbel: sigma(q) = (c_visit + max visits) * c_scale * q, where q is
        the completed Q rescaled by its range at the node (min to max over the legal children).
    min_span: Gumbel: the least range sigma rescales by. 1e-8 (mctx's) stretches any spread
        of Q to [0, 1], so that a child a hair above the others takes all the visits;
        2, the width of the value range [-1, 1], rescales by the values' bounds instead
        (differences count at their size); between, spreads narrower than it are not
        stretched beyond it.
    skip_forced: a new node holds the next decision point: the engine plays
        on through forced actions (``engine.play_forced``: the later leaps of
        the only capture path, an only move) without a node or an evaluator
        call for each. A capture chain then costs one simulation, not one per
        leap, and the tree sees further. Pair it with a self-play or agent
        loop that plays forced actions itself, so roots are decision points
        (a forced root still works: its one child is searched).
    forced_rounds: with ``skip_forced``, the forced actions a new node plays
        on through at most. The engine plays them for all games of a batch
        together, one batched step per round, so the batch's longest forced
        run sets the cost of every expansion; a game still on a forced action
        after this many keeps it as a node of its own (as without skipping).
        ``None``: no cap (one game, as an agent searches, has no batch to wait
        for); the training presets (``configs/mcts``) set 2.
    leaves_per_call: leaves of each game's tree evaluated together, in one
        evaluator call per step (``lanes``): K descents per step, each seeing
        the virtual loss of those before it, so that one searching game gives
        the network batches of K, not of 1. 1 is the plain search: one
        simulation per game per call.
    solver: mark proven results (``solver``): terminal nodes, and nodes with
        a winning child or whose children are all proven, hold their exact
        value; the descent takes a proven win and avoids proven losses, and
        the final choice plays a proven win.
    """

    num_simulations: int = 64
    algorithm: str = "puct"
    c_puct: float = 1.5
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    temperature: float = 1.0
    max_considered: int = 16
    c_visit: float = 50.0
    c_scale: float = 0.1
    min_span: float = 1e-8
    skip_forced: bool = True
    forced_rounds: "int | None" = None
    leaves_per_call: int = 1
    solver: bool = False

    def __post_init__(self):
        if self.algorithm not in ALGORITHM_NAMES:
            allowed = ", ".join(repr(a) for a in ALGORITHM_NAMES)
            raise ValueError(f"algorithm must be one of {allowed}, got {self.algorithm!r}")
        if self.num_simulations < 1:
            raise ValueError(f"num_simulations must be at least 1, got {self.num_simulations}")
        if self.leaves_per_call < 1:
            raise ValueError(f"leaves_per_call must be at least 1, got {self.leaves_per_call}")
        if self.max_considered < 1:
            raise ValueError(f"max_considered must be at least 1, got {self.max_considered}")
        # Positive and finite: a zero or negative constant silently turns the search into another algorithm
        # (c_puct 0: greedy on values; c_scale 0: Gumbel by prior alone), a NaN into a random one.
        for name in ("c_puct", "c_scale"):
            if not 0 < getattr(self, name) < float("inf"):
                raise ValueError(f"{name} must be positive and finite, got {getattr(self, name)}")
        if not 0 < self.min_span <= 2:
            raise ValueError(f"min_span must be in (0, 2] (the width of the value range), got {self.min_span}")
        if not 0 <= self.c_visit < float("inf"):
            raise ValueError(f"c_visit must be at least 0 and finite, got {self.c_visit}")
        if not 0 <= self.dirichlet_fraction <= 1:
            raise ValueError(f"dirichlet_fraction must be in [0, 1], got {self.dirichlet_fraction}")
        if not 0 < self.dirichlet_alpha < float("inf"):
            raise ValueError(f"dirichlet_alpha must be positive and finite, got {self.dirichlet_alpha}")
        if not 0 <= self.temperature < float("inf"):
            raise ValueError(f"temperature must be at least 0 and finite, got {self.temperature}")
