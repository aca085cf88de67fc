"""Replay: re-execute a recorded run from its recordings and compare the outcome."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mnemarket.errors import ConfigError, ProviderError
from mnemarket.kernel import World
from mnemarket.run.output_dirs import prepare_output_dir
from mnemarket.store import SqlWorldStore

if TYPE_CHECKING:
    from mnemarket.run.runner import ReportWriter


@dataclass
class ReplayResult:
    matched: bool
    out_dir: Path
    events: int
    detail: str = ""
    note: str = ""
    """What the replay could not check (events of the recorded run written before digests existed)."""


def differences(before: World, after: World) -> list[str]:
    """What differs between two worlds, one line per part (empty when they match): balances, tick,
    event count, artifacts (the first that differs) and actions (the first event whose principal,
    action or success differs). Artifacts and events are compared one at a time, a page of events
    read at a time: a long run's are never held whole."""
    found = []
    balances = sorted(k for k in before.balances.keys() | after.balances.keys()
                      if before.balances.get(k) != after.balances.get(k))
    if balances:
        found.append(f"balances of {', '.join(balances[:5])}")
    if before.tick != after.tick:
        found.append(f"tick ({before.tick} then {after.tick})")
    if before.event_count != after.event_count:
        found.append(f"event count ({before.event_count} then {after.event_count})")
    only = sorted(set(before.artifacts).symmetric_difference(after.artifacts))
    changed = only[0] if only else next((k for k in sorted(before.artifacts) if before.artifacts.peek(k).model_dump()
                                         != after.artifacts.peek(k).model_dump()), None)
    if changed is not None:
        found.append(f"artifacts (first: {changed!r}{' in one run only' if only else ''})")
    for old, new in zip(before.iter_events(), after.iter_events()):
        if (old.principal, old.action, old.result.get("success")) != (new.principal, new.action,
                                                                      new.result.get("success")):
            found.append(f"actions (first at event {old.id}: {old.principal} {old.action_type} then "
                         f"{new.principal} {new.action_type})")
            break
    return found


def replay_run(run_dir: str | Path, out: str | Path | None = None, *,
               report: ReportWriter | None = None) -> ReplayResult:
    """Run the recorded scenario again in `out`, serving every model call from the recordings
    (`report` writes the replayed run's report.html, as `Runner.report`)."""
    from mnemarket.run.runner import Runner

    run_dir = Path(run_dir)
    original = Runner.open(run_dir)
    if not original.config.options.record or not (run_dir / "recordings").is_dir():
        raise ConfigError(f"{run_dir} was not recorded; run it with --record to replay it")
    recorded = SqlWorldStore(original.db_url)
    try:  # the run replayed against must be the run that was recorded: no event row edited since
        note = recorded.check_events().note() or ""
    finally:
        recorded.close()
    out = prepare_output_dir(Path(out) if out else run_dir.with_name(run_dir.name + "-replay"), "replay",
                             protect=run_dir)
    options = original.config.options.model_copy(update={"record": False, "replay_from": str(run_dir.resolve()),
                                                          "db": None})
    (out / "config.json").write_text(original.config.model_copy(update={"options": options}).model_dump_json(indent=2))
    replayed = Runner.open(out, report=report)
    try:
        replayed.run()
    except ProviderError as exc:  # a divergence names the call
        return ReplayResult(False, out, 0, str(exc), note)
    finally:
        replayed.close()
    before = World(SqlWorldStore(original.db_url))
    after = World(SqlWorldStore(out / "world.db"))
    try:
        differing = differences(before, after)
        if not differing:
            return ReplayResult(True, out, after.event_count, note=note)
        return ReplayResult(False, out, after.event_count, f"replayed run differs in {'; '.join(differing)}", note)
    finally:
        before.close()
        after.close()


__all__ = ["ReplayResult", "differences", "replay_run"]
