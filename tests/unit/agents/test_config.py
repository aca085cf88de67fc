"""Agent YAML: inheritance, file prompts, and errors that name the file, field and what is allowed."""

from __future__ import annotations

import pytest

from mnemarket.agents import check_components, load_agent_config
from mnemarket.errors import ConfigError

from .helpers import COMPONENTS


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_inheritance_merges_dicts_and_replaces_lists(tmp_path):
    write(tmp_path, "base.yaml", "model: local\nrag:\n  limit: 5\n  mode: dense\npreseeded_lessons: ['LESSON: a']\n")
    write(tmp_path, "prompt.md", "You are careful.\n")
    path = write(tmp_path, "alpha.yaml", "extends: base.yaml\nid: alpha\nsystem_prompt: prompt.md\n"
                 "rag:\n  limit: 9\npreseeded_lessons: ['LESSON: b']\n")
    config = load_agent_config(path)
    assert (config.rag.limit, config.rag.mode) == (9, "dense")
    assert config.preseeded_lessons == ["LESSON: b"] and config.system_prompt == "You are careful.\n"
    assert config.store_id == "alpha_longterm" and config.working_memory_id == "alpha_working_memory"


@pytest.mark.parametrize("text, message", [
    ("id: alpha\nrag:\n  limit: 50\n", "alpha.yaml: rag.limit: 50 is out of range 1..20"),
    ("id: alpha\nrag:\n  limt: 5\n", "rag.limt: unknown field; allowed fields here: enabled, filters, limit"),
    ("id: Alpha\n", "id: String should match pattern"),
    ("name: x\n", "id: required field is missing"),
    ("id: alpha\nrag: [\n", "malformed YAML at line"),
    ("- just a list\n", "expected a mapping"),
    ("id: alpha\ntemperature: 3\n", "temperature: 3 is out of range 0.0..2.0"),
    ("id: alpha\nmemory:\n  episodic_capture: [everything]\n", "memory.episodic_capture.0"),
])
def test_errors_name_file_field_and_what_is_allowed(tmp_path, text, message):
    path = write(tmp_path, "alpha.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_agent_config(path)
    assert message in str(info.value)
    assert str(info.value).startswith(str(path))


def test_missing_parent_prompt_file_and_cycles(tmp_path):
    write(tmp_path, "a.yaml", "extends: b.yaml\nid: alpha\n")
    write(tmp_path, "b.yaml", "extends: a.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_agent_config(tmp_path / "a.yaml")
    write(tmp_path, "c.yaml", "extends: nowhere.yaml\nid: alpha\n")
    with pytest.raises(ConfigError, match="file not found"):
        load_agent_config(tmp_path / "c.yaml")
    write(tmp_path, "d.yaml", "id: alpha\nsystem_prompt: missing.md\n")
    with pytest.raises(ConfigError, match="system_prompt file 'missing.md' not found"):
        load_agent_config(tmp_path / "d.yaml")


def test_an_inherited_prompt_file_resolves_beside_the_base_that_names_it(tmp_path):
    (tmp_path / ".git").mkdir()  # one checkout holds both folders, so the base may be named from agents/
    shared, agents = tmp_path / "shared", tmp_path / "agents"
    shared.mkdir()
    agents.mkdir()
    write(shared, "base.yaml", "system_prompt: rules.md\nrag:\n  limit: 4\n")
    write(shared, "rules.md", "The shared rules.\n")
    write(agents, "rules.md", "A file of the same name beside the agent.\n")
    alpha = load_agent_config(write(agents, "alpha.yaml", "extends: ../shared/base.yaml\nid: alpha\n"))
    assert alpha.system_prompt == "The shared rules.\n" and alpha.rag.limit == 4
    # A prompt the agent file declares itself still resolves beside the agent file.
    beta = load_agent_config(write(agents, "beta.yaml", "extends: ../shared/base.yaml\nid: beta\n"
                                   "system_prompt: rules.md\n"))
    assert beta.system_prompt == "A file of the same name beside the agent.\n"


def test_a_missing_inherited_prompt_file_names_the_file_that_declared_it(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "agents").mkdir()
    base = write(tmp_path / "shared", "base.yaml", "system_prompt: gone.md\n")
    agent = write(tmp_path / "agents", "alpha.yaml", "extends: ../shared/base.yaml\nid: alpha\n")
    write(tmp_path / "agents", "gone.md", "beside the agent, not the base\n")
    with pytest.raises(ConfigError) as info:
        load_agent_config(agent)
    message = str(info.value)
    assert message.startswith(str(base.resolve())) and "system_prompt" in message
    assert str(tmp_path / "shared" / "gone.md") in message and f"inherited by {agent}" in message


def test_unknown_components_and_steps_are_named(tmp_path):
    config = load_agent_config(write(tmp_path, "a.yaml", "id: alpha\ncomponents: [semantic_memry]\n"))
    with pytest.raises(ConfigError, match="Did you mean 'semantic_memory'"):
        check_components(config, COMPONENTS, "a.yaml")
    config = load_agent_config(write(tmp_path, "b.yaml", "id: alpha\nworkflow:\n  steps: [{name: a, prompt: p}]\n"
                                     "  transitions: {a: b}\n"))
    with pytest.raises(ConfigError, match="unknown step"):
        check_components(config, COMPONENTS)
    assert set(COMPONENTS) >= {"semantic_memory", "loop_breaker", "verbose_memory"}


def test_decision_schema_admits_every_registered_method_name():
    from mnemarket.agents.decision import Decision
    from mnemarket.genesis import install_genesis
    from mnemarket.kernel import World
    from mnemarket.providers.hashing_embedder import HashingEmbedder

    world = World()
    install_genesis(world, HashingEmbedder())
    limit = Decision.model_fields["method"].metadata[0].max_length
    longest = max((m for inv in world.invokables.values() for m in inv.methods), key=len)
    assert len(longest) <= limit, longest


def test_query_template_placeholders_are_the_turn_variables():
    from mnemarket.agents.config import QUERY_VARIABLES

    from .helpers import make_agent

    agent, _ = make_agent(lambda messages, schema: {"action_type": "noop"})
    assert set(agent.variables(agent.history(), "act", 1, 1)) == set(QUERY_VARIABLES)
