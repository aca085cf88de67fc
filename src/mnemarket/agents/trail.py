"""An agent's own events as its turn logic needs them, kept incrementally from the event log.

Each turn reads only the events committed since the last one (from the world's recent events
when they reach back far enough, else an indexed query by principal and id), so the cost of a turn
does not grow with the run. A fresh process reads the agent's whole
log once, which rebuilds exactly the state an uninterrupted run holds: a resumed run sees what
the killed one would have.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from mnemarket.genesis import TurnRecord, turn_record
from mnemarket.kernel import Event, World

WINDOW = 48
"""Newest events kept: the loop breaker reads 4 x its 12-turn window, the history section 8."""


class Trail:
    """Rolling window, last turn and running counts of one principal's events.

    Args:
        world: the world whose event log is read.
        principal: whose events.
        describe: the one-line description of an event whose length `described_chars` sums.
    """

    def __init__(self, world: World, principal: str, describe: Callable[[Event], str]):
        self.world = world
        self.principal = principal
        self._describe = describe
        self.recent: deque[Event] = deque(maxlen=WINDOW)
        self.last_turn: Event | None = None
        """The newest event that carries a turn record (a turn's action, not a session-end migration)."""
        self.last_turn_record: TurnRecord | None = None
        self.last_id = 0
        self._seen = -1  # the world's event count at the last query, while nothing was held back
        self.count = 0
        self.described_chars = 0
        """Sum of the description lengths of every event of the principal (for baseline tokens)."""

    def refresh(self) -> None:
        """Take in the events committed since the last refresh."""
        world = self.world
        if world.event_count == self._seen:  # nothing happened since: no query
            return
        seen = world.event_count if world.flushed else -1
        new = self._from_recent()
        for event in world.events(principal=self.principal, after=self.last_id) if new is None else new:
            self.recent.append(event)
            record = turn_record(event)
            if record is not None:
                self.last_turn, self.last_turn_record = event, record
            self.last_id = event.id
            self.count += 1
            self.described_chars += len(self._describe(event))
        self._seen = seen

    def _from_recent(self) -> list[Event] | None:
        """The principal's events after `last_id` from the world's recent events, when those cover
        them all and are all committed: the same objects, so a small world's window is not held twice
        (the world keeps them as the store returns them). None when the store must be asked."""
        recent = self.world.recent_events
        if not self.world.flushed or not recent or recent[0].id > self.last_id + 1:
            return None
        return [e for e in recent if e.id > self.last_id and e.principal == self.principal]

    def events(self) -> list[Event]:
        """The newest events (up to `WINDOW`), oldest first."""
        self.refresh()
        return list(self.recent)

    def described_tokens_chars(self) -> int:
        """Length of every event's description joined by newlines (what a whole-history prompt holds)."""
        return self.described_chars + max(0, self.count - 1)
