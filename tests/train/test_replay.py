"""The replay buffer's growing window (KataGo's): its size, what it samples, what a checkpoint keeps."""

import numpy as np
import pytest

from stapel_rl.env import get_variant
from stapel_rl.train.replay import FIELDS, Positions, ReplayBuffer, growing_window

VARIANT = get_variant("I")


def numbered(first: int, n: int) -> Positions:
    """``n`` positions whose value target numbers them from ``first`` (the rest zeros: only identity matters)."""
    arrays = {k: np.zeros((n,) + shape, dtype) for k, (shape, dtype) in FIELDS.items()}
    arrays["value"] = np.arange(first, first + n, dtype=np.float32)
    return Positions(arrays)


def drawn(buffer: ReplayBuffer, seed: int = 0, n: int = 4000) -> np.ndarray:
    """The numbers of the ``n`` positions of a batch ``sample`` draws."""
    return buffer.sample(n, np.random.default_rng(seed)).value.astype(int)


def test_the_window_is_every_position_up_to_its_start_then_grows_slower_than_the_positions():
    window = growing_window(100, 0.4)
    assert [window(n) for n in (0, 50, 100)] == [0, 50, 100]
    # 100 * (1 + 0.4 * (16 ** 0.75 - 1) / 0.75) = 100 * (1 + 0.4 * 7 / 0.75)
    assert window(1600) == int(100 * (1 + 0.4 * 7 / 0.75)) == 473
    sizes = np.array([window(n) for n in range(100, 20000)])
    assert (np.diff(sizes) >= 0).all() and (np.diff(sizes) <= 1).all()  # a position that left never returns


def test_samples_come_from_the_newest_window_and_a_saved_buffer_draws_the_same_ones():
    buffer = ReplayBuffer(1000, VARIANT, growing_window(100, 0.4))
    for first in range(0, 1600, 200):
        buffer.add(numbered(first, 200))
    assert (len(buffer), buffer.added, buffer.sampled()) == (1000, 1600, 473)
    seen = drawn(buffer)
    assert seen.min() >= 1600 - 473 and seen.max() == 1599 and len(np.unique(seen)) > 400

    again = ReplayBuffer(1000, VARIANT, growing_window(100, 0.4))
    again.load_bytes(buffer.to_bytes())  # the window only: the 527 older positions are never drawn again
    assert (len(again), again.added, again.sampled()) == (473, 1600, 473)
    np.testing.assert_array_equal(drawn(again), seen)
    again.add(numbered(1600, 200))
    buffer.add(numbered(1600, 200))
    assert again.sampled() == buffer.sampled() == growing_window(100, 0.4)(1800)
    np.testing.assert_array_equal(drawn(again, seed=1), drawn(buffer, seed=1))


@pytest.mark.parametrize("window", [None, growing_window(10**6, 0.4)])
def test_a_fixed_window_and_a_window_not_yet_grown_sample_all_the_buffer_holds(window):
    buffer = ReplayBuffer(300, VARIANT, window)
    buffer.add(numbered(0, 500))  # only the newest 300 fit
    assert buffer.sampled() == 300
    again = ReplayBuffer(300, VARIANT, window)
    again.load_bytes(buffer.to_bytes())
    assert (len(again), again.added) == (300, 500)
    assert sorted(again.arrays["value"].astype(int)) == list(range(200, 500))
    assert set(drawn(again)) == set(range(200, 500))
