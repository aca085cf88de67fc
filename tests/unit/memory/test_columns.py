"""Columnar facets: the vectorised bulk path must build exactly what row-by-row assignment builds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemarket.memory.columns import CategoricalColumn

scalars = st.one_of(st.none(), st.sampled_from(["a", "b", "3", ""]), st.integers(-2, 3),
                    st.floats(-2, 3, allow_nan=False), st.booleans())
values = st.lists(st.one_of(scalars, st.lists(st.sampled_from(["x", "y", 1]), max_size=3)), max_size=40)


def _rowwise(items: list) -> CategoricalColumn:
    column = CategoricalColumn(64)
    for row, value in enumerate(items):
        column.set(row, value)
    return column


@settings(max_examples=200, deadline=None)
@given(prefix=values, items=values)
def test_bulk_set_equals_row_by_row(prefix, items):
    bulk, rows = CategoricalColumn(128), CategoricalColumn(128)
    for column in (bulk, rows):  # rows already present, as when a store appends to loaded data
        for row, value in enumerate(prefix):
            column.set(row, value)
    bulk.set_bulk(len(prefix), items)
    for offset, value in enumerate(items):
        rows.set(len(prefix) + offset, value)
    n = len(prefix) + len(items)
    assert bulk.vocab == rows.vocab
    assert np.array_equal(bulk.codes[:n], rows.codes[:n])
    assert np.array_equal(bulk.numeric(n), rows.numeric(n), equal_nan=True)
    for value in {*(v for v in prefix + items if isinstance(v, str)), 1, "x"}:
        assert np.array_equal(bulk.equals(value, n), rows.equals(value, n))


def test_plain_values_take_the_vectorised_path_and_bools_do_not():
    column = CategoricalColumn(8)
    codes = column.codes_for(["a", None, 2, "a", 2.5])
    assert codes.tolist() == [0, -1, 1, 0, 2] and column.vocab == {"a": 0, 2: 1, 2.5: 2}
    assert column.codes_for([True, 1]) is None  # True and 1 hash alike: per-row path
    assert column.codes_for([["a"]]) is None
