"""Replay buffer: a preallocated ring over the most recent self-play positions.

Positions are kept as compact engine states (about 1.5 kB each with the
targets) and turned into observation planes only when sampled: encoding a
training batch costs about a millisecond, storing the planes would cost ten
times the memory.

The window sampled from is the whole buffer, or one that grows with the
positions ever added (``growing_window``, after KataGo's shuffle window): a long
run then trains on more of its past than its first minutes did.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
from collections.abc import Callable

import numpy as np

from stapel_rl.env.geometry import NUM_ACTIONS, NUM_SQUARES
from stapel_rl.env.observation import canonical_mask, encode
from stapel_rl.env.state import State
from stapel_rl.env.variants import Variant

#: name -> (shape after the batch axis, dtype)
FIELDS = {
    "height": ((NUM_SQUARES,), np.uint8),
    "colours": ((NUM_SQUARES,), np.uint64),
    "current_player": ((), np.int8),
    "capturing": ((), np.int8),
    "last_leapt": ((), np.int8),
    "ply": ((), np.int32),
    "points": ((2,), np.int16),
    "legal_action_mask": ((NUM_ACTIONS,), bool),
    "policy": ((NUM_ACTIONS,), np.float32),  # search policy target over canonical actions
    "value": ((), np.float32),  # final result from the view of the player to move
    "root_value": ((), np.float32),  # the search's value of the position at the time (SearchOutput.search_value)
    "points_diff": ((), np.float32),  # final Variant II points, player to move minus opponent
    "version": ((), np.int32),  # weights that searched it: the learner iteration that made them (0 = initial)
    "actor": ((), np.int16),  # self-play process that played it (-1: the learner's own process)
}
STATE_FIELDS = ("height", "colours", "current_player", "capturing", "last_leapt", "ply", "points", "legal_action_mask")


@dataclasses.dataclass
class Positions:
    """A batch of training positions: ``arrays[name]`` shaped ``[P, ...]`` per ``FIELDS``."""

    arrays: "dict[str, np.ndarray]"

    def __len__(self) -> int:
        return int(self.arrays["value"].shape[0])

    @staticmethod
    def concatenate(parts: "list[Positions]") -> "Positions":
        return Positions({k: np.concatenate([p.arrays[k] for p in parts]) for k in FIELDS})


@dataclasses.dataclass
class TrainingBatch:
    """Attributes (all numpy):
    obs: ``float32 [N, C, H, W]`` canonical planes (10x10 grid or 10x5 compact layout).
    mask: ``bool [N, 200]`` legal canonical actions.
    policy: ``float32 [N, 200]`` search policy target (canonical).
    value: ``float32 [N]`` value target, player to move's view: the final
        result, or a mix with the search's root value (``sample``'s ``value_mix``).
    points_diff: ``float32 [N]`` final points difference, player to move's view.
    """

    obs: np.ndarray
    mask: np.ndarray
    policy: np.ndarray
    value: np.ndarray
    points_diff: np.ndarray

    @staticmethod
    def concatenate(parts: "list[TrainingBatch]") -> "TrainingBatch":
        return TrainingBatch(
            *(np.concatenate([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(parts[0]))
        )


def read_positions(path: "str | os.PathLike", variant: str) -> Positions:
    """The positions of an ``.npz`` of ``FIELDS`` (``scripts/warm_start.py``'s ``positions.npz``, the engine's
    games); ``ValueError`` naming the file if it is missing, unreadable, lacks a field or holds another
    variant's games (as its ``settings`` say, where it has them)."""
    try:
        with np.load(path) as saved:
            missing = [k for k in FIELDS if k not in saved.files]
            if missing:
                raise ValueError(f"{path} is not a file of training positions: it lacks {', '.join(missing)}")
            made = json.loads(str(saved["settings"])) if "settings" in saved.files else {}
            if made.get("variant", variant) != variant:
                raise ValueError(f"{path} holds Variant {made['variant']} games, not Variant {variant}")
            return Positions({k: saved[k].astype(dtype) for k, (_, dtype) in FIELDS.items()})
    except (OSError, EOFError, zipfile.BadZipFile) as problem:
        raise ValueError(f"{path}: cannot read training positions ({problem})") from None


