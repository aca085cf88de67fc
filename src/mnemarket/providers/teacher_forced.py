"""A model asked every call, a teacher's reply applied: a workload that does not follow the model.

A benchmark of a model inside a run measures whatever the run makes it do; when the model's own
replies steer the run (an action refused, its error filling the next prompt), two versions of the
code or the model are measured on different work. Wrapped here, the model (the student) still gets
every call exactly as the run would send it and decodes its reply in full, but the caller receives
the teacher's reply, so what happens next, and every later prompt, follows the teacher only.
"""

from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel

from mnemarket.providers.llm import DEFAULT_MAX_TOKENS, LLM, LLMResult, MessagesLike


class TeacherForcedLLM(LLM):
    """Asks ``student`` and answers with ``teacher``'s reply.

    The result is the teacher's text and parsed value with the student's bill (usage, cost,
    attempts, structured mode) and both calls' latency, so call logs and budgets count the model
    that ran. Prompts are assembled with the student's token counts (``count_tokens``), as in a run
    of the student alone. A call the student's provider failed to answer is returned as it is (a
    run retries it or stops, as it would without the teacher); a reply the student got wrong is only
    counted in ``student_failures``.

    Args:
        student: the model measured.
        teacher: the model whose replies the caller gets (a scripted plan, a replay).
    """

    def __init__(self, student: LLM, teacher: LLM):
        self.student = student
        self.teacher = teacher
        self.model_id = f"{student.model_id}+teacher:{teacher.model_id}"
        self.billing = student.billing
        self.student_failures = 0
        """Calls whose student reply was unusable (the teacher's was applied all the same)."""
        self._lock = threading.Lock()  # agents' calls run in worker threads

    def count_tokens(self, text: str) -> int | None:
        return self.student.count_tokens(text)

    def applied(self) -> dict[str, Any]:
        return self.student.applied()

    def generate(
        self, messages: MessagesLike, *, schema: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float = 0.0, seed: int | None = None,
    ) -> LLMResult:
        asked = self.student.generate(messages, schema=schema, max_tokens=max_tokens, temperature=temperature, seed=seed)
        if asked.provider_failed:
            return asked
        if not asked.ok:
            with self._lock:
                self.student_failures += 1
        taught = self.teacher.generate(messages, schema=schema, max_tokens=max_tokens, temperature=temperature, seed=seed)
        return asked.model_copy(update={
            "text": taught.text, "parsed": taught.parsed, "ok": taught.ok, "error": taught.error,
            "failure": taught.failure, "repaired": taught.repaired, "reasoning": None,
            "latency": asked.latency + taught.latency, "model_id": self.model_id,
        })


__all__ = ["TeacherForcedLLM"]
