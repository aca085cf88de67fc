"""The context record: written in the log's JSON form, read back typed, never a traceback."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemarket.genesis.context_record import ContextHit, ContextRecord, ContextSection

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=8)


def test_the_json_form_holds_the_fields_set_in_order_and_reads_back_equal():
    record = ContextRecord(agent="alpha", session=1, turn=2, step="act", tokens=9, budget=None,
                           sections=[ContextSection(name="system", tokens=4, status="kept")],
                           rag_hits=[ContextHit(id="m1", text="a memory", score=0.5)], loop_trigger=None)
    form = record.json_form()
    assert list(form) == ["agent", "session", "turn", "step", "tokens", "budget", "sections", "rag_hits",
                          "loop_trigger"]
    assert form["budget"] is None and "reply" not in form  # set to None is written; never set is not
    assert ContextRecord.from_json(json.loads(json.dumps(form))) == record


@settings(max_examples=200, deadline=None)
@given(fields=st.dictionaries(st.sampled_from(sorted(ContextRecord.model_fields) + ["other"]), JSON, max_size=6))
def test_a_field_of_the_wrong_type_is_dropped_and_named_lost(fields):
    data = {**fields, "agent": "alpha", "session": 1, "turn": 2}  # identity is checked before (context_refs)
    record = ContextRecord.from_json(data)
    for name, value in fields.items():
        if name in ("agent", "session", "turn", "lost", "other"):
            continue
        kept = getattr(record, name)
        assert name in record.lost or kept is not None or value is None, (name, value)
    assert all(isinstance(name, str) for name in record.lost)
