"""LoCoMo through `compare`: `dataset:` in place of `scenario:`, a cell per (model, config,
conversation set, seed), resumable, pooled into a per-category comparison, on Ray as well."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.errors import ConfigError
from mnemarket.evals.locomo_run import read_rows
from mnemarket.evals.outputs import ANSWERABLE
from mnemarket.experiments.experiment import CELL_FILE, check_experiment, load_experiment, run_experiment
from tests.unit.evals.locomo_fixture import write_conversation

ROOT = Path(__file__).resolve().parents[3]
DEV_SET = ROOT.parent / "shared" / "datasets" / "locomo-dev"
"""The repository's sibling ../shared/datasets/locomo-dev, as config/experiments/locomo_dev.yaml names it."""


def _write(tmp_path: Path, **fields) -> Path:
    """An experiment over two copies of the tiny fixture conversation (7 and 8), extractive, rag vs oracle."""
    write_conversation(tmp_path / "data", "7")
    write_conversation(tmp_path / "data", "8")
    data = {"name": "loco", "description": "<b>fixture</b>",
            "dataset": {"name": "locomo", "data": "data", "conversations": [7, 8], "embedder": "hashing"},
            "models": ["extractive"],
            "configs": {"rag": {}, "oracle": {"dataset": {"condition": "oracle-evidence"}}}, "seeds": [0]}
    data.update(fields)
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _csv_rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "questions.csv").open() as handle:
        return list(csv.DictReader(handle))


def _scores(document: dict) -> list[dict]:
    """The groups' scores (timings aside)."""
    return [{k: g[k] for k in ("model", "config", "questions", "f1", "em", "evidence_recall_at_10", "categories",
                                "adversarial")} for g in document["locomo"]["groups"]]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("loco")
    path = _write(tmp_path, max_workers=1)
    seen: list[str] = []
    result = run_experiment(path, tmp_path / "out", progress=lambda kind, cell, outcome: seen.append(cell.id))
    return path, tmp_path / "out", json.loads(result.read_text()), seen


def test_each_model_config_conversation_and_seed_is_a_cell_holding_an_eval(finished):
    _, out, document, seen = finished
    assert sorted(seen) == sorted(f"extractive__{config}__c{conv}__s0" for config in ("rag", "oracle") for conv in (7, 8))
    for cell in document["cells"]:
        run_dir = Path(cell["run_dir"])
        assert cell["status"] == "finished" and run_dir.parent == out / "cells"
        options = json.loads((run_dir / "eval.json").read_text())
        assert options["conversations"] == cell["conversations"] and options["model"] == "extractive"
        assert options["condition"] == {"rag": "rag", "oracle": "oracle-evidence"}[cell["config"]]
        results = json.loads((run_dir / "results.json").read_text())
        assert results["conversations"] == cell["conversations"] and results["questions"] == 7
        assert len(_csv_rows(run_dir)) == 7 and (run_dir / "report.html").is_file()


def test_the_comparison_pools_each_group_per_category_from_its_cells_rows(finished):
    _, out, document, _ = finished
    groups = {g["config"]: g for g in document["locomo"]["groups"]}
    assert set(groups) == {"rag", "oracle"} and document["locomo"]["categories"] == list(ANSWERABLE)
    for name, group in groups.items():
        rows = [r for c in document["cells"] if c["config"] == name for r in _csv_rows(Path(c["run_dir"]))]
        assert group["questions"] == len(rows) == 14 and group["finished"] == group["cells"] == 2
        for category in ANSWERABLE:
            mine = [float(r["f1"]) for r in rows if r["category_name"] == category]
            assert group["categories"][category]["n"] == len(mine)
            assert group["categories"][category]["f1"] == pytest.approx(sum(mine) / len(mine), abs=1e-4)
        adversarial = [r for r in rows if r["category"] == "5"]
        assert group["adversarial"]["n"] == len(adversarial) == 2  # apart: not among the scored questions
        assert group["scored"] == len(rows) - len(adversarial)
        assert group["adversarial"]["abstention_rate"] == sum(r["abstained"] == "True" for r in adversarial) / 2
    # the oracle puts the gold turn first: the extractive reader answers single-hop with it, so it beats rag
    assert groups["oracle"]["categories"]["single-hop"]["f1"] > groups["rag"]["categories"]["single-hop"]["f1"]
    table = list(csv.DictReader((out / "comparison.csv").open()))
    assert {(r["config"], r["category"]) for r in table} >= {("rag", "single-hop"), ("oracle", "adversarial (abstained)")}


