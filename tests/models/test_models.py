"""The policy-value network, the masked softmax and the network evaluator."""

import dataclasses

import numpy as np
import pytest
import torch

from stapel_rl.env import concatenate, init, step, take
from stapel_rl.env.geometry import NUM_ACTIONS, ROTATE_ACTION
from stapel_rl.env.observation import NUM_PLANES, canonical_mask, encode, from_canonical_actions
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.models import (
    PRESETS,
    Evaluation,
    NetworkConfig,
    NetworkEvaluator,
    PolicyValueNet,
    masked_log_softmax,
)

TINY = PRESETS["tiny"]
TINY_POINTS = NetworkConfig(**{**TINY.__dict__, "points_head": True})


def random_states(batch: int, seed: int = 0, variant: str = "II"):
    """``batch`` games after 0, 1, 2, ... random plies: both sides to move, captures under way."""
    rng = np.random.default_rng(seed)
    state = init(variant, 1)
    states = []
    while len(states) < batch:
        if state.done[0]:
            state = init(variant, 1)
        states.append(state)
        state = step(state, random_legal_actions(state.legal_action_mask, rng))
    return concatenate(states)


def trained_bn_net(config: NetworkConfig, seed: int = 0) -> PolicyValueNet:
    """A net whose BN running statistics are no longer the identity, so eval vs train mode matters."""
    torch.manual_seed(seed)
    net = PolicyValueNet(config)
    net.train()
    with torch.no_grad():
        for _ in range(3):
            net(torch.from_numpy(encode(random_states(16, seed), config.layout, config.inputs)) * 3.0 + 0.5)
    return net


# --- network ---------------------------------------------------------------------------


@pytest.mark.parametrize("config", [TINY, TINY_POINTS])
def test_forward_shapes_and_points_head(config):
    net = PolicyValueNet(config)
    logits, value, points = net(torch.randn(5, NUM_PLANES, 10, 10))
    assert logits.shape == (5, NUM_ACTIONS)
    assert value.shape == (5,)
    if config.points_head:
        assert points is not None and points.shape == (5,)
    else:
        assert points is None and net.points_head is None


def test_presets_build_and_run():
    assert {"tiny", "small", "default"} <= PRESETS.keys()
    for name in PRESETS:
        net = PolicyValueNet(name).eval()
        logits, value, _ = net(torch.zeros(2, NUM_PLANES, 10, 10))
        assert logits.shape == (2, NUM_ACTIONS) and value.shape == (2,)
        assert net.num_parameters() > 0


def test_value_in_range_even_for_extreme_inputs():
    net = trained_bn_net(TINY_POINTS).eval()
    obs = torch.randn(8, NUM_PLANES, 10, 10) * 1e3
    _, value, points = net(obs)
    assert torch.all(value.abs() <= 1.0)
    assert torch.isfinite(points).all()  # unbounded, but finite


# --- masked softmax --------------------------------------------------------------------


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The probabilities of ``masked_log_softmax``: exactly 0 where illegal."""
    return torch.where(mask, masked_log_softmax(logits, mask).exp(), 0.0)


def test_masked_softmax_matches_softmax_on_legal_entries():
    torch.manual_seed(0)
    logits = torch.randn(6, NUM_ACTIONS)
    mask = torch.rand(6, NUM_ACTIONS) < 0.3
    mask[:, 0] = True
    probs = masked_softmax(logits, mask)
    expected = torch.softmax(logits.masked_fill(~mask, -torch.inf), dim=-1)
    torch.testing.assert_close(probs, expected)
    assert torch.all(probs[~mask] == 0)
    log_probs = masked_log_softmax(logits, mask)
    torch.testing.assert_close(log_probs[mask], expected.log()[mask])


def test_masked_softmax_never_nan():
    inf = torch.inf
    logits = torch.tensor(
        [
            [1.0, 2.0, 3.0, 4.0],  # all illegal
            [1e30, -1e30, 3e38, 5.0],  # huge values
            [-inf, -inf, 0.0, -inf],  # -inf, including on a legal entry
            [-inf, -inf, -inf, -inf],  # every legal logit -inf
            [inf, 1.0, inf, -inf],  # +inf
            [-3e38, -3e38, 7.0, 7.0],  # huge negative on legal entries
        ]
    )
    mask = torch.tensor(
        [
            [False, False, False, False],
            [True, True, False, True],
            [True, False, True, False],
            [True, True, False, False],
            [True, True, True, False],
            [True, False, True, False],
        ]
    )
    probs = masked_softmax(logits, mask)
    log_probs = masked_log_softmax(logits, mask)
    assert not torch.isnan(probs).any() and not torch.isnan(log_probs).any()
    assert not torch.isinf(log_probs).any()
    assert torch.all(probs[~mask] == 0)
    assert torch.all(probs[0] == 0)
    torch.testing.assert_close(probs[1:].sum(-1), torch.ones(5))
    assert probs[1, 0] == 1.0  # 1e30 dominates; 3e38 is illegal
    assert probs[2].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert probs[3].tolist() == [0.5, 0.5, 0.0, 0.0]
    assert probs[4].tolist() == [0.5, 0.0, 0.5, 0.0]
    assert probs[5].tolist() == [0.0, 0.0, 1.0, 0.0]


def test_masked_log_softmax_cross_entropy_and_gradient_are_finite():
    # The usual policy loss -(target * log_probs).sum() must not be NaN at zero targets.
    logits = torch.tensor([[0.5, -torch.inf, 2.0, 1e30], [1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    mask = torch.tensor([[True, True, True, False], [False, False, False, False]])
    target = torch.tensor([[0.25, 0.0, 0.75, 0.0], [0.0, 0.0, 0.0, 0.0]])
    loss = -(target * masked_log_softmax(logits, mask)).sum()
    loss.backward()
    assert torch.isfinite(loss)
    assert torch.isfinite(logits.grad).all()
    assert torch.all(logits.grad[~mask] == 0)


# --- evaluator -------------------------------------------------------------------------


class FixedPolicy(PolicyValueNet):
    """The tiny net with its forward replaced: row i's canonical logits are ``canonical_logits[i]``."""

    def __init__(self, canonical_logits: torch.Tensor) -> None:
        super().__init__(TINY)
        self.canonical_logits = canonical_logits

    def forward(self, obs):
        b = obs.shape[0]
        return self.canonical_logits[:b].clone(), torch.zeros(b), None


