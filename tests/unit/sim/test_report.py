"""report.html: built from a real world (trades, lessons, migrations, hostile text), rendered in Chromium."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

from mnemarket.genesis.context_record import ContextRecord, ContextSection
from mnemarket.kernel import AccessPolicy, InvokeArtifact, Noop, ReadArtifact, Transfer, World, WriteArtifact
from mnemarket.reports.inspect import summarize
from mnemarket.reports.report import TIMELINE_LIMIT, write_report
from mnemarket.reports.report_charts import MAX_POINTS, cumulative_counts, sample_steps, tick_grid
from mnemarket.store import SqlWorldStore

from ..genesis.helpers import call, genesis_world

HOSTILE = "<script>alert(1)</script>"
HOSTILE_LESSON = 'LESSON: <img src=x onerror="alert(2)"> beware'
LESSON = "LESSON: list maps in escrow only after handing it write authority"
MIGRATED = "STRATEGY: sell licences to the memory store, keep the store"
SECTIONS = ("overview", "balances", "memory-growth", "trades", "lessons", "timeline", "agent-memory", "agents")


class _Sections(HTMLParser):
    """Table rows (cell texts) and all text, per <section id=...>."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[list[str]]] = {}
        self.text: dict[str, str] = {}
        self.section: str | None = None
        self.cell: list[str] | None = None
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "section":
            self.section = dict(attrs)["id"]
            self.rows[self.section], self.text[self.section] = [], ""
        elif tag == "tr" and self.section:
            self.rows[self.section].append([])  # header rows stay empty: <th> cells are not collected
        elif tag == "td" and self.section:
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.rows[self.section][-1].append("".join(self.cell).strip())
            self.cell = None
        elif tag == "section":
            self.section = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)
        if self.section:
            self.text[self.section] += data


def parse(page: str) -> _Sections:
    parser = _Sections()
    parser.feed(page)
    return parser


def turn(session: int, number: int) -> dict:
    return {"session": session, "turn": number, "step": 1, "tokens": 120, "baseline_tokens": 300, "loop": 0,
            "rag_hits": 1, "model": "scripted"}


def act(world, who, action, session=1, number=1):
    return world.execute(who, action, meta=turn(session, number))


