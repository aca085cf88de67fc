"""A ladder turn asks the world for its open bounties once: the prompt's bounties section and the
`{open_bounties}` RAG query read the same list, and both say what the scenario's bounties say."""

from __future__ import annotations

from pathlib import Path

import yaml

from mnemarket.run import RunOptions, read_contexts
from mnemarket.run.runner import Runner
from mnemarket.scenarios.ladder import generate_rung

ROOT = Path(__file__).resolve().parents[3]


def _expected(document: dict, session: int) -> tuple[str, str]:
    """The bounties section and RAG query of kit's first turn of ``session``, from the scenario
    document alone (nothing is claimed yet at a session's first turn)."""
    open_now = [b for b in document["bounties"]
                if b.get("opens_session", 1) <= session <= (b.get("closes_session") or session)]
    assert open_now and all(b["kind"] == "answer" and b["claimants"] == ["kit"] for b in open_now)
    section = "OPEN BOUNTIES\n" + "\n".join(
        f"- {b['id']} pays {b['reward']} scrip for the answer: {b['description']}" for b in open_now)
    return section, "; ".join(b["description"] for b in open_now)


def test_a_ladder_turn_asks_for_open_bounties_once_and_shows_them_as_before(tmp_path):
    # R3: notices in session 1, their questions in session 2, so the open list changes between sessions.
    document = dict(generate_rung("R3", 1, seed=2), components_dir=str(ROOT / "config" / "components"),
                    embedder="hashing")
    path = tmp_path / "r3.yaml"
    path.write_text(yaml.safe_dump(document))
    runner = Runner.create(path, tmp_path / "run", RunOptions(model="scripted"))
    try:
        runner.setup()
        bounty = runner.genesis.bounty
        asked: list[str] = []
        open_for = bounty.open_for  # the real provider, counted (a thin wrapper, same answers)
        bounty.open_for = lambda world, principal: asked.append(principal) or open_for(world, principal)  # type: ignore[method-assign]
        assert runner.run().state == "finished"
    finally:
        runner.close()
    turns = [r for r in read_contexts(tmp_path / "run") if r.agent == "kit"]
    assert len(turns) == document["sessions"] * document["turns"]
    assert asked == ["kit"] * len(turns)  # once a turn (it was twice: the query variable and the section)
    for session in range(1, document["sessions"] + 1):
        first = next(r for r in turns if (r.session, r.turn) == (session, 1))
        section, query = _expected(document, session)
        assert first.rag_query == query
        assert f"\n{section}\n" in f"\n{first.user}\n"
