"""Package fronts (plans/structure.md, "Package fronts"): a module of one top-level subpackage of
mnemarket imports another subpackage's names only through that package's ``__init__``, and each
front's ``__all__`` names resolve. Lazy fronts (run, experiments, reports) load no module of
their package until a name is asked for."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import mnemarket

SRC = Path(mnemarket.__file__).parent
PACKAGES = sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").is_file())

# (importing module, imported module): why the front is not used.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def bypasses(root: Path = SRC) -> set[tuple[str, str, int]]:
    """(importing module, imported module, line) for every import of another subpackage's module
    that is not its front: ``from mnemarket.memory.store import X`` or ``import mnemarket.memory.store``
    outside mnemarket.memory. Imports inside functions and under TYPE_CHECKING count too."""
    packages = {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    found = set()
    for path in sorted(root.rglob("*.py")):
        importer = _module_name(path, root)
        own = importer.split(".")[1] if importer.count(".") >= 1 and importer.split(".")[1] in packages else None
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                parts = target.split(".")
                if parts[0] == "mnemarket" and len(parts) > 2 and parts[1] in packages and parts[1] != own:
                    found.add((importer, target, node.lineno))
    return found


def test_the_checker_finds_a_bypass_and_accepts_a_front(tmp_path):
    package = tmp_path / "mnemarket"
    for name in ("memory", "agents"):
        (package / name).mkdir(parents=True)
        (package / name / "__init__.py").write_text("")
    (package / "memory" / "store.py").write_text("")
    (package / "agents" / "agent.py").write_text(
        "from mnemarket.memory import MemoryStore\n"
        "def f():\n    from mnemarket.memory.store import MemoryStore\n"
        "import mnemarket.memory.store\n")
    (package / "memory" / "index.py").write_text("from mnemarket.memory.store import MemoryStore\n")  # its own package
    assert bypasses(package) == {("mnemarket.agents.agent", "mnemarket.memory.store", 3),
                                 ("mnemarket.agents.agent", "mnemarket.memory.store", 4)}


def test_other_packages_import_only_through_the_fronts():
    found = {(importer, target, line) for importer, target, line in bypasses() if (importer, target) not in EXCEPTIONS}
    assert not found, "import these names from the package front (add them to its __all__):\n" + "\n".join(
        f"  {importer} line {line}: {target}" for importer, target, line in sorted(found))


def test_the_listed_exceptions_are_still_needed():
    assert {(importer, target) for importer, target, _ in bypasses()} >= set(EXCEPTIONS)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_a_front_exports_resolves(package):
    front = importlib.import_module(f"mnemarket.{package}")
    names = getattr(front, "__all__", [])
    assert len(names) == len(set(names)), f"mnemarket.{package}.__all__ lists a name twice"
    for name in names:
        assert getattr(front, name) is not None
    lazy = getattr(front, "_MODULES", None) or getattr(front, "_LAZY", None) or {}
    assert {n for listed in lazy.values() for n in listed} <= set(names)
    # What mypy reads (the TYPE_CHECKING imports) is what the lazy front loads, name for name
    # (mnemarket.sim, the old names, re-exports other fronts: tests/unit/sim/test_public_api.py).
    assert not lazy or _type_checking_imports(SRC / package / "__init__.py") == {
        f"mnemarket.{package}.{module}": set(listed) for module, listed in lazy.items()}


def _type_checking_imports(path: Path) -> dict[str, set[str]]:
    imported: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                imported.setdefault(statement.module, set()).update(alias.name for alias in statement.names)
    return imported


@pytest.mark.parametrize("package", ["run", "experiments", "reports"])
def test_a_lazy_front_loads_none_of_its_modules(package):
    code = (f"import sys, mnemarket.{package}; "
            f"print(sorted(m for m in sys.modules if m.startswith('mnemarket.{package}.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
