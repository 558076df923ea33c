"""The Python side of the search: iterative deepening, limits, per-iteration info, stop."""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np

from stapel_rl.classical import search as core
from stapel_rl.classical.board import board_key
from stapel_rl.classical.evaluation import load_weights
from stapel_rl.classical.movegen import MAX_MOVES, generate
from stapel_rl.classical.nnue import Net
from stapel_rl.classical.position import Position, row_path, row_text
from stapel_rl.env import engine
from stapel_rl.env.variants import Variant, get_variant

MAX_DEPTH = 96


@dataclasses.dataclass
class SearchInfo:
    """One completed iteration (or the partial last one, ``complete=False``)."""

    depth: int
    nodes: int
    seconds: float
    score: int
    pv: "list[str]"
    seldepth: int = 0
    complete: bool = True

    @property
    def nps(self) -> float:
        return self.nodes / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        """``info depth .. nodes .. nps .. score .. pv ..`` as an engine protocol prints it."""
        return (
            f"info depth {self.depth} seldepth {self.seldepth} nodes {self.nodes} nps {int(self.nps)} "
            f"time {int(1000 * self.seconds)} score {self.score} pv {' '.join(self.pv)}"
        )


@dataclasses.dataclass
class SearchResult:
    """The move chosen: its path (square indices), text, score and the iterations run."""

    path: "list[int]"
    move: str
    score: int
    depth: int
    nodes: int
    seconds: float
    infos: "list[SearchInfo]"


class Searcher:
    """A compiled alpha-beta searcher for one variant, holding its tables between searches.

    ``stop()`` (from any thread) ends a running search at once with the best move so far.
    """

    def __init__(
        self,
        variant: "Variant | str" = "I",
        weights: "np.ndarray | None" = None,
        tt_bits: int = 20,
        net: "Net | None" = None,
    ):
        """``weights``: the hand-written evaluation's (default: those ``net`` corrects, else the variant's
        packaged file); ``net``: a learned correction of them (``nnue``)."""
        self.variant = get_variant(variant)
        if weights is None:
            weights = net.weights if net is not None else load_weights(self.variant.name)
        self.weights = np.asarray(weights, np.int64)
        self.net = net
        self.tables = core.new_tables(self.weights, tt_bits, net)
        self._root_best = 0
        self._searches = 0  # the table's age: entries of earlier searches give way first

    def stop(self) -> None:
        self.tables.stop[0] = 1

    def clear(self) -> None:
        """Forget the transposition table, killers and history (a new game)."""
        for name in ("tt", "killers", "history"):
            getattr(self.tables, name).fill(0)

    def iterate(
        self,
        pos: Position,
        time_limit: "float | None" = None,
        depth: "int | None" = None,
        nodes: "int | None" = None,
        deadline: "float | None" = None,
    ) -> Iterator[SearchInfo]:
        """Iterations of the search of ``pos``, deepest last; the limit hit first ends it.

        ``deadline`` (``time.perf_counter`` seconds) overrides ``time_limit``.
        The final item has ``complete=False`` when an iteration was cut short
        but had found a move (its ``pv[0]``) better than the last complete one.
        """
        t = self.tables
        start = time.perf_counter()
        if deadline is None and time_limit is not None:
            deadline = start + time_limit
        moves = t.moves[0]
        n, _ = generate(pos.h, pos.c, pos.side, pos.capturing, pos.last_leapt, moves, t.gscratch)
        if n == 0:
            raise ValueError("the side to move has no legal move: the game is over")
        n = min(n, MAX_MOVES)
        h, c = pos.h.copy(), pos.c.copy()
        key = np.uint64(board_key(h, c, pos.side))
        if pos.capturing >= 0:  # a mid-capture root is another node than the same board at a turn's start
            with np.errstate(over="ignore"):  # the product wraps modulo 2**64, as a hash should
                key ^= np.uint64(0xD6E8FEB86659FD93) * np.uint64(pos.capturing + 1)
        np.floor_divide(t.history, 8, out=t.history)
        t.killers.fill(0)
        stats = t.stats
        stats[:] = 0
        self._searches += 1
        stats[core.AGE] = self._searches
        stats[core.MAX_NODES] = nodes if nodes is not None else np.iinfo(np.int64).max
        stats[core.ROOT_PLY] = pos.ply
        stats[core.PLY_CAP] = self.variant.ply_cap
        stats[core.POINTS_DECIDE] = int(self.variant.points_decide)
        t.stop[0] = 0
        timer = None
        if deadline is not None:
            timer = threading.Timer(max(deadline - time.perf_counter(), 0.0), self.stop)
            timer.daemon = True
            timer.start()
        root_index = np.arange(n, dtype=np.int64)
        scores = np.zeros(n, dtype=np.int64)
        pv = np.zeros((MAX_DEPTH, 22), np.int8)
        try:
            for d in range(1, min(depth or MAX_DEPTH, MAX_DEPTH) + 1):
                score, best_i = core.search_root(h, c, pos.side, key, d, n, root_index, scores, t)
                aborted = stats[core.ABORT] != 0
                if aborted and (best_i < 0 or (best_i == 0 and d > 1)):
                    return  # nothing better than the last iteration's move
                best = root_index[best_i]
                self._root_best = int(best)
                root_index[[0, best_i]] = root_index[[best_i, 0]]
                length = core.principal_variation(h, c, pos.side, key, moves[best], pv[:d], t)
                now = time.perf_counter()
                yield SearchInfo(
                    d,
                    int(stats[core.NODES]),
                    now - start,
                    int(score),
                    [row_text(pv[i]) for i in range(length)],
                    int(stats[core.SELDEPTH]),
                    complete=not aborted,
                )
                if aborted or n == 1 or abs(score) > core.MATE_BOUND and core.WIN - abs(score) <= d:
                    return
                # Past half the budget the next iteration (a few times all before it) rarely finishes;
                # before that, a cut-short iteration still plays a better move it found (above).
                if deadline is not None and now + (now - start) > deadline:
                    return
        finally:
            if timer is not None:
                timer.cancel()

    def search(
        self,
        pos: Position,
        time_limit: "float | None" = None,
        depth: "int | None" = None,
        nodes: "int | None" = None,
        deadline: "float | None" = None,
        on_info: "Callable[[SearchInfo], None] | None" = None,
    ) -> SearchResult:
        """The best move of ``pos`` within the limits (no limit at all: depth 1)."""
        if time_limit is None and depth is None and nodes is None and deadline is None:
            depth = 1
        start = time.perf_counter()
        infos = []
        for info in self.iterate(pos, time_limit, depth, nodes, deadline):
            infos.append(info)
            if on_info is not None:
                on_info(info)
        seconds = time.perf_counter() - start
        if infos:
            best = self.tables.moves[0, self._root_best]
            last = infos[-1]
            return SearchResult(
                row_path(best),
                row_text(best),
                last.score,
                last.depth,
                int(self.tables.stats[core.NODES]),
                seconds,
                infos,
            )
        # Stopped before depth 1 finished: any legal move (the generator's first).
        first = self.tables.moves[0, 0]
        return SearchResult(row_path(first), row_text(first), 0, 0, int(self.tables.stats[core.NODES]), seconds, infos)


@functools.cache
def load_compiled() -> None:
    """Load the compiled search into this process (numba compiles it first where its cache is empty, as
    after installing): once, by a depth-1 search with a small table. Whoever keeps time calls this
    before the clock starts; a search that did it on its clock would be cut short."""
    Searcher("I", tt_bits=8).search(Position.from_state(engine.init("I", 1), 0), depth=1)
