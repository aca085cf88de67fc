"""The OpenAI request bodies `mnemarket serve` accepts, as pydantic models.

Only what the server acts on is declared; other OpenAI fields a client sends (``top_p``,
``user``, ``logprobs``...) are accepted and ignored, as llama.cpp's and vLLM's servers do, so
stock clients work. What the server cannot honour (streaming, several choices, tools) is refused
with a 400 that says so, never silently ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class TextPart(BaseModel):
    """One part of a multi-part message (only text parts exist for this model)."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    """One chat turn; ``developer`` is OpenAI's newer name for ``system``."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        return self.content if isinstance(self.content, str) else "".join(part.text for part in self.content)


class JsonSchemaFormat(BaseModel):
    """``response_format.json_schema``: the schema replies are decoded under."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str = "reply"
    schema_: dict[str, Any] = Field(default_factory=lambda: {"type": "object"}, alias="schema")
    strict: bool | None = None


class ResponseFormat(BaseModel):
    """``text``, ``json_object`` (optionally with a ``schema``, llama-cpp-python's form) or ``json_schema``."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    type: Literal["text", "json_object", "json_schema"] = "text"
    json_schema: JsonSchemaFormat | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")

    def decoding_schema(self) -> dict[str, Any] | None:
        """The JSON schema to constrain decoding with, or None for free text."""
        if self.type == "json_schema":
            return (self.json_schema or JsonSchemaFormat()).schema_
        if self.type == "json_object":
            return self.schema_ or {"type": "object"}
        return None


class ChatRequest(BaseModel):
    """POST /v1/chat/completions."""

    model_config = ConfigDict(extra="ignore")

    model: str = "local"
    """Any name: the server holds one model and answers every name with it."""
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    seed: int | None = None
    response_format: ResponseFormat | None = None
    stream: bool = False
    n: int = 1
    tools: list[Any] | None = None


class EmbeddingRequest(BaseModel):
    """POST /v1/embeddings."""

    model_config = ConfigDict(extra="ignore")

    model: str = "minilm"
    input: str | list[str]


class TokenizeRequest(BaseModel):
    """POST /v1/tokenize (a mnemarket extension, after llama.cpp's /tokenize): the model's own tokens,
    so a client's prompt budget counts exactly what the server will read."""

    model_config = ConfigDict(extra="ignore")

    content: str


__all__ = ["ChatMessage", "ChatRequest", "EmbeddingRequest", "JsonSchemaFormat", "ResponseFormat", "TextPart",
           "TokenizeRequest"]
