"""Experiments: matrix, per-cell overrides, parallel resumable execution, reports, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.errors import ConfigError
from mnemarket.experiments.experiment import CELL_FILE, Cell, load_experiment, prepare_cell, run_experiment, slug
from mnemarket.experiments.ray_executor import LOOPBACK, is_loopback
from mnemarket.reports.comparison_report import render_html, render_markdown

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"


def _write(tmp_path: Path, **fields) -> Path:
    data = {"name": "t", "scenario": str(DEMO), "models": ["scripted"], "seeds": [1], "sessions": 2, "turns": 5,
            "metrics_embedder": "hashing",
            "configs": {"metacognitive": {"agents": {"components": ["semantic_memory", "loop_breaker"]}},
                        "verbose": {"agents": {"components": ["verbose_memory", "loop_breaker"]}}}}
    data.update(fields)
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("exp")
    path = _write(tmp_path, max_workers=2)
    seen: list[str] = []
    out = tmp_path / "out"
    result = run_experiment(path, out, progress=lambda kind, cell, outcome: seen.append(cell.id))
    return path, out, result, seen


def test_every_cell_runs_with_its_override_and_is_measured(finished):
    path, out, result, seen = finished
    document = json.loads(result.read_text())
    assert sorted(seen) == ["scripted__metacognitive__s1", "scripted__verbose__s1"]
    assert {c["id"]: c["status"] for c in document["cells"]} == dict.fromkeys(seen, "finished")
    for cell in document["cells"]:
        config = json.loads((Path(cell["run_dir"]) / "config.json").read_text())
        wanted = "verbose_memory" if cell["config"] == "verbose" else "semantic_memory"
        assert all(a["components"][0] == wanted for a in config["resolved"]["agents"])
        assert config["options"]["seed"] == 1 and config["options"]["model"] == "scripted"
    # The scripted plan: gamma's escrow deposit fails in session 1, the lesson migrates, is
    # retrieved in session 2 and the deposit then succeeds.
    cell = document["cells"][0]["metrics"]["cell"]
    assert cell["application_pairs"] >= 1
    assert cell["failures_per_turn_before"] > 0 and cell["failures_per_turn_after"] == 0
    assert cell["bounties_won"] == 2 and cell["memory_trades"] == 3 and cell["supply_ok"] is True
    assert [g["config"] for g in document["groups"]] == ["metacognitive", "verbose"]
    assert (out / "comparison.md").read_text().startswith("# Comparison: t")
    page = (out / "comparison.html").read_text()
    assert page.count("<svg") >= 5 and "scripted / verbose" in page


def test_finished_cells_are_not_rerun_and_interrupted_ones_are_resumed(finished):
    path, out, result, _ = finished
    again: list[str] = []
    run_experiment(path, out, progress=lambda kind, cell, outcome: again.append(cell.id))
    assert again == []
    cell_dir = out / "cells" / "scripted__verbose__s1"
    (cell_dir / CELL_FILE).unlink()
    run_experiment(path, out, progress=lambda kind, cell, outcome: again.append(cell.id))
    assert again == ["scripted__verbose__s1"]
    assert (cell_dir / CELL_FILE).exists()
    # The runner resumed the finished run state: no turn played twice.
    events = [json.loads(line) for line in (cell_dir / "events.jsonl").read_text().splitlines()]
    turns = [(e["principal"], e["meta"]["session"], e["meta"]["turn"]) for e in events
             if "turn" in e["meta"] and not e["meta"].get("migration")]
    assert len(turns) == len(set(turns)) == 3 * 2 * 5


def test_overrides_are_validated_with_actionable_errors(tmp_path):
    bad_component = _write(tmp_path, configs={"x": {"agents": {"components": ["verbose_memry"]}}})
    experiment = load_experiment(bad_component, tmp_path / "o1")
    with pytest.raises(ConfigError, match="Did you mean 'verbose_memory'"):
        prepare_cell(experiment, Cell("scripted", "x", 1))
    bad_field = _write(tmp_path, configs={"x": {"agents": {"rag": {"limit": 50}}}})
    with pytest.raises(ConfigError, match="rag.*limit"):
        prepare_cell(load_experiment(bad_field, tmp_path / "o2"), Cell("scripted", "x", 1))
    unknown_agent = _write(tmp_path, configs={"x": {"per_agent": {"zed": {"temperature": 0.1}}}})
    with pytest.raises(ConfigError, match="unknown agent 'zed'"):
        prepare_cell(load_experiment(unknown_agent, tmp_path / "o3"), Cell("scripted", "x", 1))
    with pytest.raises(ConfigError, match="seedz: unknown field"):
        load_experiment(_write(tmp_path, seedz=[1]))
    with pytest.raises(ConfigError, match="scenario .* not found"):
        load_experiment(_write(tmp_path, scenario="nope.yaml"))


def test_per_agent_override_merges_deeply(tmp_path):
    path = _write(tmp_path, configs={"x": {"agents": {"rag": {"enabled": False}},
                                           "per_agent": {"beta": {"memory": {"dedup": False}}}}})
    run_dir = prepare_cell(load_experiment(path, tmp_path / "o"), Cell("scripted", "x", 3))
    agents = {a["id"]: a for a in json.loads((run_dir / "config.json").read_text())["resolved"]["agents"]}
    assert all(not a["rag"]["enabled"] and a["rag"]["limit"] == 5 for a in agents.values())  # limit kept
    assert agents["beta"]["memory"]["dedup"] is False and agents["alpha"]["memory"]["dedup"] is True


@pytest.mark.parametrize("path", sorted((ROOT / "config" / "experiments").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_experiment_files_prepare_every_cell(path, tmp_path):
    experiment = load_experiment(path, tmp_path)
    assert len(experiment.cells()) >= 2
    for cell in experiment.cells():  # a run's config, or a dataset cell's eval options (locomo_dev.yaml)
        prepared = "eval.json" if experiment.config.dataset is not None else "config.json"
        assert (prepare_cell(experiment, cell) / prepared).exists()


def test_reports_escape_names_from_files():
    evil = "<script>alert(1)</script>|x"
    metrics = {"cell": {"lessons_stored": 2, "duplicate_rate": 0.5}, "agents": {"<b>a</b>": {"lessons_stored": 2}}}
    document = {"experiment": evil, "description": evil, "scenario": "s", "experiment_file": "e",
                "matrix": {"models": [evil], "configs": {"c": {"agents": {"x": evil}}}, "seeds": [1], "sessions": 1,
                           "turns": 1},
                "metrics_embedder": None, "generated": "now", "machine": {"platform": "p", "cores": 2},
                "cells": [{"id": "i", "model": evil, "config": "c", "seed": 1, "status": "finished", "seconds": 1,
                           "metrics": metrics}],
                "groups": [{"model": evil, "config": "c", "seeds": 1,
                            "metrics": {"lessons_stored": {"mean": 2.0, "std": 0.0, "n": 1}}}]}
    page = render_html(document)
    assert "<script>" not in page and "<b>a</b>" not in page and "&lt;script&gt;" in page
    assert "<svg" in page
    markdown = render_markdown(document)
    assert "\\|x" in markdown


def test_slug_keeps_cell_ids_file_safe():
    assert slug("gemini:gemini-2.5-flash") == "gemini-gemini-2-5-flash"
    assert Cell("openai:http://h:1/v1:m", "a", 2).id == "openai-http-h-1-v1-m__a__s2"


def test_cli_compare(finished, tmp_path):
    path, out, _, _ = finished
    runner = CliRunner()
    result = runner.invoke(app, ["compare", str(path), "--out", str(out), "--report-only"])
    assert result.exit_code == 0, result.output
    assert "2/2 cells finished" in result.output
    missing = runner.invoke(app, ["compare", str(tmp_path / "none.yaml")])
    assert missing.exit_code == 2 and "not found" in missing.output


def test_a_failing_cell_is_reported_and_does_not_stop_the_others(tmp_path):
    # A well-formed model string whose provider fails when the cell starts (a misspelled one is a
    # configuration error, reported before any cell: tests/unit/sim/test_validate.py).
    path = _write(tmp_path, models=["scripted", "replay:/nonexistent/x.jsonl"], sessions=1, turns=1,
                  configs={"default": {}}, max_workers=1)
    failing = "replay-nonexistent-x-jsonl__default__s1"
    result = CliRunner().invoke(app, ["compare", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert f"unfinished: {failing}" in " ".join(result.output.split())
    document = json.loads((tmp_path / "out" / "comparison.json").read_text())
    status = {c["id"]: (c["status"], c.get("message", "")) for c in document["cells"]}
    assert status["scripted__default__s1"][0] == "finished"
    assert status[failing][0] == "error"
    assert "does not exist" in status[failing][1]
    assert not (tmp_path / "out" / "cells" / failing / CELL_FILE).exists()


def test_only_local_model_cells_are_recognised_as_local():
    from mnemarket.experiments.experiment import is_local_model

    assert is_local_model("local") and is_local_model("local:/models/other.gguf")
    assert not is_local_model("scripted") and not is_local_model("openai:http://127.0.0.1:8000/v1:local")


@pytest.mark.local_model
def test_local_model_cells_share_one_worker_process_beside_the_others(tmp_path):
    import os

    pytest.importorskip("llama_cpp")
    path = _write(tmp_path, models=["local", "scripted"], seeds=[1, 2], sessions=1, turns=1, max_workers=2,
                  configs={"default": {}})
    outcomes: dict[str, dict] = {}
    run_experiment(path, tmp_path / "out", progress=lambda kind, cell, outcome: outcomes.update({cell.id: outcome}))
    assert all(o["state"] == "finished" for o in outcomes.values()), outcomes
    local = {o["worker"] for cid, o in outcomes.items() if cid.startswith("local")}
    scripted = {o["worker"] for cid, o in outcomes.items() if cid.startswith("scripted")}
    assert len(local) == 1 and os.getpid() not in local  # both local cells in one worker: one loaded model
    assert not local & scripted


def _comparable(document: dict) -> dict:
    """A comparison without what differs between two executions of the same matrix."""
    volatile = {"run_dir", "seconds", "generated", "finished_at", "worker", "experiment_file"}

    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in volatile}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node
    return strip(document)


def test_ray_executor_writes_the_same_comparison_as_the_process_pool(tmp_path):
    pytest.importorskip("ray")
    path = _write(tmp_path, seeds=[1, 2], max_workers=2)
    pool = json.loads(run_experiment(path, tmp_path / "pool").read_text())
    seen: list[str] = []
    on_ray = json.loads(run_experiment(path, tmp_path / "ray", executor="ray",
                                       progress=lambda kind, cell, outcome: seen.append(cell.id)).read_text())
    assert len(seen) == 4 and all(c["status"] == "finished" for c in on_ray["cells"])
    assert all(Path(c["run_dir"]).is_relative_to(tmp_path / "ray") for c in on_ray["cells"])
    assert _comparable(on_ray) == _comparable(pool)
    # Finished cells came back to the head: a second compare runs nothing and reports the same.
    again: list[str] = []
    rerun = run_experiment(path, tmp_path / "ray", executor="ray", progress=lambda *a: again.append(a[1].id))
    assert again == [] and _comparable(json.loads(rerun.read_text())) == _comparable(on_ray)


def test_local_model_cells_run_in_one_process_on_each_node_of_a_two_node_cluster(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from mnemarket.experiments import experiment, ray_executor

    path = _write(tmp_path, seeds=[1, 2], max_workers=2)
    pool = json.loads(run_experiment(path, tmp_path / "pool").read_text())
    made: list = []
    node_actors = ray_executor._node_actors
    monkeypatch.setattr(ray_executor, "_node_actors", lambda r: made.extend(node_actors(r)) or made)
    monkeypatch.setattr(experiment, "is_local_model", lambda model: True)  # scripted cells stand in for local ones
    with ray_executor.loopback_ray():  # the test's cluster, like compare's own Ray, on loopback only
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "node_ip_address": LOOPBACK})
        cluster.add_node(num_cpus=1, node_ip_address=LOOPBACK)
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        on_ray = json.loads(run_experiment(path, tmp_path / "ray", executor="ray").read_text())
        where = ray.get([actor.where.remote() for actor in made])
        nodes = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert _comparable(on_ray) == _comparable(pool)
    assert len(nodes) == 2 and sorted(w["node"] for w in where) == sorted(nodes)  # one actor on each node
    assert [w["cells"] for w in where] == [2, 2]  # each ran its share of the cells in its one process


def test_a_local_ray_listens_on_loopback_only_and_probes_no_outside_address(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    if not Path("/proc/net/tcp").exists():
        pytest.skip("reads listening sockets from /proc (Linux)")
    import importlib
    import os

    from tests.unit.sim.sockets import descendants, listening

    services = importlib.import_module("ray._private.services")
    probed: list = []
    find_external = services.node_ip_address_from_perspective
    monkeypatch.setattr(services, "node_ip_address_from_perspective",
                        lambda *args: probed.append(args) or find_external(*args))
    seen: list = []

    def look(kind, cell, outcome):  # while the cells' Ray is up
        if not seen:
            seen.append((ray.util.get_node_ip_address(), ray.get_runtime_context().gcs_address,
                         listening(descendants(os.getpid()) - {os.getpid()})))

    path = _write(tmp_path, configs={"metacognitive": {"agents": {"components": ["semantic_memory"]}}})
    run_experiment(path, tmp_path / "ray", executor="ray", progress=look)
    node, gcs, sockets = seen[0]
    assert node == LOOPBACK and gcs.startswith(f"{LOOPBACK}:")
    names = {name for name, _, _ in sockets}
    assert {"gcs_server", "raylet"} <= names, sockets  # the servers were found, so the check below means something
    exposed = [s for s in sockets if not is_loopback(s[1])]
    assert exposed == [], f"listening beyond loopback: {exposed}"
    assert probed == []  # no public DNS address was connected to, to learn an external one


def test_without_an_address_compare_starts_its_own_ray_even_if_ray_address_is_stale(tmp_path):
    pytest.importorskip("ray")
    import os
    import subprocess
    import sys

    path = _write(tmp_path, configs={"metacognitive": {"agents": {"components": ["semantic_memory"]}}})
    env = os.environ | {"RAY_ADDRESS": "127.0.0.1:1"}  # nothing listens there: Ray's default waits on it for minutes
    done = subprocess.run([sys.executable, "-m", "mnemarket.cli.app", "compare", str(path), "--out",
                           str(tmp_path / "out"), "--executor", "ray"], env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1/1 cells finished" in done.stdout


def test_executor_mistakes_are_configuration_errors(tmp_path):
    path = _write(tmp_path)
    with pytest.raises(ConfigError, match="executor 'dask' is unknown"):
        run_experiment(path, tmp_path / "o", executor="dask")
    with pytest.raises(ConfigError, match="--address needs --executor ray"):
        run_experiment(path, tmp_path / "o", address="auto")


def test_comparison_csv_is_tidy_and_covers_cells_and_agents(finished):
    import csv

    from mnemarket.reports.comparison_report import CSV_COLUMNS

    path, out, result, seen = finished
    with (out / "comparison.csv").open() as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames) == CSV_COLUMNS
        rows = list(reader)
    assert {r["cell"] for r in rows} == set(seen)
    assert {r["agent"] for r in rows} == {"(cell)", "alpha", "beta", "gamma"}
    invalid = [r for r in rows if r["metric"] == "invalid_action_rate" and r["agent"] == "(cell)"]
    assert len(invalid) == 2 and all(r["better"] == "lower" for r in invalid)
    assert all(float(r["value"]) == float(r["value"]) for r in rows)  # every value is a number


def test_reports_show_intervals_differences_and_link_cell_reports(finished):
    path, out, result, seen = finished
    document = json.loads(result.read_text())
    assert document["baseline"] == {"model": "scripted", "config": "metacognitive"}
    assert all(d["model"] == "scripted" and d["config"] == "verbose" for d in document["differences"])
    assert document["warnings"] and "1 paired seed(s)" in document["warnings"][0]
    page = (out / "comparison.html").read_text()
    assert "Differences from the baseline scripted / metacognitive" in page
    assert "(lower is better)" in page and "warning: scripted/verbose" in page
    for row in document["cells"]:
        assert (Path(row["run_dir"]) / "report.html").exists()
        assert f'href="cells/{row["id"]}/report.html"' in page


def test_a_baseline_outside_the_matrix_is_a_configuration_error(tmp_path):
    path = _write(tmp_path, baseline="gemini:nope")
    with pytest.raises(ConfigError, match="baseline 'gemini:nope' is not in the matrix"):
        run_experiment(path, tmp_path / "o")
    assert not (tmp_path / "o" / "cells").exists()


def test_ctrl_c_during_compare_on_ray_cancels_its_cells_and_leaves_no_ray_process(tmp_path):
    """A terminal's Ctrl-C (SIGINT to the whole process group) during `compare --executor ray`:
    exit 130 with the resume line, as on the process pool; the cells' temporary folders on the
    workers are gone, every process the local Ray started has ended, and the head's cells are as
    they were before they were sent (no cell.json, no half-swapped directory)."""
    pytest.importorskip("ray")
    import contextlib
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.unit.sim.fast_demo import fast_demo
    from tests.unit.sim.sockets import descendants

    path = _write(tmp_path, scenario=str(fast_demo(tmp_path)), seeds=[1, 2], sessions=500, turns=20,
                  configs={"metacognitive": {"agents": {"components": ["semantic_memory"]}}})
    out, work = tmp_path / "out", tmp_path / "work"
    work.mkdir()
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path), "TMPDIR": str(work),  # the cells' folders
                        "RAY_TMPDIR": "/tmp"}  # Ray's own session stays where it always is (socket path lengths)
    child = subprocess.Popen([sys.executable, "-m", "mnemarket.cli.app", "compare", str(path), "--out", str(out),
                              "--executor", "ray"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)  # its own group, as a terminal's foreground job
    try:
        deadline = time.monotonic() + 240
        while len(list(work.glob("mnemarket-cell-*/*/world.db"))) < 2:  # both cells playing on Ray's workers
            assert child.poll() is None and time.monotonic() < deadline, "compare ended or its cells never started"
            time.sleep(0.2)
        ray_processes = descendants(child.pid) - {child.pid}
        configs = {cell: (cell / "config.json").read_bytes() for cell in out.glob("cells/*")}
        os.killpg(child.pid, signal.SIGINT)
        stdout, stderr = child.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 130, stdout + stderr
    assert f"interrupted; continue with: mnemarket compare {path} --out {out}" in stderr
    assert "cancelled 2 cell(s) on Ray" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert len(ray_processes) >= 3  # GCS, raylet and the two workers at least: the check below means something

    def running(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    deadline = time.monotonic() + 60  # Ray's processes end on their own schedule after shutdown
    while any(running(pid) for pid in ray_processes) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [pid for pid in ray_processes if running(pid)] == []
    assert list(work.iterdir()) == []  # each cancelled task removed its temporary folder
    assert {cell: (cell / "config.json").read_bytes() for cell in out.glob("cells/*")} == configs
    assert not list(out.glob("cells/*/cell.json")) and not list(out.glob("cells/.*"))


@pytest.fixture
def sigint_handler():
    """Sets SIGINT's handler for a test and puts the inherited one back: a process started in the
    background by a shell without job control inherits SIGINT ignored (so does pytest under it)."""
    import signal

    inherited = signal.getsignal(signal.SIGINT)
    yield lambda handler: signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGINT, inherited)


def test_a_deferred_interrupt_takes_the_first_ctrl_c_and_passes_on_the_second(sigint_handler):
    import signal

    from mnemarket.experiments.interrupt import deferred_interrupt

    sigint_handler(signal.default_int_handler)  # the command line's: raise KeyboardInterrupt
    with deferred_interrupt() as stop:
        # raise_signal runs the handler in this thread before it returns
        signal.raise_signal(signal.SIGINT)
        assert stop.is_set()  # the first only asks the caller to stop
        with pytest.raises(KeyboardInterrupt):  # the second reaches the handler before it
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_deferred_interrupt_under_an_ignored_sigint_ignores_the_second_too(sigint_handler):
    import signal

    from mnemarket.experiments.interrupt import deferred_interrupt

    sigint_handler(signal.SIG_IGN)  # e.g. `compare ... &` from a script: Ctrl-C was never its to take
    with deferred_interrupt() as stop:
        signal.raise_signal(signal.SIGINT)
        assert stop.is_set()
        signal.raise_signal(signal.SIGINT)  # passed on to "ignore": nothing is raised
        assert stop.is_set()
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
