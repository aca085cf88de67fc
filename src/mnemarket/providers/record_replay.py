"""Record every LLM and embedding call of a run to JSONL; replay them without the model.

A recording is one JSONL file; each line is a call: its kind (``llm`` or ``embed``), its index
among calls of that kind, the model, the parameters, a hash of the prompt (messages + schema +
parameters, or the texts), the caller's label for it (``agent alpha, session 1, turn 3``) and the
response. Replay serves responses in call order and checks the prompt hash, so a changed prompt is
reported as a divergence naming the call, not silently answered with a stale response.

Token counts are recorded too (kind ``tokens``: a text's hash and its count, once per text): a
prompt budget counted with the model's own tokenizer (the local model) cuts sections where that
tokenizer says, and replay must cut at the same place without loading the model.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from mnemarket.errors import ProviderError, validation_problems
from mnemarket.jsonl import end_line, json_object, read_lines
from mnemarket.providers.call_context import CALL_LABEL
from mnemarket.providers.embedding import Embedder
from mnemarket.providers.llm import DEFAULT_MAX_TOKENS, LLM, LLMResult, MessagesLike, as_messages
from mnemarket.providers.structured import parse_structured, tight_json_schema


class ReplayDivergence(ProviderError):
    """The run asked for something the recording does not hold at that position.

    Attributes:
        kind: ``llm`` or ``embed``.
        index: the 0-based index of the diverging call among calls of that kind.
    """

    def __init__(self, message: str, *, kind: str, index: int):
        super().__init__(message)
        self.kind = kind
        self.index = index


def _sha256(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def llm_prompt_hash(
    messages: MessagesLike, schema: type[BaseModel] | None, max_tokens: int, temperature: float, seed: int | None
) -> str:
    """Hash of everything that determines an LLM call's reply (the model aside)."""
    return _sha256({
        "messages": [m.model_dump() for m in as_messages(messages)],
        "schema": tight_json_schema(schema) if schema is not None else None,
        "max_tokens": max_tokens, "temperature": temperature, "seed": seed,
    })


def texts_hash(texts: Sequence[str]) -> str:
    """Hash of an embedding call's input."""
    return _sha256(list(texts))


