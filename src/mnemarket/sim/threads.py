"""One BLAS thread while a simulation runs: the embedder and a local model own the cores.

numpy's OpenBLAS splits a matrix-vector product over its threads once the matrix passes ~460,000
cells, a memory store of ~1,200 MiniLM vectors. In a run those threads compete for the same cores
with onnxruntime's pool (and llama.cpp's), and all of them spin while they wait. On 2 vCPUs, three
searches of a 1,250-row store right after an embedding took 4.6 ms instead of 0.15, and the
embedding 6.5 ms instead of 2.5; the growth benchmark's agent-turns went from ~18 to ~28 ms as its
stores crossed that size. A product that small is bound by memory bandwidth, so a run loses nothing
on one thread. Outside a run (the memory benchmarks, a library user's own process) nothing changes.
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits

RUN_BLAS_THREADS = 1


def run_blas_threads() -> threadpool_limits:
    """Limit every loaded BLAS (numpy's, scipy's) to `RUN_BLAS_THREADS` until the returned context
    exits; the limits in force before are restored then."""
    return threadpool_limits(limits=RUN_BLAS_THREADS, user_api="blas")


__all__ = ["RUN_BLAS_THREADS", "run_blas_threads"]
