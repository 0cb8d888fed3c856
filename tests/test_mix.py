"""Guarantees of the data mixes (`scope.mix`), as properties over cells (one per query)."""

from collections import Counter
from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from aart.cells import normalize_attempt
from aart.steps import mix


def make_values(sizes):
    return {f"axis{i}": [f"v{i}_{j}" for j in range(n)] for i, n in enumerate(sizes)}


def cells_of(attempts):
    return [c for a in attempts for c in a]


def assert_full_cells(attempts, values, queries):
    for a in attempts:
        assert 1 <= len(a) <= queries
        for cell in a:
            # exactly one value of every dimension, and only known values
            assert list(cell) == list(values)
            assert all(cell[axis] in values[axis] for axis in values)


axes_sizes = st.lists(st.integers(1, 9), min_size=1, max_size=4)


@settings(max_examples=80, deadline=None)
@given(
    sizes=axes_sizes,
    attempts=st.one_of(st.none(), st.integers(1, 20)),
    queries=st.integers(1, 6),
    seed=st.integers(0, 1000),
)
def test_balanced_use_counts_differ_by_at_most_one_over_cells(sizes, attempts, queries, seed):
    values = make_values(sizes)
    out = mix.balanced(values, attempts, queries, {}, seed)
    assert_full_cells(out, values, queries)
    cells = cells_of(out)
    if attempts is not None:
        assert len(cells) == attempts * queries and len(out) == attempts
    for axis, vals in values.items():
        uses = Counter(c[axis] for c in cells)
        counts = [uses.get(v, 0) for v in vals]
        assert max(counts) - min(counts) <= 1, (axis, counts)
    if attempts is None:  # the default covers every value at least once
        for axis, vals in values.items():
            assert {c[axis] for c in cells} == set(vals)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 7), min_size=2, max_size=4),
    queries=st.integers(1, 5),
    seed=st.integers(0, 1000),
)
def test_pairwise_covers_every_pair_in_some_cell(sizes, queries, seed):
    values = make_values(sizes)
    axes = list(values)
    out = mix.pairwise(values, axes, queries, {}, seed)
    assert_full_cells(out, values, queries)
    cells = cells_of(out)
    seen = {(a, c[a], b, c[b]) for c in cells for a, b in combinations(axes, 2)}
    for a, b in combinations(axes, 2):
        for x in values[a]:
            for y in values[b]:
                assert (a, x, b, y) in seen
    top_two = sorted(sizes)[-2:]
    product = 1
    for n in sizes:
        product *= n
    assert top_two[0] * top_two[1] <= len(cells) <= max(product, 1)


def test_pairwise_is_compact_on_the_paper_shape():
    values = make_values([10, 12, 6])
    cells = cells_of(mix.pairwise(values, list(values), 5, {}, 0))
    assert 120 <= len(cells) <= 140  # lower bound is 10 x 12 = 120; product would be 720


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 8), min_size=2, max_size=4),
    per_value=st.integers(1, 3),
    queries=st.integers(1, 6),
    k=st.integers(1, 3),
    seed=st.integers(0, 1000),
)
def test_per_value_gives_every_primary_value_the_same_cells(sizes, per_value, queries, k, seed):
    values = make_values(sizes)
    sample = {axis: min(k, len(v)) for axis, v in values.items() if axis != "axis0"}
    out = mix.per_value(values, "axis0", per_value, sample, {}, seed, queries)
    assert_full_cells(out, values, queries)
    assert len(out) == per_value * sizes[0]
    uses = Counter(c["axis0"] for c in cells_of(out))
    assert uses == {v: per_value * queries for v in values["axis0"]}
    for a in out:
        assert len({c["axis0"] for c in a}) == 1  # an attempt is about one primary value
        for axis, kk in sample.items():
            used = Counter(c[axis] for c in a)
            # at most k sampled values per attempt, dealt evenly
            assert len(used) <= kk
            assert max(used.values()) - min(used.values()) <= 1


