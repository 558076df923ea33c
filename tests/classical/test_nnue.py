"""The learned evaluation of the classical search: inputs, the incremental accumulator, files, the agent."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch
from boards import fen

from scripts import load_script
from stapel_rl.classical import features, nnue
from stapel_rl.classical.board import board_key, occupancy
from stapel_rl.classical.evaluation import (
    FEATURES,
    NUM_FEATURES,
    evaluate,
    evaluate_incremental,
    load_weights,
    square_sum,
)
from stapel_rl.classical.incremental import play
from stapel_rl.classical.movegen import MAX_MOVES, generate, new_move_buffer, new_scratch
from stapel_rl.classical.position import Position
from stapel_rl.classical.searcher import Searcher
from stapel_rl.env import engine, initial_fen
from stapel_rl.env.variants import get_variant
from stapel_rl.eval.agents import make_agent

PREVIOUS = pathlib.Path(__file__).parents[2] / "tournaments" / "nnue_0.2.0"  # the networks packaged in 0.2.0


def random_net(seed: int = 0, width: int = 8, hidden: int = 4) -> nnue.Net:
    rng = np.random.default_rng(seed)
    return nnue.from_float(
        rng.normal(0.0, 0.1, (nnue.NUM_INPUTS, width)),
        rng.normal(0.2, 0.1, width),
        rng.normal(0.0, 0.5, (hidden, 2 * width + nnue.NUM_EXTRA)),
        rng.normal(0.0, 0.1, hidden),
        rng.normal(0.0, 1.0, hidden),
        0.1,
        500.0,
        load_weights("I"),
        {"variant": "I"},
    )


def expected_input(square: int, stack: str, view: str) -> int:
    """The docstring's definition, from the stack's text (top man first): square seen from ``view``,
    top own or not, height 1..5, men of the other colour than the top 0..3."""
    top = stack[0]
    seen = square if view == "w" else 49 - square
    return (
        seen * 40
        + (0 if top == view else 20)
        + (min(len(stack), 5) - 1) * 4
        + min(stack.count("bw".replace(top, "")), 3)
    )


def test_inputs_follow_the_definition_square_by_square():
    stacks = {1: "w", 6: "bww", 23: "wbbbbw", 30: "bwbwwb", 47: "ww", 50: "b"}
    pos = Position.from_fen(fen("W", stacks))
    inputs, extra = np.empty((2, 50), np.int64), np.empty(2, np.int64)
    nnue.inputs_into(pos.h, pos.c, inputs, extra)
    for v, view in enumerate("wb"):
        got = sorted(i for i in inputs[v] if i < nnue.NUM_INPUTS)
        assert got == sorted(expected_input(n - 1, s, view) for n, s in stacks.items())
    assert (inputs[:, len(stacks) :] == nnue.NUM_INPUTS).all()


def test_black_view_of_a_turned_board_is_whites_view():
    # Turning the board by 180 degrees and swapping the colours swaps the two points of view.
    stacks = {3: "wb", 18: "bbw", 27: "w", 44: "bwww"}
    swap = {"w": "b", "b": "w"}
    turned = {51 - n: "".join(swap[m] for m in s) for n, s in stacks.items()}
    a, b = (Position.from_fen(fen("W", x)) for x in (stacks, turned))
    ia, ib = np.empty((2, 50), np.int64), np.empty((2, 50), np.int64)
    extra = np.empty(2, np.int64)
    nnue.inputs_into(a.h, a.c, ia, extra)
    nnue.inputs_into(b.h, b.c, ib, extra)
    assert sorted(ia[0]) == sorted(ib[1]) and sorted(ia[1]) == sorted(ib[0])


@pytest.mark.parametrize("variant_name", ["I", "II"])
def test_incremental_accumulator_equals_a_full_recomputation(variant_name):
    variant, net = get_variant(variant_name), random_net(1)
    weights = load_weights(variant_name)
    rng = np.random.default_rng(5)
    buffer, scratch = new_move_buffer(1)[0], new_scratch()
    checked = tall = 0
    for _ in range(6):
        pos = Position.from_fen(initial_fen(variant))
        plies = 120
        keys, occ = np.zeros(plies + 1, np.uint64), np.zeros((plies + 1, 2), np.uint64)
        sums, accs = np.zeros(plies + 1, np.int64), np.zeros((plies + 1, 2, net.width), np.int32)
        h, c, side = pos.h.copy(), pos.c.copy(), pos.side
        keys[0], occ[0], sums[0] = board_key(h, c, side), occupancy(h, c), square_sum(h, c, weights)
        nnue.refresh(h, c, accs[0], net.emb, net.bias)
        for ply in range(plies):
            n, _ = generate(h, c, side, -1, -1, buffer, scratch)
            if n == 0:
                break
            play(
                h,
                c,
                buffer[int(rng.integers(min(n, MAX_MOVES)))].copy(),
                ply,
                keys,
                occ,
                sums,
                weights,
                accs,
                net.emb,
                True,
            )
            side = 1 - side
            fresh = np.zeros((2, net.width), np.int32)
            nnue.refresh(h, c, fresh, net.emb, net.bias)
            np.testing.assert_array_equal(accs[ply + 1], fresh)
            assert nnue.forward(accs[ply + 1], side, 0, 0, net.w1, net.b1, net.w2, net.head) == nnue.forward(
                fresh, side, 0, 0, net.w1, net.b1, net.w2, net.head
            )
            # The hand-written evaluation the search computes from its incremental state is evaluate's too.
            incremental = evaluate_incremental(side, occ[ply + 1, 0], occ[ply + 1, 1], sums[ply + 1], weights)
            assert incremental == evaluate(h, c, side, weights, np.zeros(NUM_FEATURES, np.int64))
            checked += 1
            tall += int(h.max() >= 4)
    assert checked > 300 and tall > 0  # long games, tall stacks among them


@pytest.mark.parametrize("side", ["W", "B"])
def test_the_search_evaluation_counts_the_side_with_fewer_moves_signed(side):
    # White's man on the edge (46) has one plain move, Black's two men (13, 24) in open play four: the
    # mobility difference is negative from White's view, where a difference of unsigned counts would wrap.
    pos = Position.from_fen(fen(side, {46: "w", 13: "b", 24: "b"}))
    weights = load_weights("I")
    white, black = occupancy(pos.h, pos.c)
    mobility = features(pos.h, pos.c, 0)[FEATURES.index("mobility")]
    assert mobility == 1 - 4
    full = evaluate(pos.h, pos.c, pos.side, weights, np.zeros(NUM_FEATURES, np.int64))
    assert evaluate_incremental(pos.side, white, black, square_sum(pos.h, pos.c, weights), weights) == full


def test_a_saved_net_loads_with_the_same_arrays_and_bad_files_say_why(tmp_path):
    net = random_net(2)
    path = nnue.save(net, tmp_path / "n.npz")
    back = nnue.load(path)
    for a, b in zip(net.arrays(), back.arrays(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert back.metadata == {"variant": "I"} and not list(tmp_path.glob("*.tmp"))
    with pytest.raises(ValueError, match="does not exist"):
        nnue.load(tmp_path / "missing.npz")
    (tmp_path / "bad.npz").write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match="cannot be read"):
        nnue.load(tmp_path / "bad.npz")
    arrays = dict(zip(("emb", "bias", "w1", "b1", "w2", "head"), net.arrays(), strict=True))
    arrays["emb"] = net.emb[:10]
    np.savez(tmp_path / "shapes.npz", **arrays, weights=net.weights, metadata=np.array("{}"))
    with pytest.raises(ValueError, match="inconsistent shapes"):
        nnue.load(tmp_path / "shapes.npz")


def test_the_searcher_with_a_net_plays_legal_moves_and_scores_by_the_net():
    net = random_net(3)
    pos = Position.from_fen(initial_fen(get_variant("I")))
    result = Searcher("I", net=net).search(pos, depth=1)
    # Depth 1: the score is the best child's evaluation (hand-written plus the net's correction).
    buffer, scratch = new_move_buffer(1)[0], new_scratch()
    n, _ = generate(pos.h, pos.c, pos.side, -1, -1, buffer, scratch)
    children = [pos.after(buffer[i].copy()) for i in range(n)]
    assert result.score == max(-net.evaluate(ch.h, ch.c, ch.side) for ch in children)
    assert Searcher("I").search(pos, depth=1).score != result.score


def test_the_agent_takes_a_net_file_and_checks_its_variant(tmp_path):
    path = nnue.save(random_net(4), tmp_path / "n.npz")
    agent = make_agent(f"classical:nodes=300:eval={path}")
    state = engine.init(get_variant("I"), 2)
    actions = agent(state, np.random.default_rng(0))
    assert state.legal_action_mask[np.arange(2), actions].all()
    with pytest.raises(ValueError, match="for Variant I"):
        agent(engine.init(get_variant("II"), 1), np.random.default_rng(0))
    with pytest.raises(ValueError, match="does not exist"):
        make_agent(f"classical:eval={tmp_path / 'none.npz'}")


@pytest.mark.parametrize("name", ["I", "II"])
def test_eval_nnue_is_the_packaged_network_of_the_variant(name):
    agent = make_agent("classical:nodes=300:eval=nnue")
    state = engine.init(get_variant(name), 1)
    assert state.legal_action_mask[0, agent(state, np.random.default_rng(0))[0]]
    packaged = nnue.load(nnue.packaged_path(name))
    assert agent.searcher(get_variant(name)).net.metadata == packaged.metadata
    # A generation of the minimax loop that its gate promoted and that fits held-out games better than the
    # network it started from (the one packaged before, kept by path for comparisons).
    assert packaged.metadata["variant"] == name and packaged.metadata["procedure"] == "stapel-train loop=minimax"
    assert packaged.metadata["gate"]["promoted"] and packaged.metadata["gate"]["status"] == "H1"
    assert packaged.metadata["validation_log_loss"] < packaged.metadata["start_log_loss"]
    before = make_agent(f"classical:nodes=300:eval={PREVIOUS / f'nnue_{name}.npz'}").searcher(get_variant(name)).net
    assert before.metadata["holdout_log_loss"]["network"] < before.metadata["holdout_log_loss"]["hand_written"]
    assert not np.array_equal(before.emb, packaged.emb) and before.head[1] == packaged.head[1]  # one scale k


def test_the_trained_model_computes_what_the_search_computes():
    module = load_script("train_eval")
    torch.manual_seed(0)
    model = module.Model(8, 4)
    net = nnue.from_float(
        model.emb.weight.detach().numpy()[: nnue.NUM_INPUTS],
        model.bias.detach().numpy(),
        model.hidden.weight.detach().numpy(),
        model.hidden.bias.detach().numpy(),
        model.out.weight.detach().numpy()[0],
        float(model.out.bias.item()),
        400.0,
        load_weights("II"),
        {},
    )
    state = engine.init(get_variant("II"), 1)
    rng = np.random.default_rng(1)
    for _ in range(40):
        pos = Position.from_state(state, 0)
        if pos.capturing < 0:
            inputs, extra = np.empty((2, 50), np.int64), np.empty(2, np.int64)
            nnue.inputs_into(pos.h, pos.c, inputs, extra)
            base = float(features(pos.h, pos.c, pos.side) @ net.weights) / 400.0  # the skip connection, a logit
            with torch.no_grad():
                logit = model(
                    torch.from_numpy(inputs[None]),
                    torch.from_numpy(extra[None]),
                    torch.tensor([pos.side]),
                    torch.tensor([base]),
                )
            assert net.evaluate(pos.h, pos.c, pos.side) == pytest.approx(400.0 * logit.item(), abs=1.5)
        legal = np.flatnonzero(state.legal_action_mask[0])
        state = engine.step(state, np.array([rng.choice(legal)]))
