"""Fuzz: the YAML loaders and the structured-output reply parser take anything without a traceback.

Configuration files (agent, genesis, scenario) either load or raise one `ConfigError` naming the
file, whatever they hold: arbitrary YAML, the models' own fields with arbitrary values, alias
bombs, runaway nesting, binary or non-UTF-8 bytes. YAML an agent writes into its working memory
never raises out of its parsers. A model's reply either parses into a decision (whose action
payload then builds) or comes back as a reason; it never raises.
"""

from __future__ import annotations

import contextlib
import json
import re

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemarket.agents.config import AgentConfig, load_agent_config
from mnemarket.agents.decision import Decision, decision_schema, to_action_payload
from mnemarket.agents.working_memory import load_agent_yaml, parse_working_memory, prefixed_entries
from mnemarket.errors import ConfigError
from mnemarket.genesis.config import GenesisConfig, load_genesis_config
from mnemarket.providers.structured import parse_structured, tight_json_schema, trim_to_schema
from mnemarket.run.scenario import ScenarioConfig, load_scenario
from tests.unit.kernel.test_fuzz_submit import JSON, TEXT

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])


def _alias_bomb(depth: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, depth)]
    return "\n".join(lines) + "\n"


def _fields(model) -> st.SearchStrategy[dict]:
    """The model's own field names (and a few nested ones) with arbitrary values."""
    names = [*model.model_fields, "extends", "memory.store_id", "rag", "bounties", "agents", "costs"]
    return st.dictionaries(st.sampled_from(names), JSON, max_size=6).map(
        lambda d: {k.split(".")[0]: ({k.split(".")[1]: v} if "." in k else v) for k, v in d.items()})


def _dump(value) -> str:
    return yaml.safe_dump(value, allow_unicode=True) if json.dumps(value, default=str) else ""


TEXTS = st.one_of(
    TEXT,
    JSON.map(lambda v: yaml.safe_dump(v, allow_unicode=True)),
    st.builds(_alias_bomb, st.integers(1, 12)),
    st.builds(lambda n: "a: " + "[" * n + "]" * n + "\n", st.sampled_from([1, 50, 2_000])),
    st.builds(lambda n: "".join(f"{' ' * i}k{i}:\n" for i in range(n)), st.sampled_from([1, 30, 300])),
    st.sampled_from(["extends: /etc/passwd\n", "extends: ../../../etc/shadow.yaml\n", "extends: [1]\n",
                     "services: [{cls: 'subprocess:Popen', options: {args: ls}}]\n", "{{{", ": : :", "- - -",
                     "id: !!python/object/apply:os.system [ls]\n", "memory: {store_id: '{0}'}\n"]),
)
FILES = st.one_of(
    TEXTS.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=200),
    _fields(AgentConfig).map(lambda d: yaml.safe_dump(d, allow_unicode=True).encode("utf-8", "surrogatepass")),
    _fields(GenesisConfig).map(lambda d: yaml.safe_dump(d, allow_unicode=True).encode("utf-8", "surrogatepass")),
    _fields(ScenarioConfig).map(lambda d: yaml.safe_dump(d, allow_unicode=True).encode("utf-8", "surrogatepass")),
)
LOADERS = [load_agent_config, load_genesis_config, load_scenario]


@FAST
@given(FILES)
def test_configuration_loaders_load_or_raise_one_config_error(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("yaml") / "config.yaml"
    path.write_bytes(content)
    for loader in LOADERS:
        try:
            loader(path)
        except ConfigError as exc:
            message = str(exc)  # names the file (or the file it extends) and stays short
            assert (str(path) in message or re.search(r"\S+\.ya?ml:", message)) and len(message) < 5_000, message[:300]
            assert "root:" not in message  # never the content of a file it was pointed at (/etc/passwd)


@FAST
@given(TEXTS)
def test_agent_written_yaml_never_raises_out_of_its_parsers(text):
    with contextlib.suppress(yaml.YAMLError):
        load_agent_yaml(text)
    memory = parse_working_memory(text)
    assert memory is not None
    entries = prefixed_entries(text, ["LESSON:", "STRATEGY:"])
    assert all(e.upper().startswith(("LESSON:", "STRATEGY:")) for e in entries)


DECISION_KEYS = [*Decision.model_fields, "action_type", "target", "args"]
REPLIES = st.one_of(
    TEXT,
    st.builds(json.dumps, JSON),
    st.dictionaries(st.sampled_from(DECISION_KEYS), JSON, max_size=6).map(json.dumps),
    st.tuples(TEXT, st.dictionaries(st.sampled_from(DECISION_KEYS), JSON, max_size=6), TEXT).map(
        lambda t: f"{t[0]}```json\n{json.dumps(t[1])}\n```{t[2]}"),
    st.builds(lambda n: "{" * n + "}" * n, st.integers(1, 20_000)),
)


@FAST
@given(REPLIES, st.sampled_from([80, 400, 2000]))
def test_the_reply_parser_returns_a_decision_or_a_reason(reply, text_chars):
    schema = decision_schema(text_chars)
    trimmed = trim_to_schema(reply, tight_json_schema(schema))
    parsed, reason = parse_structured(trimmed, schema)
    assert (parsed is None) != (reason is None)
    if parsed is not None:
        payload = to_action_payload(parsed)
        assert payload["action_type"] == parsed.action_type
    else:
        assert isinstance(reason, str) and reason
