"""One BLAS thread while a simulation runs: the embedder and a local model own the cores.

numpy's OpenBLAS splits a matrix-vector product over its threads once a memory store passes ~1,200
MiniLM vectors; in a run those threads compete for the same cores with onnxruntime's pool (and
llama.cpp's), and all of them spin while they wait. One thread wins for the stores runs have (the
measurements: plans/long-runs.md "One BLAS thread during a run"). Outside a run (the memory
benchmarks, a library user's own process) nothing changes.
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits

RUN_BLAS_THREADS = 1


def run_blas_threads() -> threadpool_limits:
    """Limit every loaded BLAS (numpy's, scipy's) to `RUN_BLAS_THREADS` until the returned context
    exits; the limits in force before are restored then."""
    return threadpool_limits(limits=RUN_BLAS_THREADS, user_api="blas")


__all__ = ["RUN_BLAS_THREADS", "run_blas_threads"]