def test_comparison_html_links_each_cells_report_and_escapes_text(finished):
    _, out, document, _ = finished
    html = (out / "comparison.html").read_text()
    links = re.findall(r'<a href="([^"]+)">', html)
    assert sorted(links) == sorted(c["report"] for c in document["cells"]) and len(links) == 4
    assert all((out / link).is_file() and link.endswith("report.html") for link in links)
    assert "&lt;b&gt;fixture&lt;/b&gt;" in html and "<b>fixture</b>" not in html and "<script" not in html
    assert "single-hop" in html and "adversarial" in html.lower()
    assert "| extractive / oracle |" in (out / "comparison.md").read_text()


def test_a_finished_cell_is_kept_and_a_cut_cell_resumes_where_it_stopped(tmp_path):
    path = _write(tmp_path, max_workers=1)
    out = tmp_path / "out"
    first = json.loads(run_experiment(path, out).read_text())
    cut = Path(first["cells"][0]["run_dir"])
    kept = Path(first["cells"][1]["run_dir"])
    before = read_rows(cut)
    stamp = (kept / CELL_FILE).stat().st_mtime_ns
    # as if killed after three answers: no cell.json, three rows (and a half-written fourth)
    (cut / CELL_FILE).unlink()
    lines = (cut / "rows.jsonl").read_text().splitlines(keepends=True)
    (cut / "rows.jsonl").write_text("".join(lines[:3]) + lines[3][:20])
    seen: list[str] = []
    again = json.loads(run_experiment(path, out, progress=lambda kind, cell, outcome: seen.append(cell.id)).read_text())
    assert seen == [first["cells"][0]["id"]]  # only the cut cell ran again
    assert (kept / CELL_FILE).stat().st_mtime_ns == stamp
    after = read_rows(cut)
    assert [r["question_id"] for r in after] == [r["question_id"] for r in before]  # each question once
    assert [r["answer"] for r in after] == [r["answer"] for r in before]
    assert _scores(again) == _scores(first)


@pytest.mark.parametrize(("change", "field", "says"), [
    ({"dataset": {"name": "locomo", "data": "nowhere"}}, "dataset.data", "nowhere is not a folder"),
    ({"dataset": {"name": "locomo", "data": "data", "conversations": [7, 99]}}, "dataset.conversations",
     "conversations 99 not in"),
    ({"dataset": {"name": "locomo", "data": "data", "conversations": [7, [7, 8]]}}, "dataset.conversations",
     "appear in more than one set"),
    ({"dataset": {"name": "locomo", "data": "data", "condition": "oracle"}}, "", "dataset: condition: Input should be"),
    ({"dataset": {"name": "locomo", "data": "data", "seed": 3}}, "", "dataset sets ['seed'], which each cell takes"),
    ({"scenario": str(ROOT / "config" / "demo.yaml")}, "", "name either `scenario:`"),
    ({"sessions": 3}, "", "sessions belong to scenario runs"),
    ({"models": ["scripted"]}, "", "cannot answer questions"),
    ({"configs": {"a": {"agents": {"rag": {"limit": 5}}}}}, "", "configs.a sets agents/per_agent/oracle"),
    ({"configs": {"a": {"dataset": {"data": "elsewhere"}}}}, "", "configs.a.dataset sets ['data']"),
    ({"configs": {"a": {"dataset": {"condition": "oracle"}}}}, "", "configs.a.dataset: condition"),
    ({"configs": {"a": {"dataset": {"condition": "full-context"}}}}, "configs.a", "needs a model that reads"),
    ({"configs": {"a": {"dataset": {"judge": "replay:nowhere.jsonl"}}}}, "configs.a", "no such file"),
    ({"judge": "random"}, "", "answer judge is an eval option"),
])
def test_a_dataset_experiment_mistake_is_a_clear_error_before_any_cell(tmp_path, change, field, says):
    path = _write(tmp_path, **change)
    with pytest.raises(ConfigError) as caught:
        check_experiment(load_experiment(path, tmp_path / "out"))
    assert str(path) in str(caught.value) and f"{field}: " in str(caught.value) and says in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_extractive_and_dataset_options_need_a_dataset(tmp_path):
    demo = str(ROOT / "config" / "demo.yaml")
    for change, says in (({"models": ["extractive"]}, "needs `dataset:`"),
                         ({"models": ["scripted"], "configs": {"a": {"dataset": {"condition": "rag"}}}},
                          "only a `dataset:` experiment has")):
        path = _write(tmp_path, scenario=demo, dataset=None, **change)
        with pytest.raises(ConfigError, match=re.escape(says)):
            load_experiment(path)


