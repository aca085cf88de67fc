"""The Generative-Agents-compatible MemoryStream facade."""

from __future__ import annotations

import json

import pytest

from mnemarket.errors import UserError
from mnemarket.memory import MemoryStream
from mnemarket.providers import MINILM_MODEL_ID, HashingEmbedder, ScriptedLLM


def policy(messages, schema):
    name = schema.__name__
    if name == "ImportanceScore":
        return {"score": 80 if "graduated" in messages[-1].content else 20}
    if name == "Insights":  # as many as asked for ("What are N high-level insights")
        count = int(messages[-1].content.split("What are ")[1].split()[0])
        return {"insights": ["I value education", "I work hard"][:count]}
    raise AssertionError(name)


def test_remember_retrieve_and_count(embedder):
    stream = MemoryStream(embedder=embedder)
    node = stream.remember("I graduated from college with honors", time_step=1)
    stream.remember("I ate a sandwich", time_step=2)
    assert (node.node_id, node.node_type, node.created, node.pointer_id) == (0, "observation", 1, None)
    assert 0 <= node.importance <= 100 and stream.store.get("0").metadata["importance_source"] == "heuristic"
    assert stream.count_observations() == 2
    out = stream.retrieve(["college honors"], time_step=5, n_count=2)
    assert list(out) == ["college honors"]
    assert [n.created for n in out["college honors"]] == [1, 2]  # chronological
    assert all(n.last_retrieved == 5 for n in out["college honors"])  # retrieval updates last_retrieved
    stateless = stream.retrieve("college", time_step=9, n_count=1, stateless=True)["college"]
    assert stateless[0].last_retrieved == 5
    with pytest.raises(UserError, match="curr_filter"):
        stream.retrieve(["x"], curr_filter="memories")
    with pytest.raises(UserError, match="three non-negative weights"):
        stream.retrieve(["x"], hp=[1, 2])


def test_llm_rates_and_reflects_with_pointers(embedder):
    stream = MemoryStream(embedder=embedder, llm=ScriptedLLM(policy))
    stream.remember("I graduated from college with honors", time_step=1)
    stream.remember("I studied every night", time_step=2)
    assert stream.seq_nodes[0].importance == pytest.approx(80) and stream.seq_nodes[1].importance == pytest.approx(20)
    report = stream.reflect("education", reflection_count=2, retrieval_count=2, time_step=3)
    assert len(report.ids) == 2
    nodes = stream.seq_nodes
    assert [n.node_type for n in nodes] == ["observation", "observation", "reflection", "reflection"]
    assert sorted(nodes[2].pointer_id) == [0, 1] and nodes[2].importance == pytest.approx(20)
    assert stream.count_observations() == 2
    only = stream.retrieve(["education"], curr_filter="reflection", n_count=10)["education"]
    assert {n.node_type for n in only} == {"reflection"}
    with pytest.raises(UserError, match="needs an LLM"):
        MemoryStream(embedder=embedder).reflect("x")


def test_save_and_load_round_trip(tmp_path, embedder):
    stream = MemoryStream(embedder=embedder, llm=ScriptedLLM(policy))
    stream.remember("I graduated from college with honors", time_step=1)
    stream.remember("I studied every night", time_step=2)
    stream.reflect("education", reflection_count=1, retrieval_count=2, time_step=3)
    stream.save(tmp_path / "agent")
    nodes = json.loads((tmp_path / "agent" / "nodes.json").read_text())
    embeddings = json.loads((tmp_path / "agent" / "embeddings.json").read_text())
    assert [n["node_id"] for n in nodes] == [0, 1, 2] and set(embeddings) == {n["content"] for n in nodes}
    loaded = MemoryStream.load(tmp_path / "agent", embedder=embedder)
    assert [n.package() for n in loaded.seq_nodes] == [n.package() for n in stream.seq_nodes]
    original = stream.store.get("0", with_embedding=True).embedding
    assert (loaded.store.get("0", with_embedding=True).embedding == pytest.approx(original, abs=1e-7))
    assert "re-embedded" not in loaded.store.audit_log("add")[0].reason
    other = MemoryStream.load(tmp_path / "agent", embedder=HashingEmbedder(dim=32))  # another model: re-embed
    assert other.store.embedding_model == "hashing-32" and "re-embedded" in other.store.audit_log("add")[0].reason
    assert other.retrieve(["college"], n_count=1)["college"][0].content.startswith("I graduated")


def test_genagents_files_without_meta_load_and_malformed_ones_explain(tmp_path, embedder):
    folder = tmp_path / "ga" / "memory_stream"
    folder.mkdir(parents=True)
    (folder / "nodes.json").write_text(json.dumps([
        {"node_id": 0, "node_type": "observation", "content": "I like tea", "importance": 30, "created": 0,
         "last_retrieved": 0, "pointer_id": None},
        {"node_id": 1, "node_type": "reflection", "content": "I enjoy calm", "importance": 70, "created": 1,
         "last_retrieved": 1, "pointer_id": [0]}]))
    (folder / "embeddings.json").write_text(json.dumps({"I like tea": [0.1] * 1536, "I enjoy calm": [0.2] * 1536}))
    stream = MemoryStream.load(tmp_path / "ga", embedder=embedder)
    assert stream.count_observations() == 1 and stream.seq_nodes[1].pointer_id == [0]
    assert stream.seq_nodes[1].importance == pytest.approx(70)
    (folder / "nodes.json").write_text(json.dumps([{"node_type": "observation"}]))
    with pytest.raises(UserError, match="node 0 .* is malformed"):
        MemoryStream.load(folder, embedder=embedder)
    with pytest.raises(UserError, match="no nodes.json"):
        MemoryStream.load(tmp_path / "nowhere", embedder=embedder)


def test_no_argument_stream_uses_the_default_embedder():
    stream = MemoryStream()
    stream.remember("The bakery on Main Street sells sourdough bread", time_step=1)
    stream.remember("My sister called about the weekend", time_step=2)
    best = stream.retrieve(["where can I buy bread?"], time_step=3, n_count=1)["where can I buy bread?"][0]
    assert best.content.startswith("The bakery")
    assert stream.store.embedding_model == MINILM_MODEL_ID