def test_evaluator_maps_canonical_ids_to_board_ids():
    state = random_states(12, seed=1)
    black = state.current_player == 1
    assert black.any() and (~black).any()
    # Canonical logit c equals c: the board logits then spell out the permutation.
    ramp = torch.arange(NUM_ACTIONS, dtype=torch.float32).repeat(12, 1)
    logits = NetworkEvaluator(FixedPolicy(ramp), device="cpu")(state).logits
    np.testing.assert_array_equal(logits[black], np.tile(ROTATE_ACTION, (black.sum(), 1)))
    np.testing.assert_array_equal(logits[~black], np.tile(np.arange(NUM_ACTIONS), ((~black).sum(), 1)))


def test_evaluator_one_hot_on_a_legal_canonical_id_picks_that_legal_board_action():
    state = random_states(12, seed=2)
    state = take(state, ~state.done)
    rng = np.random.default_rng(0)
    canonical_choice = random_legal_actions(canonical_mask(state), rng)
    one_hot = torch.nn.functional.one_hot(torch.from_numpy(canonical_choice), NUM_ACTIONS).float() * 10.0
    evaluation = NetworkEvaluator(FixedPolicy(one_hot), device="cpu")(state)
    board_logits = np.where(state.legal_action_mask, evaluation.logits, -np.inf)
    chosen = board_logits.argmax(axis=1)
    assert state.legal_action_mask[np.arange(len(chosen)), chosen].all()
    np.testing.assert_array_equal(chosen, from_canonical_actions(canonical_choice, state.current_player))
    black = state.current_player == 1
    np.testing.assert_array_equal(chosen[black], ROTATE_ACTION[canonical_choice[black]])


