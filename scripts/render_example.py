"""Play a seeded random Variant I game to a mid-game position and render it.

Writes ``docs/midgame.png`` (``rgb_array``) and prints the text board with
every stack's composition. Usage::

    python scripts/render_example.py [--seed 0] [--ply 60] [--size 480] [--out docs/midgame.png]
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np
from PIL import Image

from stapel_rl.env import init, step
from stapel_rl.env.render import ansi, rgb_array
from stapel_rl.env.state import State

ROOT = pathlib.Path(__file__).resolve().parents[1]


def midgame(seed: int, ply: int, min_height: int = 3, variant: str = "I") -> State:
    """First position at the start of a turn from ``ply`` on with a stack of ``min_height`` men.

    Tries seeds ``seed``, ``seed + 1``, ... until a random game gets there before it ends.
    """
    for attempt in range(seed, seed + 1000):
        rng = np.random.default_rng(attempt)
        state = init(variant)
        while not state.done[0]:
            legal = np.flatnonzero(state.legal_action_mask[0])
            state = step(state, np.array([rng.choice(legal)]))
            at_turn_start = state.capturing[0] < 0 and not state.done[0]
            if at_turn_start and state.ply[0] >= ply and state.height[0].max() >= min_height:
                print(f"seed {attempt}")
                return state
    raise RuntimeError("no random game reached the requested position")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ply", type=int, default=60)
    parser.add_argument("--size", type=int, default=480)
    parser.add_argument("--variant", default="I")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "midgame.png")
    args = parser.parse_args()
    state = midgame(args.seed, args.ply, variant=args.variant)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rgb_array(state, 0, size=args.size)).save(args.out)
    print(ansi(state, 0, full=True))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
