import pathlib
import signal
import sys

import pytest

# The tests mirror the package (tests/env, tests/mcts, ...); their helpers here (boards, trees,
# engine_process, the rules and alpha-beta oracles) import as top-level modules.
sys.path.insert(0, str(pathlib.Path(__file__).parent))


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler for the test, whatever the launching shell left: a job started in the
    background of a non-interactive shell inherits SIGINT ignored, and a Ctrl-C test would then hear nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
