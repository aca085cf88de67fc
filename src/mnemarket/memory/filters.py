"""Metadata filters: a filter spec becomes one boolean numpy mask over the store's rows.

A spec is a dict of ``key: condition``, all of which must hold:

- keys ``kind``, ``tier``, ``archived``, ``id``, ``created``, ``last_accessed``, ``importance`` and
  ``access_count`` address record fields; any other key (or ``metadata.<key>``) a metadata facet
  such as ``agent``, ``category``, ``about``, ``turn``, ``speaker``, ``location`` or ``tags``;
- a scalar condition means equality (for a list-valued facet such as ``tags``: contains);
- a list/tuple/set means "any of" (``{"agent": ["alice", "bob"]}``);
- a dict holds operators: ``eq``, ``ne``, ``in``, ``nin``, ``gt``, ``gte``, ``lt``, ``lte``,
  ``any``, ``all``, ``exists`` (``{"turn": {"gte": 3, "lte": 7}, "tags": {"all": ["a", "b"]}}``).

Operators may also be written with a ``$`` prefix (``$gte``), as mem0 and MongoDB do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mnemarket.errors import UserError, did_you_mean
from mnemarket.memory.columns import RECORD_NUMBERS, CategoricalColumn, RowColumns, is_multi

OPERATORS: tuple[str, ...] = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "any", "all", "exists")
RECORD_FIELDS: tuple[str, ...] = ("id", "kind", "tier", "archived", *RECORD_NUMBERS)

FilterSpec = Mapping[str, Any]


def _operator(name: str) -> str:
    op = name[1:] if name.startswith("$") else name
    if op not in OPERATORS:
        raise UserError(f"filter operator {name!r} is unknown; use one of {', '.join(OPERATORS)}."
                        f"{did_you_mean(op, OPERATORS)}")
    return op


def _conditions(condition: Any) -> list[tuple[str, Any]]:
    """Normalise a condition to ``[(operator, operand), ...]``."""
    if isinstance(condition, Mapping):
        if not condition:
            raise UserError("an empty operator dict in a filter matches nothing useful; give e.g. {'gte': 3}")
        return [(_operator(str(k)), v) for k, v in condition.items()]
    if is_multi(condition):
        return [("in", list(condition))]
    return [("eq", condition)]


def _range(values: np.ndarray, op: str, operand: Any, key: str) -> np.ndarray:
    try:
        bound = float(operand)
    except (TypeError, ValueError):
        raise UserError(f"filter {key!r} {op} needs a number, got {operand!r}") from None
    with np.errstate(invalid="ignore"):
        if op == "gt":
            return values > bound
        if op == "gte":
            return values >= bound
        if op == "lt":
            return values < bound
        return values <= bound


def _listed(operand: Any, key: str, op: str) -> list[Any]:
    if not is_multi(operand):
        raise UserError(f"filter {key!r} {op} needs a list of values, got {operand!r}")
    return list(operand)


def _categorical_mask(column: CategoricalColumn | None, op: str, operand: Any, n: int, key: str) -> np.ndarray:
    if column is None:  # no row has this facet
        if op == "exists":
            return np.full(n, not bool(operand))
        return np.full(n, op in ("ne", "nin"))
    if op == "eq":
        return column.equals(operand, n)
    if op == "ne":
        return ~column.equals(operand, n)
    if op in ("in", "any"):
        mask = np.zeros(n, dtype=bool)
        for value in _listed(operand, key, op):
            mask |= column.equals(value, n)
        return mask
    if op == "nin":
        return ~_categorical_mask(column, "in", operand, n, key)
    if op == "all":
        mask = np.ones(n, dtype=bool)
        for value in _listed(operand, key, op):
            mask &= column.equals(value, n)
        return mask
    if op == "exists":
        present = column.present(n)
        return present if operand else ~present
    return _range(column.numeric(n), op, operand, key)


def _numeric_mask(values: np.ndarray, op: str, operand: Any, key: str) -> np.ndarray:
    if op == "eq":
        return values == float(operand)
    if op == "ne":
        return values != float(operand)
    if op in ("in", "any"):
        return np.isin(values, np.asarray(_listed(operand, key, op), dtype=np.float64))
    if op == "nin":
        return ~np.isin(values, np.asarray(_listed(operand, key, op), dtype=np.float64))
    if op == "exists":
        return np.full(values.shape, bool(operand))
    if op == "all":
        raise UserError(f"filter {key!r} is a single number per memory; 'all' applies to list facets like tags")
    return _range(values, op, operand, key)


def build_mask(spec: FilterSpec | None, columns: RowColumns, row_of: Callable[[str], int | None]) -> np.ndarray:
    """Evaluate ``spec`` over rows ``0..columns.n``; dead rows are always excluded.

    Args:
        spec: the filter (see the module docstring); None or {} selects every live row.
        columns: the store's row columns.
        row_of: maps a memory id to its row (None if unknown), for ``id`` filters.

    Raises:
        UserError: an unknown operator or an operand of the wrong type.
    """
    n = columns.n
    mask = columns.alive[:n].copy()
    if not spec:
        return mask
    if not isinstance(spec, Mapping):
        raise UserError(f"filter must be a dict such as {{'agent': 'alice', 'kind': 'reflection'}}, got {spec!r}")
    for key, condition in spec.items():
        for op, operand in _conditions(condition):
            if key == "archived":
                flags = columns.archived[:n]
                if op not in ("eq", "ne"):
                    raise UserError(f"filter 'archived' takes True or False, got {condition!r}")
                mask &= flags if bool(operand) == (op == "eq") else ~flags
            elif key == "id":
                ids = [operand] if op in ("eq", "ne") else _listed(operand, key, op)
                if op not in ("eq", "ne", "in", "nin"):
                    raise UserError(f"filter 'id' takes an id or a list of ids, got {condition!r}")
                hit = np.zeros(n, dtype=bool)
                rows = [r for r in (row_of(str(i)) for i in ids) if r is not None]
                hit[rows] = True
                mask &= hit if op in ("eq", "in") else ~hit
            elif key in RECORD_NUMBERS:
                mask &= _numeric_mask(columns.numbers[key][:n], op, operand, key)
            elif key in columns.categories:
                mask &= _categorical_mask(columns.categories[key], op, operand, n, key)
            else:
                name = key.removeprefix("metadata.")
                mask &= _categorical_mask(columns.metadata.get(name), op, operand, n, key)
    return mask


def mentions_archived(spec: FilterSpec | None) -> bool:
    """Whether a spec decides about archived records itself."""
    return bool(spec) and "archived" in spec  # type: ignore[operator]