def test_dataset_cells_run_on_a_local_ray_as_in_the_process_pool_with_their_profiles(tmp_path):
    """One Ray start (a slow, load-sensitive step) for both: Ray runs dataset cells as the pool does, and a
    model's profile (tests/unit/evals/test_locomo_profiles.py) reaches the reader on a Ray worker."""
    pytest.importorskip("ray")
    from tests.unit.evals.test_locomo_profiles import PROFILE, PROFILED_COST, chats, reply
    from tests.unit.providers.fake_servers import FakeServer, openai_api

    with FakeServer(openai_api(reply)) as server:
        model = f"openai:{server.url}/v1:fake"
        path = _write(tmp_path, dataset={"name": "locomo", "data": "data", "conversations": [7], "embedder": "hashing"},
                      models={"extractive": None, model: PROFILE})
        pool = json.loads(run_experiment(path, tmp_path / "pool", max_workers=1).read_text())
        asked_by_pool = len(chats(server))
        seen: list[str] = []
        on_ray = json.loads(run_experiment(path, tmp_path / "ray", executor="ray",
                                           progress=lambda kind, cell, outcome: seen.append(cell.id)).read_text())
    on_ray_requests = chats(server)[asked_by_pool:]
    assert len(on_ray_requests) == asked_by_pool == 14  # 7 questions x 2 configs, answered by the profiled model
    assert all(r.body["response_format"]["type"] == "json_object" for r in on_ray_requests)
    profiled = [c for c in on_ray["cells"] if c["model"] == model]
    assert all(r["cost_usd"] == pytest.approx(PROFILED_COST) for c in profiled for r in read_rows(Path(c["run_dir"])))
    assert [g["profile"] for g in on_ray["locomo"]["groups"] if g["model"] == model] == [PROFILE, PROFILE]
    slug = f"openai-http-127-0-0-1-{server.url.rsplit(':', 1)[1]}-v1-fake"
    assert sorted(seen) == sorted(f"{m}__{c}__c7__s0" for m in ("extractive", slug) for c in ("oracle", "rag"))
    for cell in on_ray["cells"]:  # the run directories came back to the head, finished
        run_dir = Path(cell["run_dir"])
        assert cell["status"] == "finished" and run_dir.is_relative_to(tmp_path / "ray")
        assert (run_dir / CELL_FILE).is_file() and (run_dir / "report.html").is_file()

    def answers(document):
        return {c["id"]: [(r["question_id"], r["answer"], r["f1"]) for r in read_rows(Path(c["run_dir"]))]
                for c in document["cells"]}

    assert answers(on_ray) == answers(pool) and _scores(on_ray) == _scores(pool)
    again: list[str] = []
    run_experiment(path, tmp_path / "ray", executor="ray", progress=lambda *a: again.append(a[1].id))
    assert again == []


