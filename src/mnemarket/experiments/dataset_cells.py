"""A memory dataset in an experiment: `dataset: {name: locomo, data: DIR, conversations: [...]}` in
place of `scenario:` (plans/locomo-eval.md).

Each (model, config, conversation set, seed) is a cell. Its directory is an `mnemarket eval locomo`
output directory: the eval's options (`eval.json`) are written when the cell is prepared, and
`cell.run_cell` runs it like a scenario cell (experiments/dataset_run.py; process pool or Ray,
resumed from its rows, `cell.json` once finished). The comparison pools each (model, config)'s
question rows over its seeds and conversation sets into LoCoMo's per-category table
(evals/comparison.py).

- `conversations:` lists the cells' conversation sets: an id is a set of one (a cell per
  conversation, so they run in parallel), a list of ids is one set; absent, every file of the folder
  is a set of one.
- `dataset:` takes any option of `eval locomo` but data, conversations, model and seed (`mode`,
  `condition`, `rag_limit`, `embedder`, `window`, `limit`, ...); a config sets its own under
  `dataset:`, merged over the experiment's. Both are validated as the command's `LocomoOptions`.
- `models` may name `extractive`, the eval's deterministic reference reader.
- Workers read the data folder at the head's absolute path: on a cluster it must be there on every node.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mnemarket.agents import checked_llm_spec
from mnemarket.errors import ConfigError
from mnemarket.evals import (
    ANSWERABLE,
    EXTRACTIVE,
    LocomoOptions,
    check_options,
    effect_section,
    group_summary,
    load_conversations,
    open_options,
    read_rows,
    write_locomo_comparison,
)
from mnemarket.experiments.cell import CELL_FILE, cell_done
from mnemarket.jsonl import read_json_object
from mnemarket.providers import ModelProfile
from mnemarket.yaml_config import deep_merge

# `experiment`, `config` and `cell` below are experiments.experiment's Experiment, ExperimentConfig and
# Cell, not imported: that module imports this one, and imports must not circle.
NOT_WITH_DATASET = ("sessions", "turns", "judge", "spend_cap_usd")
"""Experiment fields of a scenario run that a dataset cell has no use for (refused, not ignored)."""
NOT_A_READER = ("scripted",)
"""Model forms that cannot answer a question (a scripted policy plays a scenario's plan)."""


CELL_FIELDS = ("data", "conversations", "model", "profile", "embedder_profile", "seed")
"""`eval locomo` options each cell takes from the matrix (`profile`: its model's, from a `models:` mapping, as a
scenario cell's run takes it; `embedder_profile`: its embedder's, from `embedders:`); every other option of `LocomoOptions` is an
eval option that `dataset:` and a config's `dataset:` may set (one source of truth: the command's)."""


def eval_fields() -> list[str]:
    return [name for name in LocomoOptions.model_fields if name not in CELL_FIELDS]


def eval_options(options: dict[str, Any], where: str, **cell: Any) -> LocomoOptions:
    """``options`` (eval options) with a cell's fields, validated as the command's; a ValueError names ``where``."""
    fixed = [key for key in options if key in CELL_FIELDS]
    if fixed:
        raise ValueError(f"{where} sets {fixed}, which each cell takes from `dataset:` data/conversations, `models:`, "
                         f"`embedders:` and `seeds:`; eval options are {', '.join(eval_fields())}")
    try:
        return LocomoOptions.model_validate({**options, "data": "", "model": EXTRACTIVE, **cell})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"{where}: {problems} (eval options: {', '.join(eval_fields())})") from None


def _reader_model(value: str) -> str:
    return value if value == EXTRACTIVE else checked_llm_spec(value)


ReaderModel = Annotated[str, AfterValidator(_reader_model)]
"""A model string of an experiment: any LLM form, or `extractive` (dataset experiments only)."""


