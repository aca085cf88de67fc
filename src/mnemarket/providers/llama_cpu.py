"""Loading llama.cpp safely on any x86-64 CPU.

llama.cpp repacks weights into "extra" CPU buffer types at load (AMX tiles on Intel Sapphire
Rapids and later, interleaved Q4 blocks on AVX2/AVX-512). On CPUs with AMX the repacked model
segfaults at the first decode (upstream ggml-org/llama.cpp issues 20824 and 19184). Extra
buffer types are off on every CPU, so every machine, ours and CI included, runs the code path an
AMX machine runs; on our AVX-512 CPU that costs a few per cent of decoding speed and nothing in
prompt evaluation (plans/local-inference.md, benchmarks/README.md), and the decision latency target
holds without it.
``MNEMARKET_LLAMA_EXTRA_BUFTS=1`` turns them back on.

A native crash cannot be caught inside the process that crashes, so :func:`check_model_runs`
loads the model and decodes a few tokens once in a child process, per llama.cpp build, CPU and
setting, and turns a crash there into a :class:`ProviderError` that names the cause and the fix.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from mnemarket.errors import ProviderError

ENV_EXTRA_BUFTS = "MNEMARKET_LLAMA_EXTRA_BUFTS"
ENV_SKIP_CHECK = "MNEMARKET_LLAMA_SKIP_CHECK"
AMX_FLAGS = frozenset({"amx_tile", "amx_int8", "amx_bf16"})
CHECK_TIMEOUT_S = 120


def flags_in_cpuinfo(text: str) -> frozenset[str]:
    """The feature flags of the first processor listed in /proc/cpuinfo text (empty if none)."""
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def has_amx(flags: frozenset[str]) -> bool:
    """Whether a CPU with these flags has AMX (the tiles llama.cpp's repack crashes on)."""
    return bool(flags & AMX_FLAGS)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU's feature flags (Linux); empty where /proc/cpuinfo is unreadable."""
    try:
        return flags_in_cpuinfo(cpuinfo.read_text(errors="replace"))
    except OSError:
        return frozenset()


def use_extra_buffer_types() -> bool:
    """Whether llama.cpp may repack weights into extra buffer types: off unless the env says 1.

    Raises:
        ProviderError: ``MNEMARKET_LLAMA_EXTRA_BUFTS`` is set to something other than 0 or 1.
    """
    override = (os.environ.get(ENV_EXTRA_BUFTS) or "0").strip()
    if override not in ("0", "1"):
        raise ProviderError(f"{ENV_EXTRA_BUFTS}={override!r}; set it to 0 (off, the default) or 1 (on), or unset it")
    return override == "1"


def llama_model(path: Path, *, n_ctx: int, threads: int | None, extra_bufts: bool, n_batch: int = 512) -> Any:
    """A ``llama_cpp.Llama`` whose model params carry ``use_extra_bufts=extra_bufts``.

    ``Llama`` takes no such argument; it reads ``llama_model_default_params()`` once while
    loading, so that call is wrapped for the duration of the load (callers hold a lock).
    """
    import llama_cpp
    from llama_cpp import llama as llama_module

    low_level = llama_module.llama_cpp
    original = low_level.llama_model_default_params

    if "use_extra_bufts" not in {field[0] for field in low_level.llama_model_params._fields_}:
        raise ProviderError(f"llama-cpp-python {llama_cpp.__version__} cannot switch off repacked weight buffers; "
                            "upgrade it: pip install 'llama-cpp-python>=0.3.36,<0.4'")

    def params() -> Any:
        value = original()
        value.use_extra_bufts = extra_bufts
        return value

    low_level.llama_model_default_params = params
    try:
        return llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_batch=n_batch, n_threads=threads,
                               n_threads_batch=threads, verbose=False, seed=0)
    finally:
        low_level.llama_model_default_params = original


_PROBE = """
import sys
from pathlib import Path
from mnemarket.providers.llama_cpu import llama_model
llama = llama_model(Path(sys.argv[1]), n_ctx=256, threads=int(sys.argv[2]) or None, extra_bufts=sys.argv[3] == "1")
llama.eval(llama.tokenize(b"The market opens at dawn and", add_bos=True))
llama.eval([llama.token_eos()])
"""


def _check_key(path: Path, extra_bufts: bool) -> str:
    import llama_cpp

    library = Path(llama_cpp.__file__).parent
    builds = sorted(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in library.rglob("*.so*"))
    stat = path.stat()
    parts = [llama_cpp.__version__, *builds, str(path), str(stat.st_size), " ".join(sorted(cpu_flags())),
             str(extra_bufts)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def check_model_runs(path: Path, *, extra_bufts: bool, marker_dir: Path, threads: int | None = None) -> None:
    """Load and decode once in a child process; remember success for this build, CPU and setting.

    Raises:
        ProviderError: the child crashed or failed; the message names the signal and what to do.
    """
    if os.environ.get(ENV_SKIP_CHECK) == "1":
        return
    marker = marker_dir / f"llama-ok-{_check_key(path, extra_bufts)}"
    if marker.is_file():
        return
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, str(path), str(threads or 0), "1" if extra_bufts else "0"],
                              capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ProviderError(f"llama.cpp did not finish a 10-token test decode of {path.name} in {CHECK_TIMEOUT_S} s; "
                            f"the machine may be overloaded (set {ENV_SKIP_CHECK}=1 to skip this check)") from None
    if done.returncode == 0:
        marker_dir.mkdir(parents=True, exist_ok=True)
        marker.write_text("ok\n")
        return
    raise ProviderError(crash_message(done.returncode, extra_bufts, done.stderr))


def crash_message(returncode: int, extra_bufts: bool, stderr: str = "") -> str:
    """One line naming why the local model died and what to do about it."""
    if returncode < 0:
        try:
            cause = f"crashed with {signal.Signals(-returncode).name}"
        except ValueError:
            cause = f"was killed by signal {-returncode}"
    else:
        last = (stderr.strip().splitlines() or ["no message"])[-1][:200]
        cause = f"failed (exit {returncode}: {last})"
    amx = " This CPU has AMX." if has_amx(cpu_flags()) else ""
    if extra_bufts:
        fix = f"set {ENV_EXTRA_BUFTS}=0 to load without repacked weight buffers"
    else:
        fix = ("rebuild llama-cpp-python for a portable CPU: CMAKE_ARGS='-DGGML_NATIVE=OFF' "
               "pip install --force-reinstall --no-cache-dir llama-cpp-python")
    return (f"the local model (llama.cpp) {cause} in a test decode on this CPU.{amx} To fix: {fix}; "
            f"or use another model (--model gemini:... or openai:...). The run is unchanged and resumes.")


__all__ = ["AMX_FLAGS", "ENV_EXTRA_BUFTS", "ENV_SKIP_CHECK", "check_model_runs", "cpu_flags", "crash_message",
    "flags_in_cpuinfo", "has_amx", "llama_model", "use_extra_buffer_types"]
