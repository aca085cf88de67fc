"""A scripted LLM: a deterministic rule policy, for tests and baselines only.

It knows nothing of the world: upper layers supply the policy. Its ``model_id`` always starts with
``scripted:`` so every output it produces is labelled as scripted.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from mnemarket.errors import ProviderError
from mnemarket.providers.llm import Completion, CompletionLLM, CompletionRequest, Message, Usage

Reply = str | BaseModel | dict[str, Any]
"""What a policy returns: raw text, or an object serialised to JSON."""
Policy = Callable[[list[Message], "type[BaseModel] | None"], Reply]
"""A rule: (messages, requested schema or None) -> reply."""


def _as_text(reply: Reply) -> str:
    if isinstance(reply, BaseModel):
        return reply.model_dump_json()
    if isinstance(reply, dict):
        return json.dumps(reply)
    if isinstance(reply, str):
        return reply
    raise ProviderError(f"a scripted policy returned {reply!r}; expected str, dict or a pydantic model")


def _words(text: str) -> int:
    return len(text.split())


class ScriptedLLM(CompletionLLM):
    """Replies come from a policy callable or from a list of canned replies, in order.

    Usage counts whitespace-separated words as tokens (there is no tokenizer); cost is 0.

    Args:
        policy: a :data:`Policy` callable, or a sequence of canned replies served one per round
            (a repair round consumes one too).
        name: label appended to ``scripted:`` in ``model_id``.
        repair: allow one repair round on invalid structured output.

    Raises:
        ProviderError: on a call after the canned replies ran out.
    """

    def __init__(self, policy: Policy | Sequence[Reply], *, name: str = "policy", repair: bool = True):
        self.model_id = f"scripted:{name}"
        self.repair = repair
        self._lock = threading.Lock()
        if callable(policy):
            self._policy: Policy = policy
            self._canned = None
        else:
            canned = self._canned = list(policy)
            counter = itertools.count()

            def serve(messages: list[Message], schema: type[BaseModel] | None) -> Reply:
                index = next(counter)
                if index >= len(canned):
                    raise ProviderError(
                        f"{self.model_id}: call {index} but the script has only {len(canned)} replies; add more"
                    )
                return canned[index]

            self._policy = serve

    def _complete(self, request: CompletionRequest) -> Completion:
        with self._lock:
            text = _as_text(self._policy(request.messages, request.schema))
        prompt_words = sum(_words(m.content) for m in request.messages)
        return Completion(text=text, usage=Usage(prompt_tokens=prompt_words, completion_tokens=_words(text)))


__all__ = ["Policy", "Reply", "ScriptedLLM"]
