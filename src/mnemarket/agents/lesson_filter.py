"""Which `LESSON:`/`STRATEGY:` lines are refused, and why: vacuous ones (`lesson_step.vacuous_reason`)
and repetitive ones, a model looping on one phrase.

The lesson step and session-end migration both ask `refusal_reason`, so a line one of them refuses
never reaches long-term memory by the other path.
"""

from __future__ import annotations

from mnemarket.agents.lesson_step import LESSON_WORD, lesson_gist, vacuous_reason

MIN_REPEATED_WORDS = 3
"""Words repeated after a phrase's first copy before the line counts as looping: "very very
important" (one word) is emphasis, "no no no no" (three) is not."""


def refusal_reason(line: str) -> str | None:
    """Why ``line`` is kept out of working and long-term memory (vacuous or repetitive), or None."""
    return vacuous_reason(line) or repetition_reason(line)


def repetition_reason(line: str) -> str | None:
    """Why ``line`` is mostly one phrase said over and over, or None.

    Repetitive: after its kind and the action it names (`lesson_gist`), its words hold a phrase of
    n words said at least twice back to back (then perhaps cut short, where the length limit cut
    the reply), these copies make up more than half of the line's words, and the copies after the
    first hold at least `MIN_REPEATED_WORDS` words. Punctuation and case do not count, so
    "I want to buy it from you. I want to buy it from you. ..." (how the local Gemma model loops)
    is refused, while a lesson naming one value twice ("price 8 worked; price 8 again worked")
    is kept: its copies are not back to back."""
    words = LESSON_WORD.findall(lesson_gist(line))
    for size in range(1, len(words) // 2 + 1):
        start, repeated = _longest_tandem(words, size)
        run = repeated + size  # the first copy and what repeats it
        if repeated >= max(size, MIN_REPEATED_WORDS) and 2 * run > len(words):
            phrase = " ".join(words[start:start + size])
            cut = " and once cut short" if run % size else ""
            return (f"repetitive: {phrase!r} said {run // size} times in a row{cut} ({run} of its {len(words)} "
                    "words); a model looping on one phrase, not a lesson (keep one copy of what it says)")
    return None


def _longest_tandem(words: list[str], size: int) -> tuple[int, int]:
    """Where the longest stretch of ``words`` that repeats itself every ``size`` words starts, and
    how many words in it repeat the ones ``size`` before (0 when none do)."""
    best_start, best, start, length = 0, 0, 0, 0
    for i in range(len(words) - size):
        if words[i] == words[i + size]:
            if length == 0:
                start = i
            length += 1
            if length > best:
                best_start, best = start, length
        else:
            length = 0
    return best_start, best


__all__ = ["MIN_REPEATED_WORDS", "refusal_reason", "repetition_reason"]
