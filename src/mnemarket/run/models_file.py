"""A models.yaml (``--models-file``): model strings mapped to their profiles, at the top level or
under ``models:``; the same mapping an experiment's or a scenario's ``models:`` holds."""

from __future__ import annotations

from pathlib import Path

from mnemarket.errors import ConfigError
from mnemarket.providers import ModelProfile, check_profiles, parse_profiles
from mnemarket.yaml_config import read_yaml


def load_models_file(path: str | Path) -> dict[str, ModelProfile]:
    """The profiles in ``path``.

    Raises:
        ConfigError: the file is missing or not YAML, or a profile is invalid or does not fit its model.
    """
    data = read_yaml(Path(path))
    profiles = parse_profiles(data.get("models", data), str(path))
    try:
        return check_profiles(profiles)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None


__all__ = ["load_models_file"]
