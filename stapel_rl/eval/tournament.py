"""Tournaments: round robin or gauntlet, colour-swapped pairs from the opening suite, resumable.

Every pairing plays ``pairs`` openings, each opening twice with colours
swapped; the openings are the first ``pairs`` of the variant's suite
(``stapel_rl.eval.openings``), the same for every pairing, or with
``openings="random"`` the start position after ``opening_plies`` random
actions drawn from a seed derived from the tournament seed, the pairing and
the pair, so a rerun (or a resumed run) plays the same openings. Games of a
pairing are played at once, so networks see batches, unless either player
has a clock: a ``time=`` is a budget for each decision of each game, so those
pairings call their agents with one game at a time (``play_match``). Each
finished game is appended to ``games.jsonl`` at once; a killed tournament
resumes by skipping what that file already holds. A player made for the
other variant is refused (``check_variant``).
"""

from __future__ import annotations

import dataclasses
import glob
import pathlib
import re
from collections.abc import Callable, Iterator

import numpy as np
import torch
from tqdm import tqdm

from stapel_rl.cluster import init_ray
from stapel_rl.env import engine
from stapel_rl.env.variants import Variant
from stapel_rl.eval.agents import Agent, check_variant, make_agent
from stapel_rl.eval.arena import play_match
from stapel_rl.eval.openings import opening_fens
from stapel_rl.records import append_jsonl, code_version, start_jsonl

_CHECKPOINT_STEP = re.compile(r"ckpt_(\d+)\.pt$")


def expand_specs(specs: "list[str]") -> "list[str]":
    """Agent specs with checkpoint globs expanded (``mcts:runs/x/ckpt_*.pt:sims=32`` -> one per file)."""
    out = []
    for spec in specs:
        kind, *args = spec.split(":")
        if kind in ("mcts", "policy") and args and any(ch in args[0] for ch in "*?["):
            paths = sorted(glob.glob(args[0]))
            if not paths:
                raise ValueError(f"no checkpoint matches {args[0]!r} (in {spec!r})")
            out += [":".join([kind, p, *args[1:]]) for p in paths]
        else:
            out.append(spec)
    return out


def checkpoint_step(spec: str) -> "int | None":
    """Training iteration of a checkpoint spec (from ``ckpt_<n>.pt``), None for other agents."""
    m = _CHECKPOINT_STEP.search(spec.split(":")[1] if ":" in spec else "")
    return int(m.group(1)) if m else None


@dataclasses.dataclass
class TournamentConfig:
    """Attributes:
    players: agent specs (globs expanded).
    variant: the rules.
    pairs: openings per pairing (each played with both colours).
    opening_plies: with ``openings="random"``, random actions before the agents take over.
    gauntlet: if True, the first player meets every other one; else round robin.
    seed: seeds the openings and the agents' randomness.
    schedule: explicit pairings (player index pairs) instead of either; each
        pairing's openings come from its position in this list.
    openings: "suite" (the variant's opening suite) or "random".
    one_at_a_time: call every agent with one game at a time (``--time``); pairings with a
        clock on either side are played so anyway.
    """

    players: "list[str]"
    variant: Variant
    pairs: int = 10
    opening_plies: int = 4
    gauntlet: bool = False
    seed: int = 0
    schedule: "list[tuple[int, int]] | None" = None
    openings: str = "suite"
    one_at_a_time: bool = False

    def __post_init__(self) -> None:
        if self.pairs < 1:
            raise ValueError(f"a pairing plays at least 1 pair, got pairs={self.pairs}")

    def pairings(self) -> "list[tuple[int, int]]":
        if self.schedule is not None:
            return [(i, j) for i, j in self.schedule]  # pairs as tuples (a schedule read from JSON has lists)
        n = len(self.players)
        if self.gauntlet:
            return [(0, j) for j in range(1, n)]
        return [(i, j) for i in range(n) for j in range(i + 1, n)]


@dataclasses.dataclass
class Job:
    """Games of one pairing still to play: ``todo`` indexes game ``k`` (opening ``k // 2``, a White if even).

    A pairing played one game at a time comes as one job per opening (``part``: that opening's
    index), so that Ray spreads its pairs over the cores instead of leaving its longest pairing
    alone on one core at the end; batched pairings stay whole (``part`` None) to keep their batches.
    """

    index: int
    a: str
    b: str
    fens: "list[str]"
    todo: "list[int]"
    part: "int | None" = None


def has_clock(spec: str) -> bool:
    """Whether the agent ``spec`` names its own time a move (such an agent is always called one game at a time)."""
    return any(o.startswith("time=") for o in spec.split(":")[1:])


def _pairing_openings(config: TournamentConfig, p_index: int) -> "list[str]":
    """The openings of the pairing at ``p_index`` in ``config.pairings()``."""
    return opening_fens(
        config.variant, config.pairs, config.openings, config.opening_plies, seed=config.seed * 100003 + p_index
    )


