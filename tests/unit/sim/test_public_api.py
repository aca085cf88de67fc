"""The runner layer's public API resolves lazily: importing mnemarket.sim loads none of its modules,
and what mypy reads of it is what it loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import mnemarket.sim as sim
from tests.unit.test_package_fronts import _type_checking_imports


def test_every_public_name_resolves_and_is_listed_once():
    listed = [name for names in sim._FRONTS.values() for name in names]
    assert sorted(sim.__all__) == sorted(listed) and len(set(listed)) == len(listed)
    for name in sim.__all__:
        assert getattr(sim, name).__name__ == name


def test_mypy_reads_the_names_it_loads_and_an_unknown_name_names_the_package():
    # The __getattr__ is hidden from mypy, so these imports are all it sees: a name left out of
    # them is a mypy error, not an untyped Any.
    assert _type_checking_imports(Path(sim.__file__)) == {
        f"mnemarket.{front}": set(names) for front, names in sim._FRONTS.items()}
    with pytest.raises(AttributeError, match="module 'mnemarket.sim' has no attribute 'Runer'"):
        sim.Runer  # noqa: B018


def test_importing_the_package_loads_no_sim_module():
    code = "import sys, mnemarket.sim; print(sorted(m for m in sys.modules if m.startswith('mnemarket.sim.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
