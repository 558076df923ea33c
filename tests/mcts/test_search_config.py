"""SearchConfig refuses constants that would silently make another search."""

import math

import pytest

from stapel_rl.mcts import SearchConfig


@pytest.mark.parametrize(
    "field,value",
    [
        ("c_puct", 0.0),
        ("c_puct", -1.5),
        ("c_puct", math.inf),
        ("c_scale", 0.0),
        ("c_scale", math.nan),
        ("c_visit", -1.0),
        ("min_span", 0.0),
        ("min_span", 2.5),
        ("min_span", math.nan),
        ("max_considered", 0),
        ("dirichlet_fraction", 1.5),
        ("dirichlet_alpha", 0.0),
        ("temperature", -1.0),
        ("num_simulations", 0),
        ("leaves_per_call", 0),
        ("algorithm", "uct"),
    ],
)
def test_a_bad_constant_is_refused_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        SearchConfig(**{field: value})


def test_the_edges_of_each_range_are_allowed():
    config = SearchConfig(c_visit=0.0, dirichlet_fraction=0.0, temperature=0.0, max_considered=1)
    assert (config.c_visit, config.dirichlet_fraction, config.temperature, config.max_considered) == (0, 0, 0, 1)
    assert SearchConfig(dirichlet_fraction=1.0).dirichlet_fraction == 1.0
    assert SearchConfig(min_span=2.0).min_span == 2.0
