"""The search defaults are the ones the LoCoMo table in benchmarks/README.md chose, and the
contextual records behind them behave as documented."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mnemarket.agents.config import RagConfig
from mnemarket.memory import DEFAULT_WEIGHTS, PRESETS, MemoryStore, RetrievalWeights
from mnemarket.memory.presets import MemoryPreset

ROOT = Path(__file__).resolve().parents[3]


def test_defaults_are_what_the_table_chose(embedder):
    store = MemoryStore(embedder)
    assert (store.mode, store.neighbour_context) == ("hybrid", True)
    w = DEFAULT_WEIGHTS
    assert (w.fusion, w.dense_weight, w.context_weight) == ("zscore", 0.65, 0.15)
    assert (w.speaker_weight, w.session_weight, w.time_weight) == (2.0, 0.4, 1.0)  # issue 37's cues
    assert (w.relevance, w.recency, w.importance) == (1.0, 0.0, 0.0)
    assert store.weights == w
    assert RagConfig().mode == "hybrid" and RagConfig().weights is None  # agents' RAG: the store's defaults
    assert MemoryPreset(name="new", description="", weights=RetrievalWeights(), k=5).mode == "hybrid"
    # presets named after source systems keep their systems' cosine ranking
    assert {name: p.mode for name, p in PRESETS.items()} == dict.fromkeys(PRESETS, "dense")


def test_bm25_reads_a_record_with_the_previous_one_of_the_same_time(embedder):
    texts = [("Mel: what did you research last week?", 1.0), ("Caro: adoption agencies, mostly", 1.0),
             ("Caro: I research cooking now", 2.0), ("Mel: nice weather", 3.0)]
    store = MemoryStore(embedder)
    ids = [store.add(t, created=c) for t, c in texts]
    # "adoption agencies" never says "research": it is found through the question turn before it
    assert {h.id for h in store.search("research", mode="lexical", touch=False)} == {ids[0], ids[1], ids[2]}
    # a record of another time lends nothing: "nice weather" (created 3) does not match "cooking"
    assert {h.id for h in store.search("cooking", mode="lexical", touch=False)} == {ids[2]}
    plain = MemoryStore(embedder, neighbour_context=False)
    plain_ids = [plain.add(t, created=c) for t, c in texts]
    assert {h.id for h in plain.search("research", mode="lexical", touch=False)} == {plain_ids[0], plain_ids[2]}


def test_deleting_a_context_record_keeps_the_index_statistics(embedder):
    store = MemoryStore(embedder)
    ids = [store.add(t, created=1.0) for t in ("alpha beta", "gamma", "delta alpha")]
    store.search("alpha", mode="lexical", touch=False)  # build the index
    store.delete(ids[0])
    index = store._ensure_lexical()
    # "alpha beta" leaves as it was indexed; the survivors keep the context they were indexed with
    # ("alpha beta gamma", "gamma delta alpha") until a reopen or compaction re-derives it
    assert index.n_docs == 2 and index.total_len == 3 + 3
    assert index.df[index.vocab["alpha"]] == 2 and index.df[index.vocab["beta"]] == 1


def test_neighbour_context_lifts_the_turn_after_a_strong_match(embedder):
    store = MemoryStore(embedder)
    question = store.add("Mel: which bakery sells saffron buns?", created=1.0)
    answer = store.add("Caro: the one by the harbour", created=1.0)
    others = [store.add(f"Caro: unrelated note number {i}", created=float(i + 2)) for i in range(6)]
    with_context = [h.id for h in store.search("saffron buns bakery", k=3, touch=False)]
    without = [h.id for h in store.search("saffron buns bakery", k=3, touch=False,
                                           weights=RetrievalWeights(context_weight=0.0))]
    assert with_context[:2] == [question, answer]
    assert with_context.index(answer) <= without.index(answer) if answer in without else True
    assert set(others) & set(with_context[:2]) == set()


def _write_conversation(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = {"speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1 May", "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I painted a sunrise."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a photo of a lake"}],
            "session_2_date_time": "2 May", "session_2": [
                {"speaker": "Ann", "dia_id": "D2:1", "text": "I adopted a dog."}],
            "qa": [{"question": "What did Ann paint?", "answer": "a sunrise", "evidence": ["D1:1"], "category": 4},
                   {"question": "What pets?", "answer": "dog", "evidence": ["D2:1; D1:2"], "category": 1},
                   {"question": "Trick?", "answer": "", "evidence": ["D1:1"], "category": 5},
                   {"question": "No evidence?", "answer": "", "evidence": [], "category": 2}]}
    (folder / "1.json").write_text(json.dumps(data))


def test_locomo_loader_reads_turns_and_answerable_questions(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import locomo_dev
    finally:
        sys.path.pop(0)
    _write_conversation(tmp_path / "dev")
    (conv,) = locomo_dev.load(tmp_path / "dev")
    assert [t["text"] for t in conv.turns] == ["Ann: I painted a sunrise.", "Bo: Lovely! shares a photo of a lake",
                                               "Ann: I adopted a dog."]
    assert [t["created"] for t in conv.turns] == [1.0, 1.0, 2.0]
    assert [(t["speaker"], t["date"]) for t in conv.turns] == [("Ann", "1 May"), ("Bo", "1 May"), ("Ann", "2 May")]
    assert [(q["question"], q["evidence"]) for q in conv.questions] == [
        ("What did Ann paint?", {"D1:1"}), ("What pets?", {"D2:1", "D1:2"})]
    # LoCoMo's numbering, read through the eval's reader (4 is single-hop, 1 multi-hop; 5 is not queried)
    assert [locomo_dev.CATEGORIES[q["category"]] for q in conv.questions] == ["single-hop", "multi-hop"]
    assert sorted(locomo_dev.CATEGORIES) == [1, 2, 3, 4]
    assert locomo_dev.load(tmp_path / "absent") is None


def _run_quality(tmp_path: Path, folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MNEMARKET_LOCOMO_DIR": str(folder), "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "memory_quality.py"), "--sets", "locomo",
                           "--embedder", "hashing"], check=False, capture_output=True, text=True, env=env, timeout=300)


def test_dev_set_benchmark_skips_cleanly_without_the_data(tmp_path):
    result = _run_quality(tmp_path, tmp_path / "nowhere")
    assert result.returncode == 0, result.stderr
    assert "LoCoMo dev set not found at" in result.stdout and "MNEMARKET_LOCOMO_DIR" in result.stdout


@pytest.mark.parametrize("name", ["store default"])
def test_dev_set_benchmark_runs_on_a_tiny_set(tmp_path, name):
    _write_conversation(tmp_path / "dev")
    result = _run_quality(tmp_path, tmp_path / "dev")
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith(f"| {name} |"))
    assert len(row.split("|")) == 2 + 5 + 2  # config, 4 measures, 2 categories present


def test_preset_reflectors_keep_their_systems_dense_retrieval():
    assert PRESETS["dual"].make_reflector().mode == "dense"
    assert PRESETS["dual"].make_reflector(mode="hybrid").mode == "hybrid"
