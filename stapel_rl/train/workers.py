"""Self-play in worker processes, so that a run keeps every core busy.

In one process a run leaves a core idle for much of the time: the search is
single-threaded numpy, and only the network's forward pass (and training)
runs on both cores. With ``train.selfplay_workers = N`` each of N processes
runs its own ``SelfPlay`` (one torch thread, its own games and random
stream), and the learner trains while they play: it asks for the next batch
of positions, with the newest weights, *before* its gradient steps, so the
positions of iteration k come from the weights of iteration k - 1 (a policy
lag of one iteration).

Messages are plain picklable values over a pipe per worker: weights as numpy
arrays, positions as ``Positions.arrays``. A worker that raises sends its
traceback back; one that dies is reported, not waited for forever.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
import traceback
from multiprocessing.connection import Connection

import numpy as np
import torch

from stapel_rl._malloc import tune_malloc
from stapel_rl.env import get_variant
from stapel_rl.eval.parallel import deaf_to_ctrl_c, starting_deaf_children
from stapel_rl.models import NetworkConfig, NetworkEvaluator, PolicyValueNet
from stapel_rl.train.replay import Positions
from stapel_rl.train.selfplay import GameRecord, SelfPlay, SelfPlayConfig


@dataclasses.dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs to build its self-play (picklable).

    Attributes:
        variant: variant name; ``ply_cap`` its ply cap.
        model_config: ``NetworkConfig`` fields of the network.
        precision: inference precision ("auto", "bf16", "fp32").
        selfplay: the self-play search settings; ``num_games`` the games it plays at once.
        seed: entropy of the worker's random stream (run seed, worker index, first iteration).
        device: where the worker runs its network ("cuda" when the run trains on a GPU).
    """

    variant: str
    ply_cap: int
    model_config: dict
    precision: str
    selfplay: SelfPlayConfig
    num_games: int
    seed: "tuple[int, ...]"
    device: str = "cpu"


@dataclasses.dataclass
class Batch:
    """What the workers returned for one request.

    Attributes:
        positions: the recorded positions of finished games, all workers.
        games: the finished games.
        network_seconds, seconds: time in the network and in ``play``, summed over workers.
        per_worker: each worker's positions and seconds of play.
    """

    positions: Positions
    games: "list[GameRecord]"
    network_seconds: float
    seconds: float
    per_worker: "list[tuple[int, float]]" = dataclasses.field(default_factory=list)  # (positions, seconds) each

    @staticmethod
    def join(answers: "list[tuple]") -> "Batch":
        """One batch from the workers' ``WorkerPlay.play`` answers."""
        parts = [Positions(arrays) for arrays, *_ in answers]
        return Batch(
            Positions.concatenate(parts),
            [g for _, games, *_ in answers for g in games],
            sum(a[2] for a in answers),
            sum(a[3] for a in answers),
            [(len(p), a[3]) for p, a in zip(parts, answers, strict=True)],
        )


class WorkerPlay:
    """One self-play worker's state: its network copy, evaluator and ``SelfPlay`` (processes and Ray actors)."""

    def __init__(self, spec: WorkerSpec, index: int, threads: int = 1) -> None:
        tune_malloc()  # a process of its own (worker or Ray actor): its allocator, tuned as the CLIs do
        torch.set_num_threads(threads)  # N workers and the learner share the machine
        self.net = PolicyValueNet(NetworkConfig(**spec.model_config))
        self.evaluator = NetworkEvaluator(self.net, device=spec.device, precision=spec.precision)
        variant = get_variant(spec.variant).with_ply_cap(spec.ply_cap)
        rng = np.random.default_rng(list(spec.seed))
        self.selfplay = SelfPlay(variant, self.evaluator, spec.selfplay, spec.num_games, rng)
        self.selfplay.actor = index

    def play(self, weights: "dict[str, np.ndarray]", version: int, count: int, simulations: int = 0) -> tuple:
        """Play ``count`` positions with ``weights`` (``simulations`` > 0: searches of that many).

        Returns ``(arrays, games, network seconds, seconds)``.
        """
        self.net.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
        self.selfplay.version = version
        self.evaluator.reset_stats()
        start = time.perf_counter()
        positions = self.selfplay.play(count, simulations)
        return (
            positions.arrays,
            self.selfplay.take_finished_games(),
            self.evaluator.seconds,
            time.perf_counter() - start,
        )


def _serve(connection: Connection, spec: WorkerSpec, index: int) -> None:
    """A worker's loop: ``(weights, version, n, simulations)`` -> play ``n`` positions -> send the batch back."""
    deaf_to_ctrl_c()  # Ctrl-C reaches the whole process group: the learner stops the workers
    try:
        worker = WorkerPlay(spec, index)
        while (request := connection.recv()) is not None:
            connection.send(("ok", *worker.play(*request)))
    except BaseException:  # report it: the learner raises it with the worker's traceback
        connection.send(("error", traceback.format_exc()))


def share(positions: int, workers: int) -> int:
    """Positions each of ``workers`` plays for a request of ``positions`` (at least one)."""
    return max(1, -(-positions // workers))


class SelfPlayWorkers:
    """N self-play processes: ``request`` positions (non-blocking), then ``collect`` them."""

    def __init__(self, specs: "list[WorkerSpec]") -> None:
        # spawn, not fork: a forked child inherits the parent's torch/OpenMP thread state.
        context = multiprocessing.get_context("spawn")
        self.connections, self.processes = [], []
        for index, spec in enumerate(specs):
            parent, child = context.Pipe()
            process = context.Process(
                target=_serve, args=(child, spec, index), name=f"stapel-selfplay-{index}", daemon=True
            )
            with starting_deaf_children():  # Ctrl-C while it imports torch would end it with a traceback
                process.start()
            child.close()
            self.connections.append(parent)
            self.processes.append(process)
        self.pending = False

    def pids(self) -> "list[int]":
        pids = []
        for process in self.processes:
            assert process.pid is not None  # started in __init__
            pids.append(process.pid)
        return pids

    def request(self, weights: "dict[str, np.ndarray]", positions: int, version: int = 0, simulations: int = 0) -> None:
        """Ask every worker for ``positions / N`` positions played with ``weights`` (of iteration ``version``).

        ``simulations`` > 0 replaces the searches' simulation count for this request.
        """
        for connection in self.connections:
            connection.send((weights, version, share(positions, len(self.connections)), simulations))
        self.pending = True

    def collect(self) -> Batch:
        """Wait for every worker's answer to the last request."""
        answers = []
        for index, (connection, process) in enumerate(zip(self.connections, self.processes, strict=True)):
            while not connection.poll(1.0):
                if not process.is_alive():
                    raise RuntimeError(f"self-play worker {index} died (exit code {process.exitcode})")
            message = connection.recv()
            if message[0] == "error":
                raise RuntimeError(f"self-play worker {index} failed:\n{message[1]}")
            answers.append(message[1:])
        self.pending = False
        return Batch.join(answers)

    def close(self) -> None:
        """Stop the workers; positions of a request still being played are dropped."""
        for connection, process in zip(self.connections, self.processes, strict=True):
            if self.pending:  # it would finish its games first: nothing of that is wanted now
                process.terminate()
                continue
            try:
                connection.send(None)
            except (BrokenPipeError, OSError):
                pass
        for process in self.processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
        self.pending = False
