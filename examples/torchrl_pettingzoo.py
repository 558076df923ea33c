"""TorchRL on the PettingZoo env: random rollouts, then a masked policy network shared by both players.

    pip install -e ".[torchrl]"
    python examples/torchrl_pettingzoo.py --variant II --games 3

``torchrl.envs.PettingZooWrapper`` wraps the AEC env (``use_mask=True``, as
TorchRL requires for turn-based games). Each player is a group of its own
(``player_0``, ``player_1``) with ``observation``, ``action_mask`` (the legal
canonical actions; all True for the player not to move, whose action is
ignored), ``mask`` (whether it is that player's turn), ``reward``, ``done`` and
``info`` (the same keys all game, as the wrapper's info spec needs).

``env.rollout`` without a policy draws ``env.rand_action``, which respects the
action mask: uniformly random legal play. The second part builds one policy
network for both groups (observations and actions are canonical, so the same
weights play either colour) and samples with ``MaskedCategorical``.
"""

from __future__ import annotations

import argparse

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.envs import PettingZooWrapper
from torchrl.envs.utils import ExplorationType, check_env_specs, set_exploration_type
from torchrl.modules import MaskedCategorical, ProbabilisticActor

from stapel_rl.env.pettingzoo_env import env as stapel_aec_env

#: Enough steps (single actions) for any game under the default ply cap of 600.
MAX_STEPS = 20_000


def make_env(variant: str, seed: int) -> PettingZooWrapper:
    return PettingZooWrapper(env=stapel_aec_env(variant=variant), use_mask=True, seed=seed)


def shared_policy(env: PettingZooWrapper) -> TensorDictSequential:
    """One MLP over the canonical planes for both players, sampling a legal action per group."""
    net = nn.Sequential(nn.Flatten(-3), nn.Linear(18 * 10 * 10, 128), nn.Tanh(), nn.Linear(128, 200))
    actors = []
    for group in env.group_map:
        logits = TensorDictModule(net, in_keys=[(group, "observation", "observation")], out_keys=[(group, "logits")])
        actors.append(
            ProbabilisticActor(
                logits,
                in_keys={"logits": (group, "logits"), "mask": (group, "action_mask")},
                out_keys=[(group, "action")],
                distribution_class=MaskedCategorical,
                return_log_prob=True,
                log_prob_key=(group, "log_prob"),
            )
        )
    return TensorDictSequential(*actors)


def describe(rollout, env: PettingZooWrapper) -> str:
    last = rollout[-1]["next"]
    rewards = {group: float(last[group, "reward"].sum()) for group in env.group_map}
    return f"{rollout.batch_size[0]} actions, done={bool(last['done'])}, rewards {rewards}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", default="I", choices=["I", "II"])
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    env = make_env(args.variant, args.seed)
    check_env_specs(env)
    print("groups:", env.group_map)
    for game in range(args.games):
        print(f"random game {game}:", describe(env.rollout(MAX_STEPS, break_when_any_done=True), env))
    policy = shared_policy(env)
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):  # sample (the default plays the mode)
        for game in range(args.games):
            rollout = env.rollout(MAX_STEPS, policy=policy, break_when_any_done=True)
            print(f"policy game {game}:", describe(rollout, env))


if __name__ == "__main__":
    main()
