"""`mnemarket validate` on an experiment whose `models:` mapping gives profiles with prices: the
budget line's money comes from the price the run would bill (the profile's, else the list's), and
a Gemini model without a list price is accepted when its profile prices it, as the run accepts it."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.providers import DEFAULT_PRICE_TABLE

ROOT = Path(__file__).resolve().parents[3]
SOURCE = "https://example.org/prices"


def _price(inp: float, out: float, **more) -> dict:
    return {"input_per_million": inp, "output_per_million": out, "checked": "2026-11-25", "source": SOURCE, **more}


def _validate(tmp_path: Path, models: dict) -> tuple[int, str]:
    path = tmp_path / "priced.yaml"
    path.write_text(yaml.safe_dump({
        "name": "priced", "scenario": str(ROOT / "config" / "demo.yaml"), "models": models,
        "configs": {"base": {}}, "seeds": [1], "sessions": 1, "turns": 2}))
    result = CliRunner().invoke(app, ["validate", str(path)])
    return result.exit_code, result.output


def _money(output: str, model: str) -> tuple[int, float, str]:
    """(token bound, USD bound, where the price came from) of ``model``'s part of the budget line."""
    budget = " ".join(line for line in output.splitlines() if line.startswith("budget:"))
    match = re.search(re.escape(model) + r": \d+ model decisions, at most ([\d,]+) tokens, at most ([\d.]+) USD "
                      r"\((\w+) price", budget)
    assert match, output
    return int(match.group(1).replace(",", "")), float(match.group(2)), match.group(3)


def test_the_budget_line_bills_at_the_profile_price_and_the_list_price_without_one(tmp_path):
    code, output = _validate(tmp_path, {
        "gemini:gemini-3.6-flash": {"price": _price(2.0, 40.0)},   # listed at 0.75 / 3.75 until 2026-12-31
        "gemini:gemini-3.5-flash-lite": None,
        "openai:http://10.0.0.5:8000/v1:Qwen/Qwen3-8B": {"price": _price(0.5, 1.5)},
    })
    assert code == 0, output
    tokens, usd, source = _money(output, "gemini:gemini-3.6-flash")
    assert source == "profile" and usd == round(tokens * 40.0 / 1e6, 2)
    listed = DEFAULT_PRICE_TABLE.price("gemini-3.6-flash")
    assert usd != round(tokens * max(listed.input_per_million, listed.output_per_million) / 1e6, 2)
    tokens, usd, source = _money(output, "gemini:gemini-3.5-flash-lite")
    lite = DEFAULT_PRICE_TABLE.price("gemini-3.5-flash-lite")
    assert source == "list" and usd == round(tokens * max(lite.input_per_million, lite.output_per_million) / 1e6, 2)
    # An OpenAI-compatible model has no list price: its profile's is the only one, and it is used.
    tokens, usd, source = _money(output, "openai:http://10.0.0.5:8000/v1:Qwen/Qwen3-8B")
    assert source == "profile" and usd == round(tokens * 1.5 / 1e6, 2)


def test_a_gemini_model_without_a_list_price_is_valid_when_its_profile_prices_it(tmp_path):
    code, output = _validate(tmp_path, {"gemini:gemini-3.7-flash": None})
    assert code != 0 and "no price for model 'gemini-3.7-flash'" in output
    code, output = _validate(tmp_path, {"gemini:gemini-3.7-flash": {"price": _price(1.0, 6.0)}})
    assert code == 0, output
    tokens, usd, source = _money(output, "gemini:gemini-3.7-flash")
    assert source == "profile" and usd == round(tokens * 6.0 / 1e6, 2)


def test_a_profile_price_that_has_run_out_is_refused_as_the_run_refuses_it(tmp_path):
    code, output = _validate(tmp_path, {"gemini:gemini-3.7-flash": {"price": _price(1.0, 6.0, until="2026-01-31")}})
    assert code != 0 and "models.0" in output and "held until 2026-01-31" in output


def test_the_budget_line_quotes_what_the_provider_bills_for_a_forwarded_name(tmp_path, monkeypatch):
    """gemini-3.5-flash answers as gemini-3.6-flash, which has a list price: the run must still bill
    the profile's, the one ``validate`` quotes. Checked against a GeminiLLM built as the run builds it."""
    from mnemarket.providers.gemini_llm import GeminiLLM
    from mnemarket.providers.profiles import ModelProfile, profile_options
    from tests.unit.providers.fake_servers import FakeResponse, FakeServer, gemini_api, gemini_generate_body

    spec, body = "gemini:gemini-3.5-flash", {"price": _price(2.0, 40.0)}
    code, output = _validate(tmp_path, {spec: body})
    assert code == 0, output
    tokens, usd, source = _money(output, spec)
    assert source == "profile"
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-real")  # good only for the local fake server
    reply = gemini_generate_body('{"ok": 1}', 0, tokens, version="gemini-3.6-flash-001")  # all output: the dearer rate
    with FakeServer(gemini_api(lambda request: FakeResponse(body=reply))) as server:
        llm = GeminiLLM("gemini-3.5-flash", **profile_options(spec, ModelProfile.model_validate(body)),
                        base_url=server.url, attempts=1)
        result = llm.generate([{"role": "user", "content": "hi"}], max_tokens=16)
    assert result.cost > 0 and usd == round(result.cost, 2)
