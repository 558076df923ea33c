"""Tournament pairings as Ray tasks: one task a pairing, results streamed back as they finish."""

from __future__ import annotations

from typing import Iterator, Optional

from stapel_rl.eval.tournament import Job, TournamentConfig, play_job


def _play(config: TournamentConfig, job: Job) -> "list[dict]":
    import torch

    torch.set_num_threads(1)  # one CPU per task, as Ray schedules them
    return play_job(config, job)


def play_jobs_on_ray(config: TournamentConfig, jobs: "list[Job]", address: Optional[str] = None
                     ) -> Iterator["list[dict]"]:
    """Yield each job's game records as its task finishes (in finishing order)."""
    import ray

    from stapel_rl.train.distributed import init_ray

    started = init_ray(address)
    try:
        remote = ray.remote(num_cpus=1, max_retries=3)(_play)
        config_ref = ray.put(config)
        pending = [remote.remote(config_ref, job) for job in jobs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        if started:
            ray.shutdown()
