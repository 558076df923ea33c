"""An agent over a saved sb3-contrib ``MaskablePPO`` policy: the spec ``sb3:PATH[:deterministic=BOOL]``.

The policy must have been trained on the env's observations and canonical
actions, e.g. on ``stapel_rl.eval.versus.VersusAgent`` (see
``examples/sb3_maskable_ppo.py``). At every decision point, between the leaps
of a capture too, the agent encodes each live game in the view of its side to
move (``observation.encode``), asks the policy for a canonical action under
the legal-action mask, and turns it back into a board action id: one call of
the policy for the whole batch.

Options: ``deterministic=true`` (default: the policy's most likely action) or
``deterministic=false`` (sample from the masked policy with its own
generator; ``stapel_rl``'s rng argument is not used by SB3).

Needs the ``sb3`` extra (stable-baselines3, sb3-contrib); this module is
imported only for that spec.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
from sb3_contrib import MaskablePPO

from stapel_rl.env.observation import canonical_mask, encode, from_canonical_actions
from stapel_rl.env.state import State, take

#: The options of the spec after PATH, with their defaults.
OPTIONS = {"deterministic": True}
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


@dataclasses.dataclass
class SB3Agent:
    """Plays a ``MaskablePPO`` policy: canonical observation and mask in, board action ids out.

    Attributes:
        model: the loaded ``MaskablePPO`` (its policy on the CPU is enough).
        deterministic: the most likely legal action (True) or a sample (False).
        name: the agent's spec, for match reports.
    """

    model: MaskablePPO
    deterministic: bool = True
    name: str = "sb3"

    @classmethod
    def load(cls, path: "str | os.PathLike", deterministic: bool = True, device: str = "cpu") -> "SB3Agent":
        """The agent of a policy saved with ``MaskablePPO.save(path)`` (``.zip`` may be left off)."""
        path = os.fspath(path)
        if not os.path.exists(path) and not os.path.exists(path + ".zip"):
            raise FileNotFoundError(f"sb3 agent: no saved MaskablePPO policy at {path!r} (nor {path + '.zip'!r})")
        return cls(model=MaskablePPO.load(path, device=device), deterministic=deterministic, name=f"sb3:{path}")

    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray:
        actions = np.zeros(state.batch_size, np.int64)
        live = np.flatnonzero(~state.done)
        if not live.size:
            return actions
        games = take(state, live) if live.size < state.batch_size else state
        canonical, _ = self.model.predict(
            encode(games), action_masks=canonical_mask(games), deterministic=self.deterministic
        )
        actions[live] = from_canonical_actions(np.asarray(canonical, dtype=np.int64).reshape(-1), games.current_player)
        return actions


def from_spec_args(args: "list[str]") -> SB3Agent:
    """The agent of ``sb3:PATH[:deterministic=BOOL]`` from the spec's fields after ``sb3``.

    Raises ``ValueError`` for a missing PATH or an unknown option (naming the
    allowed ones) and ``FileNotFoundError`` when no policy is saved at PATH.
    """
    if not args or not args[0]:
        raise ValueError("the sb3 agent needs a path: sb3:PATH[:deterministic=true|false]")
    path, *options = args
    settings = dict(OPTIONS)
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key not in OPTIONS:
            raise ValueError(
                f"unknown sb3 agent option {option!r}: expected one of {[f'{k}=true|false' for k in OPTIONS]}"
            )
        if value.lower() not in _BOOLEANS:
            raise ValueError(f"sb3 agent option {key} must be true or false, got {value!r}")
        settings[key] = _BOOLEANS[value.lower()]
    return SB3Agent.load(path, deterministic=settings["deterministic"])
