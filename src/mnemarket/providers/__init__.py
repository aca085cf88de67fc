"""mnemarket.providers: embedders and LLMs behind small contracts, offline by default.

Heavy SDKs (onnxruntime, llama_cpp, google.genai) load only when a provider that needs them is built.
The package exports the contracts (`LLM`, `Embedder`), the factories, the test doubles and the
accounting; reply decoding (`providers.structured`) and each backend's helpers are internals of
their modules.
"""

from mnemarket.providers.accounting import AccountedEmbedder, AccountedLLM, Budget, CallLog, CallRecord, Totals
from mnemarket.providers.call_context import CALL_LABEL, labelled
from mnemarket.providers.embedding import Embedder, EmbeddingFailed, EmbedResult, l2_normalise
from mnemarket.providers.embedding_cache import CachedEmbedder, MemoEmbedder
from mnemarket.providers.hashing_embedder import HashingEmbedder
from mnemarket.providers.llm import LLM, CompletionLLM, LLMResult, Message, ModelCallFailed, ReplyFailed, Usage
from mnemarket.providers.minilm_embedder import MINILM_DIM, MINILM_MODEL_ID, MiniLMEmbedder, default_embedder
from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE, ModelPrice, PriceTable
from mnemarket.providers.record_replay import (
    Recording,
    RecordingEmbedder,
    RecordingLLM,
    ReplayDivergence,
    ReplayEmbedder,
    ReplayLLM,
)
from mnemarket.providers.registry import EMBEDDER_FORMS, LLM_FORMS, check_llm_spec, make_embedder, make_llm
from mnemarket.providers.scripted import ScriptedLLM

__all__ = [
    "CALL_LABEL",
    "DEFAULT_PRICE_TABLE",
    "EMBEDDER_FORMS",
    "LLM",
    "LLM_FORMS",
    "MINILM_DIM",
    "MINILM_MODEL_ID",
    "AccountedEmbedder",
    "AccountedLLM",
    "Budget",
    "CachedEmbedder",
    "MemoEmbedder",
    "CallLog",
    "CallRecord",
    "CompletionLLM",
    "Embedder",
    "EmbeddingFailed",
    "EmbedResult",
    "HashingEmbedder",
    "LLMResult",
    "Message",
    "MiniLMEmbedder",
    "ModelCallFailed",
    "ReplyFailed",
    "ModelPrice",
    "PriceTable",
    "Recording",
    "RecordingEmbedder",
    "RecordingLLM",
    "ReplayDivergence",
    "ReplayEmbedder",
    "ReplayLLM",
    "ScriptedLLM",
    "Totals",
    "Usage",
    "default_embedder",
    "l2_normalise",
    "labelled",
    "make_embedder",
    "check_llm_spec",
    "make_llm",
]
