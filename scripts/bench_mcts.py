"""Batched MCTS throughput, the network's speed, and how much of a search the network takes.

1. Simulations/s with the uniform evaluator (rules only, no network) for
   B in {64, 512} games and {32, 128} simulations, PUCT and Gumbel.
   All searches play forced actions on through as self-play's do, at most
   ``--forced-rounds`` per node (``mcts.forced_rounds``). Each search
   runs from mid-game positions (20 random plies) and reuses the previous
   search's tree arrays, as self-play does.
2. Positions/s of a network preset alone (batch 512, ``NetworkEvaluator``):
   the fp32 10x10 reference and the fast path self-play uses (batch norm
   folded, bf16 where native, in ``--layout``: the default config's 10x10
   grid, or the 10x5 compact one; see scripts/bench_net.py).
3. A search with the fast network: simulations/s and the share of the
   search's wall time spent inside the network (evaluator time / search time).
4. A committed agent (``--agent``, default ``mcts:variant_I_zero``) searching
   ONE game, as in a match: simulations/s of the agent as it was before leaf
   batching ("before": one leaf per network call, no solver, the network run
   by torch at the precision "auto" gives without ONNX Runtime), with one
   leaf per call on the agent's own network runtime (``batch=1``, no solver),
   and with ``--batches`` leaves per call (the agent's default is 16), each a
   search of ``--agent-sims`` simulations from the same mid-game positions,
   the variants interleaved (A B A B), medians and their ratios to "before"
   and to batch=1 from the same process. The positions all have more than
   one legal action (an agent plays a single one without searching).
   ``--only-agent`` runs this part alone.

Usage: python scripts/bench_mcts.py [--model small] [--layout grid] [--net-batch 512] [--net-sims 32]
                                    [--forced-rounds 2] [--quick] [--agent mcts:variant_I_zero] [--agent-sims 256]
                                    [--variant I] [--agent-positions 8]
                                    [--batches 1,4,16,32] [--threads N] [--only-agent]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import time

import numpy as np
import torch

from stapel_rl._malloc import tune_malloc
from stapel_rl.env import State, take
from stapel_rl.env.sampling import random_positions
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.network_agents import MCTSAgent
from stapel_rl.mcts import SearchConfig, search
from stapel_rl.models import PRESETS, NetworkEvaluator, PolicyValueNet, UniformEvaluator
from stapel_rl.models.evaluator import Evaluator
from stapel_rl.models.fused import bf16_native, resolve_precision


def midgame(batch: int, plies: int, rng: np.random.Generator) -> State:
    """``batch`` live Variant I positions after about ``plies`` random actions, at the start of a turn."""
    return random_positions("I", batch, plies, rng)


def sims_per_second(state: State, evaluator: Evaluator, config: SearchConfig, repeats: int) -> float:
    rng = np.random.default_rng(0)
    out = search(state, evaluator, config, rng)  # warm-up; its arrays are reused below
    start = time.perf_counter()
    for _ in range(repeats):
        out = search(state, evaluator, config, rng, buffer=out.tree)
    return repeats * state.batch_size * config.num_simulations / (time.perf_counter() - start)


def cpu_description() -> str:
    """The CPU's model name and the instruction sets the network's speed depends on."""
    name = platform.processor() or "unknown"
    flags: "set[str]" = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    cpu = torch.device("cpu")
    return (
        f"{name}, {os.cpu_count()} cores ({platform.machine()}, {'+'.join(isa) or 'base ISA'}; "
        f"bf16 native: {bf16_native(cpu)})"
    )


def positions_with_a_choice(variant: str, count: int, rng: np.random.Generator) -> State:
    """``count`` mid-game positions of ``variant`` with more than one legal action.

    An agent plays a position with one legal action without a search, so such a
    position would time nothing (and count a rate of zero).
    """
    state = random_positions(variant, 8 * count, 20, rng)
    choice = np.flatnonzero(state.legal_action_mask.sum(axis=1) > 1)
    if choice.size < count:
        raise RuntimeError(f"only {choice.size} of {state.batch_size} positions have a choice of action")
    return take(state, choice[:count])


def network_mcts_agent(spec: str) -> "tuple[MCTSAgent, NetworkEvaluator]":
    """The agent ``spec`` makes and its network evaluator; ``SystemExit`` if it is not a network's MCTS agent."""
    agent = make_agent(spec)
    if not isinstance(agent, MCTSAgent) or not isinstance(agent.evaluator, NetworkEvaluator):
        raise SystemExit(f"bench_mcts: --agent must name a network's MCTS agent (mcts:PATH), got {spec!r}")
    return agent, agent.evaluator


