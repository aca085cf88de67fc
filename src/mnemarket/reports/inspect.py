"""A run directory opened for reading (`inspect`, `memory show`, `memory search`).

`RunView` opens a run directory for reading only: the database read-only (no lock or journal
file left behind), memory through the memory engine's API, no model loaded, nothing written.
"""

from __future__ import annotations

from pathlib import Path

from mnemarket.kernel import World
from mnemarket.memory import MemoryStore
from mnemarket.providers import make_embedder
from mnemarket.reports.event_log import EventLogCheck
from mnemarket.run import RunConfig, RunSummary, memory_stores, read_run_config, summarize
from mnemarket.store import SqlMemoryPersistence, SqlWorldStore, make_engine


class RunView:
    """A run directory opened for reading: its config, world and memory stores; writes nothing.

    Args:
        run_dir: a directory made by `mnemarket run`.
    """

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        self.config: RunConfig = read_run_config(self.run_dir)
        self.engine = make_engine(self.config.options.db or self.run_dir / "world.db", read_only=True)
        self.world_store = SqlWorldStore(engine=self.engine)
        self.world = World(self.world_store)
        self._stores: dict[tuple[str, bool], MemoryStore] = {}
        self._memory_persistence: SqlMemoryPersistence | None = None

    def _memory(self) -> SqlMemoryPersistence:
        # Opened on first use: a summary of a run without memory reads never touches the tables.
        if self._memory_persistence is None:
            self._memory_persistence = SqlMemoryPersistence(self.engine)
        return self._memory_persistence

    def store(self, store_id: str, *, for_search: bool = False) -> MemoryStore:
        """One memory store; `for_search` gives it the run's embedder (listing needs none)."""
        key = (store_id, for_search)
        if key not in self._stores:
            spec = self.config.resolved.scenario.embedder  # with the run's profile: Vertex AI stays Vertex AI
            embedder = make_embedder(spec, self.config.embedder_profile_for(spec)) if for_search else None
            self._stores[key] = MemoryStore(embedder, persistence=self._memory(), store_id=store_id, index="exact")
        return self._stores[key]

    def summary(self) -> RunSummary:
        """The run's summary as `summarize` computes it (not summary.json: that is the runner's)."""
        return summarize(self.world, open_store=self.store)

    def event_log(self) -> EventLogCheck:
        """The run's event rows and events.jsonl walked against their digests (`reports.event_log`)."""
        return EventLogCheck.of(self.world_store, self.run_dir)

    def close(self) -> None:
        self.world.close()

    def __enter__(self) -> RunView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["RunView", "memory_stores", "summarize"]  # the last two from run.summary