@pytest.mark.parametrize("config", [TINY, TINY_POINTS])
def test_evaluator_chunking_matches_one_batch(config):
    state = random_states(23, seed=3)
    net = trained_bn_net(config)
    whole = NetworkEvaluator(net, device="cpu", max_batch=1024, precision="fp32")(state)
    chunked = NetworkEvaluator(net, device="cpu", max_batch=5, precision="fp32")(state)
    assert isinstance(whole, Evaluation)
    assert whole.logits.dtype == np.float32 and whole.value.dtype == np.float32
    assert whole.logits.shape == (23, NUM_ACTIONS) and whole.value.shape == (23,)
    np.testing.assert_allclose(chunked.logits, whole.logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(chunked.value, whole.value, rtol=1e-5, atol=1e-6)
    if config.points_head:
        assert whole.points.shape == (23,) and whole.points.dtype == np.float32
        np.testing.assert_allclose(chunked.points, whole.points, rtol=1e-5, atol=1e-5)
    else:
        assert whole.points is None and chunked.points is None


def test_evaluator_runs_in_eval_mode_and_restores_mode():
    net = trained_bn_net(TINY_POINTS)
    assert net.training
    before = {k: v.clone() for k, v in net.state_dict().items()}
    evaluator = NetworkEvaluator(net, device="cpu", precision="fp32")
    state = random_states(9, seed=4)
    evaluation = evaluator(state)
    assert net.training  # the caller's mode is restored
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k]), k  # running stats untouched
    # Eval mode: each position's output does not depend on the rest of the batch.
    single = evaluator(take(state, np.array([4])))
    np.testing.assert_allclose(single.value, evaluation.value[4:5], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(single.logits, evaluation.logits[4:5], rtol=1e-5, atol=1e-5)


def test_evaluator_counts_positions_and_time():
    evaluator = NetworkEvaluator(PolicyValueNet(TINY), device="cpu", max_batch=4)
    assert evaluator.positions == 0 and evaluator.positions_per_second == 0.0
    evaluator(random_states(10))
    assert evaluator.positions == 10 and evaluator.seconds > 0
    first = evaluator.seconds
    evaluator(init("I", 3))
    assert evaluator.positions == 13 and evaluator.seconds > first
    assert evaluator.positions_per_second == pytest.approx(13 / evaluator.seconds)
    evaluator.reset_stats()
    assert evaluator.positions == 0 and evaluator.seconds == 0.0


def test_evaluator_empty_batch():
    state = take(init("II", 2), np.zeros(0, dtype=np.int64))
    evaluation = NetworkEvaluator(PolicyValueNet(TINY_POINTS), device="cpu")(state)
    assert evaluation.logits.shape == (0, NUM_ACTIONS)
    assert evaluation.value.shape == (0,) and evaluation.points.shape == (0,)


def test_evaluator_auto_device_and_bad_max_batch():
    evaluator = NetworkEvaluator(PolicyValueNet(TINY), device="auto")
    assert evaluator.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError):
        NetworkEvaluator(PolicyValueNet(TINY), max_batch=0)


# --- the compact layout ----------------------------------------------------------------

TINY_COMPACT = NetworkConfig(**{**TINY.__dict__, "layout": "compact", "points_head": True})


def test_compact_network_shapes_and_parity_plane():
    net = PolicyValueNet(TINY_COMPACT).eval()
    state = random_states(7, seed=5)
    logits, value, points = net(torch.from_numpy(encode(state, "compact")))
    assert logits.shape == (7, NUM_ACTIONS) and value.shape == (7,) and points.shape == (7,)
    # Row 0 (Black's back row, dark squares on odd columns) is even: its neighbours below are slots k, k+1.
    np.testing.assert_array_equal(net.parity[0, 0, :, 0].numpy(), [1, 0, 1, 0, 1, 0, 1, 0, 1, 0])
    assert net.stem[0][0].in_channels == NUM_PLANES + 1
    # Half the cells: the heads read 50 features per plane.
    assert net.policy_out.in_features == TINY_COMPACT.policy_channels * 50
    assert "parity" not in net.state_dict()  # rebuilt from the config, not stored


