"""Self-play on Ray: N actors around the single-machine ``SelfPlay``, one learner.

    stapel-train distributed=ray distributed.actors=4             # a local Ray on this machine
    stapel-train distributed=ray distributed.address=auto         # join a cluster started with `ray start`

A cluster's every process needs ``RAY_AUTH_MODE=token`` and the head node's Ray token
(docs/distributed.md): Ray turns token authentication on by itself.

The learner (the ``stapel-train`` process: trainer, replay buffer,
checkpoints, TensorBoard) publishes the newest weights once per iteration
with one ``ray.put``; every actor reads that one object (Ray shares it per
node through its object store) and answers with the positions and game
records of the games it finished. ``RaySelfPlayActors`` has the interface of
``workers.SelfPlayWorkers`` (``request`` / ``collect`` / ``close``), so the
training loop is the same loop: this is a layer around ``SelfPlay``, not a
second trainer.

Faults: actors are created with unlimited restarts and task retries. An
actor whose process dies is restarted by Ray (a fresh ``SelfPlay``: the
games it had under way are lost, nothing the learner already received) and
its pending request is played again; the learner just waits a little longer.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from stapel_rl.cluster import init_ray
from stapel_rl.train.config import DistributedConfig
from stapel_rl.train.workers import Batch, WorkerPlay, WorkerSpec, share


class SelfPlayActor:
    """A Ray actor around one ``WorkerPlay`` (the class is wrapped by ``ray.remote`` on use)."""

    def __init__(self, spec: WorkerSpec, index: int, threads: int) -> None:
        import ray

        if ray.get_runtime_context().was_current_actor_reconstructed:
            # A restarted actor must not replay the games of its first life.
            spec = dataclasses.replace(spec, seed=(*spec.seed, os.getpid()))
        self.worker = WorkerPlay(spec, index, threads)

    def pid(self) -> int:
        return os.getpid()

    def play(self, weights: "dict[str, np.ndarray]", version: int, count: int, simulations: int = 0) -> tuple:
        return self.worker.play(weights, version, count, simulations)


class RaySelfPlayActors:
    """``config.actors`` Ray actors with the ``SelfPlayWorkers`` interface."""

    def __init__(self, specs: "list[WorkerSpec]", config: DistributedConfig) -> None:
        import ray

        self.started = init_ray(config.address, num_cpus=None, timeout=config.connect_timeout_s)
        need = len(specs) * config.cpus_per_actor
        have = ray.cluster_resources().get("CPU", 0.0)
        if need > have:
            self.close()
            raise RuntimeError(
                f"distributed.actors={len(specs)} x cpus_per_actor={config.cpus_per_actor:g} needs "
                f"{need:g} CPUs; the Ray cluster has {have:g}"
            )
        if config.gpus_per_actor and len(specs) * config.gpus_per_actor > ray.cluster_resources().get("GPU", 0.0):
            self.close()
            raise RuntimeError(
                f"distributed.gpus_per_actor={config.gpus_per_actor} for {len(specs)} actors: "
                f"the Ray cluster has {ray.cluster_resources().get('GPU', 0.0):g} GPUs"
            )
        remote = ray.remote(
            num_cpus=config.cpus_per_actor, num_gpus=config.gpus_per_actor, max_restarts=-1, max_task_retries=-1
        )(SelfPlayActor)
        threads = max(1, int(config.cpus_per_actor))
        device = "cuda" if config.gpus_per_actor > 0 else "cpu"
        self.actors = [
            remote.remote(dataclasses.replace(spec, device=device), i, threads) for i, spec in enumerate(specs)
        ]
        self.futures: list = []

    @property
    def pending(self) -> bool:
        return bool(self.futures)

    def pids(self) -> "list[int]":
        """The actors' process ids (waits for them to start)."""
        import ray

        # ray types a handle as ActorHandle[T] | type[T]: an actor method without @ray.method (ray is
        # imported here on use only) looks like the plain function, which has no .remote.
        return ray.get([actor.pid.remote() for actor in self.actors])  # type: ignore[union-attr]

    def request(self, weights: "dict[str, np.ndarray]", positions: int, version: int = 0, simulations: int = 0) -> None:
        """Publish ``weights`` once and ask every actor for its share of ``positions`` (see ``SelfPlayWorkers``)."""
        import ray

        ref = ray.put(weights)
        count = share(positions, len(self.actors))
        # ray's ActorHandle[T] | type[T] again (see pids).
        self.futures = [actor.play.remote(ref, version, count, simulations) for actor in self.actors]  # type: ignore[union-attr]

    def collect(self) -> Batch:
        """Wait for every actor's answer to the last request (a restarted actor's retry included)."""
        import ray

        answers = ray.get(self.futures)
        self.futures = []
        return Batch.join(answers)

    def close(self) -> None:
        import ray

        for actor in getattr(self, "actors", []):
            ray.kill(actor)
        self.futures = []
        if self.started:
            ray.shutdown()
            self.started = False
