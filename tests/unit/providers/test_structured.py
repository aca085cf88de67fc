from typing import Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from mnemarket.providers.scripted import ScriptedLLM
from mnemarket.providers.structured import clean_text, parse_structured, tight_json_schema, trim_to_schema


class Target(BaseModel):
    artifact_id: Literal["a1", "a2"]


class Decision(BaseModel):
    action: Literal["buy", "sell", "wait"]
    target: Target
    note: str = Field(default="", max_length=40)


def test_tight_schema_is_closed_flat_and_keeps_bounds():
    schema = tight_json_schema(Decision)
    assert "$defs" not in schema and "$ref" not in str(schema)
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["action", "target", "note"]
    assert schema["properties"]["action"]["enum"] == ["buy", "sell", "wait"]
    assert schema["properties"]["note"]["maxLength"] == 40
    assert schema["properties"]["target"]["additionalProperties"] is False
    assert "title" not in schema and "title" not in schema["properties"]["action"]


def test_tight_schema_returns_a_fresh_copy():
    tight_json_schema(Decision)["properties"].clear()
    assert tight_json_schema(Decision)["properties"]


def test_parse_accepts_fenced_json_with_prose():
    text = 'Sure!\n```json\n{"action": "buy", "target": {"artifact_id": "a2"}}\n```'
    parsed, error = parse_structured(text, Decision)
    assert error is None
    assert parsed == Decision(action="buy", target=Target(artifact_id="a2"))


def test_parse_reports_field_level_errors_without_raising():
    parsed, error = parse_structured('{"action": "steal", "target": {"artifact_id": "a9"}}', Decision)
    assert parsed is None
    assert "action" in error and "target.artifact_id" in error


def test_parse_garbage_and_empty_are_errors():
    assert parse_structured("", Decision) == (None, "the reply was empty; expected a JSON object")
    parsed, error = parse_structured("I refuse {{{", Decision)
    assert parsed is None and error


def test_raw_newlines_inside_strings_are_accepted_and_trimming_cuts_to_max_length():
    from mnemarket.providers.structured import trim_to_schema

    class Note(BaseModel):
        text: str = Field(max_length=5)

    parsed, error = parse_structured('{"text": "a\nb"}', Note)  # a raw newline, as some JSON grammars emit
    assert error is None and parsed.text == "a\nb"
    assert parse_structured('{"text": "toolong"}', Note)[1] is not None
    trimmed = trim_to_schema('{"text": "toolong"}', tight_json_schema(Note))
    assert parse_structured(trimmed, Note)[0].text == "toolo"


# -- hostile replies (issue 38, class 1): a result or a reason, never an exception ----------------
PIECES = st.sampled_from(['{', '}', '[', ']', '"', ':', ',', '\\', '\\ud800', '\\udfff', '\ud800', '\udc00',
                          '"action": "buy"', '"target": {"artifact_id": "a1"}', '"note": "', 'null', '1e999'])
REPLIES = st.one_of(
    st.text(st.characters() | st.sampled_from(["\ud800", "\udfff"])),
    st.lists(PIECES, max_size=40).map("".join),
    st.builds(lambda piece, n: piece * n, PIECES, st.integers(1, 6000)),
    st.builds(lambda n: '{"action": "buy", "target": ' * n + "1" + "}" * n, st.integers(900, 3000)),
)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(REPLIES)
def test_any_reply_parses_to_an_encodable_decision_or_reason(text):
    parsed, reason = parse_structured(text, Decision)
    assert (parsed is None) != (reason is None)
    assert _encodable(reason or parsed.model_dump_json())
    assert isinstance(trim_to_schema(text, tight_json_schema(Decision)), str)


@settings(max_examples=100, deadline=None)
@given(st.lists(REPLIES, min_size=2, max_size=2))
def test_any_two_replies_through_generate_and_repair_are_a_result(replies):
    result = ScriptedLLM(replies).generate([{"role": "user", "content": "go"}], schema=Decision)
    assert result.ok or result.failure == "reply"
    assert _encodable(result.model_dump_json())


def test_replies_that_crashed_the_parser_are_reasons():
    for text in ["[" * 5000, '{"action":' * 5000, "[" * 400_001]:
        parsed, reason = parse_structured(text, Decision)
        assert parsed is None and ("nests too deeply" in reason or "over 400,000" in reason)
    parsed, reason = parse_structured('{"action": "buy", "target": {"artifact_id": "a1"}, "note": "x\\ud800"}',
                                      Decision)
    assert parsed is not None and parsed.note == "x\ufffd"
    assert clean_text("a\ud83d\ude00\udc00") == "a\U0001f600\ufffd"  # a valid pair is kept, a lone half replaced
