"""Replay: re-execute a recorded run from its recordings and compare the outcome."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mnemarket.errors import ConfigError, ProviderError
from mnemarket.kernel import World
from mnemarket.sim.output_dirs import prepare_output_dir
from mnemarket.store import SqlWorldStore


@dataclass
class ReplayResult:
    matched: bool
    out_dir: Path
    events: int
    detail: str = ""


def _fingerprint(world: World) -> dict:
    return {"balances": dict(world.balances), "events": world.event_count, "tick": world.tick,
            "artifacts": {k: v.model_dump() for k, v in world.artifacts.items()},
            "actions": [(e.principal, e.action, e.result.get("success")) for e in world.events()]}


def replay_run(run_dir: str | Path, out: str | Path | None = None) -> ReplayResult:
    """Run the recorded scenario again in `out`, serving every model call from the recordings."""
    from mnemarket.sim.runner import Runner

    run_dir = Path(run_dir)
    original = Runner.open(run_dir)
    if not original.config.options.record or not (run_dir / "recordings").is_dir():
        raise ConfigError(f"{run_dir} was not recorded; run it with --record to replay it")
    out = prepare_output_dir(Path(out) if out else run_dir.with_name(run_dir.name + "-replay"), "replay",
                             protect=run_dir)
    options = original.config.options.model_copy(update={"record": False, "replay_from": str(run_dir.resolve()),
                                                          "db": None})
    (out / "config.json").write_text(original.config.model_copy(update={"options": options}).model_dump_json(indent=2))
    replayed = Runner.open(out)
    try:
        replayed.run()
    except ProviderError as exc:  # a divergence names the call
        return ReplayResult(False, out, 0, str(exc))
    finally:
        replayed.close()
    before = World(SqlWorldStore(original.db_url))
    after = World(SqlWorldStore(out / "world.db"))
    try:
        a, b = _fingerprint(before), _fingerprint(after)
        if a == b:
            return ReplayResult(True, out, after.event_count)
        differing = [key for key in a if a[key] != b[key]]
        return ReplayResult(False, out, after.event_count, f"replayed run differs in {', '.join(differing)}")
    finally:
        before.close()
        after.close()


__all__ = ["ReplayResult", "replay_run"]
