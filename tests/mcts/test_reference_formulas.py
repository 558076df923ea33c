"""The search's vectorised selection, backup and priors against the plain formulas they replaced."""

import importlib

import numpy as np
import pytest
from searches import ALGORITHMS, UNIFORM, random_positions
from trees import check_tree

from stapel_rl.env import VARIANT_I, VARIANT_II, init, step
from stapel_rl.mcts import SearchConfig, allocate, gumbel, halving, qtransforms, search, subtree
from stapel_rl.mcts.expand import softmax_live
from stapel_rl.mcts.tree import ILLEGAL_VALUE
from stapel_rl.models.evaluator import Evaluation

# ------------------------------------------------ Gumbel selection against the plain formulas
# The search keeps per-action arrays at the roots, makes its in-tree choices
# right after backup (caching them per node) and works on visited children
# only; these are the straightforward versions it replaced, which recompute
# everything from the tree when the descent needs it. Both must choose alike.


def reference_log_prior(tree, games, nodes):
    prior = tree.children_prior[games, nodes]
    with np.errstate(divide="ignore"):
        return np.where(tree.legal[games, nodes], np.log(np.maximum(prior, 1e-30)), -np.inf).astype(np.float32)


def reference_completed_q(tree, games, nodes):
    visits = tree.children_visits[games, nodes].astype(np.float32)
    q = tree.children_values[games, nodes]
    prior = tree.children_prior[games, nodes]
    total = visits.sum(axis=1)
    visited_prior = np.where(visits > 0, prior, 0).sum(axis=1)
    weighted_q = np.where(visits > 0, prior * q, 0).sum(axis=1)
    policy_q = np.divide(weighted_q, visited_prior, out=np.zeros_like(weighted_q), where=visited_prior > 0)
    mixed = (tree.raw_values[games, nodes] + total * policy_q) / (1.0 + total)
    return np.where(visits > 0, q, mixed[:, None])


def reference_sigma(tree, games, nodes, c_visit, c_scale, min_span=1e-8):
    visits = tree.children_visits[games, nodes].astype(np.float32)
    legal = tree.legal[games, nodes]
    completed = reference_completed_q(tree, games, nodes)
    low = np.where(legal, completed, np.inf).min(axis=1, keepdims=True)
    high = np.where(legal, completed, -np.inf).max(axis=1, keepdims=True)
    scaled = (completed - low) / np.maximum(high - low, min_span)
    return ((c_visit + visits.max(axis=1, keepdims=True)) * c_scale * scaled).astype(np.float32)


def reference_improved_policy(tree, games, nodes, c_visit, c_scale, min_span=1e-8):
    z = reference_log_prior(tree, games, nodes) + reference_sigma(tree, games, nodes, c_visit, c_scale, min_span)
    z = z - np.max(z, axis=1, keepdims=True, initial=-1e30, where=np.isfinite(z))
    e = np.where(np.isfinite(z), np.exp(z), 0.0)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0).astype(np.float32)


def reference_interior_scores(tree, games, nodes, c_visit, c_scale, min_span=1e-8):
    policy = reference_improved_policy(tree, games, nodes, c_visit, c_scale, min_span)
    visits = tree.children_visits[games, nodes].astype(np.float32)
    share = visits / (1.0 + visits.sum(axis=1, keepdims=True))
    return np.where(tree.legal[games, nodes], policy - share, -np.inf)


def assert_best_interior_choice(tree, games, nodes, chosen, c_visit, c_scale, min_span=1e-8):
    """``chosen`` scores within 1e-6 of the plain formula's best at every node (the fast choice rounds
    differently, so it may take another action only at a near-tie); returns how many choices differ."""
    scores = reference_interior_scores(tree, games, nodes, c_visit, c_scale, min_span)
    picked = scores[np.arange(games.size), chosen]
    best = scores.max(axis=1)
    assert (picked >= best - 1e-6).all(), f"choice {(best - picked).max():.3g} below the best score"
    return int((chosen != scores.argmax(axis=1)).sum())


