"""Colour-swapped pairs of games played in worker processes, one core each.

``stapel-match --jobs N``, ``stapel-sprt --jobs N`` and the minimax generation loop's games
(``stapel_rl.train.minimax``) play here. Agents travel as specs: a worker builds each spec's agent once
(``agent_of``) and keeps it for every pair it plays. A ``Pool`` of workers can be kept across matches
(an SPRT's batches, a generation's gate and panel) so that none pays for starting processes,
importing torch or loading networks twice.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import numpy as np
from tqdm import tqdm

from stapel_rl.env import get_variant
from stapel_rl.eval.agents import Agent, make_agent
from stapel_rl.eval.arena import MatchResult, paired_start, play_match

__all__ = [
    "DeferredInterrupt",
    "Played",
    "Pool",
    "agent_of",
    "deaf_to_ctrl_c",
    "in_order",
    "job_process",
    "merge",
    "one_core",
    "play_in_parallel",
    "play_pairs",
    "starting_deaf_children",
]

_AGENTS: "dict[str, Agent]" = {}
#: In a worker (``job_process``): where each pair goes as it finishes, tagged with its match.
_FINISHED: "multiprocessing.Queue | None" = None
_MATCHES = itertools.count()

#: A finished task: the indices of the openings it played (each twice) and its result.
Played = tuple[np.ndarray, MatchResult]
T = TypeVar("T")


def agent_of(spec: str) -> Agent:
    """One agent per spec and process: a worker plays many pairs and loads each network once."""
    if spec not in _AGENTS:
        _AGENTS[spec] = make_agent(spec)
    return _AGENTS[spec]


def one_core() -> None:
    """Every side searches on one core (the field's equal hardware; the classical engine is serial):
    on a shared machine torch's threads would stall batch-1 calls.

    The variables hold for libraries not yet loaded; torch, if some import has loaded it
    already, has read them and is told directly.
    """
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[name] = "1"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


@contextlib.contextmanager
def starting_deaf_children() -> Iterator[None]:
    """Processes started inside begin life with SIGINT blocked, until ``deaf_to_ctrl_c`` ignores it.

    Ctrl-C in a terminal reaches the whole process group, and a spawned child takes
    seconds to import torch before its own set-up can ignore SIGINT: a Ctrl-C in that
    window would end it with a ``KeyboardInterrupt`` traceback. A signal mask, unlike a
    handler, is inherited across fork and exec, and the parent loses nothing: a SIGINT
    arriving meanwhile waits until the block ends (CPython's resource tracker starts the same way).
    """
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def deaf_to_ctrl_c() -> None:
    """SIGINT ignored in this process (a worker: the process that started it stops it), and no longer
    blocked if it was started by ``starting_deaf_children`` (a Ctrl-C pending since is dropped)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def job_process(parent: int, finished: "multiprocessing.Queue | None" = None) -> None:
    """A worker's set-up: one core (``one_core``), the queue ``finished`` pairs go to, and an exit once
    the process that started it is gone.

    A match killed from outside (Ctrl-C, ``kill``) would otherwise leave its workers
    playing on, taking the cores from whatever runs next.
    """
    global _FINISHED
    one_core()
    # Ctrl-C in a terminal reaches the whole process group: the parent stops its workers (``Pool.close``).
    deaf_to_ctrl_c()
    if finished is not None:
        # A task's return value holds its pairs too: what the queue has not passed on at exit is not lost.
        finished.cancel_join_thread()
        _FINISHED = finished

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="stapel-job-watch", daemon=True).start()


class DeferredInterrupt:
    """While entered (in the main thread, where Python's own handler is in place), Ctrl-C only sets
    ``pressed``; ``check()`` raises the ``KeyboardInterrupt`` at a point of the caller's choosing.

    Waiting on the workers takes the executor's locks many times a second, and a
    ``KeyboardInterrupt`` raised by the signal handler can land between a lock's
    acquire and its ``with`` block (CPython bpo-29988): the lock stays held, and the
    executor's manager thread, which the interpreter joins at exit, waits for it
    forever. So the waiting loops take Ctrl-C only between polls.
    """

    def __init__(self) -> None:
        self.pressed = False
        self._installed = False

    def __enter__(self) -> "DeferredInterrupt":
        main = threading.current_thread() is threading.main_thread()
        if main and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._press)
            self._installed = True
        return self

    def _press(self, signum: int, frame: Any) -> None:
        self.pressed = True

    def check(self) -> None:
        if self.pressed:
            self.pressed = False
            raise KeyboardInterrupt

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._installed = False
        self.check()  # pressed after the last poll: the caller still hears of it


