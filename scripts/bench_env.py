"""Cost of the Gymnasium vector env over the raw engine, in one run.

Four loops of random legal play over N games (default 1024), each for a fixed
wall time, all with autoreset so every game stays live:

* engine:      sample an action from ``legal_action_mask``, ``step(validate=False)``,
               restart finished games (``reset_games``).
* engine+obs:  the same plus what an agent needs each step: the canonical
               observation planes (``encode``) and canonical mask.
* engine+moves: the same with the planes of ``model.inputs=moves`` (``encode(...,
               inputs="moves")``).
* vector env:  ``StapelVectorEnv.step`` (validation, canonical actions,
               observations, infos, next-step autoreset).

Steps = actions applied (one plain move or one leap) per second, summed over
games. The last column is each loop's time per step relative to the engine.

Usage: python scripts/bench_env.py [--num-envs 1024] [--seconds 3] [--variant I]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from stapel_rl._malloc import tune_malloc
from stapel_rl.env import engine
from stapel_rl.env.observation import canonical_mask, encode
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.env.vector_env import StapelVectorEnv


def timed(loop_step: Callable[[], int], seconds: float) -> float:
    """Steps per second of ``loop_step`` (which returns the steps it made) over ``seconds``."""
    for _ in range(3):
        loop_step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += loop_step()
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--variant", default="I")
    args = parser.parse_args()
    tune_malloc()  # as the CLIs and self-play workers do: multi-MB temporaries stay mapped
    n = args.num_envs
    rng = np.random.default_rng(0)
    box = {"state": engine.init(args.variant, n)}

    def engine_step(observe: "str | None") -> Callable[[], int]:
        def run() -> int:
            s = box["state"]
            s = engine.step(s, random_legal_actions(s.legal_action_mask, rng), validate=False)
            box["state"] = s = engine.reset_games(s, s.done)
            if observe is not None:
                encode(s, inputs=observe)
                canonical_mask(s)
            return n

        return run

    env = StapelVectorEnv(num_envs=n, variant=args.variant)
    _, info = env.reset(seed=0)
    env_box = {"mask": info["action_mask"].astype(bool)}

    def env_step() -> int:
        _, _, _, _, info = env.step(random_legal_actions(env_box["mask"], rng))
        env_box["mask"] = info["action_mask"].astype(bool)
        return n

    print(f"vector env benchmark: variant {args.variant}, {n} envs, {args.seconds:.1f} s per loop")
    rates = {
        "engine": timed(engine_step(None), args.seconds),
        "engine+obs": timed(engine_step("base"), args.seconds),
        "engine+moves": timed(engine_step("moves"), args.seconds),  # model.inputs=moves' planes
        "vector env": timed(env_step, args.seconds),
    }
    base = rates["engine"]
    print(f"{'loop':<12} {'steps/s':>12} {'time/step vs engine':>20}")
    for name, rate in rates.items():
        print(f"{name:<12} {rate:>12,.0f} {base / rate:>19.2f}x")
    print(f"vector env over engine+obs (the wrapper itself): {rates['engine+obs'] / rates['vector env']:.2f}x")
    print(f"the move planes' observation over the base one: {rates['engine+obs'] / rates['engine+moves']:.2f}x")


if __name__ == "__main__":
    main()
