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

import numpy as np

from stapel_rl.mcts import SearchConfig
from stapel_rl.train.replay import Positions
from stapel_rl.train.selfplay import GameRecord, SelfPlayConfig


@dataclasses.dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs to build its self-play (picklable).

    Attributes:
        variant: variant name; ``ply_cap`` its ply cap.
        model_config: ``NetworkConfig`` fields of the network.
        precision: inference precision ("auto", "bf16", "fp32").
        search: the search configuration; ``selfplay`` the self-play one.
        seed: entropy of the worker's random stream (run seed, worker index, first iteration).
    """

    variant: str
    ply_cap: int
    model_config: dict
    precision: str
    search: SearchConfig
    selfplay: SelfPlayConfig
    seed: "tuple[int, ...]"


@dataclasses.dataclass
class Batch:
    """What the workers returned for one request.

    Attributes:
        positions: the recorded positions of finished games, all workers.
        games: the finished games.
        network_seconds, seconds: time in the network and in ``play``, summed over workers.
    """

    positions: Positions
    games: "list[GameRecord]"
    network_seconds: float
    seconds: float


def _serve(connection, spec: WorkerSpec) -> None:
    """A worker's loop: ``(weights, n)`` -> play ``n`` positions with them -> send the batch back."""
    import torch

    from stapel_rl.env import get_variant
    from stapel_rl.models import NetworkConfig, NetworkEvaluator, PolicyValueNet
    from stapel_rl.train.selfplay import SelfPlay

    torch.set_num_threads(1)  # one core each: N workers and the learner share the machine
    try:
        net = PolicyValueNet(NetworkConfig(**spec.model_config))
        evaluator = NetworkEvaluator(net, device="cpu", precision=spec.precision)
        variant = get_variant(spec.variant).with_ply_cap(spec.ply_cap)
        selfplay = SelfPlay(variant, evaluator, spec.search, spec.selfplay, np.random.default_rng(list(spec.seed)))
        while (request := connection.recv()) is not None:
            weights, count = request
            net.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
            evaluator.reset_stats()
            start = time.perf_counter()
            positions = selfplay.play(count)
            connection.send(("ok", positions.arrays, selfplay.take_finished_games(), evaluator.seconds,
                             time.perf_counter() - start))
    except KeyboardInterrupt:
        pass
    except BaseException:  # report it: the learner raises it with the worker's traceback
        connection.send(("error", traceback.format_exc()))


class SelfPlayWorkers:
    """N self-play processes: ``request`` positions (non-blocking), then ``collect`` them."""

    def __init__(self, specs: "list[WorkerSpec]") -> None:
        # spawn, not fork: a forked child inherits the parent's torch/OpenMP thread state.
        context = multiprocessing.get_context("spawn")
        self.connections, self.processes = [], []
        for index, spec in enumerate(specs):
            parent, child = context.Pipe()
            process = context.Process(target=_serve, args=(child, spec), name=f"stapel-selfplay-{index}", daemon=True)
            process.start()
            child.close()
            self.connections.append(parent)
            self.processes.append(process)
        self.pending = False

    def request(self, weights: "dict[str, np.ndarray]", positions: int) -> None:
        """Ask every worker for ``positions / N`` positions (at least one) played with ``weights``."""
        share = max(1, -(-positions // len(self.connections)))
        for connection in self.connections:
            connection.send((weights, share))
        self.pending = True

    def collect(self) -> Batch:
        """Wait for every worker's answer to the last request."""
        parts, games, network, seconds = [], [], 0.0, 0.0
        for index, (connection, process) in enumerate(zip(self.connections, self.processes)):
            while not connection.poll(1.0):
                if not process.is_alive():
                    raise RuntimeError(f"self-play worker {index} died (exit code {process.exitcode})")
            message = connection.recv()
            if message[0] == "error":
                raise RuntimeError(f"self-play worker {index} failed:\n{message[1]}")
            _, arrays, worker_games, worker_network, worker_seconds = message
            parts.append(Positions(arrays))
            games += worker_games
            network += worker_network
            seconds += worker_seconds
        self.pending = False
        return Batch(Positions.concatenate(parts), games, network, seconds)

    def close(self) -> None:
        """Stop the workers; positions of a request still being played are dropped."""
        for connection, process in zip(self.connections, self.processes):
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
