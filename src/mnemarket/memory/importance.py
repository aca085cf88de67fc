"""Importance raters: an LLM (one text per call, or many per call), a heuristic, or a fixed table.

Every rater returns one :class:`Rating` per text, on the stored 0..1 scale, saying where the
number came from. When a model's answer is garbled (a failed call, a number out of range, a batch
reply with the wrong count) the rating says so in ``error`` and the text is rated by the stated
fallback rule (the heuristic, configurable), never silently by a constant.

Build one from config with :func:`make_importance_rater`; pass it to
``MemoryStore(importance_rater=...)`` (a rater is also a plain ``texts -> floats`` callable).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from mnemarket.errors import ConfigError, UserError, validation_problems
from mnemarket.memory.weights import ImportanceScale, importance_from_scale
from mnemarket.providers import LLM

DEFAULT_KEYWORDS: tuple[str, ...] = (
    "important", "critical", "urgent", "decision", "agree", "disagree", "believe", "feel",
)
"""Keyword signals of the dual-memory heuristic (ADR-006 lite mode)."""


class Rating(BaseModel):
    """One text's importance and its provenance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float = Field(ge=0.0, le=1.0)
    """Importance on the stored 0..1 scale."""
    source: str
    """What produced ``value``: ``llm``, ``llm_batch``, ``heuristic``, ``table``, ``table:default``,
    or ``fallback:<rule>`` when the primary rater could not."""
    error: str | None = None
    """Why the primary rater failed for this text (garbled answer, count mismatch, no table entry)."""
    raw: str | None = None
    """The raw score as the model or table gave it, for the record."""


# ----------------------------------------------------------------- configs


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HeuristicRaterConfig(_Config):
    """Length and keyword signals: ``baseline + length bonuses + keyword_bonus * hits``, clipped."""

    kind: Literal["heuristic"] = "heuristic"
    scale: ImportanceScale = "1-10"
    """Scale of ``baseline``, bonuses and the clip range."""
    baseline: float = 3.0
    """Score of a short text without keywords."""
    length_bonuses: list[tuple[int, float]] = Field(default_factory=lambda: [(200, 1.0), (500, 1.0)])
    """``(min_chars, bonus)``: each threshold the text is longer than adds its bonus."""
    keywords: list[str] = Field(default_factory=lambda: list(DEFAULT_KEYWORDS))
    """Words that signal importance (case-insensitive substring match)."""
    keyword_bonus: float = 0.5
    """Added per keyword present."""


class LLMRaterConfig(_Config):
    """One LLM call per text (Generative Agents' poignancy prompt), schema-constrained."""

    kind: Literal["llm"] = "llm"
    scale: Literal["1-10", "0-100"] = "1-10"
    """Scale the model answers on."""
    max_tokens: int = Field(16, ge=4, le=256)
    fallback: HeuristicRaterConfig = Field(default_factory=HeuristicRaterConfig)
    """The rule that rates a text whose answer is garbled."""


class BatchLLMRaterConfig(_Config):
    """One LLM call rates up to ``batch_size`` texts; the reply is parsed per item."""

    kind: Literal["llm_batch"] = "llm_batch"
    scale: Literal["1-10", "0-100"] = "1-10"
    batch_size: int = Field(10, ge=1, le=50)
    structured: bool = True
    """Ask for a JSON list of scores (needed by small local models); False asks for one number per
    line, numbered ``1. 7`` or bare, as ADR-006's batch prompt does."""
    on_mismatch: Literal["single", "fallback"] = "fallback"
    """A reply whose item count differs from the texts (and cannot be aligned by numbering):
    ``single`` re-rates each text with one call, ``fallback`` rates them by the fallback rule."""
    max_tokens: int = Field(160, ge=8, le=2048)
    fallback: HeuristicRaterConfig = Field(default_factory=HeuristicRaterConfig)


class TableRaterConfig(_Config):
    """Fixed importance per event type; the event type is given or found in the text."""

    kind: Literal["table"] = "table"
    scale: ImportanceScale = "unit"
    table: dict[str, float]
    """Event type -> importance on ``scale``. Keys match texts case-insensitively, ``_`` as space;
    the longest matching key wins. The events are the world's, so the scenario supplies them (the
    flood's is ``mnemarket.scenarios.flood.FLOOD_EVENT_TABLE``)."""
    default: float | None = None
    """Importance of a text no key matches; None rates it by ``fallback`` and records the miss."""
    fallback: HeuristicRaterConfig = Field(default_factory=HeuristicRaterConfig)


