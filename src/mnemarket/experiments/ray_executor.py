"""Experiment cells on a Ray cluster (`mnemarket compare EXP --executor ray [--address ADDR]`).

Each cell's run directory travels with its task: the head packs the directory as it stands
(new, or part-run by an interrupted attempt), a worker unpacks it into a node-local temporary
folder, runs or resumes it there (`cell.run_cell`), and returns it packed; the head
unpacks it in place. The experiment directory therefore lives on the head only, no shared
storage is needed, and resuming works as with the process pool: a cell that never came back
is re-sent from where the head last saw it.

Cells on the local model go to one actor per node, which runs them one after another in one
process: the model is loaded once per node and its prompt cache stays warm (the same reason the
process pool gives them a single worker). Other cells are plain tasks, one CPU each.

Every node needs mnemarket installed (`pip install 'mnemarket[cluster,local]'`) in the same
Python version as the head.

A local Ray (no address) is reachable from this machine only: its node address is 127.0.0.1, so
its servers (GCS, raylet, object manager, workers, agents) bind loopback, the dashboard is off, and
Ray never probes a public DNS address to find an external one (see :func:`loopback_ray`).

Ctrl-C (`experiments.interrupt`): the cells in flight are cancelled (a worker's task is
interrupted, so its temporary folder goes; what does not stop within `CANCEL_SECONDS` is killed),
cells that came back finished are kept, the local Ray is stopped, and :class:`CellsCancelled`
is raised. A cancelled cell resumes from the state the head holds.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import ipaddress
import itertools
import os
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypedDict, TypeVar

from mnemarket.errors import ConfigError
from mnemarket.experiments.cell import run_cell
from mnemarket.experiments.interrupt import CellsCancelled, deferred_interrupt
from mnemarket.reports import CellOutcome


class _Cell(Protocol):
    """What this module reads of an `experiments.experiment.Cell` (that module imports this one)."""

    @property
    def id(self) -> str: ...
    @property
    def model(self) -> str: ...


C = TypeVar("C", bound=_Cell)


class ActorPlace(TypedDict):
    node: str
    pid: int
    cells: int

POLL_SECONDS = 0.25
"""How often the head looks for a Ctrl-C while it waits for cells."""
CANCEL_SECONDS = 10.0
"""How long cancelled cells get to stop before their workers are killed."""

_INSTALL_HINT = "install the cluster extra: pip install 'mnemarket[cluster]' (Ray)"
LOOPBACK = "127.0.0.1"
#: With Ray's cluster mode on (the Linux default), Ray turns a node address of 127.0.0.1 into the
#: machine's external one, found by a UDP connect to a public DNS address, and binds its servers
#: there. Off (read at import as the constant, and by Ray's own processes from the environment),
#: 127.0.0.1 stays 127.0.0.1.
_CLUSTER_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: ray.init arguments of a local Ray: loopback node address, no dashboard (and loopback if one starts).
LOCAL_RAY_OPTIONS: dict[str, object] = {"_node_ip_address": LOOPBACK, "include_dashboard": False,
                                     "dashboard_host": LOOPBACK}


@contextmanager
def loopback_ray() -> Iterator[dict[str, object]]:
    """While open, a Ray started in this process (``ray.init`` with the yielded options, or
    ``ray.cluster_utils.Cluster`` with ``node_ip_address=LOOPBACK``) keeps 127.0.0.1 as its node
    address: its servers listen on loopback only and no outside address is probed.

    Raises:
        ConfigError: Ray is not installed.
    """
    _ray()
    constants: Any = importlib.import_module("ray._private.ray_constants")
    saved_env, saved_switch = os.environ.get(_CLUSTER_SWITCH), constants.ENABLE_RAY_CLUSTER
    os.environ[_CLUSTER_SWITCH] = "0"
    constants.ENABLE_RAY_CLUSTER = False
    try:
        yield dict(LOCAL_RAY_OPTIONS)
    finally:
        constants.ENABLE_RAY_CLUSTER = saved_switch
        if saved_env is None:
            os.environ.pop(_CLUSTER_SWITCH, None)
        else:
            os.environ[_CLUSTER_SWITCH] = saved_env


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP address, IPv4-mapped IPv6 included) is a loopback address."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def pack(run_dir: Path) -> bytes:
    """A run directory as gzipped tar bytes (paths relative to the directory)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(run_dir.rglob("*")):
            archive.add(path, arcname=str(path.relative_to(run_dir)), recursive=False)
    return buffer.getvalue()


def unpack(data: bytes, run_dir: Path) -> None:
    """Replace ``run_dir`` with the packed directory; a failure leaves the old one untouched."""
    staging = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.", dir=run_dir.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            archive.extractall(staging, filter="data")  # "data": no absolute paths, links or devices
        old = run_dir.with_name(f".{run_dir.name}.old")
        if run_dir.exists():
            run_dir.rename(old)
        staging.rename(run_dir)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def run_packed(cell_id: str, data: bytes) -> tuple[CellOutcome, bytes]:
    """Run (or resume) a packed cell in a temporary folder; return its outcome and the packed result."""
    with tempfile.TemporaryDirectory(prefix="mnemarket-cell-") as tmp:
        run_dir = Path(tmp) / cell_id
        run_dir.mkdir()
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            archive.extractall(run_dir, filter="data")
        outcome = run_cell(str(run_dir))
        return outcome, pack(run_dir)


