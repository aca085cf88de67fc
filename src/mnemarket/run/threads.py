"""One BLAS thread while a simulation runs: the embedder and a local model own the cores.

numpy's OpenBLAS splits a matrix-vector product over its threads once the matrix passes ~460,000
cells, a memory store of ~1,200 MiniLM vectors. In a run those threads compete for the same cores
with onnxruntime's pool (and llama.cpp's), and all of them spin while they wait. Measured on 2
vCPUs, one text embedded and then three products (plans/long-runs.md): a 1,250-row store 14.7-17.2
ms in all, 2.9-3.7 on one BLAS thread; 10,000 rows 14.2-15.7 against 7.2-8.3; 100,000 rows 46.8-48.2
against 39.9-40.3. The growth benchmark's agent-turns went from ~18 to ~28 ms as its stores crossed
1,200 rows. On an idle machine one thread is slower (10,000 rows 0.60 against 0.13 ms a product),
and for stores of ~100,000 rows a run would do better still with threaded BLAS and onnxruntime's
spinning off (27.4 ms): not done, as stores of a few thousand are what runs have. Outside a run (the
memory benchmarks, a library user's own process) nothing changes.
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits

RUN_BLAS_THREADS = 1


def run_blas_threads() -> threadpool_limits:
    """Limit every loaded BLAS (numpy's, scipy's) to `RUN_BLAS_THREADS` until the returned context
    exits; the limits in force before are restored then."""
    return threadpool_limits(limits=RUN_BLAS_THREADS, user_api="blas")


__all__ = ["RUN_BLAS_THREADS", "run_blas_threads"]
