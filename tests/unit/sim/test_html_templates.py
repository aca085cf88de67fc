"""The pages' template environment: autoescape, StrictUndefined, and agent-written text that tries
to become markup in report.html and comparison.html comes out as text."""

from __future__ import annotations

import json
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from jinja2 import StrictUndefined, UndefinedError

from mnemarket.genesis.context_record import ContextHit, ContextRecord, ContextSection
from mnemarket.kernel import InvokeArtifact, ReadArtifact, WriteArtifact
from mnemarket.reports.comparison_report import render_html
from mnemarket.reports.html_templates import environment, render
from mnemarket.reports.inspect import summarize
from mnemarket.reports.report import render_report

from ..genesis.helpers import call, genesis_world

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = "<script>alert(1)</script>"
ATTRIBUTE = '"><img src=x onerror=1>'
URL_ATTRIBUTES = ("src", "href", "srcset", "action", "formaction", "xlink:href", "poster", "data")


class _Page(HTMLParser):
    """Every start tag with its attributes, and all text (entities decoded, as a browser shows it)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def assert_inert(page: str) -> _Page:
    """No script, no element the hostile text could have made, no handler, nothing loaded from the network."""
    doc = parse(page)
    names = {tag for tag, _ in doc.tags}
    assert names.isdisjoint({"script", "img", "iframe", "object", "embed", "link", "image", "base", "form"}), names
    assert not [(tag, a) for tag, attrs in doc.tags for a in attrs if a.startswith("on")]
    for tag, attrs in doc.tags:
        for name in URL_ATTRIBUTES:
            value = (attrs.get(name) or "").strip().lower()
            assert not value.startswith(("http:", "https:", "//", "javascript:")), (tag, name, value)
    assert "<script" not in page.lower()
    assert "default-src 'none'" in page  # the CSP meta: even a missed escape could run or load nothing
    return doc


def test_environment_escapes_and_refuses_missing_variables():
    env = environment()
    assert env is environment()  # built once
    assert env.autoescape is True
    assert env.undefined is StrictUndefined
    assert env.from_string("{{ x }}").render(x=SCRIPT) == "&lt;script&gt;alert(1)&lt;/script&gt;"
    with pytest.raises(UndefinedError):
        env.from_string("{{ missing }}").render()
    with pytest.raises(UndefinedError):  # a page rendered without its data fails instead of printing blanks
        render("report.html.j2", title="t", subtitle="s", back_link=False, sections=[])


def test_templates_ship_as_package_data():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["mnemarket"]
    templates = sorted((ROOT / "src" / "mnemarket" / "reports" / "templates").glob("*"))
    assert {t.name for t in templates} >= {"report.html.j2", "comparison.html.j2", "macros.html.j2"}
    for template in templates:
        relative = template.relative_to(ROOT / "src" / "mnemarket")
        assert any(relative.match(p) for p in patterns), f"{relative} is not covered by {patterns}"
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.lower().startswith("jinja2") for d in deps)


def test_hostile_agent_text_in_the_run_report_is_shown_as_text():
    world, genesis = genesis_world()
    assert call(world, "alice", "genesis_memory", "create_store", store_id="alice_longterm").success
    world.advance_tick()
    meta = {"session": 1, "turn": 1, "step": 1, "tokens": 10, "baseline_tokens": 10, "loop": 0, "rag_hits": 0,
            "model": "scripted"}
    # An artifact id, a memory text and a reasoning written to become markup. The kernel refuses the
    # id, but the attempt is an event like any other, with the id in its action and its message.
    rejected = world.execute("alice", WriteArtifact(artifact_id=ATTRIBUTE, content=SCRIPT,
                                                    reasoning=f"because {SCRIPT}"), meta=meta)
    assert not rejected.success and ATTRIBUTE in rejected.message
    assert world.execute("alice", InvokeArtifact(artifact_id="genesis_memory", method="add",
                                                 args={"store_id": "alice_longterm", "text": f"LESSON: {SCRIPT}"}),
                         meta=meta | {"turn": 2}).success
    failed = world.execute("bob", ReadArtifact(artifact_id=ATTRIBUTE + "x", reasoning=ATTRIBUTE), meta=meta)
    assert not failed.success
    world.advance_tick()
    contexts = [ContextRecord(agent="alice", session=1, turn=2, step="1", tokens=10, budget=100,
                              sections=[ContextSection(name=SCRIPT, tokens=3, status="kept")], rag_query=ATTRIBUTE,
                              rag_hits=[ContextHit(id="", score=0.5, text=SCRIPT)],
                              reply=f'{{"reasoning": "{ATTRIBUTE}"}} {SCRIPT}', reply_error=SCRIPT)]
    page = render_report(world, genesis, summarize(world, genesis) | {"scenario": SCRIPT}, contexts)
    assert SCRIPT not in page and ATTRIBUTE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&#34;&gt;&lt;img src=x onerror=1&gt;" in page
    text = "".join(assert_inert(page).text)
    # Every piece is still there for a person to read: the escapes decode back to the agents' text.
    assert f"LESSON: {SCRIPT}" in text  # the memory text (lessons table and alice's memory)
    assert f"why: because {SCRIPT}" in text and f"why: {ATTRIBUTE}" in text  # the reasoning
    assert f"artifact id '{ATTRIBUTE}' is invalid" in text  # the artifact id, in the failed write's result
    assert f'{{"reasoning": "{ATTRIBUTE}"}} {SCRIPT}' in text and f"reply problem: {SCRIPT}" in text  # the reply
    assert text.count(SCRIPT) >= 6


def test_hostile_names_in_the_comparison_are_shown_as_text(tmp_path):
    cell_id = f"scripted__{ATTRIBUTE}__s1"
    run_dir = tmp_path / "cells" / cell_id
    run_dir.mkdir(parents=True)
    (run_dir / "report.html").write_text("report")
    stat = {"mean": 2.0, "std": 0.0, "n": 1}
    document = {
        "experiment": SCRIPT, "description": ATTRIBUTE, "scenario": SCRIPT, "experiment_file": ATTRIBUTE,
        "matrix": {"models": [SCRIPT], "configs": {ATTRIBUTE: {"agents": {"x": SCRIPT}, "description": SCRIPT}},
                   "seeds": [1], "sessions": 1, "turns": 1},
        "metrics_embedder": None, "generated": "now", "machine": {"platform": SCRIPT, "cores": 2},
        "cells": [{"id": cell_id, "model": SCRIPT, "config": ATTRIBUTE, "seed": 1, "status": "finished",
                   "seconds": 1, "run_dir": str(run_dir),
                   "metrics": {"cell": {"lessons_stored": 2}, "agents": {SCRIPT: {"lessons_stored": 2}},
                               "sessions": [{"session": 1, "lessons_stored": 2}]}}],
        "groups": [{"model": SCRIPT, "config": ATTRIBUTE, "seeds": 1, "metrics": {"lessons_stored": stat}}],
        "baseline": {"model": SCRIPT, "config": ATTRIBUTE},
        "differences": [{"model": SCRIPT, "config": ATTRIBUTE, "metric": "lessons_stored", "mean": 0.0,
                         "interval": [0.0, 0.0], "n": 1, "separated": False}],
        "warnings": [SCRIPT],
        "judge": {"model": SCRIPT, "lessons_rated": 1, "judge_failures": 0, "judge_score_mean": 0.5,
                  "spearman_with_specificity": None, "score_generic_mean": None, "score_specific_mean": 0.5}}
    page = render_html(document, tmp_path)
    assert SCRIPT not in page and ATTRIBUTE not in page and "&lt;script&gt;" in page
    doc = assert_inert(page)
    text = "".join(doc.text)
    assert f"Comparison: {SCRIPT}" in text and f"warning: {SCRIPT}" in text and f"{SCRIPT} rated 1 lessons" in text
    assert f"{SCRIPT} / {ATTRIBUTE}" in text  # group labels, in tables and chart labels
    assert json.dumps({"x": SCRIPT}) in text  # the config's override
    # The link to the cell's report keeps the hostile id inside its (escaped) href, relative to the page.
    links = [attrs["href"] for tag, attrs in doc.tags if tag == "a"]
    assert links == [f"cells/{cell_id}/report.html"]


def test_markup_is_left_to_the_templates():
    """No hand escaping and no way around autoescape: Python modules build data, templates print it."""
    sim = ROOT / "src" / "mnemarket" / "reports"
    for module in ("report.py", "report_charts.py", "comparison_report.py", "html_templates.py"):
        source = (sim / module).read_text()
        assert "import html" not in source and "html.escape" not in source, module
        assert "Markup" not in source and "markupsafe" not in source, module
    for template in (sim / "templates").glob("*.j2"):
        source = template.read_text()
        assert "|safe" not in source.replace(" ", "") and "autoescape false" not in source, template.name
