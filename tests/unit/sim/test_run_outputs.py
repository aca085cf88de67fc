"""Run directories never collide, and outputs are written only where the tool made them, never
through a symlink (issue 38 class 5): resume over planted links, compare into someone's folder."""

from __future__ import annotations

import json

import pytest

from mnemarket.errors import ConfigError
from mnemarket.experiments.pipeline import resume_run, run_scenario
from mnemarket.run.output_dirs import MARKER, model_slug, new_run_dir, owner_of, prepare_run_dir, write_atomic
from mnemarket.run.records import RunOptions
from mnemarket.run.run_lock import LOCK_FILE, RunLock
from tests.unit.sim.fast_demo import fast_demo


def test_runs_started_in_the_same_second_get_their_own_directories(tmp_path):
    first = new_run_dir(tmp_path, "demo", "scripted", now=1_000_000)
    second = new_run_dir(tmp_path, "demo", "scripted", now=1_000_000)
    other = new_run_dir(tmp_path, "demo", "gemini:gemini-3.5-flash-lite", now=1_000_000)
    assert len({first, second, other}) == 3
    assert first.name.startswith("demo-scripted-") and second.name == f"{first.name}-2"
    assert other.name.startswith("demo-gemini-gemini-3.5-flash-lite-")
    assert all(owner_of(p) == "run" for p in (first, second, other))
    assert model_slug("openai:http://127.0.0.1:8000/v1:gemma") == "openai-gemma"


def test_force_replaces_only_a_run_the_tool_made(tmp_path):
    run = prepare_run_dir(tmp_path / "r")
    (run / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="already holds a run; continue it with `mnemarket resume"):
        prepare_run_dir(run)
    assert not (prepare_run_dir(run, force=True) / "config.json").exists()
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter.tex").write_text("precious")
    for force in (False, True):
        with pytest.raises(ConfigError, match="not made by"):
            prepare_run_dir(mine, force=force)
    assert (mine / "chapter.tex").read_text() == "precious"
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(ConfigError, match="symlink"):
        prepare_run_dir(tmp_path / "link", force=True)


def test_an_atomic_write_replaces_a_planted_symlink_and_leaves_its_target(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (tmp_path / "out.json").symlink_to(victim)
    write_atomic(tmp_path / "out.json", "new")
    assert victim.read_text() == "untouched"
    assert not (tmp_path / "out.json").is_symlink() and (tmp_path / "out.json").read_text() == "new"


def test_resume_never_writes_through_symlinked_outputs_or_lock(tmp_path):
    run_dir = tmp_path / "run"
    assert run_scenario(fast_demo(tmp_path), run_dir, RunOptions(model="scripted", sessions=1, turns=2)).state == "finished"
    victims = {}
    for name in ("events.jsonl", "summary.json", "report.html"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious")
        (run_dir / name).unlink()
        (run_dir / name).symlink_to(victim)
        victims[name] = victim
    assert resume_run(run_dir).state == "finished"
    for name, victim in victims.items():
        assert victim.read_text() == "precious", name
        assert not (run_dir / name).is_symlink() and (run_dir / name).stat().st_size > 0
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
    lock_victim = tmp_path / "victim-lock"
    lock_victim.write_text("precious")
    (run_dir / LOCK_FILE).symlink_to(lock_victim)
    with pytest.raises(ConfigError, match="symlink"):
        RunLock(run_dir).acquire()
    assert lock_victim.read_text() == "precious"


def test_compare_refuses_a_directory_it_did_not_make(tmp_path):
    from mnemarket.experiments.experiment import _claim_out_dir

    mine = tmp_path / "results"
    mine.mkdir()
    (mine / "comparison.json").write_text("my own")
    with pytest.raises(ConfigError, match="not made by `mnemarket compare`"):
        _claim_out_dir(mine)
    assert (mine / "comparison.json").read_text() == "my own"
    made = tmp_path / "made"
    _claim_out_dir(made)
    assert owner_of(made) == "compare"
    _claim_out_dir(made)  # its own directory is continued (finished cells are kept)
    older = tmp_path / "older"  # an experiment directory an earlier compare made, before the mark
    (older / "cells").mkdir(parents=True)
    (older / "experiment.yaml").write_text("name: x\n")
    _claim_out_dir(older)
    assert (older / MARKER).read_text().strip() == "compare"
