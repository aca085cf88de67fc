"""No import circles between the modules of src/: every import counts (inside functions and under
TYPE_CHECKING too), and a package's __init__ is a module like any other (plans/structure.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import grimp
import pytest


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    built = grimp.build_graph("mnemarket", include_external_packages=False, cache_dir=None)
    return {module: set(built.find_modules_directly_imported_by(module)) for module in built.modules}


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_cycle_finder_finds_circles_and_only_them():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert cycles({"p": {"p.x"}, "p.x": {"p"}, "q": {"p"}}) == [["p", "p.x"]]


def test_the_graph_counts_function_level_and_type_checking_imports(graph):
    # Only inside write_comparison; only under TYPE_CHECKING; a package front (__init__) importing its modules.
    assert "mnemarket.experiments.judge" in graph["mnemarket.experiments.experiment"]
    assert "mnemarket.kernel.transaction" in graph["mnemarket.kernel.invokable"]
    assert "mnemarket.kernel.world" in graph["mnemarket.kernel"]


def test_no_import_circle_among_src_modules(graph):
    assert cycles(graph) == []
