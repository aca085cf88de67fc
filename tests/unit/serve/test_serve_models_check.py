"""`mnemarket models check` against a real `mnemarket serve` (runs on every x86-64 CPU, AMX included):
negotiation settles on json_schema and the version that answered names the exact GGUF."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app

pytestmark = pytest.mark.local_model


def test_models_check_against_mnemarket_serve_prints_json_schema_and_the_gguf(served):
    model = f"openai:{served.url}:local"
    result = CliRunner().invoke(app, ["models", "check", model, "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["ok"] and shown["structured_mode"] == "json_schema"
    assert shown["model_version"].startswith("gemma-3-270m-q4_k_m.gguf@sha256:")
    assert shown["server"] == served.url and shown["latency_s"] > 0
