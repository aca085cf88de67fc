from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel

from mnemarket.errors import ProviderError
from mnemarket.providers import (
    HashingEmbedder,
    Recording,
    RecordingEmbedder,
    RecordingLLM,
    ReplayDivergence,
    ReplayEmbedder,
    ReplayLLM,
    ScriptedLLM,
)


class Pick(BaseModel):
    pick: Literal["left", "right"]


def run(llm, embedder):
    """A tiny 'run': two LLM calls (one structured) and one embedding call."""
    a = llm.generate([{"role": "user", "content": "say hi"}], max_tokens=16)
    b = llm.generate([{"role": "user", "content": "left or right?"}], schema=Pick, seed=3)
    v = embedder.vectors(["left", "right"])
    return a, b, v


def test_replay_reproduces_a_recorded_run(tmp_path):
    path = tmp_path / "run.jsonl"
    recording = Recording(path)
    llm = RecordingLLM(ScriptedLLM(["hello", '{"pick": "right"}'], name="rec"), recording)
    embedder = RecordingEmbedder(HashingEmbedder(32), recording)
    a, b, v = run(llm, embedder)

    replay_llm, replay_embedder = ReplayLLM(path), ReplayEmbedder(path)
    ra, rb, rv = run(replay_llm, replay_embedder)
    assert ra.model_dump() == a.model_dump()
    assert rb.parsed == b.parsed == Pick(pick="right")
    assert rb.model_id == "scripted:rec"
    np.testing.assert_array_equal(rv, v)
    assert replay_embedder.model_id == "hashing-32" and replay_embedder.dim == 32
    assert replay_llm.remaining == 0


def test_changed_prompt_names_the_diverging_call(tmp_path):
    path = tmp_path / "run.jsonl"
    llm = RecordingLLM(ScriptedLLM(["one", "two"]), Recording(path))
    llm.generate([{"role": "user", "content": "first"}])
    llm.generate([{"role": "user", "content": "second"}])
    replay = ReplayLLM(path)
    replay.generate([{"role": "user", "content": "first"}])
    with pytest.raises(ReplayDivergence, match="LLM call 1 diverged: prompt hash") as info:
        replay.generate([{"role": "user", "content": "second, edited"}])
    assert info.value.index == 1 and info.value.kind == "llm"


def test_changed_parameters_diverge_too(tmp_path):
    path = tmp_path / "run.jsonl"
    RecordingLLM(ScriptedLLM(["one"]), Recording(path)).generate([{"role": "user", "content": "q"}], temperature=0.0)
    with pytest.raises(ReplayDivergence, match="call 0"):
        ReplayLLM(path).generate([{"role": "user", "content": "q"}], temperature=0.5)


def test_extra_calls_and_missing_recordings_are_clear(tmp_path):
    path = tmp_path / "run.jsonl"
    RecordingLLM(ScriptedLLM(["one"]), Recording(path)).generate([{"role": "user", "content": "q"}])
    replay = ReplayLLM(path)
    replay.generate([{"role": "user", "content": "q"}])
    with pytest.raises(ReplayDivergence, match="holds only 1 LLM calls"):
        replay.generate([{"role": "user", "content": "q"}])
    with pytest.raises(ProviderError, match="does not exist"):
        ReplayLLM(tmp_path / "nope.jsonl")
    with pytest.raises(ProviderError, match="no embedding calls"):
        ReplayEmbedder(path)


@pytest.mark.local_model
def test_record_then_replay_the_real_local_model(tmp_path, gemma):
    path = tmp_path / "gemma.jsonl"
    recorded = RecordingLLM(gemma, Recording(path)).generate(
        [{"role": "user", "content": "left or right?"}], schema=Pick, max_tokens=12
    )
    replayed = ReplayLLM(path).generate([{"role": "user", "content": "left or right?"}], schema=Pick, max_tokens=12)
    assert replayed.text == recorded.text and replayed.ok == recorded.ok
    assert replayed.parsed == recorded.parsed and replayed.usage == recorded.usage
    assert replayed.model_id == "local:gemma-3-270m-q4_k_m"


def test_token_counts_are_recorded_once_per_text_and_replayed(tmp_path):
    class Counting(ScriptedLLM):
        def count_tokens(self, text: str) -> int:
            return len(text.split()) + 100  # not the estimate replay would fall back to

    path = tmp_path / "run.jsonl"
    llm = RecordingLLM(Counting(["one"]), Recording(path))
    counts = [llm.count_tokens(t) for t in ("a b c", "a b c", "d")]
    replay = ReplayLLM(path)
    assert [replay.count_tokens(t) for t in ("a b c", "d")] == counts[1:] == [103, 101]
    assert replay.count_tokens("never counted") is None
    assert path.read_text().count('"kind": "tokens"') == 2


def test_a_divergence_names_the_call_being_made_and_the_one_recorded(tmp_path):
    from mnemarket.providers import labelled

    path = tmp_path / "run.jsonl"
    llm = RecordingLLM(ScriptedLLM(["one"]), Recording(path))
    with labelled("agent alpha, session 1, turn 1"):
        llm.generate([{"role": "user", "content": "q"}])
    with labelled("agent alpha, session 1, turn 1"), \
            pytest.raises(ReplayDivergence, match="LLM call 0 diverged at agent alpha, session 1, turn 1: prompt hash"):
        ReplayLLM(path).generate([{"role": "user", "content": "q, edited"}])
    with labelled("agent alpha, session 1, lesson step after turn 1 (failure)"), \
            pytest.raises(ReplayDivergence, match=r"lesson step after turn 1 \(failure\) \(the recording holds agent alpha, "
                                                  r"session 1, turn 1 there\)"):
        ReplayLLM(path).generate([{"role": "user", "content": "q"}], seed=9)
