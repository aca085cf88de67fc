"""Deferred row values: read from the database by seq when first needed, never over newer values."""

from __future__ import annotations

import numpy as np

from mnemarket.memory import row_values
from mnemarket.memory.row_values import RowValues

DATABASE = {10: "ten", 11: "eleven", 12: "twelve"}  # seq -> text, as committed


def _deferred(seqs: np.ndarray) -> tuple[RowValues, list]:
    calls: list = []

    def fetch(wanted):
        calls.append(None if wanted is None else wanted.tolist())
        keys = sorted(DATABASE) if wanted is None else [int(s) for s in wanted if int(s) in DATABASE]
        return {"seq": keys, "text": [DATABASE[k] for k in keys], "source_ids": [(f"s{k}",) for k in keys],
                "questions_addressed": [() for _ in keys], "reinforced_by": [() for _ in keys]}

    values = RowValues(lambda: seqs)
    values.append_deferred([{"n": i} for i in range(len(seqs))], fetch)
    return values, calls


def test_rows_are_read_by_seq_once_and_a_set_value_survives_the_read():
    values, calls = _deferred(np.array([10, 11, 12], dtype=np.int64))
    assert values.get("text", 1) == "eleven" and values.get("source_ids", 1) == ("s11",)
    values.set(2, "source_ids", ["mine"])
    assert values.get("text", 2) == "twelve" and values.get("source_ids", 2) == ["mine"]
    assert values.take_values("text", [0, 1, 2]) == ["ten", "eleven", "twelve"]
    assert calls == [[11], [12], [10]]  # each row read once, by its seq
    assert values.get("metadata", 0) == {"n": 0}


def test_many_missing_rows_are_read_in_one_scan_and_vanished_seqs_stay_unread(monkeypatch):
    monkeypatch.setattr(row_values, "BULK_FETCH", 1)
    values, calls = _deferred(np.array([10, 12, 13], dtype=np.int64))  # 13 is no longer in the database
    assert values.take_values("text", [0, 1, 2]) == ["ten", "twelve", None]
    assert calls == [None]
    compacted = values.take([0, 2])
    assert compacted.get("text", 0) == "ten" and compacted.columns["text"] == ["ten", None]