def growing_window(start: int, growth: float, power: float = 0.75) -> "Callable[[int], int]":
    """KataGo's shuffle window: of ``n`` positions played, the newest ``n`` up to ``start``, then
    ``start * (1 + growth * ((n / start) ** power - 1) / power)``. It grows by at most ``growth`` a new
    position (``growth`` <= 1), so a position that has left it never comes back."""

    def window(n: int) -> int:
        return n if n <= start else int(start * (1.0 + growth * ((n / start) ** power - 1.0) / power))

    return window


class ReplayBuffer:
    """Ring buffer of ``capacity`` positions with uniform sampling from its newest ``window(added)``
    (``window`` None: from all it holds)."""

    def __init__(self, capacity: int, variant: Variant, window: "Callable[[int], int] | None" = None):
        self.capacity = int(capacity)
        self.variant = variant
        self.window = window
        self.arrays = {k: np.zeros((self.capacity,) + shape, dtype) for k, (shape, dtype) in FIELDS.items()}
        self.size = 0
        self.cursor = 0
        self.added = 0  # positions ever added

    def __len__(self) -> int:
        return self.size

    def sampled(self) -> int:
        """How many of the newest positions ``sample`` draws from."""
        return self.size if self.window is None else max(1, min(self.size, self.window(self.added)))

    def add(self, positions: Positions) -> None:
        n = len(positions)
        if n > self.capacity:  # only the newest fit
            positions = Positions({k: v[-self.capacity :] for k, v in positions.arrays.items()})
            self.added += n - self.capacity
            n = self.capacity
        index = (self.cursor + np.arange(n)) % self.capacity
        for k, v in positions.arrays.items():
            self.arrays[k][index] = v
        self.cursor = int((self.cursor + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)
        self.added += n

    def sample(
        self,
        batch_size: int,
        rng: np.random.Generator,
        layout: str = "grid",
        value_mix: float = 0.0,
        inputs: str = "base",
    ) -> TrainingBatch:
        """``batch_size`` positions drawn uniformly, observations in ``layout`` ("grid" or "compact") of
        ``inputs``' planes ("base" or "moves").

        The value target is ``(1 - value_mix) * result + value_mix * root value``.
        """
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        if self.window is None:
            index = rng.integers(0, self.size, size=batch_size)
        else:  # counted back from the newest
            index = (self.cursor - 1 - rng.integers(0, self.sampled(), size=batch_size)) % self.capacity
        state = self.states(index)
        return TrainingBatch(
            obs=encode(state, layout, inputs),
            mask=canonical_mask(state),
            policy=self.arrays["policy"][index],
            value=(1.0 - value_mix) * self.arrays["value"][index] + value_mix * self.arrays["root_value"][index],
            points_diff=self.arrays["points_diff"][index],
        )

    def states(self, index: np.ndarray) -> State:
        """The stored positions ``index`` as engine states (enough to encode them)."""
        fields = {k: self.arrays[k][index] for k in STATE_FIELDS}
        n = len(index)
        return State(
            **fields,
            white=np.zeros(n, np.uint64),
            black=np.zeros(n, np.uint64),
            last_action=np.full(n, -1, np.int16),
            last_was_leap=np.zeros(n, bool),
            terminated=np.zeros(n, bool),
            truncated=np.zeros(n, bool),
            rewards=np.zeros((n, 2), np.float32),
            variant=self.variant,
        )

    def to_bytes(self) -> bytes:
        """The positions ``sample`` draws from, in order of age, as an ``.npz`` blob (with a growing window
        the older ones are never drawn again, and a large buffer saves faster without them)."""
        kept = self.sampled() if self.size else 0
        order = (self.cursor - kept + np.arange(kept)) % self.capacity
        blob = io.BytesIO()
        arrays = {k: v[order] for k, v in self.arrays.items()}
        # mypy matches **arrays against savez's allow_pickle: bool; no field is named so.
        np.savez(blob, added=np.array(self.added), **arrays)  # type: ignore[arg-type]
        return blob.getvalue()

    def load_bytes(self, data: bytes) -> None:
        with np.load(io.BytesIO(data)) as saved:
            self.size, self.cursor, self.added = 0, 0, 0
            # Buffers saved before a field existed load with zeros in it.
            n = len(saved["value"])
            self.add(
                Positions(
                    {
                        k: saved[k] if k in saved else np.zeros((n,) + shape, dtype)
                        for k, (shape, dtype) in FIELDS.items()
                    }
                )
            )
            self.added = int(saved["added"])
