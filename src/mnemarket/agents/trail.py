"""An agent's own events as its turn logic needs them, kept incrementally from the event log.

Each turn reads only the events committed since the last one (from the world's recent events
when they reach back far enough, else an indexed query by principal and id), so the cost of a turn
does not grow with the run. A fresh process reads the agent's whole
log once, which rebuilds exactly the state an uninterrupted run holds: a resumed run sees what
the killed one would have.

Only the events a reader uses are held: the newest few of any kind (the history section), the
newest turns the loop breaker looks at, the newest outcomes a lesson step shows, and this session's
answers judged wrong (an answer step shows them; a few tries per bounty). Each reader
looks back a fixed number of the agent's events (4 x what it shows, so lesson steps and
migrations in between do not push turns out of sight); why: plans/long-runs.md "Many agents".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from mnemarket.agents.loop_breaker import WINDOW as LOOP_TURNS
from mnemarket.genesis import TurnRecord, names_turn, rejected_answer, turn_record
from mnemarket.kernel import Event, World

RECENT = 8
"""Newest events of any kind: the history section shows 8, a failure's lesson step checks 4."""
OUTCOMES = 6
"""Newest turn outcomes a lesson step shows."""
LOOK_BACK = 4
"""Readers see their newest turns among the agent's last LOOK_BACK x (what they show) events."""

T = TypeVar("T")


class _Newest(Generic[T]):
    """The newest `keep` items, each with its position in the principal's log, so a reader can
    ask for those among the last n events."""

    def __init__(self, keep: int):
        self._items: deque[tuple[int, T]] = deque(maxlen=keep)

    def add(self, position: int, item: T) -> None:
        self._items.append((position, item))

    def within(self, count: int, look_back: int) -> list[T]:
        return [item for position, item in self._items if position > count - look_back]


class Trail:
    """The newest events, last turn and running counts of one principal's events.

    Args:
        world: the world whose event log is read.
        principal: whose events.
        describe: the one-line description of an event whose length `described_chars` sums.
    """

    def __init__(self, world: World, principal: str, describe: Callable[[Event], str]):
        self.world = world
        self.principal = principal
        self._describe = describe
        self.recent: deque[Event] = deque(maxlen=RECENT)
        self._turns: _Newest[Event] = _Newest(LOOP_TURNS)
        self._outcomes: _Newest[tuple[Event, TurnRecord]] = _Newest(OUTCOMES)
        self.last_turn: Event | None = None
        """The newest event that carries a turn record (a turn's action, not a session-end migration)."""
        self.last_turn_record: TurnRecord | None = None
        self.last_id = 0
        self._seen = -1  # the world's event count at the last query, while nothing was held back
        self.count = 0
        self.described_chars = 0
        """Sum of the description lengths of every event of the principal (for baseline tokens)."""
        self._rejected: tuple[int, dict[str, list[str]]] = (0, {})
        """The newest session with an answer claim judged wrong, and its wrong answers by bounty."""

    def refresh(self) -> None:
        """Take in the events committed since the last refresh."""
        world = self.world
        if world.event_count == self._seen:  # nothing happened since: no query
            return
        seen = world.event_count if world.flushed else -1
        new = self._from_recent()
        for event in world.events(principal=self.principal, after=self.last_id) if new is None else new:
            self.count += 1
            self.recent.append(event)
            if names_turn(event):
                self._turns.add(self.count, event)
            record = turn_record(event)
            if record is not None:
                self.last_turn, self.last_turn_record = event, record
                self._outcomes.add(self.count, (event, record))
                self._note_rejected(event, record.session)
            self.last_id = event.id
            self.described_chars += len(self._describe(event))
        self._seen = seen

    def _note_rejected(self, event: Event, session: int) -> None:
        if (rejected := rejected_answer(event)) is None:
            return
        if session != self._rejected[0]:
            self._rejected = (session, {})
        answers = self._rejected[1].setdefault(rejected[0], [])
        if rejected[1] not in answers:
            answers.append(rejected[1])

    def _from_recent(self) -> list[Event] | None:
        """The principal's events after `last_id` from the world's recent events, when those cover
        them all and are all committed: the same objects, so a small world's window is not held twice
        (the world keeps them as the store returns them). None when the store must be asked."""
        recent = self.world.recent_events
        if not self.world.flushed or not recent or recent[0].id > self.last_id + 1:
            return None
        return [e for e in recent if e.id > self.last_id and e.principal == self.principal]

    def events(self) -> list[Event]:
        """The newest events (up to `RECENT`), oldest first."""
        self.refresh()
        return list(self.recent)

    def loop_turns(self) -> list[Event]:
        """The newest turn events (up to the loop breaker's window) among the last 4 x that many
        events, oldest first: what the loop breaker judges."""
        self.refresh()
        return self._turns.within(self.count, LOOK_BACK * LOOP_TURNS)

    def outcomes(self, session: int) -> list[Event]:
        """The newest turn events of `session` (up to `OUTCOMES`) among the last 4 x that many
        events, oldest first: what a lesson step shows."""
        self.refresh()
        return [event for event, record in self._outcomes.within(self.count, LOOK_BACK * OUTCOMES)
                if record.session == session]

    def rejected_answers(self, session: int, bounty_id: str) -> list[str]:
        """The answers to ``bounty_id`` judged wrong in ``session``, each once, in the order first given
        (however many events ago: a session has few tries per bounty)."""
        self.refresh()
        session_seen, answers = self._rejected
        return list(answers.get(bounty_id, ())) if session_seen == session else []

    def described_tokens_chars(self) -> int:
        """Length of every event's description joined by newlines (what a whole-history prompt holds)."""
        return self.described_chars + max(0, self.count - 1)