RaterSpec = Annotated[
    HeuristicRaterConfig | LLMRaterConfig | BatchLLMRaterConfig | TableRaterConfig,
    Field(discriminator="kind"),
]
"""An importance-rater config, discriminated on ``kind``."""

_SPEC_ADAPTER: TypeAdapter[Any] = TypeAdapter(RaterSpec)
RATER_KINDS: tuple[str, ...] = ("heuristic", "llm", "llm_batch", "table")


# ------------------------------------------------------------------ raters


class ImportanceRaterBase:
    """Common surface: ``rate(texts) -> list[Rating]``; calling the rater returns the floats."""

    kind: str = ""

    def rate(self, texts: Sequence[str]) -> list[Rating]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, texts: Sequence[str]) -> list[float]:
        return [r.value for r in self.rate(texts)]


class HeuristicRater(ImportanceRaterBase):
    """Rates by length and keywords (no model)."""

    kind = "heuristic"

    def __init__(self, config: HeuristicRaterConfig | None = None, *, source: str = "heuristic"):
        self.config = config or HeuristicRaterConfig()
        self._source = source
        self._keywords = [k.lower() for k in self.config.keywords]

    def score(self, text: str) -> float:
        """The score on the config's scale (before conversion to 0..1)."""
        c = self.config
        score = c.baseline + sum(bonus for min_chars, bonus in c.length_bonuses if len(text) > min_chars)
        lower = text.lower()
        score += c.keyword_bonus * sum(1 for k in self._keywords if k in lower)
        low, high = {"unit": (0.0, 1.0), "1-10": (1.0, 10.0), "0-100": (0.0, 100.0)}[c.scale]
        return min(high, max(low, score))

    def rate(self, texts: Sequence[str], *, error: Sequence[str | None] | None = None) -> list[Rating]:
        errors = list(error) if error is not None else [None] * len(texts)
        return [Rating(value=float(importance_from_scale(self.score(t), self.config.scale)), source=self._source,
                       error=e, raw=f"{self.score(t):g}") for t, e in zip(texts, errors)]


class TableRater(ImportanceRaterBase):
    """Looks the event type up in a fixed table."""

    kind = "table"

    def __init__(self, config: TableRaterConfig):
        self.config = config
        self._keys = sorted(((self._norm(k), v) for k, v in self.config.table.items()), key=lambda kv: -len(kv[0]))
        self._fallback = HeuristicRater(self.config.fallback, source="fallback:heuristic")

    @staticmethod
    def _norm(text: str) -> str:
        return " ".join(text.lower().replace("_", " ").split())

    def lookup(self, text_or_event: str) -> float | None:
        """The table value (on the config's scale) for an event type or a text mentioning one."""
        norm = self._norm(text_or_event)
        for key, value in self._keys:
            if key == norm or f" {key} " in f" {norm} ":
                return value
        return None

    def rate(self, texts: Sequence[str], *, event_types: Sequence[str | None] | None = None) -> list[Rating]:
        """Rate texts; ``event_types`` (one per text, or None) overrides matching within the text."""
        kinds = list(event_types) if event_types is not None else [None] * len(texts)
        if len(kinds) != len(texts):
            raise UserError(f"event_types has {len(kinds)} entries for {len(texts)} texts")
        out = []
        for text, event in zip(texts, kinds):
            value = self.lookup(event if event is not None else text)
            if value is not None:
                out.append(Rating(value=float(importance_from_scale(value, self.config.scale)), source="table",
                                  raw=f"{value:g}"))
            elif self.config.default is not None:
                out.append(Rating(value=float(importance_from_scale(self.config.default, self.config.scale)),
                                  source="table:default", raw=f"{self.config.default:g}"))
            else:
                miss = f"no table entry matches {(event or text)[:60]!r}"
                out.extend(self._fallback.rate([text], error=[miss]))
        return out


def _score_model(low: int, high: int) -> type[BaseModel]:
    class ImportanceScore(BaseModel):
        model_config = ConfigDict(extra="forbid")
        score: int = Field(ge=low, le=high)

    return ImportanceScore


def _batch_model(low: int, high: int, n: int) -> type[BaseModel]:
    class ImportanceScores(BaseModel):
        model_config = ConfigDict(extra="forbid")
        scores: list[Annotated[int, Field(ge=low, le=high)]] = Field(max_length=n)

    return ImportanceScores


