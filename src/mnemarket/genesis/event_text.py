"""One event describer: what an event did, as text, for each of its readers.

Three readers need an event as text, and each reads a different part of it, so the describer has
one form per reader rather than one line for all (merging them would change the agents' prompts,
the relevance metric's values and the report; each form is kept exactly as it was):

- ``history``: the agent's own past in its prompt: the action with its arguments, and the outcome
  with the service's FIX hint, so the model can act on a failure.
- ``outcome``: the relevance metric's situation text: which artifact and method was used and what
  came back, without arguments (they would lend the situation words the memories never held).
- ``action``: the report's timeline: what the action tried, content clipped, no outcome (the
  timeline shows the outcome in a column of its own).

Events are kernel `Event` objects (the metrics read events.jsonl into them). It lives beside the run record,
below agents, scenarios and sim, so each of them can import it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import ValidationError

from mnemarket.genesis.run_record import lesson_record, turn_record
from mnemarket.kernel import Event

DescribeForm = Literal["history", "outcome", "action"]

HISTORY_CHARS = 400
"""Longest history line (an agent's prompt shows many)."""
SNIPPET_CHARS = 160
"""Most characters of any content an ``action`` line quotes."""


def clip(text: Any, limit: int = SNIPPET_CHARS) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def action_signature(event: Event) -> tuple[str, str] | None:
    """What an action did, for matching repeats: (artifact, method) or (action type, artifact);
    None for an unparseable reply."""
    action, kind = event.action, event.action_type
    if kind == "invalid":
        return None
    if kind == "invoke_artifact":
        return (str(action.get("artifact_id") or ""), str(action.get("method") or ""))
    return (str(kind), str(action.get("artifact_id") or action.get("method") or ""))


def describe_event(event: Event, form: DescribeForm = "history") -> str:
    """One line saying what ``event`` did, in the form its reader needs (see the module docstring)."""
    if form == "history":
        return _history(event)
    if form == "outcome":
        return _outcome(event)
    return _action(event)


def _history(event: Event) -> str:
    action, result, kind = event.action, event.result, event.action_type
    if kind == "invalid":
        what = "an unparseable reply"
    else:
        parts = [str(kind)] + [f"{k}={json.dumps(v)[:60]}" for k, v in action.items()
                               if k not in ("action_type", "reasoning") and v not in (None, "", {}, [])]
        what = " ".join(parts)
    prefix = _history_prefix(event)
    if result.get("success"):
        return f"{prefix}{what} -> OK: {result.get('message', '')}"[:HISTORY_CHARS]
    return f"{prefix}{what} -> FAILED: {result.get('message', '')} FIX: {result.get('hint', '')}"[:HISTORY_CHARS]


def _history_prefix(event: Event) -> str:
    """Which turn (or lesson step) of which session: history spans sessions. A foreign event whose
    meta does not make a run record (a tool's own) gets none."""
    try:
        if (record := turn_record(event)) is not None:
            return f"[session {record.session} turn {record.turn}] "
        if (lesson := lesson_record(event)) is not None:
            return f"[session {lesson.session} lesson step] "
    except ValidationError:
        pass
    return ""


def _outcome(event: Event) -> str:
    sig = action_signature(event)
    result = event.result
    what = "an unparseable reply" if sig is None else (
        f"{sig[0]}.{sig[1]}" if event.action_type == "invoke_artifact" else f"{sig[0]} {sig[1]}")
    status = "OK" if event.success else "FAILED"
    return f"{what} -> {status}: {result.get('message') or ''} {result.get('hint') or ''}".strip()


def _action(event: Event) -> str:
    action, kind = event.action, event.action_type
    if kind == "invoke_artifact":
        args = action.get("args")
        shown = json.dumps(args, ensure_ascii=False) if args else ""
        return f"{action.get('artifact_id')}.{action.get('method')}({clip(shown)})"
    if kind == "transfer":
        memo = f" — {action['memo']}" if action.get("memo") else ""
        return clip(f"transfer {action.get('amount')} scrip to {action.get('to')}{memo}")
    if kind == "write_artifact":
        return f"write {action.get('artifact_id')}: {clip(action.get('content', ''))}"
    if kind == "edit_artifact":
        return (f"edit {action.get('artifact_id')}: {clip(action.get('old_text', ''), 60)!r} → "
                f"{clip(action.get('new_text', ''), 60)!r}")
    if kind in ("read_artifact", "delete_artifact"):
        return f"{kind.split('_')[0]} {action.get('artifact_id')}"
    if kind == "query_kernel":
        return "query " + " ".join(f"{k}={v}" for k, v in action.items()
                                   if k not in ("action_type", "reasoning") and v is not None)
    if kind == "invalid":
        return "unparseable reply: " + clip(action.get("raw", json.dumps(action, ensure_ascii=False)))
    return str(kind) if kind == "noop" else clip(f"{kind} {json.dumps(action, ensure_ascii=False)}")


__all__ = ["DescribeForm", "action_signature", "clip", "describe_event"]