def jobs(config: TournamentConfig, games: "list[dict]") -> "list[Job]":
    """Every pairing's games that ``games`` does not hold yet."""
    done = {(g["white"], g["black"], g["opening"]) for g in games}
    out = []
    for p_index, (i, j) in enumerate(config.pairings()):
        a, b = config.players[i], config.players[j]
        fens = _pairing_openings(config, p_index)
        todo = [k for k in range(2 * config.pairs) if ((a, b) if k % 2 == 0 else (b, a)) + (fens[k // 2],) not in done]
        if not todo:
            continue
        if config.one_at_a_time or has_clock(a) or has_clock(b):
            for pair in sorted({k // 2 for k in todo}):
                out.append(Job(p_index, a, b, fens, [k for k in todo if k // 2 == pair], part=pair))
        else:
            out.append(Job(p_index, a, b, fens, todo))
    return out


def foreign_games(config: TournamentConfig, games: "list[dict]") -> "list[dict]":
    """The games in ``games`` between a pairing's two players that start from none of that pairing's openings.

    They come from a tournament with other ``pairs``, openings or players, or
    from code whose random openings differed: resuming would rate them
    together with this tournament's games of the same pairing.
    """
    out = []
    for p_index, (i, j) in enumerate(config.pairings()):
        sides = {config.players[i], config.players[j]}
        fens = set(_pairing_openings(config, p_index))
        out += [g for g in games if {g["white"], g["black"]} == sides and g["opening"] not in fens]
    return out


def play_job(
    config: TournamentConfig,
    job: Job,
    agents: "dict[str, Agent] | None" = None,
    on_entry: "Callable[[dict], None] | None" = None,
) -> "list[dict]":
    """Play a job's games at once (networks see batches; one at a time where a player has a clock);
    the same job gives the same games anywhere. A player of the other variant raises ``ValueError``."""
    agents = {} if agents is None else agents
    for spec in (job.a, job.b):
        if spec not in agents:
            agents[spec] = make_agent(spec)
        check_variant(agents[spec], config.variant)
    start = engine.from_fens([job.fens[k // 2] for k in job.todo], config.variant)
    rng = np.random.default_rng([config.seed, job.index] + ([] if job.part is None else [job.part]))
    entries = []

    def record(g: int, score: float, plies: int, actions: "list[int]", seconds: "tuple[float, float]") -> None:
        k = job.todo[g]
        white, black = (job.a, job.b) if k % 2 == 0 else (job.b, job.a)
        entry = {
            "white": white,
            "black": black,
            "opening": job.fens[k // 2],
            "pair": f"{job.index}:{k // 2}",
            "white_score": score if k % 2 == 0 else 1.0 - score,
            "plies": plies,
            "actions": actions,
            "seconds_per_move": [round(t, 5) for t in (seconds if k % 2 == 0 else seconds[::-1])],
        }
        entries.append(entry)
        if on_entry is not None:
            on_entry(entry)

    play_match(
        agents[job.a],
        agents[job.b],
        config.variant,
        len(job.todo),
        rng,
        start=start,
        on_game_end=record,
        agent_colour=np.array(job.todo) % 2,
        one_at_a_time=config.one_at_a_time,
    )
    return entries


def run(
    config: TournamentConfig,
    out_dir: pathlib.Path,
    progress: "tqdm | None" = None,
    ray_address: "str | None" = None,
    use_ray: bool = False,
) -> "list[dict]":
    """Play every missing game of the tournament; returns all game records.

    With ``use_ray`` the jobs (``jobs``: pairings, or their single pairs where
    games are played one at a time) are Ray tasks (a local Ray, or the cluster
    at ``ray_address``); their games are appended to the same file as each job
    finishes, so resume and ratings are as without Ray.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "games.jsonl"
    games = start_jsonl(path)
    version = code_version()  # each game says which code played it (a folder's games may span commits)

    def append(entry: dict) -> None:
        entry = {**entry, "code_version": version}
        games.append(entry)
        append_jsonl(path, entry)
        if progress is not None:
            progress.update(1)

    todo = jobs(config, games)
    if use_ray:
        for entries in play_jobs_on_ray(config, todo, ray_address):
            for entry in entries:
                append(entry)
        return games
    agents: dict = {}
    for job in todo:
        play_job(config, job, agents, on_entry=append)
    return games


def _play_one_thread(config: TournamentConfig, job: Job) -> "list[dict]":
    torch.set_num_threads(1)  # one CPU per task, as Ray schedules them
    return play_job(config, job)


def play_jobs_on_ray(
    config: TournamentConfig, jobs: "list[Job]", address: "str | None" = None
) -> Iterator["list[dict]"]:
    """The jobs as Ray tasks, one a job: yields each job's game records as its task finishes."""
    import ray  # the optional extra "ray"

    started = init_ray(address)
    try:
        remote = ray.remote(num_cpus=1, max_retries=3)(_play_one_thread)
        config_ref = ray.put(config)
        pending = [remote.remote(config_ref, job) for job in jobs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        if started:
            ray.shutdown()