@pytest.mark.parametrize("layout", ["grid", "compact"])
def test_conv_policy_head_reads_each_action_at_its_square(layout):
    # Action 4 * sq + d is plane d of the head's last convolution, at the cell where square sq
    # lies: (ROW, COL) of the 10x10 board, or (row, slot) = (sq // 5, sq % 5) of the compact grid.
    from stapel_rl.env.geometry import COL, NUM_SQUARES, ROW
    from stapel_rl.models.fused import inference_copy

    config = NetworkConfig(blocks=1, channels=8, value_hidden=16, layout=layout, policy_head="conv")
    net = trained_bn_net(config, seed=3).eval()
    planes = {}
    net.policy_conv.register_forward_hook(lambda module, args, out: planes.setdefault("out", out))
    state = random_states(6, seed=9)
    logits, _, _ = net(torch.from_numpy(encode(state, layout)))
    out = planes["out"]
    assert out.shape[1] == 4 and not hasattr(net, "policy_out")
    sq = np.arange(NUM_SQUARES)
    rows, cols = (ROW, COL) if layout == "grid" else (sq // 5, sq % 5)
    for d in range(4):
        torch.testing.assert_close(logits[:, 4 * sq + d], out[:, d, rows, cols])
    # The inference copy (batch norm folded) computes the same logits.
    fast = inference_copy(net, "fp32")
    fast_logits, _, _ = fast(torch.from_numpy(encode(state, layout)).contiguous(memory_format=torch.channels_last))
    torch.testing.assert_close(fast_logits, logits, atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="policy_head"):
        NetworkConfig(policy_head="attention")


@pytest.mark.parametrize("layout", ["grid", "compact"])
def test_a_pooling_value_head_reads_every_channel_over_the_whole_board(layout):
    from stapel_rl.models.fused import inference_copy
    from stapel_rl.models.network import PoolHead

    config = NetworkConfig(blocks=1, channels=8, value_hidden=16, layout=layout, value_head="pool", points_head=True)
    net = trained_bn_net(config, seed=4).eval()
    assert isinstance(net.value_head, PoolHead) and isinstance(net.points_head, PoolHead)
    assert net.value_head.hidden.in_features == 16  # mean and maximum of 8 channels, whatever the layout
    obs = torch.from_numpy(encode(random_states(5, seed=2), layout))
    logits, value, points = net(obs)
    assert logits.shape == (5, NUM_ACTIONS) and value.shape == (5,) and points is not None and points.shape == (5,)
    # By hand: the head's 1x1 conv and ReLU, each channel's mean and maximum over the cells, the MLP.
    h = torch.relu(net.value_head.reduce(net.tower(net.stem(obs if layout == "grid" else net_input(net, obs)))))
    pooled = torch.cat([h.flatten(2).mean(2), h.flatten(2).amax(2)], dim=1)
    by_hand = torch.tanh(net.value_head.out(torch.relu(net.value_head.hidden(pooled))).squeeze(1))
    torch.testing.assert_close(value, by_hand)
    fast = inference_copy(net, "fp32")
    _, fast_value, fast_points = fast(obs.contiguous(memory_format=torch.channels_last))
    torch.testing.assert_close(fast_value, value, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(fast_points, points, atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="value_head"):
        NetworkConfig(value_head="attention")


def net_input(net: PolicyValueNet, obs: torch.Tensor) -> torch.Tensor:
    """The compact layout's input with the row-parity plane the network adds."""
    return torch.cat([obs, net.parity.expand(obs.shape[0], -1, -1, -1)], dim=1)


def test_network_rejects_planes_of_the_other_layout():
    with pytest.raises(ValueError, match=r"compact network of base inputs takes planes \[B, 18, 10, 5\]"):
        PolicyValueNet(TINY_COMPACT)(torch.zeros(2, NUM_PLANES, 10, 10))
    with pytest.raises(ValueError, match=r"grid network of base inputs takes planes \[B, 18, 10, 10\]"):
        PolicyValueNet(TINY)(torch.zeros(2, NUM_PLANES, 10, 5))
    with pytest.raises(ValueError, match="layout"):
        NetworkConfig(layout="hex")


@pytest.mark.parametrize("layout", ["grid", "compact"])
def test_a_network_of_move_planes_reads_them_in_every_path(layout):
    from stapel_rl.models.fused import inference_copy

    config = dataclasses.replace(TINY, layout=layout, inputs="moves")
    net = trained_bn_net(config, seed=3).eval()
    assert net.inputs == "moves" and net.stem[0][0].in_channels == 22 + (layout == "compact")
    with pytest.raises(ValueError, match=r"of moves inputs takes planes \[B, 22, "):
        net(torch.from_numpy(encode(random_states(2, seed=1), layout)))  # the base planes only
    state = random_states(6, seed=6)
    with torch.no_grad():
        logits, value, _ = net(torch.from_numpy(encode(state, layout, "moves")))
    evaluation = NetworkEvaluator(net, "cpu", precision="fp32", fold=False)(state)
    np.testing.assert_allclose(evaluation.value, value.numpy(), rtol=1e-5, atol=1e-6)
    fast = inference_copy(net, "fp32")
    planes = torch.from_numpy(encode(state, layout, "moves"))
    _, fast_value, _ = fast(planes.contiguous(memory_format=torch.channels_last))
    torch.testing.assert_close(fast_value, value, atol=1e-4, rtol=1e-4)
    # The move planes reach the output: clearing them changes the value.
    planes = encode(state, layout, "moves")
    planes[:, NUM_PLANES:] = 0
    with torch.no_grad():
        assert not torch.allclose(net(torch.from_numpy(planes))[1], value)
    with pytest.raises(ValueError, match="inputs"):
        NetworkConfig(inputs="rich")


def test_evaluator_encodes_in_the_network_layout():
    net = trained_bn_net(TINY)  # grid
    compact = PolicyValueNet(TINY_COMPACT)
    state = random_states(6, seed=6)
    assert NetworkEvaluator(compact, "cpu")(state).logits.shape == (6, NUM_ACTIONS)
    evaluation = NetworkEvaluator(net, "cpu", precision="fp32", fold=False)(state)
    net.eval()
    with torch.no_grad():
        logits, value, _ = net(torch.from_numpy(encode(state, "grid")))
    np.testing.assert_allclose(evaluation.value, value.numpy(), rtol=1e-5, atol=1e-6)
