"""The runner layer's public API resolves lazily: importing mnemarket.sim loads none of its modules."""

from __future__ import annotations

import subprocess
import sys

import mnemarket.sim as sim


def test_every_public_name_resolves_and_is_listed_once():
    assert sorted(sim.__all__) == sorted(sim._EXPORTS)
    for name in sim.__all__:
        assert getattr(sim, name).__name__ == name


def test_importing_the_package_loads_no_sim_module():
    code = "import sys, mnemarket.sim; print(sorted(m for m in sys.modules if m.startswith('mnemarket.sim.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
