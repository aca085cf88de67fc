"""A run keeps BLAS on one thread (its searches must not fight the embedder for the cores) and
gives the process its own limits back when it ends."""

from __future__ import annotations

from threadpoolctl import threadpool_info, threadpool_limits

from mnemarket.experiments.pipeline import run_scenario
from mnemarket.run.runner import RunOptions
from mnemarket.run.threads import RUN_BLAS_THREADS, run_blas_threads

from .fast_demo import fast_demo


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_the_limit_holds_inside_and_is_undone_after():
    assert _blas_threads(), "numpy loads a BLAS"
    with threadpool_limits(limits=3, user_api="blas"):
        with run_blas_threads():
            assert _blas_threads() == {RUN_BLAS_THREADS}
        assert _blas_threads() == {3}


def test_a_run_plays_on_one_blas_thread_and_restores_the_process_limit(tmp_path):
    seen: list[set[int]] = []
    with threadpool_limits(limits=3, user_api="blas"):
        status = run_scenario(fast_demo(tmp_path, sessions=1, turns=2), tmp_path / "run",
                              RunOptions(model="scripted"), progress=lambda *_: seen.append(_blas_threads()))
        after = _blas_threads()
    assert status.state == "finished" and seen
    assert all(threads == {1} for threads in seen)
    assert after == {3}