def agent_rates(spec: str, sims: int, batches: "list[int]", positions: State, repeats: int) -> "dict[str | int, float]":
    """Median simulations/s of ``spec`` searching one game at a time: "before" (see part 4) and each
    leaves-per-call count.

    Each repeat searches every position once with each variant in turn (A B A B), so that a change of
    the machine's load falls on all alike; ``batch=1`` is searched without the solver, as before it.
    """
    agents: "dict[str | int, MCTSAgent]" = {}
    evaluators: "dict[int, NetworkEvaluator]" = {}
    for k in batches:
        extra = ":solver=off" if k == 1 else ""
        agents[k], evaluators[k] = network_mcts_agent(f"{spec}:sims={sims}:batch={k}:reuse=off{extra}")
    plain = agents[1]
    cpu = torch.device("cpu")
    torch_net = NetworkEvaluator(evaluators[1].net, device=cpu, precision=resolve_precision("auto", cpu, onnx=False))
    agents = {"before": dataclasses.replace(plain, evaluator=torch_net, warm=False), **agents}
    rates: "dict[str | int, list[float]]" = {k: [] for k in agents}
    rng = np.random.default_rng(0)
    for agent in agents.values():  # warm-up: the network's first calls and the trees' first pages
        agent.warm_up(positions)
        agent(take(positions, np.array([0])), rng)
    for _ in range(repeats):
        for game in range(positions.batch_size):
            one = take(positions, np.array([game]))
            for key, agent in agents.items():
                start = time.perf_counter()
                agent(one, rng)
                rates[key].append(agent.simulations / (time.perf_counter() - start))
    return {k: float(np.median(r)) for k, r in rates.items()}


