"""Random valid replies: a reference policy that knows nothing and remembers nothing.

Each reply is a uniform draw from the reply schema the caller asks for: one alternative of an
`anyOf`, one value of an `enum`, an integer in range, strings made of words from the prompt
(so a lucky answer is possible, as it is for any model that echoes what it reads). It is the
floor a benchmark's score is read against: a model that scores no higher has learned nothing.
Draws are seeded by the call's seed, so a run repeats exactly.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from mnemarket.providers.llm import Completion, CompletionLLM, CompletionRequest, Usage

MAX_WORDS = 6
"""Longest string drawn (in words): enough for an answer, short like a terse model's."""
MAX_ITEMS = 3
_WORD = re.compile(r"[A-Za-z0-9_]{2,24}")


class RandomLLM(CompletionLLM):
    """Replies drawn at random from the requested JSON schema; free text is a few prompt words."""

    def __init__(self, *, name: str = "uniform"):
        self.model_id = f"random:{name}"
        self.repair = False

    def _complete(self, request: CompletionRequest) -> Completion:
        rng = np.random.default_rng(request.seed if request.seed is not None else 0)
        words = _WORD.findall(request.messages[-1].content if request.messages else "") or ["x"]
        if request.json_schema is None:
            text = " ".join(_pick_words(rng, words))
        else:
            text = json.dumps(_draw(request.json_schema, request.json_schema.get("$defs", {}), rng, words))
        prompt = sum(len(m.content.split()) for m in request.messages)
        return Completion(text=text, usage=Usage(prompt_tokens=prompt, completion_tokens=len(text.split())))


def _pick_words(rng: np.random.Generator, words: list[str], low: int = 1, high: int = MAX_WORDS) -> list[str]:
    count = int(rng.integers(low, high + 1))
    return [words[int(i)] for i in rng.integers(0, len(words), size=count)]


def _draw(node: Any, defs: dict[str, Any], rng: np.random.Generator, words: list[str]) -> Any:  # noqa: C901 (one flat case per JSON schema keyword)
    if not isinstance(node, dict):
        return None
    if "$ref" in node:
        return _draw(defs[node["$ref"].rsplit("/", 1)[-1]], defs, rng, words)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][int(rng.integers(0, len(node["enum"])))]
    for key in ("anyOf", "oneOf"):
        if key in node:
            options = node[key]
            return _draw(options[int(rng.integers(0, len(options)))], defs, rng, words)
    kind = node.get("type")
    if kind == "object":
        properties = node.get("properties", {})
        required = set(node.get("required") or list(properties))
        return {name: _draw(sub, defs, rng, words) for name, sub in properties.items()
                if name in required or rng.random() < 0.5}
    if kind == "array":
        low = int(node.get("minItems", 0))
        count = int(rng.integers(low, max(low, min(int(node.get("maxItems", MAX_ITEMS)), MAX_ITEMS)) + 1))
        return [_draw(node.get("items", {}), defs, rng, words) for _ in range(count)]
    if kind == "integer":
        low, high = int(node.get("minimum", 0)), int(node.get("maximum", 100))
        return int(rng.integers(low, max(low, min(high, low + 100)) + 1))
    if kind == "number":
        return float(rng.uniform(float(node.get("minimum", 0.0)), float(node.get("maximum", 1.0))))
    if kind == "boolean":
        return bool(rng.random() < 0.5)
    if kind == "null":
        return None
    low, high = int(node.get("minLength", 0)), int(node.get("maxLength", 200))
    pattern = node.get("pattern")
    for _ in range(8):  # a pattern (an id's shape) is met by drawing identifier-like words
        picked = _pick_words(rng, words)
        text = ("_".join(picked).lower() if pattern else " ".join(picked))[:high]
        text += "x" * max(0, low - len(text))
        if not pattern or re.search(pattern, text):
            break
    return text
