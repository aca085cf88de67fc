"""`mnemarket models check` against a real OpenAI-compatible server: llama-cpp-python's own server
serving the shipped Gemma 3 270M on 127.0.0.1 (started by test_llama_server's fixture), skipped where
that server crashes (AMX CPUs) exactly as test_llama_server is. The same check against
`mnemarket serve`, which runs on every CPU, is in tests/unit/serve/test_serve_models_check.py."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app
from tests.unit.providers.test_llama_server import llama_server  # noqa: F401  (the fixture)
from tests.unit.providers.test_llama_server import pytestmark as STOCK_SERVER_MARKS


@pytest.mark.parametrize("flavour", [pytest.param("stock", marks=STOCK_SERVER_MARKS)])
def test_models_check_prints_the_mode_and_version_that_answered(llama_server, flavour):  # noqa: F811
    model = f"openai:{llama_server}:gemma"
    result = CliRunner().invoke(app, ["models", "check", model, "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["ok"] and shown["structured_mode"] == "json_object"  # this server refuses json_schema
    assert shown["model_version"] == "gemma" and shown["server"] == llama_server and shown["latency_s"] > 0
    line = CliRunner().invoke(app, ["models", "check", model])
    assert line.exit_code == 0 and line.stdout.startswith(f"ok {model}: mode json_object, version gemma")


def test_models_check_of_a_closed_port_is_one_line_and_a_non_zero_exit():
    result = CliRunner().invoke(app, ["models", "check", "openai:http://127.0.0.1:9/v1:x"])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 3 and len(lines) == 1
    assert lines[0].startswith("error: failed openai:http://127.0.0.1:9/v1:x") and "ConnectError" in lines[0]
