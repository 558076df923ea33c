"""Checkpoints: written atomically, the last k kept, each recording config, step, seed and code version.

The one reader of the format: ``load`` checks a file, ``load_network`` builds
the network it holds; training, agents, the web board and the scripts all
go through them.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pathlib
import re
from typing import Any

import torch

from stapel_rl.bundled import resolve_checkpoint
from stapel_rl.models.network import NetworkConfig, PolicyValueNet
from stapel_rl.records import atomic_write_bytes, code_version

_NAME = re.compile(r"^ckpt_(\d+)\.pt$")


def save(directory: "str | os.PathLike", step: int, payload: "dict[str, Any]", keep: int = 3) -> pathlib.Path:
    """Save ``payload`` as ``directory/ckpt_<step>.pt``; keep the newest ``keep``.

    The payload should carry ``code_version`` as it was when the run started
    (the checkout may change while a long run goes on); it is filled in now otherwise.
    """
    directory = pathlib.Path(directory)
    buffer = io.BytesIO()
    torch.save({"code_version": code_version(), **payload, "step": int(step)}, buffer)
    path = directory / f"ckpt_{int(step):08d}.pt"
    atomic_write_bytes(path, buffer.getvalue())
    for old in list_checkpoints(directory)[:-keep] if keep > 0 else []:
        old.unlink(missing_ok=True)
    return path


def list_checkpoints(directory: "str | os.PathLike") -> "list[pathlib.Path]":
    """Checkpoint files in ``directory``, oldest first."""
    return [path for _, path in _numbered(directory)]


def _numbered(directory: "str | os.PathLike") -> "list[tuple[int, pathlib.Path]]":
    """``(step, path)`` of each checkpoint file in ``directory``, oldest first."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    return sorted((int(m.group(1)), p) for p in directory.iterdir() if (m := _NAME.match(p.name)))


def set_aside(directory: "str | os.PathLike", after: int, to: "str | os.PathLike") -> "list[pathlib.Path]":
    """Move the checkpoints of ``directory`` with a step after ``after`` into ``to`` (where they are no
    longer listed); returns their new paths. A run resumed from its checkpoint of step ``after`` plays
    on from there: files its stopped process saved later belong to a continuation it does not follow."""
    moved = []
    for step, path in _numbered(directory):
        if step > after:
            target = pathlib.Path(to) / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            n = 0
            while target.exists():  # set aside after an earlier kill too
                n += 1
                target = target.with_name(f"{path.stem}.{n}.pt")
            moved.append(path.replace(target))
    return moved


def load(path: "str | os.PathLike") -> "dict[str, Any]":
    """Load a checkpoint; a missing, truncated or foreign file raises ``ValueError`` saying so."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint {str(path)!r} does not exist")
    try:
        data = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as error:  # torch raises several types for damaged files
        raise ValueError(
            f"checkpoint {str(path)!r} is corrupt or truncated ({type(error).__name__}: {error})"
        ) from None
    if not isinstance(data, dict) or "model" not in data or "step" not in data:
        raise ValueError(f"{str(path)!r} is not a stapel-rl checkpoint (no model weights or step)")
    return data


def load_network(path: "str | os.PathLike") -> "tuple[PolicyValueNet, dict[str, Any]]":
    """The network saved in checkpoint ``path`` (or a shipped agent's name, ``variant_I``) and the checkpoint."""
    data = load(resolve_checkpoint(str(path)))
    net = PolicyValueNet(NetworkConfig(**data["model_config"]))
    net.load_state_dict(data["model"])
    return net, data


def load_weights(path: "str | os.PathLike", config: NetworkConfig, variant: str) -> "dict[str, torch.Tensor]":
    """The network weights of checkpoint ``path`` (or a shipped agent's name) for a network of ``config``
    playing ``variant``; a checkpoint of another variant or architecture raises ``ValueError`` naming
    what differs (a run that starts from it would fail to load it, or learn the wrong game)."""
    data = load(resolve_checkpoint(str(path)))
    if data.get("variant", variant) != variant:
        raise ValueError(f"{str(path)!r} plays Variant {data['variant']}, this run Variant {variant}")
    # A key the checkpoint lacks was added to the shape later: the checkpoint's network has its default.
    saved = {**dataclasses.asdict(NetworkConfig()), **data.get("model_config", {})}
    wanted = dataclasses.asdict(config)
    keys = [k for k, v in wanted.items() if saved.get(k) != v]
    if keys:
        differ = "; ".join(f"{k}: {saved.get(k)} (checkpoint) != {wanted[k]} (run)" for k in keys)
        # points_head follows the variant, which is checked above: the other keys are the overrides to give.
        overrides = " ".join(f"model.{k}={saved[k]}" for k in keys if k != "points_head")
        raise ValueError(
            f"{str(path)!r} holds another network than this run's model config: {differ}"
            + (f" (to start from it, add {overrides})" if overrides else "")
        )
    return data["model"]


def export(source: "str | os.PathLike", target: "str | os.PathLike") -> "dict[str, Any]":
    """Copy a training checkpoint without its optimizer and replay buffer (an agent file, a few MB)."""
    data = load(source)
    keep: dict[str, Any] = {
        k: data[k]
        for k in ("model", "model_config", "config", "counters", "seed", "variant", "step", "code_version")
        if k in data
    }
    keep["exported_from"] = str(source)
    buffer = io.BytesIO()
    torch.save(keep, buffer)
    atomic_write_bytes(target, buffer.getvalue())
    return keep