def test_per_value_is_the_papers_scheme():
    values = make_values([5, 20, 8])
    out = mix.per_value(values, "axis0", 2, {"axis1": 3, "axis2": 3}, {}, 1, 3)
    assert len(out) == 10
    # 3 queries, 3 sampled formats and regions: every sampled value used once per attempt
    assert all(len({c["axis1"] for c in a}) == 3 == len({c["axis2"] for c in a}) for a in out)
    assert out == mix.per_value(values, "axis0", 2, {"axis1": 3, "axis2": 3}, {}, 1, 3)
    assert out != mix.per_value(values, "axis0", 2, {"axis1": 3, "axis2": 3}, {}, 2, 3)
    # more queries than sampled values: the pairings change from round to round
    six = mix.per_value(values, "axis0", 2, {"axis1": 3, "axis2": 3}, {}, 1, 6)
    distinct = [len({(c["axis1"], c["axis2"]) for c in a}) for a in six]
    assert max(distinct) > 3 and sum(distinct) > 3 * len(six)


def test_weights_shift_the_mix():
    values = make_values([1, 4])
    out = mix.per_value(values, "axis0", 400, {"axis1": 1}, {"axis1": {"v1_0": 10}}, 3, 1)
    uses = Counter(c["axis1"] for c in cells_of(out))
    assert uses["v1_0"] > 3 * uses["v1_1"]
    weighted = mix.per_value(make_values([2, 2]), "axis0", 2, {}, {"axis0": {"v0_0": 2}}, 0, 1)
    assert Counter(c["axis0"] for c in cells_of(weighted)) == {"v0_0": 4, "v0_1": 2}
    balanced = mix.balanced(values, 50, 2, {"axis1": {"v1_0": 3}}, 0)
    uses = Counter(c["axis1"] for c in cells_of(balanced))
    assert uses["v1_0"] == 50 and 16 <= uses["v1_1"] <= 17


def test_edited_attempts_are_normalized():
    cells = [{"a": "x", "b": "p"}, {"a": "y", "b": "q"}]
    fewer = normalize_attempt({"id": "a1", "cells": cells, "queries": 1}, 5)
    assert fewer.cells == cells[:1] and fewer.values == {"a": ["x"], "b": ["p"]}
    more = normalize_attempt({"id": "a1", "cells": cells, "queries": 3}, 5)
    assert more.cells == [*cells, cells[0]] and more.queries == 3
    dealt = normalize_attempt({"id": "a1", "values": {"a": ["x", "y"], "b": ["p"]}}, 3)
    assert dealt.cells == [{"a": "x", "b": "p"}, {"a": "y", "b": "p"}, {"a": "x", "b": "p"}]


def test_a_malformed_attempt_says_which_field(tmp_path):
    """Attempt.from_line validates a hand-edited line: one line naming the field."""
    import pytest

    from aart.types import Attempt

    with pytest.raises(ValueError, match=r"^`cells.1.b` is a list, not a string$"):
        Attempt.from_line({"id": "a1", "cells": [{"b": "p"}, {"b": ["p", "q"]}]}, 2)
    with pytest.raises(ValueError, match=r"^`queries` must be at least 1"):
        Attempt.from_line({"id": "a1", "cells": [{"b": "p"}], "queries": 0}, 2)
    with pytest.raises(ValueError, match="needs an `id`"):
        Attempt.from_line({"cells": [{"b": "p"}]}, 2)
    with pytest.raises(ValueError, match="needs `cells`"):
        Attempt.from_line({"id": "a1"}, 2)
    kept = Attempt.from_line({"id": "a1", "cells": [{"b": "p"}], "note": "mine"}, 2)
    assert kept.to_line() == {
        "id": "a1",
        "cells": [{"b": "p"}],
        "values": {"b": ["p"]},
        "queries": 1,
        "note": "mine",
    }


def test_per_value_restrict_keeps_a_primary_values_cells_to_its_allowed_values():
    values = make_values([3, 6, 4])
    restrict = {"v0_0": {"axis1": ["v1_1", "v1_4"]}}
    out = mix.per_value(values, "axis0", 3, {"axis1": 2, "axis2": 2}, {}, 5, 4, restrict)
    assert_full_cells(out, values, 4)
    ruled = [c for c in cells_of(out) if c["axis0"] == "v0_0"]
    assert ruled and {c["axis1"] for c in ruled} == {"v1_1", "v1_4"}
    # the other primary values still sample every value
    free = {c["axis1"] for c in cells_of(out) if c["axis0"] != "v0_0"}
    assert len(free) > 2
    # without a restriction the mix is the one it always was (a recipe's cells stand)
    assert mix.per_value(values, "axis0", 3, {"axis1": 2, "axis2": 2}, {}, 5, 4) == (
        mix.per_value(values, "axis0", 3, {"axis1": 2, "axis2": 2}, {}, 5, 4, {})
    )
