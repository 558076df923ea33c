"""One meaning of ``time=`` (a budget per decision of each game) and agents kept to their own variant.

An agent with a clock is called with one game at a time by every match
(``play_match``, so ``stapel-match``, ``stapel-tournament``, ``stapel-sprt``
and the training gate); an agent of one variant refuses a game of the other,
and the commands refuse it before any game (exit 2, naming both variants).
"""

import numpy as np
import pytest

from stapel_rl.classical.evaluation import weights_path
from stapel_rl.cli import match, sprt, tournament
from stapel_rl.env import init
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.eval import sprt as eval_sprt
from stapel_rl.eval.agents import check_variant, clock, make_agent
from stapel_rl.eval.arena import MatchResult, play_match
from stapel_rl.eval.parallel import agent_of
from stapel_rl.eval.sprt import SPRT, run_sprt
from stapel_rl.records import load_jsonl


class Counting:
    """A random agent that records how many games each call was for; ``seconds`` makes it one with a clock."""

    def __init__(self, name: str, seconds: "float | None" = None) -> None:
        self.name, self.seconds_per_decision, self.calls = name, seconds, []

    def __call__(self, state, rng):
        self.calls.append(state.batch_size)
        return random_legal_actions(state.legal_action_mask, rng)


@pytest.mark.parametrize("clocked", ["agent", "opponent"])
def test_a_clock_on_either_side_means_one_game_a_call_for_both(clocked):
    agent, opponent = (
        Counting("a", 0.5 if clocked == "agent" else None),
        Counting("b", 0.5 if clocked == "opponent" else None),
    )
    play_match(agent, opponent, "I", 6, np.random.default_rng(0))
    assert set(agent.calls) == {1} and set(opponent.calls) == {1}


def test_agents_without_a_clock_see_the_batch_unless_told_otherwise():
    agent, opponent = Counting("a"), Counting("b")
    play_match(agent, opponent, "I", 6, np.random.default_rng(0))
    assert agent.calls[0] == 3 and opponent.calls[0] == 3  # White's three games, then Black's, at the first move
    agent, opponent = Counting("a"), Counting("b")
    play_match(agent, opponent, "I", 6, np.random.default_rng(0), one_at_a_time=True)
    assert set(agent.calls) == {1} and set(opponent.calls) == {1}


def test_the_sprt_calls_a_clocked_agent_one_game_at_a_time():
    agent, opponent = Counting("a", 0.1), Counting("b")
    run_sprt(agent, opponent, init("I").variant, SPRT(), 2, 2, 4, seed=0, verbose=False)
    assert set(agent.calls) == {1} and set(opponent.calls) == {1}


def test_each_game_result_adds_up_to_the_match():
    games: "dict[int, MatchResult]" = {}
    whole = play_match(
        Counting("a"), Counting("b"), "II", 4, np.random.default_rng(3), on_game_result=games.__setitem__
    )
    assert sorted(games) == [0, 1, 2, 3]
    assert [games[g].scores[0] for g in range(4)] == whole.scores.tolist()
    assert [games[g].plies[0] for g in range(4)] == whole.plies.tolist()
    assert [games[g].agent_colour[0] for g in range(4)] == whole.agent_colour.tolist()
    assert sum(games[g].moves for g in range(4)).tolist() == whole.moves.tolist()
    np.testing.assert_allclose(sum(games[g].seconds for g in range(4)), whole.seconds)


def test_the_clocks_and_variants_of_the_spec_agents():
    assert clock(make_agent("classical")) == 1.0 and clock(make_agent("classical:time=0.2:depth=3")) == 0.2
    assert clock(make_agent("classical:depth=3")) is None and clock(make_agent("greedy")) is None
    assert clock(make_agent("mcts:variant_I:time=0.3")) == 0.3 and clock(make_agent("mcts:variant_I")) is None
    assert make_agent("mcts:variant_II:sims=2").variant == "II" and make_agent("policy:variant_I").variant == "I"
    assert make_agent(f"classical:eval={weights_path('II')}").variant == "II"
    assert make_agent("classical").variant is None and getattr(make_agent("greedy"), "variant", None) is None
    check_variant(make_agent("greedy"), "II")  # plays either