class Pool:
    """``jobs`` worker processes (``job_process``: one core each), fresh interpreters (spawned: no forked
    thread state), and the queue through which they report each pair as it ends. Use as a context manager."""

    def __init__(self, jobs: int) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        self.jobs = jobs
        context = multiprocessing.get_context("spawn")
        self.finished: "multiprocessing.Queue[tuple[int, Played]]" = context.Queue()
        self.executor = concurrent.futures.ProcessPoolExecutor(
            jobs, mp_context=context, initializer=job_process, initargs=(os.getpid(), self.finished)
        )

    def submit(self, fn: "Callable[..., T]", tasks: "Iterable[tuple]") -> "list[concurrent.futures.Future[T]]":
        """``fn(*task)`` of every task queued for the workers, their futures in the tasks' order."""
        with starting_deaf_children():  # a submit may start a worker
            return [self.executor.submit(fn, *task) for task in tasks]

    def map(self, fn: "Callable[..., T]", tasks: "Iterable[tuple]") -> "Iterator[T]":
        """``fn(*task)`` of every task in the workers; the results in the tasks' order."""
        with DeferredInterrupt():
            futures = self.submit(fn, tasks)
        return (self._result(future) for future in futures)

    @staticmethod
    def _result(future: "concurrent.futures.Future[T]") -> T:
        with DeferredInterrupt() as ctrl_c:
            while not concurrent.futures.wait([future], timeout=0.05).done:
                ctrl_c.check()
        return future.result()

    def close(self, stop: bool = False) -> None:
        """Wait for the tasks given, or with ``stop`` drop them and end the workers now (Ctrl-C, an error:
        a pair in play can take minutes)."""
        if stop:
            # The executor has no public way to end a running task (Python 3.14 adds terminate_workers).
            workers = list((getattr(self.executor, "_processes", None) or {}).values())
            self.executor.shutdown(wait=False, cancel_futures=True)
            for process in workers:
                process.terminate()
            for process in workers:
                process.join(timeout=5)
        else:
            self.executor.shutdown()
        self.finished.close()

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, kind: "type[BaseException] | None", *exc: Any) -> None:
        self.close(stop=kind is not None)


def merge(results: "list[MatchResult]") -> MatchResult:
    """One result of several, games in the order given."""
    return MatchResult(
        scores=np.concatenate([r.scores for r in results]),
        agent_colour=np.concatenate([r.agent_colour for r in results]),
        plies=np.concatenate([r.plies for r in results]),
        seconds=np.sum([r.seconds for r in results], axis=0),
        moves=np.sum([r.moves for r in results], axis=0),
    )


def play_pairs(
    a: str,
    b: str,
    variant: str,
    fens: "list[str]",
    pairs: "list[int]",
    seed: int,
    one_at_a_time: bool,
    on_pair: "Callable[[Played], None] | None" = None,
    match: int = 0,
    fresh: bool = False,
) -> "list[Played]":
    """Agent specs ``a`` against ``b``, each of ``fens`` (the match's openings ``pairs``) played twice with
    colours swapped; returns every pair, its White game's result first.

    ``on_pair`` sees each pair as its second game ends, before the others finish; in a worker without
    one, the pair goes to the pool's queue tagged ``match``. The agents are the process's (``agent_of``)
    or, ``fresh``, built for these pairs alone: nothing an agent keeps between games (a transposition
    table) comes from earlier matches, so node-limited games replay exactly.
    """
    report = on_pair
    if report is None and _FINISHED is not None:
        sent = _FINISHED
        report = lambda pair: sent.put((match, pair))  # noqa: E731
    start, colour = paired_start(get_variant(variant), fens)
    halves: "dict[int, MatchResult]" = {}
    played: "list[Played]" = []

    def ended(game: int, result: MatchResult) -> None:
        k = game % len(fens)  # game k and game k + n start from fens[k]
        if k not in halves:
            halves[k] = result
            return
        white, black = (result, halves.pop(k)) if game < len(fens) else (halves.pop(k), result)
        pair = (np.array([pairs[k]], dtype=np.int64), merge([white, black]))
        played.append(pair)
        if report is not None:
            report(pair)

    build = make_agent if fresh else agent_of
    play_match(
        build(a),
        build(b),
        variant,
        start.batch_size,
        np.random.default_rng(seed),
        start=start,
        agent_colour=colour,
        one_at_a_time=one_at_a_time,
        on_game_result=ended,
    )
    return played


