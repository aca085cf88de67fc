"""A models.yaml (``--models-file``): model strings mapped to their profiles, at the top level or
under ``models:``; the same mapping an experiment's or a scenario's ``models:`` holds. Embedder
strings' profiles go under ``embedders:`` beside it, as in a scenario or an experiment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mnemarket.errors import ConfigError
from mnemarket.providers import ModelProfile, check_embedder_profiles, check_profiles, parse_profiles
from mnemarket.yaml_config import read_yaml


def load_models_file(path: str | Path) -> dict[str, ModelProfile]:
    """The model profiles in ``path``.

    Raises:
        ConfigError: the file is missing or not YAML, or a profile is invalid or does not fit its model.
    """
    data = read_yaml(Path(path))
    models = data.get("models", {k: v for k, v in data.items() if k != "embedders"})
    return _checked(check_profiles, parse_profiles(models, str(path)), path)


def load_embedders_file(path: str | Path) -> dict[str, ModelProfile]:
    """The embedder profiles in ``path`` (its ``embedders:``; none without one).

    Raises:
        ConfigError: the file is missing or not YAML, or a profile is invalid or does not fit its embedder.
    """
    data = read_yaml(Path(path))
    return _checked(check_embedder_profiles, parse_profiles(data.get("embedders") or {}, f"{path}: embedders"), path)


Profiles = dict[str, ModelProfile]


def _checked(check: Callable[[Profiles], Profiles], profiles: Profiles, path: str | Path) -> Profiles:
    try:
        return check(profiles)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None


__all__ = ["load_embedders_file", "load_models_file"]