@pytest.mark.parametrize("spec", ["mcts:variant_I:sims=2", "policy:variant_I"])
def test_a_network_agent_refuses_a_game_of_the_other_variant(spec):
    agent = make_agent(spec)
    with pytest.raises(ValueError, match=rf"agent '{spec}' is made for Variant I and cannot play Variant II"):
        agent(init("II"), np.random.default_rng(0))
    assert agent(init("I"), np.random.default_rng(0)).shape == (1,)


def test_stapel_match_refuses_an_agent_of_the_other_variant_before_any_game(monkeypatch, capsys):
    monkeypatch.setattr(match, "play_in_parallel", lambda *a, **k: pytest.fail("a game was played"))
    assert match.main(["greedy", "mcts:variant_I:sims=2", "--variant", "II", "--games", "2"]) == 2
    err = capsys.readouterr().err
    assert "agent 'mcts:variant_I:sims=2' is made for Variant I and cannot play Variant II" in err
    spec = f"classical:depth=1:eval={weights_path('I')}"
    assert match.main([spec, "greedy", "--variant", "II", "--games", "2"]) == 2
    assert f"agent '{spec}' is made for Variant I and cannot play Variant II" in capsys.readouterr().err
    for games in ("0", "-4"):  # not a pair played anyway
        assert match.main(["greedy", "random", "--games", games]) == 2
        assert f"--games must be at least 1, got {games}" in capsys.readouterr().err


def test_stapel_sprt_refuses_an_agent_of_the_other_variant(capsys):
    assert sprt.main(["mcts:variant_II:sims=2", "greedy", "--variant", "I"]) == 2
    assert "made for Variant II and cannot play Variant I" in capsys.readouterr().err


def test_stapel_tournament_refuses_an_agent_of_the_other_variant(tmp_path, capsys):
    argv = ["greedy", "mcts:variant_I:sims=2", "--variant", "II", "--pairs", "1", "--out", str(tmp_path / "t")]
    assert tournament.main(argv) == 2
    assert "made for Variant I and cannot play Variant II" in capsys.readouterr().err
    assert load_jsonl(tmp_path / "t" / "games.jsonl") == []


def test_stapel_sprt_at_equal_time(monkeypatch, capsys):
    seen = {}

    def decided(a, b, variant, test, *args, one_at_a_time=False, **options):
        seen.update(a=a, b=b, one_at_a_time=one_at_a_time)
        return "H1"

    monkeypatch.setattr(sprt, "run_sprt", decided)
    assert sprt.main(["classical:depth=2", "classical:time=0.05", "--time", "0.2"]) == 0
    assert seen["a"] == "classical:depth=2:time=0.2" and clock(agent_of(seen["a"])) == 0.2
    assert seen["b"] == "classical:time=0.05" and clock(agent_of(seen["b"])) == 0.05  # time odds: the spec's own wins
    assert seen["one_at_a_time"] is True
    assert sprt.main(["greedy", "random"]) == 0 and seen["one_at_a_time"] is False
    capsys.readouterr()
    for bad in ("0", "-1", "inf"):
        assert sprt.main(["greedy", "random", "--time", bad]) == 2
        assert "--time must be a positive, finite number of seconds" in capsys.readouterr().err


def test_stapel_sprt_time_calls_agents_without_a_clock_one_game_at_a_time(monkeypatch):
    calls = []

    def single(*args, **kwargs):
        calls.append(kwargs["one_at_a_time"])
        return play_match(*args, **kwargs)

    monkeypatch.setattr(eval_sprt, "play_match", single)
    assert sprt.main(["greedy", "random", "--time", "0.5", "--batch-pairs", "2", "--max-pairs", "2"]) in (0, 1, 3)
    assert calls == [True]