class DatasetSpec(BaseModel):
    """`dataset:` of an experiment file: the data, the cells' conversation sets, and any eval option of
    `eval locomo` (`mode`, `condition`, `rag_limit`, `embedder`, `window`, `limit`, ...: `eval_fields`)."""

    model_config = ConfigDict(extra="allow")  # the eval options, validated as LocomoOptions below

    name: Literal["locomo"] = Field(description="the dataset (LoCoMo so far)")
    data: str = Field(description="folder of conversation files (<id>.json), relative to the experiment file")
    conversations: list[list[str]] = Field(
        default_factory=list, description="conversation sets, one per cell: an id (a set of one) or a list of ids; "
                                          "empty: each file of the folder")

    @field_validator("conversations", mode="before")
    @classmethod
    def _sets(cls, value: Any) -> Any:
        """`[26, [30, 41]]` -> `[["26"], ["30", "41"]]` (ids are file stems; YAML reads them as numbers)."""
        def ids(item: Any) -> Any:
            return [str(i) if isinstance(i, (int, str)) else i for i in item] if isinstance(item, list) else ids([item])
        return [ids(item) for item in value] if isinstance(value, list) else value

    @field_validator("conversations")
    @classmethod
    def _distinct(cls, value: list[list[str]]) -> list[list[str]]:
        if any(not ids for ids in value):
            raise ValueError("a conversation set is empty; name at least one conversation id in it")
        seen = [i for ids in value for i in ids]
        repeated = sorted({i for i in seen if seen.count(i) > 1})
        if repeated:
            raise ValueError(f"conversations {', '.join(repeated)} appear in more than one set; each is asked once")
        return value

    @property
    def options(self) -> dict[str, Any]:
        """The eval options as written (defaults are the command's)."""
        return dict(self.model_extra or {})

    @model_validator(mode="after")
    def _eval_options(self) -> DatasetSpec:
        eval_options(self.options, "dataset")
        return self


def check_dataset_fields(config: Any) -> None:
    """What `ExperimentConfig` refuses around a `dataset:` (raised as ValueError inside its validator)."""
    if config.dataset is None:
        if EXTRACTIVE in config.models:
            raise ValueError(f"model {EXTRACTIVE!r} is the dataset eval's reference reader; it needs `dataset:`")
        used = [name for name, override in config.configs.items() if override.dataset]
        if used:
            raise ValueError(f"configs {used} set `dataset:` options, which only a `dataset:` experiment has")
        return
    refused = [name for name in NOT_WITH_DATASET if getattr(config, name) is not None] + (["record"] if config.record else [])
    if refused:
        raise ValueError(f"{', '.join(refused)} belong to scenario runs; a `dataset:` experiment does not use them"
                         + (" (its answer judge is an eval option: `dataset: {judge: MODEL}`)" if "judge" in refused else ""))
    readers = [m for m in config.models if m.partition(":")[0] in NOT_A_READER]
    if readers:
        raise ValueError(f"models {readers} cannot answer questions; use {EXTRACTIVE!r} (the reference reader) or an LLM")
    for name, override in config.configs.items():
        if override.agents or override.per_agent or override.oracle:
            raise ValueError(f"configs.{name} sets agents/per_agent/oracle, which a `dataset:` experiment has no "
                             f"use for; set eval options under `dataset:` ({', '.join(eval_fields())})")
        options_for(config, name)


def options_for(config: Any, name: str, **cell: Any) -> LocomoOptions:
    """The eval options of config ``name`` (its `dataset:` merged over the experiment's) with a cell's fields;
    a cell's model brings its profile (`ExperimentConfig.profile_of`, as a scenario cell's run options), the
    embedder its own (`ExperimentConfig.embedder_profile_of`)."""
    assert config.dataset is not None
    if "model" in cell:
        cell["profile"] = config.profile_of(cell["model"])
    options = eval_options(deep_merge(config.dataset.options, config.configs[name].dataset), f"configs.{name}.dataset",
                           **cell)
    try:  # raised as ValueError inside ExperimentConfig's validator, as eval_options' are
        options.embedder_profile = config.embedder_profile_of(options.embedder)
    except ConfigError as exc:
        raise ValueError(f"configs.{name}.dataset: {exc}") from None
    return options


def data_dir(experiment: Any) -> Path:
    assert experiment.config.dataset is not None
    return (experiment.path.parent / experiment.config.dataset.data).resolve()


def conversation_sets(experiment: Any) -> list[tuple[str, ...]]:
    """The cells' conversation sets: as listed, or each file of the folder."""
    assert experiment.config.dataset is not None
    listed = experiment.config.dataset.conversations
    if listed:
        return [tuple(ids) for ids in listed]
    folder = data_dir(experiment)
    return [(f.stem,) for f in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def missing_data(experiment: Any) -> str | None:
    """What `validate` says of a dataset folder absent on this machine (None: present, or no dataset);
    `compare` refuses to start without it."""
    if experiment.config.dataset is None or data_dir(experiment).is_dir():
        return None
    return (f"dataset.data: {data_dir(experiment)} is not on this machine, so the conversation ids and "
            "conditions were not checked; compare needs it")


def check_dataset(experiment: Any) -> None:
    """The data folder and conversation ids, and each (model, config)'s options, checked before any
    cell starts: a missing folder, an unknown id, or a condition the model cannot run is a ConfigError."""
    config = experiment.config
    assert config.dataset is not None
    where = str(experiment.path)
    folder = data_dir(experiment)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder (paths are relative to the experiment file); point it at LoCoMo's "
                          "per-conversation files, e.g. the repository's sibling ../shared/datasets/locomo-dev",
                          path=where, field="dataset.data")
    names = [i for ids in conversation_sets(experiment) for i in ids]
    try:
        conversations = load_conversations(folder, names or None)
    except ConfigError as exc:
        raise ConfigError(str(exc), path=where, field="dataset.conversations") from None
    for name in config.configs:
        for model in config.models:
            options = options_for(config, name, data=str(folder), conversations=names, model=model)
            try:
                check_options(options, conversations)
            except ConfigError as exc:
                raise ConfigError(f"{model} with config {name!r}: {exc}", path=where, field=f"configs.{name}") from None


