"""`mnemarket validate`: check configuration files without running anything."""

from __future__ import annotations

from pathlib import Path

import yaml

from mnemarket.errors import ConfigError


def _kind(path: Path) -> str:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError:
        return "agent"  # let the agent loader report the YAML error with its line
    if isinstance(data, dict):
        if "scenario" in data and "models" in data:
            return "experiment"
        if "agents" in data and "name" in data:
            return "scenario"
        if "costs" in data or "bounties" in data and "id" not in data:
            return "genesis"
        if "text" in data and "name" in data and "id" not in data or "components" in data and "id" not in data:
            return "component"
    return "agent"


def validate_file(path: Path) -> None:
    """Raise ConfigError for the first problem of one file."""
    from mnemarket.agents import check_components, load_agent_config, load_components
    from mnemarket.genesis import load_genesis_config
    from mnemarket.sim.scenario import load_scenario

    kind = _kind(path)
    if kind == "experiment":
        from mnemarket.sim.experiment import load_experiment

        load_experiment(path)
    elif kind == "scenario":
        resolved = load_scenario(path)
        components = load_components(resolved.components_path)
        for agent in resolved.agents:
            check_components(agent, components, str(path))
    elif kind == "genesis":
        load_genesis_config(path)
    elif kind == "component":
        load_components(path.parent) if path.parent.is_dir() else None
    else:
        load_agent_config(path)


def validate_path(path: Path) -> tuple[list[str], int]:
    """Problems (one line each) and how many files were checked."""
    files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    problems = []
    for file in files:
        try:
            validate_file(file)
        except ConfigError as exc:
            problems.append(str(exc))
    return problems, len(files)
