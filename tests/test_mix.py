"""Guarantees of the data-mix strategies, as properties."""

from collections import Counter
from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from aart.steps import mix


def make_values(sizes):
    return {f"axis{i}": [f"v{i}_{j}" for j in range(n)] for i, n in enumerate(sizes)}


axes_sizes = st.lists(st.integers(1, 9), min_size=1, max_size=4)


@settings(max_examples=80, deadline=None)
@given(
    sizes=axes_sizes,
    ks=st.lists(st.integers(1, 4), min_size=4, max_size=4),
    attempts=st.one_of(st.none(), st.integers(1, 40)),
    seed=st.integers(0, 1000),
)
def test_balanced_use_counts_differ_by_at_most_one(sizes, ks, attempts, seed):
    values = make_values(sizes)
    sample = {axis: ks[i] for i, axis in enumerate(values)}
    out = mix.balanced(values, sample, attempts, {}, seed)
    for axis, vals in values.items():
        k = min(sample[axis], len(vals))
        uses = Counter(v for a in out for v in a[axis])
        counts = [uses.get(v, 0) for v in vals]
        assert max(counts) - min(counts) <= 1, (axis, counts)
        for a in out:
            assert len(a[axis]) == k and len(set(a[axis])) == k  # distinct within an attempt
    if attempts is None:  # the default covers every value at least once
        assert all(
            min(Counter(v for a in out for v in a[ax]).get(v, 0) for v in vs) >= 1
            for ax, vs in values.items()
        )


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 7), min_size=2, max_size=4), seed=st.integers(0, 1000))
def test_pairwise_covers_every_pair(sizes, seed):
    values = make_values(sizes)
    axes = list(values)
    out = mix.pairwise(values, axes, {}, {}, seed)
    seen = {
        (a, x, b, y)
        for att in out
        for a, b in combinations(axes, 2)
        for x in att[a]
        for y in att[b]
    }
    for a, b in combinations(axes, 2):
        for x in values[a]:
            for y in values[b]:
                assert (a, x, b, y) in seen
    # far fewer attempts than the full product once there are three or more axes
    product = 1
    for n in sizes:
        product *= n
    top_two = sorted(sizes)[-2:]
    assert len(out) >= top_two[0] * top_two[1]
    assert len(out) <= max(product, 1)


def test_pairwise_is_compact_on_the_paper_shape():
    values = make_values([10, 12, 6])
    out = mix.pairwise(values, list(values), {}, {}, 0)
    assert 120 <= len(out) <= 140  # lower bound is 10 x 12 = 120; product would be 720


def test_per_value_is_the_papers_scheme():
    values = make_values([5, 20, 8])
    out = mix.per_value(values, "axis0", 2, {"axis1": 3, "axis2": 3}, {}, seed=1)
    assert len(out) == 10
    assert Counter(a["axis0"][0] for a in out) == {v: 2 for v in values["axis0"]}
    assert all(len(a["axis1"]) == 3 == len(set(a["axis1"])) for a in out)
    assert out == mix.per_value(values, "axis0", 2, {"axis1": 3, "axis2": 3}, {}, seed=1)
    assert out != mix.per_value(values, "axis0", 2, {"axis1": 3, "axis2": 3}, {}, seed=2)


def test_weights_shift_the_mix():
    values = make_values([1, 4])
    out = mix.per_value(values, "axis0", 400, {"axis1": 1}, {"axis1": {"v1_0": 10}}, seed=3)
    uses = Counter(a["axis1"][0] for a in out)
    assert uses["v1_0"] > 3 * uses["v1_1"]
    primary_weighted = mix.per_value(make_values([2, 2]), "axis0", 2, {}, {"axis0": {"v0_0": 2}}, 0)
    assert Counter(a["axis0"][0] for a in primary_weighted) == {"v0_0": 4, "v0_1": 2}