_SCALE_RANGE = {"1-10": (1, 10), "0-100": (0, 100)}

RATING_PROMPT = (
    "On the scale of {low} to {high}, where {low} is purely mundane (e.g. brushing teeth, making bed, small "
    "talk) and {high} is extremely poignant (e.g. a break up, a major loss, a critical lesson), rate the "
    "likely importance of the following memory.\nMemory: {text}\nAnswer with the rating only."
)
BATCH_PROMPT = (
    "On the scale of {low} to {high}, where {low} is purely mundane and {high} is extremely poignant, rate the "
    "importance of each of these {n} memories. {answer}\nMemories:\n{items}"
)


class LLMRater(ImportanceRaterBase):
    """One LLM call per text."""

    kind = "llm"

    def __init__(self, llm: LLM, config: LLMRaterConfig | None = None):
        self.llm = llm
        self.config = config or LLMRaterConfig()
        self._low, self._high = _SCALE_RANGE[self.config.scale]
        self._schema = _score_model(self._low, self._high)
        self._fallback = HeuristicRater(self.config.fallback, source="fallback:heuristic")

    def rate(self, texts: Sequence[str]) -> list[Rating]:
        out = []
        for text in texts:
            prompt = RATING_PROMPT.format(low=self._low, high=self._high, text=text[:1500])
            result = self.llm.generate([{"role": "user", "content": prompt}], schema=self._schema,
                                       max_tokens=self.config.max_tokens, temperature=0.0)
            if result.ok and result.parsed is not None:
                score = int(result.parsed.score)
                out.append(Rating(value=float(importance_from_scale(score, self.config.scale)), source="llm",
                                  raw=str(score)))
            else:
                why = f"llm rating garbled: {result.error or 'no parsed score'}; raw {result.text[:80]!r}"
                out.extend(self._fallback.rate([text], error=[why]))
        return out


_NUMBERED = re.compile(r"^\s*(?:\[?#?(\d+)[\].):\-]\s*)?(-?\d+(?:\.\d+)?)\s*(?:/\s*\d+)?\s*$")


def parse_batch_reply(text: str, n: int, low: float, high: float) -> tuple[list[float | None], str | None]:
    """Parse a one-number-per-line reply for ``n`` texts.

    Numbered lines (``3. 7``, ``3: 7``) align by their number; bare numbers align by order only
    when there are exactly ``n`` of them. Lines that are not a score are ignored; a score outside
    ``low..high`` is None for that item.

    Returns:
        ``(scores, error)``: one score or None per item, and what went wrong (None if nothing).
    """
    numbered: dict[int, float] = {}
    bare: list[float] = []
    for line in text.splitlines():
        match = _NUMBERED.match(line.replace("*", ""))
        if not match:
            continue
        number, value = match.group(1), float(match.group(2))
        if number is not None:
            numbered[int(number)] = value
        else:
            bare.append(value)
    scores: list[float | None]
    errors = []
    if numbered:
        scores = [numbered.get(i + 1) for i in range(n)]
        missing = [str(i + 1) for i, s in enumerate(scores) if s is None]
        if missing:
            errors.append(f"no score for item(s) {', '.join(missing)}")
    elif len(bare) == n:
        scores = list(bare)
    else:
        return [None] * n, f"count mismatch: {len(bare)} scores for {n} texts"
    out: list[float | None] = []
    for i, s in enumerate(scores):
        if s is not None and not low <= s <= high:
            errors.append(f"item {i + 1} score {s:g} outside {low:g}..{high:g}")
            s = None
        out.append(s)
    return out, "; ".join(errors) or None


