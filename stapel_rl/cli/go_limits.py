"""The limits of one ``go`` of stapel-engine: simulations, nodes, depth and time for the agent it runs."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Protocol, TypedDict, TypeGuard

from stapel_rl.eval.agents import Agent
from stapel_rl.eval.network_agents import UNLIMITED

#: Seconds of a classical ``go movetime`` kept back for the work around the search (as the agent does).
CLASSICAL_MARGIN = 0.003


class CommandError(Exception):
    """A command that cannot be carried out; reported as ``info string error: ...``."""


def positive_int(name: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise CommandError(f"{name} needs a whole number, got {value!r}") from None
    if number < 1:
        raise CommandError(f"{name} must be at least 1, got {number}")
    return number


class SearchAgent(Agent, Protocol):
    """An agent with a simulation count to set: ``config``, a dataclass with ``num_simulations``."""

    config: Any


class SearchLimits(TypedDict, total=False):
    """Keyword arguments of ``Searcher.search`` that one ``go`` sets."""

    depth: "int | None"
    nodes: "int | None"
    time_limit: "float | None"
    deadline: float


def searches(agent: Agent) -> TypeGuard[SearchAgent]:
    """Whether ``agent`` has a simulation count to set (a ``config`` dataclass with ``num_simulations``)."""
    config = getattr(agent, "config", None)
    return config is not None and dataclasses.is_dataclass(config) and hasattr(config, "num_simulations")


def with_limits(agent: SearchAgent, nodes: "int | None", seconds: "float | None") -> Agent:
    """A copy of search agent ``agent`` with the limits of one ``go``.

    ``nodes`` alone: exactly that many simulations. ``seconds``: search by
    time (the agent needs a ``seconds`` attribute), limited to ``nodes``
    simulations if given too, else unlimited.
    """
    changes: "dict[str, object]" = {}
    if seconds is not None:
        changes["seconds"] = seconds
        nodes = nodes or UNLIMITED
    elif hasattr(agent, "seconds"):
        changes["seconds"] = None
    changes["config"] = dataclasses.replace(agent.config, num_simulations=nodes)
    if dataclasses.is_dataclass(agent) and not isinstance(agent, type):
        return dataclasses.replace(agent, **changes)
    clone = copy.copy(agent)
    for key, value in changes.items():
        setattr(clone, key, value)
    return clone
