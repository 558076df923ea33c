"""An agent's first moves in a fresh Python process, where nothing is loaded or compiled yet: what a
match job's agent meets. For the tests that its first move gets the time of the next ones."""

import subprocess
import sys

SCRIPT = """
import sys
import time
import numpy as np
from stapel_rl.env import engine
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.network_agents import UNLIMITED, MCTSAgent, load_evaluator
from stapel_rl.mcts import SearchConfig

build, moves, report = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(3)
state = engine.init("I", 1)
for _ in range(12):  # a middlegame position of Variant I
    state = engine.step(state, random_legal_actions(state.legal_action_mask, rng))
agent = eval(build)
for _ in range(moves):
    cpu = time.process_time()
    agent(state, rng)
    cpu = time.process_time() - cpu  # the process's CPU time in the call: what a stalled process lacks
    print(eval(report, {"agent": agent, "cpu": cpu}))
"""


def first_moves(build: str, moves: int, report: str) -> "list[str]":
    """``report`` (an expression of ``agent`` and ``cpu``, the call's CPU seconds) after each of ``moves`` calls
    on the same position by the agent ``build`` makes (an expression: ``make_agent("classical")``, or a class
    of ``stapel_rl.eval.network_agents``)."""
    command = [sys.executable, "-c", SCRIPT, build, str(moves), report]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split("\n")[:moves]
