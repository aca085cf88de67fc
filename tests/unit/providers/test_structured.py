from typing import Literal

from pydantic import BaseModel, Field

from mnemarket.providers.structured import parse_structured, tight_json_schema


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
