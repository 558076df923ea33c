"""The options every command that plays matches shares: ``stapel-match``, ``stapel-tournament``, ``stapel-sprt``;
and the check of counts the commands and scripts share (``check_counts``).

No torch here: a ``stapel-match`` worker may import this module before it sets its threads
(``stapel_rl.eval.parallel.one_core``).
"""

from __future__ import annotations

import argparse
import math
import pathlib

from stapel_rl.eval.openings import SOURCES


def add_match_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--variant``, ``--openings``, ``--opening-plies``, ``--time`` and ``--seed``."""
    parser.add_argument("--variant", default="I", help="I or II (default I)")
    parser.add_argument(
        "--openings", default="suite", choices=SOURCES, help="the variant's opening suite (default) or random openings"
    )
    parser.add_argument(
        "--opening-plies", type=int, default=4, help="with --openings random: random actions that make each opening"
    )
    parser.add_argument(
        "--time",
        type=float,
        default=None,
        metavar="SECONDS",
        help="equal time: each side's budget per move (mcts and classical get time=SECONDS unless their spec "
        "sets its own) and one game per agent call",
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds the openings and the agents (default 0)")


def check_match_options(args: argparse.Namespace) -> None:
    """Raise ``ValueError`` for a ``--time`` that is not a positive, finite number of seconds."""
    seconds = getattr(args, "time", None)
    if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"--time must be a positive, finite number of seconds, got {seconds:g}")


def check_out_folder(out: "str | pathlib.Path", flag: str = "--out") -> None:
    """Raise ``ValueError`` if ``out``, a folder for results, is the path of a file."""
    if pathlib.Path(out).exists() and not pathlib.Path(out).is_dir():
        raise ValueError(f"{flag} {str(out)!r} is a file: name a folder for the results")


def check_counts(args: argparse.Namespace, *names: str) -> None:
    """Raise ``ValueError`` naming the first option of ``names`` (``args``' attribute names) below 1: a
    count of pairs, games, jobs or steps that would play or train nothing."""
    for name in names:
        value = getattr(args, name)
        if value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
