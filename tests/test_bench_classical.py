"""scripts/bench_classical.py: the random networks whose cost per node it times."""

from scripts import load_script
from stapel_rl.classical import Position, Searcher
from stapel_rl.classical.evaluation import load_weights
from stapel_rl.env import engine


def test_a_random_network_of_any_width_searches():
    script = load_script("bench_classical")
    for width in (8, 48):
        net = script.random_net("II", width)
        assert net.width == width and net.metadata["variant"] == "II"
        assert (net.weights == load_weights("II")).all()  # a correction of the hand-written evaluation
        result = Searcher("II", net=net).search(Position.from_state(engine.init("II", 1), 0), depth=2)
        assert result.nodes > 0 and len(result.path) >= 2
