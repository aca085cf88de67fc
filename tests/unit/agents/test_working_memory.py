"""Working memory an agent writes is parsed safely: bad YAML, alias bombs and deep nesting included."""

from __future__ import annotations

import pytest
import yaml

from mnemarket.agents.working_memory import MAX_YAML_DEPTH, load_agent_yaml, parse_working_memory, prefixed_entries

ALIAS_BOMB = "a: &a ['LESSON: x','LESSON: x','LESSON: x','LESSON: x','LESSON: x','LESSON: x','LESSON: x']\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
    f"*{chr(97 + i)},*{chr(97 + i)}]\n" for i in range(9))  # 7**10 values if expanded


def test_an_alias_bomb_is_read_as_plain_lines_at_once():
    memory = parse_working_memory(ALIAS_BOMB)
    assert len(memory.recent_insights) == 10  # one per line, not 7**10 values
    assert prefixed_entries(ALIAS_BOMB, ["LESSON:"]) == []  # no line starts with the prefix


def test_deep_nesting_and_garbage_do_not_raise():
    assert parse_working_memory("[" * 5000).recent_insights == ["[" * 5000]
    assert parse_working_memory("lessons: [unclosed").recent_insights == ["lessons: [unclosed"]
    assert parse_working_memory("- just\n- a list").recent_insights == ["- just", "- a list"]


@pytest.mark.parametrize("text", ["a: " + "[" * 2000 + "]" * 2000, "{a: " * 500 + "}" * 500,
                                  "".join(f"{'  ' * i}k{i}:\n" for i in range(MAX_YAML_DEPTH + 5))])
def test_nesting_past_the_bound_is_refused_before_the_scanner_walks_it(text):
    # Left to the recursion limit, 2,000 closed brackets took ~4 s a parse (the scanner is quadratic in them).
    with pytest.raises(yaml.YAMLError, match="deeper than"):
        load_agent_yaml(text)
    assert load_agent_yaml("a: " + "[" * 5 + "]" * 5) == {"a": [[[[[]]]]]}


def test_ordinary_working_memory_still_parses_and_migrates():
    text = "current_goal: sell the map\nlessons:\n- 'LESSON: deposit needs authorized_writer'\n"
    assert parse_working_memory(text).current_goal == "sell the map"
    assert prefixed_entries(text, ["LESSON:"]) == ["LESSON: deposit needs authorized_writer"]