def bench_agent(args: argparse.Namespace, repeats: int) -> None:
    batches = sorted({1, *(int(b) for b in args.batches.split(","))})
    _, probe = network_mcts_agent(f"{args.agent}:sims=1")
    precision = probe.precision
    print(
        f"\n4. agent '{args.agent}' searching one game of Variant {args.variant}, "
        f"{args.agent_sims} simulations a search, network {precision}, {torch.get_num_threads()} torch threads; "
        f"before: torch {resolve_precision('auto', torch.device('cpu'), onnx=False)}"
    )
    print(f"   CPU: {cpu_description()}")
    load = os.getloadavg()
    positions = positions_with_a_choice(args.variant, args.agent_positions, np.random.default_rng(1))
    rates = agent_rates(args.agent, args.agent_sims, batches, positions, repeats)
    before = rates["before"]
    print(f"{'leaves/call':>11} {'sims/s':>10} {'vs before':>10} {'vs batch=1':>11}")
    for k, rate in rates.items():
        print(f"{k:>11} {rate:>10,.0f} {rate / before:>9.2f}x {rate / rates[1]:>10.2f}x", flush=True)
    after = os.getloadavg()
    print(f"   load average (1 min) {load[0]:.2f} before, {after[0]:.2f} after, on {os.cpu_count()} cores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", default="small", choices=sorted(PRESETS), help="network size (default: the default config's)"
    )
    parser.add_argument("--net-batch", type=int, default=512, help="games searched at once with the network")
    parser.add_argument("--net-sims", type=int, default=32, help="simulations per search with the network")
    parser.add_argument(
        "--layout",
        default="grid",
        choices=["grid", "compact"],
        help="the fast network's input layout (default: the default config's)",
    )
    parser.add_argument(
        "--forced-rounds",
        type=int,
        default=2,
        help="forced actions a search node plays on through at most (self-play's mcts.forced_rounds; -1: no cap)",
    )
    parser.add_argument("--quick", action="store_true", help="one repeat each (smoke test)")
    parser.add_argument("--agent", default="mcts:variant_I_zero", help="part 4: the agent spec searching one game")
    parser.add_argument("--agent-sims", type=int, default=256, help="part 4: simulations per search")
    parser.add_argument("--variant", default="I", choices=["I", "II"], help="part 4: the agent's variant")
    parser.add_argument("--agent-positions", type=int, default=8, help="part 4: positions searched each repeat")
    parser.add_argument("--batches", default="4,16,32", help="part 4: leaves per network call to compare with 1")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--only-agent", action="store_true", help="run part 4 alone")
    args = parser.parse_args()
    tune_malloc()  # as the CLIs and self-play workers do: multi-MB temporaries stay mapped
    if args.threads:
        torch.set_num_threads(args.threads)
    repeats = 1 if args.quick else 3
    rng = np.random.default_rng(0)
    print(f"MCTS benchmark | torch {torch.__version__}, {torch.get_num_threads()} threads | numpy {np.__version__}")
    if args.only_agent:
        bench_agent(args, repeats)
        return

    rounds = None if args.forced_rounds < 0 else args.forced_rounds
    print(f"\n1. uniform evaluator (rules only), simulations/s, forced rounds {rounds}")
    print(f"{'algorithm':>9} {'B':>5} {'sims':>5} {'sims/s':>10}")
    for algorithm in ("puct", "gumbel"):
        for batch in (64, 512):
            state = midgame(batch, 20, rng)
            for sims in (32, 128):
                config = SearchConfig(sims, algorithm, forced_rounds=rounds)
                rate = sims_per_second(state, UniformEvaluator(), config, repeats)
                print(f"{algorithm:>9} {batch:>5} {sims:>5} {rate:>10,.0f}", flush=True)

    print(f"\n2. network '{args.model}' alone, batch {args.net_batch}")
    state = midgame(args.net_batch, 20, rng)
    reference = NetworkEvaluator(
        PolicyValueNet(dataclasses.replace(PRESETS[args.model], layout="grid")),
        device="cpu",
        precision="fp32",
        fold=False,
    )
    net = PolicyValueNet(dataclasses.replace(PRESETS[args.model], layout=args.layout))
    evaluator = NetworkEvaluator(net, device="cpu")
    shape = "10x10" if args.layout == "grid" else "10x5"
    for name, e in (("fp32 10x10", reference), (f"fast ({evaluator.precision} {shape})", evaluator)):
        e(state)
        e.reset_stats()
        for _ in range(repeats * 3):
            e(state)
        print(f"{name:>16}: positions/s {e.positions_per_second:,.0f}")
    print(f"parameters {sum(p.numel() for p in net.parameters()):,}")

    print(
        f"\n3. search with the fast network '{args.model}': B={args.net_batch}, {args.net_sims} simulations, "
        f"forced rounds {rounds}"
    )
    for algorithm in ("puct", "gumbel"):
        config = SearchConfig(args.net_sims, algorithm, forced_rounds=rounds)
        out = search(state, evaluator, config, rng)
        evaluator.reset_stats()
        start = time.perf_counter()
        for _ in range(repeats):
            out = search(state, evaluator, config, rng, buffer=out.tree)
        total = time.perf_counter() - start
        rate = repeats * args.net_batch * args.net_sims / total
        share = 100 * evaluator.seconds / total
        print(f"{algorithm:>9}: {rate:,.0f} simulations/s, {share:.1f}% of search time in the network")

    bench_agent(args, repeats)


if __name__ == "__main__":
    main()