def reference_root_scores(tree, noise, c_visit, c_scale, min_span=1e-8):
    games, roots = np.arange(tree.batch_size), np.zeros(tree.batch_size, np.int64)
    sigma = reference_sigma(tree, games, roots, c_visit, c_scale, min_span)
    return noise + reference_log_prior(tree, games, roots) + sigma


class ReferenceRoot:
    """Stands in for ``halving.Root``: rescores every root action at every simulation."""

    def __init__(self, tree, noise, base_visits, max_considered, num_simulations, c_visit, c_scale, min_span=1e-8):
        self.noise, self.base_visits, self.c = noise, base_visits, (c_visit, c_scale, min_span)
        self.table = halving.considered_table(max_considered, num_simulations)
        self.max_considered = max_considered
        self.games = np.flatnonzero(~tree.terminal[:, 0] & (tree.legal[:, 0].sum(axis=1) > 1))

    start = classmethod(lambda cls, *args: cls(*args))

    def select(self, tree, simulation):
        target = self.table[np.minimum(tree.legal[:, 0].sum(axis=1), self.max_considered), simulation]
        visits = tree.children_visits[:, 0] - self.base_visits
        scores = reference_root_scores(tree, self.noise, *self.c)
        return np.where(visits == target[:, None], scores, -np.inf).argmax(axis=1)[self.games]

    def update(self, tree):
        pass

    def final_action(self, tree):
        visits = tree.children_visits[:, 0] - self.base_visits
        most = (visits == visits.max(axis=1, keepdims=True)) & tree.legal[:, 0]
        return np.where(most, reference_root_scores(tree, self.noise, *self.c), -np.inf).argmax(axis=1)


INTERIOR, CHOOSE = gumbel.Interior, gumbel.Interior.choose  # as the package has them (tests patch them)


def fresh_choice(tree, games, nodes, c_visit, c_scale, min_span=1e-8):
    """The search's in-tree choice at distinct ``nodes`` of ``games`` with nothing kept from before: every
    node's unvisited children counted anew."""
    return CHOOSE(INTERIOR.empty(tree, c_visit, c_scale, min_span), tree, games, nodes)


def reference_unvisited(tree, games, nodes):
    """What ``Interior`` keeps of the unvisited children of ``nodes`` of ``games``: the first of highest
    prior (where every unvisited legal prior is 0, the first unvisited legal one), its prior, and the
    unvisited children's total prior (a row sum, as numpy rounds it)."""
    visited = tree.children_index[games, nodes] >= 0
    prior = np.where(visited, np.float32(0), tree.children_prior[games, nodes])
    best = prior.argmax(axis=1)
    left = tree.legal[games, nodes] & ~visited
    lost = np.flatnonzero((prior.max(axis=1) == 0) & left.any(axis=1))
    best[lost] = left[lost].argmax(axis=1)
    return best, prior.max(axis=1), prior.sum(axis=1)


def assert_kept_counts(interior, tree, games, nodes):
    """What ``interior`` keeps of the unvisited children of ``nodes`` of ``games`` equals a recount."""
    kept = interior.best[games, nodes], interior.best_prior[games, nodes], interior.mass[games, nodes]
    recount = reference_unvisited(tree, games, nodes)
    for name, k, r in zip(("best", "best_prior", "mass"), kept, recount, strict=True):
        np.testing.assert_array_equal(k, r, err_msg=name)


class ReferenceInterior:
    """Stands in for ``gumbel.Interior``: chooses (``fresh_choice``) when the descent reaches the node."""

    def __init__(self, tree, c_visit, c_scale, min_span=1e-8):
        self.c, self.tree = (c_visit, c_scale, min_span), tree

    start = classmethod(lambda cls, *args: cls(*args))

    @property
    def next_action(self):
        return self.tree.forced  # -1 at every node with a choice: the descent asks ``choose`` each time

    def choose(self, tree, games, nodes):
        return fresh_choice(tree, games, nodes, *self.c)

    def refresh(self, tree, games, nodes):
        pass

    def expanded(self, tree, games, nodes, forced, live, prior):
        pass