def text_hash(text: str) -> str:
    """Hash of a text whose tokens were counted."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class Recording:
    """An append-only JSONL recording shared by the recorders of one run (thread-safe)."""

    def __init__(self, path: str | Path, *, append: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._counts = {"llm": 0, "embed": 0, "tokens": 0}
        if append and self.path.exists():  # a resumed run continues its recording
            end_line(self.path)  # after a line a kill cut: the damaged line stays one line
            for _, entry in read_lines(self.path, json_object):  # a damaged line counts as no call
                kind = entry.get("kind") if entry is not None else None
                if kind in self._counts:
                    self._counts[kind] += 1
        else:
            self.path.write_text("")  # a recording describes one run: start it afresh

    def append(self, kind: str, entry: dict[str, Any]) -> None:
        """Write one call, stamping its kind and index."""
        with self._lock:
            line = json.dumps({"kind": kind, "index": self._counts[kind], **entry}, sort_keys=True)
            self._counts[kind] += 1
            with self.path.open("a", encoding="utf-8") as file:
                file.write(line + "\n")


def _load(path: str | Path, kind: str) -> list[dict[str, Any]]:
    """The recording's entries of ``kind``, each checked for the shape replay reads.

    Raises:
        ProviderError: the file is missing, or a line is damaged (not UTF-8 JSON, or an entry of
            ``kind`` without the fields replay needs), naming the line.
    """
    path = Path(path)
    if not path.is_file():
        raise ProviderError(f"replay recording {str(path)!r} does not exist; record a run first (see RecordingLLM)")
    entries = []
    for number, entry in read_lines(path, json_object):
        try:
            if entry is None:
                raise ValueError("not a line of UTF-8 JSON holding an object")
            if entry.get("kind") == kind:
                entries.append(_checked(entry, kind))
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            raise ProviderError(f"{str(path)!r} line {number + 1} is damaged ({_why(exc)}); "
                                "record the run again") from None
    return entries


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = validation_problems(exc, label=lambda loc: f"response.{'.'.join(map(str, loc))}", limit=1,
                                    count_rest=False)
        return first[:200]
    return str(exc)[:200]


def _checked(entry: dict[str, Any], kind: str) -> dict[str, Any]:
    """``entry`` with an ``llm`` call's response as an `LLMResult` (the recorded reply validated
    here, once: a doctored field is a damaged line, not an error in the middle of a replay)."""
    if kind == "llm":
        if not isinstance(entry.get("prompt_hash"), str) or not isinstance(entry.get("response"), dict):
            raise ValueError("an LLM call needs a prompt_hash and a response")
        return {**entry, "response": LLMResult.model_validate({**entry["response"], "parsed": None})}
    if kind == "tokens":
        count = entry.get("count")
        if not isinstance(entry.get("text_hash"), str) or not isinstance(count, int) or count < 0:
            raise ValueError("a token count needs a text_hash and a count of 0 or more")
        return entry
    if not (isinstance(entry.get("texts_hash"), str) and isinstance(entry.get("vectors"), str)
            and all(isinstance(entry.get(k), int) and entry[k] >= 0 for k in ("n", "dim"))):
        raise ValueError("an embedding call needs texts_hash, vectors, n and dim")
    if len(base64.b64decode(entry["vectors"], validate=True)) != 4 * entry["n"] * entry["dim"]:
        raise ValueError(f"the vectors are not {entry['n']} x {entry['dim']} float32 values")
    return entry


class RecordingLLM(LLM):
    """Wraps an LLM and records each call (final text, usage, cost, outcome) to a :class:`Recording`."""

    def __init__(self, inner: LLM, recording: Recording):
        self.inner = inner
        self.recording = recording
        self.model_id = inner.model_id
        self.billing = inner.billing
        self._counted: set[str] = set()
        self._counted_lock = threading.Lock()

    def count_tokens(self, text: str) -> int | None:
        """The inner model's count, recorded once per text so a replay counts the same."""
        count = self.inner.count_tokens(text)
        if count is not None:
            digest = text_hash(text)
            with self._counted_lock:
                new = digest not in self._counted
                self._counted.add(digest)
            if new:
                self.recording.append("tokens", {"text_hash": digest, "count": count})
        return count

    def applied(self) -> dict[str, Any]:
        return self.inner.applied()

    def generate(
        self, messages: MessagesLike, *, schema: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float = 0.0, seed: int | None = None,
    ) -> LLMResult:
        result = self.inner.generate(messages, schema=schema, max_tokens=max_tokens, temperature=temperature, seed=seed)
        self.recording.append("llm", {
            "model_id": result.model_id,
            "params": {"max_tokens": max_tokens, "temperature": temperature, "seed": seed,
                       "schema": schema.__name__ if schema is not None else None},
            "prompt_hash": llm_prompt_hash(messages, schema, max_tokens, temperature, seed),
            "call": CALL_LABEL.get(),
            "response": result.model_dump(exclude={"parsed"}),
        })
        return result