class BatchLLMRater(ImportanceRaterBase):
    """One LLM call per ``batch_size`` texts; per-item parsing, stated handling of count mismatch."""

    kind = "llm_batch"

    def __init__(self, llm: LLM, config: BatchLLMRaterConfig | None = None):
        self.llm = llm
        self.config = config or BatchLLMRaterConfig()
        self._low, self._high = _SCALE_RANGE[self.config.scale]
        self._fallback = HeuristicRater(self.config.fallback, source="fallback:heuristic")
        self._single = LLMRater(llm, LLMRaterConfig(scale=self.config.scale, fallback=self.config.fallback))

    def rate(self, texts: Sequence[str]) -> list[Rating]:
        out: list[Rating] = []
        size = self.config.batch_size
        for start in range(0, len(texts), size):
            out.extend(self._rate_batch(list(texts[start : start + size])))
        return out

    def _rate_batch(self, texts: list[str]) -> list[Rating]:
        n = len(texts)
        items = "\n".join(f"{i + 1}. {t[:400]}" for i, t in enumerate(texts))
        c = self.config
        answer = (f"Answer with a JSON object whose 'scores' list has exactly {n} integers, in order."
                  if c.structured else f"Answer with exactly {n} lines, one per memory: its number, a dot, the rating.")
        prompt = BATCH_PROMPT.format(low=self._low, high=self._high, n=n, answer=answer, items=items)
        schema = _batch_model(self._low, self._high, n) if c.structured else None
        result = self.llm.generate([{"role": "user", "content": prompt}], schema=schema,
                                   max_tokens=c.max_tokens, temperature=0.0)
        scores: list[float | None]
        error: str | None
        if not result.ok:
            scores, error = [None] * n, f"llm batch rating failed: {result.error}"
        elif c.structured:
            got = list(result.parsed.scores) if result.parsed is not None else []
            if len(got) == n:
                scores, error = [float(g) for g in got], None
            else:
                scores, error = [None] * n, f"count mismatch: {len(got)} scores for {n} texts"
        else:
            scores, error = parse_batch_reply(result.text, n, self._low, self._high)
        if error and all(s is None for s in scores) and error.startswith("count mismatch") and c.on_mismatch == "single":
            return [r.model_copy(update={"error": error + (f"; then {r.error}" if r.error else "; re-rated singly")})
                    for r in self._single.rate(texts)]
        out = []
        for text, score in zip(texts, scores):
            if score is None:
                out.extend(self._fallback.rate([text], error=[f"{error or 'garbled'}; raw {result.text[:80]!r}"]))
            else:
                out.append(Rating(value=float(importance_from_scale(score, c.scale)), source="llm_batch", raw=f"{score:g}"))
        return out


ImportanceRaterLike = HeuristicRater | TableRater | LLMRater | BatchLLMRater


def parse_rater_spec(spec: RaterSpec | Mapping[str, Any] | str) -> RaterSpec:
    """Validate a rater config (a model, a dict with ``kind``, or just the kind's name).

    Raises:
        ConfigError: unknown kind or bad options; the message lists the valid kinds.
    """
    if isinstance(spec, BaseModel):
        return spec
    if isinstance(spec, str):
        spec = {"kind": spec}
    try:
        return _SPEC_ADAPTER.validate_python(dict(spec))
    except ValidationError as exc:
        kind = dict(spec).get("kind")
        if kind not in RATER_KINDS:
            raise ConfigError(f"importance rater kind {kind!r} is unknown; use one of {', '.join(RATER_KINDS)}") from None
        raise ConfigError(f"importance rater config {dict(spec)!r} is invalid: {validation_problems(exc)}") from None


def make_importance_rater(spec: RaterSpec | Mapping[str, Any] | str = "heuristic", llm: LLM | None = None) -> ImportanceRaterLike:
    """Build a rater from config.

    Args:
        spec: ``{"kind": "heuristic"|"llm"|"llm_batch"|"table", ...options}``, a config model, or a kind.
        llm: the model for ``llm`` and ``llm_batch``.

    Raises:
        ConfigError: bad config, or an LLM kind without ``llm``.
    """
    config = parse_rater_spec(spec)
    if isinstance(config, HeuristicRaterConfig):
        return HeuristicRater(config)
    if isinstance(config, TableRaterConfig):
        return TableRater(config)
    if llm is None:
        raise ConfigError(f"importance rater kind {config.kind!r} needs an LLM: "
                          "make_importance_rater(spec, llm=make_llm('local'))")
    if isinstance(config, LLMRaterConfig):
        return LLMRater(llm, config)
    return BatchLLMRater(llm, config)


__all__ = [
    "DEFAULT_KEYWORDS",
    "RATER_KINDS",
    "BatchLLMRater",
    "BatchLLMRaterConfig",
    "HeuristicRater",
    "HeuristicRaterConfig",
    "ImportanceRaterLike",
    "LLMRater",
    "LLMRaterConfig",
    "Rating",
    "RaterSpec",
    "TableRater",
    "TableRaterConfig",
    "make_importance_rater",
    "parse_batch_reply",
    "parse_rater_spec",
]