def test_the_shipped_example_reads_the_dev_set_beside_the_repository(tmp_path):
    if not DEV_SET.is_dir():
        pytest.skip(f"LoCoMo dev set not at {DEV_SET} (the repository's sibling ../shared/datasets/locomo-dev)")
    experiment = load_experiment(ROOT / "config" / "experiments" / "locomo_dev.yaml", tmp_path / "out")
    check_experiment(experiment)
    cells = experiment.cells()
    assert len(cells) == 5 * 3 and {c.conversations for c in cells} == {(n,) for n in ("26", "30", "41", "42", "43")}
    # one real cell, cut short: two questions of conversation 30, the hashing embedder
    data = yaml.safe_load((ROOT / "config" / "experiments" / "locomo_dev.yaml").read_text())
    data["dataset"] |= {"data": str(DEV_SET), "conversations": [30], "limit": 2, "embedder": "hashing"}
    data["configs"] = {"oracle-evidence": data["configs"]["oracle-evidence"]}
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(data))
    document = json.loads(run_experiment(path, tmp_path / "out").read_text())
    assert [c["status"] for c in document["cells"]] == ["finished"]
    assert document["locomo"]["groups"][0]["questions"] == 2


def test_validate_warns_instead_of_failing_where_the_dev_set_is_absent(tmp_path):
    folder = tmp_path / "config" / "experiments"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "config" / "experiments" / "locomo_dev.yaml", folder)
    result = CliRunner().invoke(app, ["validate", str(folder / "locomo_dev.yaml")])
    assert result.exit_code == 0, result.output
    assert "dataset.data" in result.output and "not on this machine" in result.output


def test_compare_shows_a_running_dataset_cells_questions_against_its_total(tmp_path):
    import io

    from rich.console import Console
    from rich.progress import Progress

    from mnemarket.experiments.compare_progress import CellWatcher
    from mnemarket.experiments.experiment import prepare_cell

    experiment = load_experiment(_write(tmp_path), tmp_path / "out")
    cells = experiment.cells()
    for cell in cells:
        prepare_cell(experiment, cell)
    running = experiment.cell_dir(cells[0])
    (running / "rows.jsonl").write_text('{"question_id": "7-q0"}\n' * 3)  # three of its seven questions answered
    watcher = CellWatcher(experiment)
    with Progress(console=Console(file=io.StringIO())) as progress:
        watcher._poll(progress)
        tasks = {task.description.split()[-1]: task for task in progress.tasks}
    assert list(tasks) == [cells[0].id]  # the others have no rows yet
    assert (tasks[cells[0].id].completed, tasks[cells[0].id].total, tasks[cells[0].id].fields["unit"]) == (3, 7, "questions")


def test_observe_mode_and_the_answer_judge_are_eval_options_of_a_config(tmp_path):
    path = _write(tmp_path, dataset={"name": "locomo", "data": "data", "conversations": [7], "embedder": "hashing"},
                  configs={"preloaded": {}, "observe": {"dataset": {"mode": "observe"}}})
    document = json.loads(run_experiment(path, tmp_path / "out", max_workers=1).read_text())
    assert [c["status"] for c in document["cells"]] == ["finished", "finished"]
    results = {c["config"]: json.loads((Path(c["run_dir"]) / "results.json").read_text()) for c in document["cells"]}
    assert results["observe"]["mode"] == "observe" and results["observe"]["storage"] is not None
    assert results["preloaded"]["mode"] == "preloaded" and results["preloaded"]["storage"] is None
    # the extractive reference stores every turn it is shown, so observing reaches what preloading holds
    assert results["observe"]["formation_rate"] == 1.0
    groups = {g["config"]: g for g in document["locomo"]["groups"]}
    assert groups["observe"]["mode"] == "observe" and groups["observe"]["formation_rate"] == 1.0
    assert "<td>observe</td>" in (tmp_path / "out" / "comparison.html").read_text()


def test_a_misspelt_reader_is_refused_with_the_message_a_scenario_experiment_gives(tmp_path):
    """`models:` of a dataset experiment is checked by the agents' model-string check (plus `extractive`)."""
    messages = []
    for folder, change in (("dataset", {}), ("scenario", {"scenario": str(ROOT / "config" / "demo.yaml"),
                                                          "dataset": None})):
        path = _write(tmp_path / folder, models=["extractive", "gemni:flash"], **change)
        with pytest.raises(ConfigError) as caught:
            load_experiment(path)
        messages.append(str(caught.value).replace(str(path), "FILE"))
    assert "Did you mean 'gemini'?" in messages[0] and "models.1" in messages[0]
    assert messages[1].endswith(messages[0].split("models.1", 1)[1])  # the same words after the field