def cell_options(experiment: Any, cell: Any) -> LocomoOptions:
    return options_for(experiment.config, cell.config, data=str(data_dir(experiment)),
                       conversations=list(cell.conversations or ()), model=cell.model, seed=cell.seed)


def prepare_dataset_cell(experiment: Any, cell: Any) -> Path:
    """Write the cell's eval options (once); a cell begun with other options is refused."""
    run_dir = experiment.cell_dir(cell)
    try:
        open_options(run_dir, cell_options(experiment, cell))
    except ConfigError as exc:
        raise ConfigError(f"cell {cell.id}: {exc} (the experiment file changed since the cell started; move its "
                          "directory away to start it again)", path=str(experiment.path)) from None
    return run_dir


def _shown(profile: ModelProfile | None) -> dict[str, Any] | None:
    """A profile as comparison.json shows it: the options it sets."""
    return profile.model_dump(mode="json", exclude_defaults=True) if profile is not None else None


def write_dataset_comparison(experiment: Any, dirs: dict[Any, Path], outcomes: Mapping[Any, Mapping[str, Any]]) -> Path:
    """LoCoMo's per-category table per (model, config) and a row per cell, into comparison.json/.md/.html/.csv."""
    config = experiment.config
    assert config.dataset is not None
    cells: list[dict[str, Any]] = []
    pooled: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell, run_dir in dirs.items():
        row: dict[str, Any] = {"id": cell.id, "model": cell.model, "config": cell.config, "seed": cell.seed,
                               "conversations": list(cell.conversations or ()), "run_dir": str(run_dir)}
        results = read_json_object(run_dir / "results.json") if cell_done(run_dir) else None
        if results is not None:
            info = read_json_object(run_dir / CELL_FILE) or {}
            pooled.setdefault((cell.model, cell.config), []).extend({**r, "seed": cell.seed} for r in read_rows(run_dir))
            row |= {"status": "finished", "seconds": info.get("seconds"), "warnings": info.get("warnings") or [],
                    "report": os.path.relpath(run_dir / "report.html", experiment.out_dir),
                    "results": {k: results[k] for k in ("questions", "f1", "em", "evidence_recall_at_10")}}
        else:
            outcome = outcomes.get(cell, {})
            row |= {"status": outcome.get("state", "not run"), "message": outcome.get("message", ""),
                    "seconds": outcome.get("seconds")}
        cells.append(row)
    groups = []
    for model in config.models:
        for name in config.configs:
            options = options_for(config, name, model=model)
            members = [c for c in cells if c["model"] == model and c["config"] == name]
            rows = pooled.get((model, name), [])
            group = {"model": model, "config": name, "condition": options.condition, "profile": _shown(options.profile),
                     "cells": len(members),
                     "finished": sum(c["status"] == "finished" for c in members),
                     "seeds": sorted({c["seed"] for c in members if c["status"] == "finished"})}
            if rows:
                group |= group_summary(rows, options.model_dump(mode="json"))
            groups.append(group)
    document = {
        "experiment": config.name, "description": config.description, "experiment_file": str(experiment.path),
        "dataset": config.dataset.model_dump() | {"data": str(data_dir(experiment)),
                                                  "mode": options_for(config, next(iter(config.configs))).mode},
        "matrix": {"models": config.models, "profiles": {m: _shown(config.profile_of(m)) for m in config.models},
                   "seeds": config.seeds,
                   "conversation_sets": [list(s) for s in conversation_sets(experiment)],
                   "configs": {name: {"condition": options_for(config, name).condition, "options": override.dataset,
                                      "description": override.description}
                               for name, override in config.configs.items()}},
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "machine": platform.machine(), "cores": os.cpu_count()},
        "cells": cells,
        "locomo": {"categories": list(ANSWERABLE), "groups": groups}
                  | effect_section(pooled, config.models, {name: options_for(config, name).condition
                                                           for name in config.configs}),
    }
    return write_locomo_comparison(experiment.out_dir, document)


__all__ = ["DatasetSpec", "ReaderModel", "check_dataset", "check_dataset_fields", "conversation_sets", "data_dir",
           "eval_fields", "eval_options", "missing_data", "options_for", "prepare_dataset_cell", "write_dataset_comparison"]