class LocalModelCells:
    """Runs local-model cells one at a time in one process of its node (Ray actor body)."""

    def __init__(self) -> None:
        self.cells = 0

    def run(self, cell_id: str, data: bytes) -> tuple[CellOutcome, bytes]:
        self.cells += 1
        return run_packed(cell_id, data)

    def where(self) -> ActorPlace:
        """The node and process this actor runs in, and how many cells it has run there."""
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid(), "cells": self.cells}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--executor ray needs Ray; {_INSTALL_HINT}") from None
    return ray


def run_cells_on_ray(cells: list[tuple[C, Path]], *, address: str | None, is_local: Callable[[str], bool],
                     progress: Callable[[C, CellOutcome], None] | None = None) -> dict[C, CellOutcome]:
    """Run ``(cell, run_dir)`` pairs as Ray tasks; returns each cell's outcome (as `run_cell` does).

    Connects to ``address`` (an existing cluster: ``auto``, ``ray://host:10001`` or ``host:6379``)
    or, without one, starts a local Ray for the duration of the call. That holds even when
    ``RAY_ADDRESS`` is set or another Ray runs on the machine: Ray's own default would attach to
    those (and wait minutes on a stale address); ``auto`` is how to ask for them.

    Raises:
        ConfigError: Ray is not installed, or the cluster cannot be reached.
        CellsCancelled: Ctrl-C (in the main thread); the cells in flight were cancelled and this
            call's Ray connection (and the local Ray it started) closed.
    """
    ray = _ray()
    with deferred_interrupt() as stop:
        if ray.is_initialized():
            return _run_cells(ray, cells, is_local, progress, stop)
        if address:
            _init(ray, address, include_dashboard=False)
        else:
            with loopback_ray() as options:
                _init(ray, "local", **options)
                if not is_loopback(ray.util.get_node_ip_address()):  # never serve a local Ray beyond loopback
                    ray.shutdown()
                    raise ConfigError(f"a local Ray came up on {ray.util.get_node_ip_address()}, not {LOOPBACK}; "
                                      "refusing to run cells on it (this Ray version ignores the loopback settings)")
        try:
            return _run_cells(ray, cells, is_local, progress, stop)
        finally:
            ray.shutdown()


def _init(ray: Any, address: str, **options: Any) -> None:
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {address!r}" if address != "local" else "a local Ray"
        raise ConfigError(f"could not start or reach {where}: {exc}") from exc


def _run_cells(ray: Any, cells: list[tuple[C, Path]], is_local: Callable[[str], bool],
               progress: Callable[[C, CellOutcome], None] | None, stop: threading.Event) -> dict[C, CellOutcome]:
    task = ray.remote(num_cpus=1, max_retries=1)(run_packed)
    local_cells = [(cell, path) for cell, path in cells if is_local(cell.model)]
    actors = _node_actors(ray) if local_cells and not stop.is_set() else []
    futures: dict[Any, tuple[C, Path]] = {}
    for (cell, path), actor in zip(local_cells, itertools.cycle(actors)):
        futures[actor.run.remote(cell.id, pack(path))] = (cell, path)
    for cell, path in cells:
        if not is_local(cell.model) and not stop.is_set():
            futures[task.remote(cell.id, pack(path))] = (cell, path)
    outcomes: dict[C, CellOutcome] = {}

    def collect(ref: Any) -> None:
        cell, path = futures[ref]
        outcome: CellOutcome
        try:
            outcome, data = ray.get(ref)
            unpack(data, path)
            outcome = {**outcome, "run_dir": str(path)}
        except Exception as exc:  # noqa: BLE001 - one cell's failure must not stop the others
            outcome = {"run_dir": str(path), "state": "error", "message": f"{type(exc).__name__}: {exc}"}
        outcomes[cell] = outcome
        if progress:
            progress(cell, outcome)

    waiting = list(futures)
    while waiting and not stop.is_set():
        done, waiting = ray.wait(waiting, num_returns=1, timeout=POLL_SECONDS)
        for ref in done:
            collect(ref)
    if stop.is_set():
        finished = _cancel(ray, waiting, actors)
        for ref in finished:
            collect(ref)
        raise CellsCancelled([cell.id for cell, _ in cells if cell not in outcomes])
    return outcomes


def _cancel(ray: Any, refs: list[Any], actors: list[Any]) -> list[Any]:
    """Cancel the cells of ``refs``; returns those that came back finished all the same."""
    for actor in actors:  # a local-model cell may be in a decode a KeyboardInterrupt waits for
        ray.kill(actor, no_restart=True)
    for ref in refs:  # a KeyboardInterrupt in the task: run_packed's temporary folder is removed
        with contextlib.suppress(Exception):
            ray.cancel(ref)
    ended, left = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_SECONDS) if refs else ([], [])
    for ref in left:
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=True)
    finished = []
    for ref in ended:
        try:
            ray.get(ref, timeout=0)
        except Exception:  # noqa: BLE001, S112 - cancelled, killed or failed: the head's copy stands
            continue
        finished.append(ref)
    return finished


def _node_actors(ray: Any) -> list[Any]:
    """One local-model actor pinned to each alive node."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor = ray.remote(num_cpus=1)(LocalModelCells)
    nodes = [node["NodeID"] for node in ray.nodes() if node.get("Alive")]
    return [actor.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
            for node in nodes]


__all__ = ["run_cells_on_ray"]
