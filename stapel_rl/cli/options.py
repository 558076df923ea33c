"""The commands' shared options: the match options of ``stapel-match``, ``stapel-tournament`` and
``stapel-sprt``, and the agent's threads (``stapel-engine``)."""

from __future__ import annotations

import argparse

from stapel_rl.eval.openings import SOURCES


def add_match_options(parser: argparse.ArgumentParser, *, time: bool = True) -> None:
    """Add ``--variant``, ``--openings``, ``--opening-plies``, ``--seed`` and (``time``) ``--time``."""
    parser.add_argument("--variant", default="I", help="I or II (default I)")
    parser.add_argument(
        "--openings", default="suite", choices=SOURCES, help="the variant's opening suite (default) or random openings"
    )
    parser.add_argument(
        "--opening-plies", type=int, default=4, help="with --openings random: random actions that make each opening"
    )
    if time:
        parser.add_argument(
            "--time",
            type=float,
            default=None,
            metavar="SECONDS",
            help="equal time: each side's budget per move (agents that search by time)",
        )
    parser.add_argument("--seed", type=int, default=0, help="seeds the openings and the agents (default 0)")


def check_match_options(args: argparse.Namespace) -> None:
    """Raise ``ValueError`` for a ``--time`` that is not a positive number of seconds."""
    seconds = getattr(args, "time", None)
    if seconds is not None and not seconds > 0:
        raise ValueError(f"--time must be a positive number of seconds, got {seconds:g}")


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--threads`` (default 1): the cores the agent's network may use."""
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="cores the agent's network may use (default 1: on a shared machine, more threads stall "
        "the search's small network calls, and an engine shares the machine with its opponent)",
    )


def apply_threads_option(args: argparse.Namespace) -> None:
    """Use ``args.threads`` torch threads (ONNX Runtime's graphs take torch's count); ValueError below 1."""
    if args.threads < 1:
        raise ValueError(f"--threads must be at least 1, got {args.threads}")
    # Imported here: a match job sets its threads before torch starts its thread pool (match._one_core).
    import torch

    torch.set_num_threads(args.threads)