class ReplayLLM(LLM):
    """Serves a recording's LLM calls in order, re-validating structured replies.

    Args:
        path: a JSONL recording written by :class:`RecordingLLM`.

    Raises:
        ReplayDivergence: (from ``generate``) the prompt differs from the recorded one at that
            call, or the run makes more calls than were recorded.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._entries = _load(path, "llm")
        self._token_counts = {entry["text_hash"]: int(entry["count"]) for entry in _load(path, "tokens")}
        self._next = 0
        self._lock = threading.Lock()
        self.model_id = f"replay:{self.path.name}"

    def count_tokens(self, text: str) -> int | None:
        """The count the recorded run's model gave ``text``; None (an estimate) for a text it never
        counted (a recording of a model without a tokenizer, or a prompt that already diverged)."""
        return self._token_counts.get(text_hash(text))

    def _where(self, index: int) -> str:
        """The call being made now and the one recorded at ``index``, as their callers named them."""
        now = CALL_LABEL.get()
        recorded = self._entries[index].get("call") if index < len(self._entries) else None
        if now is None and recorded is None:
            return ""
        if now == recorded or recorded is None:
            return f" at {now}"
        return f" at {now or 'an unlabelled call'} (the recording holds {recorded} there)"

    @property
    def remaining(self) -> int:
        """Recorded calls not yet served."""
        return len(self._entries) - self._next

    def generate(
        self, messages: MessagesLike, *, schema: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float = 0.0, seed: int | None = None,
    ) -> LLMResult:
        digest = llm_prompt_hash(messages, schema, max_tokens, temperature, seed)
        with self._lock:
            index = self._next
            if index >= len(self._entries):
                raise ReplayDivergence(
                    f"LLM call {index} diverged{self._where(index)}: the recording {str(self.path)!r} holds only "
                    f"{len(self._entries)} LLM calls", kind="llm", index=index,
                )
            entry = self._entries[index]
            if entry["prompt_hash"] != digest:
                raise ReplayDivergence(
                    f"LLM call {index} diverged{self._where(index)}: prompt hash {digest[:16]} but the recording "
                    f"{self.path.name} has {entry['prompt_hash'][:16]} (recorded params {entry.get('params')}); the "
                    "prompt or parameters changed", kind="llm", index=index,
                )
            self._next += 1
        response: LLMResult = entry["response"]
        parsed = None
        if schema is not None and response.ok:
            parsed, _ = parse_structured(response.text, schema)
        return response.model_copy(update={"parsed": parsed})


def _encode_vectors(vectors: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(vectors, dtype="<f4").tobytes()).decode()


class RecordingEmbedder(Embedder):
    """Wraps an embedder and records each call (texts hash, vectors) to a :class:`Recording`."""

    def __init__(self, inner: Embedder, recording: Recording):
        self.inner = inner
        self.recording = recording
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.billing = inner.billing
        self.task_type = inner.task_type
        queries = inner.for_queries()  # recorded in the same file, in call order (as a replay serves them)
        self._queries = self if queries is inner else RecordingEmbedder(queries, recording)

    def for_queries(self) -> RecordingEmbedder:
        return self._queries

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_billed(texts)[0]

    def encode_billed(self, texts: Sequence[str]) -> tuple[np.ndarray, int, float]:
        """Pass ``inner``'s answer (and its bill) on and record it; a call without an answer is
        not recorded (a replay re-runs from answers only)."""
        vectors, tokens, cost = self.inner.embed(texts).unwrap()
        self.recording.append("embed", {
            "model_id": self.model_id, "dim": self.dim, "n": len(texts),
            "texts_hash": texts_hash(texts), "vectors": _encode_vectors(vectors),
        })
        return vectors, tokens, cost


class ReplayEmbedder(Embedder):
    """Serves a recording's embedding calls in order; ``model_id`` and ``dim`` are the recorded ones.

    Raises:
        ProviderError: the recording holds no embedding calls.
        ReplayDivergence: (from ``embed`` and ``vectors``) the texts differ at that call, or calls ran out.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._entries = _load(path, "embed")
        if not self._entries:
            raise ProviderError(f"the recording {str(self.path)!r} holds no embedding calls; record with RecordingEmbedder")
        self.model_id = self._entries[0]["model_id"]
        self.dim = int(self._entries[0]["dim"])
        self._next = 0
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        digest = texts_hash(texts)
        with self._lock:
            index = self._next
            if index >= len(self._entries):
                raise ReplayDivergence(
                    f"embedding call {index} diverged: the recording holds only {len(self._entries)} embedding calls",
                    kind="embed", index=index,
                )
            entry = self._entries[index]
            if entry["texts_hash"] != digest:
                raise ReplayDivergence(
                    f"embedding call {index} diverged: texts hash {digest[:16]} but the recording has {entry['texts_hash'][:16]}",
                    kind="embed", index=index,
                )
            self._next += 1
        raw = np.frombuffer(base64.b64decode(entry["vectors"]), dtype="<f4")
        return raw.reshape(entry["n"], self.dim).astype(np.float32)


__all__ = ["Recording", "RecordingEmbedder", "RecordingLLM", "ReplayDivergence", "ReplayEmbedder",
    "ReplayLLM"]
