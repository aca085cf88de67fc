"""Hostile or broken configuration files: one ConfigError naming the file, never a traceback,
a hang, the content of another file, or code run from a scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemarket.agents.config import load_agent_config
from mnemarket.errors import ConfigError
from mnemarket.run.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[3]


def _scenario(tmp_path: Path, extra: str = "", agents: str = "[{id: alpha}, {id: beta}]") -> Path:
    (tmp_path / "system_prompt.md").write_text("You act.")
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nagents: {agents}\n{extra}")
    return path


def test_extends_must_name_a_yaml_file_and_never_echoes_another_file(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root: $6$hash-that-must-not-leak\n")
    agent = tmp_path / "a.yaml"
    agent.write_text(f"extends: {secret}\nid: alpha\n")
    with pytest.raises(ConfigError, match=r"must be a \.yaml or \.yml file") as caught:
        load_agent_config(agent)
    assert "hash-that-must-not-leak" not in str(caught.value)


def test_an_alias_bomb_is_refused_quickly(tmp_path):
    lines = ["a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']"]
    lines += [f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]" for i in range(8)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\nid: alpha\n")
    with pytest.raises(ConfigError, match="aliases are expanded"):
        load_agent_config(path)


def test_many_unknown_keys_report_a_handful(tmp_path):
    path = tmp_path / "keys.yaml"
    path.write_text("id: alpha\n" + "".join(f"k{i}: 1\n" for i in range(50_000)))
    with pytest.raises(ConfigError, match=r"and 49995 more problems") as caught:
        load_agent_config(path)
    assert len(str(caught.value)) < 3000


@pytest.mark.parametrize("make, message", [
    (lambda p: p.mkdir(), "is a directory"),
    (lambda p: p.write_bytes(b"id: \xff\xfe alpha\n"), "not UTF-8"),
    (lambda p: p.write_bytes(b"\x00\x01binary\x00"), "binary file"),
    (lambda p: p.write_text("a: " + "[" * 20_000 + "]" * 20_000), "nests too deeply|malformed"),
    (lambda p: p.write_text("x" * 1_000_001), "bytes; configuration files are limited"),
])
def test_unreadable_files_are_one_line_errors(tmp_path, make, message):
    path = tmp_path / "broken.yaml"
    make(path)
    with pytest.raises(ConfigError, match=message) as caught:
        load_agent_config(path)
    assert str(path) in str(caught.value)


def test_a_scenario_cannot_import_arbitrary_code(tmp_path):
    path = _scenario(tmp_path, "services: [{cls: 'subprocess:Popen', options: {args: [touch, pwned]}}]\n")
    with pytest.raises(ConfigError, match="not a scenario service"):
        load_scenario(path)
    assert not (tmp_path / "pwned").exists()


def test_the_shipped_service_classes_are_allowed():
    assert load_scenario(ROOT / "config" / "flood.yaml").scenario.services


@pytest.mark.parametrize("extra, agents, message", [
    ("", "[{id: alpha, memory: {store_id: '{0}'}}]", r"only the \{id\} placeholder"),
    ("", "[{id: alpha, memory: {store_id: shared}}, {id: beta, memory: {store_id: shared}}]",
     "share the long-term store 'shared'"),
    ("bounties: [{id: b, kind: artifact, description: d, reward: 5, pattern: '([a-z'}]\n", "[{id: alpha}]",
     "is not a regular expression"),
])
def test_mistakes_a_run_would_trip_on_are_caught_at_load(tmp_path, extra, agents, message):
    with pytest.raises(ConfigError, match=message):
        load_scenario(_scenario(tmp_path, extra, agents))