def reference_root_policy(tree, c_visit, c_scale, min_span=1e-8):
    games = np.arange(tree.batch_size)
    roots = np.zeros_like(games)
    policy = reference_improved_policy(tree, games, roots, c_visit, c_scale, min_span)
    value = np.where(tree.legal[games, roots], policy * reference_completed_q(tree, games, roots), 0).sum(axis=1)
    return policy, value


class RandomEvaluator:
    """Deterministic but far from uniform: logits and value are fixed random functions of the position.

    ``near_ties``: logits rounded to integers, then nudged by a millionth on odd
    actions, so that priors tie exactly or nearly.
    """

    def __init__(self, seed, scale=0.5, near_ties=False):
        rng = np.random.default_rng(seed)
        self.w_logits = rng.normal(scale=scale, size=(101, 200)).astype(np.float32)
        self.w_value = rng.normal(scale=0.2, size=101).astype(np.float32)
        self.near_ties = near_ties

    def __call__(self, state):
        top_black = (state.colours & np.uint64(1)).astype(np.float32) * (state.height > 0)
        x = np.concatenate(
            [state.height.astype(np.float32), top_black, state.current_player[:, None].astype(np.float32)], axis=1
        )
        logits = x @ self.w_logits
        if self.near_ties:
            logits = np.round(logits) + 1e-6 * (np.arange(200) % 2)
        return Evaluation(logits.astype(np.float32), np.tanh(x @ self.w_value).astype(np.float32))


def searches_with_reuse(state, evaluator, cfg, seed):
    """Two searches, the second continuing from the first's subtree: outputs of both."""
    rng = np.random.default_rng(seed)
    first = search(state, evaluator, cfg, rng)
    live = ~state.done
    after = step(state, np.where(live, first.action, state.legal_action_mask.argmax(axis=1)))
    tree, _ = subtree(first.tree, first.action, after, 2 * (cfg.num_simulations + 1), cfg.num_simulations + 1)
    second = search(after, evaluator, cfg, rng, tree=tree)
    return first, second


