"""What ships inside the package: the Hydra configs and the trained agents.

In a checkout, ``stapel_rl/configs`` and ``stapel_rl/checkpoints`` are
symlinks to the repository's top-level ``configs/`` and ``checkpoints/`` (the
places people edit), so an editable install reads those directly; building a
wheel copies what the links point to into the package.

Agent specs accept the names ``variant_I`` and ``variant_II`` (the strongest
agent shipped for each variant) and ``variant_I_zero`` and ``variant_II_zero``
(the agents learned by self-play from random weights alone) wherever they take
a checkpoint path (``mcts:variant_I:sims=64``); a file of that name in the
working directory is an explicit path and wins. Each file's model card says how
it was trained.
"""

from __future__ import annotations

import os
import pathlib

from stapel_rl.env.variants import VARIANTS, Variant, get_variant

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent
#: Hydra's primary config directory: the repository's configs/ in a checkout, the packaged copy in a wheel.
CONFIG_DIR = (PACKAGE_DIR / "configs").resolve()
#: The trained agents (``variant_I.pt``, ``variant_I_zero.pt``, ...) and their model cards.
CHECKPOINT_DIR = (PACKAGE_DIR / "checkpoints").resolve()


def agent_name(variant: "Variant | str", from_zero: bool = False) -> str:
    """The name of a bundled agent in specs and of its file without ``.pt``: ``variant_I``, ``variant_I_zero``."""
    return f"variant_{get_variant(variant).name}{'_zero' if from_zero else ''}"


#: Checkpoint names that mean a bundled agent, with the variant and whether it learned from zero:
#: ``variant_I`` -> ("I", False), ``variant_I_zero`` -> ("I", True).
AGENT_NAMES = {agent_name(name, zero): (name, zero) for name in VARIANTS for zero in (False, True)}


def pretrained(variant: "Variant | str" = "I", from_zero: bool = False) -> pathlib.Path:
    """Path of the strongest trained agent shipped for ``variant`` ("I" or "II"), or with ``from_zero``
    of the one learned by self-play from random weights alone; its model card is beside it."""
    path = CHECKPOINT_DIR / f"{agent_name(variant, from_zero)}.pt"
    if not path.is_file():
        raise FileNotFoundError(f"bundled agent {str(path)!r} is missing: the package was built without checkpoints/")
    return path


def resolve_checkpoint(path: "str | os.PathLike") -> str:
    """``path`` as given, or the bundled agent's path if it is one of ``AGENT_NAMES`` and no such file exists."""
    text = os.fspath(path)
    if text in AGENT_NAMES and not os.path.exists(text):
        return str(pretrained(*AGENT_NAMES[text]))
    return text
