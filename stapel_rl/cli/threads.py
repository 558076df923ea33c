"""``--threads``: the cores an agent's network may use (``stapel-engine``, ``stapel-play``, ``stapel-serve``)."""

from __future__ import annotations

import argparse

import torch


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--threads`` (default 1): the cores the agent's network may use."""
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="cores the agents' networks may use (default 1: on a shared machine, more threads stall "
        "a search's small network calls; the classical engine searches on one core whatever this says)",
    )


def apply_threads_option(args: argparse.Namespace) -> None:
    """Use ``args.threads`` torch threads (ONNX Runtime's graphs take torch's count); ValueError below 1."""
    if args.threads < 1:
        raise ValueError(f"--threads must be at least 1, got {args.threads}")
    torch.set_num_threads(args.threads)