def test_memory_and_no_memory_configs_give_the_ladders_paired_effect_per_category(tmp_path):
    from tests.unit.evals.locomo_fixture import long_conversation_data

    for name in ("1", "2", "3"):
        write_conversation(tmp_path / "data", name)
    for name in ("4", "5"):
        (tmp_path / "data" / f"{name}.json").write_text(json.dumps(long_conversation_data()))
    path = _write(tmp_path, dataset={"name": "locomo", "data": "data", "conversations": [[1, 2, 3, 4, 5]],
                                     "embedder": "hashing"},
                  configs={"memory": {}, "no_memory": {"dataset": {"condition": "no-memory"}}}, seeds=[0, 1])
    document = json.loads(run_experiment(path, tmp_path / "out", max_workers=1).read_text())
    assert [c["status"] for c in document["cells"]] == ["finished"] * 4
    rows = {(c["config"], c["seed"]): {r["question_id"]: r for r in _csv_rows(Path(c["run_dir"]))}
            for c in document["cells"]}
    pairs = [(conv_seed, on, rows[("no_memory", conv_seed[1])][qid]) for conv_seed in rows if conv_seed[0] == "memory"
             for qid, on in rows[conv_seed].items()]
    effect = document["locomo"]["memory_effect"]["extractive"]
    for column in (*ANSWERABLE, "overall 1-4", "adversarial"):
        chosen = [(on, off) for _, on, off in pairs
                  if (on["category"] == "5" if column == "adversarial" else
                      on["category"] != "5" and column in (on["category_name"], "overall 1-4"))]
        deltas = [float(on["f1"]) - float(off["f1"]) for on, off in chosen]
        assert effect[column]["n_pairs"] == len(deltas) > 0
        assert effect[column]["delta"] == pytest.approx(sum(deltas) / len(deltas), abs=1e-4)
        conversations = {on["conversation"] for on, _ in chosen}
        if len(conversations) < 5:  # clustered by conversation: too few for an interval (as seeds on the ladder)
            assert effect[column]["ci"] is None
        else:
            low, high = effect[column]["ci"]
            assert -1 <= low <= effect[column]["delta"] <= high <= 1
    assert effect["single-hop"]["ci"] is not None and effect["temporal"]["ci"] is None  # in all five / in three
    assert effect["overall 1-4"]["n_pairs"] == sum(on["category"] != "5" for _, on, _ in pairs)  # both seeds
    # the extractive reference answers every answerable question from memory and abstains without it
    assert effect["single-hop"]["delta"] > 0 and effect["adversarial"]["delta"] <= 0
    assert document["locomo"]["memory_effect_configs"] | {"min_clusters_for_interval": 5} == {
        "memory": "memory", "no_memory": "no_memory", "metric": "f1", "paired_by": "seed and question",
        "clustered_by": "conversation", "min_clusters_for_interval": 5}
    assert "## Memory effect: memory minus no_memory" in (tmp_path / "out" / "comparison.md").read_text()
    assert "<h2>Memory effect: memory minus no_memory</h2>" in (tmp_path / "out" / "comparison.html").read_text()


def test_the_effect_pairs_configs_by_name_else_by_condition_and_none_without_a_control(finished):
    from mnemarket.evals.comparison import effect_configs

    assert effect_configs({"memory": "oracle-evidence", "no_memory": "no-memory", "x": "rag"}) == ("memory", "no_memory")
    assert effect_configs({"rag": "rag", "control": "no-memory"}) == ("rag", "control")
    assert effect_configs({"a": "rag", "b": "rag", "control": "no-memory"}) is None  # which rag? not guessed
    _, out, document, _ = finished  # rag and oracle-evidence: no control to pair with
    assert document["locomo"]["memory_effect"] == {} and document["locomo"]["memory_effect_configs"] is None
    assert "Memory effect" not in (out / "comparison.md").read_text()
