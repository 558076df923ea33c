import pathlib
import sys

# The tests mirror the package (tests/env, tests/mcts, ...); their helpers here (boards, trees,
# engine_process, the rules and alpha-beta oracles) import as top-level modules.
sys.path.insert(0, str(pathlib.Path(__file__).parent))