# "sharp": logits spread over hundreds, so that many legal priors underflow to 0 (log prior -69).
@pytest.mark.parametrize(
    "evaluator",
    [UNIFORM, RandomEvaluator(0), RandomEvaluator(3, scale=20.0), RandomEvaluator(2, scale=1.0, near_ties=True)],
    ids=["uniform", "random", "sharp", "near-ties"],
)
@pytest.mark.parametrize(
    "variant, sims, max_considered, temperature, min_span",
    [
        (VARIANT_I, 5, 16, 1.0, 1e-8),
        (VARIANT_I, 16, 4, 1.0, 1e-8),
        (VARIANT_I, 48, 16, 1.0, 1e-8),
        (VARIANT_II, 32, 8, 0.0, 1e-8),
        (VARIANT_I, 48, 16, 0.0, 2.0),
        (VARIANT_II, 32, 8, 1.0, 0.1),
    ],
)
def test_gumbel_selection_matches_reference(
    evaluator, variant, sims, max_considered, temperature, min_span, monkeypatch
):
    s = random_positions(variant, 24, 20 if variant == VARIANT_I else 9, seed=sims)
    cfg = SearchConfig(
        num_simulations=sims,
        algorithm="gumbel",
        max_considered=max_considered,
        temperature=temperature,
        min_span=min_span,
    )
    fast = searches_with_reuse(s, evaluator, cfg, seed=sims)

    choices = []

    def checked_choose(interior, tree, games, nodes):
        # What ``Interior`` kept of each node's unvisited children, against a recount from the tree.
        chosen = CHOOSE(interior, tree, games, nodes)
        assert_kept_counts(interior, tree, games, nodes)
        c = interior.c_visit, interior.c_scale, interior.min_span
        choices.append(assert_best_interior_choice(tree, games, nodes, chosen, *c))
        return chosen

    # Each batched interior choice, against the plain formula on the same tree.
    monkeypatch.setattr(gumbel.Interior, "choose", checked_choose)
    searches_with_reuse(s, evaluator, cfg, seed=sims)
    assert len(choices) > sims
    # The plain search: the roots' scores recomputed from the tree at every simulation, the interior
    # choices made when the descent reaches a node instead of cached.
    monkeypatch.setattr(halving, "Root", ReferenceRoot)
    monkeypatch.setattr(gumbel, "Interior", ReferenceInterior)
    monkeypatch.setattr(gumbel, "root_policy", reference_root_policy)
    plain = searches_with_reuse(s, evaluator, cfg, seed=sims)

    for a, b in zip(fast, plain, strict=True):
        np.testing.assert_array_equal(a.action, b.action)
        np.testing.assert_allclose(a.policy, b.policy, rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(a.visits, b.visits)
        np.testing.assert_array_equal(a.root_value, b.root_value)
        np.testing.assert_allclose(a.search_value, b.search_value, rtol=1e-5, atol=1e-6)
        for name in ("num_nodes", "children_visits", "children_values", "node_values", "parents"):
            np.testing.assert_array_equal(getattr(a.tree, name), getattr(b.tree, name), err_msg=name)
        check_tree(a.tree)
    assert (fast[1].tree.node_visits[:, 0] > cfg.num_simulations + 1).any(), "no subtree was reused"


def test_gumbel_first_choice_at_new_nodes_matches_reference():
    """Priors one or a few ulps apart, the smaller first: the formula's softmax can round them alike and
    take the first; the search takes the highest prior, which scores within rounding of it."""
    rng = np.random.default_rng(0)
    g = 3000
    prior, legal = np.zeros((g, 200), np.float32), np.zeros((g, 200), bool)
    for row in range(g):
        cols = np.sort(rng.choice(200, rng.integers(2, 20), replace=False))
        p = (rng.random(cols.size) * 0.5).astype(np.float32)
        j, top = rng.integers(1, cols.size), np.float32(0.5 + 0.5 * rng.random())
        p[j], p[j - 1] = top, top - rng.integers(0, 4) * np.spacing(top)
        prior[row, cols], legal[row, cols] = p / p.sum(), True
    prior[: g // 10] = np.where(legal[: g // 10], 1.0 / legal[: g // 10].sum(axis=1, keepdims=True), 0)  # exact ties
    tree = allocate(init(VARIANT_I, g), 2)
    games, nodes = np.arange(g), np.ones(g, np.int64)
    tree.states.legal_action_mask[:, 1], tree.num_legal[:, 1] = legal, legal.sum(axis=1)
    tree.children_prior[:, 1], tree.children_values[:, 1] = prior, np.where(legal, 0, -1e9)
    tree.node_visits[:, 1], tree.raw_values[:, 1] = 1, rng.uniform(-1, 1, g)
    interior = gumbel.Interior.start(tree, 50.0, 0.1)
    interior.expanded(tree, games, nodes, np.full(g, -1), np.arange(g), prior)
    np.testing.assert_array_equal(interior.next_action[:, 1], fresh_choice(tree, games, nodes, 50.0, 0.1))
    differ = assert_best_interior_choice(tree, games, nodes, interior.next_action[:, 1], 50.0, 0.1)
    assert differ > 100  # the formula's rounding ties do occur; the choice is then the first of highest prior


def tree_with_children(prior, legal, visits, q, raw):
    """Trees whose root (node 0) has children priors ``prior``, legal actions ``legal``, visit counts
    ``visits`` and mean values ``q`` (all ``[G, A]``) and value ``raw`` ``[G]``: each visited child is
    a node of its own, as the search makes them, holding its visits."""
    g = prior.shape[0]
    game, action = np.nonzero(visits)
    child = 1 + np.cumsum(visits > 0, axis=1)[game, action] - 1
    tree = allocate(init(VARIANT_I, g), 1 + max((visits > 0).sum(axis=1).max(), 1))
    tree.states.legal_action_mask[:, 0], tree.num_legal[:, 0] = legal, legal.sum(axis=1)
    tree.children_prior[:, 0], tree.children_visits[:, 0] = prior, visits
    tree.children_values[:, 0] = np.where(visits > 0, q, np.where(legal, 0, -1e9))
    tree.node_visits[:, 0], tree.raw_values[:, 0] = 1 + visits.sum(axis=1), raw
    tree.children_index[game, 0, action] = child
    tree.parents[game, child], tree.action_from_parent[game, child] = 0, action
    tree.node_visits[game, child] = visits[game, action]
    tree.num_nodes[:] = 1 + (visits > 0).sum(axis=1)
    return tree


def test_gumbel_interior_choice_scores_the_formulas_best():
    """Random nodes with visited children: uniform priors (exact ties), spread ones, sharp ones whose
    unvisited priors all underflow to 0, and nodes with every legal child visited."""
    rng = np.random.default_rng(1)
    g = 4000
    prior, legal = np.zeros((g, 200), np.float32), np.zeros((g, 200), bool)
    visits, q = np.zeros((g, 200), np.int32), np.zeros((g, 200), np.float32)
    for row in range(g):
        cols = rng.choice(200, rng.integers(2, 30), replace=False)
        kind = row % 4
        logits = rng.normal(size=cols.size) * (0.0 if kind == 0 else 1.0 if kind == 1 else 60.0)
        seen = rng.random(cols.size) < 0.3
        seen[0] = True
        if kind == 2:  # the visited children hold all the prior: the others underflow to 0
            logits = np.where(seen, logits, -200.0)
        if kind == 3:
            seen[:] = True
        p = np.exp(logits - logits.max())
        prior[row, cols], legal[row, cols] = (p / p.sum()).astype(np.float32), True
        visits[row, cols[seen]] = rng.integers(1, 10, seen.sum())
        q[row, cols[seen]] = rng.uniform(-1, 1, seen.sum())
    raw = rng.uniform(-1, 1, g)
    chosen, differ = np.zeros(g, np.int64), 0
    for part in np.array_split(np.arange(g), 4):  # trees of 1,000 games: a few tens of MB each
        tree = tree_with_children(prior[part], legal[part], visits[part], q[part], raw[part])
        games, nodes = np.arange(part.size), np.zeros(part.size, np.int64)
        chosen[part] = fresh_choice(tree, games, nodes, 50.0, 0.1)
        differ += assert_best_interior_choice(tree, games, nodes, chosen[part], 50.0, 0.1)
    assert differ < g // 100
    games = np.arange(g)
    unvisited = visits[games, chosen] == 0
    left = legal & (visits == 0)
    lost = left.any(axis=1) & (np.where(left, prior, 0).max(axis=1) == 0)  # every unvisited prior is 0
    assert unvisited.sum() > 200 and lost.sum() > 500 and (~left.any(axis=1)).sum() > 900


def test_min_span_keeps_a_hair_of_q_from_taking_every_visit():
    """One visited child a thousandth above the node's value: rescaled by its own range (1e-8) it takes
    the next visit too; rescaled by the value range (min_span 2) the unvisited child of higher prior does."""
    prior, legal = np.zeros((1, 200), np.float32), np.zeros((1, 200), bool)
    prior[0, :3], legal[0, :3] = (0.2, 0.5, 0.3), True
    visits, q = np.zeros((1, 200), np.int32), np.zeros((1, 200), np.float32)
    visits[0, 0], q[0, 0] = 5, 0.101
    tree = tree_with_children(prior, legal, visits, q, np.array([0.1], np.float32))
    games, nodes = np.zeros(1, np.int64), np.zeros(1, np.int64)
    assert fresh_choice(tree, games, nodes, 50.0, 0.1).tolist() == [0]
    assert fresh_choice(tree, games, nodes, 50.0, 0.1, 2.0).tolist() == [1]
    for min_span, expected in ((1e-8, 0), (2.0, 1)):
        assert reference_interior_scores(tree, games, nodes, 50.0, 0.1, min_span).argmax() == expected


def test_gumbel_cached_choices_and_root_arrays_match_the_tree(monkeypatch):
    """What the search caches equals what it stands for, recomputed from the finished trees."""
    roots, interiors = [], []
    start_root, start_interior = halving.Root.start, gumbel.Interior.start
    monkeypatch.setattr(halving.Root, "start", lambda *a: roots.append(start_root(*a)) or roots[-1])
    monkeypatch.setattr(gumbel.Interior, "start", lambda *a: interiors.append(start_interior(*a)) or interiors[-1])
    s = random_positions(VARIANT_I, 16, 16, seed=4)
    cfg = SearchConfig(num_simulations=24, algorithm="gumbel", max_considered=8)
    outputs = searches_with_reuse(s, RandomEvaluator(1), cfg, seed=2)
    assert len(roots) == len(interiors) == 2 and roots[1].inherited.any()
    for interior, out in zip(interiors, outputs, strict=True):
        tree = out.tree
        # The next in-tree choice at every node with a choice (the roots have theirs in ``Root``).
        games, nodes = np.nonzero(tree.num_legal > 1)
        games, nodes = games[nodes > 0], nodes[nodes > 0]
        assert games.size > 100
        expected = fresh_choice(tree, games, nodes, cfg.c_visit, cfg.c_scale)
        assert_best_interior_choice(tree, games, nodes, expected, cfg.c_visit, cfg.c_scale)
        chosen = interior.next_action[games, nodes] >= 0  # a reused node may not have been reached
        assert chosen.mean() > 0.5
        np.testing.assert_array_equal(interior.next_action[games, nodes][chosen], expected[chosen])
        # Elsewhere the only action, -2 where the game is over, -1 at the roots and unused nodes.
        others = np.ones(interior.next_action.shape, bool)
        others[games, nodes] = False
        used = np.arange(tree.capacity) < tree.num_nodes[:, None]
        only = np.where(tree.num_legal == 1, tree.legal.argmax(axis=2), np.where(tree.terminal & used, -2, -1))
        only[:, 0] = np.where(tree.terminal[:, 0], -2, only[:, 0])
        np.testing.assert_array_equal(interior.next_action[others], only[others])
        np.testing.assert_array_equal(tree.forced, only)
    for root, out in zip(roots, outputs, strict=True):
        tree, g = out.tree, root.games
        visits, q, prior = tree.children_visits[g, 0], tree.children_values[g, 0], tree.children_prior[g, 0]
        visited = visits > 0
        np.testing.assert_array_equal(root.prior_visited, np.where(visited, prior, 0))
        np.testing.assert_array_equal(root.visited_prior, np.where(visited, prior, 0).sum(axis=1))
        np.testing.assert_array_equal(root.prior_q, np.where(visited, prior * q, 0))
        np.testing.assert_array_equal(root.q_low, np.where(visited, q, np.inf))
        np.testing.assert_array_equal(root.q_high, np.where(visited, q, -np.inf))
        np.testing.assert_array_equal(root.num_visited, visited.sum(axis=1))
        np.testing.assert_array_equal(root.num_legal, tree.legal[g, 0].sum(axis=1))
        np.testing.assert_array_equal(root.max_visits, visits.max(axis=1))
        this_search = visits - root.base_visits
        np.testing.assert_array_equal(root.fresh_score, np.where(this_search == 0, root.score, -np.inf))
        assert root.has_considered.all()
        for row in range(g.size):
            expected = np.flatnonzero(this_search[row])
            assert root.considered[row, : expected.size].tolist() == expected.tolist()
            assert (root.considered[row, expected.size :] == expected[-1]).all()
        rows, cols = np.arange(g.size)[:, None], root.considered
        np.testing.assert_array_equal(tree.children_visits.ravel()[root.considered_at], visits[rows, cols])
        np.testing.assert_array_equal(root.considered_base, root.base_visits[rows, cols])
        np.testing.assert_array_equal(root.considered_score, root.score[rows, cols])


def reference_backup(tree, leaves):
    """The backup the search replaced: one level at a time from each game's leaf up to its root."""
    games = np.arange(tree.batch_size)
    node = leaves.astype(np.int64)
    value = tree.raw_values[games, node]
    while games.size:
        n = node[games]
        v = value[games]
        visits = tree.node_visits[games, n]
        tree.node_values[games, n] += (v - tree.node_values[games, n]) / (visits + 1)
        tree.node_visits[games, n] = visits + 1
        parent = tree.parents[games, n]
        up = parent >= 0
        games, n, v, parent = games[up], n[up], v[up], parent[up]
        v = np.where(tree.player[games, parent] == tree.player[games, n], v, -v)
        a = tree.action_from_parent[games, n]
        visits = tree.children_visits[games, parent, a]
        tree.children_values[games, parent, a] += (v - tree.children_values[games, parent, a]) / (visits + 1)
        tree.children_visits[games, parent, a] = visits + 1
        node[games] = parent
        value[games] = v


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_backup_of_all_paths_at_once_matches_the_level_by_level_one(algorithm, monkeypatch):
    """The search backs up all (game, level) pairs in one pass; the statistics must equal, bit for bit,
    those of the per-level loop, at every simulation."""
    search_module = importlib.import_module("stapel_rl.mcts.search")  # the package exports its ``search``

    stats = ("node_values", "node_visits", "children_values", "children_visits")
    fast_backup, checked = search_module._backup, []

    def both(tree, final, games, nodes, actions):
        before = {name: getattr(tree, name).copy() for name in stats}
        fast_backup(tree, final, games, nodes, actions)
        after = {name: getattr(tree, name).copy() for name in stats}
        for name in stats:
            getattr(tree, name)[...] = before[name]
        reference_backup(tree, final % tree.capacity)
        for name in stats:
            np.testing.assert_array_equal(after[name], getattr(tree, name), err_msg=name)
        checked.append(final.size)

    monkeypatch.setattr(search_module, "_backup", both)
    s = random_positions(VARIANT_I, 12, 30, seed=7)
    searches_with_reuse(s, RandomEvaluator(5, scale=2.0), SearchConfig(num_simulations=24, algorithm=algorithm), 3)
    assert len(checked) == 48


@pytest.mark.parametrize("wild", [None, 1.05e9, -5e9, np.inf])
def test_new_nodes_priors_are_the_masked_softmax(wild):
    """The priors of new nodes come from adding the ILLEGAL_VALUE penalty, not masking: the masked
    softmax to float32 rounding and exactly 0 on illegal actions, also where a logit is too large for
    the penalty to hide it."""
    rng = np.random.default_rng(3)
    logits = (rng.normal(size=(64, 200)) * 8).astype(np.float32)
    legal = rng.random((64, 200)) < 0.1
    legal[:, 7] = True
    if wild is not None:
        logits[5, ~legal[5]] = wild  # illegal actions' logits above (or below) what -1e9 outweighs
        logits[9, 7] = -wild
    penalty = np.where(legal, 0, ILLEGAL_VALUE).astype(np.float32)
    prior = softmax_live(logits, penalty, legal)
    assert prior.dtype == np.float32
    np.testing.assert_allclose(prior, qtransforms.masked_softmax(logits, legal), rtol=1e-6, atol=1e-7)
    assert (prior[~legal] == 0).all()
    np.testing.assert_allclose(prior.sum(axis=1), 1, rtol=1e-6)