def invoke(target, method, **args):
    return InvokeArtifact(artifact_id=target, method=method, args=args)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small run: transfers, stores with lessons, an escrow sale, a licence, a migration, failures."""
    run_dir = tmp_path_factory.mktemp("run")
    world, genesis = genesis_world(SqlWorldStore(run_dir / "world.db"))
    for agent in ("alice", "bob", "carol"):
        assert call(world, agent, "genesis_memory", "create_store", store_id=f"{agent}_longterm").success
        assert call(world, agent, "genesis_memory", "create_store", store_id=f"{agent}_episodic").success
    world.advance_tick()
    assert act(world, "alice", invoke("genesis_memory", "add", store_id="alice_longterm", text=LESSON)).success
    assert act(world, "bob", invoke("genesis_memory", "add", store_id="bob_longterm", text=HOSTILE_LESSON)).success
    assert act(world, "bob", Transfer(to="carol", amount=5, memo="thanks")).success
    world.advance_tick()
    assert act(world, "alice", WriteArtifact(artifact_id="alice_map", content=f"map {HOSTILE}",
                                             access=AccessPolicy(authorized_writer="genesis_escrow"),
                                             reasoning=f"why not {HOSTILE}"), 1, 2).success
    assert act(world, "alice", invoke("genesis_escrow", "deposit", artifact_id="alice_map", price=40), 1, 2).success
    world.advance_tick()
    assert act(world, "bob", invoke("genesis_escrow", "purchase", artifact_id="alice_map"), 1, 3).success
    failed = act(world, "carol", ReadArtifact(artifact_id="alice_mapp"), 1, 3)
    assert not failed.success
    assert act(world, "alice", invoke("genesis_memory", "offer_licence", store_id="alice_longterm", price=7), 1, 3)
    world.advance_tick()
    assert act(world, "carol", invoke("genesis_memory", "buy_licence", store_id="alice_longterm"), 1, 4).success
    for n in range(3):
        assert call(world, "carol", "genesis_memory", "add", store_id="carol_episodic",
                    text=f"Turn {n}: I tried something", kind="observation", importance=0.3).success
    assert world.execute("alice", invoke("genesis_memory", "add", store_id="alice_longterm", text=MIGRATED,
                                         metadata={"migrated_from": "alice_working_memory", "session": 1}),
                         meta={"session": 1, "migration": True}).success
    world.advance_tick()
    summary = summarize(world, genesis) | {"status": "finished", "scenario": "<b>report test</b>"}
    path = write_report(run_dir, world, genesis, summary)
    return world, genesis, summary, path, failed


def test_report_sections_trades_lessons_and_figures(run):
    world, genesis, summary, path, failed = run
    assert path == path.parent / "report.html"
    page = path.read_text()
    doc = parse(page)
    assert set(SECTIONS) <= set(doc.rows)
    assert f"Supply check: OK — total {world.total_scrip()} = initial {world.supply.initial}" in doc.text["overview"]
    sale_tick = next(t["tick"] for t in summary["trades"] if t["kind"] == "artifact")
    assert [str(sale_tick), "alice_map", "artifact", "alice", "bob", "40"] in doc.rows["trades"]
    assert any(row[1:] == ["alice_longterm", "licence", "alice", "carol", "7"] for row in doc.rows["trades"])
    lesson_rows = [r for r in doc.rows["lessons"] if LESSON in r]
    assert lesson_rows and lesson_rows[0][1] == "alice" and lesson_rows[0][-1] == "OK"
    migrated_rows = [r for r in doc.rows["lessons"] if MIGRATED in r]
    assert migrated_rows and migrated_rows[0][2] == "end of session 1"
    # The timeline says how the failure can be fixed, and its rows cover every event (newest first).
    assert len(doc.rows["timeline"]) - 1 == world.event_count  # minus the header row
    failed_row = next(r for r in doc.rows["timeline"] if r and r[0] == str(failed.event_id))
    assert "FAILED (unknown_artifact)" in failed_row[5] and "fix: did you mean 'alice_map'" in failed_row[5]
    # Per-agent memory shows each store's entries; figures come from the summary.
    memory = doc.text["agent-memory"]
    assert LESSON in memory and MIGRATED in memory and "migrated from alice_working_memory" in memory
    assert memory.count("Turn ") == 3
    figures = {row[0]: row for row in doc.rows["agents"][1:]}
    assert set(figures) == set(summary["agents"]) == {"alice", "bob", "carol"}
    assert figures["alice"][1] == str(summary["agents"]["alice"]["turns"])


def legends(page: str) -> dict[str, dict[str, int]]:
    """Chart caption -> {series name: last value shown in its legend}."""
    out = {}
    for caption, legend in re.findall(r'<figcaption>(.*?)</figcaption>.*?<div class="legend">(.*?)</div>', page):
        out[caption] = {name: int(value.replace(",", ""))
                        for name, value in re.findall(r"</svg>([^<]*) <b>(-?[\d,]+)</b>", legend)}
    return out


def test_charts_replay_balances_and_memory_counts(run):
    world, genesis, _, path, _ = run
    page = path.read_text()
    charts = legends(page)
    assert charts["Scrip balance per agent"] == {a: world.balances[a] for a in ("alice", "bob", "carol")}
    assert charts["Long-term memory entries per agent"] == {
        a: len(genesis.memory.store(f"{a}_longterm").records()) for a in ("alice", "bob", "carol")}
    assert charts["Long-term memory entries per agent"]["alice"] == 2
    assert charts["Episodic memory entries per agent"] == {"alice": 0, "bob": 0, "carol": 3}
    balances_html = page.split('id="balances"')[1].split("</section>")[0]
    assert balances_html.count("<polyline") == 3


def test_agent_text_is_escaped_and_page_loads_nothing(run):
    _, _, _, path, _ = run
    page = path.read_text()
    assert HOSTILE not in page and "<img" not in page and "<b>report test" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in page  # Jinja2 autoescape writes " as &#34;
    assert "<script" not in page.lower()
    tags = parse(page).tags
    assert {tag for tag, _ in tags}.isdisjoint({"script", "img", "link", "iframe", "object", "embed", "image"})
    assert not [a for _, attrs in tags for a in attrs if a in ("src", "srcset") or a.startswith("on")]
    assert all(attrs["href"].startswith("#") for _, attrs in tags if "href" in attrs)
    assert "url(" not in page.split("</style>")[0] and "@import" not in page
    assert "default-src 'none'" in page


def test_timeline_is_capped_but_charts_use_all_events(tmp_path):
    world, genesis = genesis_world()
    with world.batch():
        for n in range(TIMELINE_LIMIT + 30):
            world.execute("alice", Noop(), meta=turn(1, n + 1))
            if n % 100 == 0:
                world.execute("alice", Transfer(to="bob", amount=1))
            world.advance_tick()
    page = write_report(tmp_path, world, genesis, summarize(world, genesis)).read_text()
    doc = parse(page)
    assert len(doc.rows["timeline"]) - 1 == TIMELINE_LIMIT
    assert f"showing the newest {TIMELINE_LIMIT} of {world.event_count} events" in doc.text["timeline"]
    assert doc.rows["timeline"][1][0] == str(world.event_count)
    # The balance line still ends at today's balance, from every ledger entry, on a bounded number of points.
    assert legends(page)["Scrip balance per agent"]["alice"] == world.balances["alice"]
    alice_line = re.search(r'<polyline points="([^"]+)"[^>]*><title>alice:', page).group(1)
    assert len(alice_line.split()) <= 2 * 300


def test_chart_sampling_helpers():
    grid = tick_grid(10_000)
    assert len(grid) <= MAX_POINTS and grid[0] == 0 and grid[-1] == 10_000 and np.all(np.diff(grid) > 0)
    assert tick_grid(3).tolist() == [0, 1, 2, 3]
    changes, values = np.array([0, 0, 5, 9]), np.array([10, 7, 3, 12])
    assert sample_steps(changes, values, np.array([0, 4, 5, 8, 9, 20])).tolist() == [7, 7, 3, 3, 12, 12]
    assert sample_steps(np.array([2]), np.array([5]), np.array([0, 1, 2])).tolist() == [0, 0, 5]
    assert cumulative_counts([3, 1, 1], np.array([0, 1, 2, 3])).tolist() == [0, 2, 2, 3]


def test_report_of_an_empty_world_without_genesis(tmp_path):
    world = World()
    world.create_principal("solo", 10)
    page = write_report(tmp_path, world, None, summarize(world)).read_text()
    doc = parse(page)
    assert set(SECTIONS) <= set(doc.rows)
    assert "no events" in doc.text["timeline"] and "no trades" in doc.text["trades"]
    assert "memory contents are not available" in doc.text["agent-memory"]
    assert legends(page)["Scrip balance per agent"] == {"solo": 10}


def _chromium() -> str | None:
    found = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
    if found is None:
        if os.environ.get("MNEMARKET_REQUIRE_BROWSER") == "1":
            pytest.fail("MNEMARKET_REQUIRE_BROWSER=1 but chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium); "
                    "set MNEMARKET_REQUIRE_BROWSER=1 to make this a failure")
    return found


def _headless(chromium: str, profile, *args: str) -> subprocess.CompletedProcess:
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "HOME": str(profile)})


def test_page_renders_in_headless_chromium(run, tmp_path):
    chromium = _chromium()
    _, _, _, path, _ = run
    dom = _headless(chromium, tmp_path / "profile", "--dump-dom", path.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = parse(dom.stdout)
    assert set(SECTIONS) <= set(rendered.rows)
    assert LESSON in rendered.text["lessons"] and MIGRATED in rendered.text["lessons"]
    assert ["alice_map", "artifact", "alice", "bob", "40"] in [r[1:] for r in rendered.rows["trades"]]
    assert dom.stdout.count("<polyline") >= 3 + 3 + 1
    assert "<script" not in dom.stdout.lower() and "<img" not in dom.stdout.lower()
    assert HOSTILE in rendered.text["timeline"]  # shown as text, never run

    png = tmp_path / "report.png"
    shot = _headless(chromium, tmp_path / "profile", f"--screenshot={png}", "--window-size=1200,2000",
                     "--hide-scrollbars", path.as_uri())
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1200, 2000)
    assert len(data) > 40_000  # a blank page of this size compresses to a few KB


def test_bounties_section_says_who_was_paid_and_who_may_claim(tmp_path):
    from pathlib import Path

    from mnemarket.experiments.pipeline import run_scenario
    from mnemarket.run.runner import RunOptions

    demo = Path(__file__).resolve().parents[3] / "config" / "demo.yaml"
    assert run_scenario(demo, tmp_path / "run", RunOptions(model="scripted")).state == "finished"
    doc = parse((tmp_path / "run" / "report.html").read_text())
    rows = {row[0]: row for row in doc.rows["bounties"][1:]}
    assert set(rows) == {"vault_code", "escrow_poem", "pass_route"}
    assert rows["vault_code"][5] == "beta, gamma" and rows["vault_code"][6].startswith("beta (tick")
    assert rows["vault_code"][7] == "40" and rows["escrow_poem"][7] == "15" and rows["escrow_poem"][5] == "anyone"
    assert rows["pass_route"][6] == "–" and rows["pass_route"][7] == "0"
    assert "3 bounties posted, 2 paid, 55 scrip minted for them." in doc.text["bounties"]
    # Per turn: the prompt's sections with tokens, the memories with scores, the reply, the result.
    page = (tmp_path / "run" / "report.html").read_text()
    turns = doc.text["turns"]
    assert page.count('<details id="') == 30  # every turn of the 2 x 5 x 3 demo
    assert "s2 t5 " in turns and "System prompt" in turns and "User prompt" in turns and "genesis" in turns
    claim = next(chunk for chunk in page.split("<details id=") if "s1 t5 beta" in chunk)
    assert "&#34;method&#34;: &#34;claim&#34;" in claim and "7421" in claim  # the raw reply, escaped
    assert ">OK<" in claim and "Retrieved memories" in claim
    # Charts mark where session 2 began.
    assert page.count('class="mark">session 2</text>') == 3


def test_turn_view_shows_the_newest_turns_and_counts_every_logged_one(tmp_path):
    from mnemarket.reports.report import DRILLDOWN_LIMIT
    from mnemarket.run.context_log import ContextLog

    world, genesis = genesis_world()
    logged = DRILLDOWN_LIMIT + 7
    ContextLog(tmp_path).write(
        ContextRecord(agent="alice", session=1, turn=n, step="act", tokens=10, budget=100, sections=[],
                      rag_query="", rag_hits=[], reply=f"reply number {n}", system="s", user="u")
        for n in range(1, logged + 1))
    page = write_report(tmp_path, world, genesis, summarize(world, genesis)).read_text()
    turns = parse(page).text["turns"]
    assert page.count('<details id="') == DRILLDOWN_LIMIT
    assert (f"showing the newest {DRILLDOWN_LIMIT} of {logged} turns; "
            "7 older ones are omitted here (trace/ has all)") in turns
    trace = (tmp_path / "trace" / "alice-s1.html").read_text()  # the trace page holds every turn
    assert trace.count('<details id="') == logged and "reply number 1<" in trace
    assert f"reply number {logged}" in turns and "s1 t7 alice" not in page and "s1 t8 alice" in page
    assert page.index(f"s1 t{logged} alice") < page.index("s1 t8 alice")  # newest first


def test_lesson_tables_keep_the_newest_rows_and_count_them_all(tmp_path, monkeypatch):
    import mnemarket.reports.report as report

    monkeypatch.setattr(report, "LESSON_LIMIT", 3)
    world, genesis = genesis_world()
    assert call(world, "alice", "genesis_memory", "create_store", store_id="alice_longterm").success
    for n in range(5):
        assert act(world, "alice", invoke("genesis_memory", "add", store_id="alice_longterm",
                                          text=f"LESSON: number {n}"), 1, n + 1).success
    failed = act(world, "alice", invoke("genesis_memory", "add", store_id="nobody_longterm", text="LESSON: lost"), 1, 6)
    assert not failed.success
    doc = parse(write_report(tmp_path, world, genesis, summarize(world, genesis)).read_text())
    lessons = doc.text["lessons"]
    assert "showing the newest 3 of 6 lessons stored; 3 older ones are omitted" in lessons
    texts = [row[5] for row in doc.rows["lessons"] if len(row) > 5]
    assert texts == ["LESSON: lost", "LESSON: number 4", "LESSON: number 3"]
    assert "Stored by action (6, 5 succeeded)" in lessons and "Migrated from working memory at session end (0, 0" in lessons


def test_report_of_a_run_whose_context_pieces_are_damaged(tmp_path):
    from mnemarket.run.context_log import LOST_TEXT, PARTS, ContextLog

    world, genesis = genesis_world()
    ContextLog(tmp_path).write([ContextRecord(agent="alice", session=1, turn=1, step="act", tokens=10, budget=100,
                                              sections=[ContextSection(name="system", tokens=4, status="kept")],
                                              rag_hits=[], reply="a reply long enough to be stored as pieces, " * 3)])
    (tmp_path / PARTS).write_text('"cut')
    doc = parse(write_report(tmp_path, world, genesis, summarize(world, genesis)).read_text())
    assert "s1 t1 alice" in doc.text["turns"] and LOST_TEXT in doc.text["turns"]


def test_memory_tables_show_the_newest_entries_by_creation_and_charts_count_them_all(tmp_path, monkeypatch):
    import mnemarket.reports.report as report

    monkeypatch.setattr(report, "LONGTERM_LIMIT", 2)
    monkeypatch.setattr(report, "EPISODIC_LIMIT", 2)
    world, genesis = genesis_world()
    for store_id in ("alice_longterm", "alice_episodic"):
        assert call(world, "alice", "genesis_memory", "create_store", store_id=store_id).success
    longterm, episodic = genesis.memory.store("alice_longterm"), genesis.memory.store("alice_episodic")
    for _ in range(10):
        world.advance_tick()  # the charts run to the world's tick
    for created in (5.0, 1.0, 9.0, 3.0, 7.0):  # stored in this order, newest by creation: 9 and 7
        longterm.add(f"LESSON: made at tick {created:.0f}", created=created)
    for created in (2.0, 8.0, 4.0, 6.0):
        episodic.add(f"Turn {created:.0f}: I looked around", kind="observation", created=created)
    page = write_report(tmp_path, world, genesis, summarize(world, genesis)).read_text()
    memory = parse(page).text["agent-memory"]
    assert "showing the newest 2 of 5 entries of alice_longterm; 3 older ones are omitted" in memory
    assert [t for t in ("1", "3", "5", "7", "9") if f"made at tick {t}" in memory] == ["7", "9"]
    assert memory.index("made at tick 9") < memory.index("made at tick 7")  # newest first
    assert [t for t in ("2", "4", "6", "8") if f"Turn {t}:" in memory] == ["6", "8"]
    assert legends(page)["Long-term memory entries per agent"]["alice"] == 5
    assert legends(page)["Episodic memory entries per agent"]["alice"] == 4
