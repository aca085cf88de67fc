"""Package fronts that load a name's module on first use (PEP 562).

A front lists what the layers above import from its package (plans/structure.md, "Package
fronts"). Where the modules behind it are heavy (the runner, the reports, the experiments, an SDK
client), the front maps each name to its module instead of importing it, so importing one module of
the package, or the front, loads nothing else; the front's ``TYPE_CHECKING`` block imports the
same names for mypy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(package: str, modules: Mapping[str, Sequence[str]], *, front: str | None = None
                 ) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``package.<module>`` when one of its
    names (``modules``: module -> names) is first asked for. ``front`` is the module the
    ``__getattr__`` belongs to, when it is not ``package`` (`mnemarket.sim` re-exports the fronts
    of its sibling packages: ``lazy_exports("mnemarket", {"run": [...]}, front="mnemarket.sim")``)."""
    module_of = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {front or package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__


__all__ = ["lazy_exports"]
