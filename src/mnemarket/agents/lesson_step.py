"""The lesson step: a metacognitive call that asks the model what it learned from the outcomes it
just saw, with a small schema (up to a few short lessons, each `LESSON:` or `STRATEGY:`).

A small model never decides on its own to rewrite its working memory with a lesson line; asked
directly, with a schema that can only hold lessons, it does. The lessons go into the working-memory
artifact, from where session end migrates them (charged and de-duplicated) like any other entry.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from mnemarket.agents.working_memory import parse_working_memory
from mnemarket.kernel import ACTION_TYPES
from mnemarket.memory import normalise_text

LessonKind = Literal["LESSON", "STRATEGY"]


class Lesson(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: LessonKind
    about: str = Field("", max_length=80, description="the action it is about, one of those shown")
    text: str = Field(min_length=3, max_length=140)


class LessonReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lessons: list[Lesson] = Field(min_length=1, max_length=2)


@lru_cache(maxsize=2)  # subjects differ by agent and session: hardly a hit, and ~150 KB a class
def lesson_schema(max_lessons: int, lesson_chars: int, subjects: tuple[str, ...] = ()) -> type[LessonReply]:
    """`LessonReply` with the configured count and length (the prefix counts toward the length).
    With ``subjects`` (the actions of the outcomes shown), each lesson names one of them: a small
    model asked for a free sentence writes "LESSON: 1"; made to pick what it is about first, it
    writes a lesson that names the artifact or method (what the specificity metric rewards)."""
    text_chars = max(8, lesson_chars - len("STRATEGY: "))
    fields: dict[str, Any] = {"text": (str, Field(min_length=3, max_length=text_chars))}
    if subjects:
        fields = {"about": (Literal[subjects], ...), **fields}
    lesson = create_model(f"Lesson{text_chars}x{len(subjects)}", __base__=Lesson, **fields)
    return create_model(f"LessonReply{max_lessons}x{text_chars}x{len(subjects)}", __base__=LessonReply,
                        lessons=(list[lesson], Field(min_length=1, max_length=max_lessons)))


def lesson_lines(reply: LessonReply) -> list[str]:
    """The reply's lessons as working-memory lines, e.g. ``LESSON: escrow needs authorized_writer``."""
    lines: list[str] = []
    for lesson in reply.lessons:
        text = " ".join(lesson.text.split())
        for prefix in ("LESSON:", "STRATEGY:"):  # a model may repeat the prefix inside the text
            if text.upper().startswith(prefix):
                text = text[len(prefix):].strip()
        line = f"{lesson.kind}: {lesson.about}: {text}" if lesson.about else f"{lesson.kind}: {text}"
        if text and line not in lines:
            lines.append(line)
    return lines


_KIND_AND_ABOUT = re.compile(r"^(?:LESSON|STRATEGY|INSIGHT):\s*(?:(?:[\w-]+\.[\w-]+|(?:"
                             + "|".join(ACTION_TYPES) + r")(?: [^\s:]+)?):\s+)?", re.IGNORECASE)


def lesson_gist(line: str) -> str:
    """What a lesson line says, to spot a repeat: without its kind and the action it names
    (``STRATEGY: genesis_bounty.list: ...``), normalised (case, spaces, edge punctuation)."""
    return normalise_text(_KIND_AND_ABOUT.sub("", line, count=1))


JOINING_WORDS = frozenset({"a", "an", "the", "of", "for", "to", "in", "on", "at", "by", "with", "from", "and", "or",
                           "as", "via"})
"""Words that only join others: a line of them and names says nothing."""
PLACEHOLDER_WORDS = frozenset({
    "result", "results", "outcome", "outcomes", "lesson", "lessons", "strategy", "strategies", "insight", "none",
    "null", "nil", "n/a", "na", "ok", "okay", "done", "todo", "tbd", "text", "note", "info", "something", "stuff",
    "etc", "response", "reply", "output", "action", "method", "call", "thing", "things", "whatever", "details"})
"""Words a small model puts where the lesson should be ("STRATEGY: genesis_memory.offer_licence: result")."""
_LESSON_KIND = re.compile(r"^\s*[A-Za-z]+:")
LESSON_WORD = re.compile(r"[\w/]+(?:[.'][\w/]+)*")
"""A lesson's words: names with their dots and slashes whole, edge punctuation left out."""
_NAME = re.compile(r"^[^\W\d_]\w*(?:[_.]\w+)+$")
"""snake_case and dotted names: artifacts, methods, arguments (`genesis_memory.offer_licence`)."""


def vacuous_reason(line: str) -> str | None:
    """Why a `LESSON:`/`STRATEGY:` line carries nothing a later turn could use, or None.

    Vacuous: no digit (a value) and no word besides names (snake_case or dotted, and their parts),
    action types, placeholders ("result") and joining words ("of"), e.g. the line Gemma 3 270M
    wrote in `make demo`, "STRATEGY: genesis_memory.offer_licence: result". A value in words
    ("the north pass"), an outcome ("fails", "sold") or a rule ("before claiming") keeps it: such
    a line may hold the value a later paid claim uses, which the ladder never calls generic."""
    body = _LESSON_KIND.sub("", line, count=1)
    if any(ch.isdigit() for ch in body):
        return None
    words = [w.lower() for w in LESSON_WORD.findall(body)]
    names = {w for w in words if _NAME.match(w) or w in ACTION_TYPES}
    names |= {part for name in names for part in re.split(r"[_.]", name)}
    if any(w not in names and w not in JOINING_WORDS and w not in PLACEHOLDER_WORDS for w in words):
        return None
    if not words:
        return "vacuous: nothing follows its kind"
    return (f"vacuous: only names and placeholders ({' '.join(dict.fromkeys(words))}), no outcome, value or "
            "rule a later turn could use")


def with_lessons(working_memory: str, lessons: list[str], max_chars: int) -> str:
    """The working memory with ``lessons`` appended to its `lessons` list, the oldest lessons
    dropped while the document is longer than ``max_chars``.

    A lesson that repeats one already there (the same gist) replaces it: a small model restates
    one fact under each action it saw, with or without a final stop, and the copies would fill
    the working memory that a small budget cuts first. The newest wording goes last, where the
    length limit drops it last."""
    memory = parse_working_memory(working_memory)
    for line in lessons:
        gist = lesson_gist(line)
        memory.lessons = [*(old for old in memory.lessons if lesson_gist(old) != gist), line]
    text = memory.to_yaml()
    while len(text) > max_chars and memory.lessons:
        memory.lessons = memory.lessons[1:]
        text = memory.to_yaml()
    return text