def play_in_parallel(
    a: str,
    b: str,
    variant: str,
    fens: "list[str]",
    seed: int,
    one_at_a_time: bool,
    jobs: int,
    progress: bool = False,
    done: "list[Played] | None" = None,
    on_played: "Callable[[np.ndarray, MatchResult], None] | None" = None,
    pool: "Pool | None" = None,
    fresh: bool = False,
) -> "tuple[MatchResult, np.ndarray]":
    """``play_pairs`` over ``jobs`` processes (those of ``pool`` if given, else started for this match);
    returns the merged result, games in the openings' order, and each game's pair index.

    With one game at a time (a clock on either side, or ``--time``) each pair is its own task;
    batched matches split the pairs into one chunk per job. ``done`` holds pairs already played (a
    resumed match): they are merged in, not played again. ``on_played`` sees each pair as its second
    game ends, in a chunk too (a worker sends it over the pool's queue), and a bar shows the running
    score, the rate and the time left. A task's seed is ``seed`` plus its first pair's index, so with one
    pair a task a resumed match plays each pair as an uninterrupted one would.
    """
    finished: "list[Played]" = list(done or [])
    have = {int(i) for pairs, _ in finished for i in pairs}
    todo = np.array([i for i in range(len(fens)) if i not in have], dtype=np.int64)
    jobs = pool.jobs if pool is not None else max(1, min(jobs, todo.size))
    if one_at_a_time:
        chunks = [todo[i : i + 1] for i in range(todo.size)]
    else:
        chunks = [c for c in np.array_split(todo, min(jobs, max(todo.size, 1))) if c.size]
    bar = tqdm(
        total=len(fens),
        initial=len(have),
        unit="pair",
        desc=f"{a} vs {b}",
        disable=not progress or todo.size <= 1,
        dynamic_ncols=True,
    )

    def advance(played: Played) -> None:
        pairs, result = played
        if int(pairs[0]) in have:  # sent by its worker, then returned with its task
            return
        have.update(int(i) for i in pairs)
        finished.append(played)
        if on_played is not None:
            on_played(pairs, result)
        score = np.concatenate([r.scores for _, r in finished])
        bar.set_postfix(score=f"{100 * score.mean():.1f}%", games=score.size, refresh=False)
        bar.update(pairs.size)

    match = next(_MATCHES)

    def task(c: np.ndarray) -> "tuple[str, str, str, list[str], list[int], int, bool]":
        return (a, b, variant, [fens[i] for i in c], c.tolist(), seed + int(c[0]), one_at_a_time)

    if pool is None and (jobs == 1 or len(chunks) <= 1):
        for c in chunks:
            play_pairs(*task(c), on_pair=advance, fresh=fresh)
    else:
        with Pool(jobs) if pool is None else contextlib.nullcontext(pool) as workers:
            _play_in(workers, [(*task(c), None, match, fresh) for c in chunks], match, advance)
    bar.close()
    return in_order(finished)


def in_order(finished: "list[Played]") -> "tuple[MatchResult, np.ndarray]":
    """The merged result of played pairs, games in the openings' order, and each game's pair index."""
    finished = sorted(finished, key=lambda played: int(played[0][0]))
    pair = np.concatenate([np.tile(c, 2) for c, _ in finished])
    return merge([r for _, r in finished]), pair


def _play_in(pool: Pool, tasks: "list[tuple]", match: int, advance: "Callable[[Played], None]") -> None:
    """The tasks in ``pool``'s workers; ``advance`` sees each pair once, as soon as either its worker's
    message (tagged with this ``match``: a pool's queue outlives matches) or its task's return brings it."""

    def receive(wait: float) -> None:
        """Every message queued, the first awaited up to ``wait`` seconds (a pair is recorded as it ends)."""
        while True:
            try:
                tag, played = pool.finished.get(timeout=wait) if wait else pool.finished.get_nowait()
            except queue.Empty:
                return
            wait = 0.0
            if tag == match:
                advance(played)

    with DeferredInterrupt() as ctrl_c:
        pending = set(pool.submit(play_pairs, tasks))
        while pending:
            ctrl_c.check()
            receive(0.05)
            ended = {future for future in pending if future.done()}
            pending -= ended
            receive(0.0)  # a task's pairs reach the queue before it returns
            for future in ended:
                for played in future.result():
                    advance(played)
