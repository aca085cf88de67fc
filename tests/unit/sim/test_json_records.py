import json

import pytest

from mnemarket.run.json_records import SHARED_VALUE_CHARS, SharedDecoder


def test_records_share_their_keys_and_short_values_but_not_long_texts():
    long_text = "x" * (SHARED_VALUE_CHARS + 1)
    line = json.dumps({"principal": "alpha_trader", "action": {"method": "add", "args": {"text": long_text}},
                       "n": 7})
    decoder = SharedDecoder()
    first, second = decoder.decode(line), decoder.decode(line)
    assert first == second == json.loads(line)
    assert first["principal"] is second["principal"]
    assert first["action"]["method"] is second["action"]["method"]
    assert next(iter(first["action"])) is next(iter(second["action"]))  # keys too
    assert first["action"]["args"]["text"] is not second["action"]["args"]["text"]


def test_values_are_shared_within_one_decoder_only():
    line = json.dumps({"principal": "trader_" + "q" * 20})
    assert SharedDecoder().decode(line)["principal"] is not SharedDecoder().decode(line)["principal"]


@pytest.mark.parametrize("line", ["[1, 2]", '"text"', "{not json", ""])
def test_a_line_that_is_no_json_object_is_an_error(line):
    with pytest.raises(ValueError):
        SharedDecoder().decode(line)
